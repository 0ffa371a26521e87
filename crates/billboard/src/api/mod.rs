//! The native API.

//! Matching (to be written).

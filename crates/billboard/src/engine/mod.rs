//! Messages: envelopes, matching, protocols, requests, progress.

pub mod matching;
mod progress;
pub mod protocol;
pub mod request;

pub(crate) use progress::{Engine, Pending};

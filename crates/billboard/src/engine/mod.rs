//! Messages: envelopes, matching, protocols, requests, progress.

pub mod matching;
pub mod protocol;

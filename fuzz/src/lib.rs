//! The properties the fuzz targets check, one module per decoder of network bytes. Each target in
//! `fuzz_targets/` is one call into here, so the same checks also run as plain tests over the seed
//! corpus (`cargo test --no-default-features` in this directory) without libFuzzer.
//!
//! Fuzz inputs are raw bytes; [`input::Input`] reads structure out of them (a mode, chunk sizes,
//! frame descriptions) and yields zeros once they run out, so every input means something.

pub mod frames;
pub mod handshake;
pub mod input;
pub mod pmi;
pub mod seeds;
pub mod udp;
pub mod wire;

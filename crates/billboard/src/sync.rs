//! The one place ring and ACK code takes its atomics from, so the same code runs under `loom`
//! (`RUSTFLAGS="--cfg loom" cargo test -p billboard --release --lib loom`) and in production.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

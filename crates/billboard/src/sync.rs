//! The one place ring, flag and ACK code takes its atomics from, so the same code runs under
//! `loom` (`RUSTFLAGS="--cfg loom" cargo test --release loom`) and in production.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) fn spin_hint() {
    loom::thread::yield_now();
}

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn spin_hint() {
    std::hint::spin_loop();
}

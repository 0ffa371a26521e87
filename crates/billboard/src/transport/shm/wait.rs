//! Sleeping on the billboard: the futex word in each rank's control part, and waking its owner.
//! (When to sleep is the engine's waiting ladder, `engine/ladder.rs`.)
//!
//! The sleep word (in the sleeper's control part) is the one word with more than one writer:
//! the sleeper stores how it sleeps before its last check, and a sender that sees it swaps it to
//! 0 and wakes the futex (or rings the doorbell, `bell.rs`). A sender checks only after
//! posting; without a fence its load may pass its own post (store buffering) and miss a sleeper
//! that just checked, so the sleep is bounded by `BB_SLEEP_US`. When oversubscribed, sleeping is common and the sender fences to close that
//! window (an `mfence` per send, measured cheaper than the missed wake-ups it prevents).

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::Duration;

use rustix::thread::futex;

/// What a sleep word says: its owner is awake, sleeps on the futex, or sleeps in `epoll_wait`
/// with its doorbell in the set (`bell.rs`).
pub(crate) const AWAKE: u32 = 0;
pub(crate) const FUTEX: u32 = 1;
pub(crate) const BELL: u32 = 2;

/// Sleeps on `word` unless `pending()` says there is work, for at most `timeout`.
pub(crate) fn sleep(word: &AtomicU32, timeout: Duration, pending: impl Fn() -> bool) {
    word.store(FUTEX, Ordering::SeqCst);
    if !pending() {
        let ts = rustix::time::Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
        // Shared between processes: not FUTEX_PRIVATE. EAGAIN (already woken), EINTR and
        // ETIMEDOUT all just mean "look again".
        let _ = futex::wait(word, futex::Flags::empty(), FUTEX, Some(&ts));
    }
    word.store(AWAKE, Ordering::Relaxed);
}

/// Runs `block` (an `epoll_wait` that the doorbell ends) unless `pending()` says there is work.
pub(crate) fn sleep_on_bell(word: &AtomicU32, pending: impl Fn() -> bool, block: impl FnOnce()) {
    word.store(BELL, Ordering::SeqCst);
    if !pending() {
        block();
    }
    word.store(AWAKE, Ordering::Relaxed);
}

/// Wakes the owner of `word` if it has said it sleeps: on its futex, or through `ring_bell`.
#[inline]
pub(crate) fn wake(word: &AtomicU32, fenced: bool, ring_bell: impl FnOnce()) {
    if fenced {
        fence(Ordering::SeqCst);
    }
    if word.load(Ordering::Relaxed) != AWAKE {
        wake_sleeper(word, ring_bell);
    }
}

/// The rare half of [`wake`], out of the send path.
#[cold]
#[inline(never)]
fn wake_sleeper(word: &AtomicU32, ring_bell: impl FnOnce()) {
    match word.swap(AWAKE, Ordering::AcqRel) {
        FUTEX => {
            let _ = futex::wake(word, futex::Flags::empty(), 1);
        }
        BELL => ring_bell(),
        _ => {}
    }
}

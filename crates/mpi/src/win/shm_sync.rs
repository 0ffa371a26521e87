//! Synchronisation of a window in a node segment (`segment.rs`) by words in shared memory,
//! with no help from the target: MPI_Win_lock's reader-writer lock, the accumulate lock, and
//! the wait that both (and post/start/complete/wait) use.
//!
//! # The reader-writer lock (one word per target part)
//!
//! ```text
//! bit 63       an exclusive holder
//! bits 32..47  exclusive lockers waiting
//! bits 0..31   shared holders
//! ```
//!
//! An exclusive locker announces itself (waiting count) and then takes the word when it
//! holds nobody; a shared locker enters only while there is neither a holder nor a waiter of
//! the exclusive kind, so a stream of shared locks (every rank's MPI_Win_lock_all) cannot
//! starve an exclusive one. Every change is one compare-and-swap; nothing blocks in the
//! kernel, and a holder that the scheduler preempts is waited for by yielding the core to it.
//!
//! # Waiting
//!
//! Spin briefly (a lock held for a few stores is free in a few hundred nanoseconds), then
//! yield the core (8 ranks on 2 cores: the holder gets it back at once, not after a time
//! slice), then, after a long wait (an epoch another rank keeps open while it computes),
//! sleep briefly between looks so an idle rank does not burn a core. Every so many looks it
//! also makes a round of progress: this rank may be the one others wait for on another
//! window or in point-to-point traffic.
//!
//! # Memory order of completed operations
//!
//! Puts are plain stores. MPI_Win_flush (and unlock, complete) must make them complete at the
//! target: visible to every later access. On x86-64 (TSO) stores become visible in the order
//! made, and the one reordering the CPU allows is a later *load* passing an earlier store still
//! in the store buffer: the "Dekker" case, where two origins each put and flush, then get the
//! other's word, and both read the old values. A full fence in every flush closes it but costs
//! 22 ns here (`mfence`; a whole 8 B put costs less), so the fence moves to where it matters:
//! a flush is a compiler fence only, and the next load-type operation on a node window (a
//! get, a fetch with MPI_NO_OP) of a process that stored since its last full barrier runs
//! `mfence` first ([`before_load`]). Read-modify-writes (fetch-and-op, compare-and-swap, the
//! lock words) are locked instructions, full barriers already. Other CPUs fence in every
//! flush. The program's own loads and stores of its window are ordered by MPI_Win_sync, a
//! full fence, as MPI's unified model asks.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use billboard::Communicator;

const EXCLUSIVE: u64 = 1 << 63;
const WAITER: u64 = 1 << 32;
const WAITERS: u64 = 0xffff << 32;
const SHARED: u64 = 0xffff_ffff;

/// Looks that only spin before the wait yields.
const SPINS: u32 = 200;
/// Yields before the wait sleeps between looks.
const YIELDS: u32 = 2000;
/// The sleep between looks of a long wait.
const NAP: std::time::Duration = std::time::Duration::from_micros(50);

/// This process made plain stores to a node segment since its last full barrier. One flag per
/// process, not per thread (a thread-local costs a `__tls_get_addr` call in a shared library,
/// about 25 instructions per put): RMA calls change it holding the tables, whose lock is a
/// locked instruction under MPI_THREAD_MULTIPLE (a full barrier: no other thread's stores
/// wait in a store buffer when it looks); below MULTIPLE the program hands MPI from thread to
/// thread through its own synchronisation, after which the first thread's stores are visible
/// (TSO: a store buffer drains in order). Relaxed, because only this process reads it.
static STORED: AtomicBool = AtomicBool::new(false);

/// Notes plain stores to a node segment (a put, an accumulate under the lock).
#[inline]
pub(crate) fn stored() {
    STORED.store(true, Ordering::Relaxed);
}

/// Before a load-type operation on a node segment: the full barrier that a flush left out,
/// if stores since the last one could still be in this CPU's store buffer.
#[inline]
pub(crate) fn before_load() {
    // A load and a store, not a swap: a swap is a locked instruction, the barrier itself.
    if STORED.load(Ordering::Relaxed) {
        STORED.store(false, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// What completes this thread's operations on node segments at their targets (flush, unlock,
/// complete): see the module comment.
#[inline]
pub(crate) fn complete_stores() {
    if cfg!(target_arch = "x86_64") {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        std::sync::atomic::fence(Ordering::SeqCst);
        STORED.store(false, Ordering::Relaxed);
    }
}

/// Waits until `ready` is true, as the module comment says.
pub(crate) fn wait_until(comm: &Communicator, mut ready: impl FnMut() -> bool) {
    let mut looks = 0u32;
    while !ready() {
        looks = looks.saturating_add(1);
        if looks < SPINS {
            std::hint::spin_loop();
            continue;
        }
        if looks < SPINS + YIELDS {
            if looks.is_multiple_of(64) && comm.progress() {
                looks = 0; // an arrival was served: more may follow at once
            }
            std::thread::yield_now();
        } else if comm.nap(NAP) {
            // Progress every look, and a nap the next arrival ends: a rank waiting for a lock
            // still answers the handler's requests to it at once.
            looks = 0;
        }
    }
}

/// Takes `word` exclusively.
pub(crate) fn lock_exclusive(comm: &Communicator, word: &AtomicU64) {
    if word.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        return;
    }
    word.fetch_add(WAITER, Ordering::Relaxed);
    wait_until(comm, || {
        let v = word.load(Ordering::Relaxed);
        v & (EXCLUSIVE | SHARED) == 0
            && word.compare_exchange(v, v - WAITER + EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok()
    });
}

/// Takes `word` shared.
pub(crate) fn lock_shared(comm: &Communicator, word: &AtomicU64) {
    wait_until(comm, || {
        let v = word.load(Ordering::Relaxed);
        v & (EXCLUSIVE | WAITERS) == 0 && word.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    });
}

/// Releases an exclusive hold of `word`.
pub(crate) fn unlock_exclusive(word: &AtomicU64) {
    word.fetch_sub(EXCLUSIVE, Ordering::Release);
}

/// Releases a shared hold of `word`.
pub(crate) fn unlock_shared(word: &AtomicU64) {
    word.fetch_sub(1, Ordering::Release);
}

/// The accumulate lock, held for one operation's few stores: spun on, then yielded for (no
/// progress inside: the holder is in the middle of a copy, not waiting for anyone).
pub(crate) struct AccumulateGuard<'a>(&'a AtomicU32);

impl<'a> AccumulateGuard<'a> {
    pub fn take(word: &'a AtomicU32) -> AccumulateGuard<'a> {
        let mut looks = 0u32;
        while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            looks += 1;
            if looks < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        AccumulateGuard(word)
    }
}

impl Drop for AccumulateGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_word_counts_holders_and_waiters() {
        let w = AtomicU64::new(0);
        // Shared holders come and go; an exclusive one then finds the word free.
        for _ in 0..3 {
            assert!(w.load(Ordering::Relaxed) & (EXCLUSIVE | WAITERS) == 0);
            w.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(w.load(Ordering::Relaxed) & SHARED, 3);
        for _ in 0..3 {
            unlock_shared(&w);
        }
        assert!(w.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok());
        unlock_exclusive(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn accumulate_guards_exclude_each_other_across_threads() {
        let word = AtomicU32::new(0);
        let mut total = 0u64;
        let total_ptr = &mut total as *mut u64 as usize;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        let _g = AccumulateGuard::take(&word);
                        // SAFETY: the guard excludes the other threads (what is under test).
                        unsafe {
                            let p = total_ptr as *mut u64;
                            p.write_volatile(p.read_volatile() + 1)
                        };
                    }
                });
            }
        });
        assert_eq!(total, 40_000);
    }
}

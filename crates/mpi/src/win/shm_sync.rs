//! Synchronisation of a window in a node segment (`segment.rs`) by words in shared memory,
//! with no help from the target: MPI_Win_lock's reader-writer lock, the accumulate lock and
//! the atomic sections it excludes ([`AccumulateGuard`]), and the wait that the locks (and
//! post/start/complete/wait) use.
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

use super::segment::Segment;

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
pub(crate) fn wait_until(comm: &Communicator, ready: impl FnMut() -> bool) {
    wait_serving(comm, false, ready)
}

/// [`wait_until`]; `serve`: progress from the spin on (a lock of a created window, whose
/// holder may be waiting for this rank's handler to take its accumulate, `withdraw.rs`; on
/// a window in shared memory it would only slow the hand-over, 8 locking ranks 15 %).
fn wait_serving(comm: &Communicator, serve: bool, mut ready: impl FnMut() -> bool) {
    let mut looks = 0u32;
    while !ready() {
        looks = looks.saturating_add(1);
        if looks < SPINS {
            if serve && looks.is_multiple_of(32) && comm.progress() {
                looks = 0;
            }
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

/// Takes `word` exclusively (`serve`: see [`wait_serving`]).
pub(crate) fn lock_exclusive(comm: &Communicator, word: &AtomicU64, serve: bool) {
    if word.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        return;
    }
    word.fetch_add(WAITER, Ordering::Relaxed);
    wait_serving(comm, serve, || {
        let v = word.load(Ordering::Relaxed);
        v & (EXCLUSIVE | SHARED) == 0
            && word.compare_exchange(v, v - WAITER + EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok()
    });
}

/// Takes `word` (exclusively, or shared) if it can be taken at once (no holder of the other kind, no exclusive locker waiting).
#[inline]
pub(crate) fn try_lock(word: &AtomicU64, exclusive: bool) -> bool {
    if exclusive {
        return word.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok();
    }
    let v = word.load(Ordering::Relaxed);
    v & (EXCLUSIVE | WAITERS) == 0 && word.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
}

/// Takes `word` shared (`serve`: see [`wait_serving`]).
pub(crate) fn lock_shared(comm: &Communicator, word: &AtomicU64, serve: bool) {
    wait_serving(comm, serve, || {
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

/// Spins, then yields, until `ready`: for holders that are in the middle of a few stores or a
/// fold, not waiting for anyone (no progress inside).
fn spin_until(mut ready: impl FnMut() -> bool) {
    let mut looks = 0u32;
    while !ready() {
        looks = looks.saturating_add(1);
        if looks < SPINS {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// The accumulate lock of a target part, held while an accumulate changes it by plain loads
/// and stores: a bulk fold (`direct.rs`), or elements no CPU atomic fits.
///
/// Such an accumulate must also exclude the other kind, an origin changing elements of the
/// same part by CPU atomics (fetch-and-op, compare-and-swap, short accumulates), whose update
/// a plain load-combine-store would lose. Each origin announces those in its *atomics word*
/// (`segment.rs`: 1 + the target part, one writer) and checks the lock; the locker takes the
/// lock and then waits until no atomics word names the part. Both sides store, then load the
/// other's word (Dekker): with sequentially consistent stores and loads at least one sees the
/// other, so either the atomic origin backs off until the lock is free, or the locker waits
/// until the atomics are done. The atomic side pays one exchange on its own line and a load of
/// a line that stays shared while no one locks: no cache line moves between origins that only
/// do atomics.
pub(crate) struct AccumulateGuard<'a>(&'a AtomicU32);

impl<'a> AccumulateGuard<'a> {
    /// Takes `lock`, then waits until none of `atomics` holds `tag` (1 + the target part).
    pub fn take<'w>(lock: &'a AtomicU32, atomics: impl Iterator<Item = &'w AtomicU64> + Clone, tag: u64) -> Self {
        spin_until(|| lock.compare_exchange_weak(0, 1, Ordering::SeqCst, Ordering::Relaxed).is_ok());
        for word in atomics {
            spin_until(|| word.load(Ordering::SeqCst) != tag);
        }
        AccumulateGuard(lock)
    }

    /// Takes the accumulate lock of `target`'s part of `seg`.
    pub fn of(seg: &'a Segment, target: usize) -> Self {
        Self::take(seg.accumulate_lock(target), (0..seg.ranks()).map(|r| seg.atomics(r)), target as u64 + 1)
    }
}

impl Drop for AccumulateGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// This origin changing a target part by CPU atomics while no accumulate holds its lock (see
/// [`AccumulateGuard`]); ends on drop.
pub(crate) struct AtomicSection<'a>(&'a AtomicU64);

impl<'a> AtomicSection<'a> {
    /// Announces `tag` (1 + the target part) in `mine`, this origin's atomics word, once
    /// `lock`, the part's accumulate lock, is free.
    #[inline(always)]
    pub fn enter(mine: &'a AtomicU64, lock: &AtomicU32, tag: u64) -> Self {
        // An exchange, not a store: the full barrier orders it before the load (Dekker).
        mine.swap(tag, Ordering::SeqCst);
        if lock.load(Ordering::SeqCst) == 0 {
            return AtomicSection(mine);
        }
        Self::enter_after_fold(mine, lock, tag)
    }

    /// [`Self::enter`] when an accumulate held the lock: out of line, so the common entry
    /// saves no registers for the wait.
    #[cold]
    #[inline(never)]
    fn enter_after_fold(mine: &'a AtomicU64, lock: &AtomicU32, tag: u64) -> Self {
        loop {
            mine.store(0, Ordering::Release);
            spin_until(|| lock.load(Ordering::Relaxed) == 0);
            mine.swap(tag, Ordering::SeqCst);
            if lock.load(Ordering::SeqCst) == 0 {
                return AtomicSection(mine);
            }
        }
    }

    /// Enters for `target`'s part of `seg`.
    #[inline(always)]
    pub fn of(seg: &'a Segment, target: usize) -> Self {
        Self::enter(seg.atomics(seg.me()), seg.accumulate_lock(target), target as u64 + 1)
    }
}

impl Drop for AtomicSection<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the atomics (locked instructions) are visible before the word clears.
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
                        let _g = AccumulateGuard::take(&word, std::iter::empty(), 1);
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

    #[test]
    fn atomic_sections_and_plain_folds_under_the_lock_lose_no_update() {
        // Two "origins" add by CPU atomics, two by load-combine-store under the lock, onto the
        // same words, for a while (the threads must meet on a busy machine); every update
        // must land.
        let lock = AtomicU32::new(0);
        let atomics: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let cells: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let (folding, atomic_adds, folds) = (AtomicU32::new(2), AtomicU64::new(0), AtomicU64::new(0));
        let end = std::time::Instant::now() + std::time::Duration::from_millis(300);
        std::thread::scope(|s| {
            for t in 0..4 {
                let (lock, atomics, cells) = (&lock, &atomics, &cells);
                let (folding, atomic_adds, folds) = (&folding, &atomic_adds, &folds);
                s.spawn(move || {
                    if t < 2 {
                        let mut adds = 0u64;
                        while folding.load(Ordering::Relaxed) > 0 || adds < 1000 {
                            let _s = AtomicSection::enter(&atomics[t], lock, 1);
                            cells[adds as usize % cells.len()].fetch_add(1, Ordering::Relaxed);
                            adds += 1;
                        }
                        atomic_adds.fetch_add(adds, Ordering::Relaxed);
                    } else {
                        while std::time::Instant::now() < end {
                            let _g = AccumulateGuard::take(lock, atomics.iter(), 1);
                            for c in cells {
                                let v = c.load(Ordering::Relaxed);
                                std::hint::spin_loop();
                                c.store(v + 1, Ordering::Relaxed);
                            }
                            folds.fetch_add(1, Ordering::Relaxed);
                        }
                        folding.fetch_sub(1, Ordering::Relaxed);
                    }
                });
            }
        });
        let sum: u64 = cells.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let folded = folds.load(Ordering::Relaxed) * cells.len() as u64;
        assert_eq!(sum, atomic_adds.load(Ordering::Relaxed) + folded);
    }
}

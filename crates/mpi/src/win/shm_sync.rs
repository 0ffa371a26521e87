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
/// other's word (Dekker), and one of them must fence between its store and its load, or each
/// may read the other's word before its own store left the store buffer.
///
/// Which side fences is the part's *atomics mode*, a bit of the lock word beside the holder
/// ([`HELD`], [`EXCHANGE`]), so that the frequent side is cheap:
///
/// - plain (`EXCHANGE` clear): the origin announces with a plain store, then loads the lock
///   word, and its atomic instruction is the only locked one of the call (path_cost
///   fetch_op+flush: 338 instructions as before, one of them locked, not two). A fold that takes
///   the lock in this mode sets `EXCHANGE`, then fences every CPU that runs a member itself
///   (`membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`, about 1 us), the asymmetric Dekker of
///   Linux's RCU and of Folly's `asymmetricHeavyBarrier`: the fence passes each origin's CPU
///   either after its announcement (then the fold sees it and waits) or before (then its load
///   of the lock word, later, sees the fold's).
/// - exchange (`EXCHANGE` set): the origin announces with an exchange (a full barrier) and a
///   fold needs no fence, so a run of folds pays one. After [`MODE_SWITCH_BACK`] such
///   sections (since its last switch) an origin clears `EXCHANGE` by a compare-and-swap while no fold holds
///   the lock (a full barrier: its later loads of the word see any fold that took it since).
///
/// Where a member cannot register for `membarrier` (an old kernel, a filter), or
/// `BB_RMA_FOLD_BARRIER=0`, the window starts in exchange mode and stays there
/// (`Segment::fold_barrier`).
pub(crate) struct AccumulateGuard<'a>(&'a AtomicU32);

/// The accumulate lock word: a fold holds it.
pub(crate) const HELD: u32 = 1;
/// The accumulate lock word: CPU atomics on the part announce themselves by an exchange.
pub(crate) const EXCHANGE: u32 = 2;

impl<'a> AccumulateGuard<'a> {
    /// Takes `lock` (keeping its mode); fences every member's CPU if origins announce by
    /// plain stores (after setting exchanges); then waits until none of `atomics` holds
    /// `tag` (1 + the target part).
    pub fn take<'w>(lock: &'a AtomicU32, atomics: impl Iterator<Item = &'w AtomicU64> + Clone, tag: u64) -> Self {
        let mut was = 0;
        spin_until(|| {
            was = lock.load(Ordering::Relaxed) & !HELD;
            lock.compare_exchange_weak(was, was | HELD, Ordering::SeqCst, Ordering::Relaxed).is_ok()
        });
        if was & EXCHANGE == 0 {
            // Exchanges first: an origin whose CPU the fence passes before its announcement
            // reads the word after, and takes the exchange.
            lock.store(HELD | EXCHANGE, Ordering::SeqCst);
            fence_every_member();
        }
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
        // Nobody else changes the word while it is held: the mode stays exchanges.
        self.0.store(EXCHANGE, Ordering::Release);
    }
}

/// Atomic sections by exchange (since the last switch) after which an origin sets plain announcements again
/// (so a fold's membarrier, about 1 us, is paid at most once per this many atomics of
/// an origin that meets folds: 64 keeps it under 20 ns an operation).
pub(crate) const MODE_SWITCH_BACK: u32 = 64;

/// Folds fence the other CPUs with `membarrier`, so CPU atomics need one locked instruction.
pub(crate) static FOLD_BARRIER: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_RMA_FOLD_BARRIER",
    1,
    "Windows in shared memory: 1, a fold under the accumulate lock fences the members' CPUs (membarrier) so fetch-and-op and compare-and-swap announce themselves with a plain store, one locked instruction a call; 0, an exchange each",
);

/// Atomic sections entered by an exchange, and folds that fenced the members' CPUs, in this
/// process so far (MPI_T `bb_rma_locked_atomic_sections`, `bb_rma_fold_barriers`).
pub(crate) static LOCKED_SECTIONS: AtomicU64 = AtomicU64::new(0);
pub(crate) static FOLD_BARRIERS: AtomicU64 = AtomicU64::new(0);

/// Adds one to a statistic of this process (an increment two threads may make at once can
/// be lost: a statistic's price, like `attached::count_mapped`).
#[inline]
fn count(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;

/// Whether this process is registered for the expedited global `membarrier`, so a fold in
/// another member's process fences its CPUs (once per process; `BB_RMA_FOLD_BARRIER=0`: no).
pub(crate) fn fold_barrier_registered() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: a system call with integer arguments only.
        FOLD_BARRIER.get() != 0
            && unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) } == 0
    })
}

/// Every CPU running a member's thread executes a full barrier before this returns.
#[cold]
fn fence_every_member() {
    count(&FOLD_BARRIERS);
    // SAFETY: a system call with integer arguments only.
    let done = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) } == 0;
    // Every member registered before the window was made (`Segment::fold_barrier`), so the
    // call cannot be refused; if it were, no fence would make a plain announcement safe.
    assert!(done, "membarrier refused after every member registered: {}", std::io::Error::last_os_error());
}

/// This origin changing a target part by CPU atomics while no accumulate holds its lock (see
/// [`AccumulateGuard`]); ends on drop.
pub(crate) struct AtomicSection<'a>(&'a AtomicU64);

impl<'a> AtomicSection<'a> {
    /// Announces `tag` (1 + the target part) in `mine`, this origin's atomics word, by a plain
    /// store, if `lock`, the part's accumulate lock word, is free and in plain mode; `None`:
    /// not announced that way.
    #[inline(always)]
    pub fn enter(mine: &'a AtomicU64, lock: &AtomicU32, tag: u64) -> Option<Self> {
        // A plain store, then the word: see `AccumulateGuard` for why no fence is needed.
        mine.store(tag, Ordering::Relaxed);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        (lock.load(Ordering::Acquire) == 0).then_some(AtomicSection(mine))
    }

    /// Enters for `target`'s part of `seg`.
    #[inline(always)]
    pub fn of(seg: &'a Segment, target: usize) -> Self {
        let (mine, lock) = (seg.atomics(seg.me()), seg.accumulate_lock(target));
        Self::enter_counting(mine, lock, target as u64 + 1, &seg.locked_in_a_row, seg.fold_barrier)
    }

    /// [`Self::enter`], else by an exchange once no fold holds the lock, counting those in
    /// `in_a_row` and switching the part back to plain announcements at [`MODE_SWITCH_BACK`]
    /// if `fold_barrier` (the window's members can be fenced).
    #[inline(always)]
    fn enter_counting(
        mine: &'a AtomicU64,
        lock: &AtomicU32,
        tag: u64,
        in_a_row: &AtomicU32,
        fold_barrier: bool,
    ) -> Self {
        match Self::enter(mine, lock, tag) {
            Some(section) => section,
            None => Self::enter_exchanging(mine, lock, tag, in_a_row, fold_barrier),
        }
    }

    /// [`Self::enter_counting`] when the lock word was not 0: a fold holds it, or exchange
    /// mode. Out of line, so the common entry saves no registers for the wait.
    #[cold]
    #[inline(never)]
    fn enter_exchanging(
        mine: &'a AtomicU64,
        lock: &AtomicU32,
        tag: u64,
        in_a_row: &AtomicU32,
        fold_barrier: bool,
    ) -> Self {
        // Counts by a load and a store: a locked add would double what this path costs.
        count(&LOCKED_SECTIONS);
        let sections = in_a_row.load(Ordering::Relaxed) + 1;
        in_a_row.store(sections, Ordering::Relaxed);
        if fold_barrier && sections >= MODE_SWITCH_BACK {
            in_a_row.store(0, Ordering::Relaxed);
            // Plain announcements from the next section on, if no fold holds the lock now; a
            // full barrier before this origin's next look at the word.
            let _ = lock.compare_exchange(EXCHANGE, 0, Ordering::SeqCst, Ordering::Relaxed);
        }
        loop {
            // An exchange, not a store: the full barrier orders it before the load (Dekker).
            mine.swap(tag, Ordering::SeqCst);
            if lock.load(Ordering::SeqCst) & HELD == 0 {
                return AtomicSection(mine);
            }
            mine.store(0, Ordering::Release);
            spin_until(|| lock.load(Ordering::Relaxed) & HELD == 0);
        }
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

    /// Two "origins" add by CPU atomics, two by load-combine-store under the lock, onto the
    /// same words, for a while (the threads must meet on a busy machine); every update must
    /// land. `fenced`: the folds fence by membarrier and the atomics start in plain mode.
    /// Returns (atomic sections by exchange, fold barriers) of the run.
    fn atomics_beside_folds(fenced: bool) -> (u64, u64) {
        let lock = AtomicU32::new(if fenced { 0 } else { EXCHANGE });
        let atomics: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let cells: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let (folding, atomic_adds, folds) = (AtomicU32::new(2), AtomicU64::new(0), AtomicU64::new(0));
        let (exchanges, barriers) = (LOCKED_SECTIONS.load(Ordering::Relaxed), FOLD_BARRIERS.load(Ordering::Relaxed));
        let end = std::time::Instant::now() + std::time::Duration::from_millis(300);
        std::thread::scope(|s| {
            for t in 0..4 {
                let (lock, atomics, cells) = (&lock, &atomics, &cells);
                let (folding, atomic_adds, folds) = (&folding, &atomic_adds, &folds);
                s.spawn(move || {
                    if t < 2 {
                        let (mut adds, in_a_row) = (0u64, AtomicU32::new(0));
                        while folding.load(Ordering::Relaxed) > 0 || adds < 1000 {
                            let _s = AtomicSection::enter_counting(&atomics[t], lock, 1, &in_a_row, fenced);
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
                            // Let the atomics switch back to plain announcements at times.
                            if folds.load(Ordering::Relaxed) % 8 == 0 {
                                std::thread::sleep(std::time::Duration::from_micros(200));
                            }
                        }
                        folding.fetch_sub(1, Ordering::Relaxed);
                    }
                });
            }
        });
        let sum: u64 = cells.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let folded = folds.load(Ordering::Relaxed) * cells.len() as u64;
        assert_eq!(sum, atomic_adds.load(Ordering::Relaxed) + folded);
        (LOCKED_SECTIONS.load(Ordering::Relaxed) - exchanges, FOLD_BARRIERS.load(Ordering::Relaxed) - barriers)
    }

    #[test]
    fn atomic_sections_and_plain_folds_under_the_lock_lose_no_update() {
        // The counters are the process's: the two runs go one after the other in one test.
        let (exchanges, barriers) = atomics_beside_folds(false);
        assert!(exchanges > 0 && barriers == 0, "exchange mode: {exchanges} exchanges, {barriers} fences");
        if fold_barrier_registered() {
            // Plain announcements between folds, a fence when a fold finds them (the switch
            // back after MODE_SWITCH_BACK exchanges makes both happen more than once).
            let (exchanges, barriers) = atomics_beside_folds(true);
            assert!(exchanges > 0 && barriers > 1, "plain mode: {exchanges} exchanges, {barriers} fences");
        }
    }
}

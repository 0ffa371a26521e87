//! Passive-target synchronisation: MPI_Win_lock / unlock, lock_all / unlock_all, flush,
//! flush_all, flush_local, flush_local_all, MPI_Win_sync.
//!
//! A lock is asked lazily, in front of the first operation on its target (MPI lets
//! MPI_Win_lock return before the lock is held); the target's handler holds back what follows
//! until it grants it (`serve.rs`). Only a lock of one's own window is waited for at once:
//! the program may load and store there as soon as MPI_Win_lock returns. MPI_MODE_NOCHECK
//! (no other process will want a conflicting lock) asks for no lock at all.
//!
//! A window in a node segment locks in shared memory instead (`shm_sync.rs`): MPI_Win_lock
//! takes the target's lock word before it returns, MPI_Win_lock_all takes each target's shared
//! with the first operation on it, and flush has nothing to wait for (operations are done
//! when their calls return), only a memory fence to order them. A created window on one host
//! (`single_copy.rs`) locks there too, but its accumulates go through the handler: flush and
//! unlock settle them first (`withdraw.rs`: applied by the handler, or withdrawn and applied
//! by the origin), and only then let the lock word go.

use std::ffi::c_int;

use super::origin::{finish_all, lock_now, start_flush, start_unlock, Wait};
use super::withdraw::Settle;
use super::{shm_sync, win_call_unlocked, Epoch, Win};
use crate::abi::*;
use crate::error::{err, Res};
use crate::state::{self, Mpi};

/// The window's target `rank`, checked (`None`: MPI_PROC_NULL).
fn target(w: &Win, rank: c_int, call: &str) -> Res<Option<usize>> {
    if rank == MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.targets.len();
    if rank < 0 || rank as usize >= n {
        return Err(err(MPI_ERR_RANK, format!("{call}: target rank {rank}, the window's group has {n} ranks")));
    }
    Ok(Some(rank as usize))
}

fn check_assert(assert: c_int, call: &str) -> Res {
    if assert & !MPI_MODE_NOCHECK != 0 {
        return Err(err(MPI_ERR_ASSERT, format!("{call}: assert {assert:#x}, only MPI_MODE_NOCHECK applies")));
    }
    Ok(())
}

/// Runs `start` on the window under the tables, then waits for what it returns without them:
/// the settling of a created window's accumulates (`withdraw.rs`), then the waits.
fn then_wait(win: MPI_Win, start: impl FnOnce(&mut Win, &mut Settles) -> Res<Vec<Wait>>) -> Res {
    let mut settles = Settles::default();
    let waits = state::with(|m: &mut Mpi| start(m.win_mut(win)?, &mut settles)).expect("MPI is running")?;
    if waits.is_empty() && settles.is_empty() {
        // A node window's flush: nothing is outstanding (and no iterator to build and drop).
        return Ok(());
    }
    let settled = settle_all(settles);
    let waited = finish_all(waits);
    settled.and(waited)
}

/// Settlings to run after the tables are let go: the first kept inline (a flush of one
/// target allocates nothing for it).
#[derive(Default)]
pub(crate) struct Settles(Option<Settle>, Vec<Settle>);

impl Settles {
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl Extend<Settle> for Settles {
    fn extend<I: IntoIterator<Item = Settle>>(&mut self, items: I) {
        for s in items {
            match self.0 {
                None => self.0 = Some(s),
                Some(_) => self.1.push(s),
            }
        }
    }
}

/// Runs every one of `settles`, all of them even after an error (the first is returned).
pub(crate) fn settle_all(settles: Settles) -> Res {
    let mut first = Ok(());
    for s in settles.0.into_iter().chain(settles.1) {
        if let Err(e) = s.run() {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// The settling of a created window's outstanding accumulates on `target` (`withdraw.rs`).
pub(crate) fn settle_of(w: &mut Win, target: usize) -> Option<Settle> {
    w.reach.as_mut()?.settle(target)
}

/// Starts the wait for the operations this process addressed to its own part of the window
/// (rank `rank`, if that is its own); nothing in other epochs or for other ranks. A flush is
/// asked even when an answer already confirms the operations: a request-based get's answer
/// belongs to its request, and the flush's answer comes after it.
pub(crate) fn start_self_flush(w: &mut Win, rank: c_int, settles: &mut Settles) -> Res<Vec<Wait>> {
    let me = w.comm.rank();
    if w.direct()
        || !matches!(w.epoch, Epoch::Lock { .. })
        || usize::try_from(rank).ok() != Some(me)
        || w.targets[me].lock == 0
    {
        return Ok(Vec::new());
    }
    if w.reach.is_some() {
        // A created window's put or get to itself was a copy, done; its accumulates are
        // settled (by its own handler, in the wait's progress); only other requests to the
        // handler (unflushed, or a send in flight) are flushed.
        settles.extend(settle_of(w, me));
        if !w.targets[me].unflushed && w.targets[me].waits.is_empty() {
            return Ok(Vec::new());
        }
    }
    w.targets[me].unflushed = true;
    start_flush(&w.comm, me, &mut w.targets[me], false)
}

/// MPI_Win_lock of a node window's target whose lock word is free: taken at once, under the
/// tables (no error handler to set up, no handle cloned for a spin without them). `None`:
/// anything else, for the general path (which also reports what is wrong). Nothing here
/// can panic.
#[inline(always)]
fn lock_at_once(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> Option<c_int> {
    state::with(|m| {
        let w = m.win_mut(win).ok()?;
        let exclusive = match lock_type {
            MPI_LOCK_EXCLUSIVE => true,
            MPI_LOCK_SHARED => false,
            _ => return None,
        };
        if assert != 0 || !matches!(w.epoch, Epoch::Closed | Epoch::Lock { all: false }) {
            return None;
        }
        let r = usize::try_from(rank).ok().filter(|&r| r < w.targets.len())?;
        let seg = w.node.as_ref()?;
        let t = &mut w.targets[r];
        if t.lock != 0 || !shm_sync::try_lock(seg.lock_word(r), exclusive) {
            return None;
        }
        (t.lock, t.nocheck, t.lock_sent) = (lock_type, false, true);
        w.epoch = Epoch::Lock { all: false };
        Some(MPI_SUCCESS)
    })
    .flatten()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    if let Some(rc) = lock_at_once(lock_type, rank, assert, win) {
        return rc;
    }
    win_call_unlocked("MPI_Win_lock", win, || {
        let mut node_lock = None;
        then_wait(win, |w, _| {
            if lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE {
                return Err(err(
                    MPI_ERR_LOCKTYPE,
                    format!("lock type {lock_type}: MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE"),
                ));
            }
            check_assert(assert, "MPI_Win_lock")?;
            if w.epoch != (Epoch::Lock { all: false }) {
                w.may_start_epoch("MPI_Win_lock")?;
            }
            let Some(r) = target(w, rank, "MPI_Win_lock")? else { return Ok(Vec::new()) };
            if w.targets[r].lock != 0 {
                return Err(err(MPI_ERR_RMA_SYNC, format!("MPI_Win_lock: rank {r} is already locked by this process")));
            }
            w.epoch = Epoch::Lock { all: false };
            let t = &mut w.targets[r];
            t.lock = lock_type;
            t.nocheck = assert & MPI_MODE_NOCHECK != 0;
            if let Some(seg) = w.node.as_ref().filter(|_| !t.nocheck) {
                // Taken now, in shared memory, with the tables let go (below).
                t.lock_sent = true;
                node_lock = Some((seg.clone(), w.comm.clone(), r, w.reach.is_some()));
                return Ok(Vec::new());
            }
            if r == w.comm.rank() && !t.nocheck {
                return lock_now(&w.comm, r, t);
            }
            Ok(Vec::new())
        })?;
        if let Some((seg, comm, r, serve)) = node_lock {
            match lock_type {
                MPI_LOCK_EXCLUSIVE => shm_sync::lock_exclusive(&comm, seg.lock_word(r), serve),
                _ => shm_sync::lock_shared(&comm, seg.lock_word(r), serve),
            }
        }
        Ok(())
    })
}

/// A node window's lock word to let go once the operations are complete: (segment, target,
/// lock type).
type Release = (std::sync::Arc<super::segment::Segment>, usize, c_int);

/// Ends a node window's hold of target `r`: returns the waits for the answers of operations
/// the handler does (a created window's accumulates, settled into `settles`; none where the
/// origin did them all), and the lock word to let go after them, if this origin holds it.
fn node_unlock(w: &mut Win, r: usize, settles: &mut Settles) -> Res<(Vec<Wait>, Option<Release>)> {
    settles.extend(settle_of(w, r));
    let waits = start_flush(&w.comm, r, &mut w.targets[r], false)?;
    let t = std::mem::take(&mut w.targets[r]);
    let release = match (&w.node, t.lock_sent) {
        (Some(seg), true) => Some((seg.clone(), r, t.lock)),
        _ => None,
    };
    Ok((waits, release))
}

/// Settles `settles` and waits for `waits`, then lets the lock words go (even if a wait
/// failed: the operations are over either way), the operations ordered before the release
/// (`shm_sync.rs`).
fn finish_and_release(settles: Settles, waits: Vec<Wait>, release: Vec<Release>) -> Res {
    let settled = if settles.is_empty() { Ok(()) } else { settle_all(settles) };
    let outcome = settled.and(if waits.is_empty() { Ok(()) } else { finish_all(waits) });
    shm_sync::complete_stores();
    for (seg, r, lock) in release {
        match lock {
            MPI_LOCK_EXCLUSIVE => shm_sync::unlock_exclusive(seg.lock_word(r)),
            _ => shm_sync::unlock_shared(seg.lock_word(r)),
        }
    }
    outcome
}

/// MPI_Win_unlock of a target of a window whose origin did every operation itself (a node
/// segment's, `Win::direct`): nothing to settle or wait for, the lock word let go under the
/// tables, with no list built. `None`: anything else, for the general path. The choice is
/// the window's, made at its creation: the other windows' settling costs these nothing.
#[inline(always)]
fn unlock_direct(rank: c_int, win: MPI_Win) -> Option<c_int> {
    state::with(|m| {
        let w = m.win_mut(win).ok()?;
        let r = usize::try_from(rank).ok().filter(|&r| r < w.targets.len())?;
        let seg = w.node.as_ref().filter(|_| w.direct() && w.epoch == (Epoch::Lock { all: false }))?;
        let t = &w.targets[r];
        if t.lock == 0 || t.unflushed || !t.waits.is_empty() {
            return None;
        }
        let (word, exclusive, held) = (seg.lock_word(r), t.lock == MPI_LOCK_EXCLUSIVE, t.lock_sent);
        shm_sync::complete_stores();
        if held && exclusive {
            shm_sync::unlock_exclusive(word);
        } else if held {
            shm_sync::unlock_shared(word);
        }
        w.targets[r] = Default::default();
        if w.targets.iter().all(|t| t.lock == 0) {
            w.epoch = Epoch::Closed;
        }
        Some(MPI_SUCCESS)
    })
    .flatten()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    if let Some(rc) = unlock_direct(rank, win) {
        return rc;
    }
    win_call_unlocked("MPI_Win_unlock", win, || {
        let (mut release, mut settles) = (Vec::new(), Settles::default());
        let waits = state::with(|m: &mut Mpi| -> Res<Vec<Wait>> {
            let w = m.win_mut(win)?;
            let Some(r) = target(w, rank, "MPI_Win_unlock")? else { return Ok(Vec::new()) };
            if w.epoch != (Epoch::Lock { all: false }) || w.targets[r].lock == 0 {
                return Err(err(MPI_ERR_RMA_SYNC, format!("MPI_Win_unlock: rank {r} is not locked by this process")));
            }
            let waits = if w.node.is_some() {
                let (waits, held) = node_unlock(w, r, &mut settles)?;
                release.extend(held);
                waits
            } else {
                start_unlock(&w.comm, r, &mut w.targets[r])?
            };
            if w.targets.iter().all(|t| t.lock == 0) {
                w.epoch = Epoch::Closed;
            }
            Ok(waits)
        })
        .expect("MPI is running")?;
        finish_and_release(settles, waits, release)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_lock_all", win, || {
        then_wait(win, |w, _| {
            check_assert(assert, "MPI_Win_lock_all")?;
            w.may_start_epoch("MPI_Win_lock_all")?;
            w.epoch = Epoch::Lock { all: true };
            let nocheck = assert & MPI_MODE_NOCHECK != 0;
            for t in &mut w.targets {
                t.lock = MPI_LOCK_SHARED;
                t.nocheck = nocheck;
            }
            let me = w.comm.rank();
            if nocheck || w.node.is_some() {
                // A node window takes each target's shared lock with the first operation on
                // it (`rma.rs`).
                return Ok(Vec::new());
            }
            lock_now(&w.comm, me, &mut w.targets[me])
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_unlock_all(win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_unlock_all", win, || {
        let (mut release, mut settles) = (Vec::new(), Settles::default());
        let waits = state::with(|m: &mut Mpi| -> Res<Vec<Wait>> {
            let w = m.win_mut(win)?;
            if w.epoch != (Epoch::Lock { all: true }) {
                return Err(err(MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all"));
            }
            let mut waits = Vec::new();
            for r in 0..w.targets.len() {
                if w.node.is_some() {
                    let (mut more, held) = node_unlock(w, r, &mut settles)?;
                    waits.append(&mut more);
                    release.extend(held);
                } else {
                    waits.append(&mut start_unlock(&w.comm, r, &mut w.targets[r])?);
                }
            }
            w.epoch = Epoch::Closed;
            Ok(waits)
        })
        .expect("MPI is running")?;
        finish_and_release(settles, waits, release)
    })
}

/// MPI_Win_flush and its three relatives: `rank` None for all targets; `local`: only the
/// origin's buffers need to be done with (answers landed, large requests sent).
fn flush(call: &'static str, win: MPI_Win, rank: Option<c_int>, local: bool) -> c_int {
    win_call_unlocked(call, win, || {
        then_wait(win, |w, settles| {
            if !matches!(w.epoch, Epoch::Lock { .. }) {
                return Err(err(MPI_ERR_RMA_SYNC, format!("{call} outside a passive-target epoch (MPI_Win_lock)")));
            }
            let mut waits = Vec::new();
            if w.node.is_some() {
                // Operations on a node window are done when their calls return; what orders
                // them before the program's next accesses is in `shm_sync.rs`.
                if let Some(r) = rank.map(|rank| target(w, rank, call)).transpose()?.flatten() {
                    if w.targets[r].lock == 0 {
                        return Err(err(MPI_ERR_RMA_SYNC, format!("{call}: rank {r} is not locked by this process")));
                    }
                }
                shm_sync::complete_stores();
                if w.direct() {
                    return Ok(waits);
                }
                // A created window: its accumulates' answers from the handler, below.
            }
            match rank {
                Some(rank) => {
                    let Some(r) = target(w, rank, call)? else { return Ok(waits) };
                    if w.targets[r].lock == 0 {
                        return Err(err(MPI_ERR_RMA_SYNC, format!("{call}: rank {r} is not locked by this process")));
                    }
                    settles.extend(settle_of(w, r));
                    waits = start_flush(&w.comm, r, &mut w.targets[r], local)?;
                }
                None => {
                    for r in 0..w.targets.len() {
                        settles.extend(settle_of(w, r));
                    }
                    for (r, t) in w.targets.iter_mut().enumerate().filter(|(_, t)| t.lock != 0) {
                        waits.append(&mut start_flush(&w.comm, r, t, local)?);
                    }
                }
            }
            Ok(waits)
        })
    })
}

/// MPI_Win_flush(_local) of a locked target of a window whose origin did every operation
/// on it itself (in a node segment, by single copy or in a mapped region): only the memory order of `shm_sync.rs`, with no error handler
/// to set up and no list of waits. `None`: anything else, for [`flush`] (which also reports
/// what is wrong). Nothing here can panic.
#[inline(always)]
fn flush_direct(win: MPI_Win, rank: c_int) -> Option<c_int> {
    state::with(|m| {
        let w = m.win(win).ok()?;
        let r = usize::try_from(rank).ok()?;
        let t = w.targets.get(r)?;
        // A window reached by single copies or mapped regions (`single_copy.rs`,
        // `attached.rs`) with nothing at the target's handler: as a node window's.
        let quiet = || {
            w.node.is_some()
                && !t.unflushed
                && t.waits.is_empty()
                && w.reach.as_ref().is_some_and(|reach| reach.settled(r))
        };
        (t.lock != 0 && (w.direct() || quiet()) && matches!(w.epoch, Epoch::Lock { .. })).then(|| {
            shm_sync::complete_stores();
            MPI_SUCCESS
        })
    })
    .flatten()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    if let Some(rc) = flush_direct(win, rank) {
        return rc;
    }
    flush("MPI_Win_flush", win, Some(rank), false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_all", win, None, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    if let Some(rc) = flush_direct(win, rank) {
        return rc;
    }
    flush("MPI_Win_flush_local", win, Some(rank), true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_local_all", win, None, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_sync(win: MPI_Win) -> c_int {
    // The memory is one copy (MPI_WIN_UNIFIED): a full fence orders this process's loads and
    // stores of the window with the handler's, which runs on this process's threads. And one
    // round of progress: programs wait for a remote update by polling their window with
    // MPI_Win_sync between loads (OpenCoarrays' event wait does), and only progress applies it.
    win_call_unlocked("MPI_Win_sync", win, || {
        let comm = state::with(|m| m.win(win).map(|w| w.comm.clone())).expect("MPI is running")?;
        comm.progress();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    })
}

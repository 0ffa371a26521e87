//! MPI_Fetch_and_op and MPI_Compare_and_swap on a window the origin reaches by loads and
//! stores (a node window, `segment.rs`; `Win::direct`), by a path prepared once per window:
//! each target part's address, size and displacement unit, its accumulate lock and this
//! origin's atomics word (`shm_sync.rs`) resolved at the window's first atomic, and the last
//! (kind, operator, datatype) resolved to its CPU instruction kept, so a call is the epoch's
//! check, a multiplication and a bound, and the instruction: no segment arithmetic, no
//! operator or datatype search, no argument record as the general fast path builds
//! (`fast.rs`). Anything else (another window kind, a pair type, an operator with no
//! instruction, a null buffer, a range outside the part) returns `None`: the general path
//! does it, or reports what is wrong. callgrind `path_cost` (with the flush, 2026-11-28):
//! fetch_op 342 instructions through `fast.rs`, 266 this way; cas 275 and 273.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::direct::{self, How};
use super::target::Kind;
use super::{shm_sync, Epoch, Win};
use crate::abi::*;

/// Calls done by this path (MPI_T `bb_rma_prepared_atomics`): a load and a store, no locked
/// instruction (threads of MPI_THREAD_MULTIPLE may lose a count; a measure, as
/// `attached::count_mapped`).
pub(crate) static PREPARED: AtomicU64 = AtomicU64::new(0);

/// One target part as an atomic reaches it.
struct Part {
    base: *mut u8,
    bytes: usize,
    unit: usize,
    /// The part's accumulate lock (`shm_sync::AccumulateGuard`).
    lock: *const AtomicU32,
}

/// A window's prepared atomics: its parts, this origin's atomics word, the last resolution.
pub(super) struct Prepared {
    parts: Box<[Part]>,
    mine: *const AtomicU64,
    /// `BB_RMA_ACC_BULK` <= 1: every fetch-and-op folds under the lock (`direct::bulk`).
    folds: bool,
    /// The last (kind, operator, datatype) and the instruction and width it came to.
    last: Option<((Kind, MPI_Op, MPI_Datatype), How, usize)>,
}

impl Prepared {
    /// The table of `w`, a window the origin reaches by loads and stores (`None` otherwise).
    fn of(w: &Win) -> Option<Prepared> {
        let seg = w.node.as_ref().filter(|_| w.direct())?;
        let parts = (0..seg.ranks())
            .map(|r| {
                let (base, _) = seg.part(r);
                let (bytes, unit) = w.peers[r];
                Part { base, bytes, unit: usize::try_from(unit).unwrap_or(0), lock: seg.accumulate_lock(r) }
            })
            .collect();
        Some(Prepared {
            parts,
            mine: seg.atomics(seg.me()),
            folds: direct::bulk(seg, Kind::GetAccumulate, 1),
            last: None,
        })
    }

    /// The instruction and element width of `kind` with `op` on `datatype` (`None`: none
    /// fits; the general path decides).
    #[inline(always)]
    fn resolve(&mut self, kind: Kind, op: MPI_Op, datatype: MPI_Datatype) -> Option<(How, usize)> {
        match self.last {
            Some((key, how, width)) if key == (kind, op, datatype) => Some((how, width)),
            _ => self.resolve_anew(kind, op, datatype),
        }
    }

    #[cold]
    #[inline(never)]
    fn resolve_anew(&mut self, kind: Kind, op: MPI_Op, datatype: MPI_Datatype) -> Option<(How, usize)> {
        let width = builtin_datatype_size(datatype).filter(|w| matches!(w, 1 | 2 | 4 | 8))?;
        if is_pair_type(datatype) || (self.folds && kind == Kind::GetAccumulate) {
            return None;
        }
        let how = direct::instruction(kind, op, datatype)?;
        self.last = Some(((kind, op, datatype), how, width));
        Some((how, width))
    }
}

/// One element's fetch-and-op (`kind` GetAccumulate, `cmp` null) or compare-and-swap at
/// displacement `disp` of `rank`'s part of window `win`, done here if the prepared path fits;
/// `None`: the general path's.
///
/// # Safety
/// As MPI requires of the program: `x`, `cmp` and `old` hold one element of `datatype` each
/// (or are null, which sends the call to the general path where it needs them).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn issue(
    win: MPI_Win,
    rank: i32,
    disp: MPI_Aint,
    datatype: MPI_Datatype,
    kind: Kind,
    op: MPI_Op,
    x: *const u8,
    cmp: *const u8,
    old: *mut u8,
) -> Option<()> {
    // Inlined whole: a closure out of line takes its captures through memory.
    crate::state::with_inlined(
        #[inline(always)]
        |m| {
            let w = m.win_mut(win).ok()?;
            // A negative rank or displacement becomes a huge one, which the bounds below refuse.
            let target = rank as usize;
            // As `fast::issue`: the epoch lets this origin reach `target` now; under an exclusive
            // MPI_Win_lock no other origin updates the part, so no fold needs to hear of this.
            let t = w.targets.get(target)?;
            let alone = match &w.epoch {
                Epoch::Fence => false,
                Epoch::Lock { all: false } if t.lock != 0 => t.lock == MPI_LOCK_EXCLUSIVE,
                Epoch::Lock { all: true } if t.lock != 0 => {
                    // MPI_Win_lock_all's shared lock of this target, at its first operation.
                    if !t.lock_sent && !t.nocheck {
                        super::rma::lock_all_lazily(w, target);
                    }
                    false
                }
                Epoch::Access(group) if group.contains(&target) => false,
                _ => return None,
            };
            if w.prepared.is_none() {
                w.prepared = Some(Box::new(Prepared::of(w)?));
            }
            let p = w.prepared.as_deref_mut()?;
            let (how, width) = p.resolve(kind, op, datatype)?;
            let part = p.parts.get(target)?;
            let offset = (disp as usize).checked_mul(part.unit)?;
            if old.is_null()
                || (x.is_null() && !matches!(how, How::Load))
                || (cmp.is_null() && kind == Kind::CompareAndSwap)
            {
                return None;
            }
            if offset.checked_add(width)? > part.bytes {
                return None;
            }
            // SAFETY: inside the part (checked just above), which the segment maps while the
            // window lives.
            let at = part.base.add(offset);
            if !(at as usize).is_multiple_of(width) {
                return None;
            }
            if matches!(how, How::Load) {
                shm_sync::before_load();
            }
            // SAFETY: the lock and the atomics word are in the segment `w.node` holds.
            let _section = if alone {
                None
            } else {
                Some(shm_sync::AtomicSection::enter(&*p.mine, &*part.lock, target as u64 + 1))
            };
            direct::atomic_element(at, width, how, x, cmp, old);
            w.issued = true;
            PREPARED.store(PREPARED.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            Some(())
        },
    )
    .flatten()
}

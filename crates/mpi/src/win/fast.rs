//! The fast path of the RMA calls on a window in a node segment (`segment.rs`), or on a
//! region of a dynamic window that the origin maps (`attached.rs`, `arena.rs`): one
//! predefined datatype and count at every buffer, the target range inside the window, and a
//! put, a get, an accumulate-family operation the CPU does in one instruction per element, or
//! a longer accumulate folded under the target part's lock (`direct.rs`). It checks what it
//! needs with no allocation and no datatype table, and does the operation; anything else goes
//! to the general path of `rma.rs`, which checks everything and reports what is wrong. An
//! 8 B put is about 140 instructions this way (callgrind `path_cost put_flush`: 234 with the
//! flush, 2026-11-28).

use super::rma::{Buf, Call};
use super::target::{Access, Kind, Shape};
use super::{direct, shm_sync, Epoch, Win};
use crate::abi::*;
use crate::error::Res;
use crate::state::Mpi;

/// The common case on a node window, done with no allocation and no datatype table: every
/// buffer of one predefined type and count, in range, and an operation the CPU does in one
/// instruction (or a copy). `None`: anything else, the general path checks and does it (and
/// reports what is wrong).
///
/// # Safety
/// As MPI requires of the program: the buffers hold `count` elements.
#[inline(always)]
pub(super) unsafe fn issue(m: &mut Mpi, win: MPI_Win, c: &Call) -> Option<Res> {
    let w = m.win_mut(win).ok()?;
    let mappable = |w: &Win| {
        let target = usize::try_from(c.rank).ok().filter(|&r| r < w.peers.len());
        w.attached.as_ref().zip(target).is_some_and(|(seen, t)| seen.may_map(t))
    };
    if w.node.is_none() || (w.reach.is_some() && !mappable(w)) {
        return None;
    }
    let size = builtin_datatype_size(c.target_type).filter(|&s| s > 0)?;
    let count = usize::try_from(c.target_count).ok().filter(|&n| n > 0)?;
    let origin = c.origin.filter(|_| c.op != MPI_NO_OP || c.kind == Kind::CompareAndSwap);
    let like_target = |b: Option<Buf>| {
        b.is_none_or(|b| b.datatype == c.target_type && b.count == c.target_count && !b.addr.is_null())
    };
    if !(like_target(origin) && like_target(c.compare) && like_target(c.result)) {
        return None;
    }
    let target = usize::try_from(c.rank).ok().filter(|&r| r < w.peers.len())?;
    match &w.epoch {
        Epoch::Fence => {}
        Epoch::Lock { all }
            if w.targets[target].lock != 0 && (!all || w.targets[target].lock_sent || w.targets[target].nocheck) => {}
        Epoch::Access(group) if group.contains(&target) => {}
        _ => return None,
    }
    let bytes = count.checked_mul(size)?;
    let at = place(w, target, c.disp, bytes)?;
    let seg = w.node.as_ref()?;
    match c.kind {
        Kind::Put => {
            copy(c.origin?.addr as *const u8, at, bytes);
            shm_sync::stored();
        }
        Kind::Get => {
            shm_sync::before_load();
            copy(at, c.result?.addr as *mut u8, bytes)
        }
        kind if direct::bulk(seg, kind, count) && !is_pair_type(c.target_type) => {
            // A fold under the target part's lock (`direct.rs`).
            if kind == Kind::Accumulate && c.op == MPI_NO_OP {
                return None;
            }
            let mut combine = super::serve::combiner_for(kind, c.op, c.target_type).ok()?;
            let x = origin.map_or(&[][..], |b| std::slice::from_raw_parts(b.addr as *const u8, bytes));
            let old = match c.result {
                Some(b) => std::slice::from_raw_parts_mut(b.addr as *mut u8, bytes),
                None => &mut [][..],
            };
            shm_sync::before_load();
            shm_sync::stored();
            let _held = shm_sync::AccumulateGuard::of(seg, target);
            direct::fold(at, bytes, kind, x, &[], old, &mut combine);
        }
        kind => {
            let how = direct::instruction(kind, c.op, c.target_type)?;
            if matches!(how, direct::How::Load) {
                shm_sync::before_load();
            }
            if !matches!(size, 1 | 2 | 4 | 8) || !(at as usize).is_multiple_of(size) || is_pair_type(c.target_type) {
                return None;
            }
            if kind == Kind::Accumulate && c.op == MPI_NO_OP {
                return None;
            }
            // The program's buffers element by element, as they are (null: none).
            let at_k = |b: Option<Buf>, k: usize| b.map_or(std::ptr::null_mut(), |b| (b.addr as *mut u8).add(k));
            // Under an exclusive MPI_Win_lock no other origin updates the target part: its
            // atomics need not announce themselves to folds (`shm_sync.rs`).
            let alone = matches!(w.epoch, Epoch::Lock { all: false }) && w.targets[target].lock == MPI_LOCK_EXCLUSIVE;
            let _atomics = if alone { None } else { Some(shm_sync::AtomicSection::of(seg, target)) };
            let mut k = 0;
            while k < bytes {
                let (x, cmp, old) = (at_k(origin, k), at_k(c.compare, k), at_k(c.result, k));
                direct::atomic_element(at.add(k), size, how, x, cmp, old);
                k += size;
            }
        }
    }
    w.issued = true;
    Some(Ok(()))
}

/// The common accumulate-family call on a created window on one host (`single_copy.rs`), or a
/// dynamic one on bytes its target published (`attached.rs`),
/// sent to the target's handler with no allocation but the message and no datatype view:
/// one predefined type of 1, 2, 4 or 8 bytes and count at every buffer, in range, a
/// predefined operator, another rank as target, in any epoch (in a passive one numbered and
/// kept for withdrawal, `withdraw.rs`). The message is what the general path would send
/// (`target.rs`). `None`: anything else; the general path checks and does it.
///
/// # Safety
/// As MPI requires of the program: the buffers hold `count` elements.
#[inline(never)] // a message round trip follows: kept out of the calls the fast path inlines into
pub(super) unsafe fn issue_to_handler(m: &mut Mpi, win: MPI_Win, c: &Call) -> Option<Res> {
    if !matches!(c.kind, Kind::Accumulate | Kind::GetAccumulate | Kind::CompareAndSwap) {
        return None;
    }
    let w = m.win_mut(win).ok()?;
    if w.reach.is_none() || w.node.is_none() {
        return None;
    }
    let size = builtin_datatype_size(c.target_type).filter(|s| matches!(s, 1 | 2 | 4 | 8))?;
    if is_pair_type(c.target_type) || c.target_type == MPI_BYTE {
        return None;
    }
    let count = usize::try_from(c.target_count).ok().filter(|&n| n > 0)?;
    let sends_origin = !(c.kind == Kind::GetAccumulate && c.op == MPI_NO_OP);
    let origin = c.origin.filter(|_| sends_origin);
    let like_target = |b: Option<Buf>| {
        b.is_none_or(|b| b.datatype == c.target_type && b.count == c.target_count && !b.addr.is_null())
    };
    if !(like_target(origin) && like_target(c.compare) && like_target(c.result)) {
        return None;
    }
    let operator_fits = match c.op {
        MPI_REPLACE => true,
        MPI_NO_OP => c.kind == Kind::GetAccumulate,
        op => crate::ops::predefined(op, c.target_type).is_some(),
    };
    if !operator_fits || (c.kind == Kind::CompareAndSwap && c.compare.is_none()) {
        return None;
    }
    let target = usize::try_from(c.rank).ok().filter(|&r| r < w.peers.len() && r != w.comm.rank())?;
    let passive = match &w.epoch {
        Epoch::Fence => false,
        Epoch::Lock { all: true } if w.targets[target].lock != 0 => {
            super::rma::lock_all_lazily(w, target);
            true
        }
        Epoch::Lock { all: false } if w.targets[target].lock != 0 => true,
        Epoch::Access(group) if group.contains(&target) => false,
        _ => return None,
    };
    let bytes = count.checked_mul(size)?;
    let offset = reached(w, target, c.disp, bytes)?;
    // A region this process maps: the general path does it by CPU atomics (`direct.rs`).
    if let (Some(seen), Some(seg), Some(reach)) = (&mut w.attached, &w.node, &w.reach) {
        if seen.may_map(target) && seen.mapped(seg, target, reach.pid(target), offset, offset + bytes).is_some() {
            return None;
        }
    }
    if passive {
        if let Some(done) = apply_now(w, target, c, origin, offset, bytes) {
            w.issued = true;
            return Some(done);
        }
    }
    // The request (`serve.rs`): its two words, the operation's eight (`target.rs`), one block,
    // then the origin data and the compare data.
    let data_len = bytes * (origin.is_some() as usize + c.compare.is_some() as usize);
    let words: [u64; 12] = [
        super::serve::Request::Op as u64,
        0,
        c.kind as u64,
        c.op as u32 as u64,
        c.target_type as u32 as u64,
        offset as u64,
        1,
        bytes as u64,
        1,
        data_len as u64,
        0,
        bytes as u64,
    ];
    let mut head = [0u8; 96];
    for (to, word) in head.chunks_exact_mut(8).zip(words) {
        to.copy_from_slice(&word.to_ne_bytes());
    }
    let mut msg = Vec::with_capacity(head.len() + data_len);
    msg.extend_from_slice(&head);
    for b in [origin, c.compare].into_iter().flatten() {
        msg.extend_from_slice(std::slice::from_raw_parts(b.addr as *const u8, bytes));
    }
    let result = c.result.map_or(std::ptr::null_mut(), |b| b.addr as *mut u8);
    w.issued = true;
    let t = &mut w.targets[target];
    let track = match (&mut w.reach, passive) {
        (Some(reach), true) => reach.track(target),
        _ => None,
    };
    Some(super::origin::operate_contiguous(&w.comm, target, t, msg, result, bytes, track))
}

/// [`issue_to_handler`]'s operation applied at once by the origin, where a recent flush found
/// the target away (`withdraw.rs`); `None`: send it.
///
/// # Safety
/// As for [`issue_to_handler`], which checked the buffers and the range.
#[cold]
unsafe fn apply_now(
    w: &mut Win,
    target: usize,
    c: &Call,
    origin: Option<Buf>,
    offset: usize,
    bytes: usize,
) -> Option<Res> {
    let (reach, seg) = (w.reach.as_mut()?, w.node.as_ref()?);
    if !reach.direct(target) {
        return None;
    }
    let shape = Shape { offset: offset as i64, count: 1, extent: bytes as i64, blocks: vec![(0, bytes)] };
    let a = Access { kind: c.kind, op: c.op, elem: c.target_type, target: shape, data: Vec::new() };
    let mut data = Vec::with_capacity(2 * bytes);
    for b in [origin, c.compare].into_iter().flatten() {
        data.extend_from_slice(std::slice::from_raw_parts(b.addr as *const u8, bytes));
    }
    let reply = match reach.apply_now(seg, target, &a, &data)? {
        Ok(reply) => reply,
        Err(e) => return Some(Err(e)),
    };
    if let Some(b) = c.result {
        std::ptr::copy_nonoverlapping(reply.as_ptr(), b.addr as *mut u8, bytes.min(reply.len()));
    }
    Some(Ok(()))
}

/// The byte offset in `target`'s part of `bytes` bytes at displacement `disp`, if they lie
/// inside it (else the checked path reports the error).
#[inline(always)]
fn inside(w: &Win, target: usize, disp: MPI_Aint, bytes: usize) -> Option<usize> {
    let (window, unit) = w.peers[target];
    let offset = usize::try_from(disp).ok()?.checked_mul(unit as usize)?;
    (offset.checked_add(bytes)? <= window).then_some(offset)
}

/// Where the `bytes` bytes at displacement `disp` of `target` are here: in its part of a
/// node window, or in a region of a dynamic window that this process maps (`attached.rs`);
/// `None`: elsewhere, or out of range (the checked path says which).
#[inline(always)]
fn place(w: &mut Win, target: usize, disp: MPI_Aint, bytes: usize) -> Option<*mut u8> {
    let seg = w.node.as_ref()?;
    let Some(reach) = &w.reach else {
        let offset = inside(w, target, disp, bytes)?;
        // SAFETY: inside the part (checked just above).
        return Some(unsafe { seg.part(target).0.add(offset) });
    };
    let lo = usize::try_from(disp).ok()?;
    let at = w.attached.as_mut()?.mapped(seg, target, reach.pid(target), lo, lo.checked_add(bytes)?)?;
    super::attached::count_mapped();
    Some(at)
}

/// [`inside`] for a window reached by single copy: on a dynamic window displacements are
/// addresses, in a region the target published (`attached.rs`).
#[inline(always)]
fn reached(w: &mut Win, target: usize, disp: MPI_Aint, bytes: usize) -> Option<usize> {
    match (&mut w.attached, &w.node) {
        (Some(seen), Some(seg)) => {
            let at = usize::try_from(disp).ok()?;
            let end = i64::try_from(at.checked_add(bytes)?).ok()?;
            seen.covers(seg, target, at as i64, end).then_some(at)
        }
        _ => inside(w, target, disp, bytes),
    }
}

/// A copy that moves one word inline (the common 8-byte case costs a call to `memcpy` and its
/// size dispatch otherwise).
///
/// # Safety
/// As for `copy_nonoverlapping`.
unsafe fn copy(from: *const u8, to: *mut u8, bytes: usize) {
    if bytes == 8 {
        (to as *mut u64).write_unaligned((from as *const u64).read_unaligned());
    } else {
        std::ptr::copy_nonoverlapping(from, to, bytes);
    }
}

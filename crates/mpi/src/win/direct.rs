//! RMA operations that the origin carries out itself on a target part of a node segment
//! (`segment.rs`): no message, no target involvement, complete when the call returns.
//! MPI_Put and MPI_Get are copies along the target's shape (`target.rs`); the accumulate
//! family (MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap) works
//! element by element.
//!
//! # Atomicity
//!
//! MPI (4.0 section 12.7.1) asks that accumulate-family operations on one location with one
//! predefined datatype act as if done one at a time, element by element; nothing more (an
//! operation on many elements need not be atomic as a whole; a put beside an accumulate on
//! one location is the program's error). Every origin of the node may update the same place
//! at once, and an operation takes one of two paths:
//!
//! - **CPU atomics**, for a fetch-and-op, a compare-and-swap or an accumulate of fewer than
//!   `BB_RMA_ACC_BULK` elements of 1, 2, 4 or 8 bytes (not a MINLOC/MAXLOC pair type), every
//!   one aligned to its size: each element is changed by one instruction: fetch-add for sums
//!   of integers, fetch-and/or/xor, fetch-min/max of integers, swap for MPI_REPLACE, a load
//!   for MPI_NO_OP, compare-exchange for MPI_Compare_and_swap, and a compare-exchange loop
//!   around the operator for everything else (floating sums, products, logical operators).
//!   Any two of these on one element are atomic with respect to each other.
//! - **Plain loads and stores under the target part's accumulate lock**, for everything else:
//!   longer accumulates (folded by the operator's vectorised loop, as fast as the memory:
//!   an atomic instruction per element cost 8.6 ns, 25 times Open MPI's fold at 8 KiB),
//!   16-byte and pair types, unaligned elements.
//!
//! The lock excludes the atomic path too (`shm_sync.rs`, [`AccumulateGuard`] and
//! [`AtomicSection`]): an origin announces the part it changes by atomics in a word of its own
//! and backs off while the lock is held, and the locker waits until no origin announces its
//! part. So the two paths never overlap on a part, and each element is updated whole.
//!
//! Accumulates to one location from one origin apply in the order issued (MPI's default
//! `accumulate_ordering`, and any weaker one), since each is done before the call returns.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicU16, AtomicU32, AtomicU64, AtomicU8};

use super::origin::Landing;
use super::segment::Segment;
use super::shm_sync::{self, AccumulateGuard, AtomicSection};
use super::target::{apply_data, Access, Kind, Shape};
use crate::abi::*;
use crate::datatype::{view, Dir, View};
use crate::error::{err, Res};
use crate::ops::Combiner;

/// Copies packed `data` into the target places of `shape` at `base`.
///
/// # Safety
/// `shape` lies inside the part at `base` (the origin checked it against the window size).
pub(crate) unsafe fn put(base: *mut u8, shape: &Shape, data: &[u8]) {
    let mut pos = 0;
    for (at, len) in shape.regions() {
        // SAFETY: inside the target part (caller) and inside `data` (its size is the shape's).
        std::ptr::copy_nonoverlapping(data.as_ptr().add(pos), base.add(at), len);
        pos += len;
    }
}

/// Copies the target places of `shape` at `base` into packed `out`.
///
/// # Safety
/// As for [`put`].
pub(crate) unsafe fn get(base: *const u8, shape: &Shape, out: &mut [u8]) {
    let mut pos = 0;
    for (at, len) in shape.regions() {
        // SAFETY: as in `put`.
        std::ptr::copy_nonoverlapping(base.add(at), out.as_mut_ptr().add(pos), len);
        pos += len;
    }
}

/// What one element's atomic update does.
#[derive(Clone, Copy)]
pub(crate) enum How {
    Load,
    Swap,
    Add,
    And,
    Or,
    Xor,
    Min {
        signed: bool,
    },
    Max {
        signed: bool,
    },
    CompareSwap,
    /// A compare-exchange loop around the operator.
    Combine,
}

/// The operator before the datatype: MPI_NO_OP and MPI_REPLACE (and compare-and-swap) need no
/// look at the element type, which is a search among the predefined types.
#[inline(always)]
fn how(kind: Kind, op: MPI_Op, elem: MPI_Datatype) -> How {
    match (kind, op) {
        (Kind::CompareAndSwap, _) => return How::CompareSwap,
        (_, MPI_NO_OP) => return How::Load,
        (_, MPI_REPLACE) => return How::Swap,
        _ => {}
    }
    let Some(signed) = crate::ops::integer_sign(elem) else { return How::Combine };
    match op {
        MPI_SUM => How::Add,
        MPI_BAND => How::And,
        MPI_BOR => How::Or,
        MPI_BXOR => How::Xor,
        MPI_MIN => How::Min { signed },
        MPI_MAX => How::Max { signed },
        _ => How::Combine,
    }
}

/// One element's update at `p` by the CPU's atomics: `x` the origin element, `cmp` the
/// compare element (compare-and-swap), the old value written to `old`; `word` does every
/// update but [`How::Combine`] (the operator's compare-exchange loop).
macro_rules! atomic_elem {
    ($name:ident, $word:ident, $U:ty, $AU:ty, $I:ty, $AI:ty) => {
        /// The update of one element by one instruction (`how` is not [`How::Combine`]): `x`
        /// and `cmp` point at the origin and compare elements (null where unused, unaligned
        /// allowed); returns the value before.
        ///
        /// # Safety
        /// `p` is aligned to the element size and inside the mapping; `x` and `cmp` are null
        /// or hold one element.
        #[inline(always)]
        unsafe fn $word(p: *mut u8, how: How, x: *const u8, cmp: *const u8) -> $U {
            // SAFETY: aligned and inside the mapping (caller); shared words are only ever
            // changed atomically on this path (module comment).
            let a = &*(p as *const $AU);
            let s = &*(p as *const $AI);
            // SAFETY: null or one element (caller).
            let word = |b: *const u8| if b.is_null() { 0 } else { (b as *const $U).read_unaligned() };
            let v = word(x);
            match how {
                How::Load => a.load(SeqCst),
                How::Swap => a.swap(v, AcqRel),
                How::Add => a.fetch_add(v, AcqRel),
                How::And => a.fetch_and(v, AcqRel),
                How::Or => a.fetch_or(v, AcqRel),
                How::Xor => a.fetch_xor(v, AcqRel),
                How::Min { signed: true } => s.fetch_min(v as $I, AcqRel) as $U,
                How::Max { signed: true } => s.fetch_max(v as $I, AcqRel) as $U,
                How::Min { signed: false } => a.fetch_min(v, AcqRel),
                How::Max { signed: false } => a.fetch_max(v, AcqRel),
                How::CompareSwap => match a.compare_exchange(word(cmp), v, AcqRel, Acquire) {
                    Ok(w) | Err(w) => w,
                },
                How::Combine => unreachable!("an operator's update loops around it (the callers)"),
            }
        }

        /// # Safety
        /// `p` is aligned to the element size and inside the mapping.
        unsafe fn $name(p: *mut u8, how: How, x: &[u8], cmp: &[u8], old: &mut [u8], combine: &mut Combiner) {
            const N: usize = std::mem::size_of::<$U>();
            let was: $U = match how {
                How::Combine => {
                    // SAFETY: as in the word's update above.
                    let a = &*(p as *const $AU);
                    let mut cur = a.load(Relaxed);
                    loop {
                        let mut new = cur.to_ne_bytes();
                        combine(&x[..N], &mut new);
                        match a.compare_exchange_weak(cur, <$U>::from_ne_bytes(new), AcqRel, Relaxed) {
                            Ok(_) => break cur,
                            Err(w) => cur = w,
                        }
                    }
                }
                how => {
                    let at = |b: &[u8]| if b.len() >= N { b.as_ptr() } else { std::ptr::null() };
                    $word(p, how, at(x), at(cmp))
                }
            };
            if old.len() >= N {
                old[..N].copy_from_slice(&was.to_ne_bytes());
            }
        }
    };
}

atomic_elem!(atomic1, word1, u8, AtomicU8, i8, AtomicI8);
atomic_elem!(atomic2, word2, u16, AtomicU16, i16, AtomicI16);
atomic_elem!(atomic4, word4, u32, AtomicU32, i32, AtomicI32);
atomic_elem!(atomic8, word8, u64, AtomicU64, i64, AtomicI64);

/// The update of one aligned element of `width` bytes at `p` when `how` needs no operator
/// (all but [`How::Combine`]): the fast path of fetch-and-op and compare-and-swap, on the
/// program's buffers as they are: `x` the origin element, `cmp` the compare element (null
/// where unused), the value before written to `old` (unless null).
///
/// # Safety
/// `p` is aligned to `width` (1, 2, 4 or 8) and inside the mapping; `x`, `cmp` and `old` are
/// null or hold one element each (unaligned allowed).
#[inline(always)]
pub(crate) unsafe fn atomic_element(p: *mut u8, width: usize, how: How, x: *const u8, cmp: *const u8, old: *mut u8) {
    debug_assert!(!matches!(how, How::Combine));
    // SAFETY: `old` is null or holds one element (caller).
    let keep = |bytes: &[u8]| {
        if !old.is_null() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), old, bytes.len())
        }
    };
    match width {
        1 => keep(&word1(p, how, x, cmp).to_ne_bytes()[..]),
        2 => keep(&word2(p, how, x, cmp).to_ne_bytes()[..]),
        4 => keep(&word4(p, how, x, cmp).to_ne_bytes()[..]),
        _ => keep(&word8(p, how, x, cmp).to_ne_bytes()[..]),
    }
}

/// The CPU instruction that does accumulate `op` on elements of `elem` by itself, if one does
/// (`None`: a compare-exchange loop around the operator, or the slow path decides).
#[inline(always)]
pub(crate) fn instruction(kind: Kind, op: MPI_Op, elem: MPI_Datatype) -> Option<How> {
    match how(kind, op, elem) {
        How::Combine => None,
        h => Some(h),
    }
}

/// The least elements of an accumulate that go under the lock as one fold, not one atomic
/// instruction each.
pub(crate) static BULK: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_RMA_ACC_BULK",
    2,
    "Windows in shared memory: accumulates of at least this many elements fold under the target part's lock (fewer: a CPU atomic per element); 2: acc_flush of 2 longs 0.039 us by atomics, 4 longs 0.029 folded",
);

/// Whether an accumulate of `elems` elements on `seg` folds under the lock.
#[inline]
pub(crate) fn bulk(seg: &Segment, kind: Kind, elems: usize) -> bool {
    elems >= seg.bulk && matches!(kind, Kind::Accumulate | Kind::GetAccumulate)
}

/// Updates the `x.len().max(old.len())` bytes at `p` by plain loads and stores: the bytes
/// before go to `old` (empty: not wanted), then compare-and-swap (`Kind::CompareAndSwap`,
/// `cmp` the compare bytes) or `combine` with the origin bytes `x`.
///
/// # Safety
/// The bytes at `p` are inside the mapping and the caller holds the part's accumulate lock.
pub(crate) unsafe fn fold(
    p: *mut u8,
    len: usize,
    kind: Kind,
    x: &[u8],
    cmp: &[u8],
    old: &mut [u8],
    combine: &mut Combiner,
) {
    // SAFETY: inside the mapping (caller); every other writer of it waits for the lock we
    // hold or, by CPU atomics, for its release.
    let here = std::slice::from_raw_parts_mut(p, len);
    if !old.is_empty() {
        old.copy_from_slice(here);
    }
    if kind == Kind::CompareAndSwap {
        if here == cmp {
            here.copy_from_slice(x);
        }
    } else if !x.is_empty() {
        combine(x, here);
    }
}

/// The size of elements of `elem` that the CPU updates atomically (aligned), if it can.
fn atomic_width(elem: MPI_Datatype) -> Option<usize> {
    if is_pair_type(elem) {
        return None;
    }
    builtin_datatype_size(elem).filter(|w| matches!(w, 1 | 2 | 4 | 8))
}

/// Applies the accumulate-family operation `a` to `part` (its address and length: `target`'s
/// part of `seg`, or a mapped region of a dynamic window, `attached.rs`), whose accumulate
/// lock and atomics words are `target`'s in `seg`: `data` is the packed origin data (then, for compare-and-swap, the
/// compare data), and a get-type operation's reply (the packed target data before) goes to
/// `reply`, whose size is the shape's. The path follows the module comment.
///
/// # Safety
/// `a.target` lies inside the part (the origin checked it against the window size).
pub(crate) unsafe fn accumulate(
    seg: &Segment,
    target: usize,
    (base, len): (*mut u8, usize),
    a: &Access,
    data: &[u8],
    reply: &mut [u8],
) -> Result<(), String> {
    let Some(w) = atomic_width(a.elem) else {
        // No CPU atomic fits: the whole operation on the packed bytes, under the lock.
        let mut combine = super::serve::combiner(a)?;
        let _held = AccumulateGuard::of(seg, target);
        // SAFETY: the part, which the lock we hold keeps every other accumulate out of.
        let window = std::slice::from_raw_parts_mut(base, len);
        let mut out = Vec::with_capacity(reply.len());
        let done = apply_data(window, a, data, &mut *combine, &mut out);
        if a.kind.fetches() {
            reply.copy_from_slice(&out[..reply.len()]);
        }
        return done;
    };
    let (x_all, cmp_all) = match a.kind {
        Kind::CompareAndSwap => data.split_at(data.len() / 2),
        _ => (data, &[][..]),
    };
    let fetches = a.kind.fetches();
    let aligned =
        a.target.regions().all(|(at, bytes)| (base as usize + at).is_multiple_of(w) && bytes.is_multiple_of(w));
    if !aligned || bulk(seg, a.kind, a.target.bytes() / w) {
        let mut combine = super::serve::combiner(a)?;
        let _held = AccumulateGuard::of(seg, target);
        let mut pos = 0;
        for (at, bytes) in a.target.regions() {
            let x = x_all.get(pos..pos + bytes).unwrap_or(&[]);
            let cmp = cmp_all.get(pos..pos + bytes).unwrap_or(&[]);
            let old = if fetches { &mut reply[pos..pos + bytes] } else { &mut [][..] };
            fold(base.add(at), bytes, a.kind, x, cmp, old, &mut combine);
            pos += bytes;
        }
        return Ok(());
    }
    let how = how(a.kind, a.op, a.elem);
    let mut combine: Combiner = match how {
        How::Combine => super::serve::combiner(a)?,
        _ => Box::new(|_: &[u8], _: &mut [u8]| {}),
    };
    let elem = match w {
        1 => atomic1,
        2 => atomic2,
        4 => atomic4,
        _ => atomic8,
    };
    let _atomics = AtomicSection::of(seg, target);
    let mut pos = 0;
    for (at, bytes) in a.target.regions() {
        for k in (0..bytes).step_by(w) {
            let i = pos + k;
            let x = x_all.get(i..i + w).unwrap_or(&[]);
            let cmp = cmp_all.get(i..i + w).unwrap_or(&[]);
            let old = if fetches { &mut reply[i..i + w] } else { &mut [][..] };
            elem(base.add(at + k), how, x, cmp, old, &mut combine);
        }
        pos += bytes;
    }
    Ok(())
}

/// Carries out operation `a` on target `target` of the node window `seg`: `data` the origin
/// data's views (then the compare data's), `result` where a get-type operation's data goes.
/// `part`: where the target bytes are (`target`'s part of `seg`, or a mapped region of a
/// dynamic window, `attached.rs`; `a.target`'s offsets are from its start). Done when this
/// returns.
///
/// # Safety
/// As MPI requires of the program: the buffers hold what their datatypes and counts say;
/// `a.target` lies inside `part` (the origin checked it).
pub(crate) unsafe fn operate(
    seg: &Segment,
    target: usize,
    part: (*mut u8, usize),
    a: &Access,
    data: &[View],
    result: Option<Landing>,
) -> Res {
    let base = part.0;
    let mut out = match result {
        // SAFETY: the program's result buffer (caller).
        Some(l) => Some(view(&l.layout, l.addr, l.count, Dir::Write)?),
        None => None,
    };
    match a.kind {
        Kind::Put => {
            put(base, &a.target, data.first().map_or(&[][..], |v| v.bytes()));
            shm_sync::stored();
        }
        Kind::Get => {
            shm_sync::before_load();
            get(base, &a.target, out.as_mut().map_or(&mut [][..], |v| v.bytes_mut()))
        }
        _ => {
            // A fetch by atomic loads (MPI_NO_OP) is a load like a get's; under the lock,
            // plain stores (the lock's compare-exchange fences before them, not after).
            shm_sync::before_load();
            shm_sync::stored();
            let joined: Vec<u8>;
            let bytes = match data {
                [] => &[][..],
                [one] => one.bytes(),
                many => {
                    joined = many.iter().flat_map(|v| v.bytes()).copied().collect();
                    &joined[..]
                }
            };
            let reply = out.as_mut().map_or(&mut [][..], |v| v.bytes_mut());
            accumulate(seg, target, part, a, bytes, reply).map_err(|e| {
                err(MPI_ERR_OP, format!("{} on target rank {target}: {e}", super::target::op_name(a.op)))
            })?;
        }
    }
    if let Some(v) = out {
        let len = v.len();
        // SAFETY: the result buffer is still the program's (caller).
        v.finish(len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word shared by threads as the segment is by processes (the same instructions).
    #[repr(align(8))]
    struct Word([u8; 16]);

    #[test]
    fn operators_map_to_the_instructions_that_do_them() {
        assert!(matches!(instruction(Kind::GetAccumulate, MPI_SUM, MPI_LONG), Some(How::Add)));
        assert!(matches!(instruction(Kind::Accumulate, MPI_MAX, MPI_UNSIGNED), Some(How::Max { signed: false })));
        assert!(matches!(instruction(Kind::GetAccumulate, MPI_NO_OP, MPI_DOUBLE), Some(How::Load)));
        assert!(matches!(instruction(Kind::CompareAndSwap, MPI_REPLACE, MPI_INT), Some(How::CompareSwap)));
        assert!(instruction(Kind::Accumulate, MPI_SUM, MPI_DOUBLE).is_none(), "a floating sum loops");
        assert!(instruction(Kind::Accumulate, MPI_PROD, MPI_INT).is_none(), "no instruction multiplies");
        assert_eq!(atomic_width(MPI_C_DOUBLE_COMPLEX), None);
        assert_eq!(atomic_width(MPI_DOUBLE_INT), None);
        assert_eq!(atomic_width(MPI_SHORT), Some(2));
    }

    #[test]
    fn fetch_adds_and_compare_exchange_loops_from_threads_lose_nothing() {
        let cell = Word([0; 16]);
        let at = cell.0.as_ptr() as usize;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    let mut sum = crate::ops::predefined(MPI_SUM, MPI_DOUBLE).expect("double sum");
                    for _ in 0..5000 {
                        let mut old = [0u8; 8];
                        let one = 1u64.to_ne_bytes();
                        // SAFETY: an aligned word of `cell`, which outlives the scope; only
                        // atomics touch it meanwhile.
                        unsafe {
                            atomic_element(at as *mut u8, 8, How::Add, one.as_ptr(), std::ptr::null(), old.as_mut_ptr())
                        };
                        assert!(u64::from_ne_bytes(old) < 20_000);
                        // SAFETY: as above, the second word.
                        unsafe {
                            atomic8((at + 8) as *mut u8, How::Combine, &0.5f64.to_ne_bytes(), &[], &mut [], &mut sum)
                        };
                    }
                    let _ = t;
                });
            }
        });
        assert_eq!(u64::from_ne_bytes(cell.0[..8].try_into().unwrap()), 20_000);
        assert_eq!(f64::from_ne_bytes(cell.0[8..].try_into().unwrap()), 10_000.0);
    }

    #[test]
    fn compare_and_swap_swaps_only_on_equal_and_returns_the_old_value() {
        let mut cell = Word([0; 16]);
        cell.0[..4].copy_from_slice(&7i32.to_ne_bytes());
        let p = cell.0.as_mut_ptr();
        let mut old = [0u8; 4];
        let (nine, six, seven) = (9i32.to_ne_bytes(), 6i32.to_ne_bytes(), 7i32.to_ne_bytes());
        // SAFETY: an aligned word of `cell`, ours alone.
        unsafe { atomic_element(p, 4, How::CompareSwap, nine.as_ptr(), six.as_ptr(), old.as_mut_ptr()) };
        assert_eq!((i32::from_ne_bytes(old), i32::from_ne_bytes(cell.0[..4].try_into().unwrap())), (7, 7));
        // SAFETY: as above.
        unsafe { atomic_element(p, 4, How::CompareSwap, nine.as_ptr(), seven.as_ptr(), old.as_mut_ptr()) };
        assert_eq!((i32::from_ne_bytes(old), i32::from_ne_bytes(cell.0[..4].try_into().unwrap())), (7, 9));
        // An unaligned element under the lock: the same outcome by plain bytes.
        let mut none: Combiner = Box::new(|_: &[u8], _: &mut [u8]| {});
        // SAFETY: bytes 5..9 of `cell`, ours alone.
        unsafe { fold(p.add(5), 4, Kind::CompareAndSwap, &3i32.to_ne_bytes(), &[0; 4], &mut old, &mut none) };
        assert_eq!((i32::from_ne_bytes(old), i32::from_ne_bytes(cell.0[5..9].try_into().unwrap())), (0, 3));
    }
}

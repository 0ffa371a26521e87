//! The RMA calls at the origin: MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate,
//! MPI_Fetch_and_op, MPI_Compare_and_swap, and the request-based MPI_Rput, MPI_Rget,
//! MPI_Raccumulate, MPI_Rget_accumulate. Each checks everything the origin can know (the
//! epoch, the target rank, datatypes and sizes, the target range against the window sizes
//! learned at creation), packs the origin data, and sends the operation to its target
//! (`origin.rs`).

use std::ffi::{c_int, c_void};

use super::origin::{operate, Landing, Wait};
use super::serve::Request as Ask;
use super::target::{op_name, Access, Kind, Shape};
use super::{win_call, Epoch};
use crate::abi::*;
use crate::datatype::{layout_in, map_of, view, Basics, Dir, Layout};
use crate::error::{err, out, Res};
use crate::state::{self, Mpi, Req};

/// A buffer argument: address, count, datatype.
#[derive(Clone, Copy)]
pub(super) struct Buf {
    pub addr: *const c_void,
    pub count: i64,
    pub datatype: MPI_Datatype,
}

/// One RMA call's arguments.
pub(super) struct Call {
    pub kind: Kind,
    pub origin: Option<Buf>,
    pub compare: Option<Buf>,
    pub result: Option<Buf>,
    pub rank: c_int,
    pub disp: MPI_Aint,
    pub target_count: i64,
    pub target_type: MPI_Datatype,
    pub op: MPI_Op,
}

impl Call {
    /// A call of `kind` on `count` elements of `datatype` at `disp` in `rank`'s window, with no
    /// local buffers yet (each entry point sets the ones it has).
    fn to(kind: Kind, rank: c_int, disp: MPI_Aint, count: i64, datatype: MPI_Datatype, op: MPI_Op) -> Call {
        Call {
            kind,
            origin: None,
            compare: None,
            result: None,
            rank,
            disp,
            target_count: count,
            target_type: datatype,
            op,
        }
    }
}

fn layout_and_bytes(m: &Mpi, b: &Buf, what: &str) -> Res<(Layout, usize)> {
    if b.count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative {what} count {}", b.count)));
    }
    let l = layout_in(m, b.datatype)?;
    let bytes = l.bytes(b.count)?;
    Ok((l, bytes))
}

/// The predefined type the data of `t` is made of, for accumulate (`None`: `t` has no data).
/// MPICH computes on MPI_BYTE as on MPI_UNSIGNED_CHAR (MPI_SUM of bytes is accepted), so
/// this does too.
fn element(m: &Mpi, t: MPI_Datatype) -> Res<Option<MPI_Datatype>> {
    let arithmetic = |t| if t == MPI_BYTE { MPI_UNSIGNED_CHAR } else { t };
    if is_pair_type(t) || builtin_datatype_size(t).is_some_and(|s| s > 0) {
        return Ok(Some(arithmetic(t)));
    }
    match map_of(m, t)?.basics() {
        Basics::None => Ok(None),
        Basics::One(b) => Ok(Some(arithmetic(b))),
        Basics::Mixed => Err(err(
            MPI_ERR_TYPE,
            format!("datatype {t:#x} mixes predefined types: accumulate needs one predefined type throughout"),
        )),
    }
}

/// The target data of `count` instances of `l` at byte `offset` of the window: one block
/// when the data is contiguous (so the target copies it in one piece, not per element).
fn shape_of(l: &Layout, offset: i64, count: i64) -> Shape {
    if let Some(lb) = l.contiguous(count as usize) {
        let bytes = l.size() * count as usize;
        return Shape { offset: offset + lb, count: 1, extent: bytes as i64, blocks: vec![(0, bytes)] };
    }
    let (extent, blocks) = match l {
        Layout::Dense(size) => (*size as i64, vec![(0, *size)]),
        Layout::Map(map) => (map.extent(), map.blocks()),
    };
    Shape { offset, count: count as usize, extent, blocks }
}

fn mismatch(what: &str, bytes: usize, target: usize) -> crate::error::MpiError {
    err(
        MPI_ERR_TYPE,
        format!("the {what} buffer holds {bytes} bytes but the target datatype and count describe {target}"),
    )
}

/// Checks an accumulate's operator on elements of `elem`.
fn check_op(m: &Mpi, kind: Kind, op: MPI_Op, elem: Option<MPI_Datatype>) -> Res {
    if m.user_op(op).is_some() {
        return Err(err(
            MPI_ERR_OP,
            format!("user-defined operator {op:#x}: RMA accumulates take predefined operators only"),
        ));
    }
    if op == MPI_REPLACE || (op == MPI_NO_OP && kind == Kind::GetAccumulate) {
        return Ok(());
    }
    if op == MPI_NO_OP {
        return Err(err(MPI_ERR_OP, "MPI_NO_OP is for MPI_Get_accumulate and MPI_Fetch_and_op only"));
    }
    match elem {
        Some(t) => crate::ops::predefined_combiner(m, op, t)
            .map(drop)
            .map_err(|_| err(MPI_ERR_OP, format!("operator {} is not defined on datatype {t:#x}", op_name(op)))),
        None => crate::ops::predefined_combiner(m, op, MPI_INT).map(drop),
    }
}

/// Runs an RMA call's body on the tables; then, if it addressed the calling process's own
/// part of the window in a passive-target epoch, waits until the operation has taken effect
/// (a get's data landed), as MPICH does: it applies such operations at once, and programs
/// rely on it (BAGEL's distributed FCI reads what MPI_Rget brought from its own rank right
/// after the call, and read garbage before). The operation went to this process's own
/// handler, which the wait's progress runs.
/// One hold of the tables: an operation on another rank costs a few comparisons more. The
/// body returns true when the fast path did the operation on a node window (then nothing
/// waits, and the window is not looked up again).
fn rma_call(function: &'static str, win: MPI_Win, rank: c_int, body: impl FnOnce(&mut Mpi) -> Res<bool>) -> c_int {
    // Built only off the fast path: an empty list of settlings costs its drop on every call.
    let mut pending = None;
    let rc = win_call(function, win, |m| {
        if body(m)? {
            return Ok(());
        }
        let w = m.win_mut(win)?;
        if !w.direct() {
            let mut settles = super::passive::Settles::default();
            let waits = super::passive::start_self_flush(w, rank, &mut settles)?;
            if !waits.is_empty() || !settles.is_empty() {
                pending = Some((waits, settles));
            }
        }
        Ok(())
    });
    let Some((waits, settles)) = pending.filter(|_| rc == MPI_SUCCESS) else { return rc };
    super::win_call_unlocked(function, win, || {
        let settled = super::passive::settle_all(settles);
        settled.and(super::origin::finish_all(waits))
    })
}

/// A plain (not request-based) call: on a node window, the fast path in one hold of the
/// tables and nothing else (no error handler, no settlings: what it does cannot fail);
/// anything else through [`rma_call`], to the target's handler or [`issue`].
/// `call` builds the arguments: generic, so that each entry point gets a fast path of its own
/// with its kind and buffers known to the compiler.
#[inline(always)]
unsafe fn plain_call(function: &'static str, win: MPI_Win, call: impl Fn() -> Call) -> c_int {
    let done = crate::error::guard(function, || state::with(|m| super::fast::issue(m, win, &call()).is_some()));
    if done == Some(true) {
        return MPI_SUCCESS;
    }
    plain_call_checked(function, win, call())
}

/// [`plain_call`] off the node windows' fast path (kept out of line, so the entry points
/// stay small).
#[inline(never)]
unsafe fn plain_call_checked(function: &'static str, win: MPI_Win, c: Call) -> c_int {
    rma_call(function, win, c.rank, |m| match super::fast::issue_to_handler(m, win, &c) {
        Some(done) => done.map(|()| true),
        None => issue(m, win, c, false).map(|_| false),
    })
}

/// Checks `c` on window `win` and sends it to its target. `detach`: a request-based call,
/// which gets the wait for a get-type operation's answer instead of the window keeping it.
unsafe fn issue(m: &mut Mpi, win: MPI_Win, c: Call, detach: bool) -> Res<Option<Wait>> {
    if let Some(done) = super::fast::issue(m, win, &c) {
        return done.map(|()| None);
    }
    let w = m.win(win)?;
    if w.epoch == Epoch::Closed {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "no access epoch is open on this window: call MPI_Win_fence, MPI_Win_lock(_all) or MPI_Win_start first",
        ));
    }
    if c.rank == MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.peers.len();
    if c.rank < 0 || c.rank as usize >= n {
        return Err(err(MPI_ERR_RANK, format!("target rank {}: the window's group has {n} ranks", c.rank)));
    }
    let target = c.rank as usize;
    match &w.epoch {
        Epoch::Lock { .. } if w.targets[target].lock == 0 => {
            return Err(err(MPI_ERR_RMA_SYNC, format!("target rank {target} is not locked by this process")));
        }
        Epoch::Access(group) if !group.contains(&target) => {
            return Err(err(MPI_ERR_RMA_SYNC, format!("target rank {target} is not in MPI_Win_start's group")));
        }
        _ => {}
    }
    let dynamic = w.regions.is_some();
    let (window, unit) = w.peers[target];
    if c.disp < 0 {
        return Err(err(MPI_ERR_DISP, format!("negative target displacement {} (rank {target})", c.disp)));
    }
    let tbuf = Buf { addr: std::ptr::null(), count: c.target_count, datatype: c.target_type };
    let (tl, tbytes) = layout_and_bytes(m, &tbuf, "target")?;
    let offset = c.disp.checked_mul(unit).ok_or_else(|| {
        err(MPI_ERR_DISP, format!("target displacement {} × displacement unit {unit} overflows", c.disp))
    })?;
    let shape = shape_of(&tl, offset, c.target_count);
    // A dynamic window's displacements are addresses: its target checks them.
    if let Some((lo, hi)) = shape.span().filter(|_| !dynamic) {
        if lo < 0 || hi > window as i64 {
            return Err(err(
                MPI_ERR_RMA_RANGE,
                format!(
                    "target rank {target}, displacement {} (× unit {unit}): bytes [{lo}, {hi}) are outside its \
                     window of {window} bytes",
                    c.disp
                ),
            ));
        }
    }
    let accumulates = matches!(c.kind, Kind::Accumulate | Kind::GetAccumulate | Kind::CompareAndSwap);
    // The target computes on the predefined type itself (a Fortran parameterized type's base).
    let elem =
        if accumulates { element(m, c.target_type)?.map(|t| crate::datatype::predefined_base(m, t)) } else { None };
    if matches!(c.kind, Kind::Accumulate | Kind::GetAccumulate) {
        check_op(m, c.kind, c.op, elem)?;
    }
    if c.kind == Kind::CompareAndSwap && builtin_datatype_size(c.target_type).is_none() {
        return Err(err(
            MPI_ERR_TYPE,
            format!("MPI_Compare_and_swap needs a predefined datatype, not {:#x}", c.target_type),
        ));
    }
    let same_element = |b: &Buf, what: &str| -> Res {
        if accumulates && element(m, b.datatype)? != elem && tbytes > 0 {
            return Err(err(
                MPI_ERR_TYPE,
                format!("the {what} datatype {:#x} is not made of the target's predefined type", b.datatype),
            ));
        }
        Ok(())
    };
    let mut data = Vec::new();
    let sends_origin = c.kind != Kind::Get && !(c.kind == Kind::GetAccumulate && c.op == MPI_NO_OP);
    for (b, what) in [(c.origin, "origin"), (c.compare, "compare")] {
        let Some(b) = b.filter(|_| sends_origin) else { continue };
        let (l, bytes) = layout_and_bytes(m, &b, what)?;
        if bytes != tbytes {
            return Err(mismatch(what, bytes, tbytes));
        }
        same_element(&b, what)?;
        // SAFETY: MPI's contract: the buffer holds `count` instances of its datatype.
        data.push(view(&l, b.addr, b.count, Dir::Read)?);
    }
    let result = match c.result {
        Some(b) => {
            let (layout, bytes) = layout_and_bytes(m, &b, "result")?;
            if bytes != tbytes {
                return Err(mismatch("result", bytes, tbytes));
            }
            same_element(&b, "result")?;
            if layout.missing(b.addr, bytes) {
                return Err(err(MPI_ERR_BUFFER, format!("NULL result buffer for {bytes} bytes")));
            }
            Some(Landing { addr: b.addr as *mut c_void, count: b.count, layout })
        }
        None => None,
    };
    if tbytes == 0 {
        // Nothing moves and the target has nothing to do (its element type may not even
        // exist): the call is checked, and done.
        return Ok(None);
    }
    let elem = elem.unwrap_or(MPI_DATATYPE_NULL);
    let access = Access { kind: c.kind, op: c.op, elem, target: shape, data: Vec::new() };
    let w = m.win_mut(win)?;
    w.issued = true;
    // A dynamic window on one host: whether the bytes lie in a region the target published.
    let reachable = match (&mut w.attached, &w.node) {
        (Some(seen), Some(seg)) => {
            let (lo, hi) = access.target.span().unwrap_or((0, 0));
            seen.covers(seg, target, lo, hi)
        }
        _ => true,
    };
    if w.node.is_some() {
        // Synchronised in the node segment: a lock_all epoch's lock of this target first.
        if let Epoch::Lock { all: true } = w.epoch {
            lock_all_lazily(w, target);
        }
        match &mut w.reach {
            // The program's memory: put and get by single copy, accumulates by the handler
            // (below; in a passive epoch withdrawable: `withdraw.rs`).
            Some(reach) if reachable => {
                // A region this process maps (`attached.rs`): as the node window below.
                let seen = w.attached.as_mut().filter(|seen| seen.may_map(target));
                if let (Some(seen), Some(seg), Some((lo, hi))) = (seen, &w.node, access.target.span()) {
                    if let Some(at) = seen.mapped(seg, target, reach.pid(target), lo as usize, hi as usize) {
                        super::attached::count_mapped();
                        let mut shifted = access;
                        shifted.target.offset -= lo;
                        super::direct::operate(seg, target, (at, (hi - lo) as usize), &shifted, &data, result)?;
                        return Ok(None);
                    }
                }
                if reach.copy(target, &access, &data, result.as_ref())? {
                    return Ok(None);
                }
                if accumulates && matches!(w.epoch, Epoch::Lock { .. }) && reach.direct(target) {
                    let seg = w.node.as_ref().expect("a node window");
                    let joined: Vec<u8> = data.iter().flat_map(|v| v.bytes()).copied().collect();
                    if let Some(done) = reach.apply_now(seg, target, &access, &joined) {
                        let reply = done?;
                        if let Some(l) = result {
                            super::withdraw::deliver(&super::withdraw::Sink::Landing(l), &reply)?;
                        }
                        return Ok(None);
                    }
                }
            }
            // Bytes of a dynamic window that the origin's copy of the target's regions does
            // not cover: the handler checks them (below).
            Some(_) => {}
            // The window is in the segment: the origin does the operation itself, now.
            None => {
                let seg = w.node.as_ref().expect("a node window");
                super::direct::operate(seg, target, seg.part(target), &access, &data, result)?;
                return Ok(None);
            }
        }
    }
    // The request: its header, the operation's, then the origin data straight from the views.
    let data_len: usize = data.iter().map(|v| v.len()).sum();
    let mut msg = Vec::with_capacity(16 + 64 + 16 * access.target.blocks.len() + data_len);
    msg.extend_from_slice(&Ask::Op.header(0));
    access.encode_header(data_len, &mut msg);
    for v in &data {
        msg.extend_from_slice(v.bytes());
    }
    let track = match (&mut w.reach, &w.epoch) {
        (Some(reach), Epoch::Lock { .. }) if accumulates && reachable => reach.track(target),
        _ => None,
    };
    operate(&w.comm, target, &mut w.targets[target], msg, result, detach, track)
}

/// Takes the shared lock of `target` in a node window's MPI_Win_lock_all epoch, before the
/// first operation on it (MPI_Win_lock_all takes none: a program holding an exclusive lock of
/// one rank while it asks another's could otherwise deadlock against it).
pub(super) fn lock_all_lazily(w: &mut super::Win, target: usize) {
    let t = &mut w.targets[target];
    if t.lock_sent || t.nocheck {
        return;
    }
    if let Some(seg) = &w.node {
        super::shm_sync::lock_shared(&w.comm, seg.lock_word(target), w.reach.is_some());
        t.lock_sent = true;
    }
}

counted! {
    [PMPI_Put; Count = c_int] [PMPI_Put_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) -> c_int {
        plain_call(FUNCTION, win, || Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            ..Call::to(Kind::Put, target_rank, target_disp, target_count.into(), target_datatype, MPI_REPLACE)
        })
    }
}

counted! {
    [PMPI_Get; Count = c_int] [PMPI_Get_c; Count = MPI_Count]
    fn(
        origin_addr: *mut c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) -> c_int {
        let result = Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype };
        plain_call(FUNCTION, win, || Call {
            result: Some(result),
            ..Call::to(Kind::Get, target_rank, target_disp, target_count.into(), target_datatype, MPI_NO_OP)
        })
    }
}

counted! {
    [PMPI_Accumulate; Count = c_int] [PMPI_Accumulate_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
    ) -> c_int {
        plain_call(FUNCTION, win, || Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            ..Call::to(Kind::Accumulate, target_rank, target_disp, target_count.into(), target_datatype, op)
        })
    }
}

counted! {
    [PMPI_Get_accumulate; Count = c_int] [PMPI_Get_accumulate_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        result_addr: *mut c_void,
        result_count: Count,
        result_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
    ) -> c_int {
        plain_call(FUNCTION, win, || Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            result: Some(Buf { addr: result_addr, count: result_count.into(), datatype: result_datatype }),
            ..Call::to(Kind::GetAccumulate, target_rank, target_disp, target_count.into(), target_datatype, op)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let (x, old) = (origin_addr as *const u8, result_addr as *mut u8);
    let (kind, cmp) = (Kind::GetAccumulate, std::ptr::null());
    let done = crate::error::guard(
        "MPI_Fetch_and_op",
        #[inline(always)]
        || super::fast_atomic::issue(win, target_rank, target_disp, datatype, kind, op, x, cmp, old),
    );
    if done.is_some() {
        return MPI_SUCCESS;
    }
    fetch_and_op_checked(origin_addr, result_addr, datatype, target_rank, target_disp, op, win)
}

/// MPI_Fetch_and_op off the prepared path (out of line: the entry stays small).
#[inline(never)]
unsafe fn fetch_and_op_checked(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    plain_call("MPI_Fetch_and_op", win, || Call {
        origin: Some(Buf { addr: origin_addr, count: 1, datatype }),
        result: Some(Buf { addr: result_addr, count: 1, datatype }),
        ..Call::to(Kind::GetAccumulate, target_rank, target_disp, 1, datatype, op)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    let (x, cmp, old) = (origin_addr as *const u8, compare_addr as *const u8, result_addr as *mut u8);
    let (kind, op) = (Kind::CompareAndSwap, MPI_REPLACE);
    let done = crate::error::guard(
        "MPI_Compare_and_swap",
        #[inline(always)]
        || super::fast_atomic::issue(win, target_rank, target_disp, datatype, kind, op, x, cmp, old),
    );
    if done.is_some() {
        return MPI_SUCCESS;
    }
    compare_and_swap_checked(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win)
}

/// MPI_Compare_and_swap off the prepared path (out of line: the entry stays small).
#[inline(never)]
unsafe fn compare_and_swap_checked(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    plain_call("MPI_Compare_and_swap", win, || Call {
        origin: Some(Buf { addr: origin_addr, count: 1, datatype }),
        compare: Some(Buf { addr: compare_addr, count: 1, datatype }),
        result: Some(Buf { addr: result_addr, count: 1, datatype }),
        ..Call::to(Kind::CompareAndSwap, target_rank, target_disp, 1, datatype, MPI_REPLACE)
    })
}

/// A request-based call: `call` is issued as its plain twin would be; the request completes
/// when the origin's buffers may be used: at once for data that was packed (put,
/// accumulate), when the answer has landed for get-type operations.
unsafe fn request_based(function: &'static str, win: MPI_Win, request: *mut MPI_Request, call: Call) -> c_int {
    if let Some(rc) = request_withdrawable(function, win, request, &call) {
        return rc;
    }
    rma_call(function, win, call.rank, |m| {
        let request = out(request, "request")?;
        let req = match issue(m, win, call, true)? {
            Some(wait) => {
                let (req, staged) = wait.into_parts();
                Req::Active { req, comm: MPI_COMM_WORLD, staged }
            }
            None => Req::Complete(crate::request::empty_status()),
        };
        *request = m.add_request(req);
        Ok(false)
    })
}

/// A request-based accumulate in a passive epoch that goes to the target's handler
/// (`fast::issue_to_handler`: a created window's private pages, a dynamic window's malloc'd
/// region): issued as its plain twin, which the origin withdraws and applies itself when the
/// target is away (`withdraw.rs`), then completed at once by the local flush of its target, so
/// a target computing outside MPI stalls no request. `None`: not such a call.
///
/// # Safety
/// As for the call's buffers.
unsafe fn request_withdrawable(
    function: &'static str,
    win: MPI_Win,
    request: *mut MPI_Request,
    c: &Call,
) -> Option<c_int> {
    if !matches!(c.kind, Kind::Accumulate | Kind::GetAccumulate | Kind::CompareAndSwap) {
        return None;
    }
    let mut handled = false;
    let rc = rma_call(function, win, c.rank, |m| {
        if !matches!(m.win(win)?.epoch, Epoch::Lock { .. }) {
            return Ok(true);
        }
        let request = out(request, "request")?;
        match super::fast::issue_to_handler(m, win, c) {
            Some(done) => done?,
            None => return Ok(true),
        }
        handled = true;
        *request = m.add_request(Req::Complete(crate::request::empty_status()));
        Ok(true)
    });
    if rc != MPI_SUCCESS {
        return Some(rc);
    }
    // SAFETY: a plain call with the program's rank and window.
    handled.then(|| unsafe { super::passive::PMPI_Win_flush_local(c.rank, win) })
}

counted! {
    [PMPI_Rput; Count = c_int] [PMPI_Rput_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) -> c_int {
        let call = Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            ..Call::to(Kind::Put, target_rank, target_disp, target_count.into(), target_datatype, MPI_REPLACE)
        };
        request_based(FUNCTION, win, request, call)
    }
}

counted! {
    [PMPI_Rget; Count = c_int] [PMPI_Rget_c; Count = MPI_Count]
    fn(
        origin_addr: *mut c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) -> c_int {
        let call = Call {
            result: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            ..Call::to(Kind::Get, target_rank, target_disp, target_count.into(), target_datatype, MPI_NO_OP)
        };
        request_based(FUNCTION, win, request, call)
    }
}

counted! {
    [PMPI_Raccumulate; Count = c_int] [PMPI_Raccumulate_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) -> c_int {
        let call = Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            ..Call::to(Kind::Accumulate, target_rank, target_disp, target_count.into(), target_datatype, op)
        };
        request_based(FUNCTION, win, request, call)
    }
}

counted! {
    [PMPI_Rget_accumulate; Count = c_int] [PMPI_Rget_accumulate_c; Count = MPI_Count]
    fn(
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: MPI_Datatype,
        result_addr: *mut c_void,
        result_count: Count,
        result_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: Count,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) -> c_int {
        let call = Call {
            origin: Some(Buf { addr: origin_addr, count: origin_count.into(), datatype: origin_datatype }),
            result: Some(Buf { addr: result_addr, count: result_count.into(), datatype: result_datatype }),
            ..Call::to(Kind::GetAccumulate, target_rank, target_disp, target_count.into(), target_datatype, op)
        };
        request_based(FUNCTION, win, request, call)
    }
}

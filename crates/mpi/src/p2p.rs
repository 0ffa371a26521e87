//! Point-to-point: the send modes, receives, probes, and their non-blocking forms.

use std::ffi::{c_int, c_void};

use billboard::{Request, SendMode, Source, TagMatch};

use crate::abi::*;
use crate::datatype::{self, Dir};
use crate::error::{bad_comm, call, call_unlocked, call_unlocked_on, err, null_arg, out, Raised, Res};
use crate::request::{end, fill_status, proc_null_status, status_arg, status_of};
use crate::state::{self, Mpi, Req};

pub(crate) fn source(src: c_int) -> Res<Source> {
    match src {
        MPI_ANY_SOURCE => Ok(Source::Any),
        s if s >= 0 => Ok(Source::Rank(s as usize)),
        s => Err(err(
            MPI_ERR_RANK,
            format!("invalid source rank {s}: a rank of the communicator, MPI_ANY_SOURCE or MPI_PROC_NULL"),
        )),
    }
}

pub(crate) fn tag_match(tag: c_int) -> Res<TagMatch> {
    match tag {
        MPI_ANY_TAG => Ok(TagMatch::Any),
        t if t >= 0 => Ok(TagMatch::Tag(t)),
        t => Err(err(
            MPI_ERR_TAG,
            format!("invalid tag {t}: valid tags are 0 to MPI_TAG_UB ({}), or MPI_ANY_TAG", billboard::TAG_UB),
        )),
    }
}

fn dest_rank(dest: c_int) -> Res<usize> {
    usize::try_from(dest).map_err(|_| err(MPI_ERR_RANK, format!("invalid destination rank {dest}")))
}

/// Starts a send and returns its request (not yet in the table). The common case
/// ([`dense_send`]) is inlined into the callers (MPI_Isend, MPI_Start) and the rest is out of
/// line.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn start_send(
    m: &mut Mpi,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Res<Req> {
    match dense_send(m, buf, count, datatype, dest, tag, comm, mode) {
        Some(started) => started.map(|req| Req::Active { req, comm, staged: None }),
        None => start_send_general(m, buf, count, datatype, dest, tag, comm, mode),
    }
}

/// The common send, a predefined type to a real rank: it needs no datatype machinery and goes
/// straight to the engine. `None` for any other.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dense_send(
    m: &mut Mpi,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Option<Res<Request<'static>>> {
    let (Some(len), Ok(to)) = (dense_bytes(count, datatype), usize::try_from(dest)) else { return None };
    let data = raw(buf, len)?;
    Some(match m.comm(comm) {
        Some(c) => c.comm.isend_raw(data, len, to, tag, mode).map_err(Into::into),
        None => Err(bad_comm(comm)),
    })
}

/// [`start_send`] for derived datatypes, `MPI_PROC_NULL` and bad arguments.
#[inline(never)]
unsafe fn start_send_general(
    m: &mut Mpi,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Res<Req> {
    let layout = datatype::layout_in(m, datatype)?;
    let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
    if dest == MPI_PROC_NULL {
        layout.bytes(count)?;
        return Ok(Req::Complete(proc_null_status()));
    }
    if let Some(blocks) = datatype::gather_blocks(&layout, buf, count)? {
        // Non-contiguous with large enough pieces: the engine sends them without packing.
        let req = c.comm.isend_blocks_raw(blocks, dest_rank(dest)?, tag, mode)?;
        return Ok(Req::Active { req, comm, staged: None });
    }
    let data = datatype::view(&layout, buf, count, Dir::Read)?;
    let req = c.comm.isend_raw(data.ptr(), data.len(), dest_rank(dest)?, tag, mode)?;
    Ok(Req::Active { req, comm, staged: data.into_staging() })
}

/// Starts a receive and returns its request (not yet in the table); like [`start_send`], the
/// common case ([`dense_recv`]) inline, the rest out of line.
#[inline(always)]
pub(crate) unsafe fn start_recv(
    m: &mut Mpi,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Res<Req> {
    match dense_recv(m, buf, count, datatype, src, tag, comm) {
        Some(started) => started.map(|req| Req::Active { req, comm, staged: None }),
        None => start_recv_general(m, buf, count, datatype, src, tag, comm),
    }
}

/// The common receive, of a predefined type from a real rank; `None` for any other.
#[inline(always)]
unsafe fn dense_recv(
    m: &mut Mpi,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<Res<Request<'static>>> {
    let (Some(len), true) = (dense_bytes(count, datatype), src != MPI_PROC_NULL) else { return None };
    let data = raw(buf as *const c_void, len)?;
    Some(match (m.comm(comm), source(src), tag_match(tag)) {
        (Some(c), Ok(src), Ok(tag)) => c.comm.irecv_raw(data, len, src, tag).map_err(Into::into),
        (None, ..) => Err(bad_comm(comm)),
        (_, Err(e), _) | (_, _, Err(e)) => Err(e),
    })
}

/// [`start_recv`] for derived datatypes, `MPI_PROC_NULL` and bad arguments.
#[inline(never)]
unsafe fn start_recv_general(
    m: &mut Mpi,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Res<Req> {
    let layout = datatype::layout_in(m, datatype)?;
    let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
    if src == MPI_PROC_NULL {
        layout.bytes(count)?;
        return Ok(Req::Complete(proc_null_status()));
    }
    layout.bytes(count)?;
    if let Some(blocks) = datatype::scatter_blocks(&layout, buf, count) {
        // Non-contiguous with large enough pieces: the engine fills them directly.
        let req = c.comm.irecv_blocks_raw(blocks, source(src)?, tag_match(tag)?)?;
        return Ok(Req::Active { req, comm, staged: None });
    }
    let data = datatype::view(&layout, buf, count, Dir::Write)?;
    let req = c.comm.irecv_raw(data.ptr(), data.len(), source(src)?, tag_match(tag)?)?;
    Ok(Req::Active { req, comm, staged: data.into_staging() })
}

/// A blocking call: start under the state, then complete it without holding the state (other
/// threads go on; the engine has its own lock), and fill `status`.
unsafe fn blocking(
    function: &'static str,
    comm: MPI_Comm,
    status: *mut MPI_Status,
    start: impl FnOnce(&mut Mpi) -> Res<Req>,
) -> c_int {
    call_unlocked_on(function, || {
        status_arg(status).map_err(|e| Raised(e, comm))?;
        let req = state::with(start).expect("MPI is running").map_err(|e| Raised(e, comm))?;
        // A receive that failed still says what it matched (a truncated one: source, tag).
        let ended = end(req);
        fill_status(status, &ended.status);
        ended.raised().map(drop)
    })
}

macro_rules! send_fn {
    ($name:ident, $cname:ident, $mode:expr) => {
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
                send_blocking(FUNCTION, $mode, buf, count.into(), datatype, dest, tag, comm)
            }
        }
    };
}

/// Bytes of `count` elements of a predefined contiguous datatype, if `t` is one: the case
/// that needs no datatype machinery at all.
#[inline]
fn dense_bytes(count: i64, t: MPI_Datatype) -> Option<usize> {
    if count < 0 || is_pair_type(t) || t == MPI_DATATYPE_NULL {
        return None;
    }
    (count as usize).checked_mul(builtin_datatype_size(t)?)
}

/// A contiguous buffer as the engine takes it (NULL is fine for zero bytes).
#[inline]
fn raw(buf: *const c_void, len: usize) -> Option<*mut u8> {
    match (buf.is_null(), len) {
        (false, _) => Some(buf as *mut u8),
        (true, 0) => Some(std::ptr::NonNull::dangling().as_ptr()),
        (true, _) => None,
    }
}

counted! {
    [PMPI_Send; Count = c_int] [PMPI_Send_c; Count = MPI_Count]
    fn(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        send(FUNCTION, buf, count.into(), datatype, dest, tag, comm)
    }
}

/// MPI_Send's common case (a predefined type to a real rank, calls from one thread at a time)
/// goes straight to the engine: no request, no datatype view. Anything else takes the general
/// path below. Out of line, one body for both twins (MPI_Send, MPI_Send_c): inlined into
/// each, the error guard's closure stopped being inlined into it (callgrind, path_cost: +35
/// instructions a call).
#[inline(never)]
unsafe fn send(
    function: &'static str,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    if let (Some(len), Ok(to), false) = (dense_bytes(count, datatype), usize::try_from(dest), state::multiple()) {
        if let Some(data) = raw(buf, len) {
            return call(function, comm, |m| {
                let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
                Ok(c.comm.send_raw(data, len, to, tag, SendMode::Standard)?)
            });
        }
    }
    send_blocking(function, SendMode::Standard, buf, count, datatype, dest, tag, comm)
}

/// A blocking send through a request: MPI_Send's general path, MPI_Ssend and MPI_Rsend. Out of
/// line, so MPI_Send's fast path carries none of its registers or stack frame.
#[inline(never)]
unsafe fn send_blocking(
    function: &'static str,
    mode: SendMode,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    blocking(function, comm, MPI_STATUS_IGNORE as *mut MPI_Status, |m| {
        start_send(m, buf, count, datatype, dest, tag, comm, mode)
    })
}

send_fn!(PMPI_Ssend, PMPI_Ssend_c, SendMode::Synchronous);
// A ready send may be sent as a standard one: the receive is already posted.
send_fn!(PMPI_Rsend, PMPI_Rsend_c, SendMode::Standard);

macro_rules! isend_fn {
    ($name:ident, $cname:ident, $mode:expr) => {
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(
                buf: *const c_void,
                count: Count,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
                request: *mut MPI_Request,
            ) -> c_int {
                let count = i64::from(count);
                if request.is_null() {
                    return null_arg(FUNCTION, comm, "request");
                }
                call(FUNCTION, comm, |m| {
                    *request = match dense_send(m, buf, count, datatype, dest, tag, comm, $mode) {
                        Some(started) => m.add_engine(started?, comm),
                        None => {
                            let req = start_send_general(m, buf, count, datatype, dest, tag, comm, $mode)?;
                            let req = req.holding(m, datatype);
                            m.add_request(req)
                        }
                    };
                    Ok(())
                })
            }
        }
    };
}

isend_fn!(PMPI_Isend, PMPI_Isend_c, SendMode::Standard);
isend_fn!(PMPI_Issend, PMPI_Issend_c, SendMode::Synchronous);
isend_fn!(PMPI_Irsend, PMPI_Irsend_c, SendMode::Standard);

counted! {
    // MPI_Recv's common case goes straight to the engine, as MPI_Send's does.
    [PMPI_Recv; Count = c_int] [PMPI_Recv_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) -> c_int {
        let count = i64::from(count);
        if let (Some(len), true, false) = (dense_bytes(count, datatype), source != MPI_PROC_NULL, state::multiple()) {
            if let Some(data) = raw(buf, len) {
                if status.is_null() {
                    return null_arg(FUNCTION, comm, "status");
                }
                return call(FUNCTION, comm, |m| {
                    let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
                    let st = c.comm.recv_raw(data, len, self::source(source)?, tag_match(tag)?)?;
                    fill_status(status, &status_of(&st));
                    Ok(())
                });
            }
        }
        recv_general(FUNCTION, buf, count, datatype, source, tag, comm, status)
    }
}

/// MPI_Recv's general path, out of line as MPI_Send's is.
#[cold]
#[inline(never)]
unsafe fn recv_general(
    function: &'static str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    blocking(function, comm, status, |m| start_recv(m, buf, count, datatype, source, tag, comm))
}

counted! {
    [PMPI_Irecv; Count = c_int] [PMPI_Irecv_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        irecv(FUNCTION, buf, count.into(), datatype, source, tag, comm, request)
    }
}

/// Out of line for the reason [`send`] is.
#[inline(never)]
unsafe fn irecv(
    function: &'static str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return null_arg(function, comm, "request");
    }
    call(function, comm, |m| {
        *request = match dense_recv(m, buf, count, datatype, source, tag, comm) {
            Some(started) => m.add_engine(started?, comm),
            None => {
                let req = start_recv_general(m, buf, count, datatype, source, tag, comm)?;
                let req = req.holding(m, datatype);
                m.add_request(req)
            }
        };
        Ok(())
    })
}

counted! {
    [PMPI_Sendrecv; Count = c_int] [PMPI_Sendrecv_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) -> c_int {
        let send = (sendbuf, sendcount.into(), sendtype, dest, sendtag);
        sendrecv(FUNCTION, send, (recvbuf, recvcount.into(), recvtype, source, recvtag), comm, status)
    }
}

/// MPI_Sendrecv: the receive posted, the send done, the receive waited for.
unsafe fn sendrecv(
    function: &'static str,
    (sendbuf, sendcount, sendtype, dest, sendtag): (*const c_void, i64, MPI_Datatype, c_int, c_int),
    (recvbuf, recvcount, recvtype, source, recvtag): (*mut c_void, i64, MPI_Datatype, c_int, c_int),
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if status.is_null() {
        return call(function, comm, |_| status_arg(status));
    }
    let mut recv = MPI_REQUEST_NULL;
    let rc = irecv(function, recvbuf, recvcount, recvtype, source, recvtag, comm, &mut recv);
    if rc != MPI_SUCCESS {
        return rc;
    }
    let rc = send(function, sendbuf, sendcount, sendtype, dest, sendtag, comm);
    let rc2 = crate::request::PMPI_Wait(&mut recv, status);
    if rc != MPI_SUCCESS {
        rc
    } else {
        rc2
    }
}

counted! {
    [PMPI_Sendrecv_replace; Count = c_int] [PMPI_Sendrecv_replace_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) -> c_int {
        let count = i64::from(count);
        // The outgoing data is packed first, then sent as bytes while the receive uses the
        // datatype.
        let mut packed = Vec::new();
        let rc = call_unlocked(FUNCTION, comm, || {
            packed = state::with(|m| packed_copy(m, buf, count, datatype, dest)).expect("MPI is running")?;
            Ok(())
        });
        if rc != MPI_SUCCESS {
            return rc;
        }
        let send = (packed.as_ptr().cast(), packed.len() as i64, MPI_BYTE, dest, sendtag);
        sendrecv(FUNCTION, send, (buf, count, datatype, source, recvtag), comm, status)
    }
}

/// The data a send-receive in place sends, packed (a copy even when contiguous: the receive
/// overwrites the buffer); nothing for `MPI_PROC_NULL`.
pub(crate) unsafe fn packed_copy(
    m: &mut Mpi,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
) -> Res<Vec<u8>> {
    let layout = datatype::layout_in(m, datatype)?;
    if dest == MPI_PROC_NULL {
        layout.bytes(count)?;
        return Ok(Vec::new());
    }
    Ok(datatype::view(&layout, buf, count, Dir::Read)?.bytes().to_vec())
}

unsafe fn probe_status(st: billboard::Status, status: *mut MPI_Status) {
    fill_status(status, &status_of(&st));
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Iprobe", comm, |m| {
        let flag = out(flag, "flag")?;
        status_arg(status)?;
        let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
        if source == MPI_PROC_NULL {
            *flag = 1;
            fill_status(status, &proc_null_status());
            return Ok(());
        }
        match c.comm.iprobe(self::source(source)?, tag_match(tag)?)? {
            Some(st) => {
                *flag = 1;
                probe_status(st, status);
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    call_unlocked("MPI_Probe", comm, || {
        status_arg(status)?;
        let c = state::with(|m| m.comm(comm).map(|c| c.comm.clone())).flatten().ok_or_else(|| bad_comm(comm))?;
        if source == MPI_PROC_NULL {
            fill_status(status, &proc_null_status());
            return Ok(());
        }
        probe_status(c.probe(self::source(source)?, tag_match(tag)?)?, status);
        Ok(())
    })
}

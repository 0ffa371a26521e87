//! Completion of one request: how a request ends (its status, and its error if it failed),
//! MPI_Wait, MPI_Test, MPI_Request_get_status, cancel, free, and the statuses they fill. The
//! calls on lists of requests are in `request_list.rs`.
//!
//! What a completion leaves (MPI 4.0 section 3.7.3, as MPICH 4.0.2 does): a request that
//! completed, in error or not, is freed and its handle becomes `MPI_REQUEST_NULL`; a persistent
//! one turns inactive and keeps its handle. A null or inactive request completes at once with
//! an empty status. A failed request's status says what is known (a truncated receive's
//! source, tag and count) and the call returns its error; single completions leave the
//! status's `MPI_ERROR` alone.

use std::ffi::c_int;

use crate::abi::*;
use crate::datatype::Staging;
use crate::error::{call, call_on, err, guard, handle, handle_name, not_running, out, MpiError, Raised, Res};
use crate::state::{self, Mpi, Req};

/// The status of an operation with `MPI_PROC_NULL`.
pub(crate) fn proc_null_status() -> MPI_Status {
    let mut st = MPI_Status { MPI_SOURCE: MPI_PROC_NULL, MPI_TAG: MPI_ANY_TAG, ..Default::default() };
    st.set_byte_count(0);
    st
}

/// The status of a null or inactive request: source ANY_SOURCE, tag ANY_TAG, count 0.
pub(crate) fn empty_status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: MPI_ANY_SOURCE, MPI_TAG: MPI_ANY_TAG, ..Default::default() }
}

pub(crate) fn status_of(s: &billboard::Status) -> MPI_Status {
    let mut st = MPI_Status { MPI_SOURCE: s.source() as c_int, MPI_TAG: s.tag(), ..Default::default() };
    st.set_byte_count(s.bytes() as i64);
    st.set_cancelled(s.cancelled());
    st
}

/// The status of an operation that failed, as far as the error tells: a truncated receive
/// matched a message from `source` with `tag` and filled its buffer.
fn failed_status(e: &billboard::Error) -> MPI_Status {
    match *e {
        billboard::Error::Truncated { source, tag, buffer_bytes, .. } => {
            let mut st = MPI_Status { MPI_SOURCE: source as c_int, MPI_TAG: tag, ..Default::default() };
            st.set_byte_count(buffer_bytes as i64);
            st
        }
        _ => empty_status(),
    }
}

/// A status argument: `MPI_STATUS_IGNORE` or a pointer; null is an error (MPI_ERR_ARG).
pub(crate) fn status_arg(status: *const MPI_Status) -> Res {
    if status.is_null() {
        return Err(err(MPI_ERR_ARG, "null status pointer (MPI_STATUS_IGNORE ignores the status)"));
    }
    Ok(())
}

/// Copies `st` out unless the program passed `MPI_STATUS_IGNORE`. `MPI_ERROR` is left alone,
/// as the standard asks of single completions. `status` is not null: every call checks its
/// status argument ([`status_arg`]) before it starts.
pub(crate) unsafe fn fill_status(status: *mut MPI_Status, st: &MPI_Status) {
    debug_assert!(!status.is_null(), "a status argument was not checked");
    if status as isize == MPI_STATUS_IGNORE {
        return;
    }
    let error = (*status).MPI_ERROR;
    *status = MPI_Status { MPI_ERROR: error, ..*st };
}

/// How a request ended: its status and, if it failed, its error and the communicator whose
/// error handler applies.
#[derive(Clone, Debug)]
pub(crate) struct Ended {
    pub status: MPI_Status,
    pub error: Option<MpiError>,
    pub comm: MPI_Comm,
}

impl Ended {
    #[inline]
    pub fn ok(status: MPI_Status, comm: MPI_Comm) -> Ended {
        Ended { status, error: None, comm }
    }

    fn from_result(r: Res<MPI_Status>, comm: MPI_Comm) -> Ended {
        match r {
            Ok(status) => Ended::ok(status, comm),
            Err(e) => Ended { status: empty_status(), error: Some(e), comm },
        }
    }

    /// The value of a status's `MPI_ERROR` field for this request in a multiple completion.
    pub fn code(&self) -> c_int {
        self.error.as_ref().map_or(MPI_SUCCESS, |e| e.class)
    }

    /// The call's outcome: the error raised on the request's communicator.
    pub fn raised(self) -> Result<MPI_Status, Raised> {
        match self.error {
            None => Ok(self.status),
            Some(e) => Err(Raised(e, self.comm)),
        }
    }
}

/// The end of an operation in the engine; a staged receive is unpacked (as much as arrived).
#[inline]
fn engine_ended(outcome: billboard::Result<billboard::Status>, staged: Option<Box<Staging>>, comm: MPI_Comm) -> Ended {
    match outcome {
        Ok(s) => {
            complete_staged(staged, s.bytes());
            Ended::ok(status_of(&s), comm)
        }
        Err(e) => engine_failed(e, staged, comm),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn engine_failed(e: billboard::Error, staged: Option<Box<Staging>>, comm: MPI_Comm) -> Ended {
    let status = failed_status(&e);
    complete_staged(staged, status.byte_count() as usize);
    Ended { status, error: Some(e.into()), comm }
}

/// Completes a staged operation: a non-contiguous receive is unpacked into the user's buffer,
/// a non-contiguous send's packed copy is released.
#[inline]
pub(crate) fn complete_staged(staged: Option<Box<Staging>>, bytes: usize) {
    if let Some(staged) = staged {
        // SAFETY: MPI requires the user buffer to stay valid until the request completes.
        unsafe { staged.complete(bytes) };
    }
}

/// Waits for a request taken out of the table.
pub(crate) fn end(req: Req) -> Ended {
    match req {
        Req::Complete(st) => Ended::ok(st, MPI_COMM_WORLD),
        Req::Failed(ended) => *ended,
        Req::Active { req, staged, comm } => engine_ended(req.wait(), staged, comm),
        Req::Persistent { active: Some(a), .. } => end(*a),
        Req::Persistent { op, .. } => Ended::ok(empty_status(), op.comm),
        Req::Idup(idup) => {
            let comm = idup.parent;
            Ended::from_result(idup.complete(None), comm)
        }
        Req::Background { op, comm } => Ended::from_result(op.wait().map(|()| empty_status()), comm),
        Req::Partitioned(p) => {
            let comm = p.comm();
            // SAFETY: the program keeps the buffer until the request completes.
            Ended::from_result(unsafe { p.wait() }, comm)
        }
        Req::Pair(pair) => {
            let crate::isendrecv::Pair { recv, send, packed } = *pair;
            let (recv, send) = (end(recv), end(send));
            drop(packed);
            crate::isendrecv::Pair::ended(recv, send)
        }
        Req::Generalized(g) => {
            let ended = g.wait();
            crate::grequest::retired(g);
            ended
        }
        Req::Hooked(h) => (*h).finish(end),
        Req::File(p) => Ended::from_result(p.wait(), MPI_COMM_WORLD),
    }
}

/// Waits for a request taken out of the table; its error, if it failed.
pub(crate) fn finish(req: Req) -> Res<MPI_Status> {
    end(req).raised().map_err(|Raised(e, _)| e)
}

/// Records `ended` as the request's state in place, for the call that will free it.
fn settle(req: &mut Req, ended: Ended) {
    *req = match ended.error {
        None => Req::Complete(ended.status),
        Some(_) => Req::Failed(Box::new(ended)),
    };
}

/// Tests a request in place: once complete it becomes `Req::Complete` or `Req::Failed`, so its
/// outcome survives until the request is freed. True when it is complete (or inactive).
fn poll_in_place(req: &mut Req) -> bool {
    match req {
        Req::Complete(_) | Req::Failed(_) | Req::Persistent { active: None, .. } => true,
        Req::Persistent { active: Some(a), .. } => poll_in_place(a),
        // Needs the tables: see `poll`.
        Req::Idup(_) => false,
        // Complete once resolved (`grequest::resolve_list`, before the call took the state).
        Req::Generalized(g) => g.resolved().is_some(),
        Req::Partitioned(p) => {
            // SAFETY: the program keeps the buffer until the request completes.
            if !unsafe { p.test() } {
                return false;
            }
            let ended = Ended::from_result(p.outcome(), p.comm());
            settle(req, ended);
            true
        }
        Req::Pair(pair) => {
            if !(poll_in_place(&mut pair.recv) && poll_in_place(&mut pair.send)) {
                return false;
            }
            let ended = crate::isendrecv::Pair::ended(peek(&pair.recv), peek(&pair.send));
            settle(req, ended);
            true
        }
        Req::Background { op, comm } => {
            if !op.is_done() {
                return false;
            }
            let comm = *comm;
            let Req::Background { op, .. } = std::mem::replace(req, Req::Complete(empty_status())) else {
                unreachable!()
            };
            settle(req, Ended::from_result(op.wait().map(|()| empty_status()), comm));
            true
        }
        Req::File(p) => {
            if !p.is_done() {
                return false;
            }
            let ended = Ended::from_result(p.wait(), MPI_COMM_WORLD);
            settle(req, ended);
            true
        }
        Req::Hooked(h) => {
            if !poll_in_place(&mut h.inner) {
                return false;
            }
            let ended = peek(&h.inner);
            h.ended();
            settle(req, ended);
            true
        }
        Req::Active { req: r, staged, comm } => {
            let outcome = match r.test() {
                Ok(None) => return false,
                Ok(Some(s)) => Ok(s),
                Err(e) => Err(e),
            };
            let ended = engine_ended(outcome, staged.take(), *comm);
            settle(req, ended);
            true
        }
    }
}

/// Tests request `h` in place (see [`poll_in_place`]); an idup found done fills its
/// communicator's handle here, which needs the tables.
pub(crate) fn poll(m: &mut Mpi, h: MPI_Request) -> Res<bool> {
    let req = m.request_mut(h).ok_or_else(|| invalid_request(h))?;
    if let Req::Idup(idup) = req {
        if !idup.is_done() {
            return Ok(false);
        }
        let Req::Idup(idup) = std::mem::replace(req, Req::Complete(empty_status())) else { unreachable!() };
        let comm = idup.parent;
        let ended = Ended::from_result(idup.complete(Some(m)), comm);
        if let Some(req) = m.request_mut(h) {
            settle(req, ended);
        }
        return Ok(true);
    }
    Ok(poll_in_place(req))
}

/// The outcome of a request that [`poll`] found complete, which stays in place.
fn peek(req: &Req) -> Ended {
    match req {
        Req::Complete(st) => Ended::ok(*st, MPI_COMM_WORLD),
        Req::Failed(ended) => (**ended).clone(),
        Req::Persistent { active: Some(a), .. } => peek(a),
        Req::Generalized(g) => g.resolved().unwrap_or_else(|| Ended::ok(empty_status(), MPI_COMM_WORLD)),
        // Inactive (and, never reached, a request still in flight): the empty status.
        other => Ended::ok(empty_status(), other.comm()),
    }
}

/// Frees a request that [`poll`] found complete and returns its outcome: a persistent one
/// turns inactive and keeps its handle, any other leaves the table and `*h` becomes null.
pub(crate) fn retire(m: &mut Mpi, h: &mut MPI_Request) -> Ended {
    if let Some(Req::Persistent { active, op }) = m.table_request(*h) {
        let comm = op.comm;
        return active.take().map_or_else(|| Ended::ok(empty_status(), comm), |a| end(*a));
    }
    let req = m.take_request(*h);
    *h = MPI_REQUEST_NULL;
    // Complete in place, so `end` does not wait.
    req.map_or_else(|| Ended::ok(empty_status(), MPI_COMM_WORLD), end)
}

/// Tests request `*h` once; if it completed (or is inactive), frees it as [`retire`] does and
/// returns its outcome.
pub(crate) fn test_take(m: &mut Mpi, h: &mut MPI_Request) -> Res<Option<Ended>> {
    if let Some(req) = m.engine_request(*h) {
        // An engine handle: tested without a table entry; handed back if still in flight.
        let mut req = req.ok_or_else(|| invalid_request(*h))?;
        let outcome = match req.test() {
            Ok(None) => {
                let _ = req.into_raw();
                return Ok(None);
            }
            Ok(Some(s)) => Ok(s),
            Err(e) => Err(e),
        };
        let comm = state::engine_parts(*h).map_or(MPI_COMM_WORLD, |(_, c)| c);
        *h = MPI_REQUEST_NULL;
        return Ok(Some(engine_ended(outcome, None, comm)));
    }
    if !poll(m, *h)? {
        return Ok(None);
    }
    Ok(Some(retire(m, h)))
}

/// Waits for request `*h`: taken out of the table (a persistent one's active operation only,
/// so it turns inactive; any other's handle becomes null), then completed without holding the
/// state.
pub(crate) fn wait_take(h: &mut MPI_Request) -> Res<Ended> {
    if let Some(g) = crate::grequest::lookup(*h) {
        // It stays in the table until the program completes it (MPI_Grequest_complete finds
        // it by its handle), waited for outside the state.
        g.wait();
    }
    let taken = state::with(|m| {
        if let Some(Req::Persistent { active, .. }) = m.table_request(*h) {
            return Some(active.take().map_or(Req::Complete(empty_status()), |a| *a));
        }
        let req = m.take_request(*h)?;
        *h = MPI_REQUEST_NULL;
        Some(req)
    })
    .flatten();
    taken.map(end).ok_or_else(|| invalid_request(*h))
}

/// Whether `h` names a request (null and inactive ones included): the list calls check every
/// handle before they complete any.
pub(crate) fn check_handle(m: &mut Mpi, h: MPI_Request) -> Res {
    let known = match h {
        MPI_REQUEST_NULL | state::SENT => true,
        _ => match m.engine_op(h) {
            Some((_, _, in_flight)) => in_flight,
            None => m.promoted.contains_key(&h) || m.table_request(h).is_some(),
        },
    };
    if known {
        Ok(())
    } else {
        Err(invalid_request(h))
    }
}

/// Whether a request [`poll`] looked at is complete (or inactive), in error or not.
pub(crate) fn settled(req: &Req) -> bool {
    match req {
        Req::Complete(_) | Req::Failed(_) | Req::Persistent { active: None, .. } => true,
        Req::Persistent { active: Some(a), .. } => settled(a),
        Req::Generalized(g) => g.resolved().is_some(),
        _ => false,
    }
}

/// Whether a request [`poll`] found complete ended in error.
pub(crate) fn failed(req: &Req) -> bool {
    match req {
        Req::Failed(_) => true,
        Req::Persistent { active: Some(a), .. } => failed(a),
        Req::Generalized(g) => g.resolved().is_some_and(|e| e.error.is_some()),
        _ => false,
    }
}

/// Ends a single completion: the status filled, and the request's error raised.
pub(crate) unsafe fn report_one(status: *mut MPI_Status, ended: Ended) -> Result<(), Raised> {
    fill_status(status, &ended.status);
    ended.raised().map(drop)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    let rc = guard("MPI_Wait", || {
        if state::phase() != state::RUNNING {
            return not_running("MPI_Wait");
        }
        let h = match out(request, "request").and_then(|h| status_arg(status).map(|()| h)) {
            Ok(h) => h,
            Err(e) => return handle("MPI_Wait", MPI_COMM_WORLD, e),
        };
        if *h == MPI_REQUEST_NULL {
            fill_status(status, &empty_status());
            return MPI_SUCCESS;
        }
        if *h == state::SENT {
            // A send that completed as it started (the common eager send): nothing to look up.
            *h = MPI_REQUEST_NULL;
            fill_status(status, &MPI_Status::default());
            return MPI_SUCCESS;
        }
        match wait_take(h).map_err(Raised::from).and_then(|ended| report_one(status, ended)) {
            Ok(()) => MPI_SUCCESS,
            Err(Raised(e, comm)) => handle("MPI_Wait", comm, e),
        }
    });
    crate::attr::reap("MPI_Wait");
    crate::grequest::after("MPI_Wait", rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    crate::grequest::resolve_list(1, request);
    let rc = call_on("MPI_Test", |m| {
        let h = out(request, "request")?;
        let flag = out(flag, "flag")?;
        status_arg(status)?;
        if *h == MPI_REQUEST_NULL {
            *flag = 1;
            fill_status(status, &empty_status());
            return Ok(());
        }
        match test_take(m, h)? {
            Some(ended) => {
                *flag = 1;
                report_one(status, ended)
            }
            None => {
                *flag = 0;
                Ok(())
            }
        }
    });
    crate::attr::reap("MPI_Test");
    crate::grequest::after("MPI_Test", rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    crate::grequest::resolve_list(1, &request);
    call_on("MPI_Request_get_status", |m| {
        let flag = out(flag, "flag")?;
        status_arg(status)?;
        if request == MPI_REQUEST_NULL {
            *flag = 1;
            fill_status(status, &empty_status());
            return Ok(());
        }
        // Like MPI_Test, but the request stays: a completed one keeps its outcome for the
        // wait or test that will free it.
        if !poll(m, request)? {
            *flag = 0;
            return Ok(());
        }
        *flag = 1;
        let req = m.request_mut(request).ok_or_else(|| invalid_request(request))?;
        report_one(status, peek(req))
    })
}

pub(crate) fn invalid_request(h: MPI_Request) -> MpiError {
    err(
        MPI_ERR_REQUEST,
        format!("invalid request {} (not an active request: already completed or freed?)", handle_name(h)),
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut MPI_Request) -> c_int {
    if let Some(g) = request.as_ref().and_then(|&h| crate::grequest::lookup(h)) {
        return crate::grequest::cancel(&g);
    }
    call("MPI_Cancel", MPI_COMM_WORLD, |m| {
        let h = *out(request, "request")?;
        let mut req = m.request_mut(h).ok_or_else(|| invalid_request(h))?;
        match req {
            Req::Persistent { active: Some(a), .. } => req = a,
            Req::Persistent { active: None, .. } => {
                return Err(err(
                    MPI_ERR_REQUEST,
                    format!("MPI_Cancel: persistent request {h:#x} is inactive (not started)"),
                ))
            }
            _ => {}
        }
        if let Req::Hooked(h) = req {
            req = &mut h.inner;
        }
        match req {
            Req::Active { req, .. } => {
                req.cancel();
            }
            Req::Pair(pair) => {
                // As MPICH: the receive may be cancelled; the send goes on.
                if let Req::Active { req, .. } = &mut pair.recv {
                    req.cancel();
                }
            }
            Req::Idup(_) | Req::Background { .. } => return Err(collective_request("MPI_Cancel")),
            _ => {}
        }
        Ok(())
    })
}

/// MPI 3.1 section 5.12: a nonblocking collective's request may not be cancelled or freed.
fn collective_request(function: &str) -> MpiError {
    err(
        MPI_ERR_REQUEST,
        format!(
            "{function}: the request belongs to a nonblocking collective (MPI_Comm_idup, MPI_Ibarrier, MPI_Ibcast...), which cannot \
             be cancelled or freed; complete it with a wait or test"
        ),
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", MPI_COMM_WORLD, |_| {
        let status = status.as_ref().ok_or_else(|| err(MPI_ERR_ARG, "null status pointer"))?;
        *out(flag, "flag")? = status.cancelled() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut MPI_Request) -> c_int {
    let rc = call("MPI_Request_free", MPI_COMM_WORLD, |m| {
        let h = out(request, "request")?;
        let mut req = m.request_mut(*h);
        if let Some(Req::Hooked(hooked)) = req {
            req = Some(&mut hooked.inner);
        }
        if let Some(Req::Idup(_) | Req::Background { .. }) = req {
            return Err(collective_request("MPI_Request_free"));
        }
        let req = m.take_request(*h).ok_or_else(|| invalid_request(*h))?;
        let req = match req {
            Req::Persistent { op, active } => {
                op.release(m);
                if active.is_none() {
                    // An active one's operation may still use the copies: they stay.
                    op.hook_run(crate::request_hook::FREE);
                }
                active.map_or(Req::Complete(empty_status()), |a| *a)
            }
            // The operation completes on its own, nobody unpacking its copy, which stays
            // allocated for good (the operation may still read or write it).
            Req::Hooked(hooked) => hooked.inner,
            Req::Generalized(g) => {
                // As MPICH does: free_fn runs now, whether or not the program completed it.
                crate::grequest::retired(g);
                Req::Complete(empty_status())
            }
            Req::Pair(pair) => {
                // Both operations complete on their own; the packed copy they may still read is
                // left allocated for good (a freed send-receive in place is rare).
                let crate::isendrecv::Pair { recv, send, packed } = *pair;
                for part in [recv, send] {
                    if let Req::Active { req, staged, .. } = part {
                        m.detached.push(req);
                        if let Some(s) = staged {
                            m.types.keep_orphan(*s);
                        }
                    }
                }
                std::mem::forget(packed);
                Req::Complete(empty_status())
            }
            other => other,
        };
        if let Req::Active { req, staged, .. } = req {
            // The operation still completes; only the handle goes. Dropping a billboard request
            // would wait, so it is kept until finalize, and so is its staging buffer, which the
            // engine may still use (a freed receive of non-contiguous data is never unpacked).
            m.detached.push(req);
            if let Some(s) = staged {
                // Moving it moves no byte the engine uses: those are in its Vec's heap block.
                m.types.keep_orphan(*s);
            }
        }
        *h = MPI_REQUEST_NULL;
        Ok(())
    });
    crate::attr::reap("MPI_Request_free");
    crate::grequest::after("MPI_Request_free", rc)
}

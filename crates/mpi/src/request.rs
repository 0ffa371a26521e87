//! Completion: wait and test in all their forms, cancel, free, statuses.

use std::ffi::c_int;

use crate::abi::*;
use crate::datatype::Staging;
use crate::error::{call, err, MpiError, Res};
use crate::state::{self, Req};

/// The status of an operation with `MPI_PROC_NULL`.
pub(crate) fn proc_null_status() -> MPI_Status {
    let mut st = MPI_Status { MPI_SOURCE: MPI_PROC_NULL, MPI_TAG: MPI_ANY_TAG, ..Default::default() };
    st.set_byte_count(0);
    st
}

pub(crate) fn status_of(s: &billboard::Status) -> MPI_Status {
    let mut st = MPI_Status { MPI_SOURCE: s.source() as c_int, MPI_TAG: s.tag(), ..Default::default() };
    st.set_byte_count(s.bytes() as i64);
    st.set_cancelled(s.cancelled());
    st
}

/// Copies `st` out unless the program passed `MPI_STATUS_IGNORE`. `MPI_ERROR` is left alone,
/// as the standard asks of single completions.
pub(crate) unsafe fn fill_status(status: *mut MPI_Status, st: &MPI_Status) {
    if status as isize == MPI_STATUS_IGNORE || status.is_null() {
        return;
    }
    let error = (*status).MPI_ERROR;
    *status = MPI_Status { MPI_ERROR: error, ..*st };
}

/// Completes a staged operation: a non-contiguous receive is unpacked into the user's buffer,
/// a non-contiguous send's packed copy is released.
#[inline]
fn complete_staged(staged: Option<Box<Staging>>, s: &billboard::Status) {
    if let Some(staged) = staged {
        // SAFETY: MPI requires the user buffer to stay valid until the request completes.
        unsafe { staged.complete(s.bytes()) };
    }
}

/// Waits for a request taken out of the table.
pub(crate) fn finish(req: Req) -> Res<MPI_Status> {
    match req {
        Req::Complete(st) => Ok(st),
        Req::Active { req, staged, .. } => {
            let s = req.wait()?;
            complete_staged(staged, &s);
            Ok(status_of(&s))
        }
        Req::Persistent { active, .. } => active.map_or(Ok(empty_status()), |a| finish(*a)),
        Req::Idup(idup) => idup.complete(None),
        Req::Background { op, .. } => op.wait().map(|()| empty_status()),
    }
}

/// Tests request `h` in place (see [`poll_in_place`]); an idup found done fills its
/// communicator's handle here, which needs the tables.
fn poll_handle(m: &mut state::Mpi, h: MPI_Request) -> Res<Option<MPI_Status>> {
    let req = m.request_mut(h).ok_or_else(|| invalid_request(h))?;
    match req {
        Req::Idup(idup) if idup.is_done() => {
            let Req::Idup(idup) = std::mem::replace(req, Req::Complete(empty_status())) else { unreachable!() };
            idup.complete(Some(m)).map(Some)
        }
        _ => poll_in_place(req),
    }
}

/// Tests a request in place: once complete it becomes `Req::Complete` with its status (a
/// staged receive unpacked), so the status survives until the request is freed.
fn poll_in_place(req: &mut Req) -> Res<Option<MPI_Status>> {
    match req {
        Req::Idup(_) => Ok(None),
        Req::Background { op, .. } => {
            if !op.is_done() {
                return Ok(None);
            }
            let Req::Background { op, .. } = std::mem::replace(req, Req::Complete(empty_status())) else {
                unreachable!()
            };
            op.wait()?;
            Ok(Some(empty_status()))
        }
        Req::Complete(st) => Ok(Some(*st)),
        Req::Active { req: r, staged, .. } => match r.test()? {
            Some(s) => {
                complete_staged(staged.take(), &s);
                let st = status_of(&s);
                *req = Req::Complete(st);
                Ok(Some(st))
            }
            None => Ok(None),
        },
        Req::Persistent { active: None, .. } => Ok(Some(empty_status())),
        Req::Persistent { active: Some(a), .. } => poll_in_place(a),
    }
}

/// Ends a completed request: a persistent one turns inactive and keeps its handle (true);
/// any other leaves the table (false).
fn retire(m: &mut state::Mpi, h: MPI_Request) -> bool {
    if let Some(Req::Persistent { active, .. }) = m.request_mut(h) {
        *active = None;
        return true;
    }
    m.take_request(h);
    false
}

/// Tests a request in the table once. On completion it is retired (see [`retire`]); the
/// flag says whether its handle stays (persistent).
fn test_handle(m: &mut state::Mpi, h: MPI_Request) -> Res<Option<(MPI_Status, bool)>> {
    if let Some(req) = m.engine_request(h) {
        // An engine handle: tested without a table entry; handed back if still in flight.
        let mut req = req.ok_or_else(|| invalid_request(h))?;
        return match req.test()? {
            Some(s) => Ok(Some((status_of(&s), false))),
            None => {
                let _ = req.into_raw();
                Ok(None)
            }
        };
    }
    match poll_handle(m, h) {
        Ok(Some(st)) => Ok(Some((st, retire(m, h)))),
        Ok(None) => Ok(None),
        Err(e) => {
            retire(m, h);
            Err(e)
        }
    }
}

/// Waits for one request: taken out of the table (a persistent one's active operation only),
/// then completed without holding the state. Returns the status and whether the handle
/// stays; on failure, the error with the communicator whose handler applies.
fn wait_one(h: MPI_Request) -> Result<(MPI_Status, bool), (MpiError, MPI_Comm)> {
    if state::phase() != state::RUNNING {
        return Err((err(MPI_ERR_OTHER, "MPI_Wait called outside MPI_Init..MPI_Finalize"), MPI_COMM_WORLD));
    }
    let taken = state::with(|m| {
        // An engine handle is never persistent: no need to look at it in place.
        if state::engine_parts(h).is_none() {
            if let Some(Req::Persistent { active, op }) = m.request_mut(h) {
                let comm = op.comm;
                return Some((active.take().map_or(Req::Complete(empty_status()), |a| *a), true, comm));
            }
        }
        m.take_request(h).map(|r| {
            let comm = r.comm();
            (r, false, comm)
        })
    })
    .flatten();
    let (req, keep, comm) = taken.ok_or_else(|| (invalid_request(h), MPI_COMM_WORLD))?;
    finish(req).map(|st| (st, keep)).map_err(|e| (e, comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if request.is_null() {
        return crate::error::handle("MPI_Wait", MPI_COMM_WORLD, err(MPI_ERR_ARG, "MPI_Wait: NULL request pointer"));
    }
    if *request == MPI_REQUEST_NULL {
        fill_status(status, &empty_status());
        return MPI_SUCCESS;
    }
    if *request == state::SENT && state::phase() == state::RUNNING {
        // A send that completed as it started (the common eager send): nothing to look up.
        *request = MPI_REQUEST_NULL;
        fill_status(status, &MPI_Status::default());
        return MPI_SUCCESS;
    }
    // One table lookup: the request comes out, and with it the communicator whose error
    // handler applies if it failed.
    match wait_one(*request) {
        Ok((st, keep)) => {
            if !keep {
                *request = MPI_REQUEST_NULL;
            }
            fill_status(status, &st);
            MPI_SUCCESS
        }
        Err((e, comm)) => crate::error::handle("MPI_Wait", comm, e),
    }
}

/// The status of a null or inactive request: source ANY_SOURCE, tag ANY_TAG, count 0.
pub(crate) fn empty_status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: MPI_ANY_SOURCE, MPI_TAG: MPI_ANY_TAG, ..Default::default() }
}

fn invalid_request(h: MPI_Request) -> MpiError {
    err(MPI_ERR_REQUEST, format!("invalid request {h:#x} (not an active request: already completed or freed?)"))
}

/// The communicator a request belongs to, for its error handler.
fn request_comm(h: MPI_Request) -> MPI_Comm {
    if let Some((_, comm)) = state::engine_parts(h) {
        return comm;
    }
    state::with(|m| m.request_mut(h).map_or(MPI_COMM_WORLD, |r| r.comm())).unwrap_or(MPI_COMM_WORLD)
}

unsafe fn status_at(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if statuses as isize == MPI_STATUSES_IGNORE || statuses.is_null() {
        MPI_STATUS_IGNORE as *mut MPI_Status
    } else {
        statuses.add(i)
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) -> c_int {
    let n = count.max(0) as usize;
    if n > 0 && requests.is_null() {
        return crate::error::handle("MPI_Waitall", MPI_COMM_WORLD, err(MPI_ERR_ARG, "MPI_Waitall: NULL requests"));
    }
    // Every request completes; if any failed, each status says how it ended and the call
    // returns MPI_ERR_IN_STATUS, as the standard asks of multiple completions.
    let mut failed = false;
    let mut report = |i: usize, rc: c_int| {
        failed |= rc != MPI_SUCCESS;
        let status = status_at(statuses, i);
        if status as isize != MPI_STATUSES_IGNORE && !status.is_null() && status as isize != MPI_STATUS_IGNORE {
            (*status).MPI_ERROR = rc;
        }
    };
    // One pass under the state settles null and sent handles, and takes the operations in the
    // engine out of the table to be waited for together; the others (persistent, collectives,
    // idup) go through MPI_Wait one at a time afterwards.
    let (mut ids, mut taken, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    let mut engine: *const billboard::Communicator = std::ptr::null();
    let passed = state::phase() == state::RUNNING
        && state::with(|m| {
            engine = &m.engine;
            for i in 0..n {
                let h = *requests.add(i);
                let st = match h {
                    MPI_REQUEST_NULL => empty_status(),
                    state::SENT => MPI_Status::default(),
                    _ => {
                        let op = match m.engine_op(h) {
                            Some((id, comm, true)) => Some((Some(id), comm, None)),
                            Some((_, _, false)) => None, // stale: MPI_Wait reports it
                            None => m.take_active(h).map(|(req, comm, staged)| (req.into_raw(), comm, staged)),
                        };
                        match op {
                            Some((id, comm, staged)) => {
                                if ids.is_empty() {
                                    // Allocated only when something waits.
                                    ids.reserve(n - i);
                                    taken.reserve(n - i);
                                }
                                *requests.add(i) = MPI_REQUEST_NULL;
                                ids.push(id);
                                taken.push((i, comm, staged));
                            }
                            None => rest.push(i),
                        }
                        continue;
                    }
                };
                *requests.add(i) = MPI_REQUEST_NULL;
                fill_status(status_at(statuses, i), &st);
                report(i, MPI_SUCCESS);
            }
        })
        .is_some();
    if !ids.is_empty() {
        // SAFETY: `engine` is MPI_COMM_WORLD's, in the state until MPI_Finalize, which comes
        // after every other call; the ids were taken out of their handles (nulled above), so
        // each is finished here once.
        let engine = unsafe { &*engine };
        unsafe {
            engine.wait_each_raw(&ids, |k, outcome| {
                let (i, comm, ref mut staged) = taken[k];
                let rc = match outcome {
                    Ok(s) => {
                        complete_staged(staged.take(), &s);
                        fill_status(status_at(statuses, i), &status_of(&s));
                        MPI_SUCCESS
                    }
                    Err(e) => waitall_error(comm, e),
                };
                report(i, rc);
            })
        };
    }
    let wait_one_by_one = |i: usize| report(i, PMPI_Wait(requests.add(i), status_at(statuses, i)));
    if passed {
        rest.into_iter().for_each(wait_one_by_one);
    } else {
        (0..n).for_each(wait_one_by_one);
    }
    if failed {
        MPI_ERR_IN_STATUS
    } else {
        MPI_SUCCESS
    }
}

/// An operation of MPI_Waitall failed: its error, through `comm`'s handler.
#[cold]
#[inline(never)]
fn waitall_error(comm: MPI_Comm, e: billboard::Error) -> c_int {
    let e = match e {
        // The same handle twice in the list: the second finds it finished. (Only an engine
        // handle can be stale here: a table entry owns its operation.)
        billboard::Error::StaleRequest { id } => {
            invalid_request(state::engine_handle(id, comm).unwrap_or(MPI_REQUEST_NULL))
        }
        e => e.into(),
    };
    crate::error::handle("MPI_Waitall", comm, e)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if *request == MPI_REQUEST_NULL {
        *flag = 1;
        fill_status(status, &empty_status());
        return MPI_SUCCESS;
    }
    let comm = request_comm(*request);
    call("MPI_Test", comm, |m| {
        match test_handle(m, *request)? {
            Some((st, keep)) => {
                *flag = 1;
                if !keep {
                    *request = MPI_REQUEST_NULL;
                }
                fill_status(status, &st);
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Testall", MPI_COMM_WORLD, |m| {
        // MPI: unless all have completed, no request is freed and no status is set, so a
        // request that completes now keeps its status in the table for later.
        let n = count.max(0) as usize;
        let mut all = true;
        for i in 0..n {
            let h = *requests.add(i);
            if h == MPI_REQUEST_NULL {
                continue;
            }
            all &= poll_handle(m, h)?.is_some();
        }
        *flag = all as c_int;
        if all {
            for i in 0..n {
                let h = *requests.add(i);
                let st = if h == MPI_REQUEST_NULL {
                    empty_status()
                } else {
                    let req = m.request_mut(h).expect("found above");
                    let st = poll_in_place(req)?.expect("every request was found complete above");
                    if !retire(m, h) {
                        *requests.add(i) = MPI_REQUEST_NULL;
                    }
                    st
                };
                fill_status(status_at(statuses, i), &st);
            }
        }
        Ok(())
    })
}

/// One sweep of `Testany`: Some(index) when a request completed, or the UNDEFINED sentinel
/// when no request is active.
unsafe fn sweep_any(count: c_int, requests: *mut MPI_Request, status: *mut MPI_Status) -> Result<Option<c_int>, c_int> {
    let mut active = false;
    for i in 0..count.max(0) as usize {
        if *requests.add(i) == MPI_REQUEST_NULL {
            continue;
        }
        active = true;
        let mut f = 0;
        let rc = PMPI_Test(requests.add(i), &mut f, status);
        if rc != MPI_SUCCESS {
            return Err(rc);
        }
        if f != 0 {
            return Ok(Some(i as c_int));
        }
    }
    Ok(if active { None } else { Some(MPI_UNDEFINED) })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    match sweep_any(count, requests, status) {
        Err(rc) => rc,
        Ok(found) => {
            *flag = found.is_some() as c_int;
            *index = found.unwrap_or(MPI_UNDEFINED);
            if found == Some(MPI_UNDEFINED) {
                fill_status(status, &empty_status());
            }
            MPI_SUCCESS
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    loop {
        match sweep_any(count, requests, status) {
            Err(rc) => return rc,
            Ok(Some(i)) => {
                *index = i;
                if i == MPI_UNDEFINED {
                    fill_status(status, &empty_status());
                }
                return MPI_SUCCESS;
            }
            Ok(None) => std::thread::yield_now(),
        }
    }
}

unsafe fn some(
    count: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
    block: bool,
) -> c_int {
    loop {
        let (mut done, mut active) = (0usize, false);
        for i in 0..count.max(0) as usize {
            if *requests.add(i) == MPI_REQUEST_NULL {
                continue;
            }
            active = true;
            let mut f = 0;
            let rc = PMPI_Test(requests.add(i), &mut f, status_at(statuses, done));
            if rc != MPI_SUCCESS {
                return rc;
            }
            if f != 0 {
                *indices.add(done) = i as c_int;
                done += 1;
            }
        }
        if !active {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        if done > 0 || !block {
            *outcount = done as c_int;
            return MPI_SUCCESS;
        }
        std::thread::yield_now();
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    some(incount, requests, outcount, indices, statuses, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    some(incount, requests, outcount, indices, statuses, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut MPI_Request) -> c_int {
    call("MPI_Cancel", MPI_COMM_WORLD, |m| {
        let mut req = m.request_mut(*request).ok_or_else(|| invalid_request(*request))?;
        if let Req::Persistent { active: Some(a), .. } = req {
            req = a;
        }
        match req {
            Req::Active { req, .. } => {
                req.cancel();
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
    *flag = (*status).cancelled() as c_int;
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut MPI_Request) -> c_int {
    call("MPI_Request_free", MPI_COMM_WORLD, |m| {
        if let Some(Req::Idup(_) | Req::Background { .. }) = m.request_mut(*request) {
            return Err(collective_request("MPI_Request_free"));
        }
        let req = m.take_request(*request).ok_or_else(|| invalid_request(*request))?;
        let req = match req {
            Req::Persistent { op, active } => {
                op.release(m);
                active.map_or(Req::Complete(empty_status()), |a| *a)
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
        *request = MPI_REQUEST_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if request == MPI_REQUEST_NULL {
        *flag = 1;
        fill_status(status, &empty_status());
        return MPI_SUCCESS;
    }
    call("MPI_Request_get_status", MPI_COMM_WORLD, |m| {
        // Like MPI_Test, but the request stays: a completed one keeps its status for the wait
        // or test that will free it.
        match poll_handle(m, request)? {
            Some(st) => {
                *flag = 1;
                fill_status(status, &st);
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

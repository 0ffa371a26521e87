//! Completion of lists of requests: MPI_Waitall, MPI_Testall, MPI_Waitany, MPI_Testany,
//! MPI_Waitsome, MPI_Testsome (MPI 4.0 section 3.7.5, as MPICH 4.0.2 does).
//!
//! Null and inactive persistent requests count as none: with no other, Waitany and Testany
//! give index `MPI_UNDEFINED` and an empty status, Waitsome and Testsome outcount
//! `MPI_UNDEFINED`. A request that completes is freed as in a single completion (a persistent
//! one turns inactive). When requests fail, the calls with an array of statuses return
//! `MPI_ERR_IN_STATUS`, under `MPI_STATUSES_IGNORE` too, and set each status's `MPI_ERROR`:
//! `MPI_SUCCESS`, the request's error, or `MPI_ERR_PENDING` for one that neither failed nor
//! completed (Testall; it stays for a later call). Waitany and Testany return the failed
//! request's own error, with its index.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{call_on, call_unlocked_on, err, guard, handle, not_running, out, MpiError, Raised, Res};
use crate::request::{
    check_handle, complete_staged, empty_status, engine_failed, failed, fill_status, invalid_request, poll, report_one,
    retire, settled, status_arg, status_of, test_take, wait_take, Ended,
};
use crate::state::{self, Mpi};

/// A list's requests: `count` must not be negative, and the array must be there if it is not
/// empty.
unsafe fn list<'a>(count: c_int, requests: *mut MPI_Request) -> Res<&'a mut [MPI_Request]> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if requests.is_null() {
        return Err(err(MPI_ERR_ARG, "null array_of_requests pointer"));
    }
    // SAFETY: MPI's contract: `requests` holds `count` handles.
    Ok(std::slice::from_raw_parts_mut(requests, count as usize))
}

/// Every handle of a list names a request, checked before any completes (a bad one is
/// MPI_ERR_REQUEST, and no completion is lost to it).
fn check_list(m: &mut Mpi, reqs: &[MPI_Request]) -> Res {
    reqs.iter().try_for_each(|&h| check_handle(m, h))
}

/// An array of statuses: `MPI_STATUSES_IGNORE`, or one per request (null is MPI_ERR_ARG).
#[derive(Clone, Copy)]
struct Statuses(*mut MPI_Status);

impl Statuses {
    fn new(p: *mut MPI_Status, count: c_int) -> Res<Statuses> {
        if count > 0 && p.is_null() {
            return Err(err(MPI_ERR_ARG, "null array_of_statuses pointer (MPI_STATUSES_IGNORE ignores them)"));
        }
        Ok(Statuses(p))
    }

    #[inline]
    fn ignored(self) -> bool {
        self.0 as isize == MPI_STATUSES_IGNORE
    }

    /// The `i`th status, or `MPI_STATUS_IGNORE`.
    #[inline]
    unsafe fn at(self, i: usize) -> *mut MPI_Status {
        if self.ignored() {
            MPI_STATUS_IGNORE as *mut MPI_Status
        } else {
            self.0.add(i)
        }
    }

    #[inline]
    unsafe fn fill(self, i: usize, st: &MPI_Status) {
        fill_status(self.at(i), st);
    }

    #[inline]
    unsafe fn set_error(self, i: usize, code: c_int) {
        if !self.ignored() {
            (*self.0.add(i)).MPI_ERROR = code;
        }
    }

    /// Fills status `i` with how a request ended, its `MPI_ERROR` included; a failure is
    /// recorded in `failures`.
    unsafe fn report(self, i: usize, request: usize, ended: Ended, failures: &mut Failures) {
        self.fill(i, &ended.status);
        self.set_error(i, ended.code());
        if let Some(e) = ended.error {
            failures.add(request, e, ended.comm);
        }
    }
}

/// The failures of a multiple completion: how many, and the first (its index in the list,
/// its error, its communicator, whose handler applies).
#[derive(Default)]
struct Failures {
    first: Option<(usize, MpiError, MPI_Comm)>,
    count: usize,
}

impl Failures {
    #[cold]
    fn add(&mut self, request: usize, e: MpiError, comm: MPI_Comm) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some((request, e, comm));
        }
    }

    /// MPI_ERR_IN_STATUS if any request failed, naming the first.
    fn outcome(self) -> Result<(), Raised> {
        let Some((request, e, comm)) = self.first else { return Ok(()) };
        let more = match self.count {
            1 => String::new(),
            n => format!(" ({} more failed; each status's MPI_ERROR says which)", n - 1),
        };
        let mut raised = err(MPI_ERR_IN_STATUS, format!("request {request} of the list failed: {}{more}", e.msg));
        if let Some(fh) = e.file {
            raised = raised.on_file(fh);
        }
        Err(Raised(raised, comm))
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) -> c_int {
    let rc = guard("MPI_Waitall", || {
        if state::phase() != state::RUNNING {
            return not_running("MPI_Waitall");
        }
        crate::grequest::wait_list(count, requests);
        match waitall(count, requests, statuses) {
            Ok(()) => MPI_SUCCESS,
            Err(Raised(e, comm)) => handle("MPI_Waitall", comm, e),
        }
    });
    crate::attr::reap("MPI_Waitall");
    crate::grequest::after("MPI_Waitall", rc)
}

/// MPI_Waitall: every request completes (none is left MPI_ERR_PENDING); if any failed, the
/// statuses say how each ended and the call returns MPI_ERR_IN_STATUS.
#[inline(always)]
unsafe fn waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) -> Result<(), Raised> {
    let reqs = list(count, requests)?;
    let sts = Statuses::new(statuses, count)?;
    let mut failures = Failures::default();
    // One pass under the state settles null and sent handles, and takes the operations in the
    // engine out of the table to be waited for together; the others (persistent, collectives,
    // idup, stale handles) go through MPI_Wait's path one at a time afterwards.
    let (mut ids, mut taken, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    let mut engine: *const billboard::Communicator = std::ptr::null();
    state::with(|m| {
        engine = &m.engine;
        let n = reqs.len();
        for (i, h) in reqs.iter_mut().enumerate() {
            let st = match *h {
                MPI_REQUEST_NULL => empty_status(),
                state::SENT => MPI_Status::default(),
                _ => {
                    let op = match m.engine_op(*h) {
                        Some((id, comm, true)) => Some((Some(id), comm, None)),
                        Some((_, _, false)) => None, // stale: reported below
                        None => m.take_active(*h).map(|(req, comm, staged)| (req.into_raw(), comm, staged)),
                    };
                    match op {
                        Some((id, comm, staged)) => {
                            if ids.is_empty() {
                                // Allocated only when something waits.
                                ids.reserve(n - i);
                                taken.reserve(n - i);
                            }
                            *h = MPI_REQUEST_NULL;
                            ids.push(id);
                            taken.push((i, comm, staged));
                        }
                        None => rest.push(i),
                    }
                    continue;
                }
            };
            *h = MPI_REQUEST_NULL;
            sts.fill(i, &st);
            sts.set_error(i, MPI_SUCCESS);
        }
    });
    if !ids.is_empty() {
        // SAFETY: `engine` is MPI_COMM_WORLD's, in the state until MPI_Finalize, which comes
        // after every other call; the ids were taken out of their handles (nulled above), so
        // each is finished here once.
        let engine = unsafe { &*engine };
        unsafe {
            engine.wait_each_raw(&ids, |k, outcome| {
                let (i, comm, ref mut staged) = taken[k];
                match outcome {
                    Ok(s) => {
                        complete_staged(staged.take(), s.bytes());
                        sts.fill(i, &status_of(&s));
                        sts.set_error(i, MPI_SUCCESS);
                    }
                    Err(e) => sts.report(i, i, waitall_failed(e, staged.take(), comm), &mut failures),
                }
            })
        };
    }
    for i in rest {
        let ended = wait_take(&mut reqs[i]).unwrap_or_else(|e| Ended {
            status: empty_status(),
            error: Some(e),
            comm: MPI_COMM_WORLD,
        });
        sts.report(i, i, ended, &mut failures);
    }
    failures.outcome()
}

/// An operation of MPI_Waitall failed: how it ended.
#[cold]
#[inline(never)]
fn waitall_failed(e: billboard::Error, staged: Option<Box<crate::datatype::Staging>>, comm: MPI_Comm) -> Ended {
    match e {
        // The same handle twice in the list: the second finds it finished. (Only an engine
        // handle can be stale here: a table entry owns its operation.)
        billboard::Error::StaleRequest { id } => Ended {
            status: empty_status(),
            error: Some(invalid_request(state::engine_handle(id, comm).unwrap_or(MPI_REQUEST_NULL))),
            comm,
        },
        e => engine_failed(e, staged, comm),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    crate::grequest::resolve_list(count, requests);
    let rc = call_on("MPI_Testall", |m| {
        let reqs = list(count, requests)?;
        let flag = out(flag, "flag")?;
        let sts = Statuses::new(statuses, count)?;
        check_list(m, reqs)?;
        // Unless all have completed (or one failed), no request is freed and no status is
        // set: a request that completes now keeps its outcome in place for later.
        let (mut all, mut any_failed) = (true, false);
        for &h in reqs.iter() {
            if h == MPI_REQUEST_NULL {
                continue;
            }
            if poll(m, h)? {
                any_failed |= m.request_mut(h).is_some_and(|r| failed(r));
            } else {
                all = false;
            }
        }
        *flag = all as c_int;
        if !all && !any_failed {
            return Ok(());
        }
        let mut failures = Failures::default();
        for (i, h) in reqs.iter_mut().enumerate() {
            if *h == MPI_REQUEST_NULL {
                sts.fill(i, &empty_status());
                sts.set_error(i, MPI_SUCCESS);
            } else if m.request_mut(*h).is_some_and(|r| settled(r)) {
                sts.report(i, i, retire(m, h), &mut failures);
            } else {
                sts.set_error(i, MPI_ERR_PENDING);
            }
        }
        failures.outcome()
    });
    crate::attr::reap("MPI_Testall");
    crate::grequest::after("MPI_Testall", rc)
}

/// One sweep of Waitany/Testany: the first request found complete, freed, with its index;
/// `None` if none completed; index `MPI_UNDEFINED` and the empty status if none is active.
fn sweep_any(m: &mut Mpi, reqs: &mut [MPI_Request]) -> Res<Option<(c_int, Ended)>> {
    let mut active = false;
    for (i, h) in reqs.iter_mut().enumerate() {
        if *h == MPI_REQUEST_NULL || m.is_inactive(*h) {
            continue;
        }
        active = true;
        if let Some(ended) = test_take(m, h)? {
            return Ok(Some((i as c_int, ended)));
        }
    }
    Ok((!active).then(|| (MPI_UNDEFINED, Ended::ok(empty_status(), MPI_COMM_WORLD))))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    crate::grequest::resolve_list(count, requests);
    let rc = call_on("MPI_Testany", |m| {
        let reqs = list(count, requests)?;
        let index = out(index, "index")?;
        let flag = out(flag, "flag")?;
        status_arg(status)?;
        check_list(m, reqs)?;
        match sweep_any(m, reqs)? {
            None => {
                *flag = 0;
                *index = MPI_UNDEFINED;
                Ok(())
            }
            Some((i, ended)) => {
                *flag = 1;
                *index = i;
                report_one(status, ended)
            }
        }
    });
    crate::attr::reap("MPI_Testany");
    crate::grequest::after("MPI_Testany", rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let rc = call_unlocked_on("MPI_Waitany", || {
        let reqs = list(count, requests)?;
        let index = out(index, "index")?;
        status_arg(status)?;
        running(|m| check_list(m, reqs))?;
        let mut found = None;
        wait_for(|| {
            crate::grequest::resolve_list(count, reqs.as_ptr());
            found = running(|m| sweep_any(m, reqs)).transpose();
            found.is_some()
        })?;
        let (i, ended) = found.expect("wait_for returns once a sweep found one")?;
        *index = i;
        report_one(status, ended)
    });
    crate::attr::reap("MPI_Waitany");
    crate::grequest::after("MPI_Waitany", rc)
}

/// Waits until `ready()` says so, on the engine's one waiting ladder (spin, yield, sleep), so
/// a rank blocked in MPI_Waitany or MPI_Waitsome does not burn its core.
fn wait_for(ready: impl FnMut() -> bool) -> Res {
    let world = running(|m| Ok(m.comm(MPI_COMM_WORLD).map(|c| c.comm.clone())))?
        .ok_or_else(|| err(MPI_ERR_OTHER, "MPI_COMM_WORLD is gone"))?;
    world.wait_for(ready);
    Ok(())
}

/// Runs `f` on the state (the calls here have checked that MPI is running).
fn running<R>(f: impl FnOnce(&mut Mpi) -> Res<R>) -> Res<R> {
    state::with(f).unwrap_or_else(|| Err(err(MPI_ERR_OTHER, "MPI was finalized during the call")))
}

/// One sweep of Waitsome/Testsome: every request found complete is freed, its index and
/// status written at the next place; how many (`None`: no request is active).
unsafe fn sweep_some(
    m: &mut Mpi,
    reqs: &mut [MPI_Request],
    indices: *mut c_int,
    sts: Statuses,
    failures: &mut Failures,
) -> Res<Option<c_int>> {
    let (mut active, mut done) = (false, 0);
    for (i, h) in reqs.iter_mut().enumerate() {
        if *h == MPI_REQUEST_NULL || m.is_inactive(*h) {
            continue;
        }
        active = true;
        if let Some(ended) = test_take(m, h)? {
            *indices.add(done) = i as c_int;
            sts.report(done, i, ended, failures);
            done += 1;
        }
    }
    Ok(active.then_some(done as c_int))
}

unsafe fn some(
    function: &'static str,
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
    block: bool,
) -> c_int {
    call_unlocked_on(function, || {
        let reqs = list(incount, requests)?;
        let outcount = out(outcount, "outcount")?;
        if incount > 0 && indices.is_null() {
            return Err(err(MPI_ERR_ARG, "null array_of_indices pointer").into());
        }
        let sts = Statuses::new(statuses, incount)?;
        running(|m| check_list(m, reqs))?;
        let mut failures = Failures::default();
        crate::grequest::resolve_list(incount, reqs.as_ptr());
        let mut swept = running(|m| sweep_some(m, reqs, indices, sts, &mut failures));
        if block && matches!(swept, Ok(Some(0))) {
            wait_for(|| {
                crate::grequest::resolve_list(incount, reqs.as_ptr());
                swept = running(|m| sweep_some(m, reqs, indices, sts, &mut failures));
                !matches!(swept, Ok(Some(0)))
            })?;
        }
        *outcount = swept?.unwrap_or(MPI_UNDEFINED);
        failures.outcome()
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let rc = some("MPI_Waitsome", incount, requests, outcount, indices, statuses, true);
    crate::attr::reap("MPI_Waitsome");
    crate::grequest::after("MPI_Waitsome", rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let rc = some("MPI_Testsome", incount, requests, outcount, indices, statuses, false);
    crate::attr::reap("MPI_Testsome");
    crate::grequest::after("MPI_Testsome", rc)
}

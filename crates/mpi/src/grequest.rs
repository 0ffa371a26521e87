//! Generalized requests (MPI 4.0 section 13.2): MPI_Grequest_start makes a request that the
//! program completes itself (MPI_Grequest_complete); waits and tests on it call the program's
//! `query_fn` for its status and then `free_fn`, MPI_Cancel its `cancel_fn`.
//!
//! The callbacks are the program's code and may call MPI themselves (mpi4py's set the status
//! with MPI_Status_set_elements_c, and report a Python exception through MPI calls), so none of
//! them runs while a call holds the state (`state::with` is not re-entrant, and at
//! MPI_THREAD_MULTIPLE it is a mutex): a test first *resolves* the generalized requests of its
//! list outside the state (runs `query_fn` of each one already completed, and keeps the
//! outcome in the request), then completes them under the state like any other request; a
//! request freed under the state leaves its `free_fn` to [`after`], which the call runs when it
//! has let the state go. A wait completes it outside the state anyway.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::abi::*;
use crate::error::{call, err, guard, handle, not_running, out};
use crate::request::{empty_status, invalid_request, Ended};
use crate::state::{self, Req};

pub(crate) type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub(crate) type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub(crate) type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// One generalized request: the program's callbacks and their argument, whether the program
/// completed it, and `query_fn`'s outcome once a wait or test asked for it.
pub(crate) struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    /// The program's `extra_state` pointer, handed back to every callback and never read here.
    extra_state: usize,
    done: AtomicBool,
    outcome: Mutex<Option<Ended>>,
}

impl std::fmt::Debug for Greq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Greq(done: {})", self.done.load(Ordering::Relaxed))
    }
}

/// How many generalized requests exist: the calls that complete requests look for them only
/// when there are some.
static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Generalized requests freed under the state whose `free_fn` is still to run ([`after`]).
    static TO_FREE: RefCell<Vec<Arc<Greq>>> = const { RefCell::new(Vec::new()) };
}

impl Greq {
    fn extra(&self) -> *mut c_void {
        self.extra_state as *mut c_void
    }

    /// `query_fn`'s outcome, if a wait or test has run it.
    pub fn resolved(&self) -> Option<Ended> {
        self.outcome.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Runs `query_fn` (outside the state) unless it has run; its status, or its error code as
    /// the request's error.
    fn resolve(&self) -> Ended {
        if let Some(ended) = self.resolved() {
            return ended;
        }
        let mut status = empty_status();
        status.set_byte_count(0);
        let rc = match self.query {
            // SAFETY: the program's callback, with the argument it gave MPI_Grequest_start and a
            // status that lives across the call.
            Some(q) => unsafe { q(self.extra(), &mut status) },
            None => MPI_SUCCESS,
        };
        let ended = if rc == MPI_SUCCESS {
            Ended::ok(status, MPI_COMM_WORLD)
        } else {
            Ended {
                status,
                error: Some(err(rc, format!("the generalized request's query_fn returned error {rc}"))),
                comm: MPI_COMM_WORLD,
            }
        };
        self.outcome.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(ended).clone()
    }

    /// Waits (outside the state) until the program completes the request, and resolves it.
    pub fn wait(&self) -> Ended {
        let mut rounds = 0u32;
        while !self.done.load(Ordering::Acquire) {
            // Another thread completes it: spin a little, then yield, then sleep.
            rounds += 1;
            if rounds < 100 {
                std::hint::spin_loop();
            } else if rounds < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        self.resolve()
    }

    /// Runs `free_fn` (outside the state); its error code if it failed.
    fn run_free(&self) -> c_int {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        match self.free {
            // SAFETY: the program's callback with its own argument, called once.
            Some(f) => unsafe { f(self.extra()) },
            None => MPI_SUCCESS,
        }
    }
}

/// A generalized request leaves the table (completed or freed): its `free_fn` runs when the
/// call has let the state go ([`after`]).
pub(crate) fn retired(g: Arc<Greq>) {
    TO_FREE.with(|f| f.borrow_mut().push(g));
}

/// The end of a call that may have completed or freed generalized requests: runs their
/// `free_fn`s, now that the state is free. A `free_fn` that fails makes the call fail with its
/// code, unless the call failed already.
pub(crate) fn after(function: &'static str, rc: c_int) -> c_int {
    if LIVE.load(Ordering::Relaxed) == 0 && TO_FREE.with(|f| f.borrow().is_empty()) {
        return rc;
    }
    let freed = TO_FREE.with(|f| std::mem::take(&mut *f.borrow_mut()));
    let mut rc = rc;
    for g in freed {
        let code = guard(function, || g.run_free());
        if code != MPI_SUCCESS && rc == MPI_SUCCESS {
            rc = handle(
                function,
                MPI_COMM_WORLD,
                err(code, format!("the generalized request's free_fn returned error {code}")),
            );
        }
    }
    rc
}

/// Resolves the generalized requests among `count` handles at `requests` that the program has
/// completed: their `query_fn` runs here, before the call takes the state, and the test that
/// follows finds them complete. Bad arguments are left for the call to report.
pub(crate) unsafe fn resolve_list(count: c_int, requests: *const MPI_Request) {
    if LIVE.load(Ordering::Relaxed) == 0 || count <= 0 || requests.is_null() {
        return;
    }
    // SAFETY: MPI's contract: `requests` holds `count` handles.
    let handles = std::slice::from_raw_parts(requests, count as usize);
    let found: Vec<Arc<Greq>> = state::with(|m| {
        handles
            .iter()
            .filter_map(|&h| match m.table_request(h) {
                Some(Req::Generalized(g)) if g.done.load(Ordering::Acquire) => Some(g.clone()),
                _ => None,
            })
            .collect()
    })
    .unwrap_or_default();
    for g in found {
        g.resolve();
    }
}

/// The generalized request behind handle `h`, if it is one.
pub(crate) fn lookup(h: MPI_Request) -> Option<Arc<Greq>> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    state::with(|m| match m.table_request(h) {
        Some(Req::Generalized(g)) => Some(g.clone()),
        _ => None,
    })
    .flatten()
}

/// MPI_Cancel of a generalized request: its `cancel_fn`, told whether the program completed
/// it, outside the state.
pub(crate) fn cancel(g: &Greq) -> c_int {
    let rc = match g.cancel {
        // SAFETY: the program's callback with its own argument.
        Some(c) => guard("MPI_Cancel", || unsafe { c(g.extra(), g.done.load(Ordering::Acquire) as c_int) }),
        None => MPI_SUCCESS,
    };
    if rc == MPI_SUCCESS {
        return rc;
    }
    handle("MPI_Cancel", MPI_COMM_WORLD, err(rc, format!("the generalized request's cancel_fn returned error {rc}")))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    call("MPI_Grequest_start", MPI_COMM_WORLD, |m| {
        let request = out(request, "request")?;
        let g = Greq {
            query: query_fn,
            free: free_fn,
            cancel: cancel_fn,
            extra_state: extra_state as usize,
            done: AtomicBool::new(false),
            outcome: Mutex::new(None),
        };
        LIVE.fetch_add(1, Ordering::Relaxed);
        *request = m.add_request(Req::Generalized(Arc::new(g)));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_complete(request: MPI_Request) -> c_int {
    guard("MPI_Grequest_complete", || {
        if state::phase() != state::RUNNING {
            return not_running("MPI_Grequest_complete");
        }
        match lookup(request) {
            Some(g) => {
                g.done.store(true, Ordering::Release);
                MPI_SUCCESS
            }
            None => handle(
                "MPI_Grequest_complete",
                MPI_COMM_WORLD,
                err(MPI_ERR_REQUEST, format!("{} (not a generalized request)", invalid_request(request).msg)),
            ),
        }
    })
}

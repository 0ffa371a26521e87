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
//!
//! MPICH's extension (MPIX_Grequest_start, and classes of such requests made by
//! MPIX_Grequest_class_create and started by MPIX_Grequest_class_allocate) adds two callbacks
//! that let the library drive the request instead of another thread: `poll_fn`, which checks
//! on it and calls MPI_Grequest_complete once it is done, and `wait_fn`, which blocks until
//! the requests it is handed are done. As MPICH 4.0.2 runs them: every test of a pending
//! request polls it once; MPI_Wait polls it until it is complete; MPI_Waitall hands each
//! pending one to `wait_fn` (count 1, timeout 0), then polls if that did not complete it.

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
/// `MPIX_Grequest_poll_function` and `MPIX_Grequest_wait_function`.
pub(crate) type PollFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub(crate) type WaitFn = unsafe extern "C" fn(c_int, *mut *mut c_void, f64, *mut MPI_Status) -> c_int;

/// One generalized request: the program's callbacks and their argument, whether the program
/// completed it, and `query_fn`'s outcome once a wait or test asked for it.
pub(crate) struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    /// MPICH's extension: how the library drives the request itself (None: another thread of
    /// the program completes it).
    poll: Option<PollFn>,
    wait: Option<WaitFn>,
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

    /// MPIX: runs `poll_fn` once (outside the state) if the request is pending; the request
    /// is done if `poll_fn` completed it. An error of `poll_fn` becomes the request's.
    fn poll(&self) {
        let Some(poll) = self.poll.filter(|_| !self.done.load(Ordering::Acquire)) else { return };
        let mut status = empty_status();
        // SAFETY: the program's callback with its own argument and a status that lives across
        // the call.
        let rc = unsafe { poll(self.extra(), &mut status) };
        self.callback_failed("poll_fn", rc);
    }

    /// MPIX: hands the pending request to `wait_fn`, which blocks until it is done (MPI_Waitall).
    fn wait_fn(&self) {
        let Some(wait) = self.wait.filter(|_| !self.done.load(Ordering::Acquire)) else { return };
        let mut status = empty_status();
        let mut state = self.extra();
        // SAFETY: the program's callback, with an array of one state and a status that live
        // across the call.
        let rc = unsafe { wait(1, &mut state, 0.0, &mut status) };
        self.callback_failed("wait_fn", rc);
    }

    /// A `poll_fn` or `wait_fn` that failed ends the request with its error code.
    fn callback_failed(&self, name: &str, rc: c_int) {
        if rc == MPI_SUCCESS {
            return;
        }
        let ended = Ended {
            status: empty_status(),
            error: Some(err(rc, format!("the generalized request's {name} returned error {rc}"))),
            comm: MPI_COMM_WORLD,
        };
        self.outcome.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(ended);
        self.done.store(true, Ordering::Release);
    }

    /// Waits (outside the state) until the program completes the request, and resolves it.
    pub fn wait(&self) -> Ended {
        let mut rounds = 0u32;
        while !self.done.load(Ordering::Acquire) {
            // MPIX: the library drives it; the program's poll_fn says when it is done.
            self.poll();
            if self.done.load(Ordering::Acquire) {
                break;
            }
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
                Some(Req::Generalized(g)) if g.poll.is_some() || g.done.load(Ordering::Acquire) => Some(g.clone()),
                _ => None,
            })
            .collect()
    })
    .unwrap_or_default();
    for g in found {
        // MPIX: a test polls each pending request once first.
        g.poll();
        if g.done.load(Ordering::Acquire) {
            g.resolve();
        }
    }
}

/// MPI_Waitall's first step (MPIX): each pending generalized request of the list that has a
/// `wait_fn` is handed to it, outside the state, as MPICH 4.0.2 does.
pub(crate) unsafe fn wait_list(count: c_int, requests: *const MPI_Request) {
    if LIVE.load(Ordering::Relaxed) == 0 || count <= 0 || requests.is_null() {
        return;
    }
    // SAFETY: MPI's contract: `requests` holds `count` handles.
    let handles = std::slice::from_raw_parts(requests, count as usize);
    for &h in handles {
        if let Some(g) = lookup(h) {
            g.wait_fn();
        }
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
        let callbacks = Callbacks { query: query_fn, free: free_fn, cancel: cancel_fn, poll: None, wait: None };
        *request = start(m, &callbacks, extra_state);
        Ok(())
    })
}

/// The callbacks of a generalized request, or of a class of them (MPIX).
#[derive(Clone, Copy)]
pub(crate) struct Callbacks {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    poll: Option<PollFn>,
    wait: Option<WaitFn>,
}

/// A new generalized request with `callbacks`, in the table.
fn start(m: &mut state::Mpi, callbacks: &Callbacks, extra_state: *mut c_void) -> MPI_Request {
    let &Callbacks { query, free, cancel, poll, wait } = callbacks;
    let g = Greq {
        query,
        free,
        cancel,
        poll,
        wait,
        extra_state: extra_state as usize,
        done: AtomicBool::new(false),
        outcome: Mutex::new(None),
    };
    LIVE.fetch_add(1, Ordering::Relaxed);
    m.add_request(Req::Generalized(Arc::new(g)))
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

/// The classes made by MPIX_Grequest_class_create, by direct-handle index (never freed: MPICH
/// has no call that frees one).
static CLASSES: Mutex<Vec<Callbacks>> = Mutex::new(Vec::new());

/// MPICH refuses a null `poll_fn` or `wait_fn` ("Null pointer in parameter poll_fn").
fn mpix_callbacks(
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    poll: Option<PollFn>,
    wait: Option<WaitFn>,
) -> crate::error::Res<Callbacks> {
    if poll.is_none() {
        return Err(err(MPI_ERR_ARG, "null poll_fn"));
    }
    if wait.is_none() {
        return Err(err(MPI_ERR_ARG, "null wait_fn"));
    }
    Ok(Callbacks { query, free, cancel, poll, wait })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    poll_fn: Option<PollFn>,
    wait_fn: Option<WaitFn>,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    call("MPIX_Grequest_start", MPI_COMM_WORLD, |m| {
        let request = out(request, "request")?;
        let callbacks = mpix_callbacks(query_fn, free_fn, cancel_fn, poll_fn, wait_fn)?;
        *request = start(m, &callbacks, extra_state);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Grequest_class_create(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    poll_fn: Option<PollFn>,
    wait_fn: Option<WaitFn>,
    greq_class: *mut c_int,
) -> c_int {
    call("MPIX_Grequest_class_create", MPI_COMM_WORLD, |_| {
        let greq_class = out(greq_class, "greq_class")?;
        let callbacks = mpix_callbacks(query_fn, free_fn, cancel_fn, poll_fn, wait_fn)?;
        let mut classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
        let index = classes.len() as u32;
        if index > HANDLE_INDEX_MASK {
            return Err(err(MPI_ERR_OTHER, format!("no more than {index} generalized-request classes")));
        }
        classes.push(callbacks);
        *greq_class = make_handle(HandleKind::Direct, object_type::GREQ_CLASS, index);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Grequest_class_allocate(
    greq_class: c_int,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    call("MPIX_Grequest_class_allocate", MPI_COMM_WORLD, |m| {
        let request = out(request, "request")?;
        let callbacks = (handle_kind(greq_class) == HandleKind::Direct
            && handle_object_type(greq_class) == object_type::GREQ_CLASS)
            .then(|| CLASSES.lock().unwrap_or_else(|e| e.into_inner()).get(handle_index(greq_class) as usize).copied())
            .flatten()
            .ok_or_else(|| {
                err(MPI_ERR_ARG, format!("{greq_class:#x} is not a class made by MPIX_Grequest_class_create"))
            })?;
        *request = start(m, &callbacks, extra_state);
        Ok(())
    })
}

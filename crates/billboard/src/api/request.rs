//! Non-blocking requests that borrow their buffers, and what a completed receive reports.

use std::marker::PhantomData;

use crate::engine::request::{Completion, ReqId};
use crate::engine::{EngineLink, EngineRef, Shared};
use crate::{Error, Result};

/// What a completed receive (or probe) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    source: usize,
    tag: i32,
    bytes: usize,
    cancelled: bool,
}

impl Status {
    pub(crate) fn new(c: Completion) -> Status {
        Status { source: c.source as usize, tag: c.tag, bytes: c.bytes, cancelled: c.cancelled }
    }

    /// Rank of the sender in the communicator.
    pub fn source(&self) -> usize {
        self.source
    }

    pub fn tag(&self) -> i32 {
        self.tag
    }

    /// Bytes received (or, for a probe, bytes in the message).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the operation was cancelled instead of completing.
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Number of `T` elements received; an error if the bytes are not whole elements.
    pub fn count<T>(&self) -> Result<usize> {
        let element = std::mem::size_of::<T>().max(1);
        if !self.bytes.is_multiple_of(element) {
            return Err(Error::ElementSize { bytes: self.bytes, element });
        }
        Ok(self.bytes / element)
    }
}

/// An operation in flight. It borrows its buffer, so the buffer cannot be touched or freed
/// before the request completes. Dropping an unfinished request cancels it if it is a receive
/// that has not matched yet, and otherwise waits for it. (A leaked one is waited for by its
/// [`Scope`](crate::Scope): see the `scope` module.)
#[must_use = "a request completes only through wait/test (or its drop, which blocks)"]
pub struct Request<'a> {
    /// The engine, held only while the operation is in flight (a send that completed as it
    /// started holds nothing: no reference count to touch on the fast path).
    engine: Option<EngineLink>,
    /// None once finished, or for a send that completed as it was started.
    id: Option<ReqId>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a> Request<'a> {
    pub(crate) fn new(engine: &EngineRef, id: Option<ReqId>) -> Request<'a> {
        Request { engine: id.map(|_| EngineLink::new(engine)), id, _buffer: PhantomData }
    }

    /// Whether nothing is left to wait for (e.g. an eager send that went out as it started).
    pub fn is_finished(&self) -> bool {
        self.id.is_none()
    }

    /// Waits for completion.
    pub fn wait(mut self) -> Result<Status> {
        match self.id.take() {
            Some(id) => self.engine().wait(id).map(Status::new),
            None => Ok(Status::new(Completion::default())),
        }
    }

    /// Makes progress once; `Some(status)` if the request has completed (it is then finished).
    pub fn test(&mut self) -> Result<Option<Status>> {
        let Some(id) = self.id else { return Ok(Some(Status::new(Completion::default()))) };
        let outcome = self.engine().lock().test(id);
        match outcome {
            Some(outcome) => {
                self.id = None;
                outcome.map(|c| Some(Status::new(c)))
            }
            None => Ok(None),
        }
    }

    /// Cancels a receive that has not matched yet; its status then says `cancelled()`.
    /// Returns whether it was cancelled (false: it matched, or it is a send).
    pub fn cancel(&mut self) -> bool {
        self.id.is_some_and(|id| self.engine().lock().cancel(id))
    }
}

impl Request<'static> {
    /// Lets go of the request without finishing it, for bindings whose handles carry the
    /// engine's id (the MPI library): the operation goes on, and
    /// [`Communicator::adopt_request`](crate::Communicator::adopt_request) takes it back.
    /// `None` if nothing is left to finish. An id never taken back is finished at finalize.
    ///
    /// Only a request that borrows nothing can be let go (one from the `_raw` forms, whose
    /// caller vouches for the buffers until the operation ends): letting go of a borrowing one
    /// would end the borrow while the operation goes on (see the `scope` module).
    #[inline]
    pub fn into_raw(mut self) -> Option<u32> {
        self.id.take()
    }
}

impl Request<'_> {
    fn engine(&self) -> &EngineLink {
        self.engine.as_ref().expect("a request in flight holds its engine")
    }
}

impl Drop for Request<'_> {
    /// Inlined: a finished request (the common case) has nothing to drop but its engine link.
    #[inline]
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.abandon(id);
        }
    }
}

impl Request<'_> {
    /// Dropped unfinished: cancel the receive if it has not matched, then wait for the end.
    #[cold]
    #[inline(never)]
    fn abandon(&mut self, id: ReqId) {
        self.engine().lock().cancel(id);
        let _ = self.engine().wait(id);
    }
}

/// Waits for every request; the statuses come in the requests' order. On error, every request
/// has still completed and the first error is returned.
pub fn wait_all(mut requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let mut statuses = Vec::with_capacity(requests.len());
    let mut first_error = None;
    wait_each(&mut requests, |_, outcome| match outcome {
        Ok(s) => statuses.push(s),
        Err(e) => {
            statuses.push(Status::new(Completion::default()));
            first_error.get_or_insert(e);
        }
    });
    match first_error {
        Some(e) => Err(e),
        None => Ok(statuses),
    }
}

/// Waits until every request has completed, then finishes each (in order) and hands its
/// outcome to `each(index, outcome)`. The requests are waited for together: one wait drives
/// progress for all of them, where waiting for each in turn pays a wait's setup per request.
/// Every request is finished afterwards (dropping it costs nothing).
pub fn wait_each(requests: &mut [Request<'_>], mut each: impl FnMut(usize, Result<Status>)) {
    let Some(link) = requests.iter().find_map(|r| r.engine.as_ref()) else {
        // Nothing in flight: every request ended as it started.
        for i in 0..requests.len() {
            each(i, Ok(Status::new(Completion::default())));
        }
        return;
    };
    let shared: *const Shared = &**link;
    if requests.iter().any(|r| r.engine.as_ref().is_some_and(|e| !std::ptr::eq(&**e, shared))) {
        // Requests of several engines (several universes in one process): one at a time.
        for (i, r) in requests.iter_mut().enumerate() {
            each(i, std::mem::replace(r, Request { engine: None, id: None, _buffer: PhantomData }).wait());
        }
        return;
    }
    // SAFETY: the requests hold the engine (counted, or vouched for) and outlive this call.
    let shared = unsafe { &*shared };
    wait_ids(shared, requests.len(), |i| requests[i].id, each);
    // Every id was finished above.
    for r in requests.iter_mut() {
        r.id = None;
    }
}

/// The core of [`wait_each`], over the ids of `n` operations (`None`: nothing to wait for):
/// waits until every one has completed, then finishes each in order and hands its outcome to
/// `each`. An id that is not in flight is reported as an error and left alone.
pub(crate) fn wait_ids(
    shared: &Shared,
    n: usize,
    id_of: impl Fn(usize) -> Option<ReqId>,
    mut each: impl FnMut(usize, Result<Status>),
) {
    let mut next = 0; // ids before `next` have settled (completion is final)
    let hint = {
        let engine = shared.lock();
        (0..n).find_map(&id_of).filter(|&id| engine.in_flight(id)).and_then(|id| engine.hint(id))
    };
    drop(shared.wait_until(hint, |e| {
        while next < n && id_of(next).is_none_or(|id| e.settled(id)) {
            next += 1;
        }
        next == n
    }));
    // `each` runs without the engine held: it may call the library.
    for i in 0..n {
        let outcome = match id_of(i) {
            Some(id) => {
                let mut engine = shared.lock();
                if engine.in_flight(id) {
                    engine.finish(id).map(Status::new)
                } else {
                    Err(Error::StaleRequest { id })
                }
            }
            None => Ok(Status::new(Completion::default())),
        };
        each(i, outcome);
    }
}

/// Waits until one request completes; removes it and returns its former index and status.
/// Waits on the library's one ladder (spin, yield, sleep), so a rank blocked here does not
/// burn its core.
pub fn wait_any(requests: &mut Vec<Request<'_>>) -> Result<(usize, Status)> {
    assert!(!requests.is_empty(), "wait_any on no requests would wait forever");
    let Some(link) = requests.iter().find_map(|r| r.engine.as_ref()) else {
        // Nothing in flight: the first ended as it started.
        return requests.remove(0).wait().map(|status| (0, status));
    };
    // SAFETY: the requests hold the engine (counted, or vouched for) and outlive this call.
    let shared = unsafe { &*(&**link as *const Shared) };
    let mut found: Option<(usize, Result<Status>)> = None;
    shared.wait_for(|| {
        found = requests.iter_mut().enumerate().find_map(|(i, r)| r.test().transpose().map(|outcome| (i, outcome)));
        found.is_some()
    });
    let (i, outcome) = found.expect("wait_for returns once a request is done");
    drop(requests.remove(i));
    outcome.map(|status| (i, status))
}

/// If every request has completed, finishes them all and returns their statuses.
pub fn test_all(requests: &mut Vec<Request<'_>>) -> Result<Option<Vec<Status>>> {
    let Some(engine) = requests.iter().find_map(|r| r.engine.as_ref()) else {
        return wait_all(std::mem::take(requests)).map(Some);
    };
    let all_done = {
        let mut engine = engine.lock();
        engine.progress(None);
        requests.iter().all(|r| r.id.is_none_or(|id| engine.is_done(id)))
    };
    if !all_done {
        return Ok(None);
    }
    wait_all(std::mem::take(requests)).map(Some)
}

//! Nonblocking operations on borrowed buffers, made sound against leaked requests.
//!
//! A [`Request`] borrows its buffer, and finishing it (wait, test, drop) is what ends the
//! operation. But a value may be leaked in safe Rust (`std::mem::forget`, a reference cycle),
//! and a leaked request ends its borrow without ending its operation: the engine would then
//! write into (or read from) a buffer the program has moved on from. So a borrowing request
//! cannot be trusted to finish; the borrow must be held by something that is sure to run:
//! a scope, in the style of [`std::thread::scope`].
//!
//! ```no_run
//! # fn main() -> billboard::Result<()> {
//! # let universe = billboard::init()?;
//! # let world = universe.world();
//! let mut got = [0u8; 4];
//! let data = [1u8, 2, 3, 4];
//! world.scope(|s| {
//!     let r = s.irecv(&mut got, 0, 7)?;
//!     s.isend(&data, 0, 7)?.wait()?;
//!     r.wait()
//! })?;
//! # Ok(()) }
//! ```
//!
//! Buffers lent to a scope's operations stay borrowed until the scope returns, and the scope
//! returns (or unwinds) only once every operation it started has ended: those whose requests
//! were finished the usual way, and any whose request was leaked, which it waits for then
//! (their outcomes are lost with their requests). As with a scoped thread, an operation that
//! never ends (a receive nobody sends to) keeps the scope from returning.
//!
//! The borrowing forms outside a scope ([`Communicator::isend`](crate::Communicator::isend)
//! and its kin) are `unsafe` for that reason: their caller promises not to leak the request.
//! [`Request::into_raw`] is only for requests that borrow nothing (`Request<'static>`, from
//! the `_raw` forms, whose callers vouch for their buffers themselves).

use std::marker::PhantomData;

use super::comm::{Communicator, SendMode, Source, TagMatch};
use super::datatype::{Buffer, BufferMut};
use super::request::{wait_ids, Request};
use crate::Result;

/// The operations of one [`Communicator::scope`]: they may borrow anything that outlives it.
pub struct Scope<'scope, 'env: 'scope> {
    comm: &'scope Communicator,
    /// The engine's number for this scope: its requests carry it.
    id: u32,
    /// Invariant in both lifetimes, as `std::thread::Scope` is: a scope cannot be taken for a
    /// shorter one, so nothing borrowed for less than the whole scope can be lent to it.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl Communicator {
    /// Runs `f` with a scope for nonblocking operations on borrowed buffers, and returns once
    /// every operation started in it has ended (see the module documentation): a request the
    /// program leaks is waited for here, so its buffer is never touched after the scope.
    pub fn scope<'env, T>(&'env self, f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T) -> T {
        let id = self.engine().lock().open_scope();
        // Dropped after `f`, on return and unwind alike: a panic in `f` cannot free the
        // buffers while leaked operations still use them.
        let _end = ScopeEnd { comm: self, id };
        let scope = Scope { comm: self, id, scope: PhantomData, env: PhantomData };
        f(&scope)
    }
}

/// The end of a scope: waits for the operations whose requests were leaked.
struct ScopeEnd<'a> {
    comm: &'a Communicator,
    id: u32,
}

impl Drop for ScopeEnd<'_> {
    /// Every request of the scope still in use belongs to no handle any more (the closure has
    /// returned or unwound, and a request cannot outlive it): waits for each to end, and
    /// finishes it.
    fn drop(&mut self) {
        let engine = self.comm.engine();
        let leaked = engine.lock().scope_orphans(self.id);
        if !leaked.is_empty() {
            wait_ids(engine, leaked.len(), |i| Some(leaked[i]), |_, _| {});
        }
    }
}

impl<'scope> Scope<'scope, '_> {
    /// Starts a send of `buf` to `dest`; `buf` stays borrowed until the scope ends.
    pub fn isend<B: Buffer + ?Sized>(&'scope self, buf: &'scope B, dest: usize, tag: i32) -> Result<Request<'scope>> {
        self.send(buf.as_bytes(), dest, tag, SendMode::Standard)
    }

    /// Starts a synchronous send (MPI_Issend): it completes once the receiver has matched it.
    pub fn issend<B: Buffer + ?Sized>(&'scope self, buf: &'scope B, dest: usize, tag: i32) -> Result<Request<'scope>> {
        self.send(buf.as_bytes(), dest, tag, SendMode::Synchronous)
    }

    fn send(&'scope self, data: &'scope [u8], dest: usize, tag: i32, mode: SendMode) -> Result<Request<'scope>> {
        Communicator::check_tag(tag)?;
        let context = self.comm.context_id();
        // SAFETY: `data` is borrowed for the whole scope, which waits for the request to end
        // (it carries the scope's number, so the scope finds it if it is leaked).
        unsafe { self.comm.isend_on(context, data.as_ptr(), data.len(), dest, tag, mode, self.id) }
    }

    /// Starts a receive into `buf`; `buf` stays borrowed until the scope ends.
    pub fn irecv<B: BufferMut + ?Sized>(
        &'scope self,
        buf: &'scope mut B,
        src: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Request<'scope>> {
        let data = buf.as_bytes_mut();
        let context = self.comm.context_id();
        // SAFETY: `buf` is borrowed mutably for the whole scope, which waits for the request.
        unsafe { self.comm.irecv_on(context, data.as_mut_ptr(), data.len(), src.into(), tag.into(), self.id) }
    }
}

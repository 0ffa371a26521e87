//! A callback that Billboard's Fortran library (libmpichfort.so.12) attaches to a request.
//!
//! `use mpi_f08` lets a program give a non-contiguous array section to a call that keeps its
//! buffer: `MPI_Iallreduce(a, b(1:20:2), ...)`. Where the section has a (count, datatype) of
//! its own, a derived datatype laid over it does (fortran/f08_support.c, `bbf08_section`); a
//! reduction's buffers share one datatype and a v/w collective's are cut by counts arrays, so
//! there the Fortran library passes a packed copy of the section instead. That copy must be
//! packed again at each MPI_Start of a persistent request and unpacked into the section when the
//! operation completes, whoever completes it (MPI_Wait from Fortran or C, MPI_Testall,
//! MPI_Request_get_status...). So the request carries the Fortran library's callback, which
//! this library runs at those moments: [`START`] before each start of a persistent request,
//! [`END`] when an operation completes (in error or not), [`FREE`] when the copy is no longer
//! needed (after the end of a nonblocking operation; when a persistent request is freed). The
//! callback runs under the library's state and must not call MPI.
//!
//! MPICH has no such entry; its mpi_f08 passes such a section's base address (or lays the
//! receive buffer's section datatype over the send buffer too).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::error::{call, err, Res};
use crate::state::{self, Mpi, Req};

/// Before a persistent request starts: pack the sections into their copies.
pub(crate) const START: c_int = 0;
/// The operation completed: unpack the copies into the sections written to.
pub(crate) const END: c_int = 1;
/// Nothing will use the copies again: release them.
pub(crate) const FREE: c_int = 2;

/// `void hook(void *state, int phase)`, C's convention.
pub(crate) type HookFn = unsafe extern "C" fn(state: *mut c_void, phase: c_int);

/// A callback and the state it was given.
#[derive(Clone, Copy)]
pub(crate) struct Hook {
    f: HookFn,
    /// The Fortran library's state, kept as a number (it owns it).
    state: usize,
}

impl Hook {
    pub(crate) fn run(self, phase: c_int) {
        // SAFETY: the Fortran library gave this function and its state together, for these
        // three phases; the state lives until FREE.
        unsafe { (self.f)(self.state as *mut c_void, phase) }
    }
}

/// An operation whose completion runs a hook ([`END`], and [`FREE`] unless it is an instance of
/// a persistent request, whose copies serve the next start).
pub(crate) struct Hooked {
    pub inner: Req,
    hook: Hook,
    persistent: bool,
}

impl Hooked {
    pub(crate) fn request(inner: Req, hook: Hook, persistent: bool) -> Req {
        Req::Hooked(Box::new(Hooked { inner, hook, persistent }))
    }

    /// Completes the operation with `finish` (which waits for it), then runs the hook.
    pub(crate) fn finish<T>(self, finish: impl FnOnce(Req) -> T) -> T {
        let Hooked { inner, hook, persistent } = self;
        let out = finish(inner);
        Hooked { inner: Req::Complete(MPI_Status::default()), hook, persistent }.ended();
        out
    }

    /// The operation (still in place) completed.
    pub(crate) fn ended(&self) {
        self.hook.run(END);
        if !self.persistent {
            self.hook.run(FREE);
        }
    }
}

/// Attaches `hook` to request `h`: a persistent request runs it at each start and completion;
/// an operation in flight at its completion; one already complete (a send that ended as it
/// started, the null request) runs [`END`] and [`FREE`] now.
fn attach(m: &mut Mpi, h: MPI_Request, hook: Hook) -> Res {
    if h == MPI_REQUEST_NULL || h == state::SENT {
        hook.run(END);
        hook.run(FREE);
        return Ok(());
    }
    let req = m.request_mut(h).ok_or_else(|| crate::request::invalid_request(h))?;
    match req {
        Req::Persistent { op, active: None } => op.set_hook(hook),
        Req::Persistent { .. } | Req::Hooked(_) => {
            Err(err(MPI_ERR_REQUEST, format!("bb_request_hook: request {h:#x} is active or already has a hook")))
        }
        other => {
            let inner = std::mem::replace(other, Req::Complete(MPI_Status::default()));
            *other = Hooked::request(inner, hook, false);
            Ok(())
        }
    }
}

/// Billboard's Fortran library attaches `hook` (with `state`) to `request` (see the module's
/// comment); MPI_ERR_REQUEST if the handle names no request, MPI_ERR_ARG for a null hook.
#[no_mangle]
pub unsafe extern "C" fn bb_request_hook(request: MPI_Request, hook: Option<HookFn>, state: *mut c_void) -> c_int {
    call("bb_request_hook", MPI_COMM_WORLD, |m| {
        let f = hook.ok_or_else(|| err(MPI_ERR_ARG, "bb_request_hook: null hook"))?;
        attach(m, request, Hook { f, state: state as usize })
    })
}

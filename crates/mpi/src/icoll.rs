//! Nonblocking collectives: how their requests complete.
//!
//! All but MPI_Ialltoallw are schedules the engine moves on in every call of the process
//! ([`billboard::Collective`], started in `coll.rs`): no thread, no new communicator, about the
//! cost of the blocking form.
//!
//! MPI_Ialltoallw runs its blocking form in the background, on a library thread, over a
//! duplicate of the communicator that the thread makes first
//! ([`billboard::Communicator::with_background_dup`]). So the call returns at once, even before
//! the other members have made theirs; the operation cannot take the messages of a blocking
//! collective, or of another nonblocking one, on the same communicator; and its errors come
//! back through the request, to the communicator's error handler. While such a thread runs,
//! every call takes the tables' lock ([`state::begin_background`]), since the thread uses them
//! too. That costs a thread and a context agreement per operation: correct and overlapping,
//! not fast.
//!
//! Which way a function goes depends on the function alone, never on its arguments: every
//! member must take the same way, since the two use different tags.

use std::ffi::{c_int, c_void};

use billboard::{Background, Collective};

use crate::abi::*;
use crate::error::{call_unlocked, out, returned, Res};
use crate::state::{self, Req};

/// A nonblocking collective in flight, as the request table holds it.
pub(crate) trait BackgroundOp {
    fn is_done(&self) -> bool;
    /// Waits for the operation (at once if [`BackgroundOp::is_done`]).
    fn wait(self: Box<Self>) -> Res<()>;
}

/// A schedule in flight, and what is left to do when it ends (see [`crate::coll::Started`]).
pub(crate) struct Scheduled {
    coll: Collective,
    done: Option<Box<dyn FnOnce()>>,
}

impl Scheduled {
    pub(crate) fn new(coll: Collective, done: Option<Box<dyn FnOnce()>>) -> Box<Scheduled> {
        Box::new(Scheduled { coll, done })
    }
}

impl BackgroundOp for Scheduled {
    fn is_done(&self) -> bool {
        self.coll.test()
    }
    fn wait(self: Box<Self>) -> Res<()> {
        let Scheduled { coll, done } = *self;
        coll.wait()?;
        if let Some(done) = done {
            done();
        }
        Ok(())
    }
}

/// A blocking collective running on a library thread that uses the tables; ends the tables'
/// lock-for-everyone once the thread is joined, however that happens.
struct OnThread(Option<Background<Res<()>>>);

impl BackgroundOp for OnThread {
    fn is_done(&self) -> bool {
        self.0.as_ref().is_none_or(Background::is_done)
    }
    fn wait(mut self: Box<Self>) -> Res<()> {
        self.0.take().expect("waited once").wait()?
    }
}

impl Drop for OnThread {
    fn drop(&mut self) {
        drop(self.0.take()); // joins the thread, if no wait did
        state::end_background();
    }
}

/// The arguments of a call, handed to the library thread. MPI forbids the program to touch
/// the buffers and arrays they point to until the request completes.
struct Args<T>(T);
// SAFETY: see above; the pointers are only used by the thread, while the operation runs.
unsafe impl<T> Send for Args<T> {}

impl<T> Args<T> {
    /// Unwraps them on the thread (a method, so that the closure moves `Args` whole).
    fn take(self) -> T {
        self.0
    }
}

/// Starts `blocking(duplicate of comm)` in the background and stores its request.
unsafe fn start(
    function: &'static str,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    blocking: impl FnOnce(MPI_Comm) -> c_int + Send + 'static,
) -> c_int {
    call_unlocked(function, comm, || {
        let request = out(request, "request")?;
        let (c, _) = crate::comm_create::take(comm)?;
        state::begin_background();
        let run = move |dup: billboard::Communicator| -> Res<()> {
            let h = state::with(|m| {
                let h = m.add_comm(dup);
                m.comm_mut(h).expect("just added").errhandler = MPI_ERRORS_RETURN;
                h
            })
            .expect("MPI is running");
            let rc = blocking(h);
            state::with(|m| m.remove_comm(h));
            if rc == MPI_SUCCESS {
                Ok(())
            } else {
                Err(returned(rc))
            }
        };
        let op = match c.with_background_dup("billboard-icoll", run) {
            Ok(op) => OnThread(Some(op)),
            Err(e) => {
                state::end_background();
                return Err(e.into());
            }
        };
        let req = Req::Background { op: Box::new(op), comm };
        *request = state::with(|m| m.add_request(req)).expect("MPI is running");
        Ok(())
    })
}

/// `$iname(args..., comm, request)` runs `$blocking(args..., comm)` in the background.
macro_rules! nonblocking {
    ($iname:ident, $label:literal, $blocking:path, ($($arg:ident: $ty:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $iname($($arg: $ty,)* comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            let args = Args(($($arg,)*));
            start($label, comm, request, move |dup| {
                let ($($arg,)*) = args.take();
                $blocking($($arg,)* dup)
            })
        }
    };
}

use crate::coll::*;

nonblocking!(PMPI_Ialltoallw, "MPI_Ialltoallw", PMPI_Alltoallw, (
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype
));

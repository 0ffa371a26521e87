//! Active messages in the native API: register a handler under an id on a communicator, send
//! it a short header and a payload from any rank; it runs at its rank inside progress (any
//! call that waits, or [`Communicator::progress`]) and may answer with active messages of its
//! own. The engine's `active.rs` says how they travel and in what order they arrive.

use super::comm::Communicator;
use super::datatype::Buffer;
use super::request::Request;
use crate::engine::active::check_header;
use crate::engine::ActiveHandler;
use crate::{Error, Result};

impl Communicator {
    /// Runs `handler` at this rank for every active message sent to `id` on this
    /// communicator. Messages that came for `id` before it was registered are handed over, in
    /// order, in the next round of progress. An id is registered at most once per
    /// communicator.
    pub fn register_handler(&self, id: u16, handler: impl ActiveHandler + 'static) -> Result<()> {
        self.check_active(id)?;
        let world: Box<[usize]> = (0..self.size()).map(|r| self.world_rank(r)).collect();
        self.engine().lock().register_active(self.context_id(), id, world, self.rank(), Box::new(handler))
    }

    /// Takes handler `id` out and hands it back (with whatever state it kept); messages for
    /// `id` are kept from now on until a handler is registered again.
    pub fn unregister_handler(&self, id: u16) -> Result<Box<dyn ActiveHandler>> {
        self.engine().lock().unregister_active(self.context_id(), id).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "no active-message handler {id} is registered on communicator context {} (rank {})",
                self.context_id(),
                self.rank()
            ))
        })
    }

    /// Sends `header` (at most [`HEADER_MAX`](crate::engine::HEADER_MAX) bytes) and `payload`
    /// to handler `id` at rank `dest`. The request completes when both buffers may be reused:
    /// at once for an eager size, after the target has taken a large payload (by the route's
    /// rendezvous protocol) otherwise. Messages from one rank to another on one communicator
    /// are handled in the order sent.
    pub fn send_active<'a, B: Buffer + ?Sized>(
        &self,
        dest: usize,
        id: u16,
        header: &'a [u8],
        payload: &'a B,
    ) -> Result<Request<'a>> {
        self.check_active(id)?;
        check_header(id, header)?;
        let peer = self.checked_peer(dest)?;
        let rank = self.rank() as u32;
        // SAFETY: the request borrows both buffers until it completes.
        let sent =
            unsafe { self.engine().lock().send_active(peer, self.context_id(), rank, id, header, payload.as_bytes()) };
        Ok(Request::new(self.engine(), sent))
    }

    /// [`Communicator::send_active`] of `len` bytes at `payload` and no header, for language
    /// bindings (the MPI library's windows).
    ///
    /// # Safety
    /// `payload..payload+len` stays valid and unchanged until the request completes.
    pub unsafe fn send_active_raw(
        &self,
        dest: usize,
        id: u16,
        payload: *const u8,
        len: usize,
    ) -> Result<Request<'static>> {
        self.check_active(id)?;
        let peer = self.checked_peer(dest)?;
        let rank = self.rank() as u32;
        let payload = if len == 0 { &[][..] } else { std::slice::from_raw_parts(payload, len) };
        let sent = self.engine().lock().send_active(peer, self.context_id(), rank, id, &[], payload);
        Ok(Request::new(self.engine(), sent))
    }

    /// One round of progress: polls for arrivals, runs handlers, pushes sends. Returns whether
    /// anything happened.
    pub fn progress(&self) -> bool {
        self.engine().lock().progress(None)
    }

    /// One round of progress, and if it moved nothing, a sleep of at most `timeout` that the
    /// next message for this rank ends: for waits on conditions of their own (a lock word in
    /// shared memory) that must still serve handlers at once. Returns whether anything happened.
    pub fn nap(&self, timeout: std::time::Duration) -> bool {
        self.engine().nap(timeout)
    }

    /// Starts a thread that runs this process's progress until the returned handle is
    /// dropped (`engine/progress_thread.rs`): handlers answer while the program computes.
    pub fn start_progress_thread(&self) -> Result<crate::engine::progress_thread::ProgressThread> {
        crate::engine::progress_thread::ProgressThread::start(self.engine())
    }

    /// Active messages run on intracommunicators: a handler's answer names a rank of its own
    /// group.
    fn check_active(&self, id: u16) -> Result<()> {
        if self.is_inter() {
            return Err(Error::InvalidArgument(format!(
                "active-message handler {id}: intercommunicators have no active messages (use an intracommunicator)"
            )));
        }
        Ok(())
    }
}

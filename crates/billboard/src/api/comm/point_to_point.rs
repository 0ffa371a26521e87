//! Point-to-point on a communicator: sends, receives (blocking, started, of blocks, of a
//! message taken by a matched probe), probes, and the checks of ranks and tags they share.

use super::{Communicator, SendMode, Source, TagMatch};
use crate::api::datatype::{Buffer, BufferMut};
use crate::api::request::{Request, Status};
use crate::engine::matching::{Envelope, Pattern};
use crate::engine::request::Completion;
use crate::engine::Pending;
use crate::{Error, Result, TAG_UB};

impl Communicator {
    #[inline]
    pub(crate) fn check_tag(tag: i32) -> Result<()> {
        if !(0..=TAG_UB).contains(&tag) {
            return Err(Error::InvalidTag { tag });
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn pattern(&self, context: u32, src: Source, tag: TagMatch) -> Result<(Pattern, Option<usize>)> {
        let (source, hint) = match src {
            Source::Any => (None, None),
            Source::Rank(r) => (Some(r as u32), Some(self.checked_peer(r)?)),
        };
        let tag = match tag {
            TagMatch::Any => None,
            TagMatch::Tag(t) => {
                Self::check_tag(t)?;
                Some(t)
            }
        };
        Ok((Pattern { context, source, tag }, hint))
    }

    /// Sends `buf` to `dest` with `tag`; returns when `buf` may be reused.
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B, dest: usize, tag: i32) -> Result<()> {
        Self::check_tag(tag)?;
        self.send_on(self.inner.context, buf.as_bytes(), dest, tag, SendMode::Standard)
    }

    /// Sends `buf` and returns only once the receiver has matched it (MPI_Ssend).
    pub fn ssend<B: Buffer + ?Sized>(&self, buf: &B, dest: usize, tag: i32) -> Result<()> {
        Self::check_tag(tag)?;
        self.send_on(self.inner.context, buf.as_bytes(), dest, tag, SendMode::Synchronous)
    }

    // Always, with `Engine::isend`: a blocking send's eager path is one body in MPI_Send
    // (callgrind, bench/peers/path_cost: left to the compiler's cost model, which moved when
    // the engine grew its active-message services, it went out of line: +30 instructions).
    #[inline(always)]
    pub(crate) fn send_on(&self, context: u32, data: &[u8], dest: usize, tag: i32, mode: SendMode) -> Result<()> {
        let peer = self.checked_peer(dest)?;
        let synchronous = mode == SendMode::Synchronous;
        let rank = self.inner.rank as u32;
        // SAFETY: `data` is borrowed for the whole call, which waits for completion.
        let id =
            unsafe { self.inner.engine.lock().isend(peer, context, rank, tag, data.as_ptr(), data.len(), synchronous) };
        match id {
            None => Ok(()),
            Some(id) => self.inner.engine.wait(id).map(drop),
        }
    }

    /// Receives into `buf` a message from `src` (a rank or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    pub fn recv<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        src: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Status> {
        self.recv_on(self.inner.context, buf.as_bytes_mut(), src.into(), tag.into())
    }

    #[inline]
    pub(crate) fn recv_on(&self, context: u32, data: &mut [u8], src: Source, tag: TagMatch) -> Result<Status> {
        let (pattern, hint) = self.pattern(context, src, tag)?;
        // SAFETY: `data` is borrowed mutably for the whole call, which waits for completion.
        unsafe { self.inner.engine.recv(pattern, hint, data.as_mut_ptr(), data.len()) }.map(Status::new)
    }

    /// Starts a send; the request borrows `buf`. [`Scope::isend`](crate::Scope::isend) is
    /// the safe form.
    ///
    /// # Safety
    /// The request is finished (waited for, tested to completion, or dropped) before the
    /// borrow of `buf` ends: never leaked (`mem::forget`, a reference cycle), which would end
    /// the borrow while the engine still reads `buf` (see the `scope` module).
    pub unsafe fn isend<'a, B: Buffer + ?Sized>(&self, buf: &'a B, dest: usize, tag: i32) -> Result<Request<'a>> {
        let data = buf.as_bytes();
        // SAFETY: the request borrows `buf` for 'a and the caller finishes it within 'a.
        unsafe { self.isend_raw(data.as_ptr(), data.len(), dest, tag, SendMode::Standard) }
    }

    /// Starts a synchronous send: it completes once the receiver has matched it (MPI_Issend).
    /// [`Scope::issend`](crate::Scope::issend) is the safe form.
    ///
    /// # Safety
    /// As for [`Communicator::isend`].
    pub unsafe fn issend<'a, B: Buffer + ?Sized>(&self, buf: &'a B, dest: usize, tag: i32) -> Result<Request<'a>> {
        let data = buf.as_bytes();
        // SAFETY: as for `isend`.
        unsafe { self.isend_raw(data.as_ptr(), data.len(), dest, tag, SendMode::Synchronous) }
    }

    /// Starts a receive; the request borrows `buf`. [`Scope::irecv`](crate::Scope::irecv) is
    /// the safe form.
    ///
    /// # Safety
    /// As for [`Communicator::isend`]: a leaked request would let the engine write into `buf`
    /// after its borrow ended.
    pub unsafe fn irecv<'a, B: BufferMut + ?Sized>(
        &self,
        buf: &'a mut B,
        src: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Request<'a>> {
        let data = buf.as_bytes_mut();
        // SAFETY: the request borrows `buf` mutably for 'a and the caller finishes it within 'a.
        unsafe { self.irecv_raw(data.as_mut_ptr(), data.len(), src.into(), tag.into()) }
    }

    /// Sends `len` bytes at `buf` and returns when the buffer may be reused: the blocking
    /// form of [`Communicator::isend_raw`], with no request object on the way.
    ///
    /// # Safety
    /// `buf..buf+len` is valid for reads for the duration of the call.
    #[inline]
    pub unsafe fn send_raw(&self, buf: *const u8, len: usize, dest: usize, tag: i32, mode: SendMode) -> Result<()> {
        Self::check_tag(tag)?;
        self.send_on(self.inner.context, std::slice::from_raw_parts(buf, len), dest, tag, mode)
    }

    /// Receives into `cap` bytes at `buf`: the blocking form of [`Communicator::irecv_raw`].
    ///
    /// # Safety
    /// `buf..buf+cap` is valid for writes for the duration of the call.
    #[inline]
    pub unsafe fn recv_raw(&self, buf: *mut u8, cap: usize, src: Source, tag: TagMatch) -> Result<Status> {
        self.recv_on(self.inner.context, std::slice::from_raw_parts_mut(buf, cap), src, tag)
    }

    /// Starts a send of `len` bytes at `buf`, for language bindings that manage buffer
    /// lifetimes themselves (the MPI library).
    ///
    /// # Safety
    /// `buf..buf+len` stays valid and unchanged until the request completes.
    pub unsafe fn isend_raw<'a>(
        &self,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        mode: SendMode,
    ) -> Result<Request<'a>> {
        Self::check_tag(tag)?;
        self.isend_on(self.inner.context, buf, len, dest, tag, mode, 0)
    }

    /// Starts a send of several pieces of memory, in order, as one message (a non-contiguous
    /// datatype): they go out without being packed into an intermediate buffer. The receiver
    /// sees the message their concatenation makes, however it receives it.
    ///
    /// # Safety
    /// Every block stays valid and unchanged until the request completes (blocks are only read).
    pub unsafe fn isend_blocks_raw<'a>(
        &self,
        blocks: Box<[crate::engine::scatter::Block]>,
        dest: usize,
        tag: i32,
        mode: SendMode,
    ) -> Result<Request<'a>> {
        Self::check_tag(tag)?;
        let peer = self.checked_peer(dest)?;
        if u32::try_from(blocks.len()).is_err() {
            return Err(Error::InvalidArgument(format!("{} blocks in one message: at most 2^32 - 1", blocks.len())));
        }
        let synchronous = mode == SendMode::Synchronous;
        let rank = self.inner.rank as u32;
        let id = self.inner.engine.lock().isend_blocks(peer, self.inner.context, rank, tag, blocks, synchronous);
        Ok(Request::new(&self.inner.engine, id))
    }

    /// [`Communicator::isend_raw`] on any of this communicator's contexts, started by `scope`
    /// (0: by none; see `scope.rs`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn isend_on<'a>(
        &self,
        context: u32,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        mode: SendMode,
        scope: u32,
    ) -> Result<Request<'a>> {
        let peer = self.checked_peer(dest)?;
        let synchronous = mode == SendMode::Synchronous;
        let rank = self.inner.rank as u32;
        let mut engine = self.inner.engine.lock();
        let id = engine.isend(peer, context, rank, tag, buf, len, synchronous);
        if let (Some(id), true) = (id, scope != 0) {
            engine.set_scope(id, scope);
        }
        drop(engine);
        Ok(Request::new(&self.inner.engine, id))
    }

    /// Starts a receive into `cap` bytes at `buf`, for language bindings.
    ///
    /// # Safety
    /// `buf..buf+cap` stays valid and is not otherwise accessed until the request completes.
    pub unsafe fn irecv_raw<'a>(&self, buf: *mut u8, cap: usize, src: Source, tag: TagMatch) -> Result<Request<'a>> {
        self.irecv_on(self.inner.context, buf, cap, src, tag, 0)
    }

    /// Takes back an operation let go by [`Request::into_raw`]; `None` if `id` is no operation
    /// in flight (finished, or never issued).
    ///
    /// # Safety
    /// `id` came from `into_raw` on a request of this communicator's universe, no other
    /// request holds it, and the buffers it was started on stay valid until it completes.
    #[inline]
    pub unsafe fn adopt_request(&self, id: u32) -> Option<Request<'static>> {
        self.request_in_flight(id).then(|| Request::new(&self.inner.engine, Some(id)))
    }

    /// Starts a receive into several pieces of memory, filled in order (a non-contiguous
    /// datatype): the message goes straight into them, with no intermediate buffer.
    ///
    /// # Safety
    /// Every block stays valid and is not otherwise accessed until the request completes.
    pub unsafe fn irecv_blocks_raw<'a>(
        &self,
        blocks: Box<[crate::engine::scatter::Block]>,
        src: Source,
        tag: TagMatch,
    ) -> Result<Request<'a>> {
        let (pattern, hint) = self.pattern(self.inner.context, src, tag)?;
        let id = self.inner.engine.lock().irecv_blocks(pattern, hint, blocks);
        Ok(Request::new(&self.inner.engine, Some(id)))
    }

    /// [`Communicator::irecv_raw`] on any of this communicator's contexts, started by `scope`
    /// (0: by none).
    #[inline(always)]
    pub(crate) unsafe fn irecv_on<'a>(
        &self,
        context: u32,
        buf: *mut u8,
        cap: usize,
        src: Source,
        tag: TagMatch,
        scope: u32,
    ) -> Result<Request<'a>> {
        let (pattern, hint) = self.pattern(context, src, tag)?;
        let mut engine = self.inner.engine.lock();
        let id = engine.irecv(pattern, hint, buf, cap);
        if scope != 0 {
            engine.set_scope(id, scope);
        }
        drop(engine);
        Ok(Request::new(&self.inner.engine, Some(id)))
    }

    /// Sends and receives at once (no deadlock when two ranks exchange).
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv<S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        dest: usize,
        send_tag: i32,
        recv: &mut R,
        src: impl Into<Source>,
        recv_tag: impl Into<TagMatch>,
    ) -> Result<Status> {
        // SAFETY: the request is waited for below, or dropped (which waits) if the send panics.
        let r = unsafe { self.irecv(recv, src, recv_tag) }?;
        let sent = self.send(send, dest, send_tag);
        let received = r.wait();
        sent?;
        received
    }

    /// Waits until a matching message is available; its status (without receiving it).
    pub fn probe(&self, src: impl Into<Source>, tag: impl Into<TagMatch>) -> Result<Status> {
        let (pattern, hint) = self.pattern(self.inner.context, src.into(), tag.into())?;
        let engine = self.inner.engine.wait_until(hint, |e| e.peek(&pattern).is_some());
        let (env, bytes) = engine.peek(&pattern).expect("wait_until saw it");
        Ok(probe_status(env.source, env.tag, bytes))
    }

    /// A matching message's status if one is available now.
    pub fn iprobe(&self, src: impl Into<Source>, tag: impl Into<TagMatch>) -> Result<Option<Status>> {
        let (pattern, _) = self.pattern(self.inner.context, src.into(), tag.into())?;
        let found = self.inner.engine.lock().iprobe(&pattern);
        Ok(found.map(|(env, bytes)| probe_status(env.source, env.tag, bytes)))
    }

    /// Takes a matching message out of matching if one is available now, so that only the
    /// returned [`Message`] can receive it (MPI_Improbe; safe with several threads probing).
    pub fn improbe(&self, src: impl Into<Source>, tag: impl Into<TagMatch>) -> Result<Option<Message>> {
        let (pattern, _) = self.pattern(self.inner.context, src.into(), tag.into())?;
        let taken = self.inner.engine.lock().take(&pattern);
        Ok(taken.map(|(env, msg)| Message { comm: self.clone(), env, msg }))
    }

    /// Waits for a matching message and takes it out of matching (MPI_Mprobe).
    pub fn mprobe(&self, src: impl Into<Source>, tag: impl Into<TagMatch>) -> Result<Message> {
        let (src, tag) = (src.into(), tag.into());
        let (pattern, hint) = self.pattern(self.inner.context, src, tag)?;
        let (env, msg) =
            self.inner.engine.wait_until(hint, |e| e.peek(&pattern).is_some()).take(&pattern).expect("seen");
        Ok(Message { comm: self.clone(), env, msg })
    }
}

/// A message taken out of matching by [`Communicator::mprobe`]; receive it with [`Message::recv`].
pub struct Message {
    comm: Communicator,
    env: Envelope,
    msg: Pending,
}

impl Message {
    /// Source, tag and size of the message.
    pub fn status(&self) -> Status {
        probe_status(self.env.source, self.env.tag, self.msg.bytes())
    }

    /// Receives this message into `buf`.
    pub fn recv<B: BufferMut + ?Sized>(self, buf: &mut B) -> Result<Status> {
        let data = buf.as_bytes_mut();
        // SAFETY: `data` is borrowed mutably for the whole call, which waits for completion.
        unsafe { self.irecv_raw(data.as_mut_ptr(), data.len()) }?.wait()
    }

    /// Starts receiving this message into `cap` bytes at `buf` (MPI_Imrecv), for bindings.
    ///
    /// # Safety
    /// As for [`Communicator::irecv_raw`].
    pub unsafe fn irecv_raw<'a>(self, buf: *mut u8, cap: usize) -> Result<Request<'a>> {
        let engine = &self.comm.inner.engine;
        let id = engine.lock().irecv_taken(self.env, self.msg, buf, cap);
        Ok(Request::new(engine, Some(id)))
    }
}

fn probe_status(source: u32, tag: i32, bytes: usize) -> Status {
    Status::new(Completion { source, tag, bytes, cancelled: false })
}

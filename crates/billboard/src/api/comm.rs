//! Communicators: a group of ranks and a context of their own; point-to-point and barrier.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::context::{self, ContextPool};
use super::datatype::{Buffer, BufferMut};
use super::request::{Request, Status};
use crate::coll::board::{Board, BoardChoices, BoardPool};
use crate::coll::hier_board::HostComms;
use crate::engine::matching::{Envelope, Pattern};
use crate::engine::request::Completion;
use crate::engine::{EngineRef, Helper, Pending};
use crate::{Error, Result, TAG_UB};

/// Which sender a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Any,
    Rank(usize),
}

/// Accept a message from any sender (MPI_ANY_SOURCE).
pub const ANY_SOURCE: Source = Source::Any;

impl From<usize> for Source {
    fn from(r: usize) -> Source {
        Source::Rank(r)
    }
}

/// Which tag a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagMatch {
    Any,
    Tag(i32),
}

/// Accept any tag (MPI_ANY_TAG).
pub const ANY_TAG: TagMatch = TagMatch::Any;

impl From<i32> for TagMatch {
    fn from(t: i32) -> TagMatch {
        TagMatch::Tag(t)
    }
}

/// How a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// As soon as the buffer may be reused (MPI_Send).
    Standard,
    /// Only once the receiver has matched the message (MPI_Ssend).
    Synchronous,
}

/// Context of [`Communicator::solo`] (and +1 for its collectives); the world has 0 and 1.
const SOLO_CONTEXT: u32 = 2;
/// First context `dup` and `split` may hand out.
pub(crate) const FIRST_FREE_CONTEXT: u32 = 4;

/// Tags the library uses on a communicator's collective context.
const TAG_BARRIER: i32 = 1;
const TAG_AGREE: i32 = 2;
/// The rounds of a context agreement by `dup` and `split` (see `context.rs`).
const TAG_CONTEXT: i32 = 3;
/// `subset` uses this plus the caller's tag (above every collective's tag).
const TAG_SUBSET: i32 = 1 << 16;
/// Operations that run in the background or as schedules ([`Communicator::idup`],
/// [`Communicator::ibarrier`], ...) each get a tag of their own: number `n` of a kind on a
/// communicator uses `base + n % SPAN`, so it never takes the messages of a blocking
/// collective or of another such operation running at the same time (up to `SPAN` of a kind
/// in flight on one communicator).
const TAG_IDUP: i32 = 1 << 14;
const TAG_NONBLOCKING: i32 = 2 << 14;
pub(super) const BACKGROUND_SPAN: u32 = 1 << 14;
/// The kinds of such operation, as indices of `Inner::started`: duplicates (idup and
/// `with_background_dup`), the nonblocking collectives written as schedules, and ULFM's
/// agreements (MPIX_Comm_agree and _iagree: `recover.rs`), which count apart so that an
/// agreement never takes its turn from a collective another member started in another order.
const DUPS: usize = 0;
const NONBLOCKING: usize = 1;
pub(super) const AGREES: usize = 2;
/// Tags of intercommunicator work: the collectives' schedules on an intercommunicator and its
/// hidden local communicator (`base + n % SPAN`, as above), and the context agreements of
/// intercommunicator creations on the world's collective context (see `intercomm.rs`).
pub(super) const TAG_INTER: i32 = 3 << 14;

/// A collective operation going on in the background ([`Communicator::idup`],
/// [`Communicator::with_background_dup`]). Dropping it waits for it to end (the other members are
/// counting on this one).
pub struct Background<T>(Helper<Result<T>>);

impl<T> Background<T> {
    /// Whether the operation has ended: [`Background::wait`] then returns at once.
    pub fn is_done(&self) -> bool {
        self.0.is_finished()
    }

    /// Waits for the operation's result.
    pub fn wait(self) -> Result<T> {
        self.0.join()
    }
}

/// A group of ranks with its own contexts: point-to-point traffic on `context`, the library's
/// collective traffic on `context + 1`, so neither can match the other.
#[derive(Clone)]
pub struct Communicator {
    inner: Arc<Inner>,
}

struct Inner {
    engine: EngineRef,
    /// This process's free context ids, shared by all its communicators.
    contexts: Arc<ContextPool>,
    context: u32,
    rank: usize,
    size: usize,
    /// World rank of each member; `None` for the world itself.
    members: Option<Vec<usize>>,
    /// On an intercommunicator, the other group: point-to-point names its ranks.
    remote: Option<super::intercomm::Remote>,
    /// Background operations started on this communicator, by kind ([`DUPS`], [`NONBLOCKING`],
    /// [`AGREES`]; every member starts those of a kind in the same order).
    started: [AtomicU32; 3],
    /// Whether every member runs on this host (one billboard holds them all), once asked.
    one_host: std::sync::OnceLock<bool>,
    /// Collective algorithm choices already reported under `BB_VERBOSE` (one bit each: 8 per
    /// collective, more collectives than one word holds).
    reported: [AtomicU64; 2],
    /// Processes of other jobs this communicator may reach, held for it and every communicator
    /// made from it: the last one to go closes their connections (MPI_Comm_disconnect).
    joined: Vec<Arc<super::dynamic::JoinedPeers>>,
    /// This process's board slots, shared by all its communicators (`coll/board.rs`).
    boards: Arc<BoardPool>,
    /// The board slot of this communicator, once its first board collective agreed on one.
    board: std::sync::OnceLock<Option<Board>>,
    /// Nonblocking collectives started that could run on the board (`coll/board_steps.rs`):
    /// the turn of the next one.
    nonblocking_turns: AtomicU64,
    /// Which collectives run on the board, and how, once asked (`coll/board.rs`).
    board_choices: BoardChoices,
    /// On several hosts, each host's members and the hosts' leaders, once a hierarchical
    /// collective made them (`coll/hier_board.rs`).
    host_comms: std::sync::OnceLock<Option<HostComms>>,
}

impl Drop for Inner {
    /// The last handle of a communicator is gone (MPI_Comm_free, or the end of a Rust scope):
    /// its context id goes back to the pool (once no receive is posted on it any more), unless
    /// it was revoked: a revoked id stays out of use, so that no later communicator is born
    /// revoked (`engine/revoke.rs`).
    fn drop(&mut self) {
        if self.context >= FIRST_FREE_CONTEXT {
            self.engine.lock().unhold(self.context, self as *const Inner as u64);
        }
        let revoked = self.engine.is_revoked(self.context);
        if self.context >= FIRST_FREE_CONTEXT && !revoked {
            self.contexts.retire(self.context);
        }
        if let Some(Some(board)) = self.board.get() {
            board.release(&self.boards, revoked);
        }
    }
}

impl Communicator {
    pub(crate) fn world(engine: EngineRef, rank: usize, size: usize) -> Communicator {
        let contexts = Arc::new(ContextPool::new());
        Communicator {
            inner: Arc::new(Inner {
                engine,
                contexts,
                context: 0,
                rank,
                size,
                members: None,
                remote: None,
                started: Default::default(),
                one_host: std::sync::OnceLock::new(),
                reported: Default::default(),
                joined: Vec::new(),
                boards: Arc::new(BoardPool::default()),
                board: std::sync::OnceLock::new(),
                nonblocking_turns: AtomicU64::new(0),
                board_choices: BoardChoices::default(),
                host_comms: std::sync::OnceLock::new(),
            }),
        }
    }

    /// A communicator of this process alone (MPI_COMM_SELF). Local: its context is reserved
    /// for it, so no agreement with other ranks is needed.
    pub fn solo(&self) -> Communicator {
        let me = self.world_rank(self.inner.rank);
        let inner = Inner {
            engine: self.inner.engine.clone(),
            contexts: self.inner.contexts.clone(),
            context: SOLO_CONTEXT,
            rank: 0,
            size: 1,
            members: Some(vec![me]),
            remote: None,
            started: Default::default(),
            one_host: std::sync::OnceLock::new(),
            reported: Default::default(),
            joined: Vec::new(),
            boards: self.inner.boards.clone(),
            board: std::sync::OnceLock::new(),
            nonblocking_turns: AtomicU64::new(0),
            board_choices: BoardChoices::default(),
            host_comms: std::sync::OnceLock::new(),
        };
        Communicator { inner: Arc::new(inner) }
    }

    /// The context id of this communicator's point-to-point traffic (its collective traffic
    /// uses the next one). Ids of freed communicators are used again.
    pub fn context_id(&self) -> u32 {
        self.inner.context
    }

    /// Revokes this communicator (MPIX_Comm_revoke): every member's operations on it that wait
    /// fail with [`Error::Revoked`], here at once and at the others when the notice reaches
    /// them, and so does every later one (`engine/revoke.rs`). Not collective. On an
    /// intercommunicator, at the members of both groups.
    pub fn revoke(&self) -> Result<()> {
        let mut members = self.member_list();
        members.extend(self.remote().iter().flat_map(|r| r.members.iter().copied()));
        let me = self.world_rank(self.inner.rank);
        self.inner.engine.lock().revoke(self.inner.context, &members, me);
        Ok(())
    }

    /// Whether this communicator was revoked, here or by another member whose notice arrived.
    #[inline]
    pub fn is_revoked(&self) -> bool {
        self.inner.engine.is_revoked(self.inner.context)
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// Number of ranks in the communicator.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The job-wide (world) rank of member `rank`.
    #[inline]
    pub fn world_rank(&self, rank: usize) -> usize {
        match &self.inner.members {
            Some(m) => m[rank],
            None => rank,
        }
    }

    /// Tells the library that this process never calls into it from two threads at once from
    /// now on (MPI_THREAD_SERIALIZED or below), so the engine skips its lock on every call.
    ///
    /// # Safety
    /// No two threads use any communicator or request of this process at the same time from
    /// now on, and each thread's calls happen-before the next thread's (e.g. through a mutex of
    /// the program's own). Call it while no other thread uses the library.
    pub unsafe fn assume_serialized(&self) {
        self.inner.engine.assume_serialized();
    }

    /// Tells the library that every request and collective started from now on ends (is
    /// waited for, or dropped) before the last handle of this process's engine (its universe
    /// and communicators) goes. They then hold the engine without a reference count, which
    /// saves two atomic operations per operation.
    ///
    /// # Safety
    /// As promised above: an operation that outlived the engine would use freed memory.
    pub unsafe fn assume_operations_end_first(&self) {
        self.inner.engine.assume_operations_end_first();
    }

    /// The host member `rank` runs on, as an index: members with equal values share a host (and
    /// its shared-memory billboard); the values mean nothing else. The engine learned them at
    /// start, so this costs no communication (hierarchical algorithms, MPI_COMM_TYPE_SHARED).
    pub fn host_of(&self, rank: usize) -> Result<usize> {
        let world = self.checked_world_rank(rank)?;
        Ok(self.inner.engine.nodes()[world])
    }

    /// Whether choice `bit` of a collective algorithm is reported for the first time on this
    /// communicator (`BB_VERBOSE` reports each once).
    pub(crate) fn first_report(&self, bit: u32) -> bool {
        let (word, bit) = (&self.inner.reported[bit as usize / 64], 1u64 << (bit % 64));
        word.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// What this process exchanged with each peer so far, by world rank (then the peers that
    /// joined later): the engine's counts, for every communicator alike.
    pub fn traffic(&self) -> Vec<crate::engine::traffic::Traffic> {
        self.inner.engine.traffic()
    }

    /// The system calls this process's waits made so far: yields of the core and the socket
    /// routes' receive calls (tests check what a message costs a rank sharing its core).
    pub fn wait_calls(&self) -> crate::engine::traffic::WaitCalls {
        self.inner.engine.wait_calls()
    }

    /// Messages of this process that arrived before their receive was posted, waiting now.
    pub fn unexpected_messages(&self) -> usize {
        self.inner.engine.unexpected_messages()
    }

    /// Whether ranks outnumber cores on this host (a setup fact: the tables of `select.rs`
    /// choose fewer rounds there, since each round may wait for a core). Every rank of a host
    /// must find it alike, since it decides which messages a collective exchanges: ranks count
    /// the cores their affinity allows, which launchers that bind (Hydra, Slurm, bbrun) give
    /// every rank alike; ranks bound to cpu sets of different sizes would disagree.
    pub(crate) fn crowded(&self) -> bool {
        self.inner.engine.crowded()
    }

    /// Whether every member runs on this rank's host, so one billboard holds them all (what
    /// every member finds alike: the engine learned every rank's host at start).
    pub(crate) fn on_one_host(&self) -> bool {
        *self.inner.one_host.get_or_init(|| {
            // Not through the engine's lock: a schedule being written holds it.
            let nodes = self.inner.engine.nodes();
            let here = nodes[self.world_rank(self.inner.rank)];
            (0..self.inner.size).all(|r| nodes[self.world_rank(r)] == here)
        })
    }

    /// The world rank of member `rank`, checked (the name says which rank comes out: taking it
    /// for a member's rank, and translating it again, indexed past the end on MPI_COMM_SELF).
    #[inline]
    pub(crate) fn checked_world_rank(&self, rank: usize) -> Result<usize> {
        if rank >= self.inner.size {
            return Err(Error::InvalidRank { rank, size: self.inner.size });
        }
        Ok(self.world_rank(rank))
    }

    /// The world rank of the process point-to-point rank `rank` names: a member, or on an
    /// intercommunicator a member of the remote group.
    #[inline]
    pub(crate) fn checked_peer(&self, rank: usize) -> Result<usize> {
        match &self.inner.remote {
            None => self.checked_world_rank(rank),
            Some(remote) => remote.world_rank(rank),
        }
    }

    /// The other group of an intercommunicator (`None` on an intracommunicator).
    #[inline]
    pub(crate) fn remote(&self) -> Option<&super::intercomm::Remote> {
        self.inner.remote.as_ref()
    }

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

    /// Returns once every rank of the communicator has called it (dissemination barrier:
    /// ceil(log2 n) rounds of zero-byte messages, Hensgen, Finkel and Manber 1988).
    /// Where the table chooses another algorithm (one post on one host, the hierarchy on
    /// several), the schedule of [`Communicator::ibarrier`], started and waited for; the
    /// hierarchy's host phases on the board where it applies (`coll/hier_board.rs`).
    pub fn barrier(&self) -> Result<()> {
        use crate::coll::select::{barrier_by, BarrierBy, Collective};
        if let Some((board, by)) = self.board_for(Collective::Barrier, 0, true)? {
            match by {
                "board-leader" => board.barrier_leader(self),
                _ => board.barrier(self),
            }
            return Ok(());
        }
        if self.is_inter() {
            return self.ibarrier()?.wait();
        }
        match barrier_by(self) {
            BarrierBy::Dissemination => {}
            BarrierBy::Hier => match self.hier_board(0)? {
                Some(hosts) => return hosts.barrier(),
                None => return self.ibarrier()?.wait(),
            },
            _ => return self.ibarrier()?.wait(),
        }
        let (n, me) = (self.inner.size, self.inner.rank);
        let mut dist = 1;
        while dist < n {
            let to = (me + dist) % n;
            let from = (me + n - dist) % n;
            self.send_on(self.inner.context + 1, &[], to, TAG_BARRIER, SendMode::Standard)?;
            self.recv_on(self.inner.context + 1, &mut [], Source::Rank(from), TagMatch::Tag(TAG_BARRIER))?;
            dist *= 2;
        }
        Ok(())
    }

    /// Every rank's two words, in rank order (for `split`; small n).
    pub(super) fn allgather_words(&self, mine: [u64; 2]) -> Result<Vec<[u64; 2]>> {
        let ctx = self.inner.context + 1;
        let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_ne_bytes()).collect();
        for r in (0..self.inner.size).filter(|&r| r != self.inner.rank) {
            self.send_on(ctx, &bytes, r, TAG_AGREE, SendMode::Standard)?;
        }
        let mut all = vec![[0u64; 2]; self.inner.size];
        all[self.inner.rank] = mine;
        for r in (0..self.inner.size).filter(|&r| r != self.inner.rank) {
            let mut buf = [0u8; 16];
            self.recv_on(ctx, &mut buf, Source::Rank(r), TagMatch::Tag(TAG_AGREE))?;
            for (i, w) in all[r].iter_mut().enumerate() {
                *w = u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
            }
        }
        Ok(all)
    }

    /// A context id free in every member (collective; see `context.rs`).
    fn new_context(&self) -> Result<u32> {
        let everyone: Vec<usize> = (0..self.inner.size).collect();
        context::agree(self, &everyone, self.inner.rank, TAG_CONTEXT)
    }

    /// A communicator of this process's engine and pool.
    pub(super) fn child(&self, context: u32, rank: usize, members: Option<Vec<usize>>) -> Communicator {
        self.inter_child(context, rank, members, None)
    }

    /// [`Communicator::child`] with a remote group: an intercommunicator.
    pub(super) fn inter_child(
        &self,
        context: u32,
        rank: usize,
        members: Option<Vec<usize>>,
        remote: Option<super::intercomm::Remote>,
    ) -> Communicator {
        let size = members.as_ref().map_or(self.inner.size, Vec::len);
        let inner = Inner {
            engine: self.inner.engine.clone(),
            contexts: self.inner.contexts.clone(),
            context,
            rank,
            size,
            members,
            remote,
            started: Default::default(),
            one_host: std::sync::OnceLock::new(),
            reported: Default::default(),
            joined: self.inner.joined.clone(),
            boards: self.inner.boards.clone(),
            board: std::sync::OnceLock::new(),
            nonblocking_turns: AtomicU64::new(0),
            board_choices: BoardChoices::default(),
            host_comms: std::sync::OnceLock::new(),
        };
        let comm = Communicator { inner: Arc::new(inner) };
        if context >= FIRST_FREE_CONTEXT {
            // Who may revoke it (`engine/revoke.rs`): its members, both groups of an
            // intercommunicator, whose hidden local communicator is revoked with it.
            let mut members = comm.member_list();
            let remote = comm.remote();
            members.extend(remote.iter().flat_map(|r| r.members.iter().copied()));
            let linked = remote.map(|r| r.local().context_id());
            let key = Arc::as_ptr(&comm.inner) as u64;
            self.inner.engine.lock().hold(context, members, linked, key);
        }
        comm
    }

    /// The world ranks of the members, in rank order.
    pub(super) fn member_list(&self) -> Vec<usize> {
        (0..self.inner.size).map(|r| self.world_rank(r)).collect()
    }

    /// A communicator with the same members and a context of its own (collective).
    pub fn dup(&self) -> Result<Communicator> {
        if self.is_inter() {
            return self.inter_dup(self.next_creation_turn());
        }
        let context = self.new_context()?;
        Ok(self.child(context, self.inner.rank, self.inner.members.clone()))
    }

    /// Starts a [`Communicator::dup`] that goes on in the background (MPI_Comm_idup): the
    /// caller may communicate meanwhile, even with members that have not started theirs yet.
    /// Collective: every member starts its `idup`s of this communicator in the same order.
    /// The agreement runs on a thread of the library's own; while it runs, the engine takes
    /// its lock on every call (see [`Communicator::assume_serialized`]).
    pub fn idup(&self) -> Result<Background<Communicator>> {
        self.with_background_dup("billboard-idup", |c| c)
    }

    /// Runs `work` in the background on a duplicate of this communicator made there too (see
    /// [`Communicator::idup`]): a nonblocking collective built from blocking steps, which then
    /// can take no message of a blocking collective, or of another such operation, running on
    /// this communicator at the same time. Collective, in the same order in every member.
    pub fn with_background_dup<T: Send + 'static>(
        &self,
        name: &str,
        work: impl FnOnce(Communicator) -> T + Send + 'static,
    ) -> Result<Background<T>> {
        self.background(DUPS, TAG_IDUP, name, |parent, tag| {
            if parent.is_inter() {
                return Ok(work(parent.inter_dup(tag)?));
            }
            let everyone: Vec<usize> = (0..parent.inner.size).collect();
            let context = context::agree(parent, &everyone, parent.inner.rank, tag)?;
            Ok(work(parent.child(context, parent.inner.rank, parent.inner.members.clone())))
        })
    }

    /// Runs `work(self, tag)` on a library thread, with the tag of its turn among the
    /// background operations of `kind` on this communicator.
    fn background<T: Send + 'static>(
        &self,
        kind: usize,
        base: i32,
        name: &str,
        work: impl FnOnce(&Communicator, i32) -> Result<T> + Send + 'static,
    ) -> Result<Background<T>> {
        let tag = self.next_tag(kind, base);
        let c = self.clone();
        Ok(Background(self.inner.engine.spawn_helper(name, move || work(&c, tag))?))
    }

    /// The tag of the next operation of `kind` on this communicator (see [`TAG_IDUP`]).
    pub(super) fn next_tag(&self, kind: usize, base: i32) -> i32 {
        let counter = &self.inner.started[kind];
        let n = if self.inner.engine.serialized() {
            // Calls never overlap: a plain increment, not a locked one (which would wait for
            // the stores of messages just posted).
            let n = counter.load(Ordering::Relaxed);
            counter.store(n.wrapping_add(1), Ordering::Relaxed);
            n
        } else {
            counter.fetch_add(1, Ordering::Relaxed)
        };
        base + (n % BACKGROUND_SPAN) as i32
    }

    /// The turn of the next creation from this communicator (dup, split, merge of an
    /// intercommunicator), the same in every member.
    pub(super) fn next_creation_turn(&self) -> i32 {
        self.next_tag(DUPS, 0)
    }

    /// This process's view of the whole job (MPI_COMM_WORLD's contexts), for agreements among
    /// any of its processes.
    pub(super) fn world_view(&self) -> Communicator {
        let size = self.inner.engine.lock().routes().nodes().len();
        let inner = Inner {
            engine: self.inner.engine.clone(),
            contexts: self.inner.contexts.clone(),
            context: 0,
            rank: self.world_rank(self.inner.rank),
            size,
            members: None,
            remote: None,
            started: Default::default(),
            one_host: std::sync::OnceLock::new(),
            reported: Default::default(),
            joined: self.inner.joined.clone(),
            boards: self.inner.boards.clone(),
            board: std::sync::OnceLock::new(),
            nonblocking_turns: AtomicU64::new(0),
            board_choices: BoardChoices::default(),
            host_comms: std::sync::OnceLock::new(),
        };
        Communicator { inner: Arc::new(inner) }
    }

    /// This new communicator (no other handle yet) also holds `peers` (see [`Inner::joined`]).
    pub(super) fn holding(mut self, peers: Arc<super::dynamic::JoinedPeers>) -> Communicator {
        Arc::get_mut(&mut self.inner).expect("a communicator just made has one handle").joined.push(peers);
        self
    }

    /// A view of the processes `union` (peer numbers of this process; this one is
    /// `union[me]`) on MPI_COMM_WORLD's contexts, ranked by position: for agreements among
    /// processes of several jobs, whose peer numbers differ from process to process while
    /// their positions in `union` are the same everywhere.
    pub(super) fn union_view(&self, union: Vec<usize>, me: usize) -> Communicator {
        self.inter_child(0, me, Some(union), None)
    }

    /// Whether every member of `union` belongs to this process's own job.
    pub(super) fn all_in_world(&self, union: &[usize]) -> bool {
        let world = self.inner.engine.world_size();
        union.iter().all(|&p| p < world)
    }

    /// The tag of the next nonblocking collective written as a schedule.
    pub(crate) fn next_nonblocking_tag(&self) -> i32 {
        self.next_tag(NONBLOCKING, TAG_NONBLOCKING)
    }

    /// The tag of the next intercommunicator collective (see [`TAG_INTER`]).
    pub(crate) fn next_inter_tag(&self) -> i32 {
        self.next_tag(NONBLOCKING, TAG_INTER)
    }

    /// Splits into one communicator per `color`, ranked by `key` then by old rank
    /// (collective). `None` as color: this rank joins none and gets `None`.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        if self.is_inter() {
            return self.inter_split(color, key, self.next_creation_turn());
        }
        let encoded_color = color.map_or(u64::MAX, u64::from);
        let agreed = self.allgather_words([encoded_color, key as i64 as u64])?;
        // One id for all colors: the new communicators are disjoint, so they may share it.
        let context = self.new_context()?;
        let Some(color) = color else {
            context::release(self, context);
            return Ok(None);
        };
        let mut members: Vec<(i64, usize)> = (0..self.inner.size)
            .filter(|&r| agreed[r][0] == u64::from(color))
            .map(|r| (agreed[r][1] as i64, r))
            .collect();
        members.sort();
        let rank = members.iter().position(|&(_, r)| r == self.inner.rank).expect("this rank has the color");
        let world: Vec<usize> = members.iter().map(|&(_, r)| self.world_rank(r)).collect();
        Ok(Some(self.child(context, rank, Some(world))))
    }

    /// A communicator of the ranks `ranks` (in that order), made by those ranks alone: only
    /// they call it (MPI_Comm_create_group). `tag` tells apart concurrent creations by
    /// overlapping groups. Returns `None` on a rank not in `ranks`.
    pub fn subset(&self, ranks: &[usize], tag: i32) -> Result<Option<Communicator>> {
        self.intra_only("creating a communicator from a subset")?;
        for (i, &r) in ranks.iter().enumerate() {
            self.checked_world_rank(r)?;
            if ranks[..i].contains(&r) {
                return Err(Error::InvalidArgument(format!("rank {r} appears twice in the subset")));
            }
        }
        let Some(rank) = ranks.iter().position(|&r| r == self.inner.rank) else { return Ok(None) };
        let tag = TAG_SUBSET.checked_add(tag.max(0)).filter(|t| *t <= TAG_UB).ok_or(Error::InvalidTag { tag })?;
        let context = context::agree(self, ranks, rank, tag)?;
        let world: Vec<usize> = ranks.iter().map(|&r| self.world_rank(r)).collect();
        Ok(Some(self.child(context, rank, Some(world))))
    }

    /// The engine this communicator's traffic goes through.
    pub(crate) fn engine(&self) -> &EngineRef {
        &self.inner.engine
    }

    /// This process's context ids.
    pub(crate) fn pool(&self) -> &ContextPool {
        &self.inner.contexts
    }

    /// This process's board slots.
    pub(crate) fn boards(&self) -> &BoardPool {
        &self.inner.boards
    }

    pub(crate) fn board_choices(&self) -> &BoardChoices {
        &self.inner.board_choices
    }

    /// This communicator's hierarchy for the board's host phases (`coll/hier_board.rs`).
    pub(crate) fn host_comms_slot(&self) -> &std::sync::OnceLock<Option<HostComms>> {
        &self.inner.host_comms
    }

    /// This communicator's board slot, agreed by the first call (collective: every member
    /// calls it at the same collective); `None` where it has none.
    #[inline]
    pub(crate) fn board(&self) -> Result<Option<&Board>> {
        match self.inner.board.get() {
            Some(b) => Ok(b.as_ref()),
            None => self.agree_board(),
        }
    }

    /// Takes the turn of a nonblocking collective that could run on the board, and gives
    /// the board's nonblocking lane where a blocking collective agreed on a slot already
    /// (agreeing blocks) and the turn comes after those the agreement left to messages: the
    /// same answer in every member, whatever order its blocking and nonblocking calls took.
    pub(crate) fn nonblocking_lane(&self) -> Option<&Arc<Board>> {
        let turn = self.inner.nonblocking_turns.load(Ordering::Relaxed);
        self.inner.nonblocking_turns.store(turn + 1, Ordering::Relaxed);
        self.inner.board.get()?.as_ref()?.nonblocking_lane(turn)
    }

    /// How many nonblocking collectives that could run on the board this rank has started
    /// (what an agreement on the board's slot takes the MAX of).
    pub(crate) fn nonblocking_turns(&self) -> u64 {
        self.inner.nonblocking_turns.load(Ordering::Relaxed)
    }

    #[cold]
    fn agree_board(&self) -> Result<Option<&Board>> {
        let agreed = match self.is_inter() || self.size() < 2 {
            true => None,
            false => Board::agree(self)?,
        };
        if let Err(Some(lost)) = self.inner.board.set(agreed) {
            // Another thread of this process agreed at once (a program that runs collectives
            // on one communicator from two threads at once, which MPI forbids): keep its slot.
            lost.release(&self.inner.boards, false);
        }
        Ok(self.inner.board.get().and_then(Option::as_ref))
    }

    /// AND of every member's first word, MAX of the others, left in each member's words
    /// (collective, on the collective context with `tag`).
    pub(crate) fn agree_words(&self, tag: i32, words: &mut [u64]) -> Result<()> {
        let everyone: Vec<usize> = (0..self.inner.size).collect();
        context::allreduce(self, &everyone, self.inner.rank, tag, words, words.len() - 1)
    }

    /// The context of the library's collective traffic on this communicator.
    pub(crate) fn coll_context(&self) -> u32 {
        self.inner.context + 1
    }

    /// Whether `id`, let go by [`Request::into_raw`], is an operation not yet finished.
    #[inline]
    pub fn request_in_flight(&self, id: u32) -> bool {
        self.inner.engine.lock().in_flight(id)
    }

    /// Whether `id`, let go by [`Request::into_raw`], is an operation that has not completed
    /// yet (done but not finished does not count).
    pub fn request_pending(&self, id: u32) -> bool {
        !self.inner.engine.lock().settled(id)
    }

    /// [`wait_each`](crate::wait_each) over operations let go by [`Request::into_raw`]: waits
    /// until every one of `ids` (`None`: nothing to wait for) has completed, then finishes
    /// each, in order, and hands its outcome to `each(index, outcome)`. An id that is not in
    /// flight (a stale handle) comes out as an error.
    ///
    /// # Safety
    /// As for [`Communicator::adopt_request`]: each id is finished here, once.
    #[inline]
    pub unsafe fn wait_each_raw(&self, ids: &[Option<u32>], each: impl FnMut(usize, Result<Status>)) {
        crate::api::request::wait_ids(&self.inner.engine, ids.len(), |i| ids[i], each);
    }

    /// Waits until `ready()` holds, driving this communicator's engine between looks through
    /// the library's one waiting ladder (spin, yield, sleep), as every blocking call does.
    /// `ready` runs without the engine held, so it may test requests (MPI_Waitany's sweep).
    pub fn wait_for(&self, ready: impl FnMut() -> bool) {
        self.inner.engine.wait_for(ready);
    }

    /// Finishes the operations let go by [`Request::into_raw`] and never taken back, as
    /// dropping their requests would have: an unmatched receive is cancelled, the rest are
    /// waited for (finalize).
    pub(crate) fn finish_orphans(&self) {
        let orphans = self.inner.engine.lock().cancel_orphans();
        for id in orphans {
            let _ = self.inner.engine.wait(id);
        }
    }

    /// Progress until nothing is left to push (finalize).
    pub(crate) fn drain(&self) {
        drop(self.inner.engine.wait_until(None, |e| e.idle()));
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

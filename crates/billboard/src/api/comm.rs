//! Communicators: a group of ranks and a context of their own, its accessors and barrier;
//! point-to-point in `comm/point_to_point.rs`, making communicators in `comm/create.rs`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::context::{self, ContextPool};
use super::request::Status;
use crate::coll::board::{Board, BoardChoices, BoardPool};
use crate::coll::hier_board::HostComms;
use crate::engine::{EngineRef, Helper};
use crate::{Error, Result};

mod create;
mod point_to_point;

pub use point_to_point::Message;

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

impl Inner {
    /// A communicator's state of this process's engine, context pool and board slots, fresh
    /// in all else: what every communicator made from another one starts from.
    fn derived(
        &self,
        context: u32,
        rank: usize,
        size: usize,
        members: Option<Vec<usize>>,
        remote: Option<super::intercomm::Remote>,
        joined: Vec<Arc<super::dynamic::JoinedPeers>>,
    ) -> Inner {
        Inner {
            engine: self.engine.clone(),
            contexts: self.contexts.clone(),
            context,
            rank,
            size,
            members,
            remote,
            started: Default::default(),
            one_host: std::sync::OnceLock::new(),
            reported: Default::default(),
            joined,
            boards: self.boards.clone(),
            board: std::sync::OnceLock::new(),
            nonblocking_turns: AtomicU64::new(0),
            board_choices: BoardChoices::default(),
            host_comms: std::sync::OnceLock::new(),
        }
    }
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
        let inner = self.inner.derived(SOLO_CONTEXT, 0, 1, Some(vec![me]), None, Vec::new());
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

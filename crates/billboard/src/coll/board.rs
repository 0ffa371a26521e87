//! The board: collectives written straight into the node segment (seed 000's partitioned
//! memory that every node sees, seed 004's one post read by many), for communicators whose
//! members all share this host's billboard. The operations live in `board_*.rs`; this file
//! holds the slots, the epochs and the waiting.
//!
//! Every rank owns [`BOARD_SLOTS`] slots in its partition (`transport/shm/segment.rs`); a
//! communicator holds one slot index, the same in every member. A slot of rank p, written
//! only by p:
//!
//! ```text
//! +0                      read mark: u64, the last epoch p finished reading (of any member)
//! +128+k*128              header line k, k < HEADERS (64): epoch u64 at +0, inline payload
//!                         at +16 (112 B)
//! +128+64*128+j*DATA      data area j, j < DATA_DEPTH (32): DATA (2 KiB)
//! ```
//!
//! Each collective on the communicator is one *epoch* e, the same number in every member
//! (they run the communicator's blocking collectives in the same order). A rank that posts in
//! epoch e writes header line e % HEADERS, and for a payload past the 112 inline bytes data
//! area e % DATA_DEPTH: payload first, then the epoch word with a Release store; a reader
//! Acquire-loads the writer's epoch word until it reaches e, then reads the payload in place.
//! When it has read all it needs it stores e in its own read mark. A writer never overwrites
//! what a reader is still on: before posting in epoch e it waits until every member's read
//! mark is at least e - HEADERS (the last use of that header line), and for a data area at
//! least e - DATA_DEPTH. Every word has one writer, no read-modify-write, and epochs only
//! grow. The depth lets a writer run that many collectives ahead of its slowest reader (a
//! root's broadcasts back to back, a gather's senders), as a ring of messages does: with two
//! buffers a root waited for its readers every other broadcast (2 ranks, 8 B: 0.17 us against
//! 0.10 by messages); with eight, a root whose reader lost its core for a while (16 ranks
//! beside busy loops, or 4 ranks on 2 cores) stopped after eight broadcasts of a batch where a
//! message-based broadcast went on (bcast 8 B 82 us against MPICH's 1.5, device, busy). Small
//! posts, the common case of that, go 64 ahead: a header line costs 128 bytes, a data area 2 KiB.
//! Data areas go 32 ahead: with 8, a hierarchy's root posting 512 B or 1 KiB broadcasts back to
//! back on 2 hosts x 2 ranks (4 ranks on 2 cores) waited for its host's reader (bench/hosts/
//! coll.sh, 3 alternating rounds, load 12-19, us, messages vs board: 8 areas 1.58-1.79 vs
//! 2.36-2.50; 32 areas 1.61-1.81 vs 1.50-1.96).
//!
//! Generations: a communicator's first epoch is above every epoch any of its members has
//! used on any slot (the maximum of their clocks, agreed with the slot), so the lines a freed
//! communicator left in a slot can never pass for a new one's. A freed communicator's slot is
//! offered again only once every member it had has marked its last epoch read (it may still
//! be reading the rank's buffers when the rank frees it), so a rank outside the new
//! communicator never reads a buffer being rewritten. A revoked communicator's collectives may
//! have given up half-way: a member that gave up never reads, nor marks, the epochs it left,
//! so each member frees it by marking read every epoch any member can have posted there
//! ([`Board::release`]); else the others' slots would drain forever (lost: there are
//! [`BOARD_SLOTS`]).
//!
//! A slot has two *lanes*, laid out alike: the blocking collectives' (above) and, right after
//! it ([`BOARD_LANE_BYTES`] on), the nonblocking and persistent ones' (`board_steps.rs`), each
//! with its own read marks and its own sequence of epochs from the same first epoch. MPI asks
//! a program to start a communicator's collectives in one order, but programs start the
//! nonblocking ones in another order, relative to the blocking ones, on different ranks
//! (mpi4py's fallback for MPIX_Comm_iagree: rank 0 Iallreduce then Barrier, the others Barrier
//! then Iallreduce), and MPICH and Open MPI keep the two apart by tags. On one sequence the
//! root's Iallreduce paired with the others' barrier (a wrong result, then a hang); with a
//! lane each, blocking collectives pair only with blocking ones in their order, nonblocking
//! ones with nonblocking ones in theirs. A nonblocking epoch may end in any order: the lane's
//! read mark stays below the oldest epoch the rank started and has not ended (its lines may
//! still be read there), and moves up when that one ends, in the engine's progress
//! (`board_marks.rs`). The blocking lane pays nothing for it.
//!
//! Slots are agreed lazily, by the communicator's first collective that the table gives the
//! board (collective by nature, so every member agrees at the same point), except the world's,
//! agreed in `init` so that nonblocking collectives started first find it: an AND of every
//! member's free-slot mask and a MAX of their clocks. Nonblocking collectives started before
//! it went by messages on the members that had not agreed yet, and a member may have started
//! more of them than another when it agrees: the agreement takes the MAX of the members'
//! counts of nonblocking collectives started, and those below it go by messages everywhere,
//! the later ones on the lane. A process lends its mask to one
//! agreement at a time; a concurrent one contributes nothing and goes without a slot, as does
//! a communicator that finds no slot free in all its members: it keeps the message-based
//! algorithms, silently.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::board_marks::Unended;
use super::select::{board_by, report, Collective};
use crate::engine::ladder::{Backoff, Step};
pub(crate) use crate::transport::shm::{BOARD_LANE_BYTES, BOARD_SLOTS, BOARD_SLOT_BYTES};
use crate::{Communicator, Result};

const LINE: usize = 128;
/// Header lines of a slot: how many collectives a writer of inline posts may run ahead of its
/// slowest reader.
const HEADERS: u64 = 64;
/// Data areas of a slot: how many collectives a writer of larger posts may run ahead (see the
/// module's comment).
pub(crate) const DATA_DEPTH: u64 = 32;
/// Bytes of a data area: the most one rank posts in one collective.
pub(crate) const DATA: usize = (BOARD_LANE_BYTES - LINE - HEADERS as usize * LINE) / DATA_DEPTH as usize;
/// Where an inline payload starts in the header line (16-byte aligned for any element type).
const INLINE_AT: usize = 16;
/// Largest payload carried in the header line itself (one line moves, not two).
pub(crate) const INLINE: usize = LINE - INLINE_AT;
/// Bytes of the length word that opens a post of [`Board::post_sized`].
pub(crate) const SIZE_WORD: usize = 8;
/// Largest part [`Board::post_sized`] carries in the header line, after its length word.
pub(crate) const SIZED_INLINE: usize = INLINE - SIZE_WORD;
const _: () = assert!(BOARD_SLOTS <= 64 && DATA >= 1024 && DATA.is_multiple_of(LINE) && DATA_DEPTH <= HEADERS);
const _: () = assert!(BOARD_SLOT_BYTES >= 2 * BOARD_LANE_BYTES && BOARD_LANE_BYTES.is_multiple_of(LINE));

/// The longest nap of a board waiter that has climbed the ladder to sleeping: nobody wakes
/// it (a post rings no doorbell), so it looks again this soon.
const NAP: Duration = Duration::from_micros(50);

/// Spins between two rounds of the engine's progress while a board waiter spins: it must not
/// starve point-to-point traffic a peer needs from it (a rendezvous it must answer).
const SPINS_PER_PROGRESS: u32 = 256;

/// Spins between two rounds of progress once a round moved something (a window's handler
/// answered a request): more requests tend to follow, and each waits for this look
/// (rma.c fetch_op on MPI_Win_create windows, target in MPI_Barrier).
const SPINS_PER_PROGRESS_BUSY: u32 = 16;

/// Yields between two rounds of the engine's progress (a round costs a lock and a look at
/// every peer's doorbell, more than the line the waiter looks for).
const YIELDS_PER_PROGRESS: u32 = 4;

/// Whether a writer may post `len` bytes in epoch `e` of a communicator whose first epoch was
/// `first`, when the lowest read mark among its members is `lowest`: the header line of `e`
/// was last used in e - HEADERS, its data area (past the inline bytes) in e - DATA_DEPTH, and
/// the first epochs use lines no member of this communicator has read.
fn may_post(e: u64, len: usize, first: u64, lowest: u64) -> bool {
    let depth = if len <= INLINE { HEADERS } else { DATA_DEPTH };
    e < first + depth || lowest + depth >= e
}

/// The first epoch of a communicator whose members' clocks reach at most `clock`.
fn first_epoch(clock: u64) -> u64 {
    clock + 1
}

/// A slot left by a freed communicator: offered again once every member's read mark of each
/// lane (pointers into the segment) has reached the lane's last epoch (beside it).
struct Draining {
    slot: usize,
    marks: Vec<(*const AtomicU64, u64)>,
}

/// This process's board slots.
pub(crate) struct BoardPool {
    state: Mutex<PoolState>,
}

struct PoolState {
    /// Bit s set: slot s is free here.
    free: u64,
    /// The free mask is lent to one agreement.
    lent: bool,
    /// Above every epoch this process used on a slot now free or draining.
    clock: u64,
    draining: Vec<Draining>,
}

// SAFETY: the read-mark pointers point into the segment, mapped while the engine lives; they
// are only read, under the pool's lock, by agreements that hold the engine.
unsafe impl Send for PoolState {}

impl Default for BoardPool {
    fn default() -> Self {
        let free = if BOARD_SLOTS == 64 { u64::MAX } else { (1 << BOARD_SLOTS) - 1 };
        BoardPool { state: Mutex::new(PoolState { free, lent: false, clock: 0, draining: Vec::new() }) }
    }
}

impl BoardPool {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What this process offers an agreement: its free mask (nothing if lent to another) and
    /// its clock. Slots whose last readers have all finished are free again first.
    fn offer(&self) -> ([u64; 2], bool) {
        let mut s = self.lock();
        let mut back = 0;
        s.draining.retain(|d| {
            // SAFETY: see `PoolState`.
            let done = d.marks.iter().all(|&(m, last)| unsafe { &*m }.load(Ordering::Acquire) >= last);
            if done {
                back |= 1 << d.slot;
            }
            !done
        });
        s.free |= back;
        if s.lent {
            return ([0, s.clock], false);
        }
        s.lent = true;
        ([s.free, s.clock], true)
    }

    /// Takes the slot the members agreed on (`and` of the masks), if any, and returns the loan.
    fn settle(&self, owned: bool, and: u64) -> Option<usize> {
        let mut s = self.lock();
        if owned {
            s.lent = false;
        }
        let slot = (and != 0).then(|| and.trailing_zeros() as usize)?;
        debug_assert!(owned && s.free & (1 << slot) != 0, "an agreed slot is free under the loan");
        s.free &= !(1 << slot);
        Some(slot)
    }

    /// A communicator that held `slot` is gone; its members' read marks, each with the last
    /// epoch of its lane. (A lane that never posted wrote nothing: no marks, free at once.)
    /// The clock passes `clock`: every epoch used there, and this process's own marks.
    fn release(&self, slot: usize, clock: u64, marks: Vec<(*const AtomicU64, u64)>) {
        let mut s = self.lock();
        s.clock = s.clock.max(clock);
        s.draining.push(Draining { slot, marks });
    }
}

thread_local! {
    /// The caller of the collective being started waits for it at once (a blocking form):
    /// only then may it run on the board, which completes inside the call.
    static BLOCKING: Cell<bool> = const { Cell::new(false) };
}

thread_local! {
    /// A board wait of this thread gave up because its communicator was revoked
    /// ([`Board::wait`]); taken by [`revoked_in_wait`].
    static REVOKED_IN_WAIT: Cell<bool> = const { Cell::new(false) };
}

/// Some thread's board wait has ever given up on a revoked communicator: until then no
/// thread's [`REVOKED_IN_WAIT`] is set, and every collective skips reading it (a thread-local
/// of a shared library is a call to `__tls_get_addr`, ~10 instructions; a collective read it
/// twice).
static EVER_REVOKED_IN_WAIT: AtomicBool = AtomicBool::new(false);

/// Marks this thread's wait as given up on a revoked communicator.
fn set_revoked_in_wait() {
    EVER_REVOKED_IN_WAIT.store(true, Ordering::Relaxed);
    REVOKED_IN_WAIT.with(|r| r.set(true));
}

/// Whether this thread's last wait gave up on a revoked communicator (not cleared).
#[inline]
fn revoked_in_wait_now() -> bool {
    EVER_REVOKED_IN_WAIT.load(Ordering::Relaxed) && REVOKED_IN_WAIT.with(Cell::get)
}

/// Whether a board wait of the collective that just returned on this thread gave up because
/// its communicator was revoked (MPIX_Comm_revoke): its results are then not results, and the
/// call must fail with MPIX_ERR_REVOKED. Clears the mark.
#[inline]
pub fn revoked_in_wait() -> bool {
    if !EVER_REVOKED_IN_WAIT.load(Ordering::Relaxed) {
        return false;
    }
    REVOKED_IN_WAIT.with(|r| {
        let was = r.get();
        if was {
            r.set(false);
        }
        was
    })
}

/// This thread's collective gave up on a revoked communicator outside a board wait (a
/// hierarchical collective's leaders' phase, `hier_board.rs`): as after a wait that gave up,
/// it posts nothing more on the revoked communicator's board.
pub(crate) fn gave_up_revoked() {
    set_revoked_in_wait();
}

/// Runs `f` (which starts a collective and waits for it, or says `blocking` false: writes a
/// schedule) with the blocking flag set so; restored on the way out, panics included.
pub fn blocking<T>(blocking: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BLOCKING.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BLOCKING.with(|b| b.replace(blocking)));
    f()
}

/// Whether the collective being started is waited for at once ([`blocking`]).
pub(crate) fn in_blocking_call() -> bool {
    BLOCKING.with(Cell::get)
}

/// A communicator's board slot: where each member's lines are, and its epochs.
pub(crate) struct Board {
    slot: usize,
    me: usize,
    /// Each member's slot, in rank order.
    lines: Vec<*mut u8>,
    first: u64,
    next: AtomicU64,
    /// The lowest read mark seen last time all were read (saves reading them every post).
    lowest: AtomicU64,
    crowded: bool,
    /// The nonblocking collectives' lane (in the blocking lane's `Board` only), shared with
    /// the steps in flight, which may outlive the communicator's handle.
    pub(super) nonblocking: Option<Arc<Board>>,
    /// The communicator's first nonblocking collective (by its turn) that runs on the lane:
    /// those before went by messages on some member (see the module's head).
    pub(super) nonblocking_from: u64,
    /// The nonblocking lane's epochs of this rank started and not ended.
    pub(super) unended: Mutex<Unended>,
}

// SAFETY: the lines lie in the segment, mapped while the engine (held by the communicator that
// holds this board) lives; each word is an atomic, and payload bytes are published by them.
unsafe impl Send for Board {}
unsafe impl Sync for Board {}

impl Board {
    /// Agrees on a slot for `comm` with its members (collective); `None` where a member is
    /// off this host's billboard or no slot is free in all of them.
    pub(crate) fn agree(comm: &Communicator) -> Result<Option<Board>> {
        let me = comm.rank();
        let lines = {
            let engine = comm.engine().lock();
            (0..comm.size()).map(|r| engine.routes().board_slot(comm.world_rank(r), 0)).collect::<Option<Vec<_>>>()
        };
        let pool = comm.boards();
        let ((words, owned), on_board) = match lines {
            Some(_) => (pool.offer(), true),
            None => (([0, 0], false), false),
        };
        // AND of the free masks; MAX of the nonblocking collectives started and of the clocks.
        let mut agreed = [words[0], comm.nonblocking_turns(), words[1]];
        let outcome = comm.agree_words(super::TAG_BOARD, &mut agreed);
        let slot = pool.settle(owned, if on_board && outcome.is_ok() { agreed[0] } else { 0 });
        outcome?;
        let (Some(slot), Some(lines)) = (slot, lines) else { return Ok(None) };
        let first = first_epoch(agreed[2]);
        let crowded = comm.crowded();
        let lane = |at: usize| Board {
            slot,
            me,
            lines: lines.iter().map(|base| base.wrapping_add(slot * BOARD_SLOT_BYTES + at)).collect(),
            first,
            next: AtomicU64::new(first),
            lowest: AtomicU64::new(0),
            crowded,
            nonblocking: None,
            nonblocking_from: 0,
            unended: Mutex::default(),
        };
        let nonblocking = Some(Arc::new(lane(BOARD_LANE_BYTES)));
        Ok(Some(Board { nonblocking, nonblocking_from: agreed[1], ..lane(0) }))
    }

    /// Gives the slot back to `pool` (the communicator is gone): free again once every
    /// member has finished reading this rank's buffers.
    ///
    /// Of a `revoked` communicator this rank reads nothing more, but may have left epochs
    /// unread (a wait that gave up) or never reached them (it revoked instead of joining):
    /// it marks read every epoch any member can have posted. A writer posts epoch e only once
    /// every read mark, this rank's included (at most its own last epoch), has reached
    /// e - HEADERS, or within the first HEADERS epochs, so none passes the bound below. Its
    /// clock passes the bound too, so that a later communicator on the slot starts above the
    /// mark (a writer there must not take it for reads of the new one's lines).
    ///
    /// Both lanes are given back together: the slot is free once both have been read.
    pub(crate) fn release(&self, pool: &BoardPool, revoked: bool) {
        let (mut clock, mut marks) = (0, Vec::new());
        for lane in std::iter::once(self).chain(self.nonblocking.as_deref()) {
            clock = clock.max(lane.leave(revoked, &mut marks));
        }
        pool.release(self.slot, clock, marks);
    }

    /// [`Board::release`] of one lane: adds its members' read marks, each with the lane's last
    /// epoch, to `marks`; the lane's clock (its last epoch, or the bound a revoked one marked).
    fn leave(&self, revoked: bool, marks: &mut Vec<(*const AtomicU64, u64)>) -> u64 {
        let last = self.next.load(Ordering::Relaxed).saturating_sub(1);
        let mut clock = last;
        if revoked {
            let bound = last.max(self.first - 1) + HEADERS;
            self.mark(self.me).store(bound, Ordering::Release);
            clock = bound;
        }
        if last >= self.first {
            marks.extend((0..self.lines.len()).map(|r| (self.mark(r) as *const _, last)));
        }
        clock
    }

    /// The nonblocking lane, for the communicator's nonblocking collective of turn `turn`
    /// (counted from 0 among those started on it), where it runs there.
    pub(crate) fn nonblocking_lane(&self, turn: u64) -> Option<&Arc<Board>> {
        self.nonblocking.as_ref().filter(|_| turn >= self.nonblocking_from)
    }

    pub(crate) fn size(&self) -> usize {
        self.lines.len()
    }

    pub(crate) fn rank(&self) -> usize {
        self.me
    }

    /// The epoch of the collective starting now.
    pub(crate) fn epoch(&self) -> u64 {
        let e = self.next.load(Ordering::Relaxed);
        self.next.store(e + 1, Ordering::Relaxed);
        e
    }

    pub(super) fn mark(&self, r: usize) -> &AtomicU64 {
        // SAFETY: the read mark opens the member's slot, 128-byte aligned (see `Board`).
        unsafe { &*(self.lines[r] as *const AtomicU64) }
    }

    fn header(&self, r: usize, e: u64) -> *mut u8 {
        self.lines[r].wrapping_add(LINE + (e % HEADERS) as usize * LINE)
    }

    fn stamp(&self, r: usize, e: u64) -> &AtomicU64 {
        // SAFETY: the epoch word opens the buffer's header line, inside the slot.
        unsafe { &*(self.header(r, e) as *const AtomicU64) }
    }

    /// Where `len` bytes of member `r`'s post in epoch `e` lie: inline, or in the data area.
    pub(crate) fn payload(&self, r: usize, e: u64, len: usize) -> *mut u8 {
        debug_assert!(len <= DATA);
        match len <= INLINE {
            true => self.header(r, e).wrapping_add(INLINE_AT),
            false => self.lines[r].wrapping_add(LINE + HEADERS as usize * LINE + (e % DATA_DEPTH) as usize * DATA),
        }
    }

    /// Posts this rank's `len` bytes for epoch `e`, written by `fill` at the pointer it is
    /// given, once no member still reads the buffer.
    /// A rank whose wait gave up on a revoked communicator posts nothing more there (the call
    /// fails: [`revoked_in_wait`]), so that no member waiting for it is let go as if all had
    /// arrived. (The thread's mark is read first: one load on the common path.)
    pub(crate) fn post(&self, comm: &Communicator, e: u64, len: usize, fill: impl FnOnce(*mut u8)) {
        if revoked_in_wait_now() && comm.is_revoked() {
            return;
        }
        if !may_post(e, len, self.first, self.lowest.load(Ordering::Relaxed)) {
            let lowest = || (0..self.size()).map(|r| self.mark(r).load(Ordering::Acquire)).min().unwrap_or(e);
            self.wait(comm, || may_post(e, len, self.first, lowest()));
            self.lowest.store(lowest(), Ordering::Relaxed);
        }
        fill(self.payload(self.me, e, len));
        self.stamp(self.me, e).store(e, Ordering::Release);
    }

    /// [`Board::post`] if no member still reads the buffer, else nothing: whether it posted
    /// (a nonblocking step polls it).
    pub(crate) fn try_post(&self, e: u64, len: usize, fill: impl FnOnce(*mut u8)) -> bool {
        if !may_post(e, len, self.first, self.lowest.load(Ordering::Relaxed)) {
            let lowest = (0..self.size()).map(|r| self.mark(r).load(Ordering::Acquire)).min().unwrap_or(e);
            self.lowest.store(lowest, Ordering::Relaxed);
            if !may_post(e, len, self.first, lowest) {
                return false;
            }
        }
        fill(self.payload(self.me, e, len));
        self.stamp(self.me, e).store(e, Ordering::Release);
        true
    }

    /// Whether member `r` has posted in epoch `e` (then [`Board::read`] may read it).
    pub(crate) fn posted(&self, r: usize, e: u64) -> bool {
        self.stamp(r, e).load(Ordering::Acquire) >= e
    }

    /// Waits until member `r` has posted in epoch `e`.
    pub(crate) fn wait_for(&self, comm: &Communicator, r: usize, e: u64) {
        let stamp = self.stamp(r, e);
        self.wait(comm, || stamp.load(Ordering::Acquire) >= e);
    }

    /// Member `r`'s `len` bytes of epoch `e` (posted: [`Board::wait_for`]).
    pub(crate) fn read(&self, r: usize, e: u64, len: usize) -> &[u8] {
        // SAFETY: posted (the caller waited for the stamp, Acquire), and not rewritten before
        // this rank marks epoch `e` read ([`Board::finish`]), which the borrow of `self`
        // spans in every operation.
        unsafe { std::slice::from_raw_parts(self.payload(r, e, len), len) }
    }

    /// Posts `part` (at most one data area; `None`: nothing, the part goes another way) with
    /// its length, for readers that do not know it (a v-form's part at a host's leader,
    /// `hier_board_parts.rs`): the length word opens the header line's inline bytes, the part
    /// follows it there where it fits ([`SIZED_INLINE`]), else it fills the data area.
    ///
    /// # Safety
    /// `part` is readable.
    pub(crate) unsafe fn post_sized(&self, comm: &Communicator, e: u64, part: Option<(*const u8, usize)>) {
        let (from, len) = part.unwrap_or((std::ptr::null(), 0));
        debug_assert!(len <= DATA);
        let inline = part.is_none() || len <= SIZED_INLINE;
        let word = self.length_word(self.me, e);
        let size = part.map_or(u64::MAX, |_| len as u64);
        // SAFETY: the header line and the data area of epoch `e` are this rank's and free once
        // `post` calls `fill` (the data area's depth is within the header lines'); `from`
        // holds `len` bytes (caller).
        self.post(comm, e, if inline { INLINE } else { DATA }, |at| unsafe {
            std::ptr::copy_nonoverlapping(size.to_ne_bytes().as_ptr(), word, SIZE_WORD);
            let to = if inline { word.add(SIZE_WORD) } else { at };
            std::ptr::copy_nonoverlapping(from, to, len);
        });
    }

    /// Member `r`'s part of epoch `e` posted by [`Board::post_sized`] (posted: the caller
    /// waited), `None` where it posted none. A length past one data area (a member's word
    /// that is not a length) reads as the whole area.
    pub(crate) fn read_sized(&self, r: usize, e: u64) -> Option<&[u8]> {
        let word = self.length_word(r, e);
        let mut size = [0u8; SIZE_WORD];
        // SAFETY: the header line lies in the member's slot, posted (see `read`).
        unsafe { std::ptr::copy_nonoverlapping(word, size.as_mut_ptr(), SIZE_WORD) };
        let size = u64::from_ne_bytes(size);
        if size == u64::MAX {
            return None;
        }
        let len = size.min(DATA as u64) as usize;
        Some(match len <= SIZED_INLINE {
            // SAFETY: as above; the inline bytes hold `len` after the length word.
            true => unsafe { std::slice::from_raw_parts(word.wrapping_add(SIZE_WORD), len) },
            // SAFETY: as above; past the inline bytes the part lies in the data area.
            false => unsafe { std::slice::from_raw_parts(self.payload(r, e, DATA), len) },
        })
    }

    /// Where member `r`'s length word of epoch `e` lies: the header line's inline bytes open
    /// with it ([`Board::post_sized`], `board_bcast_cells.rs`'s posts of a length only the
    /// poster knows), [`SIZE_WORD`] bytes.
    pub(crate) fn length_word(&self, r: usize, e: u64) -> *mut u8 {
        self.header(r, e).wrapping_add(INLINE_AT)
    }

    /// This rank has read all it reads in epoch `e` (a blocking collective's: they end in
    /// the order they start).
    #[inline]
    pub(crate) fn finish(&self, e: u64) {
        self.mark(self.me).store(e, Ordering::Release);
    }

    /// Polls `ready` down the engine's ladder: spin, yield, then short naps; the engine's
    /// progress runs between looks, so point-to-point traffic a peer needs from this rank
    /// goes on. With more ranks than cores the spin is cut short (`Backoff`).
    /// A revoked communicator ends the wait unready (a member that learnt of the revocation
    /// will not post): the collective finishes on what the board holds, and
    /// [`revoked_in_wait`] tells its caller to fail it.
    pub(crate) fn wait(&self, comm: &Communicator, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        let revoked = || {
            let gone = comm.is_revoked();
            if gone {
                set_revoked_in_wait();
            }
            gone
        };
        if revoked() {
            return;
        }
        // Where ranks outnumber cores the ladder yields at once (`BB_SPIN_CROWDED`).
        let fresh = || Backoff::new(self.crowded);
        let mut ladder = fresh();
        let mut spins = 0u32;
        let mut every = SPINS_PER_PROGRESS;
        while !ready() {
            // Progress that moved something (an active message served, say) starts the
            // ladder over, and the nap ends at the next arrival: a rank waiting here answers a
            // window's fetch-and-op in a microsecond, not after a nap (rma.c fetch_op on
            // MPI_Win_create windows, target in MPI_Barrier: 54 us a call before).
            let moved = match ladder.step() {
                Step::Spin => {
                    std::hint::spin_loop();
                    spins += 1;
                    spins.is_multiple_of(every) && comm.engine().lock().progress(None)
                }
                Step::Yield => {
                    spins += 1;
                    let moved = spins.is_multiple_of(YIELDS_PER_PROGRESS) && comm.engine().lock().progress(None);
                    if revoked() {
                        return;
                    }
                    std::thread::yield_now();
                    moved
                }
                Step::Sleep(_) if revoked() => return,
                Step::Sleep(d) => comm.engine().nap(d.min(NAP)),
            };
            if moved {
                every = SPINS_PER_PROGRESS_BUSY;
                ladder = fresh();
            }
        }
    }
}

impl Communicator {
    /// The board and the algorithm of it, where the table (or `BB_COLL_<NAME>`) gives it
    /// collective `what`, in which a rank posts at most `post` bytes, and the caller
    /// `blocks` (waits for it at once: nonblocking forms keep their schedules). Agrees on the
    /// slot at the first such call.
    #[inline]
    pub(crate) fn board_for(
        &self,
        what: Collective,
        post: usize,
        blocks: bool,
    ) -> Result<Option<(&Board, &'static str)>> {
        if !blocks {
            return Ok(None);
        }
        if post > DATA {
            return self.choose_board_cells(what, post);
        }
        // The choice depends on the communicator and the settings alone: made once, it is
        // read back while no tool changed a setting (a collective's choice is made per call).
        let generation = crate::tunables::settings_generation() + 1;
        let word = self.board_choices().0[what as usize].load(Ordering::Relaxed);
        if word >> 8 == generation {
            return Ok(match (word & 0xff) as usize {
                0 => None,
                by => self.board()?.map(|b| (b, what.algorithms()[by - 1])),
            });
        }
        self.choose_board(what, post, generation)
    }

    #[cold]
    fn choose_board(&self, what: Collective, post: usize, generation: u64) -> Result<Option<(&Board, &'static str)>> {
        let by = board_by(self, what, post);
        let board = match by {
            Some(_) => self.board()?,
            None => None,
        };
        let chosen = by.filter(|_| board.is_some());
        if let Some(by) = chosen {
            report(self, what, by, "", post);
        }
        let index = chosen.and_then(|by| what.algorithms().iter().position(|&a| a == by)).map_or(0, |i| i + 1);
        self.board_choices().0[what as usize].store(generation << 8 | index as u64, Ordering::Relaxed);
        Ok(board.zip(chosen))
    }
}

impl Communicator {
    /// The board's cells past one data area (`board_bcast_cells.rs`): a choice by size, so
    /// made at each call, like the tables of messages.
    #[cold]
    fn choose_board_cells(&self, what: Collective, post: usize) -> Result<Option<(&Board, &'static str)>> {
        let Some(by) = board_by(self, what, post) else { return Ok(None) };
        let board = self.board()?;
        if board.is_some() {
            report(self, what, by, "", post);
        }
        Ok(board.map(|b| (b, by)))
    }
}

/// A communicator's board choices, one word per collective ([`Collective`] as index): the
/// settings generation they were made under (above the low byte; 0: not made yet), and the
/// algorithm (the low byte: 0 none, i + 1 algorithm i of the collective's switch).
#[derive(Default)]
pub(crate) struct BoardChoices([AtomicU64; 10]);

#[cfg(test)]
#[path = "board_tests.rs"]
mod tests;

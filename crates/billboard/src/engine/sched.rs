//! Nonblocking collectives as schedules the engine moves on itself: rounds of messages
//! advanced in every progress round, so an operation goes on in whatever call of the process
//! drives the engine (a blocking receive, a wait on something else), as a started send does,
//! with no thread of its own.
//!
//! A round's messages all start together. When every one has completed, the round's local
//! steps run (combine what came in, copy), then the next round starts. Every buffer address
//! is fixed when the schedule is written (`coll/nonblocking.rs`); scratch memory belongs to
//! the schedule.
//!
//! A schedule is written straight into a slot of the engine, and the slot keeps its vectors
//! and scratch blocks for the next one, so a collective in steady use allocates nothing.
//!
//! A round may also hold *polled* steps ([`Polled`]): steps that wait on words in shared
//! memory that no message announces (the board's posts, `coll/board_steps.rs`). Progress
//! polls them, never blocking, and the round ends once they have ended too. Nothing wakes a
//! sleeper when such a word changes, so while one is in flight a waiter's sleep is a short
//! nap ([`Engine::sched_nap`]).

use super::matching::Pattern;
use super::progress::Engine;
use super::request::ReqId;
use super::Shared;
use crate::transport::Channel;
use crate::{Error, Result};

/// A reduction owned by a schedule: `op(invec, inoutvec)` sets `inoutvec = invec ⊕ inoutvec`.
pub type ReduceFn = Box<dyn FnMut(&[u8], &mut [u8]) + Send>;

/// One message of a round.
#[derive(Clone, Copy)]
pub(crate) enum Msg {
    /// `len` bytes at `buf` to world rank `peer`, with this envelope; by rendezvous whatever
    /// its size where `rendezvous` (on one host: the receiver's single copy).
    Send {
        peer: usize,
        context: u32,
        source: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        rendezvous: bool,
    },
    Recv {
        pattern: Pattern,
        hint: Option<usize>,
        buf: *mut u8,
        cap: usize,
    },
    /// A send of the same bytes to the world ranks `peers` (a range of [`Sched::peers`]):
    /// one post they all read where the route allows (`Engine::multicast`), else a send each.
    Multicast {
        peers: (usize, usize),
        context: u32,
        source: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    },
    /// Polled step `k` of [`Sched::polled`].
    Polled(usize),
}

/// A step polled from progress until it ends (see the module's head).
pub(crate) trait Polled: Send {
    /// Moves on as far as it can without waiting: `None` while it waits, then its outcome.
    /// `revoked`: its communicator was revoked; it ends at once, failed.
    fn poll(&mut self, revoked: bool) -> Option<Result<()>>;
    /// The collective context of its communicator.
    fn context(&self) -> u32;
}

/// The longest sleep of a waiter while a polled step is in flight: nobody wakes it when the
/// word it waits on changes.
const POLLED_NAP: std::time::Duration = std::time::Duration::from_micros(50);

/// A step a rank takes alone once a round's messages are done.
#[derive(Clone, Copy)]
pub(crate) enum Local {
    /// `into = from ⊕ into`, with the schedule's reduction.
    Combine {
        from: *const u8,
        into: *mut u8,
        len: usize,
    },
    Copy {
        from: *const u8,
        to: *mut u8,
        len: usize,
    },
}

/// Scratch blocks larger than this go back to the allocator, not to the spare pool. Large:
/// a reduction of a large vector in a loop otherwise faults in fresh pages on every call (a
/// 1 MiB allreduce spent more time in page faults than in moving its data).
const KEEP_SCRATCH: usize = 16 << 20;

#[derive(Default)]
pub(crate) struct Sched {
    msgs: Vec<Msg>,
    /// The peers of the schedule's multicasts.
    peers: Vec<usize>,
    locals: Vec<Local>,
    /// Where each round ends in `msgs` and `locals` (it begins where the one before ends).
    ends: Vec<(usize, usize)>,
    /// Rounds whose messages have started; the last of them is in flight.
    started: usize,
    /// The requests of the round in flight (sends that completed as they started are not here).
    waiting: Vec<ReqId>,
    /// The schedule's polled steps; taken out when started.
    polled: Vec<Option<Box<dyn Polled>>>,
    /// The polled steps of the round in flight that have not ended.
    polling: Vec<Box<dyn Polled>>,
    op: Option<ReduceFn>,
    /// Memory the rounds point into, kept until the schedule is finished.
    scratch: Vec<Vec<u8>>,
    in_use: bool,
    outcome: Option<Result<()>>,
    /// The first truncation a round met: the later rounds still run, since their peers wait
    /// for this rank's messages (an all-to-allv whose counts disagree stopped here and left a
    /// pairwise partner waiting for ever), and the schedule then fails with it.
    truncated: Option<Error>,
}

// SAFETY: the raw pointers point into the schedule's own scratch or into buffers its caller
// lends it until it is finished; neither is tied to a thread.
unsafe impl Send for Sched {}

impl Sched {
    /// Adds a message to the round being written.
    pub(crate) fn push(&mut self, msg: Msg) {
        self.msgs.push(msg);
    }

    /// Adds a send of `len` bytes at `buf` to every world rank of `peers` to the round being
    /// written, with this envelope (nothing if `peers` is empty).
    pub(crate) fn multicast(
        &mut self,
        peers: impl Iterator<Item = usize>,
        context: u32,
        source: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) {
        let at = self.peers.len();
        self.peers.extend(peers);
        let n = self.peers.len() - at;
        if n == 0 {
            return;
        }
        self.msgs.push(Msg::Multicast { peers: (at, n), context, source, tag, buf, len });
    }

    /// Adds a polled step to the round being written.
    pub(crate) fn poll(&mut self, step: Box<dyn Polled>) {
        self.msgs.push(Msg::Polled(self.polled.len()));
        self.polled.push(Some(step));
    }

    /// Polls the steps of the round in flight; whether one ended. A failed one fails the
    /// schedule.
    fn poll_steps(&mut self, revoked: impl Fn(u32) -> bool) -> bool {
        let before = self.polling.len();
        let mut failed = None;
        self.polling.retain_mut(|step| match step.poll(revoked(step.context())) {
            None => true,
            Some(Ok(())) => false,
            Some(Err(e)) => {
                failed.get_or_insert(e);
                false
            }
        });
        if let Some(e) = failed {
            self.outcome = Some(Err(e));
        }
        self.polling.len() != before
    }

    /// Adds a local step that runs when the round being written has completed.
    pub(crate) fn then(&mut self, step: Local) {
        self.locals.push(step);
    }

    /// Closes the round being written.
    pub(crate) fn end_round(&mut self) {
        self.ends.push((self.msgs.len(), self.locals.len()));
    }

    /// Opens the last round closed again, so that the messages written next start with it,
    /// if it has no local steps (they would run only after those messages, which may need
    /// what the steps produce). Whether it did.
    pub(crate) fn reopen_round(&mut self) -> bool {
        let Some(&(_, locals)) = self.ends.last() else { return false };
        let before = if self.ends.len() > 1 { self.ends[self.ends.len() - 2].1 } else { 0 };
        if locals != before || self.locals.len() != locals {
            return false;
        }
        self.ends.pop();
        true
    }

    /// Where round `i` begins in `msgs` and `locals`.
    fn begin(&self, i: usize) -> (usize, usize) {
        if i == 0 {
            (0, 0)
        } else {
            self.ends[i - 1]
        }
    }
}

pub type SchedId = usize;

/// The engine's schedules, by id: slots are reused with their memory.
#[derive(Default)]
pub(crate) struct Scheds {
    slots: Vec<Sched>,
    /// Spare scratch blocks of finished schedules.
    spare: Vec<Vec<u8>>,
    /// Schedules started and not yet finished.
    live: usize,
}

impl Scheds {
    /// A free slot to write a schedule into.
    pub(crate) fn reserve(&mut self) -> SchedId {
        let id = match self.slots.iter().position(|s| !s.in_use) {
            Some(i) => i,
            None => {
                self.slots.push(Sched::default());
                self.slots.len() - 1
            }
        };
        self.slots[id].in_use = true;
        id
    }

    pub(crate) fn get(&mut self, id: SchedId) -> &mut Sched {
        &mut self.slots[id]
    }

    /// `len` bytes of scratch for schedule `id`, holding `init` if given; else not initialised
    /// (the schedule writes it, by a receive or a copy, before anything reads it). The memory
    /// stays put until the schedule is released.
    pub(crate) fn scratch(&mut self, id: SchedId, len: usize, init: Option<&[u8]>) -> *mut u8 {
        let fits = self.spare.iter().position(|b| b.capacity() >= len);
        let mut block = fits.map(|i| self.spare.swap_remove(i)).or_else(|| self.spare.pop()).unwrap_or_default();
        block.clear();
        match init {
            Some(src) => block.extend_from_slice(&src[..len]),
            None => block.reserve(len),
        }
        let p = block.as_mut_ptr();
        self.slots[id].scratch.push(block); // the heap block does not move with the Vec
        p
    }

    /// Empties slot `id` for the next schedule, keeping its memory.
    pub(crate) fn release(&mut self, id: SchedId) {
        let s = &mut self.slots[id];
        s.msgs.clear();
        s.peers.clear();
        s.locals.clear();
        s.ends.clear();
        s.started = 0;
        s.waiting.clear();
        s.polled.clear();
        s.polling.clear();
        s.op = None;
        s.in_use = false;
        s.outcome = None;
        s.truncated = None;
        self.spare.extend(s.scratch.drain(..).filter(|b| b.capacity() <= KEEP_SCRATCH));
    }
}

impl<C: Channel> Engine<C> {
    pub(crate) fn scheds(&mut self) -> &mut Scheds {
        &mut self.scheds
    }

    /// Starts the schedule written into slot `id`: its first round goes out now.
    pub(crate) fn start_sched(&mut self, id: SchedId, op: Option<ReduceFn>) {
        self.scheds.slots[id].op = op;
        self.scheds.live += 1;
        self.advance_sched(id);
    }

    /// Whether schedule `id` has ended (its outcome waits for [`Engine::finish_sched`]).
    pub(crate) fn sched_done(&self, id: SchedId) -> bool {
        self.scheds.slots[id].outcome.is_some()
    }

    /// The peer the round in flight of schedule `id` waits on first, to spin on while waiting.
    fn sched_hint(&self, id: SchedId) -> Option<usize> {
        let s = &self.scheds.slots[id];
        s.waiting.iter().find(|&&r| !self.is_done(r)).and_then(|&r| self.hint(r))
    }

    /// Frees an ended schedule and hands over its outcome.
    pub(crate) fn finish_sched(&mut self, id: SchedId) -> Result<()> {
        let outcome = self.scheds.slots[id].outcome.take().expect("the schedule has ended");
        self.scheds.release(id);
        self.scheds.live -= 1;
        outcome
    }

    /// Whether a polled step is in flight.
    pub(crate) fn sched_polling(&self) -> bool {
        self.scheds.live > 0 && self.scheds.slots.iter().any(|s| !s.polling.is_empty())
    }

    /// How long a waiter that would sleep `t` sleeps: a short nap while a polled step is in
    /// flight (nothing wakes it when the word it waits on changes).
    pub(crate) fn sched_nap(&self, t: std::time::Duration) -> std::time::Duration {
        match self.sched_polling() {
            true => t.min(POLLED_NAP),
            false => t,
        }
    }

    /// Moves every live schedule on as far as it goes now; true if any did.
    #[inline]
    pub(crate) fn advance_scheds(&mut self) -> bool {
        self.scheds.live > 0 && self.advance_every_sched()
    }

    fn advance_every_sched(&mut self) -> bool {
        let mut moved = false;
        for id in 0..self.scheds.slots.len() {
            let s = &self.scheds.slots[id];
            if s.in_use && s.outcome.is_none() {
                moved |= self.advance_sched(id);
            }
        }
        moved
    }

    /// Ends rounds of schedule `id` whose messages and polled steps are done and starts the
    /// next ones; whether a round or a polled step ended.
    fn advance_sched(&mut self, id: SchedId) -> bool {
        let msgs_done = |s: &Sched, e: &Engine<C>| s.waiting.iter().all(|&r| e.is_done(r));
        let s = &self.scheds.slots[id];
        if s.outcome.is_some() || (s.polling.is_empty() && !msgs_done(s, self)) {
            return false;
        }
        // Out of its slot while it runs (no memory moves), so the engine is free to use.
        let mut s = std::mem::take(&mut self.scheds.slots[id]);
        let mut moved = false;
        loop {
            if !s.polling.is_empty() {
                moved |= s.poll_steps(|context| self.context_revoked(context));
            }
            if s.outcome.is_some() || !s.polling.is_empty() || !msgs_done(&s, self) {
                break;
            }
            moved = true;
            let mut failed = None;
            for r in s.waiting.drain(..) {
                match self.finish(r) {
                    Ok(_) => {}
                    Err(e @ Error::Truncated { .. }) => {
                        s.truncated.get_or_insert(e);
                    }
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failed {
                s.outcome = Some(Err(e));
                break;
            }
            if s.started > 0 {
                let (from, to) = (s.begin(s.started - 1).1, s.ends[s.started - 1].1);
                for &step in &s.locals[from..to] {
                    // SAFETY: the writer points steps at scratch or lent buffers of `len`
                    // bytes, and the messages writing them have completed.
                    unsafe {
                        match step {
                            Local::Combine { from, into, len } => {
                                let op = s.op.as_mut().expect("a schedule that combines has a reduction");
                                op(std::slice::from_raw_parts(from, len), std::slice::from_raw_parts_mut(into, len));
                            }
                            Local::Copy { from, to, len } => crate::copy::copy_own(from, to, len),
                        }
                    }
                }
            }
            if s.started == s.ends.len() {
                s.outcome = Some(s.truncated.take().map_or(Ok(()), Err));
                break;
            }
            let (from, to) = (s.begin(s.started).0, s.ends[s.started].0);
            s.started += 1;
            for &msg in &s.msgs[from..to] {
                // SAFETY: as above: the buffers stay valid until the schedule is finished.
                let started = unsafe {
                    match msg {
                        Msg::Send { peer, context, source, tag, buf, len, rendezvous } => {
                            self.isend(peer, context, source, tag, buf, len, rendezvous)
                        }
                        Msg::Recv { pattern, hint, buf, cap } => Some(self.irecv(pattern, hint, buf, cap)),
                        Msg::Multicast { peers: (at, n), context, source, tag, buf, len } => {
                            let peers = &s.peers[at..at + n];
                            if !self.multicast(peers, context, source, tag, buf, len) {
                                for &peer in peers {
                                    s.waiting.extend(self.isend(peer, context, source, tag, buf, len, false));
                                }
                            }
                            None
                        }
                        Msg::Polled(k) => {
                            s.polling.extend(s.polled[k].take());
                            None
                        }
                    }
                };
                s.waiting.extend(started);
            }
        }
        self.scheds.slots[id] = s;
        moved
    }
}

impl Shared {
    /// Waits for schedule `id` to end, then frees it and hands over its outcome. While a
    /// round waits on one peer, the wait spins on that peer, as a blocking receive does.
    pub(crate) fn wait_sched(&self, id: SchedId) -> Result<()> {
        let mut engine = self.lock();
        while !engine.sched_done(id) {
            let hint = engine.sched_hint(id);
            engine = self.wait_locked(engine, hint, |e| e.sched_done(id) || e.sched_hint(id) != hint);
        }
        engine.finish_sched(id)
    }
}

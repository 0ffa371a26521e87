//! Nonblocking collectives as schedules the engine moves on itself: rounds of messages
//! advanced in every progress round, so an operation goes on in whatever call of the process
//! drives the engine (a blocking receive, a wait on something else), as a started send does,
//! with no thread of its own.
//!
//! A round's messages all start together. When every one has completed, the round's local
//! steps run (combine what came in, copy), then the next round starts. Every buffer address
//! is fixed when the schedule is built (`coll/nonblocking.rs`); scratch memory belongs to the
//! schedule.

use std::collections::VecDeque;

use super::matching::Pattern;
use super::progress::Engine;
use super::request::ReqId;
use crate::Result;

/// A reduction owned by a schedule: `op(invec, inoutvec)` sets `inoutvec = invec ⊕ inoutvec`.
pub type ReduceFn = Box<dyn FnMut(&[u8], &mut [u8]) + Send>;

/// One message of a round.
pub(crate) enum Msg {
    /// `len` bytes at `buf` to world rank `peer`, with this envelope.
    Send {
        peer: usize,
        context: u32,
        source: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    },
    Recv {
        pattern: Pattern,
        hint: Option<usize>,
        buf: *mut u8,
        cap: usize,
    },
}

/// A step a rank takes alone once a round's messages are done.
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

#[derive(Default)]
pub(crate) struct Round {
    pub msgs: Vec<Msg>,
    pub then: Vec<Local>,
}

pub(crate) struct Sched {
    /// Rounds not started yet.
    rounds: VecDeque<Round>,
    /// The round in flight: its requests (sends that completed as they started are not
    /// here) and the local steps that follow it.
    waiting: Vec<ReqId>,
    then: Vec<Local>,
    op: Option<ReduceFn>,
    /// Memory the rounds point into, kept until the schedule is finished.
    _scratch: Vec<Box<[u8]>>,
    outcome: Option<Result<()>>,
}

// SAFETY: the raw pointers point into the schedule's own scratch or into buffers its caller
// lends it until it is finished; neither is tied to a thread.
unsafe impl Send for Sched {}

impl Sched {
    pub(crate) fn new(rounds: Vec<Round>, op: Option<ReduceFn>, scratch: Vec<Box<[u8]>>) -> Sched {
        Sched { rounds: rounds.into(), waiting: Vec::new(), then: Vec::new(), op, _scratch: scratch, outcome: None }
    }
}

pub type SchedId = usize;

/// The engine's schedules in flight, by id (slots are reused).
#[derive(Default)]
pub(crate) struct Scheds {
    slots: Vec<Option<Sched>>,
    live: usize,
}

impl Engine {
    /// Starts a schedule: its first round goes out now.
    pub(crate) fn start_sched(&mut self, s: Sched) -> SchedId {
        let scheds = &mut self.scheds;
        let id = match scheds.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                scheds.slots.push(None);
                scheds.slots.len() - 1
            }
        };
        scheds.slots[id] = Some(s);
        scheds.live += 1;
        self.advance_sched(id);
        id
    }

    /// Whether schedule `id` has ended (its outcome waits for [`Engine::finish_sched`]).
    pub(crate) fn sched_done(&self, id: SchedId) -> bool {
        self.scheds.slots[id].as_ref().is_some_and(|s| s.outcome.is_some())
    }

    /// Frees an ended schedule and hands over its outcome.
    pub(crate) fn finish_sched(&mut self, id: SchedId) -> Result<()> {
        let scheds = &mut self.scheds;
        let s = scheds.slots[id].take().expect("a schedule is finished once");
        scheds.live -= 1;
        s.outcome.expect("the schedule has ended")
    }

    /// Moves every live schedule on as far as it goes now; true if any did.
    #[inline]
    pub(crate) fn advance_scheds(&mut self) -> bool {
        self.scheds.live > 0 && self.advance_every_sched()
    }

    fn advance_every_sched(&mut self) -> bool {
        let mut moved = false;
        for id in 0..self.scheds.slots.len() {
            moved |= self.advance_sched(id);
        }
        moved
    }

    /// Ends rounds of schedule `id` whose messages are done and starts the next ones.
    fn advance_sched(&mut self, id: SchedId) -> bool {
        let Some(mut s) = self.scheds.slots[id].take() else { return false };
        let mut moved = false;
        while s.outcome.is_none() && s.waiting.iter().all(|&r| self.is_done(r)) {
            moved = true;
            let mut failed = None;
            for r in std::mem::take(&mut s.waiting) {
                if let Err(e) = self.finish(r) {
                    failed.get_or_insert(e);
                }
            }
            if let Some(e) = failed {
                s.outcome = Some(Err(e));
                break;
            }
            for step in std::mem::take(&mut s.then) {
                // SAFETY: the builder points steps at scratch or lent buffers of `len` bytes,
                // and the messages writing them have completed.
                unsafe {
                    match step {
                        Local::Combine { from, into, len } => {
                            let op = s.op.as_mut().expect("a schedule that combines has a reduction");
                            op(std::slice::from_raw_parts(from, len), std::slice::from_raw_parts_mut(into, len));
                        }
                        Local::Copy { from, to, len } => std::ptr::copy(from, to, len),
                    }
                }
            }
            let Some(round) = s.rounds.pop_front() else {
                s.outcome = Some(Ok(()));
                break;
            };
            for msg in round.msgs {
                // SAFETY: as above: the buffers stay valid until the schedule is finished.
                let started = unsafe {
                    match msg {
                        Msg::Send { peer, context, source, tag, buf, len } => {
                            self.isend(peer, context, source, tag, buf, len, false)
                        }
                        Msg::Recv { pattern, hint, buf, cap } => Some(self.irecv(pattern, hint, buf, cap)),
                    }
                };
                s.waiting.extend(started);
            }
            s.then = round.then;
        }
        self.scheds.slots[id] = Some(s);
        moved
    }
}

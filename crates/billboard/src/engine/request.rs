//! Requests: the state of every operation in flight, in a slab indexed by handle.
//!
//! Buffers are raw pointers here: the native API's `Request<'a>` borrows the user's buffer for
//! as long as the handle lives, and the MPI layer has the standard's rule that a buffer stays
//! untouched until its request completes.

use crate::transport::Header;
use crate::Error;

pub type ReqId = u32;

/// What a completed receive reports. `source` is the sender's rank in the communicator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub source: u32,
    pub tag: i32,
    pub bytes: usize,
    pub cancelled: bool,
}

/// A shared copy's claim word before one is free.
pub(crate) const NO_SLOT: u16 = u16::MAX;

pub(crate) enum State {
    Free,
    Done,
    /// Waiting for room in the peer's ring behind earlier sends (kept in `Engine::queued`);
    /// `header` holds the match information.
    SendQueued {
        header: Header,
        buf: *const u8,
        len: usize,
    },
    /// RTS posted: waiting for the receiver's FIN (single copy) or CTS (pipeline).
    SendRendezvous {
        buf: *const u8,
        len: usize,
    },
    /// Pushing DATA chunks to `peer` (the machine in `pipeline.rs`); `cursor` follows its
    /// offset in the request's `gather` blocks, if any.
    SendPipeline {
        peer: usize,
        buf: *const u8,
        cursor: super::scatter::Cursor,
        pipe: super::pipeline::PipelineSend,
    },
    /// Asked by the receiver's SHARE: writing pages it claims from the back into the
    /// receiver's buffer (the machine in `shared_copy.rs`). Then PUSHED, and back to waiting
    /// for FIN as `SendRendezvous`.
    SendShared {
        peer: usize,
        buf: *const u8,
        help: super::shared_copy::SharedSend,
    },
    /// Posted in the matcher.
    RecvPosted {
        buf: *mut u8,
        cap: usize,
    },
    /// Matched an RTS: copying from `peer`'s memory into `buf` (the machine in
    /// `single_copy.rs`; a gathered send's block list goes into the request's `gather`).
    RecvSingleCopy {
        peer: usize,
        buf: *mut u8,
        copy: super::single_copy::SingleCopy,
    },
    /// Matched an RTS of a large contiguous message: a shared copy, the receiver reading from
    /// the front while the sender writes from the back (the machine in `shared_copy.rs`).
    RecvShared {
        peer: usize,
        buf: *mut u8,
        copy: super::shared_copy::SharedRecv,
    },
    /// Matched an RTS without single copy: DATA chunks arriving (the machine in `pipeline.rs`;
    /// `cursor` follows them in the request's `scatter` blocks, if any).
    RecvPipeline {
        buf: *mut u8,
        cursor: super::scatter::Cursor,
        pipe: super::pipeline::PipelineRecv,
    },
}

impl State {
    /// Where a send to a peer stands in its rendezvous (`rendezvous.rs`); None for anything
    /// but a send still waiting on the receiver.
    #[inline]
    pub fn send_phase(&self) -> Option<super::rendezvous::Phase> {
        use super::rendezvous::Phase;
        match self {
            State::SendQueued { .. } => Some(Phase::Queued),
            State::SendRendezvous { .. } => Some(Phase::Waiting),
            State::SendShared { .. } => Some(Phase::Helping),
            State::SendPipeline { .. } => Some(Phase::Pipelining),
            _ => None,
        }
    }
}

pub(crate) struct Request {
    pub state: State,
    pub completion: Completion,
    pub error: Option<Error>,
    /// The world rank this request waits on, polled first while waiting.
    pub hint: Option<usize>,
    /// A receive into several blocks (a non-contiguous datatype): where the bytes go, in
    /// order; `None` for one contiguous buffer (`buf`, `cap` of the state).
    pub scatter: Option<Box<[super::scatter::Block]>>,
    /// Where the bytes come from when not one contiguous buffer: a send's own blocks (kept
    /// alive here until it completes: the receiver may read the list), or, for a single-copy
    /// receive, the sender's blocks (addresses in its memory).
    pub gather: Option<Box<[super::scatter::Block]>>,
    /// The native API's scope that started it (0: none), which waits for it at its end if
    /// the program leaked its handle (`api/scope.rs`).
    pub scope: u32,
}

/// Requests by handle, with a free list so steady-state traffic allocates nothing.
#[derive(Default)]
pub(crate) struct Slab {
    reqs: Vec<Request>,
    free: Vec<ReqId>,
}

impl Slab {
    pub fn insert(&mut self, state: State, hint: Option<usize>) -> ReqId {
        match self.free.pop() {
            Some(id) => {
                // A freed entry already has no error, no blocks and no scope (see `remove`): set the
                // rest field by field instead of moving a whole request in.
                let req = &mut self.reqs[id as usize];
                req.state = state;
                req.completion = Completion::default();
                req.hint = hint;
                id
            }
            None => {
                let req = Request {
                    state,
                    completion: Completion::default(),
                    error: None,
                    hint,
                    scatter: None,
                    gather: None,
                    scope: 0,
                };
                self.reqs.push(req);
                (self.reqs.len() - 1) as ReqId
            }
        }
    }

    pub fn remove(&mut self, id: ReqId) {
        debug_assert!(!matches!(self.reqs[id as usize].state, State::Free), "request {id} freed twice");
        self.reqs[id as usize].state = State::Free;
        self.reqs[id as usize].error = None;
        self.reqs[id as usize].scatter = None;
        self.reqs[id as usize].gather = None;
        self.reqs[id as usize].scope = 0;
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: ReqId) -> &Request {
        &self.reqs[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: ReqId) -> &mut Request {
        &mut self.reqs[id as usize]
    }

    /// A request id that came over the wire, checked before use.
    pub fn lookup_mut(&mut self, id: u64) -> Option<&mut Request> {
        self.reqs.get_mut(usize::try_from(id).ok()?).filter(|r| !matches!(r.state, State::Free))
    }

    /// Whether `id` is an operation in flight or done but not yet finished.
    #[inline]
    pub fn in_use(&self, id: ReqId) -> bool {
        self.reqs.get(id as usize).is_some_and(|r| !matches!(r.state, State::Free))
    }

    /// Done, or not in use at all: nothing to wait for.
    #[inline]
    pub fn settled(&self, id: ReqId) -> bool {
        self.reqs.get(id as usize).is_none_or(|r| matches!(r.state, State::Done | State::Free))
    }

    /// Ids of the requests in use that scope `scope` started.
    pub fn in_scope(&self, scope: u32) -> Vec<ReqId> {
        (0..self.reqs.len() as ReqId).filter(|&id| self.in_use(id) && self.reqs[id as usize].scope == scope).collect()
    }

    /// Ids of every request in use.
    pub fn in_use_ids(&self) -> impl Iterator<Item = ReqId> + '_ {
        (0..self.reqs.len() as ReqId).filter(|&id| self.in_use(id))
    }

    /// Handles in use or free: ids below this may be looked at.
    pub fn len(&self) -> usize {
        self.reqs.len()
    }

    #[inline]
    pub fn is_done(&self, id: ReqId) -> bool {
        matches!(self.reqs[id as usize].state, State::Done)
    }

    /// Marks `id` complete.
    #[inline]
    pub fn complete(&mut self, id: ReqId) {
        self.reqs[id as usize].state = State::Done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_reuses_freed_handles() {
        let mut s = Slab::default();
        let a = s.insert(State::Done, None);
        let b = s.insert(State::Done, None);
        assert_ne!(a, b);
        s.remove(a);
        assert!(s.lookup_mut(a as u64).is_none(), "a freed handle is not found");
        assert_eq!(s.insert(State::Done, None), a);
        assert!(s.lookup_mut(99).is_none());
    }

    /// The protocol machines live inside a request's state: they may not make every request
    /// (the small-message path inserts and frees them) bigger than it was (64 bytes).
    #[test]
    fn the_state_stays_within_a_cache_line() {
        assert!(std::mem::size_of::<State>() <= 64, "{} bytes", std::mem::size_of::<State>());
    }
}

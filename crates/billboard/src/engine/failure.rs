//! Failed peers: a route that broke, or a peer whose records break the protocol.
//!
//! A copy that finds the peer's process gone (ESRCH) is a third way ([`Core::gone`]), and a
//! claim word the receiver of our shared copy closed (it failed us) a fourth.
//!
//! All end the same way: every request that depends on the peer completes with
//! [`Error::PeerGone`] naming it and what happened, later ones fail as they start, and nothing
//! more it sends is handled. A record a well-behaved peer cannot send (an unknown kind, a
//! payload of the wrong length, a request id that is not one of ours in the state the record
//! needs, bytes outside the message, a context no communicator can have) is such a fault: it
//! fails its sender, never this process (no panic, no write outside a buffer). A peer failed
//! so lives on: before the round returns, its route closes and so do the claim words of its
//! shared copies into this rank (`Engine::close_peer`), so it writes no more pages into the
//! buffers of the receives that failed, and, finding the word closed, fails this rank in turn.
//!
//! What each state does when its peer fails (each machine's own event: `rendezvous.rs`'s
//! `PeerFailed`, `shared_copy.rs`'s `RecvEvent::PeerFailed`):
//!
//! | state                              | fails                                    | and        |
//! |------------------------------------|------------------------------------------|------------|
//! | SendQueued, SendRendezvous, SendShared, SendPipeline to it | the send       | leaves the queue / active list |
//! | RecvPosted naming it (or any source, if it is not a joined peer) | the receive | leaves the matcher |
//! | RecvSingleCopy, RecvPipeline from it | the receive                            | -          |
//! | RecvShared from it                 | the receive                              | frees its claim word |
//! | a direct receive that may be its   | the receive                              | -          |
//!
//! What each record kind may name (see `protocol.rs` for the records):
//!
//! | record | names                 | which must be                                               |
//! |--------|-----------------------|-------------------------------------------------------------|
//! | FIN    | our send request      | a send to the sender whose phase takes it (`rendezvous.rs`) |
//! | CTS    | our send request      | the same; payload: the receive request (4 bytes)             |
//! | SHARE  | our send request      | the same (waiting, not helping yet); claim word < CLAIM_WORDS |
//! | PUSHED | our receive request   | a shared copy from the sender that asked (SHARE) and was not told yet; pages inside the message (`shared_copy.rs`) |
//! | DATA   | our receive request   | a pipelined receive from the sender; the bytes inside the message and not past its length |

use super::*;
use crate::engine::rendezvous::{answer, Answer, Step};
use crate::engine::shared_copy::{RecvAction, RecvEvent};

impl Core {
    /// A request that has already failed because `peer`'s route broke.
    pub(super) fn failed_request(&mut self, peer: usize) -> ReqId {
        let id = self.reqs.insert(State::Done, Some(peer));
        let why = self.failed[peer].clone().unwrap_or_default();
        self.reqs.get_mut(id).error = Some(Error::PeerGone { rank: peer, reason: why });
        id
    }

    /// `peer`'s route broke: every request that depends on it fails now, naming it, and so will
    /// later ones. Wildcard receives fail too (the message they wait for may have been the lost
    /// peer's), as MPI's fault-tolerance proposal has it; nothing waits forever.
    pub(super) fn fail_peer(&mut self, peer: usize, why: String) {
        if self.failed[peer].is_some() {
            return;
        }
        crate::verbose(format_args!("rank {peer} failed: {why}"));
        self.failed[peer] = Some(why.clone());
        self.any_failed = true;
        let gone = |why: &str| Error::PeerGone { rank: peer, reason: why.to_string() };
        for id in self.queued[peer].drain(..) {
            self.queued_total -= 1;
            let req = self.reqs.get_mut(id);
            req.error = Some(gone(&why));
            req.state = State::Done;
        }
        self.control.retain(|c| c.0 != peer);
        if let Some(d) = self.direct.as_mut().filter(|d| d.outcome.is_none()) {
            if (d.hint.is_none() && peer < self.joined_from) || d.hint == Some(peer) {
                d.outcome = Some(Outcome::Done(Err(gone(&why))));
            }
        }
        for id in 0..self.reqs.len() as ReqId {
            let req = self.reqs.get_mut(id);
            let named = req.hint == Some(peer);
            let depends = match &mut req.state {
                State::Free | State::Done => false,
                State::RecvPosted { .. } => {
                    let wildcard = req.hint.is_none() && peer < self.joined_from;
                    (named || wildcard) && self.matcher.cancel(id)
                }
                // The claim word it opened is free again (no copy of the dead sender's can
                // start, but the word is the pair's, not the message's).
                State::RecvShared { copy, .. } if named => match copy.handle(RecvEvent::PeerFailed) {
                    RecvAction::Failed { slot } => {
                        self.free_claim(peer, slot);
                        true
                    }
                    other => unreachable!("a failed sender gave {other:?}"),
                },
                s @ (State::SendQueued { .. }
                | State::SendRendezvous { .. }
                | State::SendShared { .. }
                | State::SendPipeline { .. }) => {
                    let phase = s.send_phase().expect("a send");
                    named && answer(phase, Answer::PeerFailed) == Step::Fail
                }
                _ => named,
            };
            if depends {
                let req = self.reqs.get_mut(id);
                req.error = Some(gone(&why));
                req.state = State::Done;
            }
        }
    }

    /// A read or write of `peer`'s memory failed with `e`: true if that says its process is
    /// gone (ESRCH after a copy with it has worked), which fails it now. Taken for a refusal,
    /// it would give up copying with `peer` for good and send a CTS or PUSHED to no one, and
    /// the request would wait until a route noticed the death. ESRCH before any copy worked is
    /// a refusal: a peer in another pid namespace (a container) publishes a pid we cannot see.
    pub(super) fn gone(&mut self, peer: usize, e: &std::io::Error) -> bool {
        if e.raw_os_error() != Some(libc::ESRCH) || !self.copied[peer] {
            return false;
        }
        self.fail_peer(peer, format!("its process is gone ({e})"));
        true
    }

    /// `peer` sent a record it cannot have sent if it kept the protocol: it fails as if its
    /// route broke, and its route is closed at the end of this poll (see [`Engine::progress`]).
    #[cold]
    #[inline(never)]
    pub(super) fn malformed(&mut self, peer: usize, what: std::fmt::Arguments<'_>) {
        if self.failed[peer].is_some() {
            return;
        }
        self.fail_peer(peer, format!("it broke the message protocol: {what}"));
        self.to_close.push(peer);
    }

    /// The receive request a DATA or PUSHED record from `peer` names (`id`), if it is one of
    /// ours from `peer`, in the state `expected` accepts.
    #[inline]
    pub(super) fn receive_from(&mut self, peer: usize, id: u64, expected: fn(&State) -> bool) -> Option<ReqId> {
        let req = self.reqs.lookup_mut(id)?;
        (expected(&req.state) && req.hint == Some(peer)).then_some(id as ReqId)
    }
}

//! Revoked communicators (MPIX_Comm_revoke, MPI's fault-tolerance proposal ULFM): a member
//! revokes a communicator, and every member learns of it from a REVOKE record, whatever it is
//! doing, and fails what waits on it. A communicator is its context pair (`base`: point to
//! point; `base + 1`: the library's collectives), so revoking it revokes both contexts:
//!
//! - its posted receives fail with [`Error::Revoked`] (a blocking one waiting directly too);
//! - its unexpected messages are dropped, and the sender of each rendezvous offer among them is
//!   released with a FIN, as if the message had been taken (its send completes: its buffer is
//!   free again; ULFM lets a send that needs no matching receive complete);
//! - new sends and receives on it fail as they start, and records that arrive on it later are
//!   dropped (a rendezvous offer released the same way).
//!
//! - except the library's own traffic tagged [`TAG_SURVIVES_REVOKE`] on the collective
//!   context: MPIX_Comm_agree and MPIX_Comm_shrink, which ULFM makes work on a revoked
//!   communicator (`api/recover.rs`); their posted receives and unexpected messages stay.
//!
//! A collective waiting on the shared-memory board sees the revocation in its wait and gives
//! up, and posts nothing more there (`coll/board.rs`, `revoked_in_wait`).
//!
//! Operations already moving data (a matched rendezvous) finish normally: the peer is not
//! failed, and failing them halfway would leave its records naming requests we no longer have.
//! Contexts are revoked for good, and a revoked id is never used again: a member that knows its
//! communicator was revoked does not give the id back when it frees it (`api/comm.rs`), and a
//! free id that a notice names is taken out of the free mask (`api/context.rs`, `reclaim`), so
//! no later communicator is born revoked. A notice can come late: its member may have freed the
//! communicator and agreed on the same id for a new one without the revoker (who never gives
//! the id back, so it cannot be in it). So each communicator registers its members here
//! ([`Holders`]), and a notice from a process that is not a member of the communicator holding
//! the id is stale and dropped. (Not an epoch: ids would need agreeing on it too.) The set is
//! readable without the engine's lock: the MPI layer checks it at every call on a communicator.
//!
//! An intercommunicator is revoked at the members of both groups; each member's hidden
//! intracommunicator of its own group (where the collectives' local phases run) goes with it,
//! registered as the intercommunicator's `linked` pair. So do the communicators a
//! hierarchical communicator keeps for its collectives' phases (its host's members, its
//! hosts' leaders: `coll/hier_board.rs`), registered as its `kept` pairs: a rank blocked in a
//! host phase is woken by the parent's revocation.
//!
//! | record | aux                       | which must be                                  |
//! |--------|---------------------------|------------------------------------------------|
//! | REVOKE | the context pair's `base` | even, and `base + 1` below `MAX_CONTEXTS`       |

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A tag bit of the library's collective context (`base + 1`, where no user tag goes) whose
/// traffic a revocation leaves alone: MPIX_Comm_agree and MPIX_Comm_shrink use it, since ULFM
/// makes them work on a revoked communicator (they are how a program recovers).
pub(crate) const TAG_SURVIVES_REVOKE: i32 = 1 << 28;

/// Whether traffic on `context` with `tag` survives a revocation of it.
#[inline]
fn survives(context: u32, tag: i32) -> bool {
    context % 2 == 1 && tag & TAG_SURVIVES_REVOKE != 0
}

use super::*;
use crate::engine::matching::MAX_CONTEXTS;

/// The revoked contexts: one bit each, set once and never cleared.
pub(crate) struct Revoked {
    bits: Box<[AtomicU64]>,
    any: AtomicBool,
}

impl Default for Revoked {
    fn default() -> Revoked {
        Revoked {
            bits: (0..MAX_CONTEXTS.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            any: AtomicBool::new(false),
        }
    }
}

impl Revoked {
    /// Whether `context` is revoked. Relaxed: a revocation seen a little late is the same as one
    /// that arrived a little later, which the protocol allows anyway.
    #[inline]
    pub(crate) fn contains(&self, context: u32) -> bool {
        self.any.load(Ordering::Relaxed)
            && self
                .bits
                .get((context / 64) as usize)
                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (context % 64)) != 0)
    }

    /// Whether any context was revoked.
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Marks `context`; false if it was already.
    fn insert(&self, context: u32) -> bool {
        let Some(word) = self.bits.get((context / 64) as usize) else { return false };
        self.any.store(true, Ordering::Relaxed);
        word.fetch_or(1 << (context % 64), Ordering::Relaxed) & (1 << (context % 64)) == 0
    }
}

/// Who holds a context pair here: its members' peer numbers (both groups of an
/// intercommunicator), the pair revoked with it (an intercommunicator's hidden local
/// communicator), and the key of the registration (several views may share a pair); and the
/// pairs each pair's communicator keeps for its collectives (`kept`, revoked with it; held
/// apart from the registration, which MPI_COMM_WORLD's pair has none of).
#[derive(Default)]
pub(crate) struct Holders(std::collections::HashMap<u32, Holder>, std::collections::HashMap<u32, Vec<u32>>);

struct Holder {
    members: Vec<usize>,
    linked: Option<u32>,
    key: u64,
}

impl Core {
    /// Whether an operation on `context` with `tag` (`None`: any tag) must fail as it starts.
    #[inline(always)]
    pub(super) fn revoked_context(&self, context: u32, tag: Option<i32>) -> bool {
        self.any_revoked && self.revoked.contains(context) && !tag.is_some_and(|t| survives(context, t))
    }

    /// A request that has already failed because its communicator (`context`) was revoked.
    #[cold]
    pub(super) fn revoked_request(&mut self, context: u32) -> ReqId {
        let id = self.reqs.insert(State::Done, None);
        self.reqs.get_mut(id).error = Some(Error::Revoked { context: context & !1 });
        id
    }

    /// Revokes context pair `base` here (see the module's comment).
    pub(super) fn revoke(&mut self, base: u32) {
        self.any_revoked = true;
        for context in [base, base + 1] {
            if !self.revoked.insert(context) {
                continue;
            }
            let (posted, unexpected) = self.matcher.drain_context_keeping(context, |tag| survives(context, tag));
            for id in posted {
                let req = self.reqs.get_mut(id);
                req.error = Some(Error::Revoked { context: base });
                req.state = State::Done;
            }
            for (_, msg) in unexpected {
                if let Pending::Rts { peer, send_req, .. } = msg {
                    self.send_control(peer, FIN, send_req as u64, &[]);
                }
            }
            let waits = |p: &Pattern| p.context == context && !p.tag.is_some_and(|t| survives(context, t));
            if let Some(d) = self.direct.as_mut().filter(|d| d.outcome.is_none() && waits(&d.pattern)) {
                d.outcome = Some(Outcome::Done(Err(Error::Revoked { context: base })));
            }
        }
        let linked = self.holders.0.get(&base).and_then(|h| h.linked);
        let kept = self.holders.1.get(&base).cloned().unwrap_or_default();
        for pair in linked.into_iter().chain(kept) {
            if !self.revoked.contains(pair) {
                self.revoke(pair);
            }
        }
    }

    /// A REVOKE record from `peer`: stale (dropped) if the communicator holding that pair here
    /// does not have `peer` among its members (see the module's comment).
    pub(super) fn on_revoke(&mut self, peer: usize, h: &Header) {
        match u32::try_from(h.aux) {
            Ok(base) if base % 2 == 0 && base + 1 < MAX_CONTEXTS => {
                if self.holders.0.get(&base).is_none_or(|holder| holder.members.contains(&peer)) {
                    self.revoke(base)
                }
            }
            _ => self.malformed(peer, format_args!("a REVOKE record for context {}", h.aux)),
        }
    }

    /// A record on a revoked `context` is dropped; a rendezvous offer's sender is released.
    #[cold]
    pub(super) fn drop_revoked(&mut self, peer: usize, kind: u32, payload: &[u8]) {
        if kind == RTS {
            match Rts::decode(payload) {
                Some(rts) => self.send_control(peer, FIN, rts.send_req as u64, &[]),
                None => self.malformed(peer, format_args!("an RTS record of {} payload bytes", payload.len())),
            }
        }
    }
}

impl<C: Channel> Engine<C> {
    /// Revokes the communicator of context pair `base` whose members are the world ranks
    /// `members`: here at once, at the others when their REVOKE record arrives.
    pub(crate) fn revoke(&mut self, base: u32, members: &[usize], me: usize) {
        self.core.revoke(base);
        for &peer in members.iter().filter(|&&p| p != me) {
            self.core.send_control(peer, REVOKE, base as u64, &[]);
        }
    }

    /// Whether an operation on `context` must fail, its communicator revoked (a schedule's
    /// polled step ends then, `sched.rs`).
    #[inline]
    pub(crate) fn context_revoked(&self, context: u32) -> bool {
        self.core.revoked_context(context, None)
    }

    /// The revoked contexts, to read without the engine's lock.
    pub(crate) fn revoked(&self) -> Arc<Revoked> {
        self.core.revoked.clone()
    }

    /// A communicator (registration `key`) holds context pair `base` here, with the peers
    /// `members` and, for an intercommunicator, the `linked` pair of its hidden local one.
    pub(crate) fn hold(&mut self, base: u32, members: Vec<usize>, linked: Option<u32>, key: u64) {
        self.core.holders.0.insert(base, Holder { members, linked, key });
    }

    /// Registration `key` of pair `base` is gone (its communicator was dropped), and with it
    /// the pairs it kept.
    pub(crate) fn unhold(&mut self, base: u32, key: u64) {
        if self.core.holders.0.get(&base).is_some_and(|h| h.key == key) {
            self.core.holders.0.remove(&base);
            self.core.holders.1.remove(&base);
        }
    }

    /// The communicator of pair `base` keeps the communicator of pair `kept` for its
    /// collectives' phases: revoking `base` revokes `kept` too (already, if `base` is).
    pub(crate) fn keep(&mut self, base: u32, kept: u32) {
        self.core.holders.1.entry(base).or_default().push(kept);
        if self.core.revoked.contains(base) && !self.core.revoked.contains(kept) {
            self.core.revoke(kept);
        }
    }
}

//! What a program recovers with after a revocation (ULFM's MPIX_Comm_agree and
//! MPIX_Comm_shrink): both work on a revoked communicator, so their messages carry
//! [`TAG_SURVIVES_REVOKE`] on its collective context, which a revocation leaves alone
//! (`engine/revoke.rs`). No process fails while a job runs (a rank that dies ends the job), so
//! agree needs no failure detection and shrink keeps every member.
//!
//! Agree is a schedule the engine moves on (`coll/agree.rs`), so MPIX_Comm_iagree needs no
//! thread, and the blocking agree is its start and wait. Each agreement's messages carry a tag
//! of its own turn among the communicator's agreements ([`AGREES`]), never the board's epoch
//! sequence, so an iagree and a barrier started in different orders on different ranks (illegal,
//! but mpi4py's testIAgree does it) cannot take each other's part.
//!
//! On an intercommunicator both run over both groups, as ULFM defines them: agree is the AND of
//! every member's flag in both groups (each group's AND on its hidden local communicator, which
//! is revoked with the intercommunicator, the leaders' swap over the intercommunicator, the
//! result back down the group); shrink makes an intercommunicator of the survivors of both
//! groups (a shrunk hidden local communicator, a new context agreed over the union).

use super::comm::{Communicator, AGREES, BACKGROUND_SPAN};
use super::context;
use super::intercomm::{union_of, Remote};
use crate::engine::TAG_SURVIVES_REVOKE;
use crate::{Collective, Result};

/// The tags of agreements: turn `n` of the communicator's uses `TAG_AGREE + n % SPAN` (a
/// range no other survivor of a revocation uses: shrink's below, intercommunicator creations'
/// `TAG_INTER` range).
const TAG_AGREE: i32 = TAG_SURVIVES_REVOKE | (4 * BACKGROUND_SPAN as i32);
/// The tag of shrink's context agreement.
const TAG_SHRINK: i32 = TAG_SURVIVES_REVOKE | 2;

/// An MPIX_Comm_iagree in flight ([`Communicator::iagree`]). Dropping it waits for it to end
/// (the other members count on this one).
#[must_use = "an agreement completes only through wait/test (or its drop, which blocks)"]
pub struct Agreement {
    op: Collective,
    /// Where the operation leaves the result; boxed, so it stays put while `op` writes it.
    flag: Box<i32>,
}

impl Agreement {
    /// Makes progress once; true if the agreement has ended ([`Agreement::wait`] then returns at
    /// once).
    pub fn test(&self) -> bool {
        self.op.test()
    }

    /// Waits for the agreed flag.
    pub fn wait(self) -> Result<i32> {
        let Agreement { op, flag } = self;
        op.wait()?;
        Ok(*flag)
    }
}

impl Communicator {
    /// MPIX_Comm_agree: the bitwise AND of every member's `flag` (both groups' of an
    /// intercommunicator), in every member (collective), on a revoked communicator too.
    pub fn agree(&self, flag: i32) -> Result<i32> {
        self.iagree(flag)?.wait()
    }

    /// MPIX_Comm_iagree: starts a [`Communicator::agree`]. Collective: every member starts its
    /// agreements on this communicator in the same order (blocking and nonblocking alike), in
    /// any order with its other collectives.
    pub fn iagree(&self, flag: i32) -> Result<Agreement> {
        let mut flag = Box::new(flag);
        // SAFETY: the box stays put, unread, until the operation ended (`Agreement`).
        let op = unsafe { self.iagree_raw(&mut *flag)? };
        Ok(Agreement { op, flag })
    }

    /// [`Communicator::iagree`] of the flag at `flag`, read now; the agreed one is written
    /// there when the operation ends.
    ///
    /// # Safety
    /// `flag` stays valid, and untouched by the caller, until the operation ends.
    pub unsafe fn iagree_raw(&self, flag: *mut i32) -> Result<Collective> {
        // SAFETY: as for this function.
        unsafe { self.start_agreement(self.next_tag(AGREES, TAG_AGREE), flag) }
    }

    /// MPIX_Comm_shrink: a new communicator of the members that have not failed (all of them,
    /// see the top), with a context of its own, made on a revoked communicator too
    /// (collective); of an intercommunicator, an intercommunicator of both groups' survivors.
    pub fn shrink(&self) -> Result<Communicator> {
        if let Some(remote) = self.remote() {
            return self.inter_shrink(remote);
        }
        let everyone: Vec<usize> = (0..self.size()).collect();
        let context = context::agree(self, &everyone, self.rank(), TAG_SHRINK)?;
        Ok(self.child(context, self.rank(), Some(self.member_list())))
    }

    fn inter_shrink(&self, remote: &Remote) -> Result<Communicator> {
        let turn = self.next_creation_turn();
        let local = remote.local().shrink()?;
        let mine = self.member_list();
        let (union, me) = union_of(&mine, &remote.members, remote.low, self.rank());
        // Agreed on the world's collective context (or the union's view of it), where a tag
        // that survives revocation keeps it working when the world was revoked too.
        let context = self.agree_union(&union, me, self.union_tag(turn) | TAG_SURVIVES_REVOKE)?;
        let new = Remote { members: remote.members.clone(), local, low: remote.low };
        Ok(self.inter_child(context, self.rank(), Some(mine), Some(new)))
    }
}

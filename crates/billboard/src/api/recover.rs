//! What a program recovers with after a revocation (ULFM's MPIX_Comm_agree and
//! MPIX_Comm_shrink): both work on a revoked communicator, so their messages carry
//! [`TAG_SURVIVES_REVOKE`] on its collective context, which a revocation leaves alone
//! (`engine/revoke.rs`). No process fails while a job runs (a rank that dies ends the job), so
//! agree needs no failure detection and shrink keeps every member.
//!
//! On an intercommunicator both run over both groups, as ULFM defines them: agree is the AND of
//! every member's flag in both groups (each group's AND on its hidden local communicator, which
//! is revoked with the intercommunicator, the leaders' swap over the intercommunicator, the
//! result back down the group); shrink makes an intercommunicator of the survivors of both
//! groups (a shrunk hidden local communicator, a new context agreed over the union).

use super::comm::Communicator;
use super::context;
use super::intercomm::{union_of, Remote};
use crate::engine::TAG_SURVIVES_REVOKE;
use crate::Result;

/// The tags of agree's reduction and of shrink's context agreement.
const TAG_AGREE: i32 = TAG_SURVIVES_REVOKE | 1;
const TAG_SHRINK: i32 = TAG_SURVIVES_REVOKE | 2;
/// An intercommunicator's agree: the leaders' swap, and the result down each group.
const TAG_AGREE_LEADERS: i32 = TAG_SURVIVES_REVOKE | 3;
const TAG_AGREE_RESULT: i32 = TAG_SURVIVES_REVOKE | 4;

impl Communicator {
    /// MPIX_Comm_agree: the bitwise AND of every member's `flag` (both groups' of an
    /// intercommunicator), in every member (collective), on a revoked communicator too.
    pub fn agree(&self, flag: i32) -> Result<i32> {
        let mut words = [flag as u32 as u64];
        let Some(remote) = self.remote() else {
            and_over(self, TAG_AGREE, &mut words)?;
            return Ok(words[0] as u32 as i32);
        };
        let local = remote.local();
        and_over(local, TAG_AGREE, &mut words)?;
        if local.rank() == 0 {
            words[0] &= self.swap_with(0, TAG_AGREE_LEADERS, &words, 1)?[0];
        } else {
            // The leader's word is the result: every other member lends the AND's identity.
            words[0] = u64::MAX;
        }
        and_over(local, TAG_AGREE_RESULT, &mut words)?;
        Ok(words[0] as u32 as i32)
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

/// The AND of every member's `words` of intracommunicator `comm`, in every member.
fn and_over(comm: &Communicator, tag: i32, words: &mut [u64]) -> Result<()> {
    let everyone: Vec<usize> = (0..comm.size()).collect();
    context::allreduce(comm, &everyone, comm.rank(), tag, words, false)
}

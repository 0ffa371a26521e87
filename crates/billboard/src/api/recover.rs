//! What a program recovers with after a revocation (ULFM's MPIX_Comm_agree and
//! MPIX_Comm_shrink): both work on a revoked communicator, so their messages carry
//! [`TAG_SURVIVES_REVOKE`] on its collective context, which a revocation leaves alone
//! (`engine/revoke.rs`). No process fails while a job runs (a rank that dies ends the job), so
//! agree needs no failure detection and shrink keeps every member.

use super::comm::Communicator;
use super::context;
use crate::engine::TAG_SURVIVES_REVOKE;
use crate::Result;

/// The tags of agree's reduction and of shrink's context agreement.
const TAG_AGREE: i32 = TAG_SURVIVES_REVOKE | 1;
const TAG_SHRINK: i32 = TAG_SURVIVES_REVOKE | 2;

impl Communicator {
    /// MPIX_Comm_agree: the bitwise AND of every member's `flag`, in every member (collective),
    /// on a revoked communicator too. An intercommunicator is refused.
    pub fn agree(&self, flag: i32) -> Result<i32> {
        self.intra_only("MPIX_Comm_agree's communicator")?;
        let everyone: Vec<usize> = (0..self.size()).collect();
        let mut words = [flag as u32 as u64];
        context::allreduce(self, &everyone, self.rank(), TAG_AGREE, &mut words, false)?;
        Ok(words[0] as u32 as i32)
    }

    /// MPIX_Comm_shrink: a new communicator of the members that have not failed (all of them,
    /// see the top), with a context of its own, made on a revoked communicator too
    /// (collective). An intercommunicator is refused.
    pub fn shrink(&self) -> Result<Communicator> {
        self.intra_only("MPIX_Comm_shrink's communicator")?;
        let everyone: Vec<usize> = (0..self.size()).collect();
        let context = context::agree(self, &everyone, self.rank(), TAG_SHRINK)?;
        Ok(self.child(context, self.rank(), Some(self.member_list())))
    }
}

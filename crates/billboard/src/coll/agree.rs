//! ULFM's agreement (MPIX_Comm_agree, MPIX_Comm_iagree: `api/recover.rs`) as a schedule: the
//! bitwise AND of every member's flag, up a binomial tree into rank 0 and back down; on an
//! intercommunicator each group's AND into its leader, the leaders' swap, and the AND of both
//! back down each group (on its hidden local communicator).
//!
//! Always by messages, never on the board: an agreement must work on a revoked communicator
//! (its tag carries `TAG_SURVIVES_REVOKE`, which a revocation leaves alone), and it must never
//! pair with another collective that a member started in another order (mpi4py's testIAgree
//! starts an iagree before a barrier on one rank and after it on the others); the board's one
//! epoch sequence would pair them, a tag of the agreement's own turn cannot.

use super::nonblocking::Plan;
use crate::engine::sched::Local;
use crate::{Collective, Communicator, Result};

/// Bytes of a flag (C's `int`).
const FLAG: usize = std::mem::size_of::<i32>();

impl Communicator {
    /// Starts the AND of every member's `*flag` (both groups' on an intercommunicator) with
    /// `tag`, read now; the result lands in `*flag` when the operation ends.
    ///
    /// # Safety
    /// `flag` stays valid, and untouched by the caller, until the operation ends.
    pub(crate) unsafe fn start_agreement(&self, tag: i32, flag: *mut i32) -> Result<Collective> {
        let op: super::ReduceFn = Box::new(|from: &[u8], into: &mut [u8]| {
            for (i, f) in into.iter_mut().zip(from) {
                *i &= f;
            }
        });
        self.schedule(tag, Some(op), |plan| plan.agreement(flag.cast()))
    }
}

impl Plan<'_, '_> {
    /// The rounds of [`Communicator::start_agreement`].
    fn agreement(&mut self, flag: *mut u8) -> Result<()> {
        let mine = self.scratch(FLAG, Some(flag));
        let all = self.scratch(FLAG, None);
        let inter = self.comm.is_inter();
        if inter {
            self.local();
        }
        self.reduce(mine, all, FLAG, 0)?;
        if inter && self.rank() == 0 {
            let theirs = self.scratch(FLAG, None);
            self.remote();
            self.recv(0, theirs, FLAG)?;
            self.send(0, all, FLAG)?;
            self.then(Local::Combine { from: theirs, into: all, len: FLAG });
            self.end_round();
            self.local();
        }
        self.bcast_binomial(all, FLAG, 0)?;
        // Written only as the operation ends, as MPIX_Comm_iagree promises.
        self.then(Local::Copy { from: all, to: flag, len: FLAG });
        self.end_round();
        Ok(())
    }
}

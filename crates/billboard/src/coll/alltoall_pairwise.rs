//! All-to-all by pairwise exchange (MPICH's long all-to-all): n-1 rounds, in round k every
//! rank sends its part for rank + k and receives the part of rank - k, so each rank talks to
//! one peer at a time instead of starting all n-1 transfers at once (which between hosts
//! queues n-1 large messages behind each other on every link).

use super::gather::Layout;
use super::nonblocking::Plan;
use super::schedule::wrap;
use crate::Result;

impl Plan<'_, '_> {
    /// Pairwise all-to-all (layouts checked by the caller). This rank's own part is copied at
    /// once.
    pub(super) fn alltoall_pairwise(
        &mut self,
        (send, _, out): (*const u8, usize, Layout),
        (recv, _, into): (*mut u8, usize, Layout),
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let ((sd, sl), (rd, rl)) = (out[me], into[me]);
        // SAFETY: parts lie inside the lent buffers (checked by the caller); they may overlap
        // only in place, where they are the same.
        unsafe { crate::copy::copy_own(send.add(sd), recv.add(rd), sl.min(rl)) };
        for k in 1..n as isize {
            let (to, from) = (wrap(me, k, n), wrap(me, -k, n));
            let ((d, l), (e, m)) = (out[to], into[from]);
            // Inside the lent buffers (checked by the caller); only the engine dereferences them.
            self.send(to, send.wrapping_add(d), l)?;
            self.recv(from, recv.wrapping_add(e), m)?;
            self.end_round();
        }
        Ok(())
    }
}

//! Neighbourhood exchanges (MPI_Neighbor_allgather ... alltoallw on a process topology): one
//! round in which each rank receives one part from each of its sources and sends one part to
//! each of its destinations. The MPI layer works out the neighbours and the parts; this moves
//! the bytes, as a schedule like the other nonblocking collectives.

use super::nonblocking::Collective;
use crate::{Communicator, Result};

/// One side of an exchange: a buffer and, per neighbour in order, the rank (`None` for
/// MPI_PROC_NULL: no message) and the part's `(offset, length)` in the buffer.
pub type Parts<'a, P> = (P, &'a [(Option<usize>, (usize, usize))]);

impl Communicator {
    /// Starts a neighbourhood exchange: part k of `recv` comes from source k, part k of `send`
    /// goes to destination k. Messages between one pair of ranks go in list order on the
    /// operation's own tag, so a neighbour named twice (a periodic dimension of size 1 or 2)
    /// is matched in order, as MPICH matches it.
    ///
    /// # Safety
    /// Every part lies inside its buffer, which stays valid (and the receive side untouched
    /// by the caller) until the operation ends.
    pub unsafe fn ineighbor_raw(&self, recv: Parts<'_, *mut u8>, send: Parts<'_, *const u8>) -> Result<Collective> {
        self.nonblocking(None, |plan| {
            for &(from, (at, len)) in recv.1 {
                if let Some(from) = from {
                    plan.recv(from, recv.0.wrapping_add(at), len)?;
                }
            }
            for &(to, (at, len)) in send.1 {
                if let Some(to) = to {
                    plan.send(to, send.0.wrapping_add(at), len)?;
                }
            }
            plan.end_round();
            Ok(())
        })
    }
}

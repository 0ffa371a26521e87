//! All-gather around a ring: in each of n-1 steps every rank passes the block it received last
//! to its right neighbour (the block it started with, first) and receives one from its left.
//! Every link carries each block once, so it suits large blocks between hosts (MPICH's long
//! all-gather; Thakur, Rabenseifner and Gropp 2005).

use super::blocks::Blocks;
use super::nonblocking::Plan;
use super::schedule::{ring_neighbours, wrap};
use crate::Result;

impl Plan<'_, '_> {
    /// All-gather of `blocks` of `buf` around the ring of the ranks addressed now, each rank's
    /// own block already in place.
    pub(super) fn allgather_ring(&mut self, buf: *mut u8, blocks: &Blocks) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let (left, right) = ring_neighbours(me, n);
        for step in 0..n.saturating_sub(1) as isize {
            self.send_block(right, buf, &blocks[wrap(me, -step, n)])?;
            self.recv_block(left, buf, &blocks[wrap(me, -step - 1, n)])?;
            self.end_round();
        }
        Ok(())
    }
}

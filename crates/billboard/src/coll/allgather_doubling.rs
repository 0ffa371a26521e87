//! All-gather by recursive doubling, for a power of two of ranks: in round k each rank
//! exchanges everything it holds (the blocks of its aligned window of 2^k ranks) with the rank
//! whose index differs in bit k, so log2(n) rounds gather all (MPICH's short all-gather on a
//! power of two; Thakur, Rabenseifner and Gropp 2005).

use super::blocks::Blocks;
use super::nonblocking::Plan;
use crate::Result;

impl Plan<'_, '_> {
    /// All-gather of `blocks` of `buf` by recursive doubling among the ranks addressed now (a
    /// power of two of them), each rank's own block already in place.
    pub(super) fn allgather_doubling(&mut self, buf: *mut u8, blocks: &Blocks) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        debug_assert!(n.is_power_of_two());
        let mut window = 1;
        while window < n {
            let partner = me ^ window;
            let (mine, theirs) = (me & !(window - 1), partner & !(window - 1));
            for block in &blocks[mine..mine + window] {
                self.send_block(partner, buf, block)?;
            }
            for block in &blocks[theirs..theirs + window] {
                self.recv_block(partner, buf, block)?;
            }
            self.end_round();
            window *= 2;
        }
        Ok(())
    }
}

//! Broadcast of large messages by scatter + all-gather (van de Geijn; MPICH's long broadcast,
//! Thakur, Rabenseifner and Gropp 2005): the root sends block k of the message to rank k, then
//! a ring all-gather hands every block to every rank. Each link carries about twice the
//! message once, where a binomial tree sends the whole message log2(n) times from the root.

use super::nonblocking::Plan;
use super::schedule::block;
use crate::Result;

impl Plan<'_, '_> {
    /// Broadcast of `len` bytes at `buf` from `root` among the ranks addressed now.
    pub(super) fn bcast_scatter_allgather(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let blocks: Vec<Vec<(usize, usize)>> = (0..n).map(|k| vec![block(k, n, len, 1)]).collect();
        if me == root {
            for k in (0..n).filter(|&k| k != root) {
                self.send_block(k, buf, &blocks[k])?;
            }
        } else {
            self.recv_block(root, buf, &blocks[me])?;
        }
        self.end_round();
        // The root takes part too: it receives again blocks it has (the same bytes).
        self.allgather_ring(buf, &blocks)
    }
}

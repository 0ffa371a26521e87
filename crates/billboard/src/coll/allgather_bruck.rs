//! All-gather by Bruck's algorithm (Bruck, Ho, Kipnis, Upfal and Weathersby, 1997): in the
//! round of distance d = 1, 2, 4, ... every rank sends the blocks it holds, its own and the
//! next ones up to min(d, n - d) of them, to rank - d and receives as many from rank + d; after
//! ceil(log2 n) rounds every rank holds all, for any n. Blocks land in their places directly
//! (each piece is its own message), so the final rotation of the original is not needed.

use super::blocks::Blocks;
use super::nonblocking::Plan;
use super::schedule::{distances, wrap};
use crate::Result;

impl Plan<'_, '_> {
    /// All-gather of `blocks` of `buf` by Bruck's rounds among the ranks addressed now, each
    /// rank's own block already in place.
    pub(super) fn allgather_bruck(&mut self, buf: *mut u8, blocks: &Blocks) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        for d in distances(n) {
            let count = d.min(n - d) as isize;
            let (to, from) = (wrap(me, -(d as isize), n), wrap(me, d as isize, n));
            for j in 0..count {
                self.send_block(to, buf, &blocks[wrap(me, j, n)])?;
            }
            for j in 0..count {
                self.recv_block(from, buf, &blocks[wrap(from, j, n)])?;
            }
            self.end_round();
        }
        Ok(())
    }
}

//! Reduce-scatter by messages in one round, MPI's blocks as they are: every rank sends each
//! other rank that rank's block of its vector and folds its own block from every rank's (the
//! first round of `reduce_split.rs`, without its second: nobody needs the other blocks). Where
//! an allreduce followed by a copy moves every block twice and folds the whole vector in
//! every rank, this moves `(n-1)/n` of it once and folds `1/n`.
//!
//! A block is folded as the split folds, `v0 ⊕ (v1 ⊕ (… ⊕ v(n-1)))`, the same bits as the
//! allreduce it replaces; a commutative operator lets the first incoming block land straight
//! in the result.

use super::gather::Layout;
use super::nonblocking::Plan;
use crate::Result;

impl Plan<'_, '_> {
    /// Every rank's `send` (the whole vector) reduced, rank r's block `blocks[r]` of it into
    /// rank r's `recv`. `send` may be `recv` (in place: this rank's block lands at its start).
    pub(super) fn reduce_scatter_direct(
        &mut self,
        send: *const u8,
        recv: *mut u8,
        blocks: Layout<'_>,
        commutative: bool,
    ) -> Result<()> {
        let mine = blocks[self.rank()].0;
        // In place the receives below land on the vector still being sent: send a copy.
        let len = blocks.iter().map(|&(d, l)| d + l).max().unwrap_or(0);
        let send = if std::ptr::eq(send, recv) { self.scratch(len, Some(send)) as *const u8 } else { send };
        let own = send.wrapping_add(mine);
        self.fold_own_block(send, own, recv, &|k| blocks[k], commutative)?;
        self.end_round();
        Ok(())
    }
}

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
use crate::engine::sched::Local;
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
        let (me, n) = (self.rank(), self.size());
        let (mine, size) = blocks[me];
        // In place the receives below land on the vector still being sent: send a copy.
        let len = blocks.iter().map(|&(d, l)| d + l).max().unwrap_or(0);
        let send = if std::ptr::eq(send, recv) { self.scratch(len, Some(send)) as *const u8 } else { send };
        for k in (0..n).filter(|&k| k != me) {
            let (d, l) = blocks[k];
            // Blocks lie inside the vector the caller lends; only the engine dereferences it.
            self.send_segments(k, send.wrapping_add(d), l)?;
        }
        let own = send.wrapping_add(mine);
        let first = if commutative { (me + 1) % n } else { n - 1 };
        let mut parts = Vec::with_capacity(n);
        for k in 0..n {
            if k == me {
                parts.push(own);
            } else if k == first {
                self.recv_segments(k, recv, size)?;
                parts.push(recv);
            } else {
                let part = self.scratch(size, None);
                self.recv_segments(k, part, size)?;
                parts.push(part);
            }
        }
        // An empty block has nothing to fold (a user's function may not expect a count of 0).
        if first == me && size > 0 {
            self.then(Local::Copy { from: own, to: recv, len: size });
        }
        for k in (0..n).rev().filter(|&k| k != first && size > 0) {
            self.then(Local::Combine { from: parts[k], into: recv, len: size });
        }
        self.end_round();
        Ok(())
    }
}

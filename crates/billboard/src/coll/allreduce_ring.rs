//! Allreduce around a ring, for commutative operators (Patarasuk and Yuan 2009; MPICH's and
//! Open MPI's ring allreduce): the vector is cut into one block per rank; a reduce-scatter
//! passes partial blocks around the ring, each rank folding in its own contribution, so after
//! n-1 steps rank r holds block r+1 reduced; an all-gather around the same ring hands the
//! reduced blocks on in n-1 more steps. Every link carries 2(n-1)/n of the vector, whatever n:
//! the large-vector allreduce between hosts. A block meets the ranks in ring order, not rank
//! order, so non-commutative operators go by recursive doubling (`select.rs`).

use super::nonblocking::Plan;
use super::schedule::{block, ring_neighbours, wrap};
use crate::engine::sched::Local;
use crate::Result;

impl Plan<'_, '_> {
    /// Allreduce of `len` bytes at every rank's `send` into its `recv` around the ring of the
    /// ranks addressed now, cut between `elem`-byte elements. `send` is read only once the
    /// rounds written before have ended, and may be `recv`.
    pub(super) fn allreduce_ring(&mut self, send: *const u8, recv: *mut u8, len: usize, elem: usize) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        if !std::ptr::eq(send, recv) {
            self.copy(send, recv, len);
        }
        let at = |k: usize| block(k, n, len, elem);
        let largest = (0..n).map(|k| at(k).1).max().unwrap_or(0);
        let incoming = self.scratch(largest, None);
        let (left, right) = ring_neighbours(me, n);
        // Blocks lie inside `recv`'s `len` bytes; only the engine dereferences these pointers.
        for step in 0..n as isize - 1 {
            let (od, ol) = at(wrap(me, -step, n));
            let (id, il) = at(wrap(me, -step - 1, n));
            self.send(right, recv.wrapping_add(od), ol)?;
            self.recv(left, incoming, il)?;
            if il > 0 {
                self.then(Local::Combine { from: incoming, into: recv.wrapping_add(id), len: il });
            }
            self.end_round();
        }
        for step in 0..n as isize - 1 {
            let (od, ol) = at(wrap(me, 1 - step, n));
            let (id, il) = at(wrap(me, -step, n));
            self.send(right, recv.wrapping_add(od), ol)?;
            self.recv(left, recv.wrapping_add(id), il)?;
            self.end_round();
        }
        Ok(())
    }
}

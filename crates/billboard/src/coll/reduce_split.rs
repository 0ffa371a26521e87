//! Reduce and allreduce of large vectors: the vector is cut into one block per rank, and each
//! rank reduces its own block from every rank's contribution (a direct reduce-scatter, every
//! block sent straight to its owner in one round), then the reduced blocks are gathered at the
//! root (reduce) or exchanged among all (allreduce). Rabenseifner's reduce-scatter + gather
//! (Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations in
//! MPICH", 2005) with the halving rounds replaced by one direct round, which suits the few
//! ranks of one node: every rank moves and combines `(n-1)/n` of the vector in parallel where
//! a binomial tree moves and combines the whole of it at every level. On 2 ranks each rank
//! reduces one half and they exchange the halves.
//!
//! Blocks travel in segments no larger than the eager limit: on one node a segment goes
//! through a data-part slot (the sender copies it in while the receiver copies the one before
//! out), which moved 512 KiB in half the time of one single-copy rendezvous here.
//!
//! A block is folded in rank order, `v0 ⊕ (v1 ⊕ (… ⊕ v(n-1)))` (MPI's operators are
//! associative), so non-commutative operators stay right; a commutative one lets the first
//! incoming block land straight in the accumulator instead of a scratch block.

use super::nonblocking::Plan;
use super::schedule::block;
use super::select::REDUCE_SEGMENT;
use crate::engine::sched::Local;
use crate::Result;

impl Plan<'_, '_> {
    /// Reduction of `len` bytes at every rank's `send` into `recv` at `root`, or at every rank
    /// when `root` is `None` (allreduce). `send` may be `recv` (in place); other ranks' `recv`
    /// is not used by a reduce. `elem` is the element size; a commutative operator may take
    /// its operands in any order.
    pub(super) fn reduce_split(
        &mut self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: Option<usize>,
        (elem, commutative): (usize, bool),
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let at = |k: usize| block(k, n, len, elem);
        let (mine, size) = at(me);
        // Blocks lie inside the `len` bytes of `send` and `recv` that the caller lends; only the
        // engine dereferences these pointers, so plain (wrapping) offsets do.
        let keeps_result = root.is_none_or(|r| r == me);
        // This rank's contribution to its own block; in place the receives below land on it.
        let own = if std::ptr::eq(send, recv) {
            self.scratch(size, Some(send.wrapping_add(mine)))
        } else {
            send.wrapping_add(mine)
        };
        let acc = if keeps_result { recv.wrapping_add(mine) } else { self.scratch(size, None) };

        // Round 1: every block to its owner; the blocks of this one come in and fold.
        self.fold_own_block(send, own, acc, &at, commutative)?;
        // Where ranks outnumber cores, a reduce's root takes the reduced blocks in this round
        // too (they follow each rank's part of its block, in order), so they land in place
        // instead of in the unexpected queue while the root waits for a core (4 ranks on 2
        // cores, 1 MiB: median 1.03x -> 0.43x Open MPI). Otherwise the root combines at once,
        // beside the others (2 ranks, 1 MiB: 0.42x, 0.7x gathering early). In place the blocks
        // would overwrite what the root still sends.
        let gather_now = self.crowded && root == Some(me) && !std::ptr::eq(send, recv);
        if gather_now {
            self.gather_blocks(recv, at)?;
        }
        self.end_round();

        // Round 2: the reduced blocks to the root, or to everyone.
        match root {
            Some(r) if r != me => self.send_segments(r, acc, size)?,
            Some(_) if gather_now => {}
            Some(_) => self.gather_blocks(recv, at)?,
            None => {
                for k in (1..n).map(|i| (me + i) % n) {
                    self.send_segments(k, acc, size)?;
                }
                self.gather_blocks(recv, at)?;
            }
        }
        self.end_round();
        Ok(())
    }

    /// The direct round of a reduce-scatter (not closed): every other rank gets its block
    /// (`at(k)`: offset and length) of this rank's `send`, and this rank's block of every
    /// rank's vector is folded into `acc`, `own` being its own contribution. The fold starts
    /// from the last rank's block (any block, if the order does not matter), so it lands
    /// straight in `acc`; an empty block (fewer elements than ranks) has nothing to fold: the
    /// operator is not called on it (a user's function may not expect a count of 0).
    pub(super) fn fold_own_block(
        &mut self,
        send: *const u8,
        own: *const u8,
        acc: *mut u8,
        at: &impl Fn(usize) -> (usize, usize),
        commutative: bool,
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let size = at(me).1;
        for k in (0..n).filter(|&k| k != me) {
            let (d, l) = at(k);
            self.send_segments(k, send.wrapping_add(d), l)?;
        }
        let first = if commutative { (me + 1) % n } else { n - 1 };
        let mut parts = Vec::with_capacity(n);
        for k in 0..n {
            if k == me {
                parts.push(own);
            } else if k == first {
                self.recv_segments(k, acc, size)?;
                parts.push(acc);
            } else {
                let part = self.scratch(size, None);
                self.recv_segments(k, part, size)?;
                parts.push(part);
            }
        }
        if first == me && size > 0 {
            self.then(Local::Copy { from: own, to: acc, len: size });
        }
        for k in (0..n).rev().filter(|&k| k != first && size > 0) {
            self.then(Local::Combine { from: parts[k], into: acc, len: size });
        }
        Ok(())
    }

    /// Receives every other rank's reduced block into its place in `recv`.
    fn gather_blocks(&mut self, recv: *mut u8, at: impl Fn(usize) -> (usize, usize)) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        for k in (1..n).map(|i| (me + i) % n) {
            let (d, l) = at(k);
            self.recv_segments(k, recv.wrapping_add(d), l)?;
        }
        Ok(())
    }

    /// Sends `len` bytes at `buf` to `to` as messages of at most [`REDUCE_SEGMENT`] bytes
    /// (at least one message, so an empty block still matches its receive).
    pub(super) fn send_segments(&mut self, to: usize, buf: *const u8, len: usize) -> Result<()> {
        for (at, l) in segments(len) {
            self.send(to, buf.wrapping_add(at), l)?;
        }
        Ok(())
    }

    /// Receives what [`Plan::send_segments`] sends.
    pub(super) fn recv_segments(&mut self, from: usize, buf: *mut u8, len: usize) -> Result<()> {
        for (at, l) in segments(len) {
            self.recv(from, buf.wrapping_add(at), l)?;
        }
        Ok(())
    }
}

/// The `(offset, length)` segments a block of `len` bytes travels in.
fn segments(len: usize) -> impl Iterator<Item = (usize, usize)> {
    let seg = REDUCE_SEGMENT.get().max(1);
    (0..len.div_ceil(seg).max(1)).map(move |i| (i * seg, seg.min(len - (i * seg).min(len))))
}

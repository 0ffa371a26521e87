//! Reduce and allreduce of small vectors by posts, in one round: every rank posts its vector
//! once, to the root (reduce) or to all (allreduce: one post every other rank reads, the
//! billboard's multicast, seed 004), and whoever needs the result folds every contribution
//! itself. It is seed 000's partitioned network cache applied to a reduction: each rank writes
//! its own part, readers pull from every part. Where a binomial tree waits for log2(n) hops and
//! then a broadcast, every rank here waits for one post from each other rank, all in flight at
//! once; the folding is (n-1) operator calls on a small vector.
//!
//! Contributions are folded in the binomial tree's order (`schedule::binomial_fold`), rank
//! order kept, so non-commutative operators stay right and the result has the same bits as
//! the tree's.

use super::nonblocking::Plan;
use super::schedule::{binomial_fold, folded_into};
use crate::engine::sched::Local;
use crate::Result;

impl Plan<'_, '_> {
    /// Reduction of `len` bytes at every rank's `send` into `recv` at `root`, or at every rank
    /// when `root` is `None` (allreduce), by posts. `send` may be `recv` (in place); a reduce's
    /// other ranks do not use `recv`.
    pub(super) fn reduce_post(
        &mut self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: Option<usize>,
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        if let Some(r) = root.filter(|&r| r != me) {
            self.send(r, send, len)?;
            self.end_round();
            return Ok(());
        }
        // In place, this rank's contribution is kept aside: the fold overwrites `recv`.
        let own = if std::ptr::eq(send, recv) { self.scratch(len, Some(send)) } else { send };
        if root.is_none() && n > 1 {
            self.send_to_all(own, len);
        }
        // The fold writes into some slots: this rank's, if one of them, is a copy (what it
        // sends is not written); the last is `recv`, where the result ends.
        let mine = match me + 1 < n && folded_into(me, n) {
            true => self.scratch(len, Some(own)),
            false => own as *mut u8,
        };
        // Every other rank's contribution lands in its own part of one scratch block.
        let parts = self.scratch(len * (n - 1), None);
        let part = |k: usize| -> *mut u8 {
            match k.cmp(&me) {
                std::cmp::Ordering::Equal => mine,
                // Inside the scratch block of (n-1) parts; only the engine dereferences it.
                std::cmp::Ordering::Less => parts.wrapping_add(k * len),
                std::cmp::Ordering::Greater => parts.wrapping_add((k - 1) * len),
            }
        };
        for k in (0..n).filter(|&k| k != me) {
            self.recv(k, part(k), len)?;
        }
        // An empty vector has nothing to fold (a user's function may not expect a count of 0).
        if len > 0 {
            let slot = |k: usize| if k == n - 1 { recv } else { part(k) };
            self.then(Local::Copy { from: part(n - 1), to: recv, len });
            for (from, into) in binomial_fold(n) {
                self.then(Local::Combine { from: slot(from), into: slot(into), len });
            }
        }
        self.end_round();
        Ok(())
    }
}

//! Allreduce by recursive doubling (MPICH's short allreduce; Thakur, Rabenseifner and Gropp
//! 2005): in round k every rank exchanges its whole partial result with the rank whose (new)
//! index differs in bit k and folds it in, so log2(p) rounds leave the result everywhere. On a
//! rank count that is not a power of two the extra ranks first hand their vectors to their
//! neighbours and get the result back at the end (`schedule::doubling`).
//!
//! Rank order is kept, so non-commutative operators are right: a partial result always covers
//! a run of consecutive ranks, and the lower run is folded in on the left.

use super::nonblocking::Plan;
use super::schedule::{doubling, doubling_rank, power_of_two_below, Doubling};
use crate::engine::sched::Local;
use crate::Result;

impl Plan<'_, '_> {
    /// Allreduce of `len` bytes at every rank's `send` into its `recv` among the ranks
    /// addressed now. `send` is read only once the rounds written before have ended (it may be
    /// what they produce), and may be `recv`.
    pub(super) fn allreduce_doubling(&mut self, send: *const u8, recv: *mut u8, len: usize) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let mut acc = self.scratch(len, None);
        let mut other = self.scratch(len, None);
        self.copy(send, acc, len);
        let (new, folds) = match doubling(me, n) {
            Doubling::SitsOut { partner } => {
                self.send(partner, acc, len)?;
                self.end_round();
                self.recv(partner, recv, len)?;
                self.end_round();
                return Ok(());
            }
            Doubling::TakesPart { new, folds } => (new, folds),
        };
        // `combine` is skipped on an empty vector (a user's function may not expect a count of 0).
        let combine = len > 0;
        if let Some(lower) = folds {
            self.recv(lower, other, len)?;
            if combine {
                self.then(Local::Combine { from: other, into: acc, len });
            }
            self.end_round();
        }
        let mut bit = 1;
        while bit < power_of_two_below(n) {
            let partner = doubling_rank(new ^ bit, n);
            self.send(partner, acc, len)?;
            self.recv(partner, other, len)?;
            if partner < me && combine {
                self.then(Local::Combine { from: other, into: acc, len });
            } else if combine {
                // acc ⊕ other lands in `other`, which holds the partial result from now on.
                self.then(Local::Combine { from: acc, into: other, len });
                std::mem::swap(&mut acc, &mut other);
            }
            self.end_round();
            bit *= 2;
        }
        if let Some(lower) = folds {
            self.send(lower, acc, len)?;
        }
        self.then(Local::Copy { from: acc, to: recv, len });
        self.end_round();
        Ok(())
    }
}

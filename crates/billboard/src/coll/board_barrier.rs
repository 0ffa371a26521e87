//! Barrier on the board (seed 004's barrier by multicast, on arrival lines): every rank posts
//! its arrival (the epoch word alone, no payload) and waits for every other's; or rank 0
//! reads every arrival and posts the one line that releases all (`board-leader`).

use super::board::Board;
use crate::{Communicator, Result};

impl Board {
    /// Every rank reads every arrival: n - 1 lines each, read in parallel.
    pub(crate) fn barrier(&self, comm: &Communicator) {
        let e = self.epoch();
        self.post(comm, e, 0, |_| {});
        for r in (0..self.size()).filter(|&r| r != self.rank()) {
            self.wait_for(comm, r, e);
        }
        self.finish(e);
    }

    /// Rank 0 reads the arrivals, then its own post releases everyone (one line each reads).
    pub(crate) fn barrier_leader(&self, comm: &Communicator) {
        let _ = self.barrier_leader_with(comm, || Ok(()));
    }

    /// [`Board::barrier_leader`] with `between` run by rank 0 once all have arrived, before
    /// it releases them (a hierarchical barrier's leaders meet there). An error of `between`
    /// is rank 0's; the others are released all the same (none waits for a release that
    /// never comes).
    pub(crate) fn barrier_leader_with(&self, comm: &Communicator, between: impl FnOnce() -> Result<()>) -> Result<()> {
        let e = self.epoch();
        let mut outcome = Ok(());
        if self.rank() == 0 {
            for r in 1..self.size() {
                self.wait_for(comm, r, e);
            }
            outcome = between();
            self.post(comm, e, 0, |_| {});
        } else {
            self.post(comm, e, 0, |_| {});
            self.wait_for(comm, 0, e);
        }
        self.finish(e);
        outcome
    }
}

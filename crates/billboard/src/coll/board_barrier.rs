//! Barrier on the board (seed 004's barrier by multicast, on arrival lines): every rank posts
//! its arrival (the epoch word alone, no payload) and waits for every other's; or rank 0
//! reads every arrival and posts the one line that releases all (`board-leader`).

use super::board::Board;
use crate::Communicator;

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
        let e = self.epoch();
        if self.rank() == 0 {
            for r in 1..self.size() {
                self.wait_for(comm, r, e);
            }
            self.post(comm, e, 0, |_| {});
        } else {
            self.post(comm, e, 0, |_| {});
            self.wait_for(comm, 0, e);
        }
        self.finish(e);
    }
}

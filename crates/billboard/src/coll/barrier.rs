//! Barriers, written once as schedules (MPI_Ibarrier; MPI_Barrier starts and waits for them
//! where the table does not choose dissemination's direct form in `api/comm.rs`): on one host
//! every rank tells rank 0 it has arrived and rank 0 releases all with one post they all read
//! (seed 004's barrier by multicast); dissemination rounds (Hensgen, Finkel and Manber 1988);
//! on several hosts the hierarchy of `hier.rs`.

use super::nonblocking::{Collective, Plan};
use super::schedule::distances;
use super::select::{barrier_by, BarrierBy};
use crate::{Communicator, Result};

/// The buffer of a zero-byte message.
fn none() -> *mut u8 {
    std::ptr::NonNull::<u8>::dangling().as_ptr()
}

impl Plan<'_, '_> {
    /// Rank 0 of the ranks addressed now takes every other's arrival (a round of its own).
    pub(super) fn barrier_post_arrivals(&mut self) -> Result<()> {
        for r in 1..self.size() {
            self.recv(r, none(), 0)?;
        }
        self.end_round();
        Ok(())
    }

    /// Rank 0 releases every other rank addressed now with one post (a round of its own).
    pub(super) fn barrier_post_release(&mut self) {
        self.send_to_all(none(), 0);
        self.end_round();
    }

    /// Barrier by arrivals at rank 0 and one post that releases all.
    fn barrier_post(&mut self) -> Result<()> {
        if self.rank() == 0 {
            self.barrier_post_arrivals()?;
            self.barrier_post_release();
            return Ok(());
        }
        self.send(0, none(), 0)?;
        self.recv(0, none(), 0)?;
        self.end_round();
        Ok(())
    }

    /// Dissemination barrier among the ranks addressed now: in the round of distance d every
    /// rank tells rank + d and hears from rank - d; ceil(log2 n) rounds.
    pub(super) fn dissemination(&mut self) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        for d in distances(n) {
            self.send((me + d) % n, none(), 0)?;
            self.recv((me + n - d) % n, none(), 0)?;
            self.end_round();
        }
        Ok(())
    }
}

impl Communicator {
    /// Starts a [`Communicator::barrier`] that completes later (MPI_Ibarrier), moved on by
    /// the engine, by the algorithm [`barrier_by`] chooses.
    pub fn ibarrier(&self) -> Result<Collective> {
        if self.is_inter() {
            return self.inter_ibarrier();
        }
        if let Some(started) = self.ibarrier_on_board() {
            return started;
        }
        let by = barrier_by(self);
        self.nonblocking(None, |plan| match by {
            BarrierBy::Post => plan.barrier_post(),
            BarrierBy::Dissemination => plan.dissemination(),
            BarrierBy::Hier => plan.hier_barrier(&plan.comm.hosts()),
        })
    }
}

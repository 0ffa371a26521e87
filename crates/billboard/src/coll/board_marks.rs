//! The nonblocking lane's read mark (`board.rs` says what the mark and the lanes are;
//! `board_steps.rs` runs the collectives): epochs start in call order and end in any order,
//! so the mark stays below the oldest epoch this rank started and has not ended, and moves up
//! when that one ends, in the engine's progress (not in MPI_Wait): a writer must not rewrite
//! a line a reader whose epoch is still running needs.

use std::sync::atomic::Ordering;

use super::board::Board;

/// This rank's nonblocking epochs in flight on a lane, and the highest epoch it ended.
#[derive(Default)]
pub(super) struct Unended {
    epochs: Vec<u64>,
    highest: u64,
}

impl Unended {
    /// The read mark: below the oldest epoch in flight, else the highest ended.
    fn mark(&self) -> u64 {
        self.epochs.iter().min().map_or(self.highest, |&oldest| oldest - 1)
    }
}

impl Board {
    /// Epoch `e` (just taken on the nonblocking lane) has started; ended by
    /// [`Board::end_nonblocking`].
    pub(crate) fn begin_nonblocking(&self, e: u64) {
        let mut u = self.unended.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        u.epochs.push(e);
    }

    /// Nonblocking epoch `e` has read all it reads (or gave up): the read mark moves up to
    /// below the oldest epoch still in flight.
    pub(crate) fn end_nonblocking(&self, e: u64) {
        let mut u = self.unended.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        u.epochs.retain(|&x| x != e);
        u.highest = u.highest.max(e);
        let mark = self.mark(self.rank());
        mark.store(mark.load(Ordering::Relaxed).max(u.mark()), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_stays_below_the_oldest_epoch_in_flight_whatever_ends_first() {
        let mut u = Unended::default();
        // Epochs 10, 11, 12 start; 12 ends, then 10, then 11.
        u.epochs.extend([10, 11, 12]);
        u.epochs.retain(|&x| x != 12);
        u.highest = 12;
        assert_eq!(u.mark(), 9, "10 and 11 may still read their lines");
        u.epochs.retain(|&x| x != 10);
        assert_eq!(u.mark(), 10, "11 still reads");
        u.epochs.retain(|&x| x != 11);
        assert_eq!(u.mark(), 12, "nothing in flight: up to the highest epoch ended");
    }
}

//! A board's read mark while nonblocking collectives are in flight (`board.rs` says what the
//! mark is; `board_steps.rs` runs them): epochs start in call order and end in any order, so
//! the mark stays below the oldest epoch this rank started and has not ended, and moves up
//! when that one ends, in the engine's progress (not in MPI_Wait): a writer must not rewrite
//! a line a reader whose epoch is still running needs.

use std::sync::atomic::Ordering;

use super::board::Board;

/// This rank's nonblocking epochs in flight on a board, and the highest epoch it ended
/// (blocking or not) while some were.
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
    /// Epoch `e` (just taken) is a nonblocking collective's, ended by [`Board::end_nonblocking`].
    pub(crate) fn begin_nonblocking(&self, e: u64) {
        let mut u = self.unended.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        u.epochs.push(e);
        self.in_flight.store(u.epochs.len() as u64, Ordering::Release);
    }

    /// Nonblocking epoch `e` has read all it reads (or gave up): the read mark moves up to
    /// below the oldest epoch still in flight.
    pub(crate) fn end_nonblocking(&self, e: u64) {
        self.end_among_unended(e, true);
    }

    #[cold]
    pub(super) fn end_among_unended(&self, e: u64, nonblocking: bool) {
        let mut u = self.unended.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if nonblocking {
            u.epochs.retain(|&x| x != e);
        }
        u.highest = u.highest.max(e);
        let mark = self.mark(self.rank());
        mark.store(mark.load(Ordering::Relaxed).max(u.mark()), Ordering::Release);
        self.in_flight.store(u.epochs.len() as u64, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_stays_below_the_oldest_epoch_in_flight_whatever_ends_first() {
        let mut u = Unended::default();
        // Epochs 10, 11, 12 start; 12 ends, then a blocking 13, then 10, then 11.
        u.epochs.extend([10, 11, 12]);
        u.epochs.retain(|&x| x != 12);
        u.highest = 12;
        assert_eq!(u.mark(), 9, "10 and 11 may still read their lines");
        u.highest = 13;
        assert_eq!(u.mark(), 9);
        u.epochs.retain(|&x| x != 10);
        assert_eq!(u.mark(), 10, "11 still reads");
        u.epochs.retain(|&x| x != 11);
        assert_eq!(u.mark(), 13, "nothing in flight: up to the highest epoch ended");
    }
}

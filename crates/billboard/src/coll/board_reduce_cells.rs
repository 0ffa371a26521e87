//! Reduce of a vector past one data area on the board, pipelined through the posters' data
//! areas: the vector is cut into cells of whole elements, each spanning [`CELL_AREAS`] of a
//! slot's data areas (16 KiB); every rank but the root posts its cell after cell, and the root
//! folds each cell straight out of the posters' lines into its result, in the binomial tree's
//! grouping (`fold_in_tree_order`: rank order kept, the tree's bits). A poster runs up to the
//! slot's depth (4 cells) ahead of the root and waits only for the root's read marks.
//!
//! Where ranks outnumber cores (4 ranks on 2 cores, 1 MiB) the split's ranks each wait on
//! every other (a reduce-scatter round, then the gather), so a call went as fast as the
//! scheduler let whichever ranks share a core take turns (quiet: 310-371 or 685-756 us, run
//! by run). Here the root waits for posters only and a poster for the root only: in every
//! placement the root shares its core with one poster, which gets the core when its next
//! cell is missing and then posts up to 4 cells before it hands it back.
//!
//! With a core for every rank the tree stays ahead (2 ranks, 1 MiB, chrt: 180 us against
//! 208-291 here; perf: the root spends 43 % of its time waiting for cells, the poster 90 %
//! copying into its areas, lines the root has just read), where the tree's single copy reads
//! the sender's own buffer, which nobody rewrites between calls.
//!
//! A cell's epochs: a cell takes [`CELL_AREAS`] epochs of the communicator, the first a
//! multiple of it (the epochs before it are skipped, alike in every rank), so its data areas
//! lie back to back in the slot. It is posted under its last epoch: [`Board::post`] at that
//! epoch waits until every member has read the epoch a slot's depth before it, the last use of
//! any of the cell's areas, and stamps that epoch's header line after the whole cell is
//! written. Every rank marks the last epoch read when done with the cell, so the skipped
//! epochs are marked with it.

use super::board::{Board, DATA, DATA_DEPTH};
use super::board_reduce_scatter::fold_in_tree_order;
use super::ReduceOp;
use crate::Communicator;

/// Data areas (epochs) of one cell: a quarter of a slot's [`DATA_DEPTH`], so a poster runs 4
/// cells ahead of the root.
pub(super) const CELL_AREAS: u64 = 8;
const _: () = assert!(DATA_DEPTH.is_multiple_of(CELL_AREAS));

/// Bytes of one cell of elements of `elem` bytes (0: an element is larger than a cell).
pub(crate) fn cell_bytes(elem: usize) -> usize {
    let elem = elem.max(1);
    CELL_AREAS as usize * DATA / elem * elem
}

impl Board {
    /// Reduces every rank's `send` (elements of `elem` bytes, at most [`cell_bytes`]) into
    /// `recv` at `root` (its length checked by the caller), in cells as above.
    pub(crate) fn reduce_cells(
        &self,
        comm: &Communicator,
        send: &[u8],
        mut recv: Option<&mut [u8]>,
        (root, elem): (usize, usize),
        op: ReduceOp<'_>,
    ) {
        let (me, n, len) = (self.rank(), self.size(), send.len());
        let cell = cell_bytes(elem);
        debug_assert!(cell > 0, "an element of {elem} bytes is larger than a cell (the caller's check)");
        let cell = cell.max(1);
        for at in (0..len.max(1)).step_by(cell) {
            let part = cell.min(len - at.min(len));
            let (first, last) = self.cell_epochs();
            let mine = &send[at.min(len)..][..part];
            match recv.as_deref_mut().filter(|_| me == root) {
                Some(recv) => {
                    let vector = |r: usize| -> &[u8] {
                        if r == me {
                            return mine;
                        }
                        self.wait_for(comm, r, last);
                        // SAFETY: member r's cell lies in its data areas from `first`'s on
                        // (`cell_epochs`: back to back), posted (waited for above, Acquire),
                        // and not rewritten before this rank marks `last` read, below.
                        unsafe { std::slice::from_raw_parts(self.payload(r, first, DATA), part) }
                    };
                    fold_in_tree_order(n, vector, &mut recv[at.min(len)..][..part], op);
                }
                None if me != root => {
                    let to = self.payload(me, first, DATA);
                    // SAFETY: the cell's areas (from `first`'s, `part` <= CELL_AREAS areas
                    // bytes) are this rank's and free once `post` at `last` calls the closure.
                    self.post(comm, last, DATA, |_| unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), to, part) });
                }
                None => {}
            }
            self.finish(last);
        }
    }

    /// The first and last epochs of the next cell: [`CELL_AREAS`] epochs from a multiple of
    /// it, whose data areas lie back to back.
    pub(super) fn cell_epochs(&self) -> (u64, u64) {
        let mut first = self.epoch();
        while !first.is_multiple_of(CELL_AREAS) {
            first = self.epoch();
        }
        for _ in 1..CELL_AREAS {
            self.epoch();
        }
        (first, first + CELL_AREAS - 1)
    }
}

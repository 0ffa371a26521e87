//! Broadcast of more than one data area on the board: the message is cut into cells of one
//! data area (2 KiB) each, one epoch per cell, so the root posts cell after cell while the
//! readers copy the ones before out, up to the slot's DATA_DEPTH areas ahead of its slowest
//! reader (a pipeline, as the shared-memory broadcasts of MPICH and Open MPI cut theirs into
//! fragments). Where ranks outnumber cores a reader that gets a core finds cells to copy
//! without a handshake with the root: ahead of messages up to a few KiB there
//! (`BB_BCAST_CELLS_MAX`, `select_board.rs`), and again from a few hundred KiB
//! (`BB_BCAST_CELLS_MIN`), where each hop of a tree's rendezvous waits for both its ranks to
//! get a core.
//!
//! From [`WIDE_FROM`] the cells are the reduce's (`board_reduce_cells.rs`): [`CELL_AREAS`]
//! data areas back to back (16 KiB), posted under the last one's epoch, so a reader that gets
//! a core copies 16 KiB a look (one wait, one mark) instead of 2 KiB, and the root runs 4 such
//! cells ahead of its slowest reader. Measured (coll.c bcast, 4 ranks on 2 cores, nice -20,
//! 6 alternated runs of 40 calls, load 21-22, us, 2 KiB cells vs these): 1 MiB medians
//! 271-11,994 (median of runs 408) vs 313-7,547 (390), each run's fastest call 255-632 vs
//! 260-421; 256 KiB 67-166 vs 71-114: even within that load's noise, a wait and a mark a cell
//! where there were 8.

use super::board::{Board, DATA, SIZE_WORD};
use super::board_reduce_cells::CELL_AREAS;
use crate::Communicator;

/// Broadcasts of this many bytes and more go in cells of [`CELL_AREAS`] data areas: a
/// broadcast's cells where ranks outnumber cores start at `BB_BCAST_CELLS_MIN` (256 KiB), the
/// host phases of a hierarchical one end at `BB_HIER_BCAST_MAX`, so this only keeps the small
/// cells (and their measured times) below.
const WIDE_FROM: usize = 64 << 10;

impl Board {
    pub(crate) fn bcast_cells(&self, comm: &Communicator, buf: &mut [u8], root: usize) {
        if buf.is_empty() {
            // One epoch all the same: every rank counts the epochs alike, cells or not.
            return self.bcast(comm, buf, root);
        }
        if buf.len() >= WIDE_FROM {
            return self.bcast_wide_cells(comm, buf, root);
        }
        for cell in buf.chunks_mut(DATA) {
            self.bcast(comm, cell, root);
        }
    }

    /// [`Board::bcast_cells`] in cells of [`CELL_AREAS`] data areas (`cell_epochs`: back to
    /// back in the root's slot).
    fn bcast_wide_cells(&self, comm: &Communicator, buf: &mut [u8], root: usize) {
        for cell in buf.chunks_mut(CELL_AREAS as usize * DATA) {
            let (first, last) = self.cell_epochs();
            let at = self.payload(root, first, DATA);
            if self.rank() == root {
                // SAFETY: the cell's areas (from `first`'s, `cell.len()` <= CELL_AREAS areas'
                // bytes) are this rank's and free once `post` at `last` calls the closure.
                self.post(comm, last, DATA, |_| unsafe { crate::copy::copy_bulk(cell.as_ptr(), at, cell.len()) });
            } else {
                self.wait_for(comm, root, last);
                // SAFETY: the root's cell lies in its areas from `first`'s on, posted (waited
                // for above, Acquire), not rewritten before this rank marks `last` read, below.
                unsafe { crate::copy::copy_bulk(at, cell.as_mut_ptr(), cell.len()) };
            }
            self.finish(last);
        }
    }
}

impl Board {
    /// Posts `post`, whose length its readers do not know (a host's parts of a scatterv,
    /// `hier_board_parts.rs`), in cells of one data area, one epoch each as a broadcast's
    /// cells, the whole length in the first cell's length word: read by
    /// [`Board::read_cells`], which learns from it how many epochs the post takes.
    pub(crate) fn post_cells(&self, comm: &Communicator, post: &[u8]) {
        let len = post.len();
        for (j, at) in (0..len.max(1)).step_by(DATA).enumerate() {
            let e = self.epoch();
            let cell = &post[at.min(len)..(at + DATA).min(len)];
            let word = self.length_word(self.rank(), e);
            // SAFETY: `post` hands this rank's data area of epoch `e` (DATA bytes) once no
            // member reads it, and its header line with it (a deeper ring), whose inline bytes
            // open with the length word.
            self.post(comm, e, DATA, |to| unsafe {
                if j == 0 {
                    std::ptr::copy_nonoverlapping((len as u64).to_ne_bytes().as_ptr(), word, SIZE_WORD);
                }
                std::ptr::copy_nonoverlapping(cell.as_ptr(), to, cell.len());
            });
            self.finish(e);
        }
    }

    /// Member `from`'s post of [`Board::post_cells`], of at most `most` bytes (a longer length
    /// word is cut there): `pick` sees its first cell and names the bytes of the post
    /// (offset, length) to copy into `to`, or none. Each cell is marked read as soon as it is
    /// passed, those outside the range unwaited for, so a poster more cells ahead than the
    /// slot's depth never waits for this reader. Whether `pick` named bytes.
    ///
    /// # Safety
    /// `to` holds the length `pick` names.
    pub(crate) unsafe fn read_cells(
        &self,
        comm: &Communicator,
        from: usize,
        most: usize,
        to: *mut u8,
        pick: impl FnOnce(&[u8]) -> Option<(usize, usize)>,
    ) -> bool {
        let e = self.epoch();
        self.wait_for(comm, from, e);
        let mut word = [0u8; SIZE_WORD];
        // SAFETY: the header line lies in the member's slot, posted (waited for above).
        unsafe { std::ptr::copy_nonoverlapping(self.length_word(from, e), word.as_mut_ptr(), SIZE_WORD) };
        let len = u64::from_ne_bytes(word).min(most as u64) as usize;
        let range = pick(&self.read(from, e, DATA)[..len.min(DATA)]).map(|(at, l)| {
            let at = at.min(len);
            (at, l.min(len - at))
        });
        for j in 0..len.div_ceil(DATA).max(1) {
            let cell_epoch = if j == 0 { e } else { self.epoch() };
            if let Some((at, l)) = range {
                let (first, end) = (at.max(j * DATA), (at + l).min((j + 1) * DATA));
                if first < end {
                    self.wait_for(comm, from, cell_epoch);
                    let cell = self.read(from, cell_epoch, DATA);
                    // SAFETY: `to` holds `l` bytes (caller); `first - at + (end - first) <= l`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            cell[first - j * DATA..].as_ptr(),
                            to.add(first - at),
                            end - first,
                        )
                    };
                }
            }
            self.finish(cell_epoch);
        }
        range.is_some()
    }
}

//! Broadcast of more than one data area on the board: the message is cut into cells of one
//! data area (2 KiB) each, one epoch per cell, so the root posts cell after cell while the
//! readers copy the ones before out, up to the slot's DATA_DEPTH areas ahead of its slowest
//! reader (a pipeline, as the shared-memory broadcasts of MPICH and Open MPI cut theirs into
//! fragments). Where ranks outnumber cores a reader that gets a core finds cells to copy
//! without a handshake with the root: ahead of messages up to a few KiB there
//! (`BB_BCAST_CELLS_MAX`, `select_board.rs`), and again from a few hundred KiB
//! (`BB_BCAST_CELLS_MIN`), where each hop of a tree's rendezvous waits for both its ranks to
//! get a core.

use super::board::{Board, DATA, SIZE_WORD};
use crate::Communicator;

impl Board {
    pub(crate) fn bcast_cells(&self, comm: &Communicator, buf: &mut [u8], root: usize) {
        if buf.is_empty() {
            // One epoch all the same: every rank counts the epochs alike, cells or not.
            return self.bcast(comm, buf, root);
        }
        for cell in buf.chunks_mut(DATA) {
            self.bcast(comm, cell, root);
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

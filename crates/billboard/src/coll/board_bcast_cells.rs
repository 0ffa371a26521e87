//! Broadcast of more than one data area on the board: the message is cut into cells of one
//! data area (2 KiB) each, one epoch per cell, so the root posts cell after cell while the
//! readers copy the ones before out, up to the slot's DATA_DEPTH areas ahead of its slowest
//! reader (a pipeline, as the shared-memory broadcasts of MPICH and Open MPI cut theirs into
//! fragments). Where ranks outnumber cores a reader that gets a core finds cells to copy
//! without a handshake with the root: ahead of messages up to a few KiB there
//! (`BB_BCAST_CELLS_MAX`, `select_board.rs`).

use super::board::{Board, DATA};
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

//! Broadcast on the board: the root posts once, every other rank copies the same bytes
//! straight out of the root's lines (seed 004's one post read by many; inline in the header
//! line up to 112 bytes).

use super::board::{Board, DATA};
use crate::Communicator;

impl Board {
    pub(crate) fn bcast(&self, comm: &Communicator, buf: &mut [u8], root: usize) {
        let (e, len) = (self.epoch(), buf.len());
        if self.rank() == root {
            // SAFETY: `post` hands this rank's buffer of at least `len` bytes.
            self.post(comm, e, len, |at| unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), at, len) });
        } else {
            self.wait_for(comm, root, e);
            buf.copy_from_slice(self.read(root, e, len));
        }
        self.finish(e);
    }
}

impl Board {
    /// `from`'s `len` bytes at `buf` into `to`'s `buf` (the others pass any buffer and take
    /// nothing): a post read by one, in cells of one data area, an epoch each that every
    /// member counts; the others mark each read at once, so they go on without waiting.
    pub(crate) fn pass(&self, comm: &Communicator, buf: &mut [u8], len: usize, from: usize, to: usize) {
        let me = self.rank();
        for at in (0..len.max(1)).step_by(DATA) {
            let (e, cell) = (self.epoch(), (len - at.min(len)).min(DATA));
            if me == from {
                let src = &buf[at..at + cell];
                // SAFETY: `post` hands this rank's buffer of at least `cell` bytes.
                self.post(comm, e, cell, |p| unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, cell) });
            } else if me == to {
                self.wait_for(comm, from, e);
                buf[at..at + cell].copy_from_slice(self.read(from, e, cell));
            }
            self.finish(e);
        }
    }
}

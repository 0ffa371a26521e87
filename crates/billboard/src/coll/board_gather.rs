//! Gather on the board (seed 000's partitioned cache): every rank but the root posts its part
//! once in its own lines; the root copies each part straight into its place.

use super::board::Board;
use super::gather::Layout;
use crate::Communicator;

impl Board {
    /// Every rank's `part` bytes at `send` into the root's `recv` at `layout[r]` (checked by
    /// the caller). The root's own part may lie in `recv` (in place).
    ///
    /// # Safety
    /// `send` holds `part` bytes; at the root `recv` holds every part of `layout`.
    pub(crate) unsafe fn gather(
        &self,
        comm: &Communicator,
        send: (*const u8, usize),
        recv: Option<(*mut u8, Layout<'_>)>,
        root: usize,
    ) {
        self.gather_at(comm, send, recv.map(|(buf, layout)| (buf, |r: usize| layout[r])), root)
    }

    /// [`Board::gather`] with rank r's place in `recv` given by `at(r)`: (offset, length).
    ///
    /// # Safety
    /// As for [`Board::gather`]: at the root `recv` holds every part `at` names.
    pub(crate) unsafe fn gather_at(
        &self,
        comm: &Communicator,
        (send, part): (*const u8, usize),
        recv: Option<(*mut u8, impl Fn(usize) -> (usize, usize))>,
        root: usize,
    ) {
        let (e, me) = (self.epoch(), self.rank());
        match recv.filter(|_| me == root) {
            None => self.post(comm, e, part, |at| std::ptr::copy_nonoverlapping(send, at, part)),
            Some((buf, at)) => {
                for r in 0..self.size() {
                    let (d, l) = at(r);
                    let l = l.min(part);
                    if r == me {
                        crate::copy::copy_own(send, buf.add(d), l);
                    } else {
                        self.wait_for(comm, r, e);
                        std::ptr::copy_nonoverlapping(self.read(r, e, part).as_ptr(), buf.add(d), l);
                    }
                }
            }
        }
        self.finish(e);
    }
}

//! Scatter on the board: the root posts every part once, one after another in its lines;
//! each rank copies its own straight out.

use super::board::Board;
use super::gather::Layout;
use crate::Communicator;

impl Board {
    /// The root's parts (`layout[r]` of `send`, `part` bytes each, checked by the caller) into
    /// each rank's `recv` (`recv_len` bytes; none at a root in place).
    ///
    /// # Safety
    /// At the root `send` holds every part of `layout`; `recv` holds `recv_len` bytes.
    pub(crate) unsafe fn scatter(
        &self,
        comm: &Communicator,
        send: Option<(*const u8, Layout<'_>)>,
        (recv, recv_len): (*mut u8, usize),
        part: usize,
        root: usize,
    ) {
        let (e, me, n) = (self.epoch(), self.rank(), self.size());
        let all = n * part;
        match send.filter(|_| me == root) {
            Some((buf, layout)) => {
                self.post(comm, e, all, |at| {
                    for (r, &(d, _)) in layout.iter().enumerate() {
                        std::ptr::copy_nonoverlapping(buf.add(d), at.add(r * part), part);
                    }
                });
                std::ptr::copy(buf.add(layout[me].0), recv, part.min(recv_len));
            }
            None => {
                self.wait_for(comm, root, e);
                let mine = &self.read(root, e, all)[me * part..][..part];
                std::ptr::copy_nonoverlapping(mine.as_ptr(), recv, part.min(recv_len));
            }
        }
        self.finish(e);
    }
}

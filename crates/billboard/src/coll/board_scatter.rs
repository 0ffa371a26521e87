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
        recv: (*mut u8, usize),
        part: usize,
        root: usize,
    ) {
        self.scatter_at(comm, send.map(|(buf, layout)| (buf, |r: usize| layout[r].0)), recv, part, root)
    }

    /// [`Board::scatter`] with rank r's part at offset `at(r)` of the root's `send`.
    ///
    /// # Safety
    /// As for [`Board::scatter`]: at the root `send` holds `part` bytes at every `at(r)`.
    pub(crate) unsafe fn scatter_at(
        &self,
        comm: &Communicator,
        send: Option<(*const u8, impl Fn(usize) -> usize)>,
        (recv, recv_len): (*mut u8, usize),
        part: usize,
        root: usize,
    ) {
        let (e, me, n) = (self.epoch(), self.rank(), self.size());
        let all = n * part;
        match send.filter(|_| me == root) {
            Some((buf, at)) => {
                self.post(comm, e, all, |into| {
                    for r in 0..n {
                        std::ptr::copy_nonoverlapping(buf.add(at(r)), into.add(r * part), part);
                    }
                });
                crate::copy::copy_own(buf.add(at(me)), recv, part.min(recv_len));
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

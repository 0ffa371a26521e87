//! All-gather (and all-gatherv) on the board (seed 000's partitioned cache): every rank
//! posts its part once in its own lines; every rank copies every other's straight out.

use super::board::Board;
use super::gather::Layout;
use crate::Communicator;

impl Board {
    /// Every rank's part (`send`, `layout[r].1` bytes) into every rank's `recv` at
    /// `layout[r]` (checked by the caller). `send` may be this rank's part of `recv`.
    ///
    /// # Safety
    /// `send` holds `layout[me].1` bytes; `recv` holds every part of `layout`.
    pub(crate) unsafe fn allgather(&self, comm: &Communicator, send: *const u8, recv: *mut u8, layout: Layout<'_>) {
        let (e, me) = (self.epoch(), self.rank());
        let (d, mine) = layout[me];
        self.post(comm, e, mine, |at| std::ptr::copy_nonoverlapping(send, at, mine));
        crate::copy::copy_own(send, recv.add(d), mine);
        // Starting after this rank spreads the readers over the writers' lines.
        for r in (1..self.size()).map(|k| (me + k) % self.size()) {
            let (d, l) = layout[r];
            self.wait_for(comm, r, e);
            std::ptr::copy_nonoverlapping(self.read(r, e, l).as_ptr(), recv.add(d), l);
        }
        self.finish(e);
    }
}

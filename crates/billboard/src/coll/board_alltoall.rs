//! All-to-all with parts of one length on the board: every rank posts all its parts once,
//! one after another in rank order; rank r copies part r straight out of each poster's lines.

use super::board::Board;
use super::gather::Layout;
use crate::Communicator;

impl Board {
    /// Rank r's `send[send_layout[s]]` into rank s's `recv[recv_layout[r]]`, every part
    /// `part` bytes (layouts checked by the caller).
    ///
    /// # Safety
    /// The buffers hold every part of their layouts.
    pub(crate) unsafe fn alltoall(
        &self,
        comm: &Communicator,
        (send, out): (*const u8, Layout<'_>),
        (recv, into): (*mut u8, Layout<'_>),
        part: usize,
    ) {
        let (e, me, n) = (self.epoch(), self.rank(), self.size());
        let all = n * part;
        self.post(comm, e, all, |at| {
            for (s, &(d, _)) in out.iter().enumerate().filter(|&(s, _)| s != me) {
                std::ptr::copy_nonoverlapping(send.add(d), at.add(s * part), part);
            }
        });
        crate::copy::copy_own(send.add(out[me].0), recv.add(into[me].0), part);
        for r in (1..n).map(|k| (me + k) % n) {
            self.wait_for(comm, r, e);
            let theirs = &self.read(r, e, all)[me * part..][..part];
            std::ptr::copy_nonoverlapping(theirs.as_ptr(), recv.add(into[r].0), part);
        }
        self.finish(e);
    }
}

//! All-gather by posts, in one round: every rank posts its own part once to all the others
//! (one post every reader takes, the billboard's multicast; a send each where a route cannot
//! multicast), and each copies every other rank's part into its place. Seed 000's partitioned
//! network cache: each process writes its partition of a memory all see, readers pull from it.
//! Where gather + broadcast moves every part twice and waits for two rounds, this moves each
//! part once into each reader.

use super::gather::Layout;
use super::nonblocking::Plan;
use crate::Result;

impl Plan<'_, '_> {
    /// All-gather of every rank's `send_len` bytes at `send` into `recv`, rank r's part at
    /// `layout[r]` (checked by the caller). This rank's own part is copied at once, so `send`
    /// may be that very part (in place).
    pub(super) fn allgather_post(
        &mut self,
        (send, send_len): (*const u8, usize),
        recv: *mut u8,
        layout: Layout,
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let (d, l) = layout[me];
        // SAFETY: the part lies inside the lent buffer (checked by the caller) and `send` holds
        // `send_len` bytes; in place they are the same bytes.
        unsafe { crate::copy::copy_own(send, recv.add(d), send_len.min(l)) };
        if n > 1 {
            self.send_to_all(send, send_len);
        }
        for (k, &(d, l)) in layout.iter().enumerate().filter(|&(k, _)| k != me) {
            // Inside the lent buffer (checked by the caller); only the engine dereferences it.
            self.recv(k, recv.wrapping_add(d), l)?;
        }
        self.end_round();
        Ok(())
    }
}

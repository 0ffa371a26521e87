//! Blocking gather and scatter of equal contiguous parts (MPI_Gather and MPI_Scatter of
//! dense data), the direct forms: on the board straight between the callers' buffers, with no
//! layout built and nothing allocated; elsewhere the schedule of `gather.rs`, waited for.

use super::board::blocking;
use super::select::Collective as Op;
use crate::{Communicator, Error, Result};

impl Communicator {
    /// Gathers every rank's `part` bytes at `send` into the root's `recv`, rank r's at byte
    /// `r * part`. At the root `send` may be its own place in `recv` (in place).
    ///
    /// # Safety
    /// `send` holds `part` bytes; at the root `recv` holds `size() * part` bytes. Both stay
    /// valid, and untouched by the caller, for the call.
    pub unsafe fn gather_parts(&self, send: *const u8, part: usize, recv: *mut u8, root: usize) -> Result<()> {
        self.check_rooted("gather", root)?;
        if let Some((board, _)) = self.board_for(Op::Gather, part, true)? {
            board.gather_at(self, (send, part), Some((recv, |r: usize| (r * part, part))), root);
            return Ok(());
        }
        let n = self.size();
        let layout: Vec<_> = (0..n).map(|r| (r * part, part)).collect();
        let recv = (self.rank() == root).then_some((recv, n * part, &layout[..]));
        blocking(true, || self.igather_raw(send, part, recv, root))?.wait()
    }

    /// Scatters the root's `send`, `part` bytes to each rank (rank r's at byte `r * part`),
    /// into each rank's `recv` of `recv_len` bytes (a root in place passes 0: its part stays).
    ///
    /// # Safety
    /// At the root `send` holds `size() * part` bytes; `recv` holds `recv_len`. Both stay
    /// valid, and untouched by the caller, for the call.
    pub unsafe fn scatter_parts(
        &self,
        send: *const u8,
        part: usize,
        (recv, recv_len): (*mut u8, usize),
        root: usize,
    ) -> Result<()> {
        self.check_rooted("scatter", root)?;
        if let Some((board, _)) = self.board_for(Op::Scatter, part * self.size(), true)? {
            board.scatter_at(self, Some((send, |r: usize| r * part)), (recv, recv_len), part, root);
            return Ok(());
        }
        let n = self.size();
        let layout: Vec<_> = (0..n).map(|r| (r * part, part)).collect();
        let send = (self.rank() == root).then_some((send, n * part, &layout[..]));
        blocking(true, || self.iscatter_raw(send, recv, recv_len, root))?.wait()
    }

    fn check_rooted(&self, what: &str, root: usize) -> Result<()> {
        self.intra_only(what)?;
        match root < self.size() {
            true => Ok(()),
            false => Err(Error::InvalidRank { rank: root, size: self.size() }),
        }
    }
}

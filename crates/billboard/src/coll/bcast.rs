//! Broadcast, blocking: a binomial tree (each rank receives once, then forwards to its
//! subtrees) in a direct form, or the schedule of any other algorithm `select.rs` chooses
//! (the root's one post, scatter + all-gather, the hierarchy), started and waited for; the
//! hierarchy with its host phases on the board where it applies (`hier_board.rs`).

use super::schedule::{binomial_children, binomial_parent};
use super::TAG_BCAST;
use crate::{Communicator, Error, Result, SendMode, Source, TagMatch};

impl Communicator {
    /// Copies `root`'s `buf` into every rank's `buf` (all ranks pass the same length).
    pub fn bcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<()> {
        self.intra_only("broadcast by bytes")?;
        let n = self.size();
        if root >= n {
            return Err(Error::InvalidRank { rank: root, size: n });
        }
        if let Some((board, by)) = self.board_for(super::select::Collective::Bcast, buf.len(), true)? {
            match by {
                "board-cells" => board.bcast_cells(self, buf, root),
                _ => board.bcast(self, buf, root),
            }
            return Ok(());
        }
        let by = super::select::bcast_by(self, buf.len());
        if by == super::select::BcastBy::Hier {
            if let Some(hosts) = self.hier_board_cells(buf.len(), 1, super::select::HIER_BCAST_MAX.get())? {
                return hosts.bcast(buf, root, self.rank());
            }
        }
        if by != super::select::BcastBy::Tree {
            // SAFETY: `buf` is borrowed mutably until the broadcast has ended (waited for here).
            return unsafe { self.ibcast_raw(buf.as_mut_ptr(), buf.len(), root) }?.wait();
        }
        let ctx = self.coll_context();
        if let Some(parent) = binomial_parent(self.rank(), root, n) {
            self.recv_on(ctx, buf, Source::Rank(parent), TagMatch::Tag(TAG_BCAST))?;
        }
        let mode = match buf.len() >= super::select::rendezvous_min(self) {
            true => SendMode::Synchronous,
            false => SendMode::Standard,
        };
        for child in binomial_children(self.rank(), root, n) {
            self.send_on(ctx, buf, child, TAG_BCAST, mode)?;
        }
        Ok(())
    }
}

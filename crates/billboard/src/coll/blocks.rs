//! Blocks of a buffer that move as units in the network all-gathers (`allgather_ring.rs`,
//! `allgather_doubling.rs`, `allgather_bruck.rs`): block k is what rank k of the group
//! contributes, one or more pieces `(offset, length)` of the buffer (a host's block in a
//! hierarchical all-gather holds each of its members' parts, wherever the layout puts them).
//! Each non-empty piece travels as one message; every member knows every block's pieces, so
//! sender and receiver agree on the messages without telling each other.

use super::gather::Layout;
use super::nonblocking::Plan;
use super::select::AllgatherBy;
use crate::Result;

/// The pieces of each group member's block.
pub(super) type Blocks = [Vec<(usize, usize)>];

impl Plan<'_, '_> {
    /// Adds a send of `block`'s pieces of `buf` to rank `to` to the round being written.
    pub(super) fn send_block(&mut self, to: usize, buf: *const u8, block: &[(usize, usize)]) -> Result<()> {
        for &(d, l) in block.iter().filter(|p| p.1 > 0) {
            // Inside the lent buffer (checked by the caller); only the engine dereferences it.
            self.send(to, buf.wrapping_add(d), l)?;
        }
        Ok(())
    }

    /// Adds the receives of `block`'s pieces of `buf` from rank `from` to the round being written.
    pub(super) fn recv_block(&mut self, from: usize, buf: *mut u8, block: &[(usize, usize)]) -> Result<()> {
        for &(d, l) in block.iter().filter(|p| p.1 > 0) {
            // As above.
            self.recv(from, buf.wrapping_add(d), l)?;
        }
        Ok(())
    }

    /// All-gather of every rank's `send_len` bytes at `send` into `recv`, rank r's part at
    /// `layout[r]` (checked by the caller), by a network algorithm over the whole group. This
    /// rank's part is copied at once, so `send` may be that very part (in place).
    pub(super) fn allgather_net(
        &mut self,
        by: AllgatherBy,
        (send, send_len): (*const u8, usize),
        recv: *mut u8,
        layout: Layout,
    ) -> Result<()> {
        let (d, l) = layout[self.rank()];
        // SAFETY: the part lies inside the lent buffer (checked by the caller) and `send` holds
        // `send_len` bytes; in place they are the same bytes.
        unsafe { crate::copy::copy_own(send, recv.add(d), send_len.min(l)) };
        let blocks: Vec<Vec<(usize, usize)>> = layout.iter().map(|&part| vec![part]).collect();
        self.allgather_blocks(by, recv, &blocks)
    }

    /// All-gather of `blocks` of `buf`, each rank's own already in place, by `by` (ring,
    /// recursive doubling on a power of two of ranks, else Bruck).
    pub(super) fn allgather_blocks(&mut self, by: AllgatherBy, buf: *mut u8, blocks: &Blocks) -> Result<()> {
        match by {
            AllgatherBy::Ring => self.allgather_ring(buf, blocks),
            AllgatherBy::Doubling if self.size().is_power_of_two() => self.allgather_doubling(buf, blocks),
            _ => self.allgather_bruck(buf, blocks),
        }
    }
}

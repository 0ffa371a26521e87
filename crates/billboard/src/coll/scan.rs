//! Inclusive and exclusive prefix reductions along a chain of ranks (rank order, so
//! non-commutative operators are right); blocking ones on one host on the board
//! (`board_scan.rs`), on several hosts of consecutive ranks on each host's board where
//! `BB_COLL_SCAN=hier` forces it (`hier_board_scan.rs`).

use super::select::{Collective as Op, SCAN, SCAN_CROWDED_MAX};
use super::{ReduceOp, TAG_SCAN};
use crate::{Communicator, Error, Result, SendMode, Source, TagMatch};

impl Communicator {
    /// `recv` at rank r becomes v0 ⊕ … ⊕ vr (inclusive), or v0 ⊕ … ⊕ v(r-1) when `exclusive`
    /// (rank 0's `recv` is then left unchanged).
    pub fn scan_bytes(&self, send: &[u8], recv: &mut [u8], op: ReduceOp<'_>, exclusive: bool) -> Result<()> {
        self.intra_only("a scan")?;
        if recv.len() != send.len() {
            return Err(Error::InvalidArgument(format!(
                "scan: a {}-byte receive buffer for {} bytes sent (rank {})",
                recv.len(),
                send.len(),
                self.rank()
            )));
        }
        // On the board every rank folds the posts below it (`board_scan.rs`); where ranks
        // outnumber cores only small ones, unforced (`BB_SCAN_CROWDED_MAX`). The choice is
        // alike in every rank: the length, the host and the switch are.
        let crowded_out = self.crowded() && send.len() > SCAN_CROWDED_MAX.get() && SCAN.forced().is_none();
        if let Some((board, _)) = if crowded_out { None } else { self.board_for(Op::Scan, send.len(), true)? } {
            board.scan(self, send, recv, op, exclusive);
            return Ok(());
        }
        // Forced, on several hosts of consecutive ranks: each host's phases on its board
        // (`hier_board_scan.rs`).
        if self.scan_on_host_boards(send, recv, &mut *op, exclusive)? {
            return Ok(());
        }
        let (n, me) = (self.size(), self.rank());
        let ctx = self.coll_context();
        let mut acc = send.to_vec();
        if me > 0 {
            let mut prefix = vec![0u8; send.len()];
            self.recv_on(ctx, &mut prefix, Source::Rank(me - 1), TagMatch::Tag(TAG_SCAN))?;
            if exclusive {
                recv.copy_from_slice(&prefix);
            }
            op(&prefix, &mut acc);
        }
        if me + 1 < n {
            self.send_on(ctx, &acc, me + 1, TAG_SCAN, SendMode::Standard)?;
        }
        if !exclusive {
            recv.copy_from_slice(&acc);
        }
        Ok(())
    }
}

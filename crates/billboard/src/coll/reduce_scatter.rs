//! Blocking reduce-scatter (MPI_Reduce_scatter and MPI_Reduce_scatter_block, the direct form):
//! on the board each rank folds its own block out of every rank's post
//! (`board_reduce_scatter.rs`); elsewhere the allreduce of the table, each rank keeping its
//! block. The nonblocking forms and several hosts take the schedule
//! ([`Communicator::ireduce_scatter_raw`]).

use std::cell::Cell;

use super::board::DATA;
use super::select::{reduce_by, Collective as Op, ReduceBy};
use super::ReduceOp;
use crate::{Communicator, Error, Result};

/// A whole result larger than this goes back to the allocator after a reduce-scatter by the
/// allreduce (as the tree's working vectors do, `reduce.rs`).
const KEEP_WHOLE: usize = 16 << 20;

thread_local! {
    /// The allreduce's whole result, kept for the next reduce-scatter. Taken, not borrowed: an
    /// operator that reduces again gets its own.
    static WHOLE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

impl Communicator {
    /// Reduces every rank's `send` (all of one length) with `op`, and leaves bytes
    /// `at..at + recv.len()` of the result, this rank's block, in `recv`. `elem` is the size of
    /// the elements `op` works on (a block begins and ends between elements).
    pub fn reduce_scatter_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        (at, elem): (usize, usize),
        op: ReduceOp<'_>,
    ) -> Result<()> {
        self.intra_only("reduce_scatter by bytes")?;
        if at + recv.len() > send.len() {
            return Err(Error::InvalidArgument(format!(
                "reduce_scatter: rank {}'s block [{at}, {}) lies beyond the {}-byte vector",
                self.rank(),
                at + recv.len(),
                send.len()
            )));
        }
        // Cells hold whole elements: one larger than a cell leaves it to the allreduce (alike in
        // every rank: the elements are the same type everywhere).
        let board = self.board_for(Op::ReduceScatter, send.len(), true)?;
        if let Some((board, by)) = board.filter(|&(_, by)| by != "board-cells" || elem <= DATA) {
            match by {
                "board-cells" => board.reduce_scatter_cells(self, send, recv, (at, elem), op),
                _ => board.reduce_scatter(self, send, recv, at, op),
            }
            return Ok(());
        }
        let mut whole = WHOLE.take();
        whole.resize(send.len(), 0);
        let done = self.allreduce_bytes(send, &mut whole, op);
        if done.is_ok() {
            recv.copy_from_slice(&whole[at..at + recv.len()]);
        }
        if whole.capacity() <= KEEP_WHOLE {
            WHOLE.set(whole);
        }
        done
    }

    /// Whether a reduce-scatter of `len` bytes a rank runs as its schedule (then the blocking
    /// form is start + wait) rather than [`Communicator::reduce_scatter_bytes`]: where neither
    /// the board nor the allreduce's direct form takes it. Where the allreduce would go by
    /// halves, the schedule's direct round (`reduce_scatter_direct.rs`: each block straight
    /// to its owner) moves half what an allreduce would.
    pub fn reduce_scatter_scheduled(&self, len: usize) -> Result<bool> {
        if self.board_for(Op::ReduceScatter, len, true)?.is_some() {
            return Ok(false);
        }
        Ok(self.reduction_scheduled(len, false)? || reduce_by(self, len, false, false) == ReduceBy::Halves)
    }
}

//! Reduce and allreduce: a binomial tree into rank 0 that keeps rank order (so
//! non-commutative operators are right), then a hop to the root if it is another rank.

use super::select::Collective;
use super::{ReduceOp, TAG_REDUCE};

const NO_RECV: &str = "reduce: the root must pass a receive buffer";
use crate::{Communicator, Error, Result, SendMode, Source, TagMatch};

impl Communicator {
    /// Reduces every rank's `send` with `op`; the result lands in `recv` at `root` (other
    /// ranks may pass `None`). All buffers have the same length.
    pub fn reduce_bytes(&self, send: &[u8], recv: Option<&mut [u8]>, root: usize, op: ReduceOp<'_>) -> Result<()> {
        self.intra_only("reduce by bytes")?;
        let (n, me) = (self.size(), self.rank());
        if root >= n {
            return Err(Error::InvalidRank { rank: root, size: n });
        }
        if let Some((board, _)) = self.board_for(Collective::Reduce, send.len(), true)? {
            let recv = match (recv, me == root) {
                (Some(recv), true) if recv.len() != send.len() => {
                    return Err(Error::InvalidArgument(format!(
                        "reduce: a {}-byte receive buffer at root {root} for {} bytes sent",
                        recv.len(),
                        send.len()
                    )))
                }
                (Some(recv), true) => Some(recv),
                (None, true) => return Err(Error::InvalidArgument(NO_RECV.into())),
                _ => None,
            };
            board.reduce(self, send, recv, Some(root), op);
            return Ok(());
        }
        let ctx = self.coll_context();
        // acc holds v[me] ⊕ … ⊕ v[me + 2^k - 1] after round k.
        let mut acc = send.to_vec();
        let mut incoming = vec![0u8; send.len()];
        let mut mask = 1;
        while mask < n {
            if me & mask != 0 {
                self.send_on(ctx, &acc, me - mask, TAG_REDUCE, SendMode::Standard)?;
                break;
            }
            if me + mask < n {
                self.recv_on(ctx, &mut incoming, Source::Rank(me + mask), TagMatch::Tag(TAG_REDUCE))?;
                op(&acc, &mut incoming);
                std::mem::swap(&mut acc, &mut incoming);
            }
            mask <<= 1;
        }
        match (me, root) {
            (0, 0) => {}
            (0, _) => return self.send_on(ctx, &acc, root, TAG_REDUCE, SendMode::Standard),
            (r, _) if r == root => {
                self.recv_on(ctx, &mut acc, Source::Rank(0), TagMatch::Tag(TAG_REDUCE))?;
            }
            _ => return Ok(()),
        }
        let recv = recv.ok_or_else(|| Error::InvalidArgument(NO_RECV.into()))?;
        recv.copy_from_slice(&acc);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` and leaves the result in every rank's `recv`.
    pub fn allreduce_bytes(&self, send: &[u8], recv: &mut [u8], op: ReduceOp<'_>) -> Result<()> {
        self.intra_only("allreduce by bytes")?;
        if let Some((board, _)) = self.board_for(Collective::Allreduce, send.len(), true)? {
            if recv.len() != send.len() {
                return Err(Error::InvalidArgument(format!(
                    "allreduce: a {}-byte receive buffer for {} bytes sent (rank {})",
                    recv.len(),
                    send.len(),
                    self.rank()
                )));
            }
            board.reduce(self, send, Some(recv), None, op);
            return Ok(());
        }
        self.reduce_bytes(send, Some(&mut *recv).filter(|_| self.rank() == 0), 0, op)?;
        self.bcast_bytes(recv, 0)
    }
}

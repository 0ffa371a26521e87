//! Reduce and allreduce of small vectors on the board: each rank posts its vector once; the
//! root (reduce) or every rank (allreduce) folds them straight out of the posters' lines, in
//! rank order from the right, `v0 ⊕ (v1 ⊕ (… ⊕ v(n-1)))`: right for non-commutative
//! operators, and bit-identical in every rank, which all fold in the same order.

use super::board::Board;
use super::ReduceOp;
use crate::Communicator;

impl Board {
    /// Folds every rank's `send` into `recv` where `recv` is given: at the root of a reduce
    /// (`root` this rank's), or everywhere (allreduce, `root` None).
    pub(crate) fn reduce(
        &self,
        comm: &Communicator,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: Option<usize>,
        op: ReduceOp<'_>,
    ) {
        let (e, me, n, len) = (self.epoch(), self.rank(), self.size(), send.len());
        // A reduce's root reads its own vector where it lies; everyone else's goes up.
        if root != Some(me) {
            // SAFETY: `post` hands this rank's buffer of at least `len` bytes.
            self.post(comm, e, len, |at| unsafe { std::ptr::copy_nonoverlapping(send.as_ptr(), at, len) });
        }
        if let Some(recv) = recv.filter(|_| root.is_none_or(|r| r == me)) {
            let vector = |r: usize| match r == me {
                true => send,
                false => {
                    self.wait_for(comm, r, e);
                    self.read(r, e, len)
                }
            };
            recv.copy_from_slice(vector(n - 1));
            for r in (0..n - 1).rev() {
                op(vector(r), recv);
            }
        }
        self.finish(e);
    }
}

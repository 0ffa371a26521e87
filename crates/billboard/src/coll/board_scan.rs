//! Inclusive and exclusive scans on the board: every rank but the last posts its vector once
//! (the last one's is nobody's prefix); rank r folds the posts of ranks 0..r (0..r-1 for an
//! exscan) straight out of their lines, all ranks at once. Where the chain of messages waits
//! n - 1 hops for the last rank's prefix, every rank here waits for posts that are all in flight
//! at once; rank r folds r vectors itself, small ones (one data area at most).
//!
//! The fold goes left to right, `((v0 ⊕ v1) ⊕ v2) ⊕ …`, the chain's grouping: right for
//! non-commutative operators, and the same bits as the chain's.

use std::cell::RefCell;

use super::board::Board;
use super::ReduceOp;
use crate::Communicator;

thread_local! {
    /// The fold's second buffer, kept for the next scan: one in steady use allocates nothing.
    static OTHER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Board {
    /// `recv` at rank r becomes v0 ⊕ … ⊕ vr, or v0 ⊕ … ⊕ v(r-1) when `exclusive` (rank 0's
    /// `recv` is then left as it is). `recv` has `send`'s length (checked by the caller).
    pub(crate) fn scan(&self, comm: &Communicator, send: &[u8], recv: &mut [u8], op: ReduceOp<'_>, exclusive: bool) {
        let (e, me, n, len) = (self.epoch(), self.rank(), self.size(), send.len());
        if me + 1 < n {
            // SAFETY: `post` hands this rank's buffer of at least `len` bytes.
            self.post(comm, e, len, |to| unsafe { std::ptr::copy_nonoverlapping(send.as_ptr(), to, len) });
        }
        // The vectors folded: ranks 0..=me, or 0..me.
        let count = if exclusive { me } else { me + 1 };
        if count > 0 {
            let vector = |r: usize| match r == me {
                true => send,
                false => {
                    self.wait_for(comm, r, e);
                    self.read(r, e, len)
                }
            };
            OTHER.with_borrow_mut(|other| {
                other.resize(len, 0);
                // Each step folds the sum so far into a copy of the next vector (`op` writes
                // its second operand) and the two buffers swap: start where the last step
                // leaves the result in `recv`.
                let (mut acc, mut next) = match (count - 1) % 2 {
                    0 => (&mut *recv, &mut other[..]),
                    _ => (&mut other[..], &mut *recv),
                };
                acc.copy_from_slice(vector(0));
                for r in 1..count {
                    next.copy_from_slice(vector(r));
                    // An empty vector has nothing to fold (a user's function may not expect a
                    // count of 0).
                    if len > 0 {
                        op(acc, next);
                    }
                    std::mem::swap(&mut acc, &mut next);
                }
            });
        }
        self.finish(e);
    }
}

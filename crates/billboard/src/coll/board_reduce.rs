//! Reduce and allreduce of small vectors on the board: each rank posts its vector once; the
//! root (reduce) or every rank (allreduce) folds them straight out of the posters' lines in
//! the binomial tree's order (`schedule::binomial_fold`): right for non-commutative operators,
//! bit-identical in every rank, and the same bits as the tree's and the posts' reductions.

use std::cell::RefCell;

use super::board::Board;
use super::schedule::binomial_fold;
use super::ReduceOp;
use crate::Communicator;

thread_local! {
    /// Private copies of the slots the fold writes into (a poster's line is only read), kept
    /// for the next reduction: a collective in steady use allocates nothing.
    static INTO: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

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
            if n == 2 {
                // The fold's one step, rank 0's vector into rank 1's, without its machinery
                // (the 2-rank allreduce of 8 B is all overhead: ~100 instructions of ~1,000).
                let other = 1 - me;
                self.wait_for(comm, other, e);
                let theirs = self.read(other, e, len);
                let (first, second) = if me == 0 { (send, theirs) } else { (theirs, send) };
                recv.copy_from_slice(second);
                op(first, recv);
                self.finish(e);
                return;
            }
            let vector = |r: usize| match r == me {
                true => send,
                false => {
                    self.wait_for(comm, r, e);
                    self.read(r, e, len)
                }
            };
            // Slot n-1, where the result ends, is `recv`; the others written are copies (none
            // on two ranks: no thread-local to reach).
            recv.copy_from_slice(vector(n - 1));
            let mut fold = |copies: &mut [u8]| {
                for (from, into) in binomial_fold(n) {
                    // At distance 1 (`from` even) `into` is written for the first time: its
                    // poster's line is copied first; at larger distances both are slots
                    // written before (`binomial_fold`).
                    let first = from % 2 == 0;
                    if first && into + 1 < n {
                        copies[into * len..][..len].copy_from_slice(vector(into));
                    }
                    // `from` < `into`: its copy, if any, lies below.
                    let (lower, upper) = copies.split_at_mut((into * len).min(copies.len()));
                    let from = if first { vector(from) } else { &lower[from * len..][..len] };
                    let into = if into + 1 == n { &mut *recv } else { &mut upper[..len] };
                    op(from, into);
                }
            };
            match n > 2 {
                true => INTO.with_borrow_mut(|copies| {
                    if copies.len() < len * n {
                        copies.resize(len * n, 0);
                    }
                    fold(copies)
                }),
                false => fold(&mut []),
            }
        }
        self.finish(e);
    }
}

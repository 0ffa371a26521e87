//! Reduce-scatter on the board (seed 000: each rank reduces a slice, in parallel, out of the
//! partitions every rank wrote): every rank posts its whole vector once in its own lines, and
//! rank r folds only its own block straight out of every poster's lines. Where the allreduce
//! folds the whole vector in every rank (or moves it twice, split), each rank here folds 1/n
//! of it and nothing moves but one post.
//!
//! The fold keeps rank order in the binomial tree's grouping (`schedule::binomial_fold`), as
//! the board's reduce and the message algorithms do: right for non-commutative operators, and
//! the same bits as the allreduce's block.
//!
//! Past one data area (`board-cells`): the vector is cut into cells of one data area (a whole
//! number of elements), one epoch each; in each every rank posts its cell and the ranks whose
//! block meets it fold that piece.

use std::cell::RefCell;

use super::board::{Board, DATA};
use super::schedule::binomial_fold;
use super::ReduceOp;
use crate::Communicator;

thread_local! {
    /// Private copies of the slots the fold writes into (a poster's line is only read), kept
    /// for the next reduction: a collective in steady use allocates nothing.
    static INTO: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Board {
    /// Every rank's `send` (one data area at most) reduced; this rank's block, bytes
    /// `at..at + recv.len()` of the result, into `recv`.
    pub(crate) fn reduce_scatter(
        &self,
        comm: &Communicator,
        send: &[u8],
        recv: &mut [u8],
        at: usize,
        op: ReduceOp<'_>,
    ) {
        let e = self.epoch();
        self.post_and_fold(comm, e, (send, 0), recv, at, op);
        self.finish(e);
    }

    /// [`Board::reduce_scatter`] of a vector of any length, in cells of whole `elem`-byte
    /// elements up to one data area.
    pub(crate) fn reduce_scatter_cells(
        &self,
        comm: &Communicator,
        send: &[u8],
        recv: &mut [u8],
        (at, elem): (usize, usize),
        op: ReduceOp<'_>,
    ) {
        let cell = DATA / elem.max(1) * elem.max(1);
        debug_assert!(cell > 0, "an element of {elem} bytes is larger than a cell (the caller's check)");
        if send.is_empty() || cell == 0 {
            // One epoch all the same: every rank counts the epochs alike.
            return self.reduce_scatter(comm, send, recv, at, op);
        }
        for (k, piece) in send.chunks(cell).enumerate() {
            let e = self.epoch();
            self.post_and_fold(comm, e, (piece, k * cell), recv, at, op);
            self.finish(e);
        }
    }

    /// Posts `piece` (bytes `from..` of this rank's vector) in epoch `e` and folds the part of
    /// this rank's block (`recv`, bytes `at..` of the result) that it holds, out of every post.
    fn post_and_fold(
        &self,
        comm: &Communicator,
        e: u64,
        (piece, from): (&[u8], usize),
        recv: &mut [u8],
        at: usize,
        op: ReduceOp<'_>,
    ) {
        let (me, n, len) = (self.rank(), self.size(), piece.len());
        // SAFETY: `post` hands this rank's buffer of at least `len` bytes.
        self.post(comm, e, len, |to| unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), to, len) });
        // The block's bytes within the piece: [lo, hi) of the vector.
        let (lo, hi) = (at.max(from), (at + recv.len()).min(from + len));
        if lo >= hi {
            return;
        }
        let vector = |r: usize| -> &[u8] {
            let whole = match r == me {
                true => piece,
                false => {
                    self.wait_for(comm, r, e);
                    self.read(r, e, len)
                }
            };
            &whole[lo - from..hi - from]
        };
        fold_in_tree_order(n, vector, &mut recv[lo - at..hi - at], op);
    }
}

/// `into` = `vector(0) ⊕ … ⊕ vector(n-1)`, grouped as `binomial_fold` groups them (the board's
/// reduce does the same over whole vectors, `board_reduce.rs`).
pub(super) fn fold_in_tree_order<'a>(n: usize, vector: impl Fn(usize) -> &'a [u8], into: &mut [u8], op: ReduceOp<'_>) {
    INTO.with_borrow_mut(|copies| fold_through(n, vector, into, copies, op));
}

/// [`fold_in_tree_order`] through the `copies` given: a nonblocking step's own
/// (`board_steps.rs`). It runs from the engine's progress, which may run inside a blocking
/// fold's wait for a post while that fold holds the thread-local copies (a second borrow
/// panicked: board_nonblocking, 4 ranks).
pub(super) fn fold_through<'a>(
    n: usize,
    vector: impl Fn(usize) -> &'a [u8],
    into: &mut [u8],
    copies: &mut Vec<u8>,
    op: ReduceOp<'_>,
) {
    let len = into.len();
    // Slot n-1, where the result ends, is `into`; the others written are copies.
    into.copy_from_slice(vector(n - 1));
    if copies.len() < len * n {
        copies.resize(len * n, 0);
    }
    for (from, to) in binomial_fold(n) {
        // At distance 1 (`from` even) `to` is written for the first time: its poster's
        // piece is copied first; at larger distances both are slots written before.
        let first = from % 2 == 0;
        if first && to + 1 < n {
            copies[to * len..][..len].copy_from_slice(vector(to));
        }
        // `from` < `to`: its copy, if any, lies below.
        let (lower, upper) = copies.split_at_mut(to * len);
        let from = if first { vector(from) } else { &lower[from * len..][..len] };
        let to = if to + 1 == n { &mut *into } else { &mut upper[..len] };
        op(from, to);
    }
}

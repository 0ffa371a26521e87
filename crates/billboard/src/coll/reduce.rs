//! Reduce and allreduce: a binomial tree into rank 0 that keeps rank order (so
//! non-commutative operators are right), then a hop to the root if it is another rank.

use super::board::DATA;
use super::board_reduce_cells::cell_bytes;
use super::select::{reduce_by, Collective, ReduceBy};
use super::{ReduceOp, TAG_REDUCE};

use crate::{Communicator, Error, Result, SendMode, Source, TagMatch};

const NO_RECV: &str = "reduce: the root must pass a receive buffer";

/// Working vectors larger than this go back to the allocator after a reduction (as a
/// schedule's scratch does, `engine/sched.rs`).
const KEEP_WORK: usize = 16 << 20;

thread_local! {
    /// The tree's two working vectors, kept for the next reduction: one in steady use
    /// allocates nothing. Taken, not borrowed: an operator that reduces again gets its own.
    static WORK: std::cell::Cell<(Vec<u8>, Vec<u8>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

impl Communicator {
    /// Reduces every rank's `send` with `op`; the result lands in `recv` at `root` (other
    /// ranks may pass `None`). All buffers have the same length.
    pub fn reduce_bytes(&self, send: &[u8], recv: Option<&mut [u8]>, root: usize, op: ReduceOp<'_>) -> Result<()> {
        self.reduce_direct(send, recv, root, op, None)
    }

    /// [`Communicator::reduce_bytes`] of elements of `elements.0` bytes by an operator that
    /// commutes where `elements.1`: knowing where elements begin (and whether their order may
    /// change) lets 2 ranks fold a part each (`reduce_halves.rs`), where the table says so.
    pub fn reduce_elements(
        &self,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: usize,
        op: ReduceOp<'_>,
        elements: (usize, bool),
    ) -> Result<()> {
        self.reduce_direct(send, recv, root, op, Some(elements))
    }

    fn reduce_direct(
        &self,
        send: &[u8],
        mut recv: Option<&mut [u8]>,
        root: usize,
        op: ReduceOp<'_>,
        elements: Option<(usize, bool)>,
    ) -> Result<()> {
        self.intra_only("reduce by bytes")?;
        let n = self.size();
        if root >= n {
            return Err(Error::InvalidRank { rank: root, size: n });
        }
        if self.reduce_on_board(send, recv.as_deref_mut(), Some(root), op)? {
            return Ok(());
        }
        if let Some(elements) = elements {
            if self.reduce_in_cells(send, recv.as_deref_mut(), root, elements, op)? {
                return Ok(());
            }
        }
        // The root's result must be whole (the other rank writes into it).
        let whole = self.rank() != root || recv.as_deref().is_some_and(|r| r.len() == send.len());
        let halves = |e: &(usize, bool)| whole && reduce_by(self, send.len(), true, e.1) == ReduceBy::Halves;
        if let Some(elements) = elements.filter(halves) {
            if self.reduce_halves(send, recv.as_deref_mut(), Some(root), op, elements)? {
                return Ok(());
            }
        }
        let (mut a, mut b) = WORK.take();
        let done = self.tree_fold(send, recv, root, op, (&mut a, &mut b));
        if a.capacity() <= KEEP_WORK {
            WORK.set((a, b));
        }
        done
    }

    /// The binomial tree of [`Communicator::reduce_bytes`] with working vectors `a` and `b`.
    fn tree_fold(
        &self,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: usize,
        op: ReduceOp<'_>,
        (a, b): (&mut Vec<u8>, &mut Vec<u8>),
    ) -> Result<()> {
        let (n, me, len, ctx) = (self.size(), self.rank(), send.len(), self.coll_context());
        for v in [&mut *a, &mut *b] {
            if v.len() < len {
                v.resize(len, 0);
            }
        }
        // acc holds v[me] ⊕ … ⊕ v[me + 2^k - 1] after round k: `send` itself until the first
        // combine, then `a` or `b` (`held`: 0, 1, 2), each incoming vector received into the
        // other one.
        let mut held = 0;
        // Rank 0 as the root receives its last vector straight into `recv` (no copy after).
        let mut recv = recv;
        let last = (n > 1).then(|| 1usize << (usize::BITS - 1 - (n - 1).leading_zeros()));
        let mut mask = 1;
        while mask < n {
            if me & mask != 0 {
                let acc = match held {
                    0 => send,
                    1 => &a[..len],
                    _ => &b[..len],
                };
                self.send_on(ctx, acc, me - mask, TAG_REDUCE, SendMode::Standard)?;
                break;
            }
            if me + mask < n {
                let (into, other) = if held == 1 { (&mut *b, &*a) } else { (&mut *a, &*b) };
                let acc = if held == 0 { send } else { &other[..len] };
                if let Some(recv) = recv.as_deref_mut().filter(|r| me == root && Some(mask) == last && r.len() == len) {
                    self.recv_on(ctx, recv, Source::Rank(me + mask), TagMatch::Tag(TAG_REDUCE))?;
                    op(acc, recv);
                    return Ok(());
                }
                let into = &mut into[..len];
                self.recv_on(ctx, into, Source::Rank(me + mask), TagMatch::Tag(TAG_REDUCE))?;
                op(acc, into);
                held = if held == 1 { 2 } else { 1 };
            }
            mask <<= 1;
        }
        let acc = match held {
            0 => send,
            1 => &a[..len],
            _ => &b[..len],
        };
        match (me, root) {
            (0, 0) => {}
            (0, _) => return self.send_on(ctx, acc, root, TAG_REDUCE, SendMode::Standard),
            (r, _) if r == root => {
                let recv = recv.ok_or_else(|| Error::InvalidArgument(NO_RECV.into()))?;
                self.recv_on(ctx, recv, Source::Rank(0), TagMatch::Tag(TAG_REDUCE))?;
                return Ok(());
            }
            _ => return Ok(()),
        }
        let recv = recv.ok_or_else(|| Error::InvalidArgument(NO_RECV.into()))?;
        recv.copy_from_slice(acc);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` and leaves the result in every rank's `recv`.
    pub fn allreduce_bytes(&self, send: &[u8], recv: &mut [u8], op: ReduceOp<'_>) -> Result<()> {
        self.allreduce_direct(send, recv, op, None)
    }

    /// [`Communicator::allreduce_bytes`] of elements of `elements.0` bytes by an operator that
    /// commutes where `elements.1`: 2 ranks may then fold a half each (`reduce_halves.rs`),
    /// where the table says so.
    pub fn allreduce_elements(
        &self,
        send: &[u8],
        recv: &mut [u8],
        op: ReduceOp<'_>,
        elements: (usize, bool),
    ) -> Result<()> {
        self.allreduce_direct(send, recv, op, Some(elements))
    }

    fn allreduce_direct(
        &self,
        send: &[u8],
        recv: &mut [u8],
        op: ReduceOp<'_>,
        elements: Option<(usize, bool)>,
    ) -> Result<()> {
        self.intra_only("allreduce by bytes")?;
        if self.reduce_on_board(send, Some(&mut *recv), None, op)? {
            return Ok(());
        }
        // Each rank writes into the other's result: both must be whole.
        if recv.len() != send.len() {
            return Err(wrong_length(Collective::Allreduce, recv.len(), send.len(), self.rank()));
        }
        let halves = |e: &(usize, bool)| reduce_by(self, send.len(), false, e.1) == ReduceBy::Halves;
        if let Some(elements) = elements.filter(halves) {
            if self.reduce_halves(send, Some(&mut *recv), None, op, elements)? {
                return Ok(());
            }
        }
        self.reduce_bytes(send, Some(&mut *recv).filter(|_| self.rank() == 0), 0, op)?;
        self.bcast_bytes(recv, 0)
    }

    /// [`Communicator::allreduce_bytes`] (`root` None) or [`Communicator::reduce_bytes`] where
    /// the table gives the reduction of `send.len()` bytes to the board: `Ok(true)` when done,
    /// `Ok(false)` (nothing done) where it does not. An interface whose arguments need no
    /// preparing (a builtin type) calls this first, so a small reduction costs one table
    /// look-up before the board. `recv` matters only where the result lands.
    #[inline]
    pub fn reduce_on_board(
        &self,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: Option<usize>,
        op: ReduceOp<'_>,
    ) -> Result<bool> {
        let what = if root.is_some() { Collective::Reduce } else { Collective::Allreduce };
        // Past one data area the board's cells take elements whole (`reduce_in_cells`).
        let Some((board, _)) = self.board_for(what, send.len(), true)?.filter(|_| send.len() <= DATA) else {
            return Ok(false);
        };
        let lands = root.is_none_or(|r| r == self.rank());
        let recv = match recv.filter(|_| lands) {
            Some(recv) if recv.len() != send.len() => {
                return Err(wrong_length(what, recv.len(), send.len(), self.rank()))
            }
            None if lands => return Err(Error::InvalidArgument(NO_RECV.into())),
            recv => recv,
        };
        board.reduce(self, send, recv, root, op);
        Ok(true)
    }

    /// A blocking reduce of elements of `elem` bytes through the board in cells, where the
    /// table gives it the cells (`board_reduce_cells.rs`) and an element fits one: `Ok(true)`
    /// when done, `Ok(false)` (nothing done) where it does not.
    fn reduce_in_cells(
        &self,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: usize,
        (elem, _): (usize, bool),
        op: ReduceOp<'_>,
    ) -> Result<bool> {
        if send.len() <= DATA || cell_bytes(elem) == 0 {
            return Ok(false);
        }
        let Some((board, "board-cells")) = self.board_for(Collective::Reduce, send.len(), true)? else {
            return Ok(false);
        };
        let recv = match recv.filter(|_| root == self.rank()) {
            Some(recv) if recv.len() != send.len() => {
                return Err(wrong_length(Collective::Reduce, recv.len(), send.len(), self.rank()))
            }
            None if root == self.rank() => return Err(Error::InvalidArgument(NO_RECV.into())),
            recv => recv,
        };
        board.reduce_cells(self, send, recv, (root, elem), op);
        Ok(true)
    }
}

/// A receive buffer of `got` bytes for a reduction of `len` (by `rank`): the error.
#[cold]
fn wrong_length(what: Collective, got: usize, len: usize, rank: usize) -> Error {
    Error::InvalidArgument(format!(
        "{}: a {got}-byte receive buffer for {len} bytes sent (rank {rank})",
        what.name_and_switch().0
    ))
}

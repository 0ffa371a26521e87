//! Nonblocking collectives on the board (MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce,
//! MPI_Iallreduce, MPI_Igather, MPI_Iscatter, MPI_Iallgather(v) and their persistent forms, on
//! one host): the blocking forms' posts and reads (`board_barrier.rs`, `board_bcast.rs`,
//! `board_reduce.rs`, `board_gather.rs`, ...) as one step of a schedule
//! that the engine's progress polls (`engine/sched.rs`, [`Polled`]), never blocking: post
//! once no member still reads the line, then wait for the posts it reads, read them, end.
//!
//! They run on the slot's nonblocking lane (`board.rs`), whose epochs are theirs alone: every
//! member starts the communicator's nonblocking collectives in one order, but not always in
//! the same order relative to its blocking ones (mpi4py's iagree fallback), so a blocking
//! collective never takes their epochs. The epoch is taken when the call starts and ends
//! when the step has read all it reads, in whatever order the program completes its
//! requests: the read mark stays below the oldest epoch in flight
//! (`Board::end_nonblocking`), moved on from progress, not from MPI_Wait.
//!
//! A start never agrees on a slot (an agreement waits for every member, which a nonblocking
//! call must not): it uses the slot a blocking collective agreed on before, and where there
//! is none, or the call's turn is one the agreement left to messages (a member started it
//! before it agreed), it writes today's message schedule; the same choice in every member.

use std::sync::Arc;

use super::board::{Board, DATA};
use super::board_reduce_scatter::fold_through;
use super::gather::Layout;
use super::nonblocking::Collective;
use super::select::report;
use super::select::Collective as Op;
use super::select_board::board_by;
use crate::engine::sched::{Polled, ReduceFn};
use crate::{Communicator, Error, Result};

/// What a step does in its epoch.
enum Kind {
    /// Every rank posts its arrival and reads every other's; or (`leader`, the table's
    /// `board-leader`) rank 0 reads every arrival, then posts the line that releases all.
    Barrier { leader: bool },
    /// The root posts `len` bytes at `buf`; the others copy them into theirs.
    Bcast { buf: *mut u8, len: usize, root: usize },
    /// Every rank posts its `len` bytes at `send`; the root (every rank when `None`) folds
    /// them, in rank order, into `recv`. Every rank's vector is read from its line (this
    /// rank's too), so `send` may be `recv` (MPI_IN_PLACE).
    Reduce { send: *const u8, recv: *mut u8, len: usize, root: Option<usize>, op: ReduceFn, copies: Vec<u8> },
    /// Every rank but the root posts its `part` bytes at `send`; the root copies each into
    /// `recv` at its `(offset, length)` in `layout` (its own from `send`, which may lie there).
    Gather { send: *const u8, part: usize, recv: *mut u8, layout: Vec<(usize, usize)>, root: usize },
    /// The root posts its parts (`part` bytes at each offset of `at` in `send`) one after
    /// another; every rank copies its own into `recv` (`recv_len` bytes).
    Scatter { send: *const u8, at: Vec<usize>, recv: (*mut u8, usize), part: usize, root: usize },
    /// Every rank posts its part (`layout[me].1` bytes at `send`); every rank copies every
    /// part into `recv` at its place in `layout` (its own from `send`, which may lie there).
    Allgather { send: *const u8, recv: *mut u8, layout: Vec<(usize, usize)> },
}

/// One nonblocking board collective of one rank: its board, its epoch, what it does.
struct Step {
    board: Arc<Board>,
    e: u64,
    context: u32,
    kind: Kind,
    posted: bool,
    ended: bool,
}

// SAFETY: the pointers are buffers the caller lends until the operation ends; the board's
// lines lie in the segment, mapped while the engine that holds this step lives.
unsafe impl Send for Step {}

impl Step {
    /// The bytes this rank posts: where and how many (`None`: it posts nothing).
    fn post(&self) -> Option<(*const u8, usize)> {
        let me = self.board.rank();
        match self.kind {
            Kind::Barrier { .. } => Some((std::ptr::null(), 0)),
            Kind::Bcast { buf, len, root } => (me == root).then_some((buf as *const u8, len)),
            Kind::Reduce { send, len, .. } => Some((send, len)),
            Kind::Gather { root, .. } if root == me => None,
            Kind::Gather { send, part, .. } => Some((send, part)),
            // Posted by `post_parts`: the parts are gathered into the line.
            Kind::Scatter { .. } => None,
            Kind::Allgather { send, ref layout, .. } => Some((send, layout[me].1)),
        }
    }

    /// The scatter root's post: its parts, one after another (`n * part` bytes); whether it
    /// posted. Any other step: true.
    fn post_parts(&self) -> bool {
        let (b, me) = (&*self.board, self.board.rank());
        let Kind::Scatter { send, ref at, part, root, .. } = self.kind else { return true };
        if me != root {
            return true;
        }
        b.try_post(self.e, at.len() * part, |into| {
            for (r, &d) in at.iter().enumerate() {
                // SAFETY: the root lends `part` bytes at every offset of `at` until the
                // operation ends; `try_post` hands `n * part` bytes.
                unsafe { std::ptr::copy_nonoverlapping(send.add(d), into.add(r * part), part) };
            }
        })
    }

    /// The member whose post this rank reads, all of them (`None`), or nobody.
    fn reads(&self) -> Reads {
        let me = self.board.rank();
        match self.kind {
            Kind::Barrier { leader: true } if me != 0 => Reads::One(0),
            Kind::Barrier { .. } => Reads::All,
            Kind::Bcast { root, .. } if root == me => Reads::Nobody,
            Kind::Bcast { root, .. } => Reads::One(root),
            Kind::Reduce { root: Some(root), .. } if root != me => Reads::Nobody,
            Kind::Reduce { .. } => Reads::All,
            Kind::Gather { root, .. } if root != me => Reads::Nobody,
            Kind::Gather { .. } | Kind::Allgather { .. } => Reads::All,
            Kind::Scatter { root, .. } if root == me => Reads::Nobody,
            Kind::Scatter { root, .. } => Reads::One(root),
        }
    }

    /// Whether every post this rank reads is there.
    fn all_posted(&self) -> bool {
        let (b, e) = (&*self.board, self.e);
        match self.reads() {
            Reads::Nobody => true,
            Reads::One(r) => b.posted(r, e),
            Reads::All => (0..b.size()).all(|r| r == b.rank() || b.posted(r, e)),
        }
    }

    /// Reads the posts (all there).
    fn read(&mut self) {
        let (b, e) = (&*self.board, self.e);
        match &mut self.kind {
            Kind::Barrier { .. } => {}
            Kind::Bcast { buf, len, root } => {
                if *root != b.rank() {
                    // SAFETY: the caller lends `len` bytes at `buf` until the operation ends.
                    let buf = unsafe { std::slice::from_raw_parts_mut(*buf, *len) };
                    buf.copy_from_slice(b.read(*root, e, *len));
                }
            }
            // A non-root lent no receive buffer.
            Kind::Reduce { root: Some(root), .. } if *root != b.rank() => {}
            Kind::Reduce { recv, len, op, copies, .. } => {
                // SAFETY: as above, at `recv`.
                let recv = unsafe { std::slice::from_raw_parts_mut(*recv, *len) };
                let len = *len;
                fold_through(b.size(), |r| b.read(r, e, len), recv, copies, &mut **op);
            }
            Kind::Gather { send, part, recv, layout, root } => {
                if *root != b.rank() {
                    return;
                }
                for (r, &(d, l)) in layout.iter().enumerate() {
                    let l = l.min(*part);
                    // SAFETY: the root lends every part of `layout` at `recv` (checked by
                    // the caller) and `part` bytes at `send` (which may be its own part).
                    unsafe {
                        match r == b.rank() {
                            true => crate::copy::copy_own(*send, recv.add(d), l),
                            false => std::ptr::copy_nonoverlapping(b.read(r, e, *part).as_ptr(), recv.add(d), l),
                        }
                    }
                }
            }
            Kind::Scatter { send, at, recv: (recv, recv_len), part, root } => {
                let (me, n, l) = (b.rank(), b.size(), (*part).min(*recv_len));
                // SAFETY: as above; `recv` holds `recv_len` bytes.
                unsafe {
                    match me == *root {
                        true => crate::copy::copy_own(send.add(at[me]), *recv, l),
                        false => {
                            std::ptr::copy_nonoverlapping(b.read(*root, e, n * *part)[me * *part..].as_ptr(), *recv, l)
                        }
                    }
                }
            }
            Kind::Allgather { send, recv, layout } => {
                for (r, &(d, l)) in layout.iter().enumerate() {
                    // SAFETY: every part of `layout` lies in `recv` (checked by the caller);
                    // this rank's `l` bytes at `send` may be its own part of `recv`.
                    unsafe {
                        match r == b.rank() {
                            true => crate::copy::copy_own(*send, recv.add(d), l),
                            false => std::ptr::copy_nonoverlapping(b.read(r, e, l).as_ptr(), recv.add(d), l),
                        }
                    }
                }
            }
        }
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.board.end_nonblocking(self.e);
        }
    }
}

enum Reads {
    Nobody,
    One(usize),
    All,
}

impl Polled for Step {
    fn poll(&mut self, revoked: bool) -> Option<Result<()>> {
        if revoked {
            self.end();
            return Some(Err(Error::Revoked { context: self.context & !1 }));
        }
        // The leader's release goes out once every arrival is in.
        let posts_last = matches!(self.kind, Kind::Barrier { leader: true }) && self.board.rank() == 0;
        if posts_last && !self.all_posted() {
            return None;
        }
        if !self.posted {
            self.posted = match self.post() {
                // SAFETY: `try_post` hands this rank's buffer of at least `len` bytes; the
                // caller lends `len` bytes at `from` until the operation ends.
                Some((from, len)) => {
                    self.board.try_post(self.e, len, |to| unsafe { std::ptr::copy_nonoverlapping(from, to, len) })
                }
                None => self.post_parts(),
            };
            if !self.posted {
                return None;
            }
        }
        if !self.all_posted() {
            return None;
        }
        self.read();
        self.end();
        Some(Ok(()))
    }

    fn context(&self) -> u32 {
        self.context
    }
}

impl Drop for Step {
    /// A step dropped before it ended (its schedule failed) lets its epoch go all the same:
    /// the read mark must not stay below it for ever.
    fn drop(&mut self) {
        self.end();
    }
}

impl Communicator {
    /// Starts nonblocking collective `what`, in which a rank posts `post` bytes, on the
    /// board, where a slot is agreed and the table gives the board to `what` (alike in every
    /// member); `None` where it does not apply (the caller writes its message schedule).
    fn start_on_board(&self, what: Op, post: usize, kind: impl FnOnce(&str) -> Kind) -> Option<Result<Collective>> {
        // Every such call takes its turn, the board's or not (see `nonblocking_lane`).
        let board = self.nonblocking_lane();
        if post > DATA {
            return None;
        }
        let board = board?;
        let by = board_by(self, what, post)?;
        report(self, what, by, "", post);
        let (board, e) = (board.clone(), board.epoch());
        board.begin_nonblocking(e);
        let step = Step { board, e, context: self.coll_context(), kind: kind(by), posted: false, ended: false };
        Some(self.nonblocking(None, |plan| {
            plan.poll(Box::new(step));
            plan.end_round();
            Ok(())
        }))
    }

    /// MPI_Ibarrier on the board (see [`Communicator::start_on_board`]).
    pub(super) fn ibarrier_on_board(&self) -> Option<Result<Collective>> {
        self.start_on_board(Op::Barrier, 0, |by| Kind::Barrier { leader: by == "board-leader" })
    }

    /// MPI_Ibcast on the board, as [`Communicator::ibcast_raw`].
    pub(super) fn ibcast_on_board(&self, buf: *mut u8, len: usize, root: usize) -> Option<Result<Collective>> {
        self.start_on_board(Op::Bcast, len, |_| Kind::Bcast { buf, len, root })
    }

    /// MPI_Ireduce (`root` given) and MPI_Iallreduce on the board, as
    /// [`Communicator::ireduce_raw`]; hands `op` back where the board does not apply.
    pub(super) fn ireduce_on_board(
        &self,
        (send, recv, len): (*const u8, *mut u8, usize),
        root: Option<usize>,
        op: ReduceFn,
    ) -> std::result::Result<Result<Collective>, ReduceFn> {
        let what = if root.is_some() { Op::Reduce } else { Op::Allreduce };
        let mut op = Some(op);
        let started = self.start_on_board(what, len, |_| {
            let op = op.take().expect("taken once");
            Kind::Reduce { send, recv, len, root, op, copies: Vec::new() }
        });
        started.ok_or_else(|| op.take().expect("not taken where the board does not apply"))
    }

    /// MPI_Igather on the board, as [`Communicator::igather_raw`] (the root's `recv` given,
    /// the layout checked by the caller).
    pub(super) fn igather_on_board(
        &self,
        (send, part): (*const u8, usize),
        recv: Option<(*mut u8, Layout<'_>)>,
        root: usize,
    ) -> Option<Result<Collective>> {
        self.start_on_board(Op::Gather, part, |_| {
            let (recv, layout) = recv.map_or((std::ptr::null_mut(), Vec::new()), |(b, l)| (b, l.to_vec()));
            Kind::Gather { send, part, recv, layout, root }
        })
    }

    /// MPI_Iscatter on the board, as [`Communicator::iscatter_raw`] (the root's `send`
    /// given, the layout checked by the caller).
    pub(super) fn iscatter_on_board(
        &self,
        send: Option<(*const u8, Layout<'_>)>,
        recv: (*mut u8, usize),
        part: usize,
        root: usize,
    ) -> Option<Result<Collective>> {
        self.start_on_board(Op::Scatter, part * self.size(), |_| {
            let (send, at) = send.map_or((std::ptr::null(), Vec::new()), |(b, l)| (b, l.iter().map(|p| p.0).collect()));
            Kind::Scatter { send, at, recv, part, root }
        })
    }

    /// MPI_Iallgather(v) on the board, as [`Communicator::iallgatherv_raw`] (the layout
    /// checked by the caller; `largest` its longest part).
    pub(super) fn iallgather_on_board(
        &self,
        send: *const u8,
        recv: *mut u8,
        layout: Layout<'_>,
        largest: usize,
    ) -> Option<Result<Collective>> {
        self.start_on_board(Op::Allgather, largest, |_| Kind::Allgather { send, recv, layout: layout.to_vec() })
    }
}

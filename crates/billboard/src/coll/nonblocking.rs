//! Nonblocking collectives (MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce): the
//! algorithms of the blocking forms, written as schedules (`engine/sched.rs`) that the engine
//! moves on in every progress round. A call returns once the first round has gone out; the
//! operation goes on in any later call of the process and ends in [`Collective::wait`].
//!
//! Each operation has a tag of its own on the collective context (its turn among the
//! nonblocking collectives of the communicator, which every member starts in the same order),
//! so it never takes the messages of a blocking collective or of another one in flight.

use super::gather::{check_layout, Layout};
use super::schedule::{binomial_children, binomial_parent};
use crate::engine::sched::{Local, Msg, ReduceFn, Round, Sched, SchedId};
use crate::engine::EngineRef;
use crate::{Communicator, Error, Result, Source, TagMatch};

/// A nonblocking collective in flight. It goes on whenever this process drives the engine
/// (any wait or test); dropping it waits for it to end, since the other members count on it
/// and it may still write the buffers it was given.
#[must_use = "a collective completes only through wait/test (or its drop, which blocks)"]
pub struct Collective {
    engine: EngineRef,
    id: Option<SchedId>,
}

impl Collective {
    /// Makes progress once; true if the operation has ended (then [`Collective::wait`]
    /// returns at once).
    pub fn test(&self) -> bool {
        let Some(id) = self.id else { return true };
        let mut engine = self.engine.lock();
        engine.sched_done(id) || {
            engine.progress(None);
            engine.sched_done(id)
        }
    }

    /// Waits for the operation to end; its error, if a message of it failed.
    pub fn wait(mut self) -> Result<()> {
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        let Some(id) = self.id.take() else { return Ok(()) };
        self.engine.wait_until(None, |e| e.sched_done(id)).finish_sched(id)
    }
}

impl Drop for Collective {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// A schedule being written for one rank of one operation.
pub(super) struct Plan<'c> {
    comm: &'c Communicator,
    context: u32,
    tag: i32,
    rounds: Vec<Round>,
    scratch: Vec<Box<[u8]>>,
}

impl Plan<'_> {
    fn send(&self, to: usize, buf: *const u8, len: usize) -> Result<Msg> {
        let peer = self.comm.check_rank(to)?;
        let source = self.comm.rank() as u32;
        Ok(Msg::Send { peer, context: self.context, source, tag: self.tag, buf, len })
    }

    fn recv(&self, from: usize, buf: *mut u8, cap: usize) -> Result<Msg> {
        let (pattern, hint) = self.comm.pattern(self.context, Source::Rank(from), TagMatch::Tag(self.tag))?;
        Ok(Msg::Recv { pattern, hint, buf, cap })
    }

    fn round(&mut self, msgs: Vec<Msg>, then: Vec<Local>) {
        self.rounds.push(Round { msgs, then });
    }

    /// Scratch memory of `len` bytes holding `init` (or zeros), owned by the schedule.
    fn scratch(&mut self, len: usize, init: Option<*const u8>) -> *mut u8 {
        let mut b = vec![0u8; len].into_boxed_slice();
        if let Some(src) = init {
            // SAFETY: the caller lends `len` readable bytes at `src`.
            unsafe { std::ptr::copy_nonoverlapping(src, b.as_mut_ptr(), len) };
        }
        let p = b.as_mut_ptr();
        self.scratch.push(b); // the heap block does not move with the box
        p
    }

    /// Binomial broadcast of `len` bytes at `buf` from `root` (as [`Communicator::bcast_bytes`]).
    pub(super) fn bcast(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        if let Some(parent) = binomial_parent(me, root, n) {
            let msg = self.recv(parent, buf, len)?;
            self.round(vec![msg], Vec::new());
        }
        let sends =
            binomial_children(me, root, n).into_iter().map(|c| self.send(c, buf, len)).collect::<Result<_>>()?;
        self.round(sends, Vec::new());
        Ok(())
    }

    /// Reduction of `len` bytes at every rank's `send` into `recv` at `root` (as
    /// [`Communicator::reduce_bytes`]: a binomial tree into rank 0 that keeps rank order,
    /// then a hop to the root). `send` is copied at once, so it may be `recv` itself.
    fn reduce(&mut self, send: *const u8, recv: *mut u8, len: usize, root: usize) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        // acc holds v[me] ⊕ … ⊕ v[me + 2^k - 1] after round k; the next part lands in `other`.
        let mut acc = self.scratch(len, Some(send));
        let mut other = self.scratch(len, None);
        let mut mask = 1;
        while mask < n {
            if me & mask != 0 {
                let msg = self.send(me - mask, acc, len)?;
                self.round(vec![msg], Vec::new());
                break;
            }
            if me + mask < n {
                let msg = self.recv(me + mask, other, len)?;
                self.round(vec![msg], vec![Local::Combine { from: acc, into: other, len }]);
                std::mem::swap(&mut acc, &mut other);
            }
            mask <<= 1;
        }
        match (me, root) {
            (0, 0) => self.round(Vec::new(), vec![Local::Copy { from: acc, to: recv, len }]),
            (0, _) => {
                let msg = self.send(root, acc, len)?;
                self.round(vec![msg], Vec::new());
            }
            (r, _) if r == root => {
                let msg = self.recv(0, recv, len)?;
                self.round(vec![msg], Vec::new());
            }
            _ => {}
        }
        Ok(())
    }
}

impl Plan<'_> {
    /// Prefix reduction along the chain of ranks (as [`Communicator::scan_bytes`]). `send`
    /// is copied at once, so it may be `recv`.
    fn scan(&mut self, send: *const u8, recv: *mut u8, len: usize, exclusive: bool) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        let acc = self.scratch(len, Some(send));
        if me > 0 {
            let prefix = self.scratch(len, None);
            let msg = self.recv(me - 1, prefix, len)?;
            let mut then = Vec::new();
            if exclusive {
                then.push(Local::Copy { from: prefix, to: recv, len });
            }
            then.push(Local::Combine { from: prefix, into: acc, len });
            self.round(vec![msg], then);
        }
        if me + 1 < n {
            let msg = self.send(me + 1, acc, len)?;
            self.round(vec![msg], Vec::new());
        }
        if !exclusive {
            self.round(Vec::new(), vec![Local::Copy { from: acc, to: recv, len }]);
        }
        Ok(())
    }

    /// Linear gather into the root's `recv` (buffer, length, layout).
    pub(super) fn gather(
        &mut self,
        send: *const u8,
        send_len: usize,
        recv: Option<(*mut u8, usize, Layout)>,
        root: usize,
    ) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        if me != root {
            let msg = self.send(root, send, send_len)?;
            self.round(vec![msg], Vec::new());
            return Ok(());
        }
        let (buf, len, layout) =
            recv.ok_or(Error::InvalidArgument("gather: the root must pass a receive buffer".into()))?;
        check_layout("gather", len, layout, n)?;
        let mut msgs = Vec::with_capacity(n);
        for (r, &(d, l)) in layout.iter().enumerate() {
            // SAFETY: parts lie inside the lent buffer (checked above).
            let at = unsafe { buf.add(d) };
            if r == me {
                // SAFETY: `send` holds `send_len` bytes; it may be this very part (in place).
                unsafe { std::ptr::copy(send, at, send_len.min(l)) };
            } else {
                msgs.push(self.recv(r, at, l)?);
            }
        }
        self.round(msgs, Vec::new());
        Ok(())
    }

    /// Linear scatter of the root's `send` parts (buffer, length, layout).
    pub(super) fn scatter(
        &mut self,
        send: Option<(*const u8, usize, Layout)>,
        recv: *mut u8,
        recv_len: usize,
        root: usize,
    ) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        if me != root {
            let msg = self.recv(root, recv, recv_len)?;
            self.round(vec![msg], Vec::new());
            return Ok(());
        }
        let (buf, len, layout) =
            send.ok_or(Error::InvalidArgument("scatter: the root must pass a send buffer".into()))?;
        check_layout("scatter", len, layout, n)?;
        let mut msgs = Vec::with_capacity(n);
        for (r, &(d, l)) in layout.iter().enumerate() {
            // SAFETY: parts lie inside the lent buffer (checked above).
            let at = unsafe { buf.add(d) };
            if r == me {
                // SAFETY: `recv` holds `recv_len` bytes.
                unsafe { std::ptr::copy(at, recv, l.min(recv_len)) };
            } else {
                msgs.push(self.send(r, at, l)?);
            }
        }
        self.round(msgs, Vec::new());
        Ok(())
    }

    /// Pairwise all-to-all in one round (layouts checked by the caller).
    pub(super) fn alltoall(
        &mut self,
        (send, _, out): (*const u8, usize, Layout),
        (recv, _, into): (*mut u8, usize, Layout),
    ) -> Result<()> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        let mut msgs = Vec::with_capacity(2 * n);
        for (r, &(d, l)) in into.iter().enumerate().filter(|&(r, _)| r != me) {
            // SAFETY: parts lie inside the lent buffers (checked by the caller).
            msgs.push(self.recv(r, unsafe { recv.add(d) }, l)?);
        }
        for k in 1..n {
            // Staggered partners spread the load instead of all ranks hitting rank 0 first.
            let s = (me + k) % n;
            let (d, l) = out[s];
            // SAFETY: as above.
            msgs.push(self.send(s, unsafe { send.add(d) }, l)?);
        }
        let ((sd, sl), (rd, rl)) = (out[me], into[me]);
        // SAFETY: as above; the parts may overlap only in place, where they are the same.
        unsafe { std::ptr::copy(send.add(sd), recv.add(rd), sl.min(rl)) };
        self.round(msgs, Vec::new());
        Ok(())
    }
}

impl Communicator {
    /// Starts a [`Communicator::scan_bytes`] (MPI_Iscan, MPI_Iexscan). `send` is read during
    /// the call only, so it may be `recv`.
    ///
    /// # Safety
    /// `send..send+len` is readable; `recv..recv+len` stays valid, and untouched by the
    /// caller, until the operation ends.
    pub unsafe fn iscan_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        op: ReduceFn,
        exclusive: bool,
    ) -> Result<Collective> {
        self.nonblocking(Some(op), |plan| plan.scan(send, recv, len, exclusive))
    }

    /// Starts a reduce-scatter (MPI_Ireduce_scatter): every rank's `len` bytes at `send`
    /// reduced with `op`, and this rank's `part` (offset, length) of the result into `recv`.
    /// `send` is read during the call only.
    ///
    /// # Safety
    /// As for [`Communicator::iscan_raw`], with `part.1` bytes at `recv`.
    pub unsafe fn ireduce_scatter_raw(
        &self,
        send: *const u8,
        len: usize,
        recv: *mut u8,
        (at, part): (usize, usize),
        op: ReduceFn,
    ) -> Result<Collective> {
        if at + part > len {
            return Err(Error::InvalidArgument(format!(
                "reduce_scatter: this rank's part [{at}, {}) lies beyond the {len}-byte result",
                at + part
            )));
        }
        self.nonblocking(Some(op), |plan| {
            let all = plan.scratch(len, None);
            plan.reduce(send, all, len, 0)?;
            plan.bcast(all, len, 0)?;
            // SAFETY: `at + part <= len`, checked above.
            let from = unsafe { all.add(at) };
            plan.round(Vec::new(), vec![Local::Copy { from, to: recv, len: part }]);
            Ok(())
        })
    }

    /// Writes one operation's schedule with `write`, then starts it.
    pub(super) fn nonblocking(
        &self,
        op: Option<ReduceFn>,
        write: impl FnOnce(&mut Plan) -> Result<()>,
    ) -> Result<Collective> {
        let mut plan = Plan {
            comm: self,
            context: self.coll_context(),
            tag: self.next_nonblocking_tag(),
            rounds: Vec::new(),
            scratch: Vec::new(),
        };
        write(&mut plan)?;
        let sched = Sched::new(plan.rounds, op, plan.scratch);
        let id = self.engine().lock().start_sched(sched);
        Ok(Collective { engine: self.engine().clone(), id: Some(id) })
    }

    /// Starts a [`Communicator::barrier`] that completes later (MPI_Ibarrier): the same
    /// dissemination rounds, moved on by the engine.
    pub fn ibarrier(&self) -> Result<Collective> {
        let (n, me) = (self.size(), self.rank());
        self.nonblocking(None, |plan| {
            let none = std::ptr::NonNull::<u8>::dangling().as_ptr();
            let mut dist = 1;
            while dist < n {
                let msgs = vec![plan.send((me + dist) % n, none, 0)?, plan.recv((me + n - dist) % n, none, 0)?];
                plan.round(msgs, Vec::new());
                dist *= 2;
            }
            Ok(())
        })
    }

    /// Starts a [`Communicator::bcast_bytes`] of the `len` bytes at `buf` (MPI_Ibcast).
    ///
    /// # Safety
    /// `buf..buf+len` stays valid, and untouched by the caller, until the operation ends.
    pub unsafe fn ibcast_raw(&self, buf: *mut u8, len: usize, root: usize) -> Result<Collective> {
        self.check_rank(root)?;
        self.nonblocking(None, |plan| plan.bcast(buf, len, root))
    }

    /// Starts a [`Communicator::reduce_bytes`] of the `len` bytes at `send` into `recv` at
    /// `root` (MPI_Ireduce). `send` is read during the call only, so it may be `recv`
    /// (MPI_IN_PLACE); other ranks' `recv` is not used.
    ///
    /// # Safety
    /// `send..send+len` is readable; at the root `recv..recv+len` stays valid, and untouched
    /// by the caller, until the operation ends.
    pub unsafe fn ireduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: usize,
        op: ReduceFn,
    ) -> Result<Collective> {
        self.check_rank(root)?;
        self.nonblocking(Some(op), |plan| plan.reduce(send, recv, len, root))
    }

    /// Starts a [`Communicator::allreduce_bytes`] (MPI_Iallreduce): the reduction into rank
    /// 0, then its broadcast, in one schedule. `send` is read during the call only.
    ///
    /// # Safety
    /// As for [`Communicator::ireduce_raw`], with `recv` lent on every rank.
    pub unsafe fn iallreduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        op: ReduceFn,
    ) -> Result<Collective> {
        self.nonblocking(Some(op), |plan| {
            plan.reduce(send, recv, len, 0)?;
            plan.bcast(recv, len, 0)
        })
    }
}

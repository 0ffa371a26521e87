//! Nonblocking collectives (MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce): the
//! algorithms of the blocking forms, written as schedules (`engine/sched.rs`) that the engine
//! moves on in every progress round. A call returns once the first round has gone out; the
//! operation goes on in any later call of the process and ends in [`Collective::wait`].
//!
//! On one host, once a blocking collective agreed the communicator's board slot, barrier,
//! bcast, reduce, allreduce, gather, scatter and allgather run on the board (`board_steps.rs`).
//!
//! Each operation has a tag of its own on the collective context (its turn among the
//! nonblocking collectives of the communicator, which every member starts in the same order),
//! so it never takes the messages of a blocking collective or of another one in flight.

use super::gather::{check_layout, Layout};
use super::schedule::{binomial_children, binomial_parent};
use super::select::{self, reduce_by, BcastBy, ReduceBy};
use super::Reduction;
use crate::engine::sched::{Local, Msg, Polled, ReduceFn, SchedId, Scheds};
use crate::engine::EngineLink;
use crate::{Communicator, Error, Result, Source, TagMatch};

/// A nonblocking collective in flight. It goes on whenever this process drives the engine
/// (any wait or test); dropping it waits for it to end, since the other members count on it
/// and it may still write the buffers it was given.
#[must_use = "a collective completes only through wait/test (or its drop, which blocks)"]
pub struct Collective {
    engine: EngineLink,
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
        self.engine.wait_sched(id)
    }
}

impl Collective {
    /// A collective that ended inside the call that started it (a blocking form on the board).
    pub(super) fn finished(comm: &Communicator) -> Collective {
        Collective { engine: EngineLink::new(comm.engine()), id: None }
    }

    /// Whether it ended inside the call that started it: what waits for its end can be done
    /// at once.
    pub fn ended(&self) -> bool {
        self.id.is_none()
    }
}

impl Drop for Collective {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// A schedule being written for one rank of one operation, straight into its engine slot.
pub(super) struct Plan<'c, 'e> {
    /// The communicator whose ranks `send` and `recv` name: the operation's, or on an
    /// intercommunicator its hidden local one for a local phase (see [`Plan::local`]).
    pub(super) comm: &'c Communicator,
    /// The communicator the operation runs on.
    home: &'c Communicator,
    context: u32,
    tag: i32,
    scheds: &'e mut Scheds,
    id: SchedId,
    /// Ranks outnumber cores on this node. Only a rank's own schedule may depend on it (other
    /// hosts may differ), never which messages it exchanges.
    pub(super) crowded: bool,
    /// While a phase of a hierarchical collective addresses part of the communicator (one
    /// host's members, or the hosts' leaders): those members, and where this rank stands among
    /// them. Rank k of the rounds written is then member `group[k]` (see [`Plan::within`]).
    group: Option<(Vec<usize>, usize)>,
    /// Messages of this many bytes and more go by rendezvous, below the eager limit too
    /// (`select::rendezvous_min`).
    rendezvous_min: usize,
}

impl Plan<'_, '_> {
    /// Adds a send of `len` bytes at `buf` to rank `to` to the round being written.
    pub(super) fn send(&mut self, to: usize, buf: *const u8, len: usize) -> Result<()> {
        let peer = self.comm.checked_peer(self.member(to))?;
        let source = self.comm.rank() as u32;
        let rendezvous = len >= self.rendezvous_min;
        let (context, tag) = (self.context, self.tag);
        self.scheds.get(self.id).push(Msg::Send { peer, context, source, tag, buf, len, rendezvous });
        Ok(())
    }

    /// Adds a receive of up to `cap` bytes from rank `from` into `buf` to the round being written.
    pub(super) fn recv(&mut self, from: usize, buf: *mut u8, cap: usize) -> Result<()> {
        let from = Source::Rank(self.member(from));
        let (pattern, hint) = self.comm.pattern(self.context, from, TagMatch::Tag(self.tag))?;
        self.scheds.get(self.id).push(Msg::Recv { pattern, hint, buf, cap });
        Ok(())
    }

    /// Adds a step that runs once the round being written has completed.
    pub(super) fn then(&mut self, step: Local) {
        self.scheds.get(self.id).then(step);
    }

    /// Adds a step that progress polls to the round being written (the board's, `board_steps.rs`).
    pub(super) fn poll(&mut self, step: Box<dyn Polled>) {
        self.scheds.get(self.id).poll(step);
    }

    pub(super) fn end_round(&mut self) {
        self.scheds.get(self.id).end_round();
    }

    /// The messages written next go out with the last round written, not after it: for a
    /// phase whose first round needs nothing that round brings (a broadcast's host phase at a
    /// leader that has just sent the message on to other leaders). Only a round without local
    /// steps is joined.
    pub(super) fn join_last_round(&mut self) {
        self.scheds.get(self.id).reopen_round();
    }

    /// This process's rank among the ranks `send` and `recv` name now.
    pub(super) fn rank(&self) -> usize {
        self.group.as_ref().map_or_else(|| self.comm.rank(), |g| g.1)
    }

    /// The number of ranks `send` and `recv` name now.
    pub(super) fn size(&self) -> usize {
        self.group.as_ref().map_or_else(|| self.comm.size(), |g| g.0.len())
    }

    /// The communicator's rank that rank `k` of the rounds being written names.
    fn member(&self, k: usize) -> usize {
        match &self.group {
            Some((g, _)) => g.get(k).copied().unwrap_or(usize::MAX),
            None => k,
        }
    }

    /// Rounds written from now on address only `members` (ranks of the communicator, this one
    /// among them): rank k names `members[k]`. Every member of a phase writes it with the same
    /// list, so they agree on who is who.
    pub(super) fn within(&mut self, members: &[usize]) {
        let me = self.comm.rank();
        let at = members.iter().position(|&r| r == me).expect("a phase's members include this rank");
        let mut g = self.group.take().map(|g| g.0).unwrap_or_default();
        g.clear();
        g.extend_from_slice(members);
        self.group = Some((g, at));
    }

    /// Rounds written from now on address the whole communicator again.
    pub(super) fn whole(&mut self) {
        self.group = None;
    }

    /// Adds a round without messages that copies `len` bytes from `from` to `to` once every
    /// round written before has ended: how a phase takes what an earlier phase left (a
    /// buffer's bytes may not be read while the schedule is written).
    pub(super) fn copy(&mut self, from: *const u8, to: *mut u8, len: usize) {
        self.then(Local::Copy { from, to, len });
        self.end_round();
    }

    /// Rounds written from now on address the local group of the intercommunicator (ranks
    /// name its members, on its hidden communicator's collective context).
    pub(super) fn local(&mut self) {
        self.comm = self.home.remote().expect("an intercommunicator").local();
        self.context = self.comm.coll_context();
    }

    /// Rounds written from now on address the remote group again (see [`Plan::local`]).
    pub(super) fn remote(&mut self) {
        self.comm = self.home;
        self.context = self.home.coll_context();
    }

    /// Scratch memory of `len` bytes holding `init` (or zeros), owned by the schedule.
    pub(super) fn scratch(&mut self, len: usize, init: Option<*const u8>) -> *mut u8 {
        // SAFETY: the caller lends `len` readable bytes at `init`.
        let init = init.map(|src| unsafe { std::slice::from_raw_parts(src, len) });
        self.scheds.scratch(self.id, len, init)
    }

    /// Adds a send of `len` bytes at `buf` to every rank but this one to the round being
    /// written: one post they all read where the routes allow.
    pub(super) fn send_to_all(&mut self, buf: *const u8, len: usize) {
        let me = self.rank();
        self.multicast((0..self.size()).filter(|&r| r != me), buf, len);
    }

    /// Adds a send of `len` bytes at `buf` to the ranks `to` (never this one) to the round being
    /// written: one post they all read where the routes allow.
    pub(super) fn multicast(&mut self, to: impl Iterator<Item = usize>, buf: *const u8, len: usize) {
        let comm = self.comm;
        let group = self.group.as_ref().map(|g| &g.0[..]);
        let peers = to.map(|k| comm.world_rank(group.map_or(k, |g| g[k])));
        let (source, context, tag) = (comm.rank() as u32, self.context, self.tag);
        let sched = self.scheds.get(self.id);
        if len >= self.rendezvous_min {
            // A post is eager: past the switch each reader copies straight from `buf` instead.
            for peer in peers {
                sched.push(Msg::Send { peer, context, source, tag, buf, len, rendezvous: true });
            }
            return;
        }
        sched.multicast(peers, context, source, tag, buf, len);
    }

    /// Broadcast of `len` bytes at `buf` from `root` (as [`Communicator::bcast_bytes`]) by the
    /// algorithm [`select::bcast_by`] chooses for the whole communicator.
    pub(super) fn bcast(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        match select::bcast_by(self.comm, len) {
            BcastBy::Post => self.bcast_post(buf, len, root),
            BcastBy::Tree => self.bcast_binomial(buf, len, root),
            BcastBy::ScatterAllgather => self.bcast_scatter_allgather(buf, len, root),
            BcastBy::Hier => self.hier_bcast(&self.comm.hosts(), buf, len, root),
        }
    }

    /// Broadcast among ranks on one host, by the one-host table.
    pub(super) fn bcast_on_one_host(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        match select::bcast_on_one_host(self.size(), len, self.crowded) {
            BcastBy::Post => self.bcast_post(buf, len, root),
            _ => self.bcast_binomial(buf, len, root),
        }
    }

    /// Broadcast by the root's one post that every rank reads (seed 004's multicast broadcast).
    fn bcast_post(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        match self.rank() == root {
            true => self.send_to_all(buf, len),
            false => self.recv(root, buf, len)?,
        }
        self.end_round();
        Ok(())
    }

    /// Broadcast down a binomial tree: each rank receives once, then sends to its subtrees.
    pub(super) fn bcast_binomial(&mut self, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        if let Some(parent) = binomial_parent(me, root, n) {
            self.recv(parent, buf, len)?;
            self.end_round();
        }
        for child in binomial_children(me, root, n) {
            self.send(child, buf, len)?;
        }
        self.end_round();
        Ok(())
    }

    /// Reduction of `len` bytes at every rank's `send` into `recv` at `root` (as
    /// [`Communicator::reduce_bytes`]: a binomial tree into rank 0 that keeps rank order,
    /// then a hop to the root). `send` is read once the rounds written before have ended (it
    /// may be what they produce), so it may be `recv` itself.
    pub(super) fn reduce(&mut self, send: *const u8, recv: *mut u8, len: usize, root: usize) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        // acc holds v[me] ⊕ … ⊕ v[me + 2^k - 1] after round k; the next part lands in `other`.
        let mut acc = self.scratch(len, None);
        let mut other = self.scratch(len, None);
        self.copy(send, acc, len);
        let mut mask = 1;
        while mask < n {
            if me & mask != 0 {
                self.send(me - mask, acc, len)?;
                self.end_round();
                break;
            }
            if me + mask < n {
                self.recv(me + mask, other, len)?;
                self.then(Local::Combine { from: acc, into: other, len });
                self.end_round();
                std::mem::swap(&mut acc, &mut other);
            }
            mask <<= 1;
        }
        match (me, root) {
            (0, 0) => self.then(Local::Copy { from: acc, to: recv, len }),
            (0, _) => self.send(root, acc, len)?,
            (r, _) if r == root => self.recv(0, recv, len)?,
            _ => {}
        }
        self.end_round();
        Ok(())
    }
}

impl Plan<'_, '_> {
    /// Reduction of `len` bytes into `recv` at `root`, or everywhere when `root` is `None`
    /// (allreduce), by the algorithm `select.rs` chooses: cut into blocks when large, posts on
    /// one host when small, else a binomial tree (and a broadcast). `send` may be `recv` and
    /// stays readable until the operation ends; `elements` is the element size and whether
    /// the operator is commutative.
    fn reduction(
        &mut self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: Option<usize>,
        elements: (usize, bool),
    ) -> Result<()> {
        match reduce_by(self.comm, len, root.is_some(), elements.1) {
            ReduceBy::Split => return self.reduce_split(send, recv, len, root, elements),
            // The halves' blocking form only: a schedule's allreduce splits instead.
            ReduceBy::Halves if root.is_none() => return self.reduce_split(send, recv, len, root, elements),
            ReduceBy::Post => return self.reduce_post(send, recv, len, root),
            ReduceBy::Doubling if root.is_none() => return self.allreduce_doubling(send, recv, len),
            ReduceBy::Ring if root.is_none() => return self.allreduce_ring(send, recv, len, elements.0),
            ReduceBy::Hier => return self.hier_reduce(&self.comm.hosts(), (send, recv, len), root, elements),
            _ => {}
        }
        self.reduce(send, recv, len, root.unwrap_or(0))?;
        match root {
            Some(_) => Ok(()),
            None => self.bcast(recv, len, 0),
        }
    }

    /// Prefix reduction along the chain of ranks (as [`Communicator::scan_bytes`]). `send`
    /// is copied at once, so it may be `recv`.
    fn scan(&mut self, send: *const u8, recv: *mut u8, len: usize, exclusive: bool) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        let acc = self.scratch(len, Some(send));
        if me > 0 {
            let prefix = self.scratch(len, None);
            self.recv(me - 1, prefix, len)?;
            if exclusive {
                self.then(Local::Copy { from: prefix, to: recv, len });
            }
            self.then(Local::Combine { from: prefix, into: acc, len });
            self.end_round();
        }
        if me + 1 < n {
            self.send(me + 1, acc, len)?;
        }
        if !exclusive {
            self.then(Local::Copy { from: acc, to: recv, len });
        }
        self.end_round();
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
        let (me, n) = (self.rank(), self.size());
        if me != root {
            self.send(root, send, send_len)?;
            self.end_round();
            return Ok(());
        }
        let (buf, len, layout) =
            recv.ok_or_else(|| Error::InvalidArgument("gather: the root must pass a receive buffer".into()))?;
        check_layout("gather", len, layout, n)?;
        for (r, &(d, l)) in layout.iter().enumerate() {
            // SAFETY: parts lie inside the lent buffer (checked above).
            let at = unsafe { buf.add(d) };
            if r == me {
                // SAFETY: `send` holds `send_len` bytes; it may be this very part (in place).
                unsafe { crate::copy::copy_own(send, at, send_len.min(l)) };
            } else {
                self.recv(r, at, l)?;
            }
        }
        self.end_round();
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
        let (me, n) = (self.rank(), self.size());
        if me != root {
            self.recv(root, recv, recv_len)?;
            self.end_round();
            return Ok(());
        }
        let (buf, len, layout) =
            send.ok_or_else(|| Error::InvalidArgument("scatter: the root must pass a send buffer".into()))?;
        check_layout("scatter", len, layout, n)?;
        for (r, &(d, l)) in layout.iter().enumerate() {
            // SAFETY: parts lie inside the lent buffer (checked above).
            let at = unsafe { buf.add(d) };
            if r == me {
                // SAFETY: `recv` holds `recv_len` bytes.
                unsafe { crate::copy::copy_own(at, recv, l.min(recv_len)) };
            } else {
                self.send(r, at, l)?;
            }
        }
        self.end_round();
        Ok(())
    }

    /// Pairwise all-to-all in one round (layouts checked by the caller).
    pub(super) fn alltoall(
        &mut self,
        (send, _, out): (*const u8, usize, Layout),
        (recv, _, into): (*mut u8, usize, Layout),
    ) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        for (r, &(d, l)) in into.iter().enumerate().filter(|&(r, _)| r != me) {
            // SAFETY: parts lie inside the lent buffers (checked by the caller).
            self.recv(r, unsafe { recv.add(d) }, l)?;
        }
        for k in 1..n {
            // Staggered partners spread the load instead of all ranks hitting rank 0 first.
            let s = (me + k) % n;
            let (d, l) = out[s];
            // SAFETY: as above.
            self.send(s, unsafe { send.add(d) }, l)?;
        }
        let ((sd, sl), (rd, rl)) = (out[me], into[me]);
        // SAFETY: as above; the parts may overlap only in place, where they are the same.
        unsafe { crate::copy::copy_own(send.add(sd), recv.add(rd), sl.min(rl)) };
        self.end_round();
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
    /// reduced as `how` says, and this rank's block of the result (`blocks[rank]`: offset,
    /// length; every rank's block in `blocks`) into `recv`: on one host, where the allreduce
    /// would split the vector, each block straight to its owner in one round
    /// (`reduce_scatter_direct.rs`); else by the allreduce `select.rs` chooses (the hierarchy
    /// on several hosts), each rank keeping its block.
    ///
    /// # Safety
    /// As for [`Communicator::iallreduce_raw`], with this rank's block's length at `recv`.
    pub unsafe fn ireduce_scatter_raw(
        &self,
        send: *const u8,
        len: usize,
        recv: *mut u8,
        blocks: Layout<'_>,
        how: Reduction,
    ) -> Result<Collective> {
        let (at, part) = blocks.get(self.rank()).copied().unwrap_or_default();
        if self.is_inter() {
            return self.inter_ireduce_scatter_raw(send, len, recv, (at, part), how.op);
        }
        check_layout("reduce_scatter", len, blocks, self.size())?;
        // SAFETY: as for this function.
        let how = match unsafe { self.reduce_scatter_on_host_boards((send, len), (recv, (at, part)), how)? } {
            Ok(ended) => return Ok(ended),
            Err(how) => how,
        };
        let Reduction { op, elem, commutative } = how;
        if self.on_one_host() && matches!(reduce_by(self, len, false, commutative), ReduceBy::Split | ReduceBy::Halves)
        {
            return self.nonblocking(Some(op), |plan| plan.reduce_scatter_direct(send, recv, blocks, commutative));
        }
        self.nonblocking(Some(op), |plan| {
            let all = plan.scratch(len, None);
            plan.reduction(send, all, len, None, (elem, commutative))?;
            // SAFETY: `at + part <= len`, checked above.
            let from = unsafe { all.add(at) };
            plan.then(Local::Copy { from, to: recv, len: part });
            plan.end_round();
            Ok(())
        })
    }

    /// Writes one operation's schedule with `write`, then starts it.
    pub(super) fn nonblocking(
        &self,
        op: Option<ReduceFn>,
        write: impl FnOnce(&mut Plan) -> Result<()>,
    ) -> Result<Collective> {
        self.intra_only("this form of the collective")?;
        self.schedule(self.next_nonblocking_tag(), op, write)
    }

    /// [`Communicator::nonblocking`] with the operation's tag given.
    pub(super) fn schedule(
        &self,
        tag: i32,
        op: Option<ReduceFn>,
        write: impl FnOnce(&mut Plan) -> Result<()>,
    ) -> Result<Collective> {
        let context = self.coll_context();
        let mut engine = self.engine().lock();
        let id = engine.scheds().reserve();
        let crowded = engine.oversubscribed();
        // A reduction's messages stay eager: its split blocks pipeline through data-part slots
        // (coll.c, 2 ranks, us, eager vs rendezvous from 16 KiB: reduce 64 KiB 9.5 vs 11.3,
        // 256 KiB 28.5 vs 32.1; allreduce 64 KiB 8.6 vs 11.0, 256 KiB 31.3 vs 37.5).
        let rendezvous_min = if op.is_some() { usize::MAX } else { select::rendezvous_min(self) };
        let scheds = engine.scheds();
        let mut plan = Plan { comm: self, home: self, context, tag, scheds, id, crowded, group: None, rendezvous_min };
        // A schedule never runs on the board, whatever its caller then does.
        if let Err(e) = super::board::blocking(false, || write(&mut plan)) {
            engine.scheds().release(id);
            return Err(e);
        }
        engine.start_sched(id, op);
        drop(engine);
        Ok(Collective { engine: EngineLink::new(self.engine()), id: Some(id) })
    }

    /// Starts a [`Communicator::bcast_bytes`] of the `len` bytes at `buf` (MPI_Ibcast).
    ///
    /// # Safety
    /// `buf..buf+len` stays valid, and untouched by the caller, until the operation ends.
    pub unsafe fn ibcast_raw(&self, buf: *mut u8, len: usize, root: usize) -> Result<Collective> {
        self.checked_world_rank(root)?;
        if let Some(started) = self.ibcast_on_board(buf, len, root) {
            return started;
        }
        self.nonblocking(None, |plan| plan.bcast(buf, len, root))
    }

    /// Starts a [`Communicator::reduce_bytes`] of the `len` bytes at `send` into `recv` at
    /// `root` (MPI_Ireduce). `send` may be `recv` (MPI_IN_PLACE); other ranks' `recv` is not
    /// used.
    ///
    /// # Safety
    /// `send..send+len` stays readable, and at the root `recv..recv+len` valid, and untouched
    /// by the caller, until the operation ends.
    pub unsafe fn ireduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: usize,
        how: Reduction,
    ) -> Result<Collective> {
        self.checked_world_rank(root)?;
        // SAFETY: as for this function.
        let how = match unsafe { self.reduce_on_host_boards((send, recv, len), Some(root), how)? } {
            Ok(ended) => return Ok(ended),
            Err(how) => how,
        };
        let Reduction { op, elem, commutative } = how;
        let op = match self.ireduce_on_board((send, recv, len), Some(root), op) {
            Ok(started) => return started,
            Err(op) => op,
        };
        self.nonblocking(Some(op), |plan| plan.reduction(send, recv, len, Some(root), (elem, commutative)))
    }

    /// Starts a [`Communicator::allreduce_bytes`] (MPI_Iallreduce): blocks reduced by their
    /// owners and exchanged for large vectors, else the reduction into rank 0 then its
    /// broadcast, in one schedule.
    ///
    /// # Safety
    /// As for [`Communicator::ireduce_raw`], with `recv` lent on every rank.
    pub unsafe fn iallreduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        how: Reduction,
    ) -> Result<Collective> {
        if self.is_inter() {
            return self.inter_iallreduce_raw(send, recv, len, how.op);
        }
        // SAFETY: as for this function.
        let how = match unsafe { self.reduce_on_host_boards((send, recv, len), None, how)? } {
            Ok(ended) => return Ok(ended),
            Err(how) => how,
        };
        let Reduction { op, elem, commutative } = how;
        let op = match self.ireduce_on_board((send, recv, len), None, op) {
            Ok(started) => return started,
            Err(op) => op,
        };
        self.nonblocking(Some(op), |plan| plan.reduction(send, recv, len, None, (elem, commutative)))
    }
}

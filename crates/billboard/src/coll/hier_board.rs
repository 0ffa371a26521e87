//! Hierarchical collectives whose host phases run on the board (blocking forms): each host's
//! members on their own communicator's board slot (`board.rs`), the hosts' leaders (each
//! host's lowest member) on a communicator of their own over the network, by the table's
//! algorithms between hosts (`hier.rs` with one member per host). The schedule of `hier.rs`
//! moves the host phases by messages through the engine; here they are one post read by the
//! host (a barrier's arrival lines and release line, a broadcast's post, a reduction's posts
//! folded by the leader, a gather's parts read by the leader, the whole posted back for an
//! all-gather, a scatter's host block posted by the leader; a reduce-scatter is the
//! all-reduce's, each rank keeping its block; scans in `hier_board_scan.rs`), so a host's
//! members exchange no message at all.
//!
//! Applies where the table gives a blocking collective on several hosts the hierarchy, some
//! host holds two members or more, a rank's post fits one data area (2 KiB; an all-gather's
//! parts may differ in length; a scatter's host block inline, past it the scatterv's post in
//! `hier_board_parts.rs`), or, for broadcasts, reductions and gathers, in cells of one data
//! area (one epoch each) up to `BB_HIER_BCAST_MAX`, `BB_HIER_BOARD_MAX` and (a host's parts)
//! `BB_HIER_PARTS_MAX`, and
//! `BB_BOARD` is not 0: every member decides alike. The two communicators are made by the
//! first such collective (two splits, collective on the communicator) and kept with it, and
//! revoked with it (`engine/revoke.rs`: a rank blocked in a host phase learns of it); a host
//! whose members find no board slot free runs its host phases by their communicator's
//! messages, the other hosts still on their boards (each host's phases involve its members
//! alone). Gatherv and scatterv, whose parts' lengths only the root knows, in
//! `hier_board_parts.rs`.
//!
//! Reductions keep rank order where the hierarchy does (`select.rs` chooses it only for
//! commutative operators or hosts of consecutive ranks): a host folds its members in rank
//! order on its board, the leaders fold the hosts in host order.

use super::board::{Board, DATA};
use super::gather::Layout;
use super::hosts::Hosts;
use super::select_board::{BOARD, HIER_BOARD_MAX};
use super::{ReduceOp, Reduction, TAG_REDUCE};
use crate::{Communicator, Result, SendMode, Source, TagMatch};

/// The bytes of one cell of a vector of `elem`-byte elements cut for the board: whole elements
/// filling one data area at most (0: an element does not fit one).
fn cell(elem: usize) -> usize {
    DATA / elem.max(1) * elem.max(1)
}

/// A communicator's hierarchy for the board's host phases.
pub(crate) struct HostComms {
    /// This host's members, ranked as in the communicator.
    pub(super) node: Communicator,
    /// At a host's leader (its lowest member): the leaders, ranked by host.
    leaders: Option<Communicator>,
    pub(super) hosts: Hosts,
}

impl Communicator {
    /// The hierarchy of blocking collective of `len` bytes a rank posts, where the table gave
    /// it `hier` (the caller checked); made at the first call. `None`: the schedule of
    /// `hier.rs` runs it.
    pub(crate) fn hier_board(&self, len: usize) -> Result<Option<&HostComms>> {
        match len > DATA {
            true => Ok(None),
            false => self.host_comms(),
        }
    }

    /// [`Communicator::hier_board`] for a collective whose host phases go in cells of one
    /// data area past it (broadcasts, reductions of `elem`-byte elements), up to `max` bytes
    /// (`BB_HIER_BCAST_MAX`, `BB_HIER_BOARD_MAX`).
    pub(crate) fn hier_board_cells(&self, len: usize, elem: usize, max: usize) -> Result<Option<&HostComms>> {
        match len <= DATA || (len <= max && cell(elem) > 0) {
            true => self.host_comms(),
            false => Ok(None),
        }
    }

    fn host_comms(&self) -> Result<Option<&HostComms>> {
        if BOARD.get() == 0 || self.is_inter() || self.on_one_host() {
            return Ok(None);
        }
        match self.host_comms_slot().get() {
            Some(h) => Ok(h.as_ref()),
            None => self.make_host_comms(),
        }
    }

    #[cold]
    fn make_host_comms(&self) -> Result<Option<&HostComms>> {
        let hosts = self.hosts();
        let crowded_host = (0..hosts.count()).any(|h| hosts.members(h).len() > 1);
        let me = self.rank();
        // Each host's members keep their order: a host's fold is a run of ranks in order.
        let split = || -> Result<(Communicator, Option<Communicator>)> {
            let node = self.split(Some(hosts.of(me) as u32), me as i32)?.expect("colored");
            let leader = hosts.members(hosts.of(me))[0] == me;
            Ok((node, self.split(leader.then_some(0), me as i32)?))
        };
        let made = match crowded_host {
            // No context id free in every member (the one argument error a split of this
            // communicator can meet; all find it alike: the agreement is an AND of their
            // masks): the schedule of `hier.rs` needs none.
            true => match split() {
                Ok((node, leaders)) => {
                    // A revocation of this communicator reaches a rank blocked in a host or
                    // leaders' phase (`engine/revoke.rs`).
                    let mut engine = self.engine().lock();
                    for kept in std::iter::once(&node).chain(&leaders) {
                        engine.keep(self.context_id(), kept.context_id());
                    }
                    drop(engine);
                    Some(HostComms { node, leaders, hosts })
                }
                Err(crate::Error::InvalidArgument(_)) => None,
                Err(e) => return Err(e),
            },
            false => None,
        };
        // Another thread of this process made them at once (two collectives on one
        // communicator at once, which MPI forbids): keep the first.
        let _ = self.host_comms_slot().set(made);
        Ok(self.host_comms_slot().get().and_then(Option::as_ref))
    }
}

impl HostComms {
    /// This host's board, if its members agreed on a slot (at the first call, collective on
    /// the host).
    pub(super) fn board(&self) -> Result<Option<&Board>> {
        self.node.board()
    }

    /// Barrier: the host's arrivals read by its leader, the leaders' barrier, the leader's
    /// release line read by the host.
    pub(crate) fn barrier(&self) -> Result<()> {
        let between = || self.leaders.as_ref().map_or(Ok(()), Communicator::barrier);
        match self.board()? {
            // A leaders' barrier that failed because the communicator was revoked releases
            // nobody: its members fail too, on the revocation that reaches them (the host's
            // communicator goes with this one, `engine/revoke.rs`), not as if all had come.
            Some(board) => {
                let met = || match between() {
                    Err(e @ crate::Error::Revoked { .. }) => {
                        super::board::gave_up_revoked();
                        Err(e)
                    }
                    met => met,
                };
                let outcome = board.barrier_leader_with(&self.node, met);
                if outcome.is_err() {
                    // The call fails with the leaders' error itself.
                    super::board::revoked_in_wait();
                }
                outcome
            }
            None => {
                self.node.barrier()?;
                between()?;
                self.node.barrier()
            }
        }
    }

    /// Broadcast of `buf` from `root` (a rank of the communicator): on the root's host from
    /// the root, between the leaders from the root's host, on the other hosts from their
    /// leader. A root that leads its host sends between hosts first (the network is the
    /// longer way).
    pub(crate) fn bcast(&self, buf: &mut [u8], root: usize, me: usize) -> Result<()> {
        let (home, mine) = (self.hosts.of(root), self.hosts.of(me));
        let between = |buf: &mut [u8]| self.leaders.as_ref().map_or(Ok(()), |l| l.bcast_bytes(buf, home));
        if mine != home {
            between(buf)?;
            return self.node_bcast(buf, 0);
        }
        let from = Hosts::index_in(self.hosts.members(home), root).expect("the root is a member of its host");
        if from == 0 {
            between(buf)?;
            return self.node_bcast(buf, 0);
        }
        self.node_bcast(buf, from)?;
        between(buf)
    }

    fn node_bcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        match self.board()? {
            Some(board) if buf.len() <= DATA => {
                board.bcast(&self.node, buf, root);
                Ok(())
            }
            Some(board) => {
                board.bcast_cells(&self.node, buf, root);
                Ok(())
            }
            None => self.node.bcast_bytes(buf, root),
        }
    }

    /// The most members a host holds.
    pub(crate) fn widest(&self) -> usize {
        self.hosts.widest()
    }

    /// Whether `rank` leads its host.
    pub(super) fn leads(&self, rank: usize) -> bool {
        self.hosts.members(self.hosts.of(rank))[0] == rank
    }

    /// The host of `rank` (hosts in order of their lowest member).
    pub(super) fn host_of(&self, rank: usize) -> usize {
        self.hosts.of(rank)
    }

    /// Whether every host's members are consecutive ranks ([`Hosts::consecutive`]).
    pub(super) fn consecutive(&self) -> bool {
        self.hosts.consecutive()
    }

    /// At a host's leader, the leaders' communicator (ranked by host).
    pub(super) fn leaders(&self) -> Option<&Communicator> {
        self.leaders.as_ref()
    }

    /// The host's scan of `send` into `recv` (rank order of its members).
    pub(super) fn node_scan(&self, send: &[u8], recv: &mut [u8], op: ReduceOp<'_>, exclusive: bool) -> Result<()> {
        match self.board()? {
            Some(board) => {
                board.scan(&self.node, send, recv, op, exclusive);
                Ok(())
            }
            None => self.node.scan_bytes(send, recv, op, exclusive),
        }
    }

    /// Member `from`'s `len` bytes at `buf` into member `to`'s `buf` (the others pass any
    /// buffer): posts on the board (see [`Board::pass`]), else a message.
    fn node_pass(&self, buf: &mut [u8], len: usize, (from, to): (usize, usize)) -> Result<()> {
        let ctx = self.node.coll_context();
        match (self.board()?, self.node.rank()) {
            (Some(board), _) => board.pass(&self.node, buf, len, from, to),
            (_, r) if r == from => self.node.send_on(ctx, buf, to, TAG_REDUCE, SendMode::Standard)?,
            (_, r) if r == to => drop(self.node.recv_on(ctx, buf, Source::Rank(from), TagMatch::Tag(TAG_REDUCE))?),
            (_, _) => {}
        }
        Ok(())
    }

    /// The host's vectors of `elem`-byte elements folded in rank order into its leader's
    /// `into` (others pass `None`): past one data area in cells of whole elements, one epoch
    /// each, the members up to the slot's depth of cells ahead of the leader's folding.
    pub(super) fn node_reduce(
        &self,
        send: &[u8],
        mut into: Option<&mut [u8]>,
        op: ReduceOp<'_>,
        elem: usize,
    ) -> Result<()> {
        let len = send.len();
        match self.board()? {
            Some(board) if len <= DATA => board.reduce(&self.node, send, into, Some(0), op),
            Some(board) => {
                for at in (0..len).step_by(cell(elem)) {
                    let end = (at + cell(elem)).min(len);
                    board.reduce(&self.node, &send[at..end], into.as_mut().map(|i| &mut i[at..end]), Some(0), &mut *op);
                }
            }
            None => return self.node.reduce_bytes(send, into, 0, op),
        }
        Ok(())
    }

    /// Reduction of every rank's `send` into `recv` at `root` (a rank of the communicator), or
    /// everywhere when `root` is `None`: each host into its leader on the board, the leaders by
    /// the table's schedule between hosts, then the leader's result to the root on its host
    /// (one message, where the root does not lead it) or to every member (one post). `recv`
    /// holds `send.len()` bytes where the result lands, and is not `send`.
    pub(crate) fn reduce(
        &self,
        me: usize,
        send: &[u8],
        recv: *mut u8,
        root: Option<usize>,
        how: Reduction,
    ) -> Result<()> {
        let Reduction { mut op, elem, commutative } = how;
        let len = send.len();
        let leads = self.leaders.is_some();
        let mut host = vec![0u8; if leads { len } else { 0 }];
        self.node_reduce(send, leads.then_some(&mut host[..]), &mut *op, elem)?;
        let how = Reduction { op, elem, commutative };
        let home = root.map(|r| self.hosts.of(r));
        // SAFETY: where the result lands `recv` holds `len` bytes apart from `send` (caller).
        let result = || unsafe { std::slice::from_raw_parts_mut(recv, len) };
        let mut kept = Vec::new();
        if let Some(leaders) = &self.leaders {
            let to_root = root.is_some_and(|r| r != me) && home == Some(self.hosts.of(me));
            kept.resize(if to_root { len } else { 0 }, 0);
            // At a leader that is not the root, the leaders' schedule never writes `recv`.
            let into = if to_root { kept.as_mut_ptr() } else { recv };
            // SAFETY: `host` and `into` hold `len` bytes and outlive the wait below.
            let between = unsafe {
                match home {
                    Some(h) => leaders.ireduce_raw(host.as_ptr(), into, len, h, how)?,
                    None => leaders.iallreduce_raw(host.as_ptr(), into, len, how)?,
                }
            };
            between.wait()?;
        }
        // On the root's host, where the root does not lead it: the leader's result to the root.
        if let Some(r) = root.filter(|&r| home == Some(self.hosts.of(me)) && !self.leads(r)) {
            let at = Hosts::index_in(self.hosts.members(self.hosts.of(r)), r).expect("a member of its host");
            let buf = if me == r { result() } else { &mut kept[..] };
            self.node_pass(buf, len, (0, at))?;
        }
        match root {
            Some(_) => Ok(()),
            None => self.node_bcast(result(), 0),
        }
    }
}

impl Communicator {
    /// A blocking reduction (as [`Communicator::iallreduce_raw`], or `ireduce_raw` to `root`)
    /// by the hierarchy with its host phases on the board, where it applies: ended on return.
    /// Else `how` back, for the schedule.
    ///
    /// # Safety
    /// As for [`Communicator::ireduce_raw`]; the caller waits at once (`board::blocking`).
    pub(super) unsafe fn reduce_on_host_boards(
        &self,
        (send, recv, len): (*const u8, *mut u8, usize),
        root: Option<usize>,
        how: Reduction,
    ) -> Result<std::result::Result<super::Collective, Reduction>> {
        if !super::board::in_blocking_call()
            || self.is_inter()
            || self.on_one_host()
            || super::select::reduce_by(self, len, root.is_some(), how.commutative) != super::select::ReduceBy::Hier
        {
            return Ok(Err(how));
        }
        let Some(hosts) = self.hier_board_cells(len, how.elem, HIER_BOARD_MAX.get())? else { return Ok(Err(how)) };
        let me = self.rank();
        // In place (`send` is `recv`), the contribution is copied first: the result may land
        // before the host has read it.
        // SAFETY: `send` holds `len` readable bytes (caller).
        let mine = unsafe { std::slice::from_raw_parts(send, len) };
        let copy;
        let mine = match std::ptr::eq(send, recv) {
            true => {
                copy = mine.to_vec();
                &copy[..]
            }
            false => mine,
        };
        hosts.reduce(me, mine, recv, root, how)?;
        Ok(Ok(super::Collective::finished(self)))
    }
}

impl Communicator {
    /// A blocking reduce-scatter (as [`Communicator::ireduce_scatter_raw`], this rank's block
    /// at `at` of `part` bytes) by the hierarchy with its host phases on the board, where the
    /// allreduce would run so: the hierarchical allreduce's whole result, of which each rank
    /// keeps its block (the host's last phase is one post read by all its members either way).
    /// Else `how` back, for the schedule.
    ///
    /// # Safety
    /// As for [`Communicator::ireduce_scatter_raw`]; the caller waits at once.
    pub(super) unsafe fn reduce_scatter_on_host_boards(
        &self,
        (send, len): (*const u8, usize),
        (recv, (at, part)): (*mut u8, (usize, usize)),
        how: Reduction,
    ) -> Result<std::result::Result<super::Collective, Reduction>> {
        if !super::board::in_blocking_call()
            || self.is_inter()
            || self.on_one_host()
            || super::select::reduce_by(self, len, false, how.commutative) != super::select::ReduceBy::Hier
        {
            return Ok(Err(how));
        }
        let Some(hosts) = self.hier_board_cells(len, how.elem, HIER_BOARD_MAX.get())? else { return Ok(Err(how)) };
        let mut whole = vec![0u8; len];
        // SAFETY: `send` holds `len` readable bytes (caller); the result lands in `whole`.
        hosts.reduce(self.rank(), unsafe { std::slice::from_raw_parts(send, len) }, whole.as_mut_ptr(), None, how)?;
        // SAFETY: `recv` holds this rank's block, `at + part <= len` (checked by the caller).
        unsafe { std::ptr::copy_nonoverlapping(whole.as_ptr().add(at), recv, part) };
        Ok(Ok(super::Collective::finished(self)))
    }
}

impl HostComms {
    /// All-gather of every rank's part at `send` into `recv`, rank r's part at `layout[r]`
    /// (checked by the caller; parts of any lengths, each within one data area): each host's
    /// parts into its leader's packed block on the board, the blocks among the leaders (the
    /// table's all-gather between hosts), the packed whole posted once on each host (in cells
    /// past one data area), each rank taking its parts out into place. Hosts in order, each
    /// host's members in order: the packed whole is every host's block in turn.
    ///
    /// # Safety
    /// `send` holds this rank's part, `recv` every part of `layout`; `send` may be this rank's
    /// part.
    pub(crate) unsafe fn allgather(&self, me: usize, send: *const u8, recv: *mut u8, layout: Layout) -> Result<()> {
        let (order, places, blocks) = self.packing(|r| layout[r].1);
        let mut packed = vec![0u8; blocks.last().map_or(0, |&(d, l)| d + l)];
        let (at, len) = blocks[self.hosts.of(me)];
        let host_block = packed.as_mut_ptr().wrapping_add(at);
        // Every member posts the longest part (the leader reads every post at one length):
        // a shorter one padded.
        let (mine, longest) = (layout[me].1, layout.iter().map(|p| p.1).max().unwrap_or(0));
        let mut padded = Vec::new();
        let send = match mine < longest {
            true => {
                padded.resize(longest, 0);
                // SAFETY: `send` holds this rank's part (caller).
                unsafe { std::ptr::copy_nonoverlapping(send, padded.as_mut_ptr(), mine) };
                padded.as_ptr()
            }
            false => send,
        };
        let members = self.hosts.members(self.hosts.of(me));
        let place = |i: usize| (places[members[i]] - at, layout[members[i]].1);
        // SAFETY: `send` holds `longest` bytes; the block holds every member's part at `place`.
        unsafe { self.gather_host((send, longest), self.leaders.is_some().then_some(host_block), place)? };
        if let Some(leaders) = &self.leaders {
            // SAFETY: the block lies in `packed`, which holds every block and outlives the wait.
            let between =
                unsafe { leaders.iallgatherv_raw(host_block, len, packed.as_mut_ptr(), packed.len(), &blocks)? };
            between.wait()?;
        }
        match self.board()? {
            Some(board) if packed.len() <= DATA => board.bcast(&self.node, &mut packed, 0),
            Some(board) => board.bcast_cells(&self.node, &mut packed, 0),
            None => self.node.bcast_bytes(&mut packed, 0)?,
        }
        // SAFETY: every part of `layout` lies in `recv` (caller).
        unsafe { unpack(&packed, (&order, &places), |r| layout[r].1, recv, layout) };
        Ok(())
    }

    /// Gather of every rank's `part` bytes at `send` into the root's `recv` at `layout[r]`
    /// (checked by the caller): each host's parts into its leader's packed block on the board,
    /// the blocks to the leader of the root's host (the leaders' gather), the packed whole to
    /// a root that does not lead its host (posts on the board, in cells), and out into place.
    ///
    /// # Safety
    /// `send` holds `part` bytes; at the root `recv` holds every part of `layout`.
    pub(crate) unsafe fn gather(
        &self,
        me: usize,
        (send, part): (*const u8, usize),
        recv: Option<(*mut u8, Layout)>,
        root: usize,
    ) -> Result<()> {
        let (order, places, blocks) = self.packing(|_| part);
        let (home, mine, total) = (self.hosts.of(root), self.hosts.of(me), order.len() * part);
        let mut packed = vec![0u8; if self.leaders.is_some() || me == root { total } else { 0 }];
        let (at, len) = blocks[mine];
        let host_block = packed.as_mut_ptr().wrapping_add(at);
        let place = |i: usize| (i * part, part);
        // SAFETY: as for `allgather`.
        unsafe { self.gather_host((send, part), self.leaders.is_some().then_some(host_block), place)? };
        if let Some(leaders) = &self.leaders {
            let into = (mine == home).then(|| (packed.as_mut_ptr(), total, &blocks[..]));
            // SAFETY: as for `allgather`.
            let between = unsafe { leaders.igatherv_raw(host_block, len, into, home)? };
            between.wait()?;
        }
        if mine == home && !self.leads(root) {
            let to = Hosts::index_in(self.hosts.members(home), root).expect("a member of its host");
            self.node_pass(&mut packed, total, (0, to))?;
        }
        if let Some((buf, layout)) = recv.filter(|_| me == root) {
            // SAFETY: every part of `layout` lies in `buf` (caller).
            unsafe { unpack(&packed, (&order, &places), |_| part, buf, layout) };
        }
        Ok(())
    }

    /// Scatter of the root's `part`-byte parts of `send` (at `layout[r]`, checked by the
    /// caller) into each rank's `recv` (`recv_len` bytes; none at a root in place): the root
    /// packs them in host order, passes the whole to its host's leader where it does not lead
    /// it, the leaders scatter the hosts' blocks, each leader posts its block once on its host
    /// and every member takes its part. Needs every host's block within one post.
    ///
    /// # Safety
    /// At the root `send` holds every part of `layout`; `recv` holds `recv_len` bytes.
    pub(crate) unsafe fn scatter(
        &self,
        me: usize,
        send: Option<(*const u8, Layout)>,
        (recv, recv_len): (*mut u8, usize),
        part: usize,
        root: usize,
    ) -> Result<()> {
        let (order, _, blocks) = self.packing(|_| part);
        let (home, mine, total) = (self.hosts.of(root), self.hosts.of(me), order.len() * part);
        let mut packed = vec![0u8; if self.leaders.is_some() || me == root { total } else { 0 }];
        if let Some((buf, layout)) = send.filter(|_| me == root) {
            for (k, &r) in order.iter().enumerate() {
                // SAFETY: the part lies in `buf` (caller); `packed` holds `part` bytes at k * part.
                unsafe { std::ptr::copy_nonoverlapping(buf.add(layout[r].0), packed.as_mut_ptr().add(k * part), part) };
            }
        }
        if mine == home && !self.leads(root) {
            let from = Hosts::index_in(self.hosts.members(home), root).expect("a member of its host");
            self.node_pass(&mut packed, total, (from, 0))?;
        }
        let (at, len) = blocks[mine];
        let host_block = packed.as_mut_ptr().wrapping_add(at);
        if let Some(leaders) = &self.leaders {
            let from = (mine == home).then(|| (packed.as_ptr(), total, &blocks[..]));
            // SAFETY: the blocks lie in `packed`, which outlives the wait.
            let between = unsafe { leaders.iscatterv_raw(from, host_block, len, home)? };
            between.wait()?;
        }
        let block = self.leaders.is_some().then_some(host_block as *const u8);
        match self.board()? {
            // SAFETY: the block holds every member's part; `recv` holds `recv_len` bytes.
            Some(board) => unsafe {
                board.scatter_at(&self.node, block.map(|b| (b, |i| i * part)), (recv, recv_len), part, 0)
            },
            None => {
                let own: Vec<(usize, usize)> = (0..self.node.size()).map(|i| (i * part, part)).collect();
                // SAFETY: as above, and both outlive the wait.
                let scattered =
                    unsafe { self.node.iscatterv_raw(block.map(|b| (b, len, &own[..])), recv, recv_len, 0)? };
                scattered.wait()?;
            }
        }
        Ok(())
    }

    /// Every rank in packing order (hosts in order, each host's members in order), where each
    /// rank's part of `length(r)` bytes lies in the packed whole (by rank), and each host's
    /// block of it.
    fn packing(&self, length: impl Fn(usize) -> usize) -> (Vec<usize>, Vec<usize>, Vec<(usize, usize)>) {
        let hosts = &self.hosts;
        let order: Vec<usize> = (0..hosts.count()).flat_map(|h| hosts.members(h).iter().copied()).collect();
        let mut places = vec![0; order.len()];
        let mut blocks: Vec<(usize, usize)> = Vec::with_capacity(hosts.count());
        let mut at = 0;
        for h in 0..hosts.count() {
            let start = at;
            for &r in hosts.members(h) {
                places[r] = at;
                at += length(r);
            }
            blocks.push((start, at - start));
        }
        (order, places, blocks)
    }

    /// This host's parts at each member's `send` into `block` at its leader (node rank 0),
    /// member i's `place(i)` (offset, length; every member knows every place): on the board
    /// (each member posts `part` bytes, at least its own length, so the leader reads every
    /// post alike; past one data area in cells of it), or by the host's messages.
    ///
    /// # Safety
    /// `send` holds `part` bytes; at the leader `block` holds every member's place.
    unsafe fn gather_host(
        &self,
        (send, part): (*const u8, usize),
        block: Option<*mut u8>,
        place: impl Fn(usize) -> (usize, usize),
    ) -> Result<()> {
        match self.board()? {
            // Past one data area in cells of it, one epoch each (every member knows `part`):
            // cell k of every member's part into its place, shifted by k cells.
            Some(board) => {
                for at in (0..part.max(1)).step_by(DATA) {
                    let cell = (part - at.min(part)).min(DATA);
                    let shifted = |i: usize| {
                        let (d, l) = place(i);
                        (d + at, l.saturating_sub(at))
                    };
                    // SAFETY: as this function's: `send` holds `cell` bytes at `at`, and the
                    // block each member's cell at its place shifted by `at`.
                    unsafe { board.gather_at(&self.node, (send.add(at), cell), block.map(|b| (b, shifted)), 0) }
                }
            }
            None => {
                let own: Vec<(usize, usize)> = (0..self.node.size()).map(place).collect();
                let len = own.iter().map(|&(d, l)| d + l).max().unwrap_or(0);
                let mine = own[self.node.rank()].1;
                // SAFETY: as this function's, and both outlive the wait.
                let gathered = unsafe { self.node.igatherv_raw(send, mine, block.map(|b| (b, len, &own[..])), 0)? };
                gathered.wait()?;
            }
        }
        Ok(())
    }
}

/// The packed whole (rank r's `length(r)` bytes at `places[r]`, ranks in packing `order`)
/// out into `recv` at `layout`.
///
/// # Safety
/// Every part of `layout` lies in `recv`.
unsafe fn unpack(
    packed: &[u8],
    (order, places): (&[usize], &[usize]),
    length: impl Fn(usize) -> usize,
    recv: *mut u8,
    layout: Layout,
) {
    for &r in order {
        let (d, l) = layout[r];
        // SAFETY: the part lies in `recv` (caller); `packed` holds `length(r)` bytes at places[r].
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr().add(places[r]), recv.add(d), l.min(length(r))) };
    }
}

//! Gather, scatter, allgather and all-to-all, with per-rank byte counts and displacements
//! (the `v` forms; the plain forms are equal counts). Linear at the root, pairwise for
//! all-to-all: correct, simple, and the reference for the billboard algorithms.
//!
//! Each is written once, as a schedule (`nonblocking.rs`): the `_raw` forms start it
//! (MPI_Igatherv, ...), the blocking forms start it and wait; on one host the blocking forms
//! run on the board where the table gives it (`board_*.rs`; the v-forms `board_parts.rs`).

use super::board::{in_blocking_call, Board, DATA, INLINE};
use super::board_parts::{parts_fit, table_bytes};
use super::hier_board::HostComms;
use super::select::{
    allgather_by, alltoall_pairwise, gather_by, host_parts_fit, AllgatherBy, Collective as Op, GatherBy,
    GATHER_HIER_MAX,
};
use crate::{Collective, Communicator, Error, Result};

/// Where each rank's part lies in a root's buffer: `(displacement, length)` in bytes.
pub type Layout<'a> = &'a [(usize, usize)];

pub(super) fn check_layout(what: &str, buf_len: usize, layout: Layout<'_>, n: usize) -> Result<()> {
    if layout.len() != n {
        return Err(Error::InvalidArgument(format!("{what}: {} parts given for {n} ranks", layout.len())));
    }
    if let Some((r, &(d, l))) = layout.iter().enumerate().find(|(_, &(d, l))| d + l > buf_len) {
        return Err(Error::InvalidArgument(format!(
            "{what}: rank {r}'s part [{d}, {}) lies beyond the {buf_len}-byte buffer",
            d + l
        )));
    }
    Ok(())
}

impl Communicator {
    /// Gathers every rank's `send` into the root's `recv`, rank r's at `layout[r]`.
    pub fn gatherv_bytes(&self, send: &[u8], recv: Option<(&mut [u8], Layout<'_>)>, root: usize) -> Result<()> {
        let recv = recv.map(|(b, l)| (b.as_mut_ptr(), b.len(), l));
        // SAFETY: the buffers are borrowed until the wait returns.
        unsafe { self.igatherv_raw(send.as_ptr(), send.len(), recv, root) }?.wait()
    }

    /// Scatters the root's `send` parts (`layout[r]` to rank r) into each rank's `recv`.
    pub fn scatterv_bytes(&self, send: Option<(&[u8], Layout<'_>)>, recv: &mut [u8], root: usize) -> Result<()> {
        let send = send.map(|(b, l)| (b.as_ptr(), b.len(), l));
        // SAFETY: as above.
        unsafe { self.iscatterv_raw(send, recv.as_mut_ptr(), recv.len(), root) }?.wait()
    }

    /// Every rank's `send` into every rank's `recv` at `layout[r]`, by the algorithm
    /// `select.rs` chooses (each rank's one post to all on one host, the hierarchy on several).
    pub fn allgatherv_bytes(&self, send: &[u8], recv: &mut [u8], layout: Layout<'_>) -> Result<()> {
        // SAFETY: as above.
        let start =
            || unsafe { self.iallgatherv_raw(send.as_ptr(), send.len(), recv.as_mut_ptr(), recv.len(), layout) };
        super::board::blocking(true, start)?.wait()
    }

    /// Rank r's `send[send_layout[s]]` goes to rank s's `recv[recv_layout[r]]`, for all r, s.
    pub fn alltoallv_bytes(
        &self,
        send: &[u8],
        send_layout: Layout<'_>,
        recv: &mut [u8],
        recv_layout: Layout<'_>,
    ) -> Result<()> {
        let send = (send.as_ptr(), send.len(), send_layout);
        let recv = (recv.as_mut_ptr(), recv.len(), recv_layout);
        // SAFETY: as above.
        unsafe { self.ialltoallv_raw(send, recv) }?.wait()
    }

    /// The board for a v-form of `what` in a blocking call, where the communicator's choice
    /// gives it the board: alike in every rank whatever the lengths (a part that does not fit
    /// a data area goes by message, `board_parts.rs`).
    fn board_for_parts(&self, what: Op) -> Result<Option<&Board>> {
        // Where ranks outnumber cores (a host fact, alike in every rank) the messages'
        // algorithms unless forced: a part sent beside the board waits for its reader's turn on
        // a core, and a scatterv reader for the root's (coll.c, 4 ranks on 2 cores, 2 rounds,
        // us, messages vs board: gatherv 4 KiB 3.2 vs 6.6, 64 KiB 18 vs 36; alltoallv 4 KiB 12
        // vs 38; scatterv 8 B 0.24 vs 0.70; the board won only the small gatherv and alltoallv,
        // 8 B 1.0 vs 0.5 and 9.5 vs 3.8).
        let forced = what.name_and_switch().1.forced().is_some();
        if !parts_fit(self.size()) || (self.crowded() && !forced) {
            return Ok(None);
        }
        Ok(self.board_for(what, 0, in_blocking_call())?.map(|(board, _)| board))
    }

    /// Starts a [`Communicator::gatherv_bytes`] (MPI_Igatherv): `recv` is the root's buffer,
    /// its length and layout. The root's own part is copied at once (so `send` may lie in
    /// `recv`, MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers stay valid, and untouched by the caller, until the operation ends.
    pub unsafe fn igatherv_raw(
        &self,
        send: *const u8,
        send_len: usize,
        recv: Option<(*mut u8, usize, Layout<'_>)>,
        root: usize,
    ) -> Result<Collective> {
        self.checked_world_rank(root)?;
        let checked = || match (recv, self.rank() == root) {
            (Some((buf, len, layout)), true) => {
                check_layout("gatherv", len, layout, self.size())?;
                Ok(Some((buf, layout)))
            }
            (None, true) => Err(Error::InvalidArgument(format!("gatherv: root {root} must pass a receive buffer"))),
            (_, false) => Ok(None),
        };
        if let Some(board) = self.board_for_parts(Op::Gather)? {
            board.gatherv(self, (send, send_len), checked()?, root)?;
            return Ok(Collective::finished(self));
        }
        if let Some(hosts) = self.parts_on_host_boards(true)? {
            hosts.gatherv(self, (send, send_len), checked()?, root)?;
            return Ok(Collective::finished(self));
        }
        self.nonblocking(None, |plan| plan.gather(send, send_len, recv, root))
    }

    /// Starts a [`Communicator::scatterv_bytes`] (MPI_Iscatterv): `send` is the root's
    /// buffer, its length and layout. The root's own part is copied at once.
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn iscatterv_raw(
        &self,
        send: Option<(*const u8, usize, Layout<'_>)>,
        recv: *mut u8,
        recv_len: usize,
        root: usize,
    ) -> Result<Collective> {
        self.checked_world_rank(root)?;
        let checked = || match (send, self.rank() == root) {
            (Some((buf, len, layout)), true) => {
                check_layout("scatterv", len, layout, self.size())?;
                Ok(Some((buf, layout)))
            }
            (None, true) => Err(Error::InvalidArgument(format!("scatterv: root {root} must pass a send buffer"))),
            (_, false) => Ok(None),
        };
        if let Some(board) = self.board_for_parts(Op::Scatter)? {
            board.scatterv(self, checked()?, (recv, recv_len), root)?;
            return Ok(Collective::finished(self));
        }
        if let Some(hosts) = self.parts_on_host_boards(false)? {
            hosts.scatterv(self, checked()?, (recv, recv_len), root, None)?;
            return Ok(Collective::finished(self));
        }
        self.nonblocking(None, |plan| plan.scatter(send, recv, recv_len, root))
    }

    /// Starts a gather in which every rank's part has the same length (MPI_Igather): as
    /// [`Communicator::igatherv_raw`], and on several hosts each host's parts go to the root in
    /// one message from its leader (`hier.rs`), which needs every part's length known to all.
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn igather_raw(
        &self,
        send: *const u8,
        part: usize,
        recv: Option<(*mut u8, usize, Layout<'_>)>,
        root: usize,
    ) -> Result<Collective> {
        self.checked_world_rank(root)?;
        if let Some((_, len, layout)) = recv {
            check_layout("gather", len, layout, self.size())?;
        }
        if let Some((board, _)) = self.board_for(Op::Gather, part, in_blocking_call())? {
            if recv.is_none() && self.rank() == root {
                return Err(Error::InvalidArgument(format!("gather: root {root} must pass a receive buffer")));
            }
            board.gather(self, (send, part), recv.map(|(b, _, l)| (b, l)), root);
            return Ok(Collective::finished(self));
        }
        if recv.is_some() || self.rank() != root {
            if let Some(started) = self.igather_on_board((send, part), recv.map(|(b, _, l)| (b, l)), root) {
                return started;
            }
        }
        let by = gather_by(self, true, part);
        // Waited for at once: the hierarchy's host phases on the board, past one data area
        // in cells of it while the host's parts fit `BB_HIER_PARTS_MAX` (bench/hosts/coll.sh,
        // 5 interleaved rounds, load 23-27, medians, us, cells vs before, flat messages
        // (BB_HIER_PARTS_MAX=0): 2 x 2 2 KiB 18.8 vs 28.7, 4 KiB 22.5 vs 33.9; 2 x 3 2 KiB
        // 27.7 vs 47.6).
        if by == GatherBy::Hier && in_blocking_call() {
            let cells = |h: &&HostComms| part <= DATA || host_parts_fit(h.widest(), part);
            if let Some(hosts) = self.hier_board(0)?.filter(cells) {
                if recv.is_none() && self.rank() == root {
                    return Err(Error::InvalidArgument(format!("gather: root {root} must pass a receive buffer")));
                }
                hosts.gather(self.rank(), (send, part), recv.map(|(b, _, l)| (b, l)), root)?;
                return Ok(Collective::finished(self));
            }
        }
        self.nonblocking(None, |plan| match by {
            GatherBy::Linear => plan.gather(send, part, recv, root),
            GatherBy::Hier => plan.hier_gather(&self.hosts(), (send, part), recv, root),
            GatherBy::Binomial => plan.gather_binomial((send, part), recv, root),
        })
    }

    /// Starts a scatter in which every rank's part has the same length (MPI_Iscatter): as
    /// [`Communicator::iscatterv_raw`], and on several hosts the root sends each host's parts
    /// to its leader in one message (`hier.rs`).
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn iscatter_raw(
        &self,
        send: Option<(*const u8, usize, Layout<'_>)>,
        recv: *mut u8,
        recv_len: usize,
        root: usize,
    ) -> Result<Collective> {
        self.checked_world_rank(root)?;
        // The root may receive nothing (in place): its parts' length is the layout's.
        let part = send.map_or(recv_len, |(_, _, layout)| layout.first().map_or(0, |p| p.1));
        if let Some((_, len, layout)) = send {
            check_layout("scatter", len, layout, self.size())?;
        }
        if let Some((board, _)) = self.board_for(Op::Scatter, part * self.size(), in_blocking_call())? {
            if send.is_none() && self.rank() == root {
                return Err(Error::InvalidArgument(format!("scatter: root {root} must pass a send buffer")));
            }
            board.scatter(self, send.map(|(b, _, l)| (b, l)), (recv, recv_len), part, root);
            return Ok(Collective::finished(self));
        }
        if send.is_some() || self.rank() != root {
            if let Some(started) = self.iscatter_on_board(send.map(|(b, _, l)| (b, l)), (recv, recv_len), part, root) {
                return started;
            }
        }
        let by = gather_by(self, false, part);
        // Waited for at once: the hierarchy's host phases on the board. Each host's parts
        // inline in one post from its leader; past `BB_GATHER_HIER_MAX` (where the table gave
        // flat messages) as a scatterv's, the root's own host's post from the root itself and
        // the other hosts' from their leaders, in cells of one data area while they fit
        // `BB_HIER_PARTS_MAX` (`hier_board_parts.rs`); between the two the schedule's host
        // phases by messages. bench/hosts/coll.sh, 5 interleaved rounds, load 23-27, medians,
        // us, cells vs before (BB_HIER_PARTS_MAX=0): 2 x 2 512 B 8.50 vs 9.19, 1 KiB 9.23 vs
        // 9.01, 2 KiB 14.3 vs 24.1, 4 KiB 23.4 vs 36.0; 2 x 3 512 B 7.35 vs 6.60, 1 KiB 11.7 vs
        // 7.08, 1.5 KiB 17.2 vs 22.6, 2 KiB 27.9 vs 52.2. The leader's post of the inline way
        // past the inline bytes made a root's scatters back to back wait for their host's
        // readers after 8 data areas where messages go on (5 rounds, load 10-13, us, board vs
        // messages: 2 x 2 ranks 8 B 1.53 vs 1.72, 512 B 2.55 vs 1.71; 2 x 3 8 B 1.58 vs 1.85,
        // 512 B 4.12 vs 1.93).
        if by == GatherBy::Hier && in_blocking_call() {
            let inline = |h: &HostComms| h.widest() * part <= INLINE;
            let cells = |h: &HostComms| part > GATHER_HIER_MAX.get() && host_parts_fit(h.widest(), part);
            if let Some(hosts) = self.hier_board(0)?.filter(|h| inline(h) || cells(h)) {
                if send.is_none() && self.rank() == root {
                    return Err(Error::InvalidArgument(format!("scatter: root {root} must pass a send buffer")));
                }
                let send = send.map(|(b, _, l)| (b, l));
                match inline(hosts) {
                    true => hosts.scatter(self.rank(), send, (recv, recv_len), part, root)?,
                    false => {
                        let room = table_bytes(hosts.widest()) + hosts.widest() * part;
                        hosts.scatterv(self, send, (recv, recv_len), root, Some(room))?
                    }
                }
                return Ok(Collective::finished(self));
            }
        }
        self.nonblocking(None, |plan| match by {
            GatherBy::Linear => plan.scatter(send, recv, recv_len, root),
            GatherBy::Hier => plan.hier_scatter(&self.hosts(), send, (recv, recv_len), part, root),
            GatherBy::Binomial => plan.scatter_binomial(send, (recv, recv_len), part, root),
        })
    }

    /// Starts a [`Communicator::allgatherv_bytes`] (MPI_Iallgatherv) into the `recv_len`
    /// bytes at `recv`.
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn iallgatherv_raw(
        &self,
        send: *const u8,
        send_len: usize,
        recv: *mut u8,
        recv_len: usize,
        layout: Layout<'_>,
    ) -> Result<Collective> {
        if self.is_inter() {
            return self.inter_iallgatherv_raw(send, send_len, recv, recv_len, layout);
        }
        check_layout("allgather", recv_len, layout, self.size())?;
        let largest = layout.iter().map(|p| p.1).max().unwrap_or(0);
        if let Some((board, _)) = self.board_for(Op::Allgather, largest, in_blocking_call())? {
            if send_len < layout[self.rank()].1 {
                return Err(Error::InvalidArgument(format!(
                    "allgather: rank {} sends {send_len} bytes into a part of {}",
                    self.rank(),
                    layout[self.rank()].1
                )));
            }
            board.allgather(self, send, recv, layout);
            return Ok(Collective::finished(self));
        }
        if send_len >= layout[self.rank()].1 {
            if let Some(started) = self.iallgather_on_board(send, recv, layout, largest) {
                return started;
            }
        }
        let by = allgather_by(self, layout.iter().map(|p| p.1).sum());
        // Waited for at once: the hierarchy's host phases on the board (every rank knows
        // every part's length, so the leaders can pack them).
        if by == AllgatherBy::Hier && in_blocking_call() {
            if let Some(hosts) = self.hier_board(largest)? {
                if send_len < layout[self.rank()].1 {
                    return Err(Error::InvalidArgument(format!(
                        "allgather: rank {} sends {send_len} bytes into a part of {}",
                        self.rank(),
                        layout[self.rank()].1
                    )));
                }
                hosts.allgather(self.rank(), send, recv, layout)?;
                return Ok(Collective::finished(self));
            }
        }
        self.nonblocking(None, |plan| match by {
            AllgatherBy::Post => plan.allgather_post((send, send_len), recv, layout),
            AllgatherBy::GatherBcast => {
                plan.gather(send, send_len, (self.rank() == 0).then_some((recv, recv_len, layout)), 0)?;
                plan.bcast(recv, recv_len, 0)
            }
            AllgatherBy::Hier => plan.hier_allgather(&self.hosts(), (send, send_len), (recv, recv_len), layout),
            network => plan.allgather_net(network, (send, send_len), recv, layout),
        })
    }

    /// Starts an all-to-all whose parts all have one length, the same in every rank
    /// (MPI_Ialltoall): as [`Communicator::ialltoallv_raw`], and where the caller waits for it
    /// at once, on the board when the table gives it that.
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn ialltoall_raw(
        &self,
        send: (*const u8, usize, Layout<'_>),
        recv: (*mut u8, usize, Layout<'_>),
    ) -> Result<Collective> {
        let (n, part) = (self.size(), recv.2.first().map_or(0, |p| p.1));
        let uniform = |l: Layout<'_>| l.len() == n && l.iter().all(|p| p.1 == part);
        if self.is_inter() || !uniform(send.2) || !uniform(recv.2) {
            return self.ialltoallv_raw(send, recv);
        }
        check_layout("alltoall (send)", send.1, send.2, n)?;
        check_layout("alltoall (recv)", recv.1, recv.2, n)?;
        if let Some((board, _)) = self.board_for(Op::Alltoall, n * part, in_blocking_call())? {
            board.alltoall(self, (send.0, send.2), (recv.0, recv.2), part);
            return Ok(Collective::finished(self));
        }
        if let Some((hosts, most)) = self.alltoall_on_host_boards(Some(part))? {
            hosts.alltoallv(self, (send.0, send.2), (recv.0, recv.2), most)?;
            return Ok(Collective::finished(self));
        }
        // Parts of one length past the board's data area keep the messages' algorithms (the
        // v-form's board would send each by message as well, without their rendezvous rule).
        self.alltoallv_by_messages(send, recv)
    }

    /// Starts a [`Communicator::alltoallv_bytes`] (MPI_Ialltoallv): each side is a buffer,
    /// its length and layout. This rank's own part is copied at once.
    ///
    /// # Safety
    /// As for [`Communicator::igatherv_raw`].
    pub unsafe fn ialltoallv_raw(
        &self,
        send: (*const u8, usize, Layout<'_>),
        recv: (*mut u8, usize, Layout<'_>),
    ) -> Result<Collective> {
        if self.is_inter() {
            return self.inter_ialltoallv_raw(send, recv);
        }
        let n = self.size();
        check_layout("alltoall (send)", send.1, send.2, n)?;
        check_layout("alltoall (recv)", recv.1, recv.2, n)?;
        if let Some(board) = self.board_for_parts(Op::Alltoall)? {
            board.alltoallv(self, (send.0, send.2), (recv.0, recv.2))?;
            return Ok(Collective::finished(self));
        }
        if let Some((hosts, most)) = self.alltoall_on_host_boards(None)? {
            hosts.alltoallv(self, (send.0, send.2), (recv.0, recv.2), most)?;
            return Ok(Collective::finished(self));
        }
        self.alltoallv_by_messages(send, recv)
    }

    /// [`Communicator::ialltoallv_raw`] by the messages' algorithms (layouts checked).
    unsafe fn alltoallv_by_messages(
        &self,
        send: (*const u8, usize, Layout<'_>),
        recv: (*mut u8, usize, Layout<'_>),
    ) -> Result<Collective> {
        let pairwise = alltoall_pairwise(self, send.2.iter().map(|p| p.1).sum());
        self.nonblocking(None, |plan| match pairwise {
            true => plan.alltoall_pairwise(send, recv),
            false => plan.alltoall(send, recv),
        })
    }
}

//! Gatherv and scatterv across hosts with their host phases on the board (blocking forms, as
//! `hier_board.rs` runs MPI_Gather and MPI_Scatter): one message between the root and each
//! other host's leader (its lowest member) carries every part of that host that fits one data
//! area (a scatterv's: while the host's parts fit `BB_HIER_PARTS_MAX` bytes), the host's
//! members post or read theirs on their board; a part past that goes by one message between
//! its rank and the root (tag [`TAG_PARTS`]), as on one host (`board_parts.rs`). Flat, the root
//! exchanged a message with every rank.
//!
//! Only the root knows every part's length. Gatherv: each member posts its part with its
//! length (`Board::post_sized`), so the leader packs whatever its members posted, in member
//! order, and the root, which knows which parts fit, unpacks the same way. Scatterv: the root
//! writes for each other host the very post its leader puts on the board (a table of where
//! each member's part starts, then the parts, `board_parts.rs`), in cells of one data area
//! past it (`Board::post_cells`: the first cell says the length); the leader posts it as it
//! came. On the root's own host the root reads (gatherv) or posts such a post (scatterv) on
//! the board itself.
//! A host whose members found no board slot runs the same exchange by its messages.

use super::board::DATA;
use super::board_parts::{entry, pack, table, table_bytes, BY_MESSAGE};
use super::gather::Layout;
use super::hier_board::HostComms;
use super::hosts::Hosts;
use super::select::{forced, report, Collective, GATHER, GATHERV_HIER_WIDEST, HIER_PARTS_MAX, SCATTER};
use super::{TAG_HOSTS, TAG_PARTS};
use crate::{wait_all, Communicator, Result, SendMode, Source, TagMatch};

/// Bytes of the length word that opens a member's post sent by message (no board slot).
const LENGTH: usize = 8;

/// Whether a part of `len` bytes goes through its host's leader (else by its own message).
fn fits(len: usize) -> bool {
    len <= DATA
}

impl HostComms {
    /// Gatherv of every rank's `send` into the root's `recv` at `layout[r]` (checked by the
    /// caller): see the module's comment.
    ///
    /// # Safety
    /// `send` holds its length; at the root `recv` holds every part of `layout`.
    pub(crate) unsafe fn gatherv(
        &self,
        comm: &Communicator,
        (send, len): (*const u8, usize),
        recv: Option<(*mut u8, Layout<'_>)>,
        root: usize,
    ) -> Result<()> {
        let me = comm.rank();
        let ctx = comm.coll_context();
        let (home, mine) = (self.hosts.of(root), self.hosts.of(me));
        let members = self.hosts.members(mine);
        let at = Hosts::index_in(members, me).expect("a member of its host");
        let host_root = if mine == home { Hosts::index_in(members, root).expect("the root's host") } else { 0 };
        if me == root {
            let (buf, layout) = recv.expect("the root passes its receive buffer (checked by the caller)");
            let mut messages = Vec::new();
            for r in (0..comm.size()).filter(|&r| r != me && !fits(layout[r].1)) {
                let (d, l) = layout[r];
                messages.push(comm.irecv_on(ctx, buf.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_PARTS), 0)?);
            }
            // One packed block from each other host's leader: its members' parts that fit.
            let others: Vec<usize> = (0..self.hosts.count()).filter(|&h| h != home).collect();
            let mut blocks: Vec<Vec<u8>> = others
                .iter()
                .map(|&h| vec![0u8; self.hosts.members(h).iter().map(|&r| layout[r].1).filter(|&l| fits(l)).sum()])
                .collect();
            for (block, &h) in blocks.iter_mut().zip(&others) {
                let leader = self.hosts.members(h)[0];
                let (p, l) = (block.as_mut_ptr(), block.len());
                messages.push(comm.irecv_on(ctx, p, l, Source::Rank(leader), TagMatch::Tag(TAG_HOSTS), 0)?);
            }
            crate::copy::copy_own(send, buf.add(layout[me].0), len.min(layout[me].1));
            self.collect_host(host_root, |j, part| {
                let (d, l) = layout[members[j]];
                // SAFETY: the part lies in `recv` (caller).
                unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), buf.add(d), l.min(part.len())) };
            })?;
            wait_all(messages)?;
            for (block, &h) in blocks.iter().zip(&others) {
                let mut from = 0;
                for &r in self.hosts.members(h).iter().filter(|&&r| fits(layout[r].1)) {
                    let (d, l) = layout[r];
                    std::ptr::copy_nonoverlapping(block.as_ptr().add(from), buf.add(d), l);
                    from += l;
                }
            }
            return Ok(());
        }
        if !fits(len) {
            comm.send_on(ctx, std::slice::from_raw_parts(send, len), root, TAG_PARTS, SendMode::Standard)?;
        }
        if at != host_root {
            return self.offer_host(host_root, fits(len).then_some((send, len)));
        }
        // The leader of a host without the root: its members' parts packed, its own first,
        // to the root.
        let mut block = Vec::new();
        if fits(len) {
            block.extend_from_slice(std::slice::from_raw_parts(send, len));
        }
        self.collect_host(host_root, |_, part| block.extend_from_slice(part))?;
        comm.send_on(ctx, &block, root, TAG_HOSTS, SendMode::Standard)
    }

    /// At the host's member `host_root`: every other member's posted part, in member order,
    /// to `take` (member index, bytes); they post theirs ([`HostComms::offer_host`]).
    fn collect_host(&self, host_root: usize, mut take: impl FnMut(usize, &[u8])) -> Result<()> {
        let m = self.node.size();
        match self.board()? {
            Some(board) => {
                let e = board.epoch();
                for j in (0..m).filter(|&j| j != host_root) {
                    board.wait_for(&self.node, j, e);
                    if let Some(part) = board.read_sized(j, e) {
                        take(j, part);
                    }
                }
                board.finish(e);
            }
            None => {
                let ctx = self.node.coll_context();
                let mut post = vec![0u8; LENGTH + DATA];
                for j in (0..m).filter(|&j| j != host_root) {
                    self.node.recv_on(ctx, &mut post, Source::Rank(j), TagMatch::Tag(TAG_PARTS))?;
                    let size = u64::from_ne_bytes(post[..LENGTH].try_into().expect("eight bytes"));
                    if size != u64::MAX {
                        take(j, &post[LENGTH..LENGTH + (size as usize).min(DATA)]);
                    }
                }
            }
        }
        Ok(())
    }

    /// A member's part (where it fits) to its host's member `host_root`
    /// ([`HostComms::collect_host`]).
    ///
    /// # Safety
    /// The part is readable.
    unsafe fn offer_host(&self, host_root: usize, part: Option<(*const u8, usize)>) -> Result<()> {
        match self.board()? {
            Some(board) => {
                let e = board.epoch();
                board.post_sized(&self.node, e, part);
                board.finish(e);
            }
            None => {
                let size = part.map_or(u64::MAX, |(_, l)| l as u64);
                let mut post = size.to_ne_bytes().to_vec();
                if let Some((p, l)) = part {
                    post.extend_from_slice(std::slice::from_raw_parts(p, l));
                }
                let ctx = self.node.coll_context();
                self.node.send_on(ctx, &post, host_root, TAG_PARTS, SendMode::Standard)?;
            }
        }
        Ok(())
    }

    /// Scatterv of the root's parts (`layout[r]` of `send`, checked by the caller) into each
    /// rank's `recv` of `recv_len` bytes (a root in place passes 0): see the module's comment.
    /// Each host's post (its table, then its members' parts while they fit `room` bytes:
    /// `BB_HIER_PARTS_MAX`, or where every rank knows every part's length, as a scatter's, what
    /// the widest host's post takes) goes on its board in cells of one data area, posted by the
    /// root on its own host and by the leader elsewhere; a part past it goes by its own message.
    ///
    /// # Safety
    /// At the root `send` holds every part of `layout`; `recv` holds `recv_len` bytes.
    pub(crate) unsafe fn scatterv(
        &self,
        comm: &Communicator,
        send: Option<(*const u8, Layout<'_>)>,
        (recv, recv_len): (*mut u8, usize),
        root: usize,
        room: Option<usize>,
    ) -> Result<()> {
        let me = comm.rank();
        let ctx = comm.coll_context();
        let (home, mine) = (self.hosts.of(root), self.hosts.of(me));
        let members = self.hosts.members(mine);
        // A leader takes the root's post into `room` bytes whatever its length.
        let room = room.unwrap_or(HIER_PARTS_MAX.get()).max(DATA);
        // The member that posts this host's parts: the root on its own host, else the leader.
        let poster = match mine == home {
            true => Hosts::index_in(members, root).expect("the root's host"),
            false => 0,
        };
        if me == root {
            let (buf, layout) = send.expect("the root passes its send buffer (checked by the caller)");
            let (mut messages, mut posts, mut own) = (Vec::new(), Vec::new(), Vec::new());
            for h in 0..self.hosts.count() {
                let theirs = self.hosts.members(h);
                // The post its poster puts on its board: all of it but the root's own part.
                let skip = if h == home { poster } else { usize::MAX };
                let table = table(theirs.len(), skip, room, |j| layout[theirs[j]].1);
                let placed = table.iter().enumerate().filter(|(_, &t)| t != BY_MESSAGE);
                let end = placed.map(|(j, &t)| t as usize + layout[theirs[j]].1).max();
                let mut post = vec![0u8; end.unwrap_or(0).max(table_bytes(theirs.len()))];
                pack(post.as_mut_ptr(), &table, |j| (buf.add(layout[theirs[j]].0), layout[theirs[j]].1));
                for (j, _) in table.iter().enumerate().filter(|&(j, &t)| t == BY_MESSAGE && j != skip) {
                    let (d, l) = layout[theirs[j]];
                    messages.push(comm.isend_on(ctx, buf.add(d), l, theirs[j], TAG_PARTS, SendMode::Standard, 0)?);
                }
                if h == home {
                    own = post;
                    continue;
                }
                let (p, l) = (post.as_ptr(), post.len());
                messages.push(comm.isend_on(ctx, p, l, theirs[0], TAG_HOSTS, SendMode::Standard, 0)?);
                // Its bytes stay where the send reads them until the wait below.
                posts.push(post);
            }
            crate::copy::copy_own(buf.add(layout[me].0), recv, layout[me].1.min(recv_len));
            self.share_post(Some(&own), poster, room, (recv, 0))?;
            wait_all(messages)?;
            drop(posts);
            return Ok(());
        }
        // The leader of a host without the root takes the root's post for it.
        let post = match members[poster] == me {
            true => {
                let mut post = vec![0u8; room];
                let got = comm.recv_on(ctx, &mut post, Source::Rank(root), TagMatch::Tag(TAG_HOSTS))?;
                post.truncate(got.bytes());
                Some(post)
            }
            false => None,
        };
        if !self.share_post(post.as_deref(), poster, room, (recv, recv_len))? {
            let into = std::slice::from_raw_parts_mut(recv, recv_len);
            comm.recv_on(ctx, into, Source::Rank(root), TagMatch::Tag(TAG_PARTS))?;
        }
        Ok(())
    }

    /// The post of this host's parts (at most `room` bytes) from member `poster`, which passes
    /// it, to every member, each taking its part into `recv` (`recv_len` bytes): on the board
    /// in cells of one data area, or by the host's messages. Whether this rank's part was in
    /// the post.
    ///
    /// # Safety
    /// `recv` holds `recv_len` bytes.
    unsafe fn share_post(
        &self,
        post: Option<&[u8]>,
        poster: usize,
        room: usize,
        (recv, recv_len): (*mut u8, usize),
    ) -> Result<bool> {
        let at = self.node.rank();
        // Where this rank's part starts in the post, from its table (in the first cell).
        let part = |post: &[u8]| match post.len() >= table_bytes(at + 1) {
            true => entry(post, at),
            false => None,
        };
        // A table entry past the post's bytes reads as none.
        let take = |post: &[u8]| match part(post).filter(|&from| from <= post.len()) {
            Some(from) => {
                let l = recv_len.min(post.len() - from);
                // SAFETY: `recv` holds `recv_len` bytes (caller); the post holds `l` at `from`.
                unsafe { std::ptr::copy_nonoverlapping(post[from..].as_ptr(), recv, l) };
                true
            }
            None => false,
        };
        match (self.board()?, post) {
            (Some(board), Some(post)) => {
                board.post_cells(&self.node, post);
                Ok(take(post))
            }
            // SAFETY: `recv` holds the `recv_len` bytes picked.
            (Some(board), None) => {
                Ok(unsafe { board.read_cells(&self.node, poster, room, recv, |first| Some((part(first)?, recv_len))) })
            }
            (None, post) => {
                let mut len = (post.map_or(0, <[u8]>::len) as u64).to_ne_bytes();
                self.node.bcast_bytes(&mut len, poster)?;
                let mut whole = match post {
                    Some(post) => post.to_vec(),
                    None => vec![0u8; u64::from_ne_bytes(len).min(room as u64) as usize],
                };
                self.node.bcast_bytes(&mut whole, poster)?;
                Ok(take(&whole))
            }
        }
    }
}

impl Communicator {
    /// Whether a blocking gatherv or scatterv runs by the hierarchy with its host phases on
    /// the board: several hosts, the board on, `BB_COLL_GATHER` (or `_SCATTER`, `gathers`
    /// false) not forcing a flat algorithm, and for a gatherv unforced a host of at least
    /// `BB_GATHERV_HIER_WIDEST` members. Alike in every member whatever the lengths.
    pub(super) fn parts_on_host_boards(&self, gathers: bool) -> Result<Option<&HostComms>> {
        let switch = if gathers { &GATHER } else { &SCATTER };
        let flat = forced(switch).is_some_and(|i| switch.algorithms[i] != "hier");
        if flat || !super::board::in_blocking_call() || self.is_inter() || self.on_one_host() {
            return Ok(None);
        }
        let hosts = self.hier_board(0)?;
        // A gatherv's leader forwards its host's parts once it has them all: on hosts of 2 the
        // extra hop costs more than the message it saves (`BB_GATHERV_HIER_WIDEST`).
        let forced_hier = forced(switch).is_some();
        let widest = GATHERV_HIER_WIDEST.get();
        let hosts = hosts.filter(|h| !gathers || forced_hier || h.widest() >= widest);
        if hosts.is_some() {
            let what = if gathers { Collective::Gather } else { Collective::Scatter };
            report(self, what, "hier", "", 0);
        }
        Ok(hosts)
    }
}

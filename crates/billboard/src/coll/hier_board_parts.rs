//! Gatherv and scatterv across hosts with their host phases on the board (blocking forms, as
//! `hier_board.rs` runs MPI_Gather and MPI_Scatter): one message between the root and each
//! other host's leader (its lowest member) carries every part of that host that fits one data
//! area, the host's members post or read theirs on their board; a part past one data area
//! goes by one message between its rank and the root (tag [`TAG_PARTS`]), as on one host
//! (`board_parts.rs`). Flat, the root exchanged a message with every rank.
//!
//! Only the root knows every part's length. Gatherv: each member posts its part with its
//! length (`Board::post_sized`), so the leader packs whatever its members posted, in member
//! order, and the root, which knows which parts fit, unpacks the same way. Scatterv: the root
//! writes for each other host the very post its leader puts on the board (a table of where
//! each member's part starts, then the parts, `board_parts.rs`); the leader posts it as it
//! came. On the root's own host the root reads or posts on the board itself, as on one host.
//! A host whose members found no board slot runs the same exchange by its messages.

use super::board::DATA;
use super::board_parts::{entry, pack, table, table_bytes, BY_MESSAGE};
use super::gather::Layout;
use super::hier_board::HostComms;
use super::hosts::Hosts;
use super::select::{forced, report, Collective, GATHER, GATHERV_HIER_WIDEST, SCATTER};
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
            std::ptr::copy(send, buf.add(layout[me].0), len.min(layout[me].1));
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
    ///
    /// # Safety
    /// At the root `send` holds every part of `layout`; `recv` holds `recv_len` bytes.
    pub(crate) unsafe fn scatterv(
        &self,
        comm: &Communicator,
        send: Option<(*const u8, Layout<'_>)>,
        (recv, recv_len): (*mut u8, usize),
        root: usize,
    ) -> Result<()> {
        let me = comm.rank();
        let ctx = comm.coll_context();
        let (home, mine) = (self.hosts.of(root), self.hosts.of(me));
        let members = self.hosts.members(mine);
        if me == root {
            let (buf, layout) = send.expect("the root passes its send buffer (checked by the caller)");
            let mut posts = Vec::new();
            let mut messages = Vec::new();
            for h in (0..self.hosts.count()).filter(|&h| h != home) {
                let theirs = self.hosts.members(h);
                // The post its leader puts on its board, none skipped.
                let table = table(theirs.len(), usize::MAX, |j| layout[theirs[j]].1);
                let placed = table.iter().enumerate().filter(|(_, &t)| t != BY_MESSAGE);
                let end = placed.map(|(j, &t)| t as usize + layout[theirs[j]].1).max();
                let mut post = vec![0u8; end.unwrap_or(0).max(table_bytes(theirs.len()))];
                pack(post.as_mut_ptr(), &table, |j| (buf.add(layout[theirs[j]].0), layout[theirs[j]].1));
                for (j, _) in table.iter().enumerate().filter(|(_, &t)| t == BY_MESSAGE) {
                    let (d, l) = layout[theirs[j]];
                    messages.push(comm.isend_on(ctx, buf.add(d), l, theirs[j], TAG_PARTS, SendMode::Standard, 0)?);
                }
                posts.push((theirs[0], post));
            }
            for (leader, post) in &posts {
                messages.push(comm.isend_on(
                    ctx,
                    post.as_ptr(),
                    post.len(),
                    *leader,
                    TAG_HOSTS,
                    SendMode::Standard,
                    0,
                )?);
            }
            let own: Vec<(usize, usize)> = members.iter().map(|&r| layout[r]).collect();
            let from = Hosts::index_in(members, root).expect("the root's host");
            match self.board()? {
                Some(board) => board.scatterv(&self.node, Some((buf, &own)), (recv, recv_len), from)?,
                None => {
                    let ctx = self.node.coll_context();
                    std::ptr::copy(buf.add(layout[me].0), recv, layout[me].1.min(recv_len));
                    for (j, &(d, l)) in own.iter().enumerate().filter(|&(j, _)| j != from) {
                        let part = std::slice::from_raw_parts(buf.add(d), l);
                        self.node.send_on(ctx, part, j, TAG_PARTS, SendMode::Standard)?;
                    }
                }
            }
            return wait_all(messages).map(drop);
        }
        if mine == home {
            let from = Hosts::index_in(members, root).expect("the root's host");
            return match self.board()? {
                Some(board) => board.scatterv(&self.node, None, (recv, recv_len), from),
                None => {
                    let into = std::slice::from_raw_parts_mut(recv, recv_len);
                    self.node.recv_on(self.node.coll_context(), into, Source::Rank(from), TagMatch::Tag(TAG_PARTS))?;
                    Ok(())
                }
            };
        }
        // A host without the root: its leader takes the root's post for it and posts it.
        let at = Hosts::index_in(members, me).expect("a member of its host");
        let mut post = match at {
            0 => {
                let mut post = vec![0u8; DATA];
                let got = comm.recv_on(ctx, &mut post, Source::Rank(root), TagMatch::Tag(TAG_HOSTS))?;
                post.truncate(got.bytes());
                post
            }
            _ => Vec::new(),
        };
        let take = |post: &[u8]| -> bool {
            match entry(post, at) {
                Some(from) => {
                    // SAFETY: `recv` holds `recv_len` bytes (caller); the post holds DATA.
                    unsafe { std::ptr::copy_nonoverlapping(post[from..].as_ptr(), recv, recv_len.min(DATA - from)) };
                    true
                }
                None => false,
            }
        };
        let taken = match self.board()? {
            Some(board) => {
                let e = board.epoch();
                if at == 0 {
                    let len = post.len();
                    board.post(&self.node, e, DATA, |to| std::ptr::copy_nonoverlapping(post.as_ptr(), to, len));
                    post.resize(DATA, 0);
                } else {
                    board.wait_for(&self.node, 0, e);
                }
                let taken = take(if at == 0 { &post } else { board.read(0, e, DATA) });
                board.finish(e);
                taken
            }
            None => {
                post.resize(DATA, 0);
                self.node.bcast_bytes(&mut post, 0)?;
                take(&post)
            }
        };
        if !taken {
            let into = std::slice::from_raw_parts_mut(recv, recv_len);
            comm.recv_on(ctx, into, Source::Rank(root), TagMatch::Tag(TAG_PARTS))?;
        }
        Ok(())
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

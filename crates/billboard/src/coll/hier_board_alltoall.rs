//! All-to-all(v) across hosts with its host phases on the board (blocking forms, as
//! `hier_board.rs` runs the others): one message between the leaders (each host's lowest
//! member) of each pair of hosts carries every part one host's members send the other's; a
//! host's members exchange no message. Flat, every rank sent a message to every other.
//!
//! 1. Each member posts, in cells of one data area (one epoch each, all members at once), its
//!    *post*: two tables of a u32 per rank (the bytes it sends each rank through the board or
//!    its leader, and those it receives so), then those parts in rank order. Every member reads
//!    every other's first cell (the tables: from them all know every length of the host), then
//!    the cells holding its own part from each member; the leader also copies every part for
//!    another host into the message for that host (for each of that host's members in order,
//!    each of this host's members' parts in order).
//! 2. The leaders exchange those messages (the receiving leader knows their lengths from its
//!    members' receive tables: MPI's counts match pairwise).
//! 3. The leader posts what came, in cells, without its own parts (the messages in host order,
//!    each past its first rows, which are the leader's); every member knows where its parts lie
//!    from the tables and copies them into place.
//!
//! A part longer than the host's share allows (`part_max`: `BB_HIER_ALLTOALL_MAX` over the
//! largest host's members times the ranks outside it) goes by its own message between its two
//! ranks (tag [`TAG_PARTS`]), both deciding by its length; an all-to-all whose parts (all of
//! one length) are such goes by the messages' algorithms whole (`gather.rs`). Two hosts with
//! nothing for each other through their leaders exchange no message (an all-to-allv whose
//! parts are all past the share then sends between hosts what a flat one sends). A host whose
//! members found no board slot shares the posts and the leader's post by its messages.

use super::board::{Board, DATA};
use super::gather::Layout;
use super::hier_board::HostComms;
use super::select::{forced, report, Collective, ALLTOALL, HIER_ALLTOALL_MAX};
use super::{TAG_HOSTS, TAG_PARTS};
use crate::{wait_all, Communicator, Error, Request, Result, SendMode, Source, TagMatch};

/// Bytes of a post's two tables for `n` ranks.
fn tables_bytes(n: usize) -> usize {
    8 * n
}

/// A run of a post's bytes: where it lies in the post, its length, and where it is copied
/// from (a poster's) or to (a reader's).
struct Piece<P> {
    at: usize,
    len: usize,
    ptr: P,
}

/// Copies the bytes of `pieces` that lie in `bytes` (the post's bytes from `from` on) out.
///
/// # Safety
/// Each piece's `ptr` holds its `len` bytes.
unsafe fn take(bytes: &[u8], from: usize, pieces: &[Piece<*mut u8>]) {
    for p in pieces {
        let (a, b) = (p.at.max(from), (p.at + p.len).min(from + bytes.len()));
        if a < b {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(a - from), p.ptr.add(a - p.at), b - a);
        }
    }
}

/// Writes the bytes of `pieces` that lie in the post's `len` bytes from `from` on at `to`.
///
/// # Safety
/// `to` holds `len` bytes; each piece's `ptr` its `len` bytes.
unsafe fn fill(to: *mut u8, (from, len): (usize, usize), pieces: &[Piece<*const u8>]) {
    for p in pieces {
        let (a, b) = (p.at.max(from), (p.at + p.len).min(from + len));
        if a < b {
            std::ptr::copy_nonoverlapping(p.ptr.add(a - p.at), to.add(a - from), b - a);
        }
    }
}

/// Whether some piece lies in the cell of the post's bytes from `from` on.
fn wanted<P>(pieces: &[Piece<P>], from: usize) -> bool {
    pieces.iter().any(|p| p.len > 0 && p.at < from + DATA && p.at + p.len > from)
}

/// The host's members' tables, as read from their posts: what member j sends rank s through
/// the board and the leaders (`sent[j][s]`) and what it receives from rank r so.
struct Tables {
    n: usize,
    sent: Vec<Vec<usize>>,
    received: Vec<Vec<usize>>,
}

impl Tables {
    fn read(&mut self, j: usize, tables: &[u8]) {
        let word = |k: usize| u32::from_ne_bytes(tables[4 * k..4 * k + 4].try_into().expect("four bytes")) as usize;
        self.sent[j] = (0..self.n).map(word).collect();
        self.received[j] = (0..self.n).map(|r| word(self.n + r)).collect();
    }

    /// Where member j's part for rank s starts in its post.
    fn at(&self, j: usize, s: usize) -> usize {
        tables_bytes(self.n) + self.sent[j][..s].iter().sum::<usize>()
    }

    /// The length of member j's post.
    fn post_len(&self, j: usize) -> usize {
        tables_bytes(self.n) + self.sent[j].iter().sum::<usize>()
    }
}

/// The parts past the share, each by its own message (started first), and the first error of
/// them or of the leaders' messages: the call ends its board phases whatever they met, then
/// reports it.
struct Parts<'a> {
    messages: Vec<Request<'a>>,
    failed: Option<Error>,
}

impl Parts<'_> {
    /// Waits for the parts' messages (the engine's wait: progress at every look, sleeping
    /// until an arrival), keeping the first error.
    fn settle(&mut self) {
        if !self.messages.is_empty() {
            let outcome = wait_all(std::mem::take(&mut self.messages));
            self.keep(outcome.map(drop));
        }
    }

    fn keep(&mut self, outcome: Result<()>) {
        if let Err(e) = outcome {
            self.failed.get_or_insert(e);
        }
    }

    /// Waits on `board` for member `j`'s post of epoch `e`; where it has not come, after the
    /// parts' messages. A board wait drives the engine only every few yields and naps while a
    /// peer may need this rank to move those messages (2 x 2 ranks on 2 cores, all-to-allv of
    /// 8 KiB parts, all past the share: 1.9x the flat path when the tables' wait came first).
    fn wait_for(&mut self, board: &Board, node: &Communicator, j: usize, e: u64) {
        if !board.posted(j, e) {
            self.settle();
        }
        board.wait_for(node, j, e);
    }

    fn end(mut self) -> Result<()> {
        self.settle();
        self.failed.map_or(Ok(()), Err)
    }
}

impl HostComms {
    /// Rank r's `send[out[s]]` into rank s's `recv[into[r]]`, for all r, s (layouts checked by
    /// the caller), parts up to `most` bytes through the hosts' leaders: see the module's
    /// comment.
    ///
    /// # Safety
    /// The buffers hold every part of their layouts and do not overlap.
    pub(crate) unsafe fn alltoallv(
        &self,
        comm: &Communicator,
        (send, out): (*const u8, Layout<'_>),
        (recv, into): (*mut u8, Layout<'_>),
        most: usize,
    ) -> Result<()> {
        let (me, n, ctx) = (comm.rank(), comm.size(), comm.coll_context());
        let hosts = &self.hosts;
        let mine = hosts.of(me);
        let members = hosts.members(mine);
        let (m, at) = (members.len(), self.node.rank());
        let others: Vec<usize> = (0..hosts.count()).filter(|&h| h != mine).collect();
        let through = |l: usize, r: usize| if r == me || l > most { 0 } else { l };
        let mut own = Vec::with_capacity(tables_bytes(n));
        for (r, &(_, l)) in out.iter().chain(into).enumerate() {
            own.extend_from_slice(&(through(l, r % n) as u32).to_ne_bytes());
        }
        let mut tables = Tables { n, sent: vec![Vec::new(); m], received: vec![Vec::new(); m] };
        tables.read(at, &own);
        let mut post = vec![Piece { at: 0, len: own.len(), ptr: own.as_ptr() }];
        for s in (0..n).filter(|&s| tables.sent[at][s] > 0) {
            post.push(Piece { at: tables.at(at, s), len: tables.sent[at][s], ptr: send.add(out[s].0) });
        }

        // The post's first cell (the tables) goes first, the parts' messages right after it:
        // a member that has one of them from this rank finds the tables posted.
        let board = match m {
            1 => None,
            _ => self.board()?,
        };
        let first = board.map(|board| {
            let e = board.epoch();
            board.post(&self.node, e, DATA, |to| fill(to, (0, DATA), &post));
            e
        });
        // Parts past `most` go by their own messages, both ranks deciding by the length; sent
        // to staggered partners, as the flat all-to-all's (`nonblocking.rs`), not to rank 0
        // first from every rank.
        let mut parts = Parts { messages: Vec::new(), failed: None };
        for r in (0..n).filter(|&r| r != me && into[r].1 > most) {
            let (d, l) = into[r];
            parts.messages.push(comm.irecv_on(ctx, recv.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_PARTS), 0)?);
        }
        for s in (1..n).map(|k| (me + k) % n).filter(|&s| out[s].1 > most) {
            let (d, l) = out[s];
            parts.messages.push(comm.isend_on(ctx, send.add(d), l, s, TAG_PARTS, SendMode::Standard, 0)?);
        }
        crate::copy::copy_own(send.add(out[me].0), recv.add(into[me].0), out[me].1.min(into[me].1));

        // 1. The posts; at the leader, the messages for the other hosts, which need every
        // member's tables first.
        let leads = at == 0;
        let mut to_hosts: Vec<Vec<u8>> = Vec::new();
        let mut from_hosts: Vec<Vec<u8>> = Vec::new();
        let mut between: Vec<Request<'_>> = Vec::new();
        // A member that sends this rank more than its count says (counts that disagree:
        // erroneous): the call fails with the truncation a message would meet, once its board
        // phases are over.
        let mut disagree = None;
        let mut plan = |tables: &Tables| -> Result<Vec<Vec<Piece<*mut u8>>>> {
            // From member j: its part for this rank, and at the leader every part for another
            // host, at its place in that host's message.
            let mut reads: Vec<Vec<Piece<*mut u8>>> = (0..m).map(|_| Vec::new()).collect();
            for j in (0..m).filter(|&j| j != at) {
                let (d, l) = into[members[j]];
                let (sent, source) = (tables.sent[j][me], members[j]);
                if sent > l && disagree.is_none() {
                    disagree = Some(Error::Truncated { source, tag: TAG_PARTS, message_bytes: sent, buffer_bytes: l });
                }
                let len = sent.min(l);
                reads[j].push(Piece { at: tables.at(j, me), len, ptr: recv.add(d) });
            }
            if !leads {
                return Ok(reads);
            }
            for &h in &others {
                let theirs = hosts.members(h);
                let len = theirs.iter().map(|&s| (0..m).map(|j| tables.sent[j][s]).sum::<usize>()).sum();
                to_hosts.push(vec![0u8; len]);
                let to = to_hosts.last_mut().expect("pushed").as_mut_ptr();
                let mut pos = 0;
                for &s in theirs {
                    for (j, read) in reads.iter_mut().enumerate() {
                        let len = tables.sent[j][s];
                        match j == at {
                            true => std::ptr::copy_nonoverlapping(send.add(out[s].0), to.add(pos), len),
                            false => read.push(Piece { at: tables.at(j, s), len, ptr: to.add(pos) }),
                        }
                        pos += len;
                    }
                }
                let len = (0..m).map(|j| theirs.iter().map(|&r| tables.received[j][r]).sum::<usize>()).sum();
                from_hosts.push(vec![0u8; len]);
            }
            for (k, &h) in others.iter().enumerate() {
                if to_hosts[k].is_empty() && from_hosts[k].is_empty() {
                    continue;
                }
                let (p, l) = (from_hosts[k].as_mut_ptr(), from_hosts[k].len());
                let leader = hosts.members(h)[0];
                between.push(comm.irecv_on(ctx, p, l, Source::Rank(leader), TagMatch::Tag(TAG_HOSTS), 0)?);
            }
            Ok(reads)
        };
        match (m, board.zip(first)) {
            (1, _) => drop(plan(&tables)?),
            (_, Some((board, e))) => {
                for j in (0..m).filter(|&j| j != at) {
                    parts.wait_for(board, &self.node, j, e);
                    tables.read(j, &board.read(j, e, DATA)[..tables_bytes(n)]);
                }
                let reads = plan(&tables)?;
                let cells = (0..m).map(|j| tables.post_len(j).div_ceil(DATA)).max().unwrap_or(1);
                for c in 0..cells {
                    let e = if c == 0 { e } else { board.epoch() };
                    if c > 0 && tables.post_len(at) > c * DATA {
                        board.post(&self.node, e, DATA, |to| fill(to, (c * DATA, DATA), &post));
                    }
                    for j in (0..m).filter(|&j| j != at && wanted(&reads[j], c * DATA)) {
                        parts.wait_for(board, &self.node, j, e);
                        take(board.read(j, e, DATA), c * DATA, &reads[j]);
                    }
                    board.finish(e);
                }
            }
            (_, None) => {
                // Every member's post to every member by the host's messages: the lengths,
                // then the posts.
                let whole = tables.post_len(at);
                let mut mine = vec![0u8; whole];
                fill(mine.as_mut_ptr(), (0, whole), &post);
                let mut lens = vec![0u8; 8 * m];
                let eights: Vec<(usize, usize)> = (0..m).map(|j| (8 * j, 8)).collect();
                self.node.allgatherv_bytes(&(whole as u64).to_ne_bytes(), &mut lens, &eights)?;
                let mut layout = Vec::with_capacity(m);
                for j in 0..m {
                    let at = layout.last().map_or(0, |&(d, l)| d + l);
                    layout.push((at, u64::from_ne_bytes(lens[8 * j..8 * j + 8].try_into().expect("eight")) as usize));
                }
                let mut posts = vec![0u8; layout.last().map_or(0, |&(d, l)| d + l)];
                self.node.allgatherv_bytes(&mine, &mut posts, &layout)?;
                for (j, &(d, _)) in layout.iter().enumerate().filter(|&(j, _)| j != at) {
                    tables.read(j, &posts[d..d + tables_bytes(n)]);
                }
                let reads = plan(&tables)?;
                for (j, &(d, l)) in layout.iter().enumerate().filter(|&(j, _)| j != at) {
                    take(&posts[d..d + l], 0, &reads[j]);
                }
            }
        }

        if let Some(e) = disagree {
            parts.keep(Err(e));
        }
        // 2. Between the leaders (the receives were started in `plan`, before any send). Two
        // hosts with nothing for each other through their leaders (every part between them
        // past `most`, or empty) exchange no message: both leaders know it from their members'
        // tables (what one host's members send the other's, the other's receive).
        for (k, &h) in
            others.iter().enumerate().filter(|&(k, _)| leads && !(to_hosts[k].is_empty() && from_hosts[k].is_empty()))
        {
            let (p, l) = (to_hosts[k].as_ptr(), to_hosts[k].len());
            between.push(comm.isend_on(ctx, p, l, hosts.members(h)[0], TAG_HOSTS, SendMode::Standard, 0)?);
        }
        if !between.is_empty() {
            parts.settle();
            match wait_all(between) {
                // Revoked: the members learn of it in their board waits, as from the leader's.
                Err(e @ Error::Revoked { .. }) => return Err(e),
                // Any other failure (a leader's message longer than the counts of its host's
                // members say: counts that disagree between ranks) still ends the host's phase
                // below, then fails the call here: returning now left the members waiting on
                // the board for the leader's post for ever.
                outcome => parts.keep(outcome.map(drop)),
            }
        }

        // 3. What came to this host, but the leader's own parts, posted by the leader: the
        // messages in host order, each past its first rows (the leader's).
        let row = |j: usize, h: usize| hosts.members(h).iter().map(|&r| tables.received[j][r]).sum::<usize>();
        let mut lead = Vec::new();
        let mut mine = Vec::new();
        let mut base = 0;
        for (k, &h) in others.iter().enumerate() {
            let theirs = hosts.members(h);
            let skip = row(0, h);
            let len: usize = (1..m).map(|j| row(j, h)).sum();
            if leads {
                lead.push(Piece { at: base, len, ptr: from_hosts[k].as_ptr().add(skip) });
                let mut pos = 0;
                for &r in theirs {
                    let (d, l) = into[r];
                    let got = tables.received[0][r];
                    std::ptr::copy_nonoverlapping(from_hosts[k].as_ptr().add(pos), recv.add(d), got.min(l));
                    pos += got;
                }
            } else {
                let mut pos = base + (1..at).map(|j| row(j, h)).sum::<usize>();
                for &r in theirs {
                    let got = tables.received[at][r];
                    mine.push(Piece { at: pos, len: got.min(into[r].1), ptr: recv.add(into[r].0) });
                    pos += got;
                }
            }
            base += len;
        }
        if base > 0 && m > 1 {
            match self.board()? {
                Some(board) => {
                    for c in 0..base.div_ceil(DATA) {
                        let e = board.epoch();
                        if leads {
                            board.post(&self.node, e, DATA, |to| fill(to, (c * DATA, DATA), &lead));
                        } else if wanted(&mine, c * DATA) {
                            parts.wait_for(board, &self.node, 0, e);
                            take(board.read(0, e, DATA), c * DATA, &mine);
                        }
                        board.finish(e);
                    }
                }
                None => {
                    let mut whole = vec![0u8; base];
                    if leads {
                        fill(whole.as_mut_ptr(), (0, base), &lead);
                    }
                    self.node.bcast_bytes(&mut whole, 0)?;
                    if !leads {
                        take(&whole, 0, &mine);
                    }
                }
            }
        }
        let outcome = parts.end();
        drop((own, to_hosts, from_hosts));
        outcome
    }
}

impl Communicator {
    /// Whether a blocking all-to-all (`part`: every part's length, where all are alike) runs
    /// through the hosts' leaders with its host phases on the board, and the longest part that
    /// goes so: several hosts, the board on, `BB_COLL_ALLTOALL` not forcing a flat algorithm,
    /// both tables in one data area, and for parts of one length those within the bound.
    /// Alike in every member whatever the lengths.
    pub(super) fn alltoall_on_host_boards(&self, part: Option<usize>) -> Result<Option<(&HostComms, usize)>> {
        let flat = forced(&ALLTOALL).is_some_and(|i| ALLTOALL.algorithms[i] != "hier");
        let n = self.size();
        if flat || !super::board::in_blocking_call() || self.is_inter() || self.on_one_host() || tables_bytes(n) > DATA
        {
            return Ok(None);
        }
        let Some(hosts) = self.hier_board(0)? else { return Ok(None) };
        let most = part_max(hosts, n);
        if part.is_some_and(|p| p > most) {
            return Ok(None);
        }
        report(self, Collective::Alltoall, "hier", "", part.unwrap_or(0));
        Ok(Some((hosts, most)))
    }
}

/// The longest part that goes through the hosts' leaders: `BB_HIER_ALLTOALL_MAX` bytes a host
/// sends the others over its members times the ranks outside the host, at the host where that
/// is largest.
fn part_max(hosts: &HostComms, n: usize) -> usize {
    let h = &hosts.hosts;
    let widest = (0..h.count()).map(|k| h.members(k).len() * (n - h.members(k).len())).max().unwrap_or(1);
    HIER_ALLTOALL_MAX.get() / widest.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_copied_across_cells_where_they_lie() {
        let parts: Vec<Vec<u8>> = vec![vec![1; 10], vec![2; DATA], vec![3; 5]];
        let pieces: Vec<Piece<*const u8>> =
            [0, 10, 10 + DATA].iter().zip(&parts).map(|(&at, p)| Piece { at, len: p.len(), ptr: p.as_ptr() }).collect();
        let len = 15 + DATA;
        let mut cells = vec![0u8; len.div_ceil(DATA) * DATA];
        for c in 0..len.div_ceil(DATA) {
            // SAFETY: each cell holds DATA bytes; the parts their lengths.
            unsafe { fill(cells[c * DATA..].as_mut_ptr(), (c * DATA, DATA), &pieces) };
        }
        let mut back = vec![0u8; DATA];
        let wants = [Piece { at: 10, len: DATA, ptr: back.as_mut_ptr() }];
        assert!(wanted(&wants, 0) && wanted(&wants, DATA) && !wanted(&wants, 2 * DATA));
        for c in 0..2 {
            // SAFETY: `back` holds DATA bytes.
            unsafe { take(&cells[c * DATA..(c + 1) * DATA], c * DATA, &wants) };
        }
        assert_eq!(back, parts[1]);
        assert_eq!(&cells[..10], &parts[0][..]);
        assert_eq!(&cells[10 + DATA..15 + DATA], &parts[2][..]);
    }
}

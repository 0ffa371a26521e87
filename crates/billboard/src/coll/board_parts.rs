//! The v-forms on the board (gatherv, scatterv, all-to-allv: parts of any length, which only
//! the two ranks of each part know): every part that fits a data area goes through the
//! writer's lines, as the plain forms' parts do (`board_gather.rs`, `board_scatter.rs`,
//! `board_alltoall.rs`); a part that does not goes by one message between its two ranks
//! (tag [`TAG_PARTS`] on the collective context). Whether the board applies is the
//! communicator's choice (the table, `BB_COLL_GATHER`, `_SCATTER`, `_ALLTOALL`), so every rank
//! makes it alike whatever the lengths. All-gatherv's lengths are known to all: it runs
//! `board_allgather.rs` where its largest part fits.
//!
//! Gatherv: a sender's part fits or not by its length, which the root knows too. Scatterv and
//! all-to-allv: a poster packs several parts into one data area, and a reader does not know
//! the lengths of the parts before its own, so the post opens with a table, one u32 per rank:
//! where that rank's part starts in the post, or [`BY_MESSAGE`]; then one u32 more, where the
//! packed parts end, so each part's length is known to its reader too (a part ends where the
//! next one placed starts). Parts are packed in rank order while they fit. Such a post always
//! uses the data area (never the header line's inline bytes), so a reader who does not know
//! its length knows where it lies. A reader whose count is shorter than the part posted for it
//! fails with the truncation a message would meet (counts that disagree between ranks).

use super::board::{Board, DATA};
use super::gather::Layout;
use super::select::rendezvous_min;
use super::TAG_PARTS;
use crate::{wait_all, Communicator, Error, Request, Result, SendMode, Source, TagMatch};

/// A table entry: this part goes by message.
pub(super) const BY_MESSAGE: u32 = u32::MAX;

/// How a part of `len` bytes goes by message: by rendezvous from the collectives' threshold
/// (the receiver's single copy), as the schedules send theirs (`select_board.rs`,
/// `BB_COLL_RENDEZVOUS_MIN`; coll.c gatherv 64 KiB, 2 ranks: 7.4 us eager, 4.1 by the
/// schedule's rendezvous).
fn mode(comm: &Communicator, len: usize) -> SendMode {
    match len >= rendezvous_min(comm) {
        true => SendMode::Synchronous,
        false => SendMode::Standard,
    }
}

/// Bytes of a post's table for `n` ranks: an entry each, then where the packed parts end.
pub(super) fn table_bytes(n: usize) -> usize {
    4 * (n + 1)
}

/// Whether a post of parts for `n` ranks leaves room for any part (alike in every rank).
pub(crate) fn parts_fit(n: usize) -> bool {
    table_bytes(n) < DATA
}

/// The table of a post that packs the parts of lengths `len(s)` for every rank `s` but
/// `skip`, in rank order while they fit `room` bytes (one data area on one host; a host's
/// post in cells, `hier_board_parts.rs`, more).
pub(super) fn table(n: usize, skip: usize, room: usize, len: impl Fn(usize) -> usize) -> Vec<u32> {
    let mut at = table_bytes(n);
    (0..n)
        .map(|s| {
            let l = len(s);
            if s == skip || at + l > room {
                return BY_MESSAGE;
            }
            at += l;
            (at - l) as u32
        })
        .collect()
}

/// Writes `table`, the parts it places (rank s's at `from(s)`, `len(s)` bytes) and where they
/// end at `to`.
///
/// # Safety
/// `to` holds the table and every part it places; each part is readable.
pub(super) unsafe fn pack(to: *mut u8, table: &[u32], part: impl Fn(usize) -> (*const u8, usize)) {
    let mut end = table_bytes(table.len());
    for (s, &at) in table.iter().enumerate() {
        std::ptr::copy_nonoverlapping(at.to_ne_bytes().as_ptr(), to.add(4 * s), 4);
        if at != BY_MESSAGE {
            let (from, len) = part(s);
            std::ptr::copy_nonoverlapping(from, to.add(at as usize), len);
            end = at as usize + len;
        }
    }
    std::ptr::copy_nonoverlapping((end as u32).to_ne_bytes().as_ptr(), to.add(4 * table.len()), 4);
}

fn word(post: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes(post[4 * i..4 * i + 4].try_into().expect("four bytes"))
}

/// Where rank `me`'s part lies in `post` (a post of parts): its offset, or None (by message).
pub(super) fn entry(post: &[u8], me: usize) -> Option<usize> {
    let at = word(post, me);
    (at != BY_MESSAGE).then_some(at as usize)
}

/// Where rank `me`'s part lies in `post`, a post of parts for `n` ranks, and its length (up to
/// the next part placed, or to the end of the packed parts); None: by message.
pub(super) fn placed(post: &[u8], me: usize, n: usize) -> Option<(usize, usize)> {
    let at = entry(post, me)?;
    let end = (me + 1..n).find_map(|s| entry(post, s)).unwrap_or(word(post, n) as usize);
    Some((at, end.saturating_sub(at)))
}

/// A part of `len` bytes from rank `from` into a receive of `cap` bytes: the truncation a
/// message of it would meet where it is longer (counts that disagree between ranks).
fn fits(from: usize, len: usize, cap: usize) -> Result<()> {
    match len > cap {
        true => Err(Error::Truncated { source: from, tag: TAG_PARTS, message_bytes: len, buffer_bytes: cap }),
        false => Ok(()),
    }
}

impl Board {
    /// Every rank's `send` into the root's `recv` at `layout[r]` (checked by the caller); the
    /// root's own part may lie there already (in place).
    ///
    /// # Safety
    /// `send` holds its length; at the root `recv` holds every part of `layout`. Both stay
    /// valid, and untouched by the caller, for the call.
    pub(crate) unsafe fn gatherv(
        &self,
        comm: &Communicator,
        (send, len): (*const u8, usize),
        recv: Option<(*mut u8, Layout<'_>)>,
        root: usize,
    ) -> Result<()> {
        let (e, me, ctx) = (self.epoch(), self.rank(), comm.coll_context());
        let Some((buf, layout)) = recv.filter(|_| me == root) else {
            if len <= DATA {
                self.post(comm, e, len, |to| std::ptr::copy_nonoverlapping(send, to, len));
            }
            self.finish(e);
            if len > DATA {
                comm.send_on(ctx, std::slice::from_raw_parts(send, len), root, TAG_PARTS, mode(comm, len))?;
            }
            return Ok(());
        };
        let large = |r: usize| r != me && layout[r].1 > DATA;
        let mut messages = Vec::new();
        for r in (0..self.size()).filter(|&r| large(r)) {
            let (d, l) = layout[r];
            messages.push(comm.irecv_on(ctx, buf.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_PARTS), 0)?);
        }
        crate::copy::copy_own(send, buf.add(layout[me].0), len.min(layout[me].1));
        for r in (0..self.size()).filter(|&r| r != me && !large(r)) {
            let (d, l) = layout[r];
            self.wait_for(comm, r, e);
            std::ptr::copy_nonoverlapping(self.read(r, e, l).as_ptr(), buf.add(d), l);
        }
        self.finish(e);
        wait_all(messages).map(drop)
    }

    /// The root's parts (`layout[r]` of `send`, checked by the caller) into each rank's `recv`
    /// of `recv_len` bytes (a root in place passes 0: its part stays).
    ///
    /// # Safety
    /// As for [`Board::gatherv`], the other way.
    pub(crate) unsafe fn scatterv(
        &self,
        comm: &Communicator,
        send: Option<(*const u8, Layout<'_>)>,
        (recv, recv_len): (*mut u8, usize),
        root: usize,
    ) -> Result<()> {
        let (e, me, n, ctx) = (self.epoch(), self.rank(), self.size(), comm.coll_context());
        let Some((buf, layout)) = send.filter(|_| me == root) else {
            self.wait_for(comm, root, e);
            let post = self.read(root, e, DATA);
            let at = placed(post, me, n);
            if let Some((at, len)) = at {
                // A part longer than this rank's count (counts that disagree) keeps its first
                // bytes and fails below, once the board is done with.
                std::ptr::copy_nonoverlapping(post[at..].as_ptr(), recv, recv_len.min(len).min(DATA - at));
            }
            self.finish(e);
            if let Some((_, len)) = at {
                fits(root, len, recv_len)?;
            } else {
                let into = std::slice::from_raw_parts_mut(recv, recv_len);
                comm.recv_on(ctx, into, Source::Rank(root), TagMatch::Tag(TAG_PARTS))?;
            }
            return Ok(());
        };
        let table = table(n, me, DATA, |s| layout[s].1);
        self.post(comm, e, DATA, |to| pack(to, &table, |s| (buf.add(layout[s].0), layout[s].1)));
        crate::copy::copy_own(buf.add(layout[me].0), recv, layout[me].1.min(recv_len));
        self.finish(e);
        for s in (0..n).filter(|&s| s != me && table[s] == BY_MESSAGE) {
            let (d, l) = layout[s];
            comm.send_on(ctx, std::slice::from_raw_parts(buf.add(d), l), s, TAG_PARTS, mode(comm, l))?;
        }
        Ok(())
    }

    /// Rank r's `send[out[s]]` into rank s's `recv[into[r]]`, for all r, s (layouts checked by
    /// the caller).
    ///
    /// # Safety
    /// The buffers hold every part of their layouts and stay valid, and untouched by the
    /// caller, for the call.
    pub(crate) unsafe fn alltoallv(
        &self,
        comm: &Communicator,
        (send, out): (*const u8, Layout<'_>),
        (recv, into): (*mut u8, Layout<'_>),
    ) -> Result<()> {
        let (e, me, n, ctx) = (self.epoch(), self.rank(), self.size(), comm.coll_context());
        let table = table(n, me, DATA, |s| out[s].1);
        self.post(comm, e, DATA, |to| pack(to, &table, |s| (send.add(out[s].0), out[s].1)));
        let mut messages: Vec<Request<'_>> = Vec::new();
        for s in (0..n).filter(|&s| s != me && table[s] == BY_MESSAGE) {
            let (d, l) = out[s];
            messages.push(comm.isend_on(ctx, send.add(d), l, s, TAG_PARTS, mode(comm, l), 0)?);
        }
        crate::copy::copy_own(send.add(out[me].0), recv.add(into[me].0), out[me].1.min(into[me].1));
        // Starting after this rank spreads the readers over the writers' lines.
        let mut truncated = Ok(());
        for r in (1..n).map(|k| (me + k) % n) {
            let (d, l) = into[r];
            self.wait_for(comm, r, e);
            let post = self.read(r, e, DATA);
            match placed(post, me, n) {
                Some((at, len)) => {
                    std::ptr::copy_nonoverlapping(post[at..].as_ptr(), recv.add(d), l.min(len).min(DATA - at));
                    // Failed after the board and the messages are done with (the others go on).
                    truncated = truncated.and(fits(r, len, l));
                }
                None => {
                    messages.push(comm.irecv_on(ctx, recv.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_PARTS), 0)?)
                }
            }
        }
        self.finish(e);
        wait_all(messages).map(drop).and(truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_packed_in_rank_order_while_they_fit_and_the_rest_go_by_message() {
        let lens = [100, 0, DATA, 7, DATA / 2, DATA / 2];
        let t = table(6, 3, DATA, |s| lens[s]);
        let head = table_bytes(6) as u32;
        // Rank 2's part does not fit; rank 3 is the poster (its part stays home); rank 4's
        // fits after it, rank 5's no longer does.
        assert_eq!(t, vec![head, head + 100, BY_MESSAGE, BY_MESSAGE, head + 100, BY_MESSAGE]);
        let mut post = vec![0u8; DATA];
        let parts: Vec<Vec<u8>> = lens.iter().enumerate().map(|(s, &l)| vec![s as u8 + 1; l]).collect();
        // SAFETY: `post` holds one data area; every part is readable.
        unsafe { pack(post.as_mut_ptr(), &t, |s| (parts[s].as_ptr(), parts[s].len())) };
        assert_eq!(entry(&post, 0), Some(head as usize));
        assert_eq!(entry(&post, 2), None);
        let at = entry(&post, 4).expect("rank 4's part is in the post");
        assert_eq!(&post[at..at + DATA / 2], &parts[4][..]);
        // Each placed part's length: to the next one placed, the last to the end word.
        assert_eq!(placed(&post, 0, 6), Some((head as usize, 100)));
        assert_eq!(placed(&post, 1, 6), Some((head as usize + 100, 0)));
        assert_eq!(placed(&post, 4, 6), Some((head as usize + 100, DATA / 2)));
        assert_eq!(placed(&post, 5, 6), None);
        assert!(fits(0, 100, 100).is_ok());
        assert!(matches!(
            fits(3, 100, 50),
            Err(Error::Truncated { source: 3, message_bytes: 100, buffer_bytes: 50, .. })
        ));
        assert!(parts_fit(8) && !parts_fit(DATA / 4));
    }
}

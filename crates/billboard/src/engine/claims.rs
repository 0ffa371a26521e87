//! Shared copies: a large message copied by both ends at once.
//!
//! A single copy by the receiver (`process_vm_readv`) leaves the sender's core idle while it
//! waits. When the receiver asks, the sender copies too, from the other end, straight into the
//! receiver's buffer (`process_vm_writev`): two cores move the message. Which pages each end
//! copies is decided as they go, so a sender busy elsewhere costs the receiver nothing: the
//! receiver takes pages from the front, the sender from the back, until they meet.
//!
//! The pages are divided by one claim word in the receiver's partition, the one word of the
//! billboard with two writers: both ends take pages with compare-and-swap. It is touched once
//! per claimed chunk (tens of KiB), never on the small-message path.
//!
//! ```text
//! bits 63..48  seq    which message the word belongs to (the receiver opens it with seq + 1)
//! bits 47..24  front  pages [0, front) are taken by the receiver
//! bits 23..0   back   pages [back, pages) are taken by the sender
//! ```
//!
//! Pages in [front, back) are free. Once front == back nothing is free and the word stays as it
//! is until the receiver opens it for another message: the final `back` says whether the sender
//! took anything (it then says so with a record when it has written it all).
//!
//! front > back never happens while a message is open: it marks a word the receiver closed for
//! good ([`close`]) because it failed the sender for what it sent. Nothing is free in it, and
//! the sender, finding nothing, can tell why ([`closed`]): no FIN will come.

use crate::sync::{AtomicU64, Ordering};

/// Bytes of one claimable unit.
pub(crate) const PAGE: usize = 4096;
const FIELD_BITS: u32 = 24;
const FIELD: u64 = (1 << FIELD_BITS) - 1;

/// The largest message a claim word can divide (64 GiB).
pub(crate) const MAX_BYTES: usize = (FIELD as usize) * PAGE;

fn pack(seq: u16, front: u64, back: u64) -> u64 {
    (seq as u64) << (2 * FIELD_BITS) | front << FIELD_BITS | back
}

fn unpack(w: u64) -> (u16, u64, u64) {
    ((w >> (2 * FIELD_BITS)) as u16, (w >> FIELD_BITS) & FIELD, w & FIELD)
}

fn pages(bytes: usize) -> u64 {
    bytes.div_ceil(PAGE) as u64
}

/// Pages `[from, to)` of a `len`-byte message as bytes.
fn bytes(from: u64, to: u64, len: usize) -> std::ops::Range<usize> {
    (from as usize * PAGE).min(len)..(to as usize * PAGE).min(len)
}

/// Receiver: opens `word` for a message of `len` bytes (at most [`MAX_BYTES`]) whose first
/// `copied` bytes (whole pages) it has already read alone; the rest is free. Returns the
/// sequence number the sender must name. The word must be idle: its last message done on
/// both ends.
pub(crate) fn open(word: &AtomicU64, len: usize, copied: usize) -> u16 {
    debug_assert!(len <= MAX_BYTES && copied.is_multiple_of(PAGE) && copied <= len);
    let (seq, _, _) = unpack(word.load(Ordering::Relaxed));
    let seq = seq.wrapping_add(1);
    word.store(pack(seq, (copied / PAGE) as u64, pages(len)), Ordering::Relaxed);
    seq
}

/// Which end claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The receiver, from the front.
    Front,
    /// The sender, from the back.
    Back,
}

/// Takes up to `chunk` bytes (rounded up to whole pages) of message `seq` (`len` bytes) from
/// `end`: the byte range now this end's to copy, or `None` when nothing is free (or the word has
/// moved on to another message).
pub(crate) fn take(word: &AtomicU64, seq: u16, len: usize, end: End, chunk: usize) -> Option<std::ops::Range<usize>> {
    let want = pages(chunk).max(1);
    let mut w = word.load(Ordering::Relaxed);
    loop {
        let (s, front, back) = unpack(w);
        if s != seq || front >= back {
            return None;
        }
        let (new, got) = match end {
            End::Front => {
                let to = (front + want).min(back);
                (pack(s, to, back), (front, to))
            }
            End::Back => {
                let from = back.saturating_sub(want).max(front);
                (pack(s, front, from), (from, back))
            }
        };
        match word.compare_exchange_weak(w, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(bytes(got.0, got.1, len)),
            Err(now) => w = now,
        }
    }
}

/// Receiver, once [`take`] from the front has returned `None`: whether the sender took any
/// pages of its `len`-byte message (the word is final by then).
pub(crate) fn sender_took(word: &AtomicU64, len: usize) -> bool {
    let (_, _, back) = unpack(word.load(Ordering::Acquire));
    back < pages(len)
}

/// Receiver: closes `word` for good, because it failed the sender (see the module's comment):
/// neither end takes a page from it again, so the sender writes no more into the buffer of the
/// receive that failed, which its owner has back. A chunk the sender claimed before is its own
/// to finish: that one write in flight is all a faulty sender can still put there.
pub(crate) fn close(word: &AtomicU64) {
    let closed = |w: u64| Some(pack(unpack(w).0, FIELD, 0));
    // Never fails: the closure always gives a value.
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Relaxed, closed);
}

/// Sender, once [`take`] from the back has returned `None`: whether the receiver closed the
/// word ([`close`]): it has failed this rank, and no FIN will come.
pub(crate) fn closed(word: &AtomicU64) -> bool {
    let (_, front, back) = unpack(word.load(Ordering::Relaxed));
    front > back
}

/// Pages of a `len`-byte message as the byte range a record can name (`from`, `to` in pages).
pub(crate) fn page_range(r: &std::ops::Range<usize>) -> (u32, u32) {
    ((r.start / PAGE) as u32, r.end.div_ceil(PAGE) as u32)
}

/// The byte range of pages `[from, to)` of a `len`-byte message.
pub(crate) fn byte_range(from: u32, to: u32, len: usize) -> std::ops::Range<usize> {
    bytes(from as u64, to as u64, len)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Both ends take until nothing is free: every byte once, in the claimed order.
    fn drain(len: usize, front_chunk: usize, back_chunk: usize, order: &[End]) -> Vec<(End, std::ops::Range<usize>)> {
        let word = AtomicU64::new(pack(7, 3, 3));
        let seq = open(&word, len, 0);
        assert_eq!(seq, 8);
        let mut got = Vec::new();
        let mut turn = order.iter().cycle();
        loop {
            let end = *turn.next().unwrap();
            let chunk = if end == End::Front { front_chunk } else { back_chunk };
            match take(&word, seq, len, end, chunk) {
                Some(r) => got.push((end, r)),
                None => break,
            }
        }
        got
    }

    #[test]
    fn both_ends_cover_every_byte_once() {
        let len = 10 * PAGE + 100;
        let got = drain(len, 2 * PAGE, 3 * PAGE, &[End::Front, End::Back]);
        let mut covered = vec![0u8; len];
        for (_, r) in &got {
            covered[r.clone()].iter_mut().for_each(|c| *c += 1);
        }
        assert!(covered.iter().all(|&c| c == 1), "{got:?}");
        assert_eq!(got[0], (End::Front, 0..2 * PAGE));
        assert_eq!(got[1], (End::Back, 8 * PAGE..len), "the back takes the partial last page");
    }

    #[test]
    fn a_silent_sender_leaves_everything_to_the_receiver() {
        let len = 5 * PAGE;
        let got = drain(len, PAGE, PAGE, &[End::Front]);
        assert_eq!(got.len(), 5);
        let word = AtomicU64::new(0);
        let seq = open(&word, len, 0);
        while take(&word, seq, len, End::Front, 1 << 20).is_some() {}
        assert!(!sender_took(&word, len));
        assert_eq!(take(&word, seq, len, End::Back, PAGE), None, "a late sender finds nothing");
    }

    #[test]
    fn a_stale_sequence_takes_nothing() {
        let word = AtomicU64::new(0);
        let old = open(&word, 4 * PAGE, 0);
        let new = open(&word, 4 * PAGE, 0);
        assert_ne!(old, new);
        assert_eq!(take(&word, old, 4 * PAGE, End::Back, PAGE), None);
        assert_eq!(take(&word, new, 4 * PAGE, End::Back, PAGE), Some(3 * PAGE..4 * PAGE));
        assert!(take(&word, new, 4 * PAGE, End::Front, 1 << 30).is_some());
        assert!(sender_took(&word, 4 * PAGE));
    }

    #[test]
    fn opening_after_copying_alone_frees_only_the_rest() {
        let word = AtomicU64::new(0);
        let len = 6 * PAGE + 1;
        let seq = open(&word, len, 2 * PAGE);
        assert_eq!(take(&word, seq, len, End::Front, PAGE), Some(2 * PAGE..3 * PAGE));
        assert_eq!(take(&word, seq, len, End::Back, 2 * PAGE), Some(5 * PAGE..len));
        assert_eq!(take(&word, seq, len, End::Back, 8 * PAGE), Some(3 * PAGE..5 * PAGE));
        assert_eq!(take(&word, seq, len, End::Front, PAGE), None);
    }

    /// A closed word gives neither end anything, whatever message it was open for, and says
    /// so only once closed; the receiver could open it again (it never does for a failed peer).
    #[test]
    fn a_closed_word_gives_nothing_and_says_so() {
        let word = AtomicU64::new(0);
        let len = 8 * PAGE;
        let seq = open(&word, len, 0);
        assert_eq!(take(&word, seq, len, End::Back, PAGE), Some(7 * PAGE..len));
        assert!(!closed(&word));
        while take(&word, seq, len, End::Front, PAGE).is_some() {}
        assert!(!closed(&word), "a word with nothing free is not closed");
        let seq = open(&word, len, 0);
        close(&word);
        assert!(closed(&word));
        assert_eq!(take(&word, seq, len, End::Back, PAGE), None);
        assert_eq!(take(&word, seq, len, End::Front, PAGE), None);
        assert_eq!(take(&word, seq.wrapping_add(1), len, End::Back, PAGE), None);
        let next = open(&word, len, 0);
        assert_eq!(next, seq.wrapping_add(1), "the sequence goes on");
        assert!(!closed(&word));
    }

    #[test]
    fn page_ranges_round_trip() {
        let len = 3 * PAGE + 5;
        let r = 2 * PAGE..len;
        let (a, b) = page_range(&r);
        assert_eq!((a, b), (2, 4));
        assert_eq!(byte_range(a, b, len), r);
    }

    proptest::proptest! {
        /// Any interleaving of the two ends and any chunk sizes divide the message exactly.
        #[test]
        fn any_interleaving_divides_exactly(
            len in 1usize..64 * PAGE,
            front in 1usize..8 * PAGE,
            back in 1usize..8 * PAGE,
            order in proptest::collection::vec(proptest::bool::ANY, 1..8),
        ) {
            let order: Vec<End> = order.iter().map(|&b| if b { End::Front } else { End::Back }).collect();
            let got = drain(len, front, back, &order);
            let mut covered = vec![0u8; len];
            for (_, r) in &got {
                covered[r.clone()].iter_mut().for_each(|c| *c += 1);
            }
            proptest::prop_assert!(covered.iter().all(|&c| c == 1));
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// A sender that takes a page at a time from the back of message `seq` until nothing is
    /// free: the pages it took, and whether it then found the word closed.
    fn sender_taking(
        word: &Arc<AtomicU64>,
        seq: u16,
        len: usize,
    ) -> loom::thread::JoinHandle<(Vec<std::ops::Range<usize>>, bool)> {
        let w = word.clone();
        loom::thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(r) = take(&w, seq, len, End::Back, PAGE) {
                got.push(r);
            }
            (got, closed(&w))
        })
    }

    /// The receiver and the sender take pages at the same time: each page goes to exactly one
    /// end, and the receiver's view of the final word says whether the sender took any.
    #[test]
    fn loom_two_ends_divide_a_message() {
        loom::model(|| {
            let len = 3 * PAGE;
            let word = Arc::new(AtomicU64::new(0));
            let seq = open(&word, len, 0);
            let sender = sender_taking(&word, seq, len);
            let mut mine = Vec::new();
            while let Some(r) = take(&word, seq, len, End::Front, PAGE) {
                mine.push(r);
            }
            let took = sender_took(&word, len);
            let (theirs, _) = sender.join().unwrap();
            assert_eq!(took, !theirs.is_empty());
            let mut covered = [0u8; 3];
            for r in mine.iter().chain(&theirs) {
                for p in r.start / PAGE..r.end / PAGE {
                    covered[p] += 1;
                }
            }
            assert_eq!(covered, [1, 1, 1]);
        });
    }

    /// The receiver closes the word while the sender takes pages: each page goes to the sender
    /// at most once, none after the close, and a sender that stops short of the whole message
    /// sees the word closed.
    #[test]
    fn loom_a_close_stops_the_sender() {
        loom::model(|| {
            let len = 3 * PAGE;
            let word = Arc::new(AtomicU64::new(0));
            let seq = open(&word, len, 0);
            let sender = sender_taking(&word, seq, len);
            close(&word);
            let after_close = take(&word, seq, len, End::Back, PAGE);
            let (got, saw_closed) = sender.join().unwrap();
            assert_eq!(after_close, None);
            // It stops at the close, or had taken every page before it.
            assert!(saw_closed || got.len() == 3, "the sender stopped early without seeing the close");
            assert!(got.len() <= 3);
            let mut pages: Vec<usize> = got.iter().map(|r| r.start / PAGE).collect();
            pages.dedup();
            assert_eq!(pages.len(), got.len(), "a page taken twice");
        });
    }
}

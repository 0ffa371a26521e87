//! Shared copy, sans IO: both ends of a large rendezvous copy at once, the receiver reading
//! pages from the front while the sender writes pages from the back into the receiver's buffer,
//! dividing them through a claim word (`claims.rs`); the records SHARE (the receiver asks) and
//! PUSHED (the sender says what it wrote). Two plain machines, one per end; they hold offsets,
//! page numbers and flags, never a channel, a claim word or a buffer: the engine (`large.rs`)
//! does the claims, reads, writes and records they ask for and tells them how it went.
//!
//! ```text
//! receiver (SharedRecv), made when a receive matches the RTS of a large contiguous message:
//!   Alone{pages}   --Turn{free: None}---> Read{offset: pages, bytes <= chunk} (alone, from the
//!                                         front); Read -> Yield, or Finish (FIN) at the end
//!   Alone{pages}   --Turn{free: k}------> Open{slot k, copied}; Opened{seq} -> Share (SHARE out)
//!   Claiming       --Turn---------------> Claim (front); Claimed(range) -> Read; Read -> Yield
//!                                         Claimed(None) -> Draining, Yield
//!                  --Refused (a read)---> Seal (take what is left), Draining with `refused`
//!   Draining       --Turn---------------> AskSenderTook; SenderTook(true) and no PUSHED -> Wait
//!                                         pages given back (PUSHED redo) -> Read them
//!                                         else Finish{FIN, slot freed}, or Restart{CTS, slot
//!                                         freed} if a read was refused
//!   Claiming/Draining --Pushed{redo}----> Accepted, once (a second, one before SHARE, or
//!                                         pages outside the message: Violation)
//!   any            --PeerFailed---------> Failed{slot}: the receive fails naming the sender,
//!                                         and its claim word is free again
//! sender (SharedSend), made by a SHARE while the send waits (rendezvous.rs):
//!   Helping{took}  --Turn{chunk}--------> Claim (back); Claimed(range) -> Write; Written -> Yield
//!                                         Claimed(None) -> Done{pushed: took} (PUSHED if took)
//!                  --Refused (a write)--> GiveBack{redo: its pages} (PUSHED naming them)
//!                  --Closed (nothing free,
//!                    the word closed)-----> Closed: the receiver failed this rank for what it
//!                                         sent (claims::close); fail it, no FIN will come
//! ```
//!
//! Pages: the claim word divides the message in 4 KiB pages (`claims::PAGE`); byte ranges
//! here are `(start, end)` of the message. Each byte is copied once: by the receiver alone, by
//! whichever end claimed its page, or (given back) by the receiver after the sender's PUSHED.

use super::claims;
use super::request::NO_SLOT;

/// What the receiver's last read was, to account for it when it is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    None,
    /// From the front before a claim word was free.
    Alone,
    /// Pages claimed from the front.
    Claimed,
    /// Pages the sender gave back.
    GivenBack,
}

/// The receiving end of a shared copy of `len` bytes from `addr` in the sender's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedRecv {
    addr: u64,
    len: usize,
    send_req: u32,
    /// Pages read alone from the front before a claim word was free.
    alone: u32,
    /// The claim word in use ([`NO_SLOT`]: none yet), and the message's number in it.
    slot: u16,
    seq: u16,
    /// Nothing is left to claim from the front.
    front_done: bool,
    /// The sender's PUSHED has come.
    pushed: bool,
    /// A read was refused: the message starts over by the pipeline once the sender is done.
    refused: bool,
    reading: Reading,
    /// Pages the sender gave back (PUSHED), still to read: `[from, to)`.
    redo: (u32, u32),
}

/// What happened, for the receiving end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecvEvent {
    /// A progress round: `free` is a claim word of the pair no shared copy uses (None: all
    /// busy); one read or claim moves at most `chunk` bytes (whole pages).
    Turn { free: Option<u16>, chunk: usize },
    /// The claim word of the last [`RecvAction::Open`] is open for this message as `seq`.
    Opened { seq: u16 },
    /// The last [`RecvAction::Claim`] got these bytes (None: nothing is free any more).
    Claimed { range: Option<(usize, usize)> },
    /// Whether the sender took any pages (the answer to [`RecvAction::AskSenderTook`]).
    SenderTook { took: bool },
    /// The last [`RecvAction::Read`] copied its `bytes`.
    Read { bytes: usize },
    /// The kernel refused the last read.
    Refused,
    /// The sender's PUSHED: it has written the pages it took, and gives back `redo` (pages
    /// `[from, to)`; `(0, 0)`: none).
    Pushed { redo: (u32, u32) },
    /// The sender failed (its route broke, or it broke the protocol).
    PeerFailed,
}

/// What the receiving end asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecvAction {
    /// Open claim word `slot` for this message, whose first `copied` bytes (whole pages) are
    /// read already; mark the word busy; answer [`RecvEvent::Opened`].
    Open { slot: u16, copied: usize },
    /// Send SHARE (the receive buffer, this request, `slot`, `seq`) to the sender. Round over.
    Share { slot: u16, seq: u16 },
    /// Claim up to `chunk` bytes from the front of word `slot` (message `seq`); answer
    /// [`RecvEvent::Claimed`].
    Claim { slot: u16, seq: u16, chunk: usize },
    /// Claim everything left from the front of word `slot` (so the sender takes no more).
    /// Round over.
    Seal { slot: u16, seq: u16 },
    /// Look at word `slot`: did the sender take pages? Answer [`RecvEvent::SenderTook`].
    AskSenderTook { slot: u16 },
    /// Copy `bytes` bytes at `offset` of the message from the sender's memory (`addr +
    /// offset`) into the buffer at `offset`; answer [`RecvEvent::Read`] or [`RecvEvent::Refused`].
    Read { addr: u64, offset: usize, bytes: usize },
    /// Nothing more this round (progress was made).
    Yield,
    /// Nothing to do until the sender's PUSHED (no progress this round).
    Wait,
    /// All copied: free claim word `slot` (if any), send FIN for `send_req`; the receive is
    /// complete.
    Finish { send_req: u32, slot: Option<u16> },
    /// A read was refused: free claim word `slot` (if any); the receive (`len` bytes) starts
    /// over by the pipeline (CTS for `send_req`).
    Restart { send_req: u32, len: usize, slot: Option<u16> },
    /// The PUSHED is taken in.
    Accepted,
    /// The PUSHED breaks the protocol: it fails the sender.
    Violation(PushedViolation),
    /// The sender failed: free claim word `slot` (if any); the receive fails naming it.
    Failed { slot: Option<u16> },
}

/// A PUSHED the receiver cannot have been sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PushedViolation {
    /// Before the receiver asked (no SHARE yet), or a second one.
    NotAsked,
    /// Naming pages `[from, to)` outside a `len`-byte message (or an empty range).
    Outside { from: u32, to: u32, len: usize },
}

impl std::fmt::Display for PushedViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            PushedViolation::NotAsked => write!(f, "PUSHED for a shared copy that did not ask, or a second one"),
            PushedViolation::Outside { from, to, len } => {
                write!(f, "PUSHED naming pages {from}..{to} of a {len}-byte message")
            }
        }
    }
}

impl SharedRecv {
    /// A shared copy of the `len`-byte message at `addr` in the sender's memory, offered by
    /// the RTS of send request `send_req`.
    pub fn new(addr: u64, send_req: u32, len: usize) -> SharedRecv {
        debug_assert!(len <= claims::MAX_BYTES);
        SharedRecv {
            addr,
            len,
            send_req,
            alone: 0,
            slot: NO_SLOT,
            seq: 0,
            front_done: false,
            pushed: false,
            refused: false,
            reading: Reading::None,
            redo: (0, 0),
        }
    }

    /// The claim word in use, if one is open.
    #[inline]
    pub fn slot(&self) -> Option<u16> {
        (self.slot != NO_SLOT).then_some(self.slot)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The send request the RTS named (FIN and CTS name it).
    #[inline]
    pub fn send_req(&self) -> u32 {
        self.send_req
    }

    fn read(&mut self, how: Reading, start: usize, end: usize) -> RecvAction {
        self.reading = how;
        RecvAction::Read { addr: self.addr.wrapping_add(start as u64), offset: start, bytes: end - start }
    }

    pub fn handle(&mut self, event: RecvEvent) -> RecvAction {
        match event {
            RecvEvent::Turn { free, chunk } => self.turn(free, chunk),
            RecvEvent::Opened { seq } => {
                self.seq = seq;
                RecvAction::Share { slot: self.slot, seq }
            }
            RecvEvent::Claimed { range: Some((start, end)) } => self.read(Reading::Claimed, start, end),
            RecvEvent::Claimed { range: None } => {
                self.front_done = true;
                RecvAction::Yield
            }
            RecvEvent::SenderTook { took } => {
                if took && !self.pushed {
                    return RecvAction::Wait;
                }
                let (from, to) = self.redo;
                if from < to && !self.refused {
                    let r = claims::byte_range(from, to, self.len);
                    return self.read(Reading::GivenBack, r.start, r.end);
                }
                let slot = self.slot();
                self.slot = NO_SLOT;
                if self.refused {
                    RecvAction::Restart { send_req: self.send_req, len: self.len, slot }
                } else {
                    RecvAction::Finish { send_req: self.send_req, slot }
                }
            }
            RecvEvent::Read { bytes: n } => match std::mem::replace(&mut self.reading, Reading::None) {
                Reading::Alone => {
                    let at = self.alone as usize * claims::PAGE;
                    if at + n == self.len {
                        return RecvAction::Finish { send_req: self.send_req, slot: None };
                    }
                    self.alone += (n / claims::PAGE) as u32;
                    RecvAction::Yield
                }
                Reading::GivenBack => {
                    self.redo = (0, 0);
                    RecvAction::Yield
                }
                Reading::Claimed | Reading::None => RecvAction::Yield,
            },
            RecvEvent::Refused => match std::mem::replace(&mut self.reading, Reading::None) {
                // Nobody else copies yet: start over at once.
                Reading::Alone | Reading::None => {
                    RecvAction::Restart { send_req: self.send_req, len: self.len, slot: None }
                }
                // Take what is left, so only the sender's pages are in flight, then start over
                // by the pipeline once it has written them.
                Reading::Claimed => {
                    (self.front_done, self.refused) = (true, true);
                    RecvAction::Seal { slot: self.slot, seq: self.seq }
                }
                Reading::GivenBack => {
                    (self.redo, self.refused) = ((0, 0), true);
                    RecvAction::Yield
                }
            },
            RecvEvent::Pushed { redo } => {
                if self.slot == NO_SLOT || self.pushed {
                    return RecvAction::Violation(PushedViolation::NotAsked);
                }
                let pages = self.len.div_ceil(claims::PAGE);
                if redo != (0, 0) && !(redo.0 < redo.1 && redo.1 as usize <= pages) {
                    return RecvAction::Violation(PushedViolation::Outside { from: redo.0, to: redo.1, len: self.len });
                }
                (self.pushed, self.redo) = (true, redo);
                RecvAction::Accepted
            }
            RecvEvent::PeerFailed => {
                let slot = self.slot();
                self.slot = NO_SLOT;
                RecvAction::Failed { slot }
            }
        }
    }

    fn turn(&mut self, free: Option<u16>, chunk: usize) -> RecvAction {
        if self.slot == NO_SLOT {
            if let Some(k) = free {
                self.slot = k;
                return RecvAction::Open { slot: k, copied: self.alone as usize * claims::PAGE };
            }
            let at = self.alone as usize * claims::PAGE;
            let n = chunk.min(self.len - at);
            return self.read(Reading::Alone, at, at + n);
        }
        if !self.front_done {
            return RecvAction::Claim { slot: self.slot, seq: self.seq, chunk };
        }
        RecvAction::AskSenderTook { slot: self.slot }
    }
}

/// The sending end of a shared copy: writes pages claimed from the back of word `slot`
/// (message `seq` there) into the receiver's buffer at `raddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedSend {
    len: usize,
    raddr: u64,
    recv_req: u32,
    slot: u16,
    seq: u16,
    /// Pages were written (so PUSHED goes out at the end).
    took: bool,
    /// The pages of the write in flight.
    writing: (u32, u32),
}

/// What happened, for the sending end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HelpEvent {
    /// A progress round: one claim takes at most `chunk` bytes (whole pages).
    Turn { chunk: usize },
    /// The last [`HelpAction::Claim`] got these bytes (None: nothing is free any more).
    Claimed { range: Option<(usize, usize)> },
    /// The last [`HelpAction::Write`] wrote its bytes.
    Written,
    /// The kernel refused it.
    Refused,
    /// The last [`HelpAction::Claim`] got nothing because the receiver closed the word: it
    /// failed this rank for what it sent.
    Closed,
}

/// What the sending end asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HelpAction {
    /// Claim up to `chunk` bytes from the back of word `slot` (message `seq`); answer
    /// [`HelpEvent::Claimed`].
    Claim { slot: u16, seq: u16, chunk: usize },
    /// Write `bytes` bytes at `offset` of the message into the receiver's memory at `to`;
    /// answer [`HelpEvent::Written`] or [`HelpEvent::Refused`].
    Write { offset: usize, bytes: usize, to: u64 },
    /// Nothing more this round.
    Yield,
    /// Nothing left to claim: PUSHED to `recv_req` if `pushed` (pages were written); the send
    /// waits for the receiver's FIN again.
    Done { recv_req: u32, pushed: bool },
    /// A write was refused: PUSHED to `recv_req` naming pages `redo` (`[from, to)`) for the
    /// receiver to copy; this rank stops helping the receiver; the send waits for FIN again.
    GiveBack { recv_req: u32, redo: (u32, u32) },
    /// The receiver closed the copy of its request `recv_req`: it failed this rank, so the
    /// send (and all else with it) fails naming it; nothing more goes to it.
    Closed { recv_req: u32 },
}

impl HelpEvent {
    /// What the sender's claim of up to `chunk` bytes from the back of `word` (message `seq`,
    /// `len` bytes) came to: the one way the engine and the tests answer [`HelpAction::Claim`].
    pub(crate) fn claim(word: &crate::sync::AtomicU64, seq: u16, len: usize, chunk: usize) -> HelpEvent {
        match claims::take(word, seq, len, claims::End::Back, chunk) {
            Some(r) => HelpEvent::Claimed { range: Some((r.start, r.end)) },
            None if claims::closed(word) => HelpEvent::Closed,
            None => HelpEvent::Claimed { range: None },
        }
    }
}

impl SharedSend {
    /// Help with the `len`-byte message, as SHARE `(raddr, recv_req, slot, seq)` asked.
    pub fn new(len: usize, raddr: u64, recv_req: u32, slot: u16, seq: u16) -> SharedSend {
        SharedSend { len, raddr, recv_req, slot, seq, took: false, writing: (0, 0) }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn handle(&mut self, event: HelpEvent) -> HelpAction {
        match event {
            HelpEvent::Turn { chunk } => HelpAction::Claim { slot: self.slot, seq: self.seq, chunk },
            HelpEvent::Claimed { range: Some((start, end)) } => {
                self.writing = claims::page_range(&(start..end));
                HelpAction::Write { offset: start, bytes: end - start, to: self.raddr.wrapping_add(start as u64) }
            }
            HelpEvent::Claimed { range: None } => HelpAction::Done { recv_req: self.recv_req, pushed: self.took },
            HelpEvent::Written => {
                self.took = true;
                HelpAction::Yield
            }
            HelpEvent::Refused => HelpAction::GiveBack { recv_req: self.recv_req, redo: self.writing },
            HelpEvent::Closed => HelpAction::Closed { recv_req: self.recv_req },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::engine::claims::{End, PAGE};
    use crate::sync::AtomicU64;
    use RecvAction as A;
    use RecvEvent as E;

    const ADDR: u64 = 0x10_0000;

    fn turn(r: &mut SharedRecv, free: Option<u16>) -> RecvAction {
        r.handle(E::Turn { free, chunk: 2 * PAGE })
    }

    #[test]
    fn it_reads_alone_until_a_word_is_free_then_asks() {
        let mut r = SharedRecv::new(ADDR, 9, 10 * PAGE);
        assert_eq!(turn(&mut r, None), A::Read { addr: ADDR, offset: 0, bytes: 2 * PAGE });
        assert_eq!(r.handle(E::Read { bytes: 2 * PAGE }), A::Yield);
        assert_eq!(turn(&mut r, None), A::Read { addr: ADDR + 2 * PAGE as u64, offset: 2 * PAGE, bytes: 2 * PAGE });
        assert_eq!(r.handle(E::Read { bytes: 2 * PAGE }), A::Yield);
        assert_eq!(turn(&mut r, Some(3)), A::Open { slot: 3, copied: 4 * PAGE }, "the pages read alone stay read");
        assert_eq!(r.handle(E::Opened { seq: 77 }), A::Share { slot: 3, seq: 77 });
        assert_eq!(r.slot(), Some(3));
        assert_eq!(turn(&mut r, Some(0)), A::Claim { slot: 3, seq: 77, chunk: 2 * PAGE }, "one word per copy");
    }

    #[test]
    fn a_message_read_wholly_alone_finishes_without_a_word() {
        let mut r = SharedRecv::new(ADDR, 9, 3 * PAGE + 1);
        assert_eq!(turn(&mut r, None), A::Read { addr: ADDR, offset: 0, bytes: 2 * PAGE });
        assert_eq!(r.handle(E::Read { bytes: 2 * PAGE }), A::Yield);
        assert_eq!(turn(&mut r, None), A::Read { addr: ADDR + 2 * PAGE as u64, offset: 2 * PAGE, bytes: PAGE + 1 });
        assert_eq!(r.handle(E::Read { bytes: PAGE + 1 }), A::Finish { send_req: 9, slot: None });
    }

    /// Opened, claims from the front until nothing is free, then the end the sender's part
    /// decides: FIN at once if it took nothing; else wait for PUSHED, read what it gave back.
    #[test]
    fn claims_then_the_senders_part_decides_the_end() {
        for (took, redo) in [(false, (0, 0)), (true, (0, 0)), (true, (5, 7))] {
            let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
            assert_eq!(turn(&mut r, Some(1)), A::Open { slot: 1, copied: 0 });
            assert_eq!(r.handle(E::Opened { seq: 4 }), A::Share { slot: 1, seq: 4 });
            assert_eq!(turn(&mut r, None), A::Claim { slot: 1, seq: 4, chunk: 2 * PAGE });
            assert_eq!(
                r.handle(E::Claimed { range: Some((0, 2 * PAGE)) }),
                A::Read { addr: ADDR, offset: 0, bytes: 2 * PAGE }
            );
            assert_eq!(r.handle(E::Read { bytes: 2 * PAGE }), A::Yield);
            assert_eq!(turn(&mut r, None), A::Claim { slot: 1, seq: 4, chunk: 2 * PAGE });
            assert_eq!(r.handle(E::Claimed { range: None }), A::Yield);
            assert_eq!(turn(&mut r, None), A::AskSenderTook { slot: 1 });
            if took {
                assert_eq!(r.handle(E::SenderTook { took }), A::Wait, "its PUSHED has not come");
                assert_eq!(r.handle(E::Pushed { redo }), A::Accepted);
                assert_eq!(turn(&mut r, None), A::AskSenderTook { slot: 1 });
            }
            if redo != (0, 0) {
                let read = A::Read { addr: ADDR + 5 * PAGE as u64, offset: 5 * PAGE, bytes: 2 * PAGE };
                assert_eq!(r.handle(E::SenderTook { took }), read, "pages given back");
                assert_eq!(r.handle(E::Read { bytes: 2 * PAGE }), A::Yield);
                assert_eq!(turn(&mut r, None), A::AskSenderTook { slot: 1 });
            }
            assert_eq!(r.handle(E::SenderTook { took }), A::Finish { send_req: 9, slot: Some(1) });
            assert_eq!(r.slot(), None);
        }
    }

    #[test]
    fn a_refused_read_restarts_by_the_pipeline_once_the_sender_is_done() {
        // Alone: at once, no word to free.
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
        assert!(matches!(turn(&mut r, None), A::Read { .. }));
        assert_eq!(r.handle(E::Refused), A::Restart { send_req: 9, len: 8 * PAGE, slot: None });
        // Claimed: take the rest, wait for the sender's pages, then restart.
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
        turn(&mut r, Some(2));
        r.handle(E::Opened { seq: 1 });
        turn(&mut r, None);
        assert!(matches!(r.handle(E::Claimed { range: Some((0, PAGE)) }), A::Read { .. }));
        assert_eq!(r.handle(E::Refused), A::Seal { slot: 2, seq: 1 });
        assert_eq!(turn(&mut r, None), A::AskSenderTook { slot: 2 });
        assert_eq!(r.handle(E::SenderTook { took: true }), A::Wait);
        assert_eq!(r.handle(E::Pushed { redo: (6, 8) }), A::Accepted);
        turn(&mut r, None);
        let restart = A::Restart { send_req: 9, len: 8 * PAGE, slot: Some(2) };
        assert_eq!(r.handle(E::SenderTook { took: true }), restart, "pages given back are not read: all again");
        // Given back, refused: restart.
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
        turn(&mut r, Some(0));
        r.handle(E::Opened { seq: 1 });
        turn(&mut r, None);
        r.handle(E::Claimed { range: None });
        r.handle(E::Pushed { redo: (0, 8) });
        turn(&mut r, None);
        assert!(matches!(r.handle(E::SenderTook { took: true }), A::Read { .. }));
        assert_eq!(r.handle(E::Refused), A::Yield);
        turn(&mut r, None);
        assert_eq!(r.handle(E::SenderTook { took: true }), A::Restart { send_req: 9, len: 8 * PAGE, slot: Some(0) });
    }

    #[test]
    fn a_pushed_it_cannot_have_been_sent_is_a_violation() {
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE + 1);
        assert_eq!(r.handle(E::Pushed { redo: (0, 0) }), A::Violation(PushedViolation::NotAsked), "before SHARE");
        turn(&mut r, Some(0));
        r.handle(E::Opened { seq: 1 });
        for redo in [(3, 3), (4, 2), (0, 10)] {
            let v = PushedViolation::Outside { from: redo.0, to: redo.1, len: 8 * PAGE + 1 };
            assert_eq!(r.handle(E::Pushed { redo }), A::Violation(v));
        }
        assert_eq!(r.handle(E::Pushed { redo: (0, 9) }), A::Accepted, "the partial last page is a page");
        assert_eq!(r.handle(E::Pushed { redo: (0, 0) }), A::Violation(PushedViolation::NotAsked), "a second");
    }

    /// The sender's failure, wherever the copy stands: the receive fails, and the claim word
    /// it opened (if it had) is handed back to be freed.
    #[test]
    fn a_failed_sender_fails_the_receive_and_frees_its_word() {
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
        assert_eq!(r.handle(E::PeerFailed), A::Failed { slot: None });
        let mut r = SharedRecv::new(ADDR, 9, 8 * PAGE);
        turn(&mut r, Some(3));
        r.handle(E::Opened { seq: 1 });
        assert_eq!(r.handle(E::PeerFailed), A::Failed { slot: Some(3) });
        turn(&mut r, None);
        r.handle(E::Claimed { range: None });
        assert_eq!(r.handle(E::PeerFailed), A::Failed { slot: None }, "freed once");
    }

    #[test]
    fn the_sender_writes_what_it_claims_and_says_so() {
        let mut s = SharedSend::new(8 * PAGE, ADDR, 5, 2, 9);
        let claim = HelpAction::Claim { slot: 2, seq: 9, chunk: PAGE };
        assert_eq!(s.handle(HelpEvent::Turn { chunk: PAGE }), claim);
        assert_eq!(s.handle(HelpEvent::Claimed { range: None }), HelpAction::Done { recv_req: 5, pushed: false });
        s.handle(HelpEvent::Turn { chunk: PAGE });
        let write = HelpAction::Write { offset: 7 * PAGE, bytes: PAGE, to: ADDR + 7 * PAGE as u64 };
        assert_eq!(s.handle(HelpEvent::Claimed { range: Some((7 * PAGE, 8 * PAGE)) }), write);
        assert_eq!(s.handle(HelpEvent::Written), HelpAction::Yield);
        s.handle(HelpEvent::Turn { chunk: PAGE });
        assert_eq!(s.handle(HelpEvent::Claimed { range: None }), HelpAction::Done { recv_req: 5, pushed: true });
        s.handle(HelpEvent::Turn { chunk: 2 * PAGE });
        s.handle(HelpEvent::Claimed { range: Some((4 * PAGE, 6 * PAGE)) });
        assert_eq!(s.handle(HelpEvent::Refused), HelpAction::GiveBack { recv_req: 5, redo: (4, 6) });
        s.handle(HelpEvent::Turn { chunk: PAGE });
        assert_eq!(s.handle(HelpEvent::Closed), HelpAction::Closed { recv_req: 5 }, "the receiver failed us");
    }

    /// A record between the machines, in flight.
    enum Record {
        Share { slot: u16, seq: u16 },
        Pushed { redo: (u32, u32) },
    }

    /// What one run of both ends came to.
    #[derive(Default, Debug)]
    struct Run {
        /// Per byte of the message: how many times it was copied.
        copies: Vec<u8>,
        finished: usize,
        restarted: usize,
        failed: usize,
        /// Writes by the sender after the receive had ended (its buffer given back).
        late_writes: usize,
        /// The sender found the word closed (the receiver failed it while it lived).
        sender_closed: bool,
        /// The claim word the receiver opened, and whether its end freed it.
        opened: Option<u16>,
        freed: bool,
    }

    /// Both ends over one claim word, the records between them in flight: `schedule` picks
    /// who moves (0, 1: the receiver's round; 2: the sender's; 3: the next record arrives,
    /// twice if `repeat`); reads number `refuse_read`, writes number `refuse_write` are
    /// refused; at step `die` the sender dies, or with `live` the receiver fails it there for
    /// a bad record while it lives (closing the word, as the engine closes its route).
    #[allow(clippy::too_many_arguments)]
    fn run(
        len: usize,
        chunk: usize,
        free_after: usize,
        schedule: &[u8],
        refuse_read: Option<usize>,
        refuse_write: Option<usize>,
        die: Option<usize>,
        live: bool,
        repeat: bool,
    ) -> Run {
        let word = AtomicU64::new(0);
        let mut out = Run { copies: vec![0; len], ..Run::default() };
        let mut r = SharedRecv::new(ADDR, 1, len);
        let mut s: Option<SharedSend> = None;
        let (mut to_sender, mut to_recv) = (Vec::<Record>::new(), std::collections::VecDeque::<Record>::new());
        let (mut reads, mut writes, mut turns, mut pushed_seen) = (0, 0, 0, false);
        let mut sender_alive = true;
        let cover = |copies: &mut Vec<u8>, offset: usize, bytes: usize| {
            copies[offset..offset + bytes].iter_mut().for_each(|c| *c += 1);
        };
        let fallback = [0u8, 2, 3];
        let steps = schedule.iter().chain(fallback.iter().cycle()).take(200_000);
        for (step, &who) in steps.enumerate() {
            if out.finished + out.restarted + out.failed > 0 && s.is_none() {
                return out;
            }
            if die == Some(step) && sender_alive {
                sender_alive = false;
                to_recv.clear();
                if live {
                    // The receiver fails it and closes what it holds: the sender goes on.
                    claims::close(&word);
                } else {
                    s = None;
                    to_sender.clear();
                }
                if out.finished + out.restarted == 0 {
                    match r.handle(E::PeerFailed) {
                        A::Failed { slot } => {
                            out.failed += 1;
                            out.freed |= slot.is_some() && slot == out.opened;
                        }
                        other => panic!("a dead sender gave {other:?}"),
                    }
                }
                continue;
            }
            let ended = out.finished + out.restarted + out.failed > 0;
            match who {
                0 | 1 if !ended => {
                    turns += 1;
                    let free = (turns > free_after && out.opened.is_none()).then_some(2u16);
                    let mut a = r.handle(E::Turn { free, chunk });
                    loop {
                        a = match a {
                            A::Open { slot, copied } => {
                                out.opened = Some(slot);
                                let seq = claims::open(&word, len, copied);
                                r.handle(E::Opened { seq })
                            }
                            A::Share { slot, seq } => {
                                to_sender.push(Record::Share { slot, seq });
                                break;
                            }
                            A::Claim { seq, chunk, .. } => {
                                let range = claims::take(&word, seq, len, End::Front, chunk).map(|x| (x.start, x.end));
                                r.handle(E::Claimed { range })
                            }
                            A::Seal { seq, .. } => {
                                while claims::take(&word, seq, len, End::Front, claims::MAX_BYTES).is_some() {}
                                break;
                            }
                            A::AskSenderTook { .. } => {
                                r.handle(E::SenderTook { took: claims::sender_took(&word, len) })
                            }
                            A::Read { addr, offset, bytes } => {
                                assert_eq!(addr, ADDR + offset as u64);
                                reads += 1;
                                if refuse_read == Some(reads) {
                                    r.handle(E::Refused)
                                } else {
                                    cover(&mut out.copies, offset, bytes);
                                    r.handle(E::Read { bytes })
                                }
                            }
                            A::Yield | A::Wait => break,
                            A::Finish { slot, .. } => {
                                let took = out.opened.is_some() && claims::sender_took(&word, len);
                                assert!(pushed_seen || !took, "FIN before PUSHED");
                                out.finished += 1;
                                out.freed |= slot.is_some() && slot == out.opened;
                                break;
                            }
                            A::Restart { slot, .. } => {
                                out.restarted += 1;
                                out.freed |= slot.is_some() && slot == out.opened;
                                break;
                            }
                            other => panic!("a round gave {other:?}"),
                        }
                    }
                }
                2 => {
                    let Some(help) = s.as_mut() else { continue };
                    let mut a = help.handle(HelpEvent::Turn { chunk });
                    loop {
                        a = match a {
                            HelpAction::Claim { seq, chunk, .. } => {
                                help.handle(HelpEvent::claim(&word, seq, len, chunk))
                            }
                            HelpAction::Write { offset, bytes, to } => {
                                assert_eq!(to, ADDR + offset as u64);
                                writes += 1;
                                if refuse_write == Some(writes) {
                                    help.handle(HelpEvent::Refused)
                                } else {
                                    out.late_writes += usize::from(out.finished + out.restarted + out.failed > 0);
                                    cover(&mut out.copies, offset, bytes);
                                    help.handle(HelpEvent::Written)
                                }
                            }
                            HelpAction::Yield => break,
                            HelpAction::Done { pushed, .. } => {
                                if pushed {
                                    to_recv.push_back(Record::Pushed { redo: (0, 0) });
                                }
                                s = None;
                                break;
                            }
                            HelpAction::GiveBack { redo, .. } => {
                                to_recv.push_back(Record::Pushed { redo });
                                s = None;
                                break;
                            }
                            HelpAction::Closed { .. } => {
                                out.sender_closed = true;
                                s = None;
                                break;
                            }
                        }
                    }
                }
                3 => {
                    if !sender_alive {
                        to_recv.clear();
                    }
                    if let Some(Record::Share { slot, seq }) = to_sender.pop() {
                        s = Some(SharedSend::new(len, ADDR, 1, slot, seq));
                    } else if let Some(Record::Pushed { redo }) = to_recv.pop_front() {
                        if !ended {
                            assert_eq!(r.handle(E::Pushed { redo }), A::Accepted);
                            pushed_seen = true;
                            if repeat {
                                let again = r.handle(E::Pushed { redo });
                                assert_eq!(again, A::Violation(PushedViolation::NotAsked), "a repeated PUSHED");
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        panic!("no end after 200000 steps: {out:?}")
    }

    proptest::proptest! {
        /// Against the model (each byte copied once; the receive ends exactly once; the
        /// sender's failure fails it and frees the word; no write after the receive ended):
        /// any interleaving of the two ends, records delayed and repeated, refused reads and
        /// writes, the sender dying anywhere or failed there by the receiver while it lives.
        #[test]
        fn both_ends_against_the_model(
            pages in 1usize..40,
            tail in 0usize..PAGE,
            chunk_pages in 1usize..5,
            free_after in 0usize..4,
            schedule in proptest::collection::vec(0u8..4, 0..300),
            refuse_read in proptest::option::of(1usize..20),
            refuse_write in proptest::option::of(1usize..20),
            die in proptest::option::of(0usize..300),
            live in proptest::bool::ANY,
            repeat in proptest::bool::ANY,
        ) {
            let len = pages * PAGE + tail;
            let out = run(len, chunk_pages * PAGE, free_after, &schedule, refuse_read, refuse_write, die, live, repeat);
            proptest::prop_assert_eq!(out.finished + out.restarted + out.failed, 1, "{:?}", out);
            proptest::prop_assert!(out.copies.iter().all(|&c| c <= 1), "a byte copied twice");
            proptest::prop_assert_eq!(out.late_writes, 0, "the sender wrote after the receive ended");
            if out.finished == 1 {
                proptest::prop_assert!(out.copies.iter().all(|&c| c == 1), "a byte never copied");
            }
            if out.restarted == 1 {
                proptest::prop_assert!(refuse_read.is_some(), "restarted with no refusal");
            }
            if out.failed == 1 {
                proptest::prop_assert!(die.is_some());
            }
            if out.sender_closed {
                proptest::prop_assert!(live && die.is_some(), "a closed word the receiver did not close");
            }
            if out.opened.is_some() {
                proptest::prop_assert!(out.freed, "the claim word was not freed: {:?}", out);
            }
        }
    }
}

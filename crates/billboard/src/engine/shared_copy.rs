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
        }
    }
}

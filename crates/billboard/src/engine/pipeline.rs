//! The pipeline, sans IO: a rendezvous message in DATA records through the channel, chunk by
//! chunk, where no single copy can reach the sender's memory (another host, or the kernel
//! refused). Two plain machines, one per end; they hold offsets and counts, never a channel,
//! a buffer or a request table: the engine (`large.rs`) hands them events and does what they
//! return.
//!
//! ```text
//! sender (PipelineSend), made by the CTS that answers its RTS:
//!   Sending{offset} --Room{chunk}/Sent--> Data{offset, bytes <= chunk} (the driver sends it)
//!   Sending{offset} --Sent-------> offset += bytes, and the next Data
//!   Sending{offset} --Full-------> Wait (no room; the next progress round asks again)
//!   Sending{len}    --any--------> Complete
//! receiver (PipelineRecv), made when a receive matches an RTS it cannot copy from (CTS out):
//!   Receiving{received} --Data{offset = received, n, inside the message}--> Land{at, bytes}
//!                                                         (+ complete once received = len)
//!   Receiving{received} --Data{offset != received}--> Violation::OutOfOrder (a lost,
//!                                                     repeated or reordered chunk)
//!   Receiving{received} --Data{past the message}----> Violation::Outside
//! ```
//!
//! DATA records of one message travel in order (every route keeps a pair's records in order,
//! and the sender sends its chunks in order), so a chunk anywhere but at `received` is a
//! protocol violation, which fails the peer; it is never counted twice.

use std::fmt;

/// The sending end: the next chunk of a `len`-byte message for receive request `recv_req`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PipelineSend {
    len: usize,
    offset: usize,
    recv_req: u32,
    /// Bytes of one DATA record, as the last [`SendEvent::Room`] said (at least 1).
    chunk: u32,
}

/// What happened to the sending end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendEvent {
    /// A progress round: the channel may have room for DATA records of `chunk` bytes.
    Room { chunk: usize },
    /// The channel took the DATA record of the last [`SendAction::Data`].
    Sent,
    /// The channel had no room for it.
    Full,
}

/// What the sending end asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendAction {
    /// Send `bytes` bytes at `offset` of the message as a DATA record to `recv_req`.
    Data { offset: usize, bytes: usize, recv_req: u32 },
    /// Nothing until the next progress round.
    Wait,
    /// The whole message is out: the send is complete.
    Complete,
}

impl PipelineSend {
    pub fn new(len: usize, recv_req: u32) -> PipelineSend {
        PipelineSend { len, offset: 0, recv_req, chunk: 1 }
    }

    /// Bytes handed to the channel so far.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }

    #[inline]
    pub fn handle(&mut self, event: SendEvent) -> SendAction {
        match event {
            SendEvent::Room { chunk } => self.chunk = chunk.clamp(1, u32::MAX as usize) as u32,
            SendEvent::Sent => self.offset += self.next_bytes(),
            SendEvent::Full => return SendAction::Wait,
        }
        if self.offset == self.len {
            return SendAction::Complete;
        }
        SendAction::Data { offset: self.offset, bytes: self.next_bytes(), recv_req: self.recv_req }
    }

    #[inline]
    fn next_bytes(&self) -> usize {
        (self.chunk as usize).min(self.len - self.offset)
    }
}

/// The receiving end: `received` bytes of a `len`-byte message so far, into a buffer of `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PipelineRecv {
    cap: usize,
    len: usize,
    received: usize,
}

/// Where a DATA chunk lands: `bytes` of it at `at` in the receive buffer (fewer than the chunk,
/// or none, past the end of a short buffer), and whether the message is now whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Land {
    pub at: usize,
    pub bytes: usize,
    pub complete: bool,
}

/// A DATA record its sender cannot have sent if it kept the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Violation {
    /// Bytes past the end of the message (or an offset that overflows).
    Outside { offset: u64, bytes: usize, len: usize, received: usize },
    /// A chunk inside the message, but not the next one: lost, repeated or reordered.
    OutOfOrder { offset: u64, bytes: usize, len: usize, received: usize },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Violation::Outside { offset, bytes, len, received } => {
                write!(f, "DATA of {bytes} bytes at {offset} of a {len}-byte message ({received} received)")
            }
            Violation::OutOfOrder { offset, bytes, len, received } => write!(
                f,
                "DATA of {bytes} bytes at {offset} of a {len}-byte message, out of order ({received} received)"
            ),
        }
    }
}

impl PipelineRecv {
    pub fn new(cap: usize, len: usize) -> PipelineRecv {
        PipelineRecv { cap, len, received: 0 }
    }

    /// A DATA record of `bytes` bytes at `offset` of the message.
    #[inline]
    pub fn handle(&mut self, offset: u64, bytes: usize) -> Result<Land, Violation> {
        let (len, received) = (self.len, self.received);
        let end = offset.checked_add(bytes as u64).filter(|&e| e <= len as u64);
        if end.is_none() {
            return Err(Violation::Outside { offset, bytes, len, received });
        }
        if offset != received as u64 {
            return Err(Violation::OutOfOrder { offset, bytes, len, received });
        }
        let at = received;
        self.received += bytes;
        Ok(Land { at, bytes: bytes.min(self.cap.saturating_sub(at)), complete: self.received == len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a sender whose channel takes a record when `room` says so; returns the chunks sent.
    fn drive(send: &mut PipelineSend, chunk: usize, mut room: impl FnMut() -> bool) -> (Vec<(usize, usize)>, bool) {
        let mut out = Vec::new();
        let mut action = send.handle(SendEvent::Room { chunk });
        loop {
            match action {
                SendAction::Data { offset, bytes, recv_req } => {
                    assert_eq!(recv_req, 7);
                    if room() {
                        out.push((offset, bytes));
                        action = send.handle(SendEvent::Sent);
                    } else {
                        action = send.handle(SendEvent::Full);
                    }
                }
                SendAction::Wait => return (out, false),
                SendAction::Complete => return (out, true),
            }
        }
    }

    #[test]
    fn the_sender_sends_chunks_in_order_then_completes() {
        let mut s = PipelineSend::new(10, 7);
        let (chunks, done) = drive(&mut s, 4, || true);
        assert_eq!(chunks, [(0, 4), (4, 4), (8, 2)]);
        assert!(done);
        assert_eq!(s.handle(SendEvent::Room { chunk: 4 }), SendAction::Complete, "complete stays");
    }

    #[test]
    fn a_full_channel_waits_and_the_next_round_goes_on_where_it_stopped() {
        let mut s = PipelineSend::new(10, 7);
        let mut room = [true, false].into_iter();
        let (chunks, done) = drive(&mut s, 4, || room.next().unwrap_or(false));
        assert_eq!((chunks, done), (vec![(0, 4)], false));
        assert_eq!(s.offset(), 4, "the refused chunk is not counted");
        let (chunks, done) = drive(&mut s, 4, || true);
        assert_eq!((chunks, done), (vec![(4, 4), (8, 2)], true));
    }

    #[test]
    fn an_empty_message_or_a_zero_chunk_cannot_stall_the_sender() {
        assert_eq!(PipelineSend::new(0, 7).handle(SendEvent::Room { chunk: 4 }), SendAction::Complete);
        let mut s = PipelineSend::new(3, 7);
        assert_eq!(drive(&mut s, 0, || true), (vec![(0, 1), (1, 1), (2, 1)], true), "chunks of at least a byte");
    }

    #[test]
    fn the_receiver_lands_chunks_and_completes_at_the_length() {
        let mut r = PipelineRecv::new(10, 10);
        assert_eq!(r.handle(0, 4), Ok(Land { at: 0, bytes: 4, complete: false }));
        assert_eq!(r.handle(4, 6), Ok(Land { at: 4, bytes: 6, complete: true }));
    }

    #[test]
    fn a_short_buffer_takes_what_fits_and_the_message_still_completes() {
        let mut r = PipelineRecv::new(5, 10);
        assert_eq!(r.handle(0, 4), Ok(Land { at: 0, bytes: 4, complete: false }));
        assert_eq!(r.handle(4, 4), Ok(Land { at: 4, bytes: 1, complete: false }));
        assert_eq!(r.handle(8, 2), Ok(Land { at: 8, bytes: 0, complete: true }));
    }

    #[test]
    fn repeated_reordered_and_outside_chunks_are_violations() {
        let mut r = PipelineRecv::new(10, 10);
        r.handle(0, 4).unwrap();
        let repeated = r.handle(0, 4);
        assert_eq!(repeated, Err(Violation::OutOfOrder { offset: 0, bytes: 4, len: 10, received: 4 }));
        assert!(matches!(r.handle(8, 2), Err(Violation::OutOfOrder { .. })), "a gap");
        assert!(matches!(r.handle(4, 7), Err(Violation::Outside { .. })), "past the end");
        assert!(matches!(r.handle(u64::MAX, 2), Err(Violation::Outside { .. })), "overflow");
        assert_eq!(r.handle(4, 6), Ok(Land { at: 4, bytes: 6, complete: true }), "a violation changes nothing");
        let msg = Violation::Outside { offset: 90, bytes: 20, len: 100, received: 90 }.to_string();
        assert_eq!(msg, "DATA of 20 bytes at 90 of a 100-byte message (90 received)");
    }

    proptest::proptest! {
        /// Any delivery order of a message's chunks, with repeats, against the model: the
        /// receiver accepts exactly the chunks at the next offset, lands each byte once at its
        /// place (clipped to the buffer), and completes exactly when the last byte came.
        #[test]
        fn any_delivery_order_matches_the_model(
            len in 0usize..200,
            chunk in 1usize..64,
            cap in 0usize..220,
            order in proptest::collection::vec(0usize..8, 0..40),
        ) {
            let mut send = PipelineSend::new(len, 7);
            let (chunks, done) = drive(&mut send, chunk, || true);
            proptest::prop_assert!(done);
            let mut recv = PipelineRecv::new(cap, len);
            let mut buf = vec![false; cap];
            let mut next = 0; // the model: the index of the next chunk in order
            let mut complete = len == 0;
            for pick in order.into_iter().chain(0..chunks.len()) {
                let Some(&(offset, bytes)) = chunks.get(pick.min(chunks.len().saturating_sub(1))) else { break };
                let got = recv.handle(offset as u64, bytes);
                if next < chunks.len() && chunks[next].0 == offset {
                    let land = got.expect("the next chunk lands");
                    proptest::prop_assert_eq!(land.at, offset);
                    for b in &mut buf[land.at.min(cap)..(land.at + land.bytes).min(cap)] {
                        proptest::prop_assert!(!*b, "a byte landed twice");
                        *b = true;
                    }
                    next += 1;
                    proptest::prop_assert_eq!(land.complete, next == chunks.len());
                    complete |= land.complete;
                } else {
                    proptest::prop_assert!(got.is_err(), "chunk at {} after {} chunks", offset, next);
                }
            }
            proptest::prop_assert!(complete);
            proptest::prop_assert!(buf.iter().take(len).all(|&b| b), "every byte that fits landed");
        }
    }
}

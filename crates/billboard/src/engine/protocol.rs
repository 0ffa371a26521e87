//! Wire kinds of the engine's records and the choice of protocol by size.
//!
//! Every record is a [`Header`] plus a payload. The engine gives the header fields meaning:
//!
//! | kind  | direction | context / source / tag        | aux             | payload                       |
//! |-------|-----------|-------------------------------|-----------------|-------------------------------|
//! | EAGER | s → r     | match info                    | 0               | the message                   |
//! | RTS   | s → r     | match info                    | message bytes   | [`Rts`]: address, send request[, blocks] |
//! | FIN   | r → s     | -                             | send request    | - (receiver has read it all)  |
//! | CTS   | r → s     | -                             | send request    | receive request u32 (pipeline) |
//! | DATA  | s → r     | tag = receive request         | byte offset     | a chunk of the message        |
//! | SHARE | r → s     | -                             | send request    | [`Share`]: help copy from the back |
//! | PUSHED| s → r     | -                             | receive request | - , or pages (from, to) u32 × 2 it could not write |
//!
//! EAGER goes inline in the ring or through one data-part slot, whichever the channel picks.
//! RTS leads to a single copy by the receiver (`process_vm_readv`) and a FIN; where the kernel
//! refuses cross-memory attach, the receiver answers CTS and the sender pipelines DATA chunks
//! through its slots instead. A large contiguous message is a shared copy: the receiver asks
//! the sender with SHARE to copy from the back (`process_vm_writev`) while it reads from the
//! front, pages divided by a claim word (`claims.rs`); a sender that took any pages
//! says PUSHED when it has written them, and the receiver's FIN ends the send as before. A message sent from several blocks (a non-contiguous datatype)
//! travels without being packed: EAGER and DATA records are gathered from the blocks, and its
//! RTS names the sender's block list, which the receiver reads first, then the data with
//! remote I/O vectors.
//!
//! # The large-message paths as states and events
//!
//! Each end of a rendezvous is a request whose `State` (`request.rs`) is one of the
//! states below; an event is a record from the peer, a progress round (the request is in the
//! engine's `active` list), the outcome of a remote read or write, a cancel, or the peer's
//! failure. Each is a machine without I/O, driven by `large.rs`: the sender's answers in
//! `rendezvous.rs` (`answer(phase, event) -> step`), `pipeline.rs`, `single_copy.rs` and
//! `shared_copy.rs` (`handle(event) -> action`).
//!
//! ```text
//! SENDER                      event                          -> next state, and what goes out
//! SendQueued                  room in the ring               -> SendRendezvous; RTS
//! SendRendezvous              FIN                            -> Done
//!                             CTS(recv_req)                  -> SendPipeline (pipeline.rs)
//!                             SHARE (contiguous, claim word) -> SendShared (or stays, if our
//!                                                               writes were refused before)
//! SendPipeline                round: room / full             -> DATA chunks in order; Done
//!                                                               after the last one
//! SendShared                  round: a page range claimed    -> write it (process_vm_writev)
//!                             round: nothing left to claim   -> SendRendezvous; PUSHED if it
//!                                                               took any
//!                             write refused                  -> SendRendezvous; PUSHED(pages
//!                                                               given back); never helps again
//!                             CTS (the receiver restarted)   -> SendPipeline
//!
//! RECEIVER                    event                          -> next state, and what goes out
//! RecvPosted                  RTS matched (or a probe taken) -> RecvShared    (large,
//!                                                               contiguous, claim words)
//!                                                            -> RecvSingleCopy (single copy)
//!                                                            -> RecvPipeline; CTS (otherwise)
//!                                                            -> Done; FIN (0 bytes, no copy)
//!                             cancel                         -> Done, cancelled (only while
//!                                                               unmatched: a cancel racing
//!                                                               the RTS either wins here or
//!                                                               is refused; the CTS is
//!                                                               never taken back)
//! RecvSingleCopy              round                          -> block list, then a segment
//!                                                               (single_copy.rs); Done; FIN
//!                                                               after the last
//!                             read refused                   -> RecvPipeline; CTS (the whole
//!                                                               message again; later ones
//!                                                               from this peer pipeline)
//! RecvShared                  round, no claim word free      -> read a chunk alone from the
//!                                                               front
//!                             round, a word free             -> open it; SHARE
//!                             round, claimed from the front  -> read it
//!                             PUSHED(redo)                   -> read the pages given back
//!                             nothing left, PUSHED if taken  -> Done; FIN
//!                             read refused                   -> (after the sender's PUSHED)
//!                                                               RecvPipeline; CTS
//! RecvPipeline                DATA at the next offset        -> land it; Done after the last
//!
//! EITHER END, any state       the peer fails (route broken,  -> Done with PeerGone naming it
//!                             a record it cannot send, or a     (failure.rs); a RecvShared
//!                             copy finds its process gone:      frees its claim word; queued
//!                             ESRCH, never taken for a refusal) records to the peer are dropped
//! ```
//!
//! A record that names a request not in the state its row needs (a second FIN, a CTS to a
//! pipelining send, DATA out of order or past the message) fails its sender (`failure.rs`).

use crate::transport::Caps;
use crate::tunables::Tunable;

pub static EAGER_MAX: Tunable = Tunable::new(
    "BB_EAGER_MAX",
    64 << 10,
    "largest eager payload (inline in the ring up to its limit, then through a data-part slot, whose size also caps it); above it rendezvous + single copy. Measured 2026-11-25, 2 ranks, MPI ping-pong one-way, eager vs rendezvous: 16 KiB 0.49 vs 2.76 us (MPICH 3.24), 64 KiB 1.47 vs 4.33; window-64 bandwidth at 64 KiB 43 vs 11.4 GB/s; 4-rank ring on 2 cores, 64 KiB hop 2.9 vs 8.5 us",
);

pub static SINGLE_COPY: Tunable =
    Tunable::new("BB_SHM_SINGLE_COPY", 1, "0 forces the pipelined copy instead of process_vm_readv");
pub static CMA_SEGMENT: Tunable =
    Tunable::new("BB_SHM_CMA_SEGMENT", 1 << 20, "bytes copied by one process_vm_readv before other traffic is polled");
pub static SHARED_COPY: Tunable = Tunable::new(
    "BB_SHM_SHARED_COPY",
    64 << 10,
    "smallest single-copy message the sender helps copy (process_vm_writev from the back while the receiver reads from the front; measured 64 KiB one-way 3.35 -> 2.7 us, 1 MiB 60 -> 35 us); 0: never",
);
pub static SHARED_CHUNK: Tunable =
    Tunable::new("BB_SHM_SHARED_CHUNK", 64 << 10, "bytes one end of a shared copy claims and copies at a time");

pub(crate) const EAGER: u32 = 1;
pub(crate) const RTS: u32 = 2;
pub(crate) const FIN: u32 = 3;
pub(crate) const CTS: u32 = 4;
pub(crate) const DATA: u32 = 5;
pub(crate) const SHARE: u32 = 6;
pub(crate) const PUSHED: u32 = 7;
/// A communicator was revoked (`revoke.rs`); aux: its context pair's base.
pub(crate) const REVOKE: u32 = 8;

/// How a message of a given size travels; decided from the channel's capabilities at setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Eager,
    Rendezvous,
}

/// Size thresholds, fixed at setup.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    /// Largest eager message (at most one channel record).
    pub eager_max: usize,
    /// Bytes in one DATA chunk of the pipelined fallback.
    pub chunk: usize,
    /// One post can reach this peer and others at once (see `Engine::multicast`).
    pub multicast: bool,
}

impl Thresholds {
    pub fn from_caps(caps: &Caps) -> Thresholds {
        Thresholds {
            eager_max: caps.eager_max.unwrap_or_else(|| EAGER_MAX.get()).min(caps.max_record),
            chunk: caps.max_record,
            multicast: caps.multicast,
        }
    }

    #[inline]
    pub fn protocol(&self, bytes: usize) -> Protocol {
        if bytes <= self.eager_max {
            Protocol::Eager
        } else {
            Protocol::Rendezvous
        }
    }
}

/// The payload of an RTS: where the receiver may read the message from.
///
/// ```text
/// 0   addr      u64  the message (blocks = 0), or the sender's block list: `blocks` entries of
///                    (address u64, length u64) in the sender's memory, the message in order;
///                    0 to a peer whose route cannot read the sender's memory (TCP)
/// 8   send_req  u32  the sender's request, named by FIN and CTS
/// 12  blocks    u32  only in the 16-byte form (a gathered send); absent = 0
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rts {
    pub addr: u64,
    pub send_req: u32,
    pub blocks: u32,
}

impl Rts {
    pub const BYTES: usize = 12;
    /// The form of a gathered send, with the block count.
    pub const GATHER_BYTES: usize = 16;

    /// The record's payload: the first `n` bytes of the array (12, or 16 with blocks).
    pub fn encode(&self) -> ([u8; Self::GATHER_BYTES], usize) {
        let mut b = [0u8; Self::GATHER_BYTES];
        b[..8].copy_from_slice(&self.addr.to_ne_bytes());
        b[8..12].copy_from_slice(&self.send_req.to_ne_bytes());
        if self.blocks == 0 {
            return (b, Self::BYTES);
        }
        b[12..].copy_from_slice(&self.blocks.to_ne_bytes());
        (b, Self::GATHER_BYTES)
    }

    pub fn decode(b: &[u8]) -> Option<Rts> {
        let blocks = match b.len() {
            Self::BYTES => 0,
            Self::GATHER_BYTES => u32::from_ne_bytes(b[12..16].try_into().ok()?),
            _ => return None,
        };
        Some(Rts {
            addr: u64::from_ne_bytes(b[..8].try_into().ok()?),
            send_req: u32::from_ne_bytes(b[8..12].try_into().ok()?),
            blocks,
        })
    }
}

/// The payload of a SHARE: where the sender may write, and which claim word divides the pages.
///
/// ```text
/// 0   addr      u64  the receive buffer, in the receiver's memory
/// 8   recv_req  u32  the receiver's request, named by PUSHED
/// 12  slot      u16  the claim word (of the pair's `CLAIM_WORDS`)
/// 14  seq       u16  the message's sequence number in that word
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub addr: u64,
    pub recv_req: u32,
    pub slot: u16,
    pub seq: u16,
}

impl Share {
    pub const BYTES: usize = 16;

    pub fn encode(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..8].copy_from_slice(&self.addr.to_ne_bytes());
        b[8..12].copy_from_slice(&self.recv_req.to_ne_bytes());
        b[12..14].copy_from_slice(&self.slot.to_ne_bytes());
        b[14..].copy_from_slice(&self.seq.to_ne_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Share> {
        let b: &[u8; Self::BYTES] = b.try_into().ok()?;
        Some(Share {
            addr: u64::from_ne_bytes(b[..8].try_into().ok()?),
            recv_req: u32::from_ne_bytes(b[8..12].try_into().ok()?),
            slot: u16::from_ne_bytes(b[12..14].try_into().ok()?),
            seq: u16::from_ne_bytes(b[14..].try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_switches_above_the_eager_limit() {
        let caps = Caps {
            max_inline: 1000,
            max_record: 65536,
            single_copy: true,
            claim_words: 16,
            multicast: true,
            eager_max: None,
        };
        let t = Thresholds::from_caps(&caps);
        assert_eq!(t.protocol(0), Protocol::Eager);
        assert_eq!(t.protocol(t.eager_max), Protocol::Eager);
        assert_eq!(t.protocol(t.eager_max + 1), Protocol::Rendezvous);
        let small = Caps { max_record: 4096, ..caps };
        assert_eq!(Thresholds::from_caps(&small).eager_max, 4096, "never above one record");
    }

    proptest::proptest! {
        /// Eager exactly up to the smaller of the tunable and one channel record, never above.
        #[test]
        fn eager_never_exceeds_one_record(max_record in 1usize..1 << 24, bytes in 0usize..1 << 25) {
            let caps = Caps { max_inline: 0, max_record, single_copy: true, claim_words: 16, multicast: true, eager_max: None };
            let t = Thresholds::from_caps(&caps);
            let eager = t.protocol(bytes) == Protocol::Eager;
            proptest::prop_assert_eq!(eager, bytes <= EAGER_MAX.get().min(max_record));
            proptest::prop_assert!(t.chunk <= max_record);
        }
    }

    #[test]
    fn share_round_trips_and_rejects_wrong_lengths() {
        let s = Share { addr: 0x7f00_1234_5000, recv_req: 9, slot: 15, seq: 65535 };
        assert_eq!(Share::decode(&s.encode()), Some(s));
        assert_eq!(Share::decode(&[0; 15]), None);
        assert_eq!(Share::decode(&[0; 17]), None);
    }

    #[test]
    fn rts_round_trips_and_rejects_wrong_lengths() {
        let r = Rts { addr: 0xdead_beef_0000, send_req: 17, blocks: 0 };
        let (b, n) = r.encode();
        assert_eq!(n, Rts::BYTES, "a contiguous message keeps the 12-byte form");
        assert_eq!(Rts::decode(&b[..n]), Some(r));
        let g = Rts { blocks: 5000, ..r };
        let (b, n) = g.encode();
        assert_eq!(n, Rts::GATHER_BYTES);
        assert_eq!(Rts::decode(&b[..n]), Some(g));
        assert_eq!(Rts::decode(&b[..12]), Some(r), "the 12-byte form reads as no blocks");
        assert_eq!(Rts::decode(&[0; 11]), None);
        assert_eq!(Rts::decode(&[0; 13]), None);
        assert_eq!(Rts::decode(&[0; 17]), None);
    }
}

//! Single copy, sans IO: the receiver of a rendezvous message copies it straight out of the
//! sender's memory (`process_vm_readv`), a segment at a time so a huge copy never stalls other
//! traffic for long, reading a gathered send's block list first; when the kernel refuses, the
//! transfer restarts as a pipeline (`pipeline.rs`). The machine holds offsets and counts, never
//! a channel or a buffer: the engine (`large.rs`) does the reads it asks for and tells it how
//! they went.
//!
//! ```text
//! Listing (a gathered send)  --Turn--------------------> ReadList{addr, count}
//!                            --Listed{sum = total}-----> Reading{0}, and Read at once
//!                            --Listed{other sum}-------> Violation (fails the sender)
//! Reading{done}              --Turn--------------------> Read{offset: done, bytes <= segment}
//!                            --Read{bytes}-------------> done += bytes; Yield (one segment a
//!                                                        round), or Finish{send_req} at len:
//!                                                        FIN to the sender, receive complete
//! Listing / Reading          --Refused-----------------> Restart{send_req, len, total}: CTS, and
//!                                                        the message again by the pipeline
//! ```
//!
//! A peer that fails meanwhile completes the receive with its error wherever the machine is
//! (`failure.rs`; a read that finds its process gone fails it, never restarts); the sender's
//! FIN names a send request the sender's machine checks (`rendezvous.rs`).

/// A single copy of `len` bytes (of a `total`-byte message; the buffer may be shorter) from
/// `addr` in the sender's memory, `done` so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SingleCopy {
    /// The message, or with `unlisted` > 0 the sender's block list (see `protocol::Rts`).
    addr: u64,
    send_req: u32,
    /// Entries of the sender's block list still to read (0: contiguous, or read already).
    unlisted: u32,
    len: usize,
    total: usize,
    done: usize,
}

/// What happened, for the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyEvent {
    /// A progress round; one read copies at most `segment` bytes.
    Turn { segment: usize },
    /// The sender's block list was read; its lengths add up to `sum` (None: past usize).
    Listed { sum: Option<usize>, segment: usize },
    /// The last [`CopyAction::Read`] copied its bytes.
    Read { bytes: usize },
    /// The kernel refused the last read (of the list or of the data).
    Refused,
}

/// What the machine asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyAction {
    /// Read the sender's block list: `count` entries at `addr` in its memory.
    ReadList { addr: u64, count: u32 },
    /// Copy `bytes` bytes at `offset` of the message into the receive buffer at `offset`.
    Read { offset: usize, bytes: usize },
    /// Nothing more this round.
    Yield,
    /// All copied: send FIN for `send_req`; the receive is complete.
    Finish { send_req: u32 },
    /// The kernel refused: the receive (of `len` bytes of the `total`) starts over by the
    /// pipeline (CTS for `send_req`).
    Restart { send_req: u32, len: usize, total: usize },
    /// The sender's block list does not hold its message (`blocks` entries, `total` bytes).
    BadList { blocks: u32, total: usize },
}

impl SingleCopy {
    /// A copy of `len` bytes of a `total`-byte message offered by RTS `(addr, send_req, blocks)`.
    pub fn new(addr: u64, send_req: u32, blocks: u32, len: usize, total: usize) -> SingleCopy {
        debug_assert!(len <= total);
        SingleCopy { addr, send_req, unlisted: blocks, len, total, done: 0 }
    }

    /// Where the message lies in the sender's memory (contiguous sends only).
    #[inline]
    pub fn addr(&self) -> u64 {
        self.addr
    }

    #[inline]
    pub fn handle(&mut self, event: CopyEvent) -> CopyAction {
        let segment = match event {
            CopyEvent::Turn { .. } if self.unlisted > 0 => {
                return CopyAction::ReadList { addr: self.addr, count: self.unlisted }
            }
            CopyEvent::Turn { segment } => segment,
            CopyEvent::Listed { sum, segment } => {
                if sum != Some(self.total) {
                    return CopyAction::BadList { blocks: self.unlisted, total: self.total };
                }
                self.unlisted = 0;
                segment
            }
            CopyEvent::Read { bytes } => {
                debug_assert!(bytes <= self.len - self.done, "a read past the copy");
                self.done += bytes;
                return if self.done == self.len {
                    CopyAction::Finish { send_req: self.send_req }
                } else {
                    CopyAction::Yield
                };
            }
            CopyEvent::Refused => {
                return CopyAction::Restart { send_req: self.send_req, len: self.len, total: self.total }
            }
        };
        if self.done == self.len {
            // Nothing to copy (a buffer of no bytes): the match is all the sender waits for.
            return CopyAction::Finish { send_req: self.send_req };
        }
        CopyAction::Read { offset: self.done, bytes: segment.max(1).min(self.len - self.done) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the machine to its end with reads that succeed until `refuse_at` reads were done;
    /// returns the actions in order.
    fn run(mut copy: SingleCopy, segment: usize, list_sum: Option<usize>, refuse_at: usize) -> Vec<CopyAction> {
        let mut out = Vec::new();
        let mut reads = 0;
        for _round in 0..100_000 {
            let mut action = copy.handle(CopyEvent::Turn { segment });
            loop {
                out.push(action);
                action = match action {
                    CopyAction::ReadList { .. } if reads == refuse_at => copy.handle(CopyEvent::Refused),
                    CopyAction::ReadList { .. } => {
                        reads += 1;
                        copy.handle(CopyEvent::Listed { sum: list_sum, segment })
                    }
                    CopyAction::Read { .. } if reads == refuse_at => copy.handle(CopyEvent::Refused),
                    CopyAction::Read { bytes, .. } => {
                        reads += 1;
                        copy.handle(CopyEvent::Read { bytes })
                    }
                    CopyAction::Yield => break,
                    _ => return out,
                };
            }
        }
        panic!("no end after 100000 rounds: {out:?}")
    }

    #[test]
    fn a_contiguous_copy_reads_a_segment_a_round_then_finishes() {
        let out = run(SingleCopy::new(0x1000, 9, 0, 10, 10), 4, None, usize::MAX);
        use CopyAction::*;
        let read = |offset, bytes| Read { offset, bytes };
        assert_eq!(out, [read(0, 4), Yield, read(4, 4), Yield, read(8, 2), Finish { send_req: 9 }]);
    }

    #[test]
    fn a_gathered_copy_reads_the_list_first_and_checks_it() {
        use CopyAction::*;
        let out = run(SingleCopy::new(0x2000, 9, 3, 10, 10), 16, Some(10), usize::MAX);
        assert_eq!(out, [ReadList { addr: 0x2000, count: 3 }, Read { offset: 0, bytes: 10 }, Finish { send_req: 9 }]);
        let out = run(SingleCopy::new(0x2000, 9, 3, 10, 10), 16, Some(11), usize::MAX);
        assert_eq!(out, [ReadList { addr: 0x2000, count: 3 }, BadList { blocks: 3, total: 10 }]);
        let out = run(SingleCopy::new(0x2000, 9, 3, 10, 10), 16, None, usize::MAX);
        assert_eq!(out[1], BadList { blocks: 3, total: 10 }, "lengths that overflow");
    }

    #[test]
    fn a_refusal_anywhere_restarts_the_whole_message_by_the_pipeline() {
        use CopyAction::*;
        // A short buffer: 6 of 10 bytes copied, but the pipeline carries all 10 again.
        for refuse_at in 0..3 {
            let out = run(SingleCopy::new(0x1000, 9, 0, 6, 10), 2, None, refuse_at);
            assert_eq!(out.last(), Some(&Restart { send_req: 9, len: 6, total: 10 }), "refused at read {refuse_at}");
            assert!(!out.contains(&Finish { send_req: 9 }));
        }
        let out = run(SingleCopy::new(0x2000, 9, 2, 6, 10), 2, Some(10), 0);
        assert_eq!(
            out,
            [ReadList { addr: 0x2000, count: 2 }, Restart { send_req: 9, len: 6, total: 10 }],
            "refused list"
        );
    }

    #[test]
    fn a_copy_of_nothing_finishes_without_a_read() {
        assert_eq!(run(SingleCopy::new(0x1000, 4, 0, 0, 100), 8, None, 0), [CopyAction::Finish { send_req: 4 }]);
    }

    proptest::proptest! {
        /// Against the model (the message read once, front to back, in segments): every byte
        /// of the copy is read exactly once, in order, at most `segment` a round, and the FIN
        /// comes once, last.
        #[test]
        fn reads_cover_the_copy_once_in_order(len in 0usize..5000, extra in 0usize..100, segment in 0usize..700, blocks in 0u32..3) {
            let out = run(SingleCopy::new(0x1000, 1, blocks, len, len + extra), segment, Some(len + extra), usize::MAX);
            let mut next = 0;
            let mut rounds = 0;
            for (i, a) in out.iter().enumerate() {
                match *a {
                    CopyAction::Read { offset, bytes } => {
                        proptest::prop_assert_eq!(offset, next);
                        proptest::prop_assert!(bytes >= 1 && bytes <= segment.max(1));
                        next += bytes;
                    }
                    CopyAction::Yield => rounds += 1,
                    CopyAction::Finish { send_req } => {
                        proptest::prop_assert_eq!((send_req, i), (1, out.len() - 1));
                    }
                    CopyAction::ReadList { count, .. } => proptest::prop_assert_eq!((count, i), (blocks, 0)),
                    other => proptest::prop_assert!(false, "unexpected {:?}", other),
                }
            }
            proptest::prop_assert_eq!(next, len);
            proptest::prop_assert_eq!(rounds, len.div_ceil(segment.max(1)).saturating_sub(1));
        }
    }
}

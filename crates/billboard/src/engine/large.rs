//! The engine's side of the large-message machines (`pipeline.rs`, `single_copy.rs`,
//! `shared_copy.rs`, `rendezvous.rs`): it hands each machine its events (a progress round, a
//! record, how a send, a claim, a read or a write went) and does what the machine returns with
//! the channel, the claim words and the request's buffers. The protocols' decisions live in the
//! machines; what is here is I/O and bookkeeping.

use super::*;
use crate::engine::pipeline::{PipelineRecv, PipelineSend, SendAction, SendEvent};
use crate::engine::rendezvous::{answer, Answer, Phase, Step};
use crate::engine::shared_copy::{HelpAction, HelpEvent, RecvAction, RecvEvent, SharedSend};
use crate::engine::single_copy::{CopyAction, CopyEvent};

impl<C: Channel> Engine<C> {
    /// Pushes as many DATA chunks as the sender's free slots allow.
    pub(super) fn advance_pipeline(&mut self, id: ReqId) -> bool {
        let State::SendPipeline { peer, buf, mut cursor, mut pipe } = self.core.reqs.get(id).state else {
            return false;
        };
        let start = pipe.offset();
        let mut action = pipe.handle(SendEvent::Room { chunk: self.thresholds[peer].chunk });
        while let SendAction::Data { offset, bytes, recv_req } = action {
            let header = Header { kind: DATA, context: 0, source: 0, tag: recv_req as i32, aux: offset as u64 };
            let sent = match &self.core.reqs.get(id).gather {
                Some(blocks) => {
                    let chan = &mut self.chan;
                    let (from, at) = cursor.seek(blocks, offset);
                    // SAFETY: the send request keeps its blocks alive and unchanged until it completes.
                    unsafe { self.pieces.with(from, at, bytes, |p| chan.try_send_gather(peer, &header, p)) }
                }
                None => {
                    // SAFETY: the send request keeps `buf` alive and unchanged until it completes.
                    let chunk = unsafe { std::slice::from_raw_parts(buf.add(offset), bytes) };
                    self.chan.try_send(peer, &header, chunk)
                }
            };
            action = pipe.handle(if sent.is_ok() { SendEvent::Sent } else { SendEvent::Full });
        }
        if action == SendAction::Complete {
            self.core.reqs.complete(id);
        } else {
            self.core.reqs.get_mut(id).state = State::SendPipeline { peer, buf, cursor, pipe };
        }
        pipe.offset() > start
    }

    /// Copies one segment of a rendezvous message straight from the sender's memory, so a huge
    /// copy never stalls other traffic for long. Falls back to the pipeline if the kernel refuses.
    pub(super) fn advance_single_copy(&mut self, id: ReqId) -> bool {
        let State::RecvSingleCopy { peer, buf, mut copy } = self.core.reqs.get(id).state else {
            return false;
        };
        let segment = self.core.cma_segment;
        let mut action = copy.handle(CopyEvent::Turn { segment });
        loop {
            action = match action {
                CopyAction::ReadList { addr, count } => match self.read_block_list(peer, addr, count) {
                    Ok(list) => {
                        self.core.copied[peer] = true;
                        let sum = list.iter().try_fold(0usize, |sum, b| sum.checked_add(b.1));
                        self.core.reqs.get_mut(id).gather = Some(list);
                        copy.handle(CopyEvent::Listed { sum, segment })
                    }
                    Err(e) => break self.copy_refused(id, peer, buf, copy.handle(CopyEvent::Refused), e),
                },
                CopyAction::Read { offset, bytes } => {
                    match self.read_segment(id, peer, buf, copy.addr(), offset, bytes) {
                        Ok(()) => {
                            self.core.copied[peer] = true;
                            copy.handle(CopyEvent::Read { bytes })
                        }
                        Err(e) => break self.copy_refused(id, peer, buf, copy.handle(CopyEvent::Refused), e),
                    }
                }
                CopyAction::Yield => {
                    self.core.reqs.get_mut(id).state = State::RecvSingleCopy { peer, buf, copy };
                    break;
                }
                CopyAction::Finish { send_req } => {
                    self.core.send_control(peer, FIN, send_req as u64, &[]);
                    self.core.reqs.complete(id);
                    break;
                }
                CopyAction::BadList { blocks, total } => {
                    self.core.reqs.get_mut(id).gather = None;
                    self.core
                        .malformed(peer, format_args!("an RTS whose {blocks} blocks do not hold its {total} bytes"));
                    break;
                }
                CopyAction::Restart { .. } => unreachable!("a restart is acted on where the read was refused"),
            }
        }
        true
    }

    /// Copies `bytes` bytes at `offset` of receive `id`'s message from `peer`: from `addr` in
    /// its memory, or through the sender's block list (`gather`) and the receive's `scatter`.
    fn read_segment(
        &mut self,
        id: ReqId,
        peer: usize,
        buf: *mut u8,
        addr: u64,
        offset: usize,
        bytes: usize,
    ) -> std::io::Result<()> {
        let req = self.core.reqs.get(id);
        if let Some(remote) = &req.gather {
            let mut remote = iovecs(remote, offset, bytes);
            let mut local = match &req.scatter {
                Some(blocks) => iovecs(blocks, offset, bytes),
                None => vec![libc::iovec { iov_base: buf.wrapping_add(offset).cast(), iov_len: bytes }],
            };
            return self.chan.read_remote_iov(peer, &mut local, &mut remote);
        }
        match &req.scatter {
            Some(blocks) => {
                let from = addr.wrapping_add(offset as u64) as *mut libc::c_void;
                let mut remote = [libc::iovec { iov_base: from, iov_len: bytes }];
                self.chan.read_remote_iov(peer, &mut iovecs(blocks, offset, bytes), &mut remote)
            }
            None => {
                // SAFETY: the posted receive buffer holds at least the copy's bytes (capped at match).
                let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(offset), bytes) };
                self.chan.read_remote(peer, addr.wrapping_add(offset as u64), dst)
            }
        }
    }

    /// The sender's block list (`count` entries at `addr` in its memory), for a gathered copy.
    pub(super) fn read_block_list(&self, peer: usize, addr: u64, count: u32) -> std::io::Result<Box<[Block]>> {
        // At most one block per byte of the message (checked at the RTS), which the sender
        // holds itself; still, memory this process lacks is a refusal, not an abort.
        let mut list = Vec::new();
        list.try_reserve_exact(count as usize).map_err(std::io::Error::other)?;
        list.resize(count as usize, (std::ptr::null_mut(), 0));
        let mut list: Box<[Block]> = list.into_boxed_slice();
        let bytes = std::mem::size_of_val(&*list);
        // SAFETY: a Block is two plain words (layout pinned in scatter.rs): any bytes make one.
        let dst = unsafe { std::slice::from_raw_parts_mut(list.as_mut_ptr().cast::<u8>(), bytes) };
        self.chan.read_remote(peer, addr, dst)?;
        Ok(list)
    }

    /// The kernel refused to read `peer`'s memory for receive `id` (into `buf`), and its copy
    /// machine said `restart`; or `peer`'s process is gone, which fails it instead.
    fn copy_refused(&mut self, id: ReqId, peer: usize, buf: *mut u8, restart: CopyAction, e: std::io::Error) {
        if self.core.gone(peer, &e) {
            return;
        }
        let CopyAction::Restart { send_req, len, total } = restart else {
            unreachable!("a refused read of request {id} gave {restart:?}, not a restart")
        };
        self.restart_by_pipeline(id, peer, send_req, buf, len, total, e);
    }

    /// Receive `id` (`cap` bytes at `buf` of a `total`-byte message) starts over by the
    /// pipeline because the kernel refused to read `peer`'s memory; so will later messages.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn restart_by_pipeline(
        &mut self,
        id: ReqId,
        peer: usize,
        send_req: u32,
        buf: *mut u8,
        cap: usize,
        total: usize,
        e: std::io::Error,
    ) {
        verbose(format_args!(
            "single copy from rank {peer} refused ({e}); using the pipelined copy through shared memory from now on"
        ));
        self.core.single_copy[peer] = false;
        let req = self.core.reqs.get_mut(id);
        req.gather = None;
        let pipe = PipelineRecv::new(cap, total);
        req.state = State::RecvPipeline { buf, cursor: Cursor::default(), pipe };
        self.core.send_control(peer, CTS, send_req as u64, &id.to_ne_bytes());
    }
}

impl<C: Channel> Engine<C> {
    /// The receiver's end of a shared copy, one step a round (`shared_copy.rs`): a chunk read
    /// alone, a claim word opened and SHARE sent, a chunk claimed and read from the front,
    /// pages given back read; FIN (or CTS after a refused read) at the end.
    pub(super) fn advance_shared_recv(&mut self, id: ReqId) -> bool {
        let State::RecvShared { peer, buf, mut copy } = self.core.reqs.get(id).state else {
            return false;
        };
        let len = copy.len();
        let busy = self.core.claims_busy[peer];
        let free = (busy.count_ones() < self.core.claim_words[peer]).then(|| (!busy).trailing_zeros() as u16);
        let mut refusal = None;
        let mut action = copy.handle(RecvEvent::Turn { free, chunk: self.core.shared_chunk(len) });
        let progressed = loop {
            action = match action {
                RecvAction::Open { slot, copied } => {
                    self.core.claims_busy[peer] |= 1 << slot;
                    let seq = claims::open(self.chan.claim_word(peer, true, slot as usize), len, copied);
                    copy.handle(RecvEvent::Opened { seq })
                }
                RecvAction::Share { slot, seq } => {
                    let share = Share { addr: buf as u64, recv_req: id, slot, seq };
                    self.core.send_control(peer, SHARE, copy.send_req() as u64, &share.encode());
                    break true;
                }
                RecvAction::Claim { slot, seq, chunk } => {
                    let word = self.chan.claim_word(peer, true, slot as usize);
                    let range = claims::take(word, seq, len, End::Front, chunk);
                    copy.handle(RecvEvent::Claimed { range: range.map(|r| (r.start, r.end)) })
                }
                RecvAction::Seal { slot, seq } => {
                    let word = self.chan.claim_word(peer, true, slot as usize);
                    while claims::take(word, seq, len, End::Front, claims::MAX_BYTES).is_some() {}
                    break true;
                }
                RecvAction::AskSenderTook { slot } => {
                    let took = claims::sender_took(self.chan.claim_word(peer, true, slot as usize), len);
                    copy.handle(RecvEvent::SenderTook { took })
                }
                RecvAction::Read { addr, offset, bytes } => {
                    // SAFETY: the posted buffer holds `len` bytes; the machine hands each range
                    // to one reader (read alone, claimed, or given back by the sender).
                    let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(offset), bytes) };
                    match self.chan.read_remote(peer, addr, dst) {
                        Ok(()) => {
                            self.core.copied[peer] = true;
                            copy.handle(RecvEvent::Read { bytes })
                        }
                        Err(e) if self.core.gone(peer, &e) => return true,
                        Err(e) => {
                            verbose(format_args!("shared copy from rank {peer}: read refused ({e})"));
                            refusal = Some(e);
                            copy.handle(RecvEvent::Refused)
                        }
                    }
                }
                RecvAction::Yield => break true,
                RecvAction::Wait => break false,
                RecvAction::Finish { send_req, slot } => {
                    self.core.free_claim(peer, slot);
                    self.core.send_control(peer, FIN, send_req as u64, &[]);
                    self.core.reqs.complete(id);
                    return true;
                }
                RecvAction::Restart { send_req, len, slot } => {
                    self.core.free_claim(peer, slot);
                    let e = refusal
                        .unwrap_or_else(|| std::io::Error::other("process_vm_readv failed during a shared copy"));
                    self.restart_by_pipeline(id, peer, send_req, buf, len, len, e);
                    return true;
                }
                other @ (RecvAction::Accepted | RecvAction::Violation(_) | RecvAction::Failed { .. }) => {
                    unreachable!("a progress round of shared copy {id} gave {other:?}")
                }
            };
        };
        if let State::RecvShared { copy: c, .. } = &mut self.core.reqs.get_mut(id).state {
            *c = copy;
        }
        progressed
    }

    /// The sender's end of a shared copy, one chunk a round (`shared_copy.rs`): writes a chunk
    /// claimed from the back into the receiver's buffer; once nothing is free, PUSHED (if it
    /// took any) and back to waiting for FIN. A refused write gives its pages back in PUSHED,
    /// and this rank stops helping `peer`. A word the receiver closed (it failed this rank)
    /// fails `peer` here: no FIN will come.
    pub(super) fn advance_shared_send(&mut self, id: ReqId) -> bool {
        let State::SendShared { peer, buf, mut help } = self.core.reqs.get(id).state else {
            return false;
        };
        let len = help.len();
        let mut action = help.handle(HelpEvent::Turn { chunk: self.core.shared_chunk(len) });
        loop {
            action = match action {
                HelpAction::Claim { slot, seq, chunk } => {
                    help.handle(HelpEvent::claim(self.chan.claim_word(peer, false, slot as usize), seq, len, chunk))
                }
                HelpAction::Write { offset, bytes, to } => {
                    // SAFETY: the send request keeps `buf` (`len` bytes) alive and unchanged until it completes.
                    let src = unsafe { std::slice::from_raw_parts(buf.add(offset), bytes) };
                    match self.chan.write_remote(peer, to, src) {
                        Ok(()) => {
                            self.core.copied[peer] = true;
                            help.handle(HelpEvent::Written)
                        }
                        Err(e) if self.core.gone(peer, &e) => return true,
                        Err(e) => {
                            verbose(format_args!(
                                "shared copy to rank {peer} refused ({e}); it copies alone from now on"
                            ));
                            help.handle(HelpEvent::Refused)
                        }
                    }
                }
                HelpAction::Yield => {
                    self.core.reqs.get_mut(id).state = State::SendShared { peer, buf, help };
                    return true;
                }
                HelpAction::Done { recv_req, pushed } => {
                    if pushed {
                        self.core.send_control(peer, PUSHED, recv_req as u64, &[]);
                    }
                    self.core.reqs.get_mut(id).state = State::SendRendezvous { buf, len };
                    return pushed;
                }
                HelpAction::GiveBack { recv_req, redo } => {
                    self.core.push_refused[peer] = true;
                    let mut pages = [0u8; 8];
                    pages[..4].copy_from_slice(&redo.0.to_ne_bytes());
                    pages[4..].copy_from_slice(&redo.1.to_ne_bytes());
                    self.core.send_control(peer, PUSHED, recv_req as u64, &pages);
                    self.core.reqs.get_mut(id).state = State::SendRendezvous { buf, len };
                    return true;
                }
                HelpAction::Closed { recv_req } => {
                    let why = format!("it closed the shared copy of its receive {recv_req}: it failed this rank");
                    self.core.fail_peer(peer, why);
                    self.close_peer(peer);
                    return true;
                }
            };
        }
    }
}

impl Core {
    /// A chunk of a pipelined message.
    pub(super) fn on_data(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let id = h.tag as u32 as u64;
        let Some(id) = self.receive_from(peer, id, |s| matches!(s, State::RecvPipeline { .. })) else {
            return self.malformed(peer, format_args!("DATA for request {id}, no pipelined receive from it"));
        };
        let req = self.reqs.get_mut(id);
        let State::RecvPipeline { buf, cursor, pipe } = &mut req.state else {
            unreachable!("receive_from checked the state")
        };
        let land = match pipe.handle(h.aux, payload.len()) {
            Ok(land) => land,
            Err(violation) => return self.malformed(peer, format_args!("{violation}")),
        };
        if land.bytes > 0 {
            let data = &payload[..land.bytes];
            match &req.scatter {
                Some(blocks) => {
                    let (from, at) = cursor.seek(blocks, land.at);
                    // SAFETY: the blocks hold the receive's capacity; the machine kept the chunk inside it.
                    unsafe { copy_into(from, at, data) }
                }
                // SAFETY: the posted buffer holds the receive's capacity; the machine kept the chunk inside it.
                None => unsafe { crate::copy::copy_bulk(data.as_ptr(), buf.add(land.at), data.len()) },
            }
        }
        if land.complete {
            req.state = State::Done;
        }
    }
}

impl Core {
    /// The send request a FIN, CTS or SHARE from `peer` names (`aux`), if it is one of ours to
    /// `peer`, with where its rendezvous stands.
    #[inline]
    pub(super) fn rendezvous_send(&mut self, peer: usize, aux: u64) -> Option<(ReqId, Phase)> {
        let req = self.reqs.lookup_mut(aux)?;
        let phase = req.state.send_phase()?;
        (req.hint == Some(peer)).then_some((aux as ReqId, phase))
    }

    /// The receiver has read the whole message.
    pub(super) fn on_fin(&mut self, peer: usize, h: &Header) {
        let Some((id, phase)) = self.rendezvous_send(peer, h.aux) else {
            return self.malformed(peer, format_args!("FIN for request {}, no rendezvous send to it", h.aux));
        };
        match answer(phase, Answer::Fin) {
            Step::Complete => self.reqs.complete(id),
            Step::Violation(why) => self.malformed(peer, format_args!("FIN for request {}: {why}", h.aux)),
            other => unreachable!("a FIN gave {other:?}"),
        }
    }

    /// The receiver cannot read our memory: the send goes on by the pipeline.
    pub(super) fn on_cts(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let (Some((id, phase)), Ok(recv_req)) = (self.rendezvous_send(peer, h.aux), <[u8; 4]>::try_from(payload))
        else {
            return self.malformed(
                peer,
                format_args!("CTS of {} payload bytes for request {}, no rendezvous send to it", payload.len(), h.aux),
            );
        };
        let activate = match answer(phase, Answer::Cts) {
            Step::Pipeline { activate } => activate,
            Step::Violation(why) => {
                return self.malformed(peer, format_args!("CTS of 4 payload bytes for request {}: {why}", h.aux))
            }
            other => unreachable!("a CTS gave {other:?}"),
        };
        let req = self.reqs.get_mut(id);
        // A receiver whose shared copy failed may answer CTS before this rank has looked at
        // the SHARE before it (and so took nothing): that send is active already.
        let (buf, len) = match req.state {
            State::SendShared { buf, help, .. } => (buf, help.len()),
            State::SendRendezvous { buf, len } => (buf, len),
            _ => unreachable!("the machine pipelines only a waiting or helping send"),
        };
        let pipe = PipelineSend::new(len, u32::from_ne_bytes(recv_req));
        req.state = State::SendPipeline { peer, buf, cursor: Cursor::default(), pipe };
        if activate {
            self.active.push(id);
        }
    }

    /// The receiver asks us to copy from the back of a large message into its buffer.
    pub(super) fn on_share(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let words = self.claim_words[peer];
        let (Some((id, phase)), Some(share)) = (self.rendezvous_send(peer, h.aux), Share::decode(payload)) else {
            return self.malformed(
                peer,
                format_args!(
                    "SHARE of {} payload bytes for request {}, no rendezvous send to it",
                    payload.len(),
                    h.aux
                ),
            );
        };
        let event = Answer::Share { slot_ok: u32::from(share.slot) < words, may_write: !self.push_refused[peer] };
        match answer(phase, event) {
            Step::Help => {
                let req = self.reqs.get_mut(id);
                let State::SendRendezvous { buf, len } = req.state else {
                    unreachable!("the machine helps only a waiting send")
                };
                let Share { addr, recv_req, slot, seq } = share;
                req.state = State::SendShared { peer, buf, help: SharedSend::new(len, addr, recv_req, slot, seq) };
                self.active.push(id);
            }
            // A sender whose writes the kernel refused leaves the copy to the receiver.
            Step::Decline => {}
            Step::Violation(why) => self.malformed(
                peer,
                format_args!("SHARE for request {} naming claim word {} of {words}: {why}", h.aux, share.slot),
            ),
            other => unreachable!("a SHARE gave {other:?}"),
        }
    }

    /// The sender of a shared copy has written the pages it took (and names those it could not).
    pub(super) fn on_pushed(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let id = self.receive_from(peer, h.aux, |s| matches!(s, State::RecvShared { .. }));
        let redo = match payload.len() {
            0 => Some((0, 0)),
            8 => Some((
                u32::from_ne_bytes(payload[..4].try_into().unwrap()),
                u32::from_ne_bytes(payload[4..].try_into().unwrap()),
            )),
            _ => None,
        };
        let Some((id, redo)) = id.zip(redo) else {
            return self.malformed(
                peer,
                format_args!("PUSHED of {} payload bytes for request {}, no shared copy from it", payload.len(), h.aux),
            );
        };
        let State::RecvShared { copy, .. } = &mut self.reqs.get_mut(id).state else {
            unreachable!("receive_from checked the state")
        };
        match copy.handle(RecvEvent::Pushed { redo }) {
            RecvAction::Accepted => {}
            RecvAction::Violation(v) => self.malformed(peer, format_args!("{v} (request {})", h.aux)),
            other => unreachable!("a PUSHED gave {other:?}"),
        }
    }

    /// Claim word `slot` of `peer`'s (if any) is free for another shared copy.
    pub(super) fn free_claim(&mut self, peer: usize, slot: Option<u16>) {
        if let Some(k) = slot {
            self.claims_busy[peer] &= !(1 << k);
        }
    }

    /// Bytes one end of a shared copy of `len` bytes claims at a time: the tunable, or half the
    /// message if that is less (whole pages), so both ends start at once on a small one.
    pub(super) fn shared_chunk(&self, len: usize) -> usize {
        self.shared_chunk.min((len / 2).next_multiple_of(claims::PAGE)).max(claims::PAGE)
    }
}

//! The engine's side of the large-message machines (`pipeline.rs`, `single_copy.rs`): it hands
//! each machine its events (a progress round, a DATA record, how a send or a read went) and
//! does what the machine returns with the channel and the request's buffers. The protocols'
//! decisions live in the machines; what is here is I/O and bookkeeping.

use super::*;
use crate::engine::pipeline::{PipelineRecv, SendAction, SendEvent};
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
                        let sum = list.iter().try_fold(0usize, |sum, b| sum.checked_add(b.1));
                        self.core.reqs.get_mut(id).gather = Some(list);
                        copy.handle(CopyEvent::Listed { sum, segment })
                    }
                    Err(e) => break self.copy_refused(id, peer, buf, copy.handle(CopyEvent::Refused), e),
                },
                CopyAction::Read { offset, bytes } => {
                    match self.read_segment(id, peer, buf, copy.addr(), offset, bytes) {
                        Ok(()) => copy.handle(CopyEvent::Read { bytes }),
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
    /// machine said `restart`.
    fn copy_refused(&mut self, id: ReqId, peer: usize, buf: *mut u8, restart: CopyAction, e: std::io::Error) {
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

//! The pipeline: a rendezvous message in DATA records through the channel, chunk by chunk, where
//! no single copy can reach the sender's memory (another host, or the kernel refused).

use super::*;

impl<C: Channel> Engine<C> {
    /// Pushes as many DATA chunks as the sender's free slots allow.
    pub(super) fn advance_pipeline(&mut self, id: ReqId) -> bool {
        let State::SendPipeline { peer, buf, len, mut offset, recv_req, mut cursor } = self.core.reqs.get(id).state
        else {
            return false;
        };
        let start = offset;
        while offset < len {
            let n = self.thresholds[peer].chunk.min(len - offset);
            let header = Header { kind: DATA, context: 0, source: 0, tag: recv_req as i32, aux: offset as u64 };
            let sent = match &self.core.reqs.get(id).gather {
                Some(blocks) => {
                    let chan = &mut self.chan;
                    let (from, at) = cursor.seek(blocks, offset);
                    // SAFETY: the send request keeps its blocks alive and unchanged until it completes.
                    unsafe { self.pieces.with(from, at, n, |p| chan.try_send_gather(peer, &header, p)) }
                }
                None => {
                    // SAFETY: the send request keeps `buf` alive and unchanged until it completes.
                    let chunk = unsafe { std::slice::from_raw_parts(buf.add(offset), n) };
                    self.chan.try_send(peer, &header, chunk)
                }
            };
            if sent.is_err() {
                break;
            }
            offset += n;
        }
        if offset == len {
            self.core.reqs.complete(id);
        } else if let State::SendPipeline { offset: o, cursor: c, .. } = &mut self.core.reqs.get_mut(id).state {
            *o = offset;
            *c = cursor;
        }
        offset > start
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
        let State::RecvPipeline { buf, cap, len, received, cursor } = &mut req.state else {
            unreachable!("receive_from checked the state")
        };
        let offset = h.aux;
        let end = offset.checked_add(payload.len() as u64).filter(|&e| e <= *len as u64);
        if end.is_none() || *received + payload.len() > *len {
            let (len, received) = (*len, *received);
            return self.malformed(
                peer,
                format_args!(
                    "DATA of {} bytes at {offset} of a {len}-byte message ({received} received)",
                    payload.len()
                ),
            );
        }
        let offset = offset as usize;
        if offset < *cap {
            let n = payload.len().min(*cap - offset);
            match &req.scatter {
                Some(blocks) => {
                    let (from, at) = cursor.seek(blocks, offset);
                    // SAFETY: the blocks hold `cap` bytes; offset + n <= cap.
                    unsafe { copy_into(from, at, &payload[..n]) }
                }
                // SAFETY: the posted buffer holds `cap` bytes; offset + n <= cap.
                None => unsafe { crate::copy::copy_bulk(payload.as_ptr(), buf.add(offset), n) },
            }
        }
        *received += payload.len();
        if *received >= *len {
            req.state = State::Done;
        }
    }
}

//! Shared copy: both ends of a large rendezvous copy at once, the receiver reading pages from the
//! front while the sender writes pages from the back into the receiver's buffer, dividing them
//! through a claim word (`transport/shm/claims.rs`); the records SHARE (the receiver asks) and
//! PUSHED (the sender says what it wrote).

use super::*;

impl<C: Channel> Engine<C> {
    /// The receiver's end of a shared copy, one chunk per call: reads alone from the front
    /// until one of the peer's claim words is free, then opens it and asks the sender (SHARE),
    /// and reads what it claims from the front; once nothing is free and the sender has
    /// written what it took, FIN.
    pub(super) fn advance_shared_recv(&mut self, id: ReqId) -> bool {
        let State::RecvShared {
            peer,
            addr,
            buf,
            len,
            send_req,
            mut alone,
            mut slot,
            mut seq,
            mut front_done,
            pushed,
            mut refused,
            mut redo,
        } = self.core.reqs.get(id).state
        else {
            return false;
        };
        let chunk = self.core.shared_chunk(len);
        let busy = self.core.claims_busy[peer];
        if slot == NO_SLOT && busy.count_ones() < self.core.claim_words[peer] {
            slot = (!busy).trailing_zeros() as u16;
            self.core.claims_busy[peer] |= 1 << slot;
            let copied = alone as usize * claims::PAGE;
            seq = claims::open(self.chan.claim_word(peer, true, slot as usize), len, copied);
            let share = Share { addr: buf as u64, recv_req: id, slot, seq };
            self.core.send_control(peer, SHARE, send_req as u64, &share.encode());
        } else if slot == NO_SLOT {
            let at = alone as usize * claims::PAGE;
            let n = chunk.min(len - at);
            // SAFETY: the posted buffer holds `len` bytes; nobody else writes it yet.
            let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(at), n) };
            if let Err(e) = self.chan.read_remote(peer, addr.wrapping_add(at as u64), dst) {
                self.restart_by_pipeline(id, peer, send_req, buf, len, len, e);
                return true;
            }
            if at + n == len {
                self.core.send_control(peer, FIN, send_req as u64, &[]);
                self.core.reqs.complete(id);
                return true;
            }
            alone += (n / claims::PAGE) as u32;
        } else if !front_done {
            let word = self.chan.claim_word(peer, true, slot as usize);
            match claims::take(word, seq, len, End::Front, chunk) {
                Some(range) => {
                    // SAFETY: the posted buffer holds `len` bytes; the range lies inside it and
                    // is ours alone (claimed).
                    let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(range.start), range.len()) };
                    if let Err(e) = self.chan.read_remote(peer, addr.wrapping_add(range.start as u64), dst) {
                        // Take what is left, so only the sender's pages are in flight, then
                        // start over by the pipeline once it has written them.
                        while claims::take(word, seq, len, End::Front, claims::MAX_BYTES).is_some() {}
                        verbose(format_args!("shared copy from rank {peer}: read refused ({e})"));
                        (front_done, refused) = (true, true);
                    }
                }
                None => front_done = true,
            }
        } else if claims::sender_took(self.chan.claim_word(peer, true, slot as usize), len) && !pushed {
            return false;
        } else if redo.0 < redo.1 && !refused {
            let range = claims::byte_range(redo.0, redo.1, len);
            // SAFETY: as above; the sender has given these pages back (PUSHED).
            let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(range.start), range.len()) };
            refused = self.chan.read_remote(peer, addr.wrapping_add(range.start as u64), dst).is_err();
            redo = (0, 0);
        } else {
            self.core.claims_busy[peer] &= !(1 << slot);
            if refused {
                let e = std::io::Error::other("process_vm_readv failed during a shared copy");
                self.restart_by_pipeline(id, peer, send_req, buf, len, len, e);
            } else {
                self.core.send_control(peer, FIN, send_req as u64, &[]);
                self.core.reqs.complete(id);
            }
            return true;
        }
        if let State::RecvShared { alone: a, slot: k, seq: s, front_done: f, refused: r, redo: d, .. } =
            &mut self.core.reqs.get_mut(id).state
        {
            (*a, *k, *s, *f, *r, *d) = (alone, slot, seq, front_done, refused, redo);
        }
        true
    }

    /// The sender's end of a shared copy: writes one chunk claimed from the back per call into
    /// the receiver's buffer; once nothing is free, PUSHED (if it took any) and back to waiting
    /// for FIN. A refused write gives its pages back in PUSHED, and this rank stops helping `peer`.
    pub(super) fn advance_shared_send(&mut self, id: ReqId) -> bool {
        let State::SendShared { peer, buf, len, raddr, recv_req, slot, seq, took } = self.core.reqs.get(id).state
        else {
            return false;
        };
        let word = self.chan.claim_word(peer, false, slot as usize);
        let Some(range) = claims::take(word, seq, len, End::Back, self.core.shared_chunk(len)) else {
            if took {
                self.core.send_control(peer, PUSHED, recv_req as u64, &[]);
            }
            self.core.reqs.get_mut(id).state = State::SendRendezvous { buf, len };
            return took;
        };
        // SAFETY: the send request keeps `buf` (`len` bytes) alive and unchanged until it completes.
        let src = unsafe { std::slice::from_raw_parts(buf.add(range.start), range.len()) };
        match self.chan.write_remote(peer, raddr.wrapping_add(range.start as u64), src) {
            Ok(()) => {
                if let State::SendShared { took, .. } = &mut self.core.reqs.get_mut(id).state {
                    *took = true;
                }
            }
            Err(e) => {
                verbose(format_args!("shared copy to rank {peer} refused ({e}); it copies alone from now on"));
                self.core.push_refused[peer] = true;
                let (a, b) = claims::page_range(&range);
                let mut redo = [0u8; 8];
                redo[..4].copy_from_slice(&a.to_ne_bytes());
                redo[4..].copy_from_slice(&b.to_ne_bytes());
                self.core.send_control(peer, PUSHED, recv_req as u64, &redo);
                self.core.reqs.get_mut(id).state = State::SendRendezvous { buf, len };
            }
        }
        true
    }
}

impl Core {
    /// The receiver asks us to copy from the back of a large message into its buffer.
    pub(super) fn on_share(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let words = self.claim_words[peer];
        let share = Share::decode(payload).filter(|s| u32::from(s.slot) < words);
        let (Some(id), Some(share)) = (self.rendezvous_send(peer, h.aux, false), share) else {
            return self.malformed(
                peer,
                format_args!(
                    "SHARE of {} payload bytes for request {}, no rendezvous send to it, or a claim word past {words}",
                    payload.len(),
                    h.aux
                ),
            );
        };
        if self.push_refused[peer] {
            // A sender whose writes the kernel refused leaves the copy to the receiver.
            return;
        }
        let req = self.reqs.get_mut(id);
        let State::SendRendezvous { buf, len } = req.state else { unreachable!("rendezvous_send checked the state") };
        let Share { addr: raddr, recv_req, slot, seq } = share;
        req.state = State::SendShared { peer, buf, len, raddr, recv_req, slot, seq, took: false };
        self.active.push(id);
    }

    /// The sender of a shared copy has written the pages it took (and names those it could not).
    pub(super) fn on_pushed(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let asked = |s: &State| matches!(s, State::RecvShared { slot, pushed: false, .. } if *slot != NO_SLOT);
        let id = self.receive_from(peer, h.aux, asked);
        let Some((id, redo)) = id.zip(match payload.len() {
            0 => Some((0, 0)),
            8 => Some((
                u32::from_ne_bytes(payload[..4].try_into().unwrap()),
                u32::from_ne_bytes(payload[4..].try_into().unwrap()),
            )),
            _ => None,
        }) else {
            return self.malformed(
                peer,
                format_args!("PUSHED of {} payload bytes for request {}, no shared copy from it", payload.len(), h.aux),
            );
        };
        let State::RecvShared { len, pushed, redo: r, .. } = &mut self.reqs.get_mut(id).state else {
            unreachable!("receive_from checked the state")
        };
        if redo != (0, 0) && !(redo.0 < redo.1 && redo.1 as usize <= len.div_ceil(claims::PAGE)) {
            let len = *len;
            return self
                .malformed(peer, format_args!("PUSHED naming pages {}..{} of a {len}-byte message", redo.0, redo.1));
        }
        (*pushed, *r) = (true, redo);
    }

    /// Bytes one end of a shared copy of `len` bytes claims at a time: the tunable, or half the
    /// message if that is less (whole pages), so both ends start at once on a small one.
    pub(super) fn shared_chunk(&self, len: usize) -> usize {
        self.shared_chunk.min((len / 2).next_multiple_of(claims::PAGE)).max(claims::PAGE)
    }
}

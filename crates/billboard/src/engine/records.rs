//! Records in: what each record from a peer does (eager delivery, the rendezvous offers and
//! answers), and the control records the engine sends back.

use super::*;
use crate::engine::pipeline::PipelineRecv;
use crate::engine::shared_copy::SharedRecv;
use crate::engine::single_copy::SingleCopy;

impl Core {
    /// Handles one record from world rank `peer`. `payload` lives in shared memory. Whatever
    /// the record says, a record that breaks the protocol fails `peer` (see `failure.rs`), and
    /// a failed peer's records are dropped.
    pub(super) fn on_record(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        if self.any_failed && self.failed[peer].is_some() {
            return;
        }
        if self.any_revoked && matches!(h.kind, EAGER | RTS) && self.revoked_context(h.context, Some(h.tag)) {
            return self.drop_revoked(peer, h.kind, payload);
        }
        match h.kind {
            EAGER => {
                self.traffic[peer].received(payload.len());
                let env = Envelope { context: h.context, source: h.source, tag: h.tag };
                if self.land_direct(env, payload) {
                    return;
                }
                if h.context & active::ACTIVE != 0 {
                    return self.on_active(peer, h, payload);
                }
                match self.matcher.arrive_with(env, || Pending::Eager(payload.to_vec())) {
                    Arrival::Matched(id) => self.deliver_bytes(id, env, payload),
                    Arrival::Queued => {}
                    Arrival::Refused => self.malformed(peer, format_args!("an EAGER record on context {}", h.context)),
                }
            }
            RTS => self.on_rts(peer, h, payload),
            FIN => self.on_fin(peer, h),
            CTS => self.on_cts(peer, h, payload),
            SHARE => self.on_share(peer, h, payload),
            PUSHED => self.on_pushed(peer, h, payload),
            DATA => self.on_data(peer, h, payload),
            REVOKE => self.on_revoke(peer, h),
            other => self.malformed(peer, format_args!("a record of unknown kind {other}")),
        }
    }

    /// An offer to receive a message from `peer`'s memory.
    pub(super) fn on_rts(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let Some(rts) = Rts::decode(payload) else {
            return self.malformed(peer, format_args!("an RTS record of {} payload bytes", payload.len()));
        };
        let len = h.aux as usize;
        self.traffic[peer].received(len);
        // A gathered send lists only blocks that hold bytes (`Engine::isend_blocks`).
        if rts.blocks as usize > len {
            return self.malformed(peer, format_args!("an RTS of {len} bytes in {} blocks", rts.blocks));
        }
        if h.context & active::ACTIVE != 0 {
            return self.on_active_rts(peer, h, rts, len);
        }
        let env = Envelope { context: h.context, source: h.source, tag: h.tag };
        if let Some(d) = self.direct.as_mut().filter(|d| d.outcome.is_none() && d.pattern.matches(&env)) {
            let id = self.reqs.insert(State::RecvPosted { buf: d.buf, cap: d.cap }, d.hint);
            d.outcome = Some(Outcome::Rendezvous(id));
            self.start_rendezvous(id, env, peer, rts, len);
            return;
        }
        let pending = || Pending::Rts { peer, addr: rts.addr, len, send_req: rts.send_req, blocks: rts.blocks };
        match self.matcher.arrive_with(env, pending) {
            Arrival::Matched(id) => self.start_rendezvous(id, env, peer, rts, len),
            Arrival::Queued => {}
            Arrival::Refused => self.malformed(peer, format_args!("an RTS record on context {}", h.context)),
        }
    }

    /// Delivers a message the matcher had kept (or a matched probe took) to receive `id`.
    pub(super) fn deliver(&mut self, id: ReqId, env: Envelope, msg: Pending) {
        match msg {
            Pending::Eager(data) => self.deliver_bytes(id, env, &data),
            Pending::Rts { peer, addr, len, send_req, blocks } => {
                self.start_rendezvous(id, env, peer, Rts { addr, send_req, blocks }, len)
            }
        }
    }

    pub(super) fn deliver_bytes(&mut self, id: ReqId, env: Envelope, data: &[u8]) {
        let req = self.reqs.get_mut(id);
        let State::RecvPosted { buf, cap } = req.state else { unreachable!("delivery to request {id} not posted") };
        // SAFETY: a posted receive's buffer (or blocks) holds `cap` bytes until it completes.
        (req.completion, req.error) = unsafe { land(env, data, buf, cap, req.scatter.as_deref()) };
        req.state = State::Done;
    }

    pub(super) fn start_rendezvous(&mut self, id: ReqId, env: Envelope, peer: usize, rts: Rts, len: usize) {
        let State::RecvPosted { buf, cap } = self.reqs.get(id).state else {
            unreachable!("rendezvous for request {id} not posted")
        };
        let shared = self.single_copy[peer]
            && self.claim_words[peer] > 0
            && self.shared_min > 0
            && (self.shared_min..=claims::MAX_BYTES).contains(&len)
            && len <= cap
            && rts.blocks == 0
            && self.reqs.get(id).scatter.is_none();
        let req = self.reqs.get_mut(id);
        let n = len.min(cap);
        req.completion = Completion { source: env.source, tag: env.tag, bytes: n, cancelled: false };
        if len > cap {
            req.error = Some(truncated(env, len, cap));
        }
        req.hint = Some(peer);
        if let Some(why) = &self.failed[peer] {
            req.error = Some(Error::PeerGone { rank: peer, reason: why.clone() });
            req.state = State::Done;
        } else if shared {
            req.state = State::RecvShared { peer, buf, copy: SharedRecv::new(rts.addr, rts.send_req, len) };
            self.active.push(id);
        } else if self.single_copy[peer] {
            let copy = SingleCopy::new(rts.addr, rts.send_req, rts.blocks, n, len);
            req.state = State::RecvSingleCopy { peer, buf, copy };
            self.active.push(id);
        } else if len == 0 {
            // Nothing to pipeline (a synchronous send of no bytes): the match is all it waits for.
            req.state = State::Done;
            self.send_control(peer, FIN, rts.send_req as u64, &[]);
        } else {
            req.state = State::RecvPipeline { buf, cursor: Cursor::default(), pipe: PipelineRecv::new(cap, len) };
            self.send_control(peer, CTS, rts.send_req as u64, &id.to_ne_bytes());
        }
    }

    /// Queues a control record for `peer` (sent at the end of this progress round).
    pub(super) fn send_control(&mut self, peer: usize, kind: u32, aux: u64, payload: &[u8]) {
        let header = Header { kind, context: 0, source: 0, tag: 0, aux };
        let mut bytes = [0u8; Share::BYTES];
        bytes[..payload.len()].copy_from_slice(payload);
        self.control.push_back((peer, header, bytes, payload.len()));
    }
}

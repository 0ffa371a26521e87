//! One rank's end of the UDP route, sans IO: records in, datagrams out and back, timers, all
//! with the time passed in (µs). The socket layer (`channel.rs`) feeds it what the socket
//! receives and sends what [`Endpoint::transmit`] hands it; tests drive it over a simulated
//! network with chosen loss, duplication and reordering.

use std::collections::VecDeque;

use super::peer::{Config, Peer};
use super::wire::{self, Head, Key, Refused};
use crate::transport::{Header, WouldBlock};

/// A datagram waiting to leave.
#[derive(Clone, Copy, Debug)]
enum Out {
    /// The datagram `seq` of the flight to the peer (skipped if acknowledged meanwhile).
    Data(u64),
    Ack,
    Fin,
}

/// What the protocol did, for verbose reports and measurements.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Datagrams handed to the socket, retransmissions included.
    pub sent: u64,
    /// Retransmissions on a timeout, and on loss seen in acknowledgements.
    pub timeouts: u64,
    pub repairs: u64,
    /// Data datagrams received that were already delivered or held.
    pub duplicates: u64,
}

pub struct Endpoint {
    pub stats: Stats,
    me: usize,
    key: Key,
    pub cfg: Config,
    peers: Vec<Peer>,
    out: VecDeque<(usize, Out)>,
    /// Failed peers not yet reported: the peer and what happened.
    failures: VecDeque<(usize, String)>,
    scratch: Vec<u8>,
    /// The selective acknowledgement ranges of the datagram at hand (received or being built).
    ranges: Vec<(u64, u64)>,
}

impl Endpoint {
    pub fn new(me: usize, nranks: usize, key: Key, cfg: Config) -> Endpoint {
        let peers = (0..nranks).map(|_| Peer::new(&cfg)).collect();
        Endpoint {
            stats: Stats::default(),
            me,
            key,
            cfg,
            peers,
            out: VecDeque::new(),
            failures: VecDeque::new(),
            scratch: Vec::new(),
            ranges: Vec::new(),
        }
    }

    /// Datagrams a record of `len` payload bytes takes.
    pub fn datagrams_for(&self, len: usize) -> usize {
        (wire::RECORD_HEAD + len).div_ceil(self.cfg.body)
    }

    /// Whether a record of `needed` datagrams to `peer` fits its window now.
    pub fn has_room(&self, peer: usize, needed: usize) -> bool {
        self.peers[peer].gone || self.peers[peer].has_room(needed, &self.cfg)
    }

    /// Numbers the datagrams of one record (payload: `pieces` joined) and queues them, or says
    /// the window to `peer` has no room for them. A record to a peer that is gone is dropped.
    pub fn send(&mut self, now: u64, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        let needed = self.datagrams_for(len);
        let p = &mut self.peers[peer];
        if p.gone {
            return Ok(());
        }
        if !p.has_room(needed, &self.cfg) {
            return Err(WouldBlock);
        }
        let mut prefix = [0u8; wire::RECORD_HEAD];
        prefix[..Header::BYTES].copy_from_slice(&header.to_bytes());
        prefix[Header::BYTES..].copy_from_slice(&(len as u32).to_le_bytes());
        let mut src = Pieces { first: &prefix, rest: pieces, at: 0 };
        let (ack, sack) = p.ack_fields();
        let mut left = wire::RECORD_HEAD + len;
        for k in 0..needed {
            let n = left.min(self.cfg.body);
            left -= n;
            let mut flags = 0;
            if k == 0 {
                flags |= wire::FIRST;
            }
            if k + 1 == needed {
                flags |= wire::LAST;
            }
            let (xmit, echo) = (p.next_xmit() as u32, p.echo);
            let head = Head {
                kind: wire::DATA,
                flags,
                src: self.me as u32,
                dst: peer as u32,
                seq: p.next,
                ack,
                sack,
                xmit,
                echo,
            };
            let mut d = p.buffer(wire::HEAD + n + wire::MAC);
            head.put(&mut d);
            src.copy(n, &mut d);
            self.key.seal(&mut d);
            self.out.push_back((peer, Out::Data(p.next)));
            p.push(now, d);
        }
        Ok(())
    }

    /// Takes one received datagram (decrypting it in place); hands the records it completes to
    /// `f(sender, header, payload)`. Returns the sender: of the timers, only that peer's may
    /// have moved earlier ([`Endpoint::deadline_of`]).
    pub fn receive(
        &mut self,
        now: u64,
        datagram: &mut [u8],
        f: &mut dyn FnMut(usize, &Header, &[u8]),
    ) -> Result<usize, Refused> {
        let (head, body) = self.key.open(self.me as u32, datagram)?;
        let from = head.src as usize;
        if from >= self.peers.len() || from == self.me {
            return Err(Refused::NotOurs);
        }
        let p = &mut self.peers[from];
        if p.gone {
            return Ok(from);
        }
        p.heard(now);
        if head.kind == wire::DATA {
            p.echo = head.xmit;
            self.ranges.clear();
        } else if let Err(why) = wire::get_ranges(head.ack, body, &mut self.ranges) {
            self.fail(from, format!("sent a UDP acknowledgement that breaks the route's framing: {why}"));
            return Ok(from);
        }
        for seq in p.on_ack(now, head.ack, head.sack, &self.ranges, head.echo) {
            self.stats.repairs += 1;
            self.out.push_back((from, Out::Data(seq)));
        }
        if head.kind == wire::DATA && (head.seq < p.expected || p.holds(head.seq)) {
            self.stats.duplicates += 1;
        }
        match head.kind {
            wire::DATA => {
                if let Err(why) = p.on_data(now, &head, body, &self.cfg, &mut |h, b| f(from, h, b)) {
                    self.fail(from, format!("sent a datagram that breaks the UDP route's framing: {why}"));
                }
            }
            wire::FIN => {
                // The peer is done; what it has not acknowledged it never will.
                p.gone = true;
                p.flight.clear();
                p.una = p.next;
            }
            _ => {}
        }
        self.queue_ack(from);
        Ok(from)
    }

    fn queue_ack(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        if p.ack_now && !p.gone {
            p.ack_now = false;
            self.out.push_back((peer, Out::Ack));
        }
    }

    /// Runs every timer due at `now` (retransmissions, delayed acknowledgements, deadlines).
    pub fn on_timer(&mut self, now: u64) {
        let me = self.me;
        for peer in (0..self.peers.len()).filter(|&p| p != me) {
            match self.peers[peer].on_timer(now, &self.cfg) {
                Ok((lost, timeout)) => {
                    for seq in lost {
                        *if timeout { &mut self.stats.timeouts } else { &mut self.stats.repairs } += 1;
                        self.out.push_back((peer, Out::Data(seq)));
                    }
                }
                Err(why) => self.fail(peer, why),
            }
            self.queue_ack(peer);
        }
    }

    /// Sends every acknowledgement owed now, delayed or not (before sleeping, or at the end).
    pub fn ack_all(&mut self) {
        for peer in 0..self.peers.len() {
            let p = &mut self.peers[peer];
            p.ack_now |= p.owes_ack();
            self.queue_ack(peer);
        }
    }

    /// Queues a FIN to every peer (this rank is done: it acknowledges nothing more).
    pub fn finish(&mut self) {
        for peer in (0..self.peers.len()).filter(|&p| p != self.me) {
            self.out.push_back((peer, Out::Fin));
        }
    }

    /// When the next timer of `peer` is due, if any (after a send to it, the only one that
    /// may have moved).
    pub fn deadline_of(&self, peer: usize) -> Option<u64> {
        self.peers[peer].deadline(&self.cfg)
    }

    /// When the next timer is due, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        let others = self.peers.iter().enumerate().filter(|&(k, _)| k != self.me);
        others.filter_map(|(_, p)| p.deadline(&self.cfg)).min()
    }

    /// Hands queued datagrams to `emit(peer, bytes)` until it refuses one (the socket is full:
    /// that one stays first) or none is left.
    pub fn transmit(&mut self, mut emit: impl FnMut(usize, &[u8]) -> bool) {
        while let Some(&(peer, what)) = self.out.front() {
            let p = &mut self.peers[peer];
            let (ack, sack) = p.ack_fields();
            let sent = match what {
                Out::Data(seq) => {
                    if seq < p.una || p.gone {
                        true // acknowledged (or the peer gone) meanwhile
                    } else {
                        let s = &mut p.flight[(seq - p.una) as usize];
                        let fields = Head::resent(ack, sack, s.xmit as u32, p.echo);
                        if s.bytes[24..48] != fields {
                            self.key.reseal(&mut s.bytes, &fields);
                        }
                        let d = &s.bytes;
                        let ok = emit(peer, d);
                        if ok {
                            p.acked();
                        }
                        ok
                    }
                }
                Out::Ack | Out::Fin => {
                    let kind = if matches!(what, Out::Ack) { wire::ACK } else { wire::FIN };
                    self.scratch.clear();
                    let echo = p.echo;
                    Head { kind, flags: 0, src: self.me as u32, dst: peer as u32, seq: 0, ack, sack, xmit: 0, echo }
                        .put(&mut self.scratch);
                    p.ack_ranges(wire::MAX_RANGES.min(self.cfg.body / wire::RANGE), &mut self.ranges);
                    wire::put_ranges(ack, &self.ranges, &mut self.scratch);
                    self.key.seal(&mut self.scratch);
                    let ok = emit(peer, &self.scratch);
                    if ok {
                        p.acked();
                    }
                    ok
                }
            };
            if !sent {
                return;
            }
            self.stats.sent += 1;
            self.out.pop_front();
        }
    }

    /// Whether datagrams wait to leave.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Whether every datagram sent has been acknowledged (or its peer is gone).
    pub fn flushed(&self) -> bool {
        self.peers.iter().all(|p| p.gone || p.flight.is_empty())
    }

    /// Stops talking to `peer`: nothing more is sent or taken; reported once if `why` says.
    pub fn fail(&mut self, peer: usize, why: String) {
        let p = &mut self.peers[peer];
        if !p.gone {
            p.gone = true;
            p.flight.clear();
            p.una = p.next;
            self.failures.push_back((peer, why));
        }
    }

    /// Stops talking to `peer` without a report (the engine failed it already).
    pub fn close(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        p.gone = true;
        p.flight.clear();
        p.una = p.next;
    }

    pub fn take_failure(&mut self) -> Option<(usize, String)> {
        self.failures.pop_front()
    }

    pub fn has_failure(&self) -> bool {
        !self.failures.is_empty()
    }

    /// The smoothed round trip to `peer` (µs).
    #[cfg(test)]
    pub fn srtt(&self, peer: usize) -> u64 {
        self.peers[peer].rtt.srtt()
    }
}

/// A byte stream made of a fixed prefix and the pieces of a gathered payload, copied out in order.
struct Pieces<'a> {
    first: &'a [u8],
    rest: &'a [&'a [u8]],
    /// Bytes of `first` already copied.
    at: usize,
}

impl Pieces<'_> {
    /// Appends the next `n` bytes to `out`.
    fn copy(&mut self, mut n: usize, out: &mut Vec<u8>) {
        while n > 0 {
            if self.at == self.first.len() {
                let Some((&next, rest)) = self.rest.split_first() else { return };
                self.first = next;
                self.rest = rest;
                self.at = 0;
                continue;
            }
            let k = n.min(self.first.len() - self.at);
            out.extend_from_slice(&self.first[self.at..self.at + k]);
            self.at += k;
            n -= k;
        }
    }
}

#[cfg(test)]
#[path = "sim_tests.rs"]
mod sim_tests;

//! The reliable stream to and from one peer, sans IO: sequence numbers, acknowledgements
//! (cumulative and selective), loss detection and retransmission, the send window, duplicate
//! suppression, in-order delivery and reassembly of records. Time comes in as microseconds.
//!
//! Loss is detected as RACK does (RFC 8985), by order of transmission: once a datagram is
//! known to have arrived, one still missing that left before it is lost if it left three or
//! more transmissions earlier or is older than 9/8 of the round trip (so reordering of a few
//! datagrams is tolerated; a timer rechecks one not yet old enough), and is sent again at once.
//! Transmissions are ordered by a count ([`Sent::xmit`]), not by clock readings or sequence
//! numbers: repairs sent in one burst share a microsecond, and a repair's sequence number is
//! older than everything sent before it. Which transmission arrived last the peer says itself
//! (every datagram echoes the xmit of the last one it got, `wire.rs`): an acknowledged sequence
//! number does not say whether its first copy or its repair arrived, and without the echo a lost
//! repair among repairs (a full window sends nothing else) was found only by the timeout. What
//! is missing is what the cumulative acknowledgement, the selective bitmap of the 64 datagrams
//! after it and the ranges of a standalone acknowledgement (`wire.rs`: all the receiver holds,
//! up to 128 ranges) do not cover. When the flight makes no progress for two round trips (a
//! probe timeout, as RFC 8985's tail loss probe), the oldest missing datagram is sent again:
//! the echo of that copy shows every other one missing, so a loss at the end of a burst, or
//! of a repair when a full window sends nothing else, costs two round trips, not the
//! retransmission timeout. After that, at each retransmission timeout ([`Rtt`]) the oldest is
//! sent again and the timeout doubles. A peer that acknowledges nothing for `deadline` while datagrams wait has failed.

use std::collections::VecDeque;

use super::rtt::Rtt;
use super::wire::{self, Head};
use crate::transport::Header;

/// What the protocol needs to know, fixed at setup.
#[derive(Clone, Debug)]
pub struct Config {
    /// Record bytes per datagram (the datagram adds [`wire::HEAD`] and [`wire::MAC`]).
    pub body: usize,
    /// Datagrams in flight per peer, at most (a record larger than that goes alone).
    pub window: usize,
    /// Largest record payload accepted from a peer.
    pub max_record: usize,
    pub rto_initial: u64,
    pub rto_min: u64,
    pub rto_max: u64,
    /// A peer silent this long while datagrams to it wait has failed (µs).
    pub deadline: u64,
    /// In-order datagrams acknowledged at once, without waiting for `ack_delay`.
    pub ack_every: usize,
    pub ack_delay: u64,
    /// A peer heard nothing from this long is sent an acknowledgement (µs; 0: never). It asks
    /// for no answer: it is there so that a peer whose socket is gone makes its host answer
    /// with an ICMP port-unreachable, which the socket layer turns into the peer's failure.
    pub keepalive: u64,
}

/// A datagram sent and not yet acknowledged.
pub(super) struct Sent {
    pub bytes: Vec<u8>,
    pub sent_at: u64,
    /// Its place in the order of this stream's transmissions, retransmissions included: the
    /// latest, and the first.
    pub xmit: u64,
    pub first: u64,
    pub sends: u32,
    pub sacked: bool,
}

/// The shortest probe timeout (µs): a receiver delays an acknowledgement up to
/// [`Config::ack_delay`] (200 µs), and a timer wakes some tens of µs late.
const PROBE_MIN_US: u64 = 300;

/// Reordering tolerated before a missing datagram counts as lost (in transmissions).
const DUPTHRESH: u64 = 3;

/// Buffers of acknowledged datagrams a peer keeps for its next ones, at most: a ping-pong
/// needs one, and a buffer taken from here costs no `malloc` and `free` (~100 instructions).
const SPARE: usize = 32;

pub(super) struct Peer {
    /// Oldest datagram not acknowledged, and the next to number.
    pub una: u64,
    pub next: u64,
    /// Datagrams `una..next`.
    pub flight: VecDeque<Sent>,
    /// The next [`Sent::xmit`] (from 1: an echo of 0 says nothing arrived).
    xmits: u64,
    /// The xmit of the peer's datagram that arrived last, which our datagrams echo.
    pub echo: u32,
    pub rtt: Rtt,
    rto_at: Option<u64>,
    /// The probe was sent since the flight last made progress: the next expiry is a timeout.
    probed: bool,
    /// The latest transmission known to have arrived (RACK's), and the end of the datagrams the
    /// last acknowledgement tells about (below it, one neither acknowledged nor marked is
    /// missing; beyond it the peer may hold some unreported).
    rack: Option<u64>,
    told_below: u64,
    /// When a datagram that may only be overtaken becomes old enough to count as lost.
    rack_at: Option<u64>,
    /// When the flight last made progress (or started, from empty).
    progress_at: u64,
    /// Next datagram to deliver; those after it that came early (by `seq - expected`).
    pub expected: u64,
    held: VecDeque<Option<Vec<u8>>>,
    /// The record being reassembled: header, payload length, bytes so far.
    record: Option<(Header, usize, Vec<u8>)>,
    /// In-order datagrams not yet acknowledged; when a delayed acknowledgement is due.
    owed: usize,
    ack_at: Option<u64>,
    /// An acknowledgement should leave now.
    pub ack_now: bool,
    /// The peer said it is done (FIN), or failed: nothing more is sent to it.
    pub gone: bool,
    /// When we last heard from the peer or probed it ([`Config::keepalive`]).
    quiet_since: u64,
    /// Buffers of datagrams acknowledged, for the next ones sent ([`SPARE`]).
    spare: Vec<Vec<u8>>,
}

/// Datagrams to send again, found by an acknowledgement or a timer (sequence numbers).
pub(super) type Resend = Vec<u64>;

impl Peer {
    pub fn new(cfg: &Config) -> Peer {
        Peer {
            una: 0,
            next: 0,
            flight: VecDeque::new(),
            xmits: 1,
            echo: 0,
            rtt: Rtt::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
            rto_at: None,
            probed: false,
            rack: None,
            told_below: 0,
            rack_at: None,
            progress_at: 0,
            expected: 0,
            held: VecDeque::new(),
            record: None,
            owed: 0,
            ack_at: None,
            ack_now: false,
            gone: false,
            quiet_since: 0,
            spare: Vec::new(),
        }
    }

    /// An empty buffer for a datagram of `len` bytes: one an acknowledged datagram left, or a
    /// new one.
    pub fn buffer(&mut self, len: usize) -> Vec<u8> {
        match self.spare.pop() {
            Some(mut b) => {
                b.clear();
                b.reserve(len);
                b
            }
            None => Vec::with_capacity(len),
        }
    }

    /// The acknowledgement this side owes: cumulative, and a bitmap of the 64 after it.
    pub fn ack_fields(&self) -> (u64, u64) {
        if self.held.len() <= 1 {
            return (self.expected, 0); // nothing came early (the usual case)
        }
        let mut sack = 0u64;
        for (i, d) in self.held.iter().skip(1).take(64).enumerate() {
            if d.is_some() {
                sack |= 1 << i;
            }
        }
        (self.expected, sack)
    }

    /// The ranges (`start .. end`) of datagrams held past the first gap, from the lowest, at
    /// most `max` of them, into `out`: what a standalone acknowledgement lists besides the
    /// cumulative one.
    pub fn ack_ranges(&self, max: usize, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let mut start = None;
        // The front of `held` is the gap at `expected`; a `None` past the end closes a last run.
        for (k, d) in self.held.iter().chain([&None]).enumerate().skip(1) {
            let seq = self.expected + k as u64;
            match (d.is_some(), start) {
                (true, None) => start = Some(seq),
                (false, Some(s)) => {
                    out.push((s, seq));
                    start = None;
                    if out.len() == max {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// The xmit the next datagram pushed takes.
    pub fn next_xmit(&self) -> u64 {
        self.xmits
    }

    /// Whether an acknowledgement is owed, now or delayed.
    pub fn owes_ack(&self) -> bool {
        self.ack_now || self.ack_at.is_some()
    }

    /// Whether datagram `seq` came early and waits here.
    pub fn holds(&self, seq: u64) -> bool {
        seq > self.expected && self.held.get((seq - self.expected) as usize).is_some_and(Option::is_some)
    }

    /// A datagram of the peer's came in.
    pub fn heard(&mut self, now: u64) {
        self.quiet_since = now;
    }

    /// An acknowledgement (standalone or carried by data) has left.
    pub fn acked(&mut self) {
        self.owed = 0;
        self.ack_at = None;
        self.ack_now = false;
    }

    /// Whether `needed` more datagrams fit the window.
    pub fn has_room(&self, needed: usize, cfg: &Config) -> bool {
        self.flight.is_empty() || self.flight.len() + needed <= cfg.window
    }

    /// Takes a datagram just numbered `self.next` into the flight.
    pub fn push(&mut self, now: u64, bytes: Vec<u8>) {
        if self.flight.is_empty() {
            self.progress_at = now;
            self.arm(now);
        }
        self.flight.push_back(Sent {
            bytes,
            sent_at: now,
            xmit: self.xmits,
            first: self.xmits,
            sends: 1,
            sacked: false,
        });
        self.xmits += 1;
        self.next += 1;
    }

    /// Takes the peer's acknowledgement of our stream (cumulative, the bitmap of the 64 after
    /// it, ranges past it as `start .. end`) and its echo (the low 32 bits of the xmit that
    /// arrived last, 0: none); returns datagrams found lost.
    pub fn on_ack(&mut self, now: u64, ack: u64, sack: u64, ranges: &[(u64, u64)], echo: u32) -> Resend {
        if ack > self.next || ack < self.una && sack == 0 && ranges.is_empty() {
            return Vec::new(); // stale (reordered) or impossible: nothing new
        }
        let mut sample: Option<u64> = None;
        // The echo names one of the last 2^32 transmissions: the latest with those low bits.
        let back = u64::from((self.xmits as u32).wrapping_sub(echo));
        let echoed = (echo != 0 && back >= 1 && back < self.xmits).then(|| self.xmits - back);
        let mut rack = self.rack.max(echoed);
        let mut arrived = |s: &Sent| {
            // Of a datagram sent more than once, only the first copy surely left before the
            // one that arrived (a late original looks like its repair arrived, and taking the
            // repair's place condemned everything sent between the two: one spurious timeout
            // grew into thousands of repairs of a loss-free stream); the echo says the rest.
            let x = if s.sends == 1 {
                sample = Some(now.saturating_sub(s.sent_at));
                s.xmit
            } else {
                s.first
            };
            rack = Some(rack.map_or(x, |r: u64| r.max(x)));
        };
        let advanced = ack > self.una;
        while self.una < ack {
            let s = self.flight.pop_front().expect("una < next");
            if !s.sacked {
                arrived(&s);
            }
            if self.spare.len() < SPARE {
                self.spare.push(s.bytes);
            }
            self.una += 1;
        }
        let mut bits = sack;
        while bits != 0 {
            let seq = ack + 1 + u64::from(bits.trailing_zeros());
            bits &= bits - 1;
            if seq >= self.next || seq < self.una {
                continue;
            }
            let s = &mut self.flight[(seq - self.una) as usize];
            if !s.sacked {
                s.sacked = true;
                arrived(s);
            }
        }
        let mut told = ack + 65;
        for &(start, end) in ranges {
            let (from, to) = (start.max(self.una), end.min(self.next));
            if from < to {
                for s in self.flight.range_mut((from - self.una) as usize..(to - self.una) as usize) {
                    if !s.sacked {
                        s.sacked = true;
                        arrived(s);
                    }
                }
            }
            told = told.max(end.min(self.next));
        }
        self.rack = rack;
        self.told_below = self.told_below.max(told);
        if let Some(r) = sample {
            self.rtt.sample(r);
        }
        if advanced {
            self.progress_at = now;
            self.rto_at = None;
            if !self.flight.is_empty() {
                self.arm(now);
            }
        }
        self.find_lost(now)
    }

    /// Marks lost, and returns, every missing datagram that left before the latest known
    /// arrival, long enough before (see the module's note); arms the reordering timer for any
    /// that may yet be only overtaken.
    fn find_lost(&mut self, now: u64) -> Resend {
        self.rack_at = None;
        let Some(rack) = self.rack else { return Vec::new() };
        let late = self.rtt.srtt() * 9 / 8;
        let mut lost = Vec::new();
        for (k, s) in self.flight.iter_mut().enumerate() {
            let seq = self.una + k as u64;
            if seq >= self.told_below {
                break;
            }
            if s.sacked || s.xmit >= rack {
                continue;
            }
            // Before transmissions were ordered by count, a repair's arrival condemned every
            // repair sent in the same microsecond (all still on their way): 10 % of a stream
            // under 5 % loss arrived twice.
            if rack - s.xmit >= DUPTHRESH || now.saturating_sub(s.sent_at) >= late {
                s.sent_at = now;
                s.xmit = self.xmits;
                self.xmits += 1;
                s.sends += 1;
                lost.push(seq);
            } else {
                let at = s.sent_at + late;
                self.rack_at = Some(self.rack_at.map_or(at, |t| t.min(at)));
            }
        }
        lost
    }

    /// Runs the timers due at `now`: datagrams to send again (and whether one is for the
    /// retransmission timeout), whether an acknowledgement is due, or why the peer failed.
    pub fn on_timer(&mut self, now: u64, cfg: &Config) -> Result<(Resend, bool), String> {
        if self.gone {
            return Ok((Vec::new(), false));
        }
        if self.ack_at.is_some_and(|t| t <= now) {
            self.ack_now = true;
        }
        if cfg.keepalive > 0 && now.saturating_sub(self.quiet_since) >= cfg.keepalive {
            self.quiet_since = now;
            self.ack_now = true;
        }
        if self.flight.is_empty() {
            return Ok((Vec::new(), false));
        }
        if now.saturating_sub(self.progress_at) >= cfg.deadline {
            return Err(format!(
                "no acknowledgement over UDP for {} ms (BB_UDP_TIMEOUT_MS), {} datagrams waiting",
                cfg.deadline / 1000,
                self.flight.len()
            ));
        }
        let mut lost = if self.rack_at.is_some_and(|t| t <= now) { self.find_lost(now) } else { Vec::new() };
        let timeout = self.rto_at.is_some_and(|t| t <= now) && lost.is_empty();
        if timeout {
            if std::mem::replace(&mut self.probed, true) {
                self.rtt.back_off();
            }
            self.rto_at = Some(now + self.rtt.rto());
            let una = self.una;
            if let Some((k, s)) = self.flight.iter_mut().enumerate().find(|(_, s)| !s.sacked) {
                s.sent_at = now;
                s.xmit = self.xmits;
                self.xmits += 1;
                s.sends += 1;
                lost.push(una + k as u64);
            }
        }
        Ok((lost, timeout))
    }

    /// Starts the timer of a flight that just made progress: the probe is due first.
    fn arm(&mut self, now: u64) {
        self.probed = false;
        let probe = (2 * self.rtt.srtt()).max(PROBE_MIN_US).min(self.rtt.rto());
        self.rto_at = Some(now + probe);
    }

    /// The earliest time a timer of this peer is due.
    pub fn deadline(&self, cfg: &Config) -> Option<u64> {
        if self.gone {
            return None;
        }
        // Plain minima over u64::MAX for "none" (it runs after every send): the same as
        // collecting the five options, in a third of the instructions.
        let none = u64::MAX;
        let mut at = self.rto_at.unwrap_or(none).min(self.rack_at.unwrap_or(none)).min(self.ack_at.unwrap_or(none));
        if !self.flight.is_empty() {
            at = at.min(self.progress_at.saturating_add(cfg.deadline));
        }
        if cfg.keepalive > 0 {
            at = at.min(self.quiet_since.saturating_add(cfg.keepalive));
        }
        (at != none).then_some(at)
    }

    /// Takes a DATA datagram of the peer's stream (`datagram` whole, `body` within it) and hands
    /// every record it completes, in order, to `f`. A duplicate or a datagram beyond the window
    /// is dropped (and acknowledged again). Err: the peer broke the record framing.
    pub fn on_data(
        &mut self,
        now: u64,
        head: &Head,
        body: &[u8],
        cfg: &Config,
        f: &mut dyn FnMut(&Header, &[u8]),
    ) -> Result<(), String> {
        let seq = head.seq;
        if seq < self.expected || seq >= self.expected + cfg.window as u64 {
            self.ack_now = true; // a duplicate: our acknowledgement was lost, or is late
            return Ok(());
        }
        let k = (seq - self.expected) as usize;
        if k > 0 {
            // Out of order. Tell the sender at once when this opens a new gap (what came before
            // it is missing), then every fourth datagram while the gap stays, as QUIC does
            // (RFC 9000, 13.2.1): an acknowledgement for each one doubled the datagrams of a
            // receiver under 5 % loss and slowed both sides.
            let new_gap = k > self.held.len().max(1);
            if self.held.len() <= k {
                self.held.resize_with(k + 1, || None);
            }
            if self.held[k].is_none() {
                let mut keep = Vec::with_capacity(1 + body.len());
                keep.push(head.flags);
                keep.extend_from_slice(body);
                self.held[k] = Some(keep);
            }
            self.ack_now |= new_gap || k.is_multiple_of(4);
            if self.ack_at.is_none() {
                self.ack_at = Some(now + cfg.ack_delay);
            }
            return Ok(());
        }
        self.fragment(head.flags, body, cfg, f)?;
        self.advance();
        let filled = matches!(self.held.front(), Some(Some(_)));
        while let Some(Some(_)) = self.held.front() {
            let d = self.held.front_mut().and_then(Option::take).expect("checked above");
            self.fragment(d[0], &d[1..], cfg, f)?;
            self.advance();
        }
        // A gap filled: the sender learns at once how far the stream now goes.
        self.ack_now |= filled;
        if self.owed >= cfg.ack_every {
            self.ack_now = true;
        } else if self.ack_at.is_none() {
            self.ack_at = Some(now + cfg.ack_delay);
        }
        Ok(())
    }

    fn advance(&mut self) {
        self.expected += 1;
        self.owed += 1;
        self.held.pop_front();
    }

    /// One fragment, in order: completes a record or adds to it.
    fn fragment(
        &mut self,
        flags: u8,
        body: &[u8],
        cfg: &Config,
        f: &mut dyn FnMut(&Header, &[u8]),
    ) -> Result<(), String> {
        let mut rest = body;
        if flags & wire::FIRST != 0 {
            if self.record.is_some() {
                return Err("a record started inside another".into());
            }
            if body.len() < wire::RECORD_HEAD {
                return Err(format!("a first fragment of {} bytes, too short for a record header", body.len()));
            }
            let header = Header::from_bytes(body[..Header::BYTES].try_into().unwrap());
            let len = u32::from_le_bytes(body[Header::BYTES..wire::RECORD_HEAD].try_into().unwrap()) as usize;
            if len > cfg.max_record {
                return Err(format!("a record of {len} bytes, more than the {} this route carries", cfg.max_record));
            }
            rest = &body[wire::RECORD_HEAD..];
            if flags & wire::LAST != 0 && rest.len() == len {
                f(&header, rest); // the common case: whole in one datagram, no copy
                return Ok(());
            }
            self.record = Some((header, len, Vec::with_capacity(len)));
        }
        let Some((header, len, bytes)) = &mut self.record else {
            return Err("a fragment outside any record".into());
        };
        if bytes.len() + rest.len() > *len {
            return Err(format!("fragments longer than their record's {len} bytes"));
        }
        bytes.extend_from_slice(rest);
        if flags & wire::LAST != 0 {
            if bytes.len() != *len {
                return Err(format!("a record of {len} bytes ended after {}", bytes.len()));
            }
            f(header, bytes);
            self.record = None;
        }
        Ok(())
    }
}

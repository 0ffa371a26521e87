//! The protocol over a simulated network: chosen loss, duplication, reordering and delay, a
//! clock that only the test moves. Every record must arrive once, intact, in order per sender.

use super::*;
use crate::transport::tcp::handshake::Secret;
use proptest::prelude::*;

fn key() -> Key {
    Key::new(&Secret::from_hex("0123456789abcdef0123456789abcdef").unwrap())
}

fn cfg() -> Config {
    Config {
        body: 200,
        window: 32,
        max_record: 1 << 20,
        rto_initial: 1000,
        rto_min: 200,
        rto_max: 50_000,
        deadline: 2_000_000,
        ack_every: 4,
        ack_delay: 100,
        keepalive: 0,
    }
}

fn payload(k: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u64).wrapping_mul(31).wrapping_add(k) as u8).collect()
}

/// Loss, duplication and reordering in percent, and a seed for the choices.
#[derive(Clone, Copy, Debug)]
struct Faults {
    loss: u64,
    dup: u64,
    reorder: u64,
    seed: u64,
}

struct Net {
    now: u64,
    /// (arrival time, destination, datagram)
    flying: Vec<(u64, usize, Vec<u8>)>,
    rng: u64,
    f: Faults,
    sent: u64,
    /// Data datagrams (by sequence number, any stream) whose first transmission is lost, and
    /// those that went once already.
    lose_first: Vec<u64>,
    seen: std::collections::HashSet<(usize, u64)>,
}

impl Net {
    fn roll(&mut self, pct: u64) -> bool {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545f4914f6cdd1d) >> 33) % 100 < pct
    }

    fn submit(&mut self, to: usize, d: &[u8]) {
        self.sent += 1;
        if !self.lose_first.is_empty() {
            if let Ok((h, _)) = key().open(to as u32, &mut d.to_vec()) {
                if h.kind == wire::DATA && self.seen.insert((to, h.seq)) && self.lose_first.contains(&h.seq) {
                    return;
                }
            }
        }
        if self.roll(self.f.loss) {
            return;
        }
        let copies = if self.roll(self.f.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let extra = if self.roll(self.f.reorder) { 100 + self.rng % 400 } else { 0 };
            self.flying.push((self.now + 50 + extra, to, d.to_vec()));
        }
    }
}

type Got = Vec<Vec<(usize, Header, Vec<u8>)>>;

thread_local! {
    /// Each endpoint's statistics at the end of the last [`run`], and when it ended (µs).
    static STATS: std::cell::RefCell<Vec<Stats>> = const { std::cell::RefCell::new(Vec::new()) };
    static ENDED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sends `records` (from, to, payload length) over `n` endpoints; returns what each received
/// and how many datagrams went out.
fn run(n: usize, records: &[(usize, usize, usize)], f: Faults, cfg: Config) -> (Got, u64) {
    run_losing(n, records, f, cfg, &[])
}

/// [`run`], with the first transmission of the data datagrams numbered in `lose_first` lost.
fn run_losing(n: usize, records: &[(usize, usize, usize)], f: Faults, cfg: Config, lose_first: &[u64]) -> (Got, u64) {
    let mut eps: Vec<Endpoint> = (0..n).map(|me| Endpoint::new(me, n, key(), cfg.clone())).collect();
    let mut net = Net {
        now: 0,
        flying: Vec::new(),
        rng: f.seed | 1,
        f,
        sent: 0,
        lose_first: lose_first.to_vec(),
        seen: Default::default(),
    };
    let mut queues: Vec<VecDeque<(u64, usize, usize)>> = vec![VecDeque::new(); n];
    for (k, &(from, to, len)) in records.iter().enumerate() {
        queues[from].push_back((k as u64, to, len));
    }
    let mut got: Got = vec![Vec::new(); n];
    loop {
        net.now += 10;
        assert!(
            net.now < 60_000_000,
            "stalled at {} of {} records",
            got.iter().map(Vec::len).sum::<usize>(),
            records.len()
        );
        for (me, ep) in eps.iter_mut().enumerate() {
            while let Some(&(k, to, len)) = queues[me].front() {
                let h = Header { kind: 1, context: 2, source: me as u32, tag: len as i32, aux: k };
                let data = payload(k, len);
                let (a, b) = data.split_at(len / 3);
                if ep.send(net.now, to, &h, &[a, b]).is_err() {
                    break;
                }
                queues[me].pop_front();
            }
            ep.on_timer(net.now);
            ep.transmit(|to, d| {
                net.submit(to, d);
                true
            });
        }
        let now = net.now;
        let (due, later): (Vec<_>, Vec<_>) = net.flying.drain(..).partition(|(t, _, _)| *t <= now);
        net.flying = later;
        for (_, to, mut d) in due {
            let sink = &mut got[to];
            eps[to].receive(now, &mut d, &mut |s, h, p| sink.push((s, *h, p.to_vec()))).unwrap();
            // What a datagram made due leaves before the next is read, as the socket layer
            // does (`channel.rs`): an acknowledgement per gap filled, each with the state of
            // its moment, not one for a whole step's arrivals.
            eps[to].transmit(|dst, d| {
                net.submit(dst, d);
                true
            });
        }
        let delivered: usize = got.iter().map(Vec::len).sum();
        if delivered == records.len() && eps.iter().all(Endpoint::flushed) && queues.iter().all(VecDeque::is_empty) {
            for ep in &mut eps {
                assert!(!ep.has_failure(), "{:?}", ep.take_failure());
            }
            STATS.with(|s| *s.borrow_mut() = eps.iter().map(|e| e.stats).collect());
            ENDED.set(net.now);
            return (got, net.sent);
        }
    }
}

fn check(records: &[(usize, usize, usize)], got: &Got) {
    for (to, list) in got.iter().enumerate() {
        let mut last = vec![None; got.len()];
        for (s, h, p) in list {
            let k = h.aux as usize;
            assert_eq!(records[k].0, *s, "sender of record {k}");
            assert_eq!(records[k].1, to, "receiver of record {k}");
            assert!(last[*s] < Some(k), "record {k} from {s} to {to} out of order or twice (after {:?})", last[*s]);
            last[*s] = Some(k);
            assert!(*p == payload(k as u64, records[k].2), "payload of record {k}");
        }
    }
    assert_eq!(got.iter().map(Vec::len).sum::<usize>(), records.len());
}

#[test]
fn clean_network_delivers_every_size_in_order() {
    let records: Vec<_> = (0..700).map(|len| (0, 1, len * 7)).collect();
    let (got, _) = run(2, &records, Faults { loss: 0, dup: 0, reorder: 0, seed: 1 }, cfg());
    check(&records, &got);
}

#[test]
fn heavy_loss_duplication_and_reordering_lose_nothing() {
    let records: Vec<_> = (0..400).map(|k| (k % 3, (k + 1 + k / 3 % 2) % 3, (k * 97) % 5000)).collect();
    let f = Faults { loss: 20, dup: 10, reorder: 30, seed: 42 };
    let (got, _) = run(3, &records, f, cfg());
    check(&records, &got);
}

#[test]
fn repairs_follow_the_losses_and_an_acknowledgement_is_not_sent_per_datagram() {
    // The route's own settings on an Ethernet path, 256 KiB records as the engine sends them.
    let c =
        Config { body: 1400, window: 512, ack_every: 64, ack_delay: 200, rto_min: 1000, rto_initial: 5000, ..cfg() };
    let records: Vec<_> = (0..40).map(|_| (0, 1, 256 << 10)).collect();
    let (got, _) = run(2, &records, Faults { loss: 5, dup: 0, reorder: 0, seed: 3 }, c);
    check(&records, &got);
    let st = STATS.with(|s| s.borrow().clone());
    let (sender, receiver) = (st[0], st[1]);
    let data = sender.sent as f64;
    // About 5 % of the data is lost, and some of what is sent again: no more is repaired, and
    // the receiver gets next to nothing twice. Before transmissions were ordered by count
    // (`peer.rs`), the first repair of a burst to arrive condemned the others, all sent in the
    // same microsecond and still on their way: 15 % repaired, 10 % of the data received twice,
    // as on real sockets.
    assert!(((sender.repairs + sender.timeouts) as f64) < 0.06 * data, "{sender:?}");
    assert!((receiver.duplicates as f64) < 0.005 * data, "{receiver:?}");
    // Out-of-order arrivals are acknowledged when a gap opens or closes and every fourth
    // datagram: before, each one was (with 5 % loss a gap is open most of the time, and the
    // receiver sent nearly as many datagrams as it took; about 3 in 10 now).
    assert!((receiver.sent as f64) < 0.4 * data, "receiver sent {} for {data} data datagrams", receiver.sent);
}

#[test]
fn losses_spread_over_more_than_64_datagrams_are_repaired_together_and_only_once() {
    // A flight of 480 datagrams (one record each) loses the first copy of six, each more than
    // 64 after the one before. Every acknowledgement describes all the receiver holds (ranges,
    // not the 64 datagrams after the oldest gap), so the sender finds the six lost from the
    // first acknowledgements after the gaps and sends each again once, in the same round trip.
    // Before, a loss more than 64 datagrams past the oldest gap was seen only once the repairs
    // before it had arrived: one round trip per loss, and the probe timer sending the oldest
    // again meanwhile.
    let c = Config { window: 512, ack_every: 64, ..cfg() };
    let records: Vec<_> = (0..480).map(|_| (0, 1, 100)).collect();
    let clean = Faults { loss: 0, dup: 0, reorder: 0, seed: 5 };
    let (got, _) = run(2, &records, clean, c.clone());
    check(&records, &got);
    let loss_free = ENDED.get();
    let lost = [5, 80, 160, 240, 320, 400];
    let (got, _) = run_losing(2, &records, clean, c, &lost);
    check(&records, &got);
    let (st, ended) = (STATS.with(|s| s.borrow().clone()), ENDED.get());
    let (sender, receiver) = (st[0], st[1]);
    assert_eq!((sender.repairs, sender.timeouts), (lost.len() as u64, 0), "{sender:?}");
    assert_eq!(receiver.duplicates, 0, "{receiver:?}");
    // The round trip is 100 µs here: the repairs fit in the time the last acknowledgements
    // take anyway (210 µs with and without the losses; 710 µs with the bitmap alone).
    assert!(ended <= loss_free + 100, "ended at {ended} µs, {loss_free} without loss");
}

#[test]
fn a_record_larger_than_the_window_goes_alone() {
    let big = cfg().window * cfg().body * 3;
    let records = vec![(0, 1, 10), (0, 1, big), (0, 1, 5)];
    let (got, _) = run(2, &records, Faults { loss: 5, dup: 0, reorder: 0, seed: 7 }, cfg());
    check(&records, &got);
}

#[test]
fn a_full_window_says_would_block_until_acknowledged() {
    let (mut a, mut b) = (Endpoint::new(0, 2, key(), cfg()), Endpoint::new(1, 2, key(), cfg()));
    let h = Header::default();
    let mut sent = 0;
    while a.send(0, 1, &h, &[&[7u8; 100]]).is_ok() {
        sent += 1;
    }
    assert_eq!(sent, cfg().window, "one datagram per record");
    let mut wire = Vec::new();
    a.transmit(|_, d| {
        wire.push(d.to_vec());
        true
    });
    let mut n = 0;
    for d in &mut wire {
        b.receive(100, d, &mut |_, _, _| n += 1).unwrap();
    }
    assert_eq!(n, cfg().window);
    b.ack_all();
    b.transmit(|_, d| {
        a.receive(200, &mut d.to_vec(), &mut |_, _, _| panic!("an acknowledgement carries no record")).unwrap();
        true
    });
    assert!(a.flushed());
    assert!(a.send(200, 1, &h, &[&[7u8; 100]]).is_ok());
    assert!(a.srtt(1) <= 200, "the round trip was sampled: {}", a.srtt(1));
}

#[test]
fn a_lost_datagram_is_sent_again_after_the_timeout_which_backs_off() {
    let mut a = Endpoint::new(0, 2, key(), cfg());
    a.send(0, 1, &Header::default(), &[b"x"]).unwrap();
    let mut times = Vec::new();
    for now in (0..20_000).step_by(10) {
        a.on_timer(now);
        a.transmit(|_, _| {
            times.push(now);
            true
        });
    }
    // Sent at 0; the probe after 1000 µs (twice the round trip, which before any sample is
    // the initial timeout, and no more than it); then at each timeout, doubling: 1000, 2000
    // and 4000 µs later.
    assert_eq!(&times[..5], &[0, 1000, 2000, 4000, 8000]);
    assert!(!a.has_failure());
}

#[test]
fn a_silent_peer_fails_after_the_deadline_and_is_reported_once() {
    let mut a = Endpoint::new(0, 2, key(), cfg());
    a.send(0, 1, &Header::default(), &[b"x"]).unwrap();
    a.on_timer(cfg().deadline - 1);
    assert!(!a.has_failure());
    a.on_timer(cfg().deadline);
    let (peer, why) = a.take_failure().expect("a failure");
    assert_eq!(peer, 1);
    assert!(why.contains("no acknowledgement") && why.contains("BB_UDP_TIMEOUT_MS"), "{why}");
    a.on_timer(cfg().deadline * 2);
    assert!(a.take_failure().is_none());
    assert!(a.flushed(), "nothing more waits for a failed peer");
}

#[test]
fn duplicates_and_strangers_are_dropped() {
    let (mut a, mut b) = (Endpoint::new(0, 2, key(), cfg()), Endpoint::new(1, 2, key(), cfg()));
    a.send(0, 1, &Header { aux: 5, ..Header::default() }, &[b"once"]).unwrap();
    let mut wire = Vec::new();
    a.transmit(|_, d| {
        wire.push(d.to_vec());
        true
    });
    let mut n = 0;
    for _ in 0..3 {
        b.receive(10, &mut wire[0].clone(), &mut |s, h, p| {
            assert_eq!((s, h.aux, p), (0, 5, &b"once"[..]));
            n += 1;
        })
        .unwrap();
    }
    assert_eq!(n, 1);
    let mut stranger = Key::new(&Secret::from_hex("ffffffffffffffffffffffffffffffff").unwrap());
    let mut forged = wire[0][..wire[0].len() - wire::MAC].to_vec();
    stranger.seal(&mut forged);
    assert_eq!(b.receive(10, &mut forged, &mut |_, _, _| panic!("forged")), Err(Refused::BadMac));
}

#[test]
fn a_peer_breaking_the_framing_is_failed() {
    let mut b = Endpoint::new(1, 2, key(), cfg());
    let mut d = Vec::new();
    Head { kind: wire::DATA, flags: wire::LAST, src: 0, dst: 1, seq: 0, ack: 0, sack: 0, xmit: 1, echo: 0 }.put(&mut d);
    d.extend_from_slice(b"orphan");
    key().seal(&mut d);
    b.receive(0, &mut d, &mut |_, _, _| panic!("no record")).unwrap();
    let (peer, why) = b.take_failure().unwrap();
    assert!(peer == 0 && why.contains("outside any record"), "{why}");
}

#[test]
fn a_late_original_does_not_condemn_what_left_after_it() {
    // Ten datagrams leave; the timer sends the first again before any comes back (it was only
    // late). Its original then arrives alone and is acknowledged: that acknowledgement must not
    // count the nine still on their way as lost (the repair left after them, but the copy that
    // arrived did not).
    let (mut a, mut b) = (Endpoint::new(0, 2, key(), cfg()), Endpoint::new(1, 2, key(), cfg()));
    for k in 0..10u64 {
        a.send(0, 1, &Header { aux: k, ..Header::default() }, &[&[1u8; 50]]).unwrap();
    }
    let mut wire = Vec::new();
    a.transmit(|_, d| {
        wire.push(d.to_vec());
        true
    });
    let mut repair = 0;
    for now in (0..5000).step_by(10) {
        a.on_timer(now);
        a.transmit(|_, _| {
            repair += 1;
            true
        });
        if repair > 0 {
            break;
        }
    }
    assert_eq!((repair, a.stats.timeouts), (1, 1), "the first datagram went again on the timer");
    b.receive(6000, &mut wire[0], &mut |_, _, _| {}).unwrap();
    b.ack_all();
    let mut acks = Vec::new();
    b.transmit(|_, d| {
        acks.push(d.to_vec());
        true
    });
    for d in &mut acks {
        a.receive(6010, d, &mut |_, _, _| {}).unwrap();
    }
    let mut again = 0;
    a.transmit(|_, _| {
        again += 1;
        true
    });
    assert_eq!((again, a.stats.repairs), (0, 0), "nothing else is sent again: {:?}", a.stats);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_record_arrives_once_in_order_under_any_faults(
        records in prop::collection::vec((0usize..3, 1usize..3, 0usize..3000), 1..120),
        loss in 0u64..25, dup in 0u64..15, reorder in 0u64..40, seed in any::<u64>(),
    ) {
        let records: Vec<_> = records.into_iter().map(|(from, d, len)| (from, (from + d) % 3, len)).collect();
        let (got, _) = run(3, &records, Faults { loss, dup, reorder, seed }, cfg());
        check(&records, &got);
    }
}

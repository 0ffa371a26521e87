//! The socket layer on real sockets: only the offered addresses are bound; a peer whose socket
//! is gone is failed within about a second (its host answers with ICMP port unreachable), one
//! that is alive but never polls is not.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use rustix::event::epoll;

use super::*;
use crate::transport::Channel;

/// Rank 0's channel, and rank 1's sockets (never a channel: a peer that does not poll).
fn pair() -> (UdpChannel, Bound) {
    let secret = Secret::generate().unwrap();
    let (a, b) = (UdpChannel::bind(&[Ipv4Addr::LOCALHOST]).unwrap(), UdpChannel::bind(&[Ipv4Addr::LOCALHOST]).unwrap());
    let addrs: Vec<Option<SocketAddr>> = vec![Some(a.local_addr().unwrap()), Some(b.local_addr().unwrap())];
    let hosts = vec!["here".to_string(), "there".to_string()];
    (UdpChannel::new(0, hosts, a, &secret, addrs).unwrap(), b)
}

/// Polls (sleeping between polls as a waiting rank does) until a failure is reported or `limit`.
fn failure_within(ch: &mut UdpChannel, limit: Duration) -> Option<(usize, String, Duration)> {
    let start = Instant::now();
    while start.elapsed() < limit {
        ch.poll(None, |_, _, _| {});
        if let Some((peer, why)) = ch.take_failure() {
            return Some((peer, why, start.elapsed()));
        }
        let _ = ch.waker();
        ch.sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn a_peer_whose_socket_closed_is_failed_on_the_next_send() {
    let (mut ch, b) = pair();
    drop(b);
    ch.try_send(1, &Header::default(), b"hello").unwrap();
    let (peer, why, took) = failure_within(&mut ch, Duration::from_secs(5)).expect("the dead peer is reported");
    assert_eq!(peer, 1);
    assert!(why.contains("on host there") && why.contains("ICMP port unreachable"), "{why}");
    assert!(took < Duration::from_millis(200), "took {took:?}");
}

#[test]
fn a_dead_peer_nothing_is_sent_to_is_found_by_the_keepalive() {
    let (mut ch, b) = pair();
    drop(b);
    let (peer, why, took) = failure_within(&mut ch, Duration::from_secs(5)).expect("the dead peer is reported");
    assert_eq!(peer, 1);
    assert!(why.contains("the process exited or was killed"), "{why}");
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[test]
fn a_live_peer_that_never_polls_is_not_failed() {
    let (mut ch, _b) = pair();
    ch.try_send(1, &Header::default(), b"hello").unwrap();
    // Several keepalive periods and many retransmissions, unanswered: still alive.
    assert!(failure_within(&mut ch, Duration::from_millis(1800)).is_none());
}

#[test]
fn binds_each_offered_address_on_one_port_and_nothing_else() {
    let offered = [Ipv4Addr::LOCALHOST, Ipv4Addr::new(127, 0, 0, 2)];
    let bound = UdpChannel::bind(&offered).unwrap();
    let port = bound.local_addr().unwrap().port();
    let got: Vec<SocketAddr> = bound.0.iter().map(|s| s.local_addr().unwrap()).collect();
    assert_eq!(got, offered.map(|ip| SocketAddr::from((ip, port))));
    // Not bound on every interface: another socket may take the port on a third address.
    assert!(std::net::UdpSocket::bind((Ipv4Addr::new(127, 0, 0, 3), port)).is_ok());
}

#[test]
fn timers_run_while_a_rank_only_polls() {
    // A rank spinning on empty polls reads the clock only now and then (channel.rs,
    // CLOCK_EVERY), never sleeping in between: the probe and the retransmission timeouts of a
    // datagram nobody acknowledges still go out, on time.
    let (mut ch, b) = pair();
    ch.try_send(1, &Header::default(), b"hello").unwrap();
    // Sent at 0; the probe after the initial timeout (5 ms, no round trip yet), then 5 ms and
    // 10 ms later (the backoff): 3 repeats by about 20 ms. A loaded machine may stretch that,
    // not to a second.
    let start = Instant::now();
    while ch.ep.stats.timeouts < 3 && start.elapsed() < Duration::from_secs(1) {
        assert_eq!(ch.poll(None, |_, _, _| panic!("nothing comes")), 0);
    }
    assert!(ch.ep.stats.timeouts >= 3, "{:?} after {:?}", ch.ep.stats, start.elapsed());
    // They reached the peer's socket: the original and every repeat.
    let mut buf = [0u8; 2048];
    let mut arrived = 0;
    while b.0[0].recv(&mut buf).is_ok() {
        arrived += 1;
    }
    assert_eq!(arrived as u64, 1 + ch.ep.stats.timeouts);
}

/// Polls `ch` until it hands over a record.
fn take_one(ch: &mut UdpChannel) {
    let start = Instant::now();
    while ch.poll(None, |_, _, _| {}) == 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "nothing came");
    }
}

#[test]
fn a_ping_pong_receives_one_datagram_at_a_time_and_a_stream_in_batches() {
    // Every poll of a rank that yields before polling (a crowded core) finds its datagram;
    // answered each time, it is a ping-pong, and a batch receive (recvmmsg) would cost more
    // than a single one for the one datagram there is.
    let mut eps = endpoints(2);
    let mut b = eps.pop().unwrap();
    let mut a = eps.pop().unwrap();
    for _ in 0..4 {
        a.try_send(1, &Header::default(), b"ping").unwrap();
        take_one(&mut b);
        b.try_send(0, &Header::default(), b"pong").unwrap();
        take_one(&mut a);
        assert!(!a.busy && !b.busy, "a ping-pong takes single receives");
    }
    // Records that come unanswered, one per poll: a stream, read in batches from the second.
    for _ in 0..3 {
        a.try_send(1, &Header::default(), b"more").unwrap();
        take_one(&mut b);
    }
    assert!(b.busy, "a stream takes batches");
}

/// Whether `ch`'s epoll set, where a sleeping rank waits, is ready now.
fn wakes_now(ch: &UdpChannel) -> bool {
    let mut events: Vec<epoll::Event> = Vec::with_capacity(4);
    let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
    epoll::wait(&*ch.epoll, rustix::buffer::spare_capacity(&mut events), Some(&zero)).unwrap();
    !events.is_empty()
}

#[test]
fn the_receiving_socket_is_never_in_the_epoll_set_and_a_sleep_watches_it() {
    // A socket in an epoll set has each arriving datagram run the set's callback, and joining
    // the set for a sleep and leaving it cost two epoll_ctl a sleep: the socket stays out, and
    // a sleep watches it beside the set, a datagram already waiting waking it at once.
    let mut eps = endpoints(2);
    let mut b = eps.pop().unwrap();
    let mut a = eps.pop().unwrap();
    a.try_send(1, &Header::default(), b"ping").unwrap();
    let _ = b.waker();
    assert!(!wakes_now(&b), "a sleeping rank's socket is out of the set too");
    assert!(slept(&b, Duration::from_secs(5)) < Duration::from_secs(2), "the datagram waiting wakes a sleep at once");
    take_one(&mut b);
    let _ = b.waker();
    assert!(slept(&b, Duration::from_millis(50)) >= Duration::from_millis(40), "nothing waits: the sleep lasts");
    // A datagram that comes during the sleep wakes it.
    let took = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            a.try_send(1, &Header::default(), b"ping").unwrap();
        });
        slept(&b, Duration::from_secs(5))
    });
    assert!(took < Duration::from_secs(2), "slept {took:?} past the datagram");
    take_one(&mut b);
}

/// How long a sleep of `ch` of at most `limit` lasted.
fn slept(ch: &UdpChannel, limit: Duration) -> Duration {
    let start = Instant::now();
    ch.sleep(limit);
    start.elapsed()
}

#[test]
fn a_lone_datagram_leaves_unsegmented_and_a_batch_is_cut_by_the_kernel() {
    // UDP_SEGMENT set on a socket sends every datagram down the kernel's segmentation path
    // (0.3 us more per small datagram); only a send of several carries it.
    let mut eps = endpoints(2);
    let b = eps.pop().unwrap();
    let a = eps.pop().unwrap();
    let sender = a.senders[1].as_ref().unwrap();
    let mut value: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live local `value`.
    let rc = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(sender),
            libc::SOL_UDP,
            libc::UDP_SEGMENT,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!((rc, value), (0, 0), "no segmentation on the socket itself");
    let bytes: Vec<u8> = (0..250u8).collect();
    assert_eq!(sockets::send_segmented(sender, &bytes, 100).unwrap(), 250);
    let mut buf = [0u8; 512];
    let mut sizes = Vec::new();
    while let Ok(n) = b.socks[0].recv(&mut buf) {
        sizes.push((n, buf[0]));
    }
    assert_eq!(sizes, [(100, 0), (100, 100), (50, 200)]);
}

#[test]
fn the_next_deadline_kept_is_never_later_than_the_true_one() {
    // A datagram lowers `due` to its sender's deadline only, and nothing recomputes it over
    // every peer until timers run: it may be early (an acknowledgement stopped a timer), never
    // late (a timer would be missed). Ping-pongs, a stream, and silence with timers firing.
    let mut eps = endpoints(3);
    let mut c = eps.pop().unwrap();
    let mut b = eps.pop().unwrap();
    let mut a = eps.pop().unwrap();
    let check = |ch: &UdpChannel| {
        let truth = ch.ep.next_deadline().unwrap_or(u64::MAX);
        assert!(ch.due <= truth, "due {} after the next deadline {truth}", ch.due);
    };
    for round in 0..20 {
        a.try_send(1, &Header::default(), b"ping").unwrap();
        a.try_send(2, &Header::default(), &[7; 3000]).unwrap();
        for ch in [&mut a, &mut b, &mut c] {
            check(ch);
        }
        take_one(&mut b);
        take_one(&mut c);
        b.try_send(0, &Header::default(), b"pong").unwrap();
        if round % 3 == 0 {
            c.try_send(0, &Header::default(), b"pong").unwrap();
        }
        take_one(&mut a);
        for ch in [&mut a, &mut b, &mut c] {
            ch.poll(None, |_, _, _| {});
            check(ch);
        }
    }
    // Silence: delayed acknowledgements and probes come due while the ranks only poll.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(30) {
        for ch in [&mut a, &mut b, &mut c] {
            ch.poll(None, |_, _, _| {});
            check(ch);
        }
    }
}

#[test]
fn a_hosts_report_wakes_no_one_and_the_next_sleep_reads_it() {
    // The sockets a rank sends from are never in its epoll set (each datagram leaving one ran
    // the set's callback): a peer's host's ICMP report waits in the socket's error queue for
    // the look before the next sleep.
    let (mut ch, b) = pair();
    drop(b);
    ch.try_send(1, &Header::default(), b"hello").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(!wakes_now(&ch), "a sender socket is not in the set");
    assert!(ch.take_failure().is_none());
    let _ = ch.waker();
    let (peer, why) = ch.take_failure().expect("the report, read before the sleep");
    assert!(peer == 1 && why.contains("ICMP port unreachable"), "{why}");
}

#[test]
fn sleeps_in_a_row_read_the_error_queues_now_and_then_and_keep_a_timer_that_fires_in_time() {
    // Each sleep read every socket's error queue and set the timer: two ranks on one core that
    // sleep once a message paid three system calls for them. A sender asleep after each of 50
    // sends to a peer that does not answer: one look at the queues, and its timer, set for the
    // first retransmission (which the later sends do not bring forward), set once.
    let mut eps = endpoints(2);
    let _b = eps.pop().unwrap();
    let mut a = eps.pop().unwrap();
    for _ in 0..50 {
        a.try_send(1, &Header::default(), b"ping").unwrap();
        let _ = a.waker();
    }
    assert_eq!(a.error_reads, 1, "the error queues, read once within ERRORS_EVERY_US");
    assert!(a.timer_sets <= 2, "the timer set {} times", a.timer_sets);
    // The timer kept still wakes the sleeper when a retransmission is due.
    let due = a.ep.next_deadline().expect("datagrams in flight");
    let start = Instant::now();
    crate::transport::tcp::sleep_on(&a.epoll, Duration::from_secs(2)); // the timer alone
    let slept = start.elapsed();
    let until_due = Duration::from_micros(due.saturating_sub(a.now()));
    assert!(slept < Duration::from_millis(500), "slept {slept:?}: the timer did not fire (due in {until_due:?})");
    // After the interval, the next sleep reads the queues again.
    std::thread::sleep(Duration::from_micros(ERRORS_EVERY_US));
    let _ = a.waker();
    assert_eq!(a.error_reads, 2);
}

#[test]
fn a_sleep_watches_every_receiving_socket_however_many() {
    // One socket per offered address: past the few a sleep keeps on its stack, the rest are
    // watched too (a datagram on the last one wakes it).
    let set = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    let socks: Vec<std::net::UdpSocket> =
        (0..12).map(|_| std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap()).collect();
    let watch: Vec<OwnedFd> = socks.iter().map(|s| OwnedFd::from(s.try_clone().unwrap())).collect();
    for n in [1, 12] {
        let start = Instant::now();
        sockets::sleep_watching(&set, &watch[..n], Duration::from_millis(30));
        assert!(start.elapsed() >= Duration::from_millis(25), "{n} sockets: nothing waits, the sleep lasts");
        let last = &socks[n - 1];
        last.send_to(b"x", last.local_addr().unwrap()).unwrap();
        let start = Instant::now();
        sockets::sleep_watching(&set, &watch[..n], Duration::from_secs(5));
        assert!(start.elapsed() < Duration::from_secs(2), "{n} sockets: the datagram on the last one wakes it");
        last.recv(&mut [0u8; 8]).unwrap();
    }
}

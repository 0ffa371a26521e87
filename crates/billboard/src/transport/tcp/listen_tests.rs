use super::*;
use crate::transport::tcp::channel::set_up;
use crate::transport::tcp::handshake::Initiator;
use crate::transport::tcp::TcpChannel;
use crate::transport::{Channel, Header};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;

fn connect(port: u16) -> TcpStream {
    TcpStream::connect((LOCAL, port)).unwrap()
}

/// Whether the other end closed `s` within `wait`.
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 256];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            _ => {}
        }
    }
    false
}

/// One record from rank `from` to rank `to`, polling both.
fn one_record(eps: &mut [TcpChannel], from: usize, to: usize) {
    let h = Header { kind: 1, context: 2, source: from as u32, tag: 9, aux: 42 };
    eps[from].try_send(to, &h, b"hello").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = None;
    while got.is_none() {
        assert!(Instant::now() < deadline, "rank {to} never got rank {from}'s record");
        eps[from].poll(None, |_, _, _| {});
        eps[to].poll(None, |s, h, p| got = Some((s, h.aux, p.to_vec())));
    }
    assert_eq!(got, Some((from, 42, b"hello".to_vec())));
}

#[test]
fn listeners_bind_only_the_chosen_addresses_on_one_port() {
    let chosen = [Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];
    let l = listen(&chosen).unwrap();
    let bound: Vec<SocketAddr> = l.socks.iter().map(|s| s.local_addr().unwrap()).collect();
    assert_eq!(bound, chosen.map(|a| SocketAddr::from((a, l.port))));
    // Another address of this host, on the same port: nobody listens there.
    let e = TcpStream::connect((LOCAL, l.port)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "127.0.0.1:{} answered", l.port);
    assert!(TcpStream::connect((chosen[1], l.port)).is_ok());
    // An address this host does not have is an error naming it.
    let e = listen(&[Ipv4Addr::new(192, 0, 2, 77)]).err().unwrap().to_string();
    assert!(e.contains("192.0.2.77") && e.contains("BB_TCP_IF"), "{e}");
}

/// Strangers of every kind knock on rank 0's port before its peer does; set-up still ends as soon
/// as the peer is in (well before a silent stranger's 10 s deadline), every stranger is
/// disconnected, and afterwards the ports refuse connections: the listeners are closed.
#[test]
fn strangers_during_set_up_cost_nothing_and_the_listeners_close_after_it() {
    let secret = Secret::generate().unwrap();
    let listeners: Vec<Listeners> = (0..2).map(|_| listen(&[LOCAL]).unwrap()).collect();
    let ports: Vec<u16> = listeners.iter().map(|l| l.port).collect();

    let mut garbage = connect(ports[0]);
    garbage.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    // A well-formed HELLO from someone without the secret, then a made-up PROOF.
    let mut wrong_secret = connect(ports[0]);
    wrong_secret.write_all(&Initiator::new(&Secret::generate().unwrap(), 1, 0).unwrap().take_transmit()).unwrap();
    wrong_secret.write_all(&[0x5a; 32]).unwrap();
    // A HELLO, then silence after the CHALLENGE.
    let mut hello_only = connect(ports[0]);
    hello_only.write_all(&Initiator::new(&Secret::generate().unwrap(), 1, 0).unwrap().take_transmit()).unwrap();
    // Port scanners: connect, say nothing; more of them than there are slots.
    let mut silent: Vec<TcpStream> = (0..3 * STRANGER_SLOTS).map(|_| connect(ports[0])).collect();

    let started = Instant::now();
    let mut eps = set_up(listeners, &secret);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "set-up took {took:?}: strangers held it up");
    one_record(&mut eps, 0, 1);
    one_record(&mut eps, 1, 0);

    for (what, s) in
        [("garbage", &mut garbage), ("a wrong secret", &mut wrong_secret), ("a silent HELLO", &mut hello_only)]
    {
        assert!(closed_within(s, Duration::from_secs(2)), "{what} was not disconnected");
    }
    for (k, s) in silent.iter_mut().enumerate() {
        assert!(closed_within(s, Duration::from_secs(2)), "silent stranger {k} was not disconnected");
    }
    for port in ports {
        let e = TcpStream::connect((LOCAL, port)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "port {port} still accepts after set-up");
    }
    assert!(!eps[0].has_failure() && !eps[1].has_failure());
}

/// A flood of silent connections holds at most `STRANGER_SLOTS` descriptors beyond the peers
/// expected, and an honest peer arriving behind it is accepted and authenticated.
#[test]
fn a_flood_of_silent_connections_is_bounded_and_an_honest_peer_gets_through() {
    let secret = Secret::generate().unwrap();
    let l = listen(&[LOCAL]).unwrap();
    let flood: Vec<TcpStream> = (0..100).map(|_| connect(l.port)).collect();
    let mut honest = Handshaking::connect(SocketAddr::from((LOCAL, l.port)), &secret, 1, 0).unwrap();
    let mut incoming = Incoming::new(0, 2);
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut theirs, mut ours) = (None, None);
    while theirs.is_none() || ours.is_none() {
        assert!(Instant::now() < deadline, "the honest peer never got through");
        let now = Instant::now();
        incoming.accept(&l, &secret, 1, now).unwrap();
        assert!(incoming.list.len() <= 1 + STRANGER_SLOTS, "{} handshakes held", incoming.list.len());
        for (peer, _, _) in incoming.step(now) {
            theirs = Some(peer);
        }
        if let Progress::Done { peer, .. } = honest.step() {
            ours = Some(peer);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!((theirs, ours), (Some(1), Some(0)));
    assert!(incoming.dropped() >= 100 - (1 + STRANGER_SLOTS), "only {} dropped", incoming.dropped());
    drop(flood);
}

/// An acceptor that drops a connection mid-handshake (to make room, see `Incoming::make_room`)
/// does not fail the job: the initiator connects again.
#[test]
fn an_initiator_whose_connection_is_dropped_connects_again() {
    use crate::transport::tcp::setup::{establish, Target};
    let secret = Secret::generate().unwrap();
    let listeners: Vec<Listeners> = (0..2).map(|_| listen(&[LOCAL]).unwrap()).collect();
    let targets: Vec<Target> = listeners
        .iter()
        .enumerate()
        .map(|(rank, l)| Target { rank, host: "localhost".into(), addrs: vec![SocketAddr::from((LOCAL, l.port))] })
        .collect();
    let mut it = listeners.into_iter();
    let (zero, one) = (it.next().unwrap(), it.next().unwrap());
    std::thread::scope(|s| {
        let rank1 = s.spawn(|| establish(1, 2, one, &targets, &secret));
        // Rank 0 takes rank 1's first connection, reads its HELLO, and drops it.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut first = loop {
            assert!(Instant::now() < deadline, "rank 1 never connected");
            match zero.socks[0].accept() {
                Ok((c, _)) => break c,
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        first.set_nonblocking(false).unwrap();
        first.read_exact(&mut [0u8; 48]).unwrap();
        drop(first);
        let rank0 = establish(0, 2, zero, &targets, &secret).expect("rank 0's set-up");
        let rank1 = rank1.join().unwrap().expect("rank 1 gave up instead of connecting again");
        assert_eq!((rank0.len(), rank0[0].0, rank1.len(), rank1[0].0), (1, 1, 1, 0));
    });
}

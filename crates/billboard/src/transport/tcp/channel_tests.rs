use super::*;
use std::io::Read;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Records `to` has received, polling both ends (a sender may hold a tail until it polls).
pub(crate) fn exchange(eps: &mut [TcpChannel], from: usize, to: usize, n: u64) {
    let mut got = Vec::new();
    for k in 0..n {
        let h = Header { kind: 1, context: 2, source: from as u32, tag: 5, aux: k };
        while eps[from].try_send(to, &h, &k.to_le_bytes()).is_err() {
            eps[to].poll(None, |_, h, _| got.push(h.aux));
        }
    }
    while (got.len() as u64) < n {
        eps[to].poll(None, |s, h, p| {
            assert_eq!((s, p), (from, &h.aux.to_le_bytes()[..]));
            got.push(h.aux)
        });
        eps[from].poll(None, |_, _, _| {});
    }
    assert_eq!(got, (0..n).collect::<Vec<_>>());
}

#[test]
fn a_broken_connection_is_reported_once_naming_the_peer() {
    let mut eps = endpoints(3);
    exchange(&mut eps, 0, 1, 5);
    // Rank 0's end of its connection to rank 1 goes away without a goodbye.
    let fd = eps[0].conns[1].as_ref().unwrap().fd.as_raw_fd();
    // SAFETY: shuts down a socket we own; the fd itself stays open until the channel drops.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
    let mut failure = None;
    for _ in 0..10_000 {
        eps[1].poll(None, |_, _, _| {});
        if let Some(f) = eps[1].take_failure() {
            failure = Some(f);
            break;
        }
    }
    let (peer, why) = failure.expect("rank 1 never noticed rank 0's connection break");
    assert_eq!(peer, 0);
    assert!(why.contains("on host localhost"), "{why}");
    for _ in 0..100 {
        eps[1].poll(None, |_, _, _| {});
    }
    assert!(eps[1].take_failure().is_none(), "reported twice");
    // The other routes are intact.
    exchange(&mut eps, 2, 1, 20);
    exchange(&mut eps, 1, 2, 20);
}

#[test]
fn an_orderly_close_is_no_failure() {
    let mut eps = endpoints(2);
    exchange(&mut eps, 0, 1, 5);
    let gone = eps.remove(0);
    drop(gone);
    for _ in 0..1000 {
        eps[0].poll(None, |_, _, _| {});
    }
    assert!(eps[0].take_failure().is_none());
}

#[test]
fn a_connection_closed_for_its_records_ends_at_both_ends() {
    let mut eps = endpoints(2);
    exchange(&mut eps, 1, 0, 3);
    eps[0].close(1, "it broke the message protocol");
    let h = Header { kind: 1, context: 2, source: 1, tag: 5, aux: 0 };
    let _ = eps[1].try_send(0, &h, b"after");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !eps[1].has_failure() {
        assert!(Instant::now() < deadline, "the peer never saw the connection end");
        eps[0].poll(Some(1), |_, _, _| panic!("a closed connection's records reached the engine"));
        eps[1].poll(None, |_, _, _| {});
    }
    assert_eq!(eps[1].take_failure().map(|f| f.0), Some(0));
    assert!(!eps[0].has_failure(), "the closing end knows already: not reported again");
}

/// A peer that finishes its side of the handshake first may send at once, and its first frame
/// then arrives with the handshake's last message: the handshake hands those bytes over
/// (`early`) and they sit in the connection's reader, where epoll cannot see them. A poll
/// without a hint (MPI_Test of a nonblocking collective) must still deliver them; it did only
/// when a poll named that peer, so an MPI_Iallreduce completed by MPI_Test loops hung.
#[test]
fn frames_read_with_the_handshake_are_delivered_without_a_hint() {
    use crate::transport::tcp::wire::FRAME_HEADER_BYTES;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut server, _) = l.accept().unwrap();
    // Rank 1 sends one record; rank 0's handshake read it along with its last message.
    let mut sender = Conn::new(OwnedFd::from(client), &[]);
    let h = Header { kind: 1, context: 2, source: 1, tag: 5, aux: 7 };
    assert!(sender.send(&h, b"early").is_ok());
    let mut early = vec![0u8; FRAME_HEADER_BYTES + 5];
    server.read_exact(&mut early).unwrap();
    let hosts = vec!["localhost".to_string(); 2];
    let mut ep = TcpChannel::new(0, hosts, vec![(1, OwnedFd::from(server), early)]).unwrap();
    let mut got = Vec::new();
    for _ in 0..100 {
        ep.poll(None, |peer, h, p| got.push((peer, h.tag, h.aux, p.to_vec())));
    }
    assert_eq!(got, vec![(1, 5, 7, b"early".to_vec())]);
}

/// Whether the channel's epoll set reports a socket ready now (one zero-timeout look).
fn set_reports_ready(ep: &TcpChannel) -> bool {
    let mut events = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 4];
    let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
    !epoll::wait(&*ep.epoll, &mut events, Some(&zero)).unwrap().0.is_empty()
}

/// One rank a host: a channel's only connection stays out of its epoll set (a socket in a set
/// makes every arrival run the set's wake-up in the sender's `send`, which the raw ping-pong
/// does not pay), yet polls without a hint deliver its records, a sleeper wakes on them through
/// the watch, it joins the set while it holds bytes back (so a sleeper wakes when they can go),
/// and a second connection puts it back in the set.
#[test]
fn a_lone_connection_stays_out_of_the_epoll_set_and_still_wakes_a_sleeper() {
    let mut eps = endpoints(2);
    for ep in eps.iter_mut() {
        ep.watch_alone().unwrap();
        assert_eq!(ep.watch().map(|w| w.len()), Some(1), "the lone connection is watched");
    }
    let h = Header { kind: 1, context: 2, source: 0, tag: 5, aux: 9 };
    eps[0].try_send(1, &h, b"ping").unwrap();
    // The record is in rank 1's socket, but its set reports nothing: the socket is not in it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.is_empty() {
        assert!(Instant::now() < deadline, "no record");
        assert!(!set_reports_ready(&eps[1]), "the lone connection is in the epoll set");
        eps[1].poll(None, |peer, h, p| got.push((peer, h.aux, p.to_vec())));
    }
    assert_eq!(got, vec![(0, 9, b"ping".to_vec())]);
    // A sleeper (on the set and the watch) wakes on the next record, not at its timeout.
    let sleeper = std::thread::spawn({
        let (set, watch) = (Arc::clone(&eps[1].epoll), eps[1].watch().unwrap());
        move || {
            let start = Instant::now();
            crate::transport::udp::sleep_watching(&*set, &watch, Duration::from_secs(30));
            start.elapsed()
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    eps[0].try_send(1, &h, b"wake").unwrap();
    assert!(sleeper.join().unwrap() < Duration::from_secs(20), "the sleeper slept through the record");
    // Bytes held back (rank 1 reads nothing): the connection joins the set for them, with
    // EPOLLOUT, and leaves it once they went.
    let big = vec![3u8; 1 << 20];
    let mut held = false;
    for _ in 0..64 {
        if eps[0].try_send(1, &h, &big).is_err() {
            break;
        }
        if eps[0].conns[1].as_ref().unwrap().pending() > 0 {
            held = true;
            break;
        }
    }
    assert!(held, "the socket took 64 MiB without holding any back");
    drop(eps[0].waker());
    assert!(eps[0].conns[1].as_ref().unwrap().wants_out, "bytes held back: in the set for EPOLLOUT");
    while !eps[0].flushed() {
        eps[1].poll(None, |_, _, _| {});
        eps[0].poll(None, |_, _, _| {});
    }
    assert!(!eps[0].conns[1].as_ref().unwrap().wants_out);
    for _ in 0..100 {
        eps[1].poll(None, |_, _, _| {});
    }
    assert!(!set_reports_ready(&eps[1]) && !set_reports_ready(&eps[0]), "back out of the set");
    // A second connection: the first goes back into the set and the watch ends.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (server, _) = l.accept().unwrap();
    eps[1].add(vec![(2, "localhost".into())], vec![(2, OwnedFd::from(server), Vec::new())]).unwrap();
    assert!(eps[1].watch().is_none());
    eps[0].try_send(1, &h, b"in the set").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !set_reports_ready(&eps[1]) {
        assert!(Instant::now() < deadline, "the first connection is not back in the set");
    }
    drop(client);
}

/// A connected pair over loopback: our end for the channel, the other for the test to read.
fn socket_pair() -> (OwnedFd, TcpStream) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (ours, _) = l.accept().unwrap();
    (OwnedFd::from(ours), other)
}

#[test]
fn a_released_peer_number_is_taken_by_the_next_peer_to_join() {
    let mut eps = endpoints(2);
    let (fd, mut first) = socket_pair();
    eps[1].add(vec![(2, "first".into())], vec![(2, fd, Vec::new())]).unwrap();
    let h = Header { kind: 1, context: 2, source: 1, tag: 5, aux: 0 };
    eps[1].try_send(2, &h, b"to the first").unwrap();
    eps[1].release(2);
    assert!(!eps[1].reaches(2), "released: no connection to rank 2");
    // The first peer got its record and the goodbye, then the end of the stream.
    first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut seen = Vec::new();
    first.read_to_end(&mut seen).unwrap();
    assert!(seen.windows(12).any(|w| w == b"to the first"), "the record sent before the release arrived");
    // The number goes to a new peer: same table size, a fresh connection, no stale failure.
    let (fd, mut second) = socket_pair();
    eps[1].add(vec![(2, "second".into())], vec![(2, fd, Vec::new())]).unwrap();
    assert_eq!(eps[1].nranks(), 3);
    assert_eq!(eps[1].hosts[2], "second");
    eps[1].try_send(2, &h, b"to the second").unwrap();
    second.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = vec![0u8; 64];
    let n = second.read(&mut got).unwrap();
    assert!(got[..n].windows(13).any(|w| w == b"to the second"));
    assert!(!eps[1].has_failure(), "the first peer's end is not reported against the second");
}

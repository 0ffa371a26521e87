//! Opening the TCP route: listening sockets on the addresses this rank publishes (`listen.rs`),
//! one authenticated connection per pair of ranks that needs one. The higher rank connects to the
//! lower, both run the secret-based handshake (`handshake.rs`) under a deadline, and anything that
//! fails it is dropped and logged: a stranger on the port never becomes a peer and never stops the
//! job from starting. Once every expected peer is connected the listeners are closed.

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use super::handshake::{Acceptor, Initiator, Secret, Step};
use super::listen::{Incoming, Listeners};
use crate::transport::{BLOCK_BOUND, WAIT_BLOCK};
use crate::tunables::Tunable;
use crate::{Error, Result};

pub static CONNECT_TIMEOUT_MS: Tunable = Tunable::new(
    "BB_TCP_CONNECT_MS",
    30_000,
    "how long a rank waits for all its TCP peers to connect and authenticate at start (ms)",
);
pub static TIMEOUT_MS: Tunable = Tunable::new(
    "BB_TCP_TIMEOUT_MS",
    10_000,
    "a TCP peer silent this long with data unacknowledged, or failing keepalive probes, is reported dead (ms)",
);

/// A stranger that connects and says nothing is dropped after this.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A rank this one must reach over TCP, as the key-value exchange described it.
#[derive(Clone, Debug)]
pub struct Target {
    pub rank: usize,
    pub host: String,
    /// Where to try, in order.
    pub addrs: Vec<SocketAddr>,
}

/// Socket options of every established connection: no Nagle delay (small messages go at once),
/// a dead peer or a cut link noticed within `BB_TCP_TIMEOUT_MS`, data pending or not; and with
/// `BB_WAIT_BLOCK`, blocking for at most [`BLOCK_BOUND`]: every call on it but a blocking poll's receive passes
/// `MSG_DONTWAIT`, and that one may then wait in the kernel (`Conn::receive`).
pub(crate) fn tune(fd: impl AsFd) -> Result<()> {
    use rustix::net::sockopt;
    let timeout = TIMEOUT_MS.get().max(1000);
    let os = |e: Errno| Error::Os { call: "setsockopt (TCP connection)", errno: e.into() };
    sockopt::set_tcp_nodelay(&fd, true).map_err(os)?;
    sockopt::set_socket_keepalive(&fd, true).map_err(os)?;
    let probe = Duration::from_millis((timeout / 4) as u64);
    sockopt::set_tcp_keepidle(&fd, probe.max(Duration::from_secs(1))).map_err(os)?;
    sockopt::set_tcp_keepintvl(&fd, probe.max(Duration::from_secs(1))).map_err(os)?;
    sockopt::set_tcp_keepcnt(&fd, 3).map_err(os)?;
    sockopt::set_tcp_user_timeout(&fd, timeout as u32).map_err(os)?;
    if WAIT_BLOCK.get() != 0 {
        sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(BLOCK_BOUND)).map_err(os)?;
        let flags = rustix::fs::fcntl_getfl(&fd).map_err(os)?;
        rustix::fs::fcntl_setfl(&fd, flags - rustix::fs::OFlags::NONBLOCK).map_err(os)?;
    }
    Ok(())
}

enum Side {
    Initiator(Initiator),
    Acceptor(Acceptor),
}

/// A connection still proving itself.
pub(crate) struct Handshaking {
    pub fd: OwnedFd,
    side: Side,
    /// The initiator's non-blocking connect has completed.
    connected: bool,
    /// Handshake bytes not yet taken by the socket.
    transmit: Vec<u8>,
    pub started: Instant,
    pub deadline: Instant,
    /// When an acceptor had the initiator's HELLO (and sent its CHALLENGE).
    heard: Option<Instant>,
    /// Who is at the other end, for messages: the address, and the rank once known.
    pub remote: String,
}

/// What one step of a handshake came to.
pub(crate) enum Progress {
    Waiting,
    /// Authenticated `peer`; `early` are bytes that followed the handshake (frames).
    Done {
        peer: usize,
        early: Vec<u8>,
    },
    /// `retry`: the connection was made and then lost (the acceptor may have dropped it to make
    /// room, see `listen.rs`): an initiator connects again.
    Failed {
        why: String,
        retry: bool,
    },
}

fn failed(why: impl Into<String>, retry: bool) -> Progress {
    Progress::Failed { why: why.into(), retry }
}

impl Handshaking {
    /// Starts connecting to `addr` to authenticate as `me` to `peer`.
    pub fn connect(addr: SocketAddr, secret: &Secret, me: usize, peer: usize) -> Result<Handshaking> {
        let family = if addr.is_ipv4() { AddressFamily::INET } else { AddressFamily::INET6 };
        let os = |call| move |e: Errno| Error::Os { call, errno: e.into() };
        let fd =
            rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC, None)
                .map_err(os("socket"))?;
        match rustix::net::connect(&fd, &addr) {
            Ok(()) | Err(Errno::INPROGRESS) | Err(Errno::INTR) => {}
            Err(e) => return Err(os("connect")(e)),
        }
        let side = Initiator::new(secret, me as u32, peer as u32).map_err(|e| Error::Bootstrap(e.to_string()))?;
        Ok(Handshaking {
            fd,
            side: Side::Initiator(side),
            connected: false,
            transmit: Vec::new(),
            started: Instant::now(),
            deadline: Instant::now() + HANDSHAKE_TIMEOUT,
            heard: None,
            remote: addr.to_string(),
        })
    }

    /// Takes an accepted connection, to authenticate it as one of `nranks` ranks.
    pub fn accept(fd: OwnedFd, from: String, secret: &Secret, me: usize, nranks: usize) -> Result<Handshaking> {
        let side = Acceptor::new(secret, me as u32, nranks as u32).map_err(|e| Error::Bootstrap(e.to_string()))?;
        Ok(Handshaking {
            fd,
            side: Side::Acceptor(side),
            connected: true,
            transmit: Vec::new(),
            started: Instant::now(),
            deadline: Instant::now() + HANDSHAKE_TIMEOUT,
            heard: None,
            remote: from,
        })
    }

    /// Moves the handshake on as far as the socket allows without blocking.
    pub fn step(&mut self) -> Progress {
        if !self.connected {
            match rustix::net::sockopt::socket_error(&self.fd) {
                Ok(Ok(())) => {}
                Ok(Err(e)) | Err(e) => return failed(format!("cannot connect: {e}"), false),
            }
            match rustix::net::getpeername(&self.fd) {
                Ok(_) => self.connected = true,
                Err(Errno::NOTCONN) => return Progress::Waiting,
                Err(e) => return failed(format!("cannot connect: {e}"), false),
            }
            if let Side::Initiator(i) = &mut self.side {
                self.transmit = i.take_transmit();
            }
        }
        if let Err(e) = self.send_transmit() {
            return failed(e, true);
        }
        let mut buf = [0u8; 512];
        loop {
            let n = match rustix::net::recv(&self.fd, &mut buf, RecvFlags::DONTWAIT) {
                Ok((0, _)) => return failed("closed during the handshake", true),
                Ok((n, _)) => n,
                Err(Errno::AGAIN) => return Progress::Waiting,
                Err(Errno::INTR) => continue,
                Err(e) => return failed(format!("failed during the handshake: {e}"), true),
            };
            let (step, more) = match &mut self.side {
                Side::Initiator(i) => (i.on_bytes(&buf[..n]), i.take_transmit()),
                Side::Acceptor(a) => {
                    let step = a.on_bytes(&buf[..n]);
                    if self.heard.is_none() && a.peer().is_some() {
                        self.heard = Some(Instant::now());
                    }
                    (step, a.take_transmit())
                }
            };
            self.transmit.extend_from_slice(&more);
            if let Err(e) = self.send_transmit() {
                return failed(e, true);
            }
            match step {
                Ok(Step::Wait) => {}
                Ok(Step::Done { peer, consumed }) => {
                    if !self.transmit.is_empty() {
                        return failed("the socket would not take the handshake's last message", true);
                    }
                    return Progress::Done { peer: peer as usize, early: buf[consumed..n].to_vec() };
                }
                Err(e) => return failed(e.to_string(), false),
            }
        }
    }

    /// When an acceptor had the HELLO and sent its CHALLENGE (never, for an initiator).
    pub fn heard_at(&self) -> Option<Instant> {
        self.heard
    }

    /// Sends pending handshake bytes (a few dozen: an empty socket buffer always takes them).
    fn send_transmit(&mut self) -> std::result::Result<(), String> {
        while !self.transmit.is_empty() {
            match rustix::net::send(&self.fd, &self.transmit, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
                Ok(n) => {
                    self.transmit.drain(..n);
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => return Ok(()),
                Err(e) => return Err(format!("failed during the handshake: {e}")),
            }
        }
        Ok(())
    }
}

/// A connection this rank makes: to `expected[k]`, at its address number `addr`.
struct Outgoing {
    k: usize,
    addr: usize,
    h: Handshaking,
}

/// Connects to every target below `me`, accepts the targets above it, authenticates all, then
/// closes the listeners (nothing later in a job connects to them) and returns the sockets by
/// peer rank. Fails naming the first peer that cannot be reached or did not show up in time.
pub(crate) fn establish(
    me: usize,
    nranks: usize,
    listeners: Listeners,
    targets: &[Target],
    secret: &Secret,
) -> Result<Vec<(usize, OwnedFd, Vec<u8>)>> {
    let deadline = Instant::now() + Duration::from_millis(CONNECT_TIMEOUT_MS.get() as u64);
    let epfd =
        epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| Error::Os { call: "epoll_create", errno: e.into() })?;
    let expected: Vec<&Target> = targets.iter().filter(|t| t.rank != me).collect();
    let mut outgoing: Vec<Outgoing> = Vec::new();
    for (k, t) in expected.iter().enumerate().filter(|(_, t)| t.rank < me) {
        outgoing.push(Outgoing { k, addr: 0, h: start_connect(t, 0, secret, me)? });
    }
    let mut incoming = Incoming::new(me, nranks);
    let mut done: Vec<Option<(OwnedFd, Vec<u8>)>> = (0..nranks).map(|_| None).collect();
    let mut missing = expected.len();
    let mut missing_in = expected.iter().filter(|t| t.rank > me).count();
    for l in &listeners.socks {
        epoll::add(&epfd, l, epoll::EventData::new_u64(u64::MAX), epoll::EventFlags::IN)
            .map_err(|e| Error::Os { call: "epoll_ctl", errno: e.into() })?;
    }
    let mut events = Vec::with_capacity(64);
    while missing > 0 {
        let now = Instant::now();
        if now > deadline {
            let late: Vec<String> = expected
                .iter()
                .filter(|t| done[t.rank].is_none())
                .map(|t| format!("rank {} on host {} ({})", t.rank, t.host, addrs_text(&t.addrs)))
                .collect();
            return Err(Error::Bootstrap(format!(
                "rank {me}: no authenticated TCP connection within {} ms (BB_TCP_CONNECT_MS) from {}",
                CONNECT_TIMEOUT_MS.get(),
                late.join(", ")
            )));
        }
        incoming.accept(&listeners, secret, missing_in, now)?;
        for (peer, h, early) in incoming.step(now) {
            if peer < me || done[peer].is_some() || !expected.iter().any(|t| t.rank == peer) {
                incoming.drop_one(&h, &format!("rank {peer} is not expected to connect here (a replay?)"));
            } else {
                done[peer] = Some((h.fd, early));
                missing -= 1;
                missing_in -= 1;
            }
        }
        let mut j = 0;
        while j < outgoing.len() {
            let o = &mut outgoing[j];
            let t = expected[o.k];
            let failure = match o.h.step() {
                Progress::Waiting if o.h.deadline > now => None,
                // Connected and then silent: the acceptor may be busy, or dropped us; try again.
                Progress::Waiting => Some(("no answer in time".to_string(), o.h.connected)),
                Progress::Done { peer, early } => {
                    let o = outgoing.swap_remove(j);
                    debug_assert_eq!(peer, t.rank);
                    done[t.rank] = Some((o.h.fd, early));
                    missing -= 1;
                    continue;
                }
                Progress::Failed { why, retry } => Some((why, retry)),
            };
            match failure {
                None => {}
                Some((_, true)) => o.h = start_connect(t, o.addr, secret, me)?,
                Some(_) if o.addr + 1 < t.addrs.len() => {
                    o.addr += 1;
                    o.h = start_connect(t, o.addr, secret, me)?;
                }
                Some((why, false)) => {
                    return Err(Error::Bootstrap(format!(
                        "rank {me} cannot reach rank {} on host {} over TCP ({}): {why} \
                         (BB_TCP_IF picks the interface whose addresses ranks offer)",
                        t.rank,
                        t.host,
                        addrs_text(&t.addrs)
                    )))
                }
            }
            j += 1;
        }
        if missing > 0 {
            // Handshake messages are small; waking every 200 µs to step them all is cheap
            // and saves registering every half-open socket.
            events.clear();
            let ts = rustix::time::Timespec { tv_sec: 0, tv_nsec: 200_000 };
            let _ = epoll::wait(&epfd, rustix::buffer::spare_capacity(&mut events), Some(&ts));
        }
    }
    // Every expected peer is in: stop accepting. Connections still proving themselves are
    // strangers' and close with `incoming`.
    drop(listeners);
    Ok(done.into_iter().enumerate().filter_map(|(r, c)| c.map(|(fd, early)| (r, fd, early))).collect())
}

fn start_connect(t: &Target, a: usize, secret: &Secret, me: usize) -> Result<Handshaking> {
    let addr = *t.addrs.get(a).ok_or_else(|| {
        Error::Bootstrap(format!("rank {} on host {} offers no address to connect to (BB_TCP_IF?)", t.rank, t.host))
    })?;
    Handshaking::connect(addr, secret, me, t.rank)
}

fn addrs_text(addrs: &[SocketAddr]) -> String {
    if addrs.is_empty() {
        return "no address offered".into();
    }
    addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
}

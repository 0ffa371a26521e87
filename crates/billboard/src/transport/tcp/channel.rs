//! The TCP channel: this rank's end of its connections to ranks on other hosts.
//!
//! Each engine record travels as one frame (see `wire.rs`), so the engine's own protocol runs
//! unchanged over TCP: eager records up to [`EAGER_MAX`], above that its rendezvous (RTS, then
//! CTS, then DATA chunks of at most [`CHUNK`] bytes), so a receiver buffers only what it has asked
//! for. Polling first reads the connection of the peer being waited on (one `recv`), and scans
//! all sockets with a zero-timeout `epoll_wait` on every [`SCAN_EVERY`]th poll or when that found
//! nothing; sleeping is `epoll_wait` with a timeout, after the engine's spin and yield phases (a
//! polled socket answers in microseconds, a wake-up from sleep costs tens here).
//!
//! A lone connection (one rank a host: the only one this channel has) stays out of the epoll set
//! ([`TcpChannel::watch_alone`]): a socket in a set has every arrival run the set's wake-up
//! callback (the socket's wait queue, with interrupts off) in the sender's `send`, which the
//! raw ping-pong does not pay. Polls read it directly, a sleeper watches it beside the set in
//! one `ppoll` ([`TcpChannel::watch`], as UDP's receiving sockets), and it joins the set only
//! while it holds bytes the socket did not take, so a sleeper wakes when they can go.
//!
//! A connection that breaks (the peer died, a reset, a cut link noticed by keepalive or
//! `TCP_USER_TIMEOUT`) is reported once through [`TcpChannel::take_failure`], naming the peer's
//! rank and host; the engine fails what depended on it. There is no listening socket after
//! set-up (`setup::establish` closes it), so nothing a stranger does reaches this channel.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::epoll;

use super::conn::Conn;
use super::setup::tune;
use crate::transport::loopback::Loopback;
use crate::transport::{Caps, Channel, Header, ReceiveCalls, WouldBlock};
use crate::tunables::Tunable;
use crate::{Error, Result};

pub static EAGER_MAX: Tunable = Tunable::new(
    "BB_TCP_EAGER_MAX",
    64 << 10,
    "largest eager message over TCP; above it rendezvous (a round trip costs tens of µs over TCP, so higher than on shared memory)",
);
pub static CHUNK: Tunable = Tunable::new(
    "BB_TCP_CHUNK",
    256 << 10,
    "bytes of one rendezvous data frame over TCP: large enough that per-frame costs vanish",
);

/// While a poll names a peer, all sockets are scanned on every this many polls.
const SCAN_EVERY: u32 = 16;

pub struct TcpChannel {
    me: usize,
    nranks: usize,
    /// Connections by peer rank; `None` for ranks reached another way.
    conns: Vec<Option<Conn>>,
    /// Where each rank lives, for messages.
    hosts: Vec<String>,
    epoll: Arc<OwnedFd>,
    /// Records sent to ourselves: only the conformance suite's, which drives a bare channel
    /// (the engine's self route is the billboard: see `transport/routes.rs`).
    loopback: Loopback,
    /// Some connection may hold unsent bytes.
    pending_out: bool,
    /// Peers whose first frames came in with the handshake: they sit in the connection's reader,
    /// where epoll cannot see them, so the next poll delivers them whatever its hint.
    buffered: Vec<usize>,
    /// Broken connections not yet reported, and which have been.
    failures: VecDeque<(usize, String)>,
    reported: Vec<bool>,
    polls: u32,
    events: Vec<epoll::Event>,
    /// The receive calls made so far.
    calls: ReceiveCalls,
    /// The lone connection kept out of the epoll set, if any: its peer, and a duplicate of its
    /// socket for sleepers to watch (see the module's note).
    alone: Option<(usize, Arc<[OwnedFd]>)>,
}

// SAFETY: `events` is the only field that is not Send: epoll events that may hold pointers, but
// ours only ever carry u64 tokens, and the buffer is refilled before every read.
unsafe impl Send for TcpChannel {}

impl TcpChannel {
    /// Takes over authenticated connections (peer, socket, bytes that followed the handshake).
    pub(crate) fn new(
        me: usize,
        hosts: Vec<String>,
        established: Vec<(usize, OwnedFd, Vec<u8>)>,
    ) -> Result<TcpChannel> {
        let nranks = hosts.len();
        let os = |call| move |e: rustix::io::Errno| Error::Os { call, errno: e.into() };
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(os("epoll_create"))?;
        let mut conns: Vec<Option<Conn>> = (0..nranks).map(|_| None).collect();
        let mut buffered = Vec::new();
        for (peer, fd, early) in established {
            if !early.is_empty() {
                buffered.push(peer);
            }
            tune(&fd)?;
            epoll::add(&epoll, &fd, epoll::EventData::new_u64(peer as u64), epoll::EventFlags::IN)
                .map_err(os("epoll_ctl"))?;
            conns[peer] = Some(Conn::new(fd, &early));
        }
        Ok(TcpChannel {
            me,
            nranks,
            conns,
            hosts,
            epoll: Arc::new(epoll),
            loopback: Loopback::default(),
            pending_out: false,
            buffered,
            failures: VecDeque::new(),
            reported: vec![false; nranks],
            polls: 0,
            events: Vec::with_capacity(64),
            calls: ReceiveCalls::default(),
            alone: None,
        })
    }

    /// Keeps this channel's connection out of the epoll set if it has exactly one (see the
    /// module's note); a sleeper must then watch [`watch`](Self::watch) beside the set, as
    /// `Routes` does for its socket route. Connections added later put it back.
    pub(crate) fn watch_alone(&mut self) -> Result<()> {
        let mut open = self.conns.iter().enumerate().filter_map(|(p, c)| Some((p, c.as_ref()?)));
        let (Some((peer, c)), None) = (open.next(), open.next()) else { return Ok(()) };
        let os = |call| move |e: rustix::io::Errno| Error::Os { call, errno: e.into() };
        let watched = rustix::io::fcntl_dupfd_cloexec(&c.fd, 0).map_err(os("fcntl(F_DUPFD_CLOEXEC)"))?;
        epoll::delete(&*self.epoll, &c.fd).map_err(os("epoll_ctl"))?;
        self.alone = Some((peer, Arc::from([watched])));
        Ok(())
    }

    /// The sockets a sleeper watches beside [`waker`](Self::waker)'s set: the lone connection
    /// kept out of it, if any.
    pub(crate) fn watch(&self) -> Option<Arc<[OwnedFd]>> {
        self.alone.as_ref().map(|(_, fds)| Arc::clone(fds))
    }

    /// Puts a lone connection kept out of the set back in it (or drops its watch if `peer`'s
    /// connection is gone), before the channel gains connections or loses that one.
    fn rejoin_set(&mut self, peer: Option<usize>) {
        let Some((p, _)) = self.alone else { return };
        if peer.is_some_and(|q| q != p) {
            return;
        }
        self.alone = None;
        if let Some(c) = self.conns[p].as_mut().filter(|_| peer.is_none()) {
            let _ = epoll::add(&*self.epoll, &c.fd, epoll::EventData::new_u64(p as u64), epoll::EventFlags::IN);
            c.wants_out = false;
        }
    }

    /// Takes over connections to peers that joined after start (`MPI_Comm_spawn`,
    /// `MPI_Comm_accept`/`connect`): `peers` gives each one's number and host, a number
    /// [`release`](Self::release)d before or the next after all known so far.
    pub(crate) fn add(
        &mut self,
        peers: Vec<(usize, String)>,
        established: Vec<(usize, OwnedFd, Vec<u8>)>,
    ) -> Result<()> {
        let os = |call| move |e: rustix::io::Errno| Error::Os { call, errno: e.into() };
        self.rejoin_set(None);
        for (peer, host) in peers {
            if peer >= self.nranks {
                self.nranks = peer + 1;
                self.hosts.resize(self.nranks, String::new());
                self.conns.resize_with(self.nranks, || None);
                self.reported.resize(self.nranks, false);
            }
            debug_assert!(self.conns[peer].is_none(), "rank {peer} joins while its connection is open");
            self.hosts[peer] = host;
            self.reported[peer] = false;
        }
        for (peer, fd, early) in established {
            if !early.is_empty() {
                self.buffered.push(peer);
            }
            tune(&fd)?;
            epoll::add(&*self.epoll, &fd, epoll::EventData::new_u64(peer as u64), epoll::EventFlags::IN)
                .map_err(os("epoll_ctl"))?;
            self.conns[peer] = Some(Conn::new(fd, &early));
        }
        Ok(())
    }

    /// Ends the connection to `peer`, a process of another job that no communicator uses any
    /// more (MPI_Comm_disconnect), and closes its socket. In order: a Close frame after what is
    /// held back, sent for up to `BB_TCP_TIMEOUT_MS`; our write side shut; what the peer still
    /// sent read and dropped, so that closing sends no reset (a reset would discard what the
    /// peer has not read yet). Nothing is sent to it any more (the engine has failed it), and
    /// once this returns no record of its can arrive: its number may go to a new peer.
    pub(crate) fn release(&mut self, peer: usize) {
        self.rejoin_set(Some(peer));
        let Some(mut c) = self.conns.get_mut(peer).and_then(Option::take) else { return };
        let _ = epoll::delete(&*self.epoll, &c.fd);
        self.reported[peer] = true;
        self.buffered.retain(|&p| p != peer);
        self.failures.retain(|&(p, _)| p != peer);
        c.close();
        let deadline = Instant::now() + Duration::from_millis(super::setup::TIMEOUT_MS.get() as u64);
        while c.pending() > 0 && c.broken.is_none() && Instant::now() < deadline {
            let mut fds = [rustix::event::PollFd::new(&c.fd, rustix::event::PollFlags::OUT)];
            let _ = rustix::event::poll(&mut fds, Some(&rustix::time::Timespec { tv_sec: 0, tv_nsec: 10_000_000 }));
            c.flush();
        }
        let _ = rustix::net::shutdown(&c.fd, rustix::net::Shutdown::Write);
        c.receive(&mut |_, _| {}, false, &mut self.calls);
    }

    /// Whether `peer` is reached through this channel.
    pub fn reaches(&self, peer: usize) -> bool {
        self.conns.get(peer).is_some_and(Option::is_some)
    }

    /// Whether `peer` (a hint) is reached through this channel's only connection.
    fn only_connection(&self, peer: Option<usize>) -> bool {
        peer.is_some_and(|p| self.reaches(p)) && self.conns.iter().flatten().nth(1).is_none()
    }

    /// The epoll instance a sleeper waits on (readable sockets, and writable ones with bytes to send).
    pub(crate) fn waker(&mut self) -> Arc<OwnedFd> {
        if self.pending_out {
            self.flush();
        }
        Arc::clone(&self.epoll)
    }

    /// Writes what connections hold back; keeps EPOLLOUT interest exactly on those still holding.
    fn flush(&mut self) {
        let mut any = false;
        for (peer, c) in self.conns.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            let had = c.pending() > 0;
            if had {
                c.flush();
            }
            let has = c.pending() > 0 && c.broken.is_none();
            if has != c.wants_out {
                let mut flags = epoll::EventFlags::IN;
                if has {
                    flags |= epoll::EventFlags::OUT;
                }
                let data = epoll::EventData::new_u64(peer as u64);
                let _ = match (self.alone.as_ref().is_some_and(|&(p, _)| p == peer), has) {
                    // The lone connection is in the set only while it holds bytes back.
                    (true, true) => epoll::add(&*self.epoll, &c.fd, data, flags),
                    (true, false) => epoll::delete(&*self.epoll, &c.fd),
                    (false, _) => epoll::modify(&*self.epoll, &c.fd, data, flags),
                };
                c.wants_out = has;
            }
            any |= has;
        }
        self.pending_out = any;
    }

    /// Reads what `peer` sent (`wait`: see [`Conn::receive`]).
    fn receive<F: FnMut(usize, &Header, &[u8])>(&mut self, peer: usize, f: &mut F, wait: bool) -> usize {
        let Some(c) = self.conns[peer].as_mut() else { return 0 };
        let n = c.receive(&mut |h, p| f(peer, h, p), wait, &mut self.calls);
        if c.broken.is_some() && !self.reported[peer] {
            self.report(peer);
        }
        n
    }

    fn report(&mut self, peer: usize) {
        let c = self.conns[peer].as_ref().expect("a connection to report");
        let why = c.broken.as_ref().map_or_else(String::new, |b| b.to_string());
        let _ = epoll::delete(&*self.epoll, &c.fd);
        self.rejoin_set(Some(peer));
        self.reported[peer] = true;
        self.failures.push_back((peer, format!("on host {}, {why}", self.hosts[peer])));
    }

    /// One zero-timeout look at every socket.
    fn scan<F: FnMut(usize, &Header, &[u8])>(&mut self, f: &mut F) -> usize {
        self.events.clear();
        let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
        if epoll::wait(&*self.epoll, rustix::buffer::spare_capacity(&mut self.events), Some(&zero)).is_err() {
            return 0;
        }
        let mut handled = 0;
        // By index, not by iterator: handling an event needs `self`, and copying the tokens out
        // would allocate on every scan.
        for i in 0..self.events.len() {
            let peer = self.events[i].data.u64() as usize;
            if self.conns[peer].as_ref().is_some_and(|c| c.pending() > 0) {
                self.pending_out = true;
            }
            handled += self.receive(peer, f, false);
        }
        handled
    }
}

impl Drop for TcpChannel {
    /// Sends what is still held back (for up to `BB_TCP_TIMEOUT_MS`: a peer that reads nothing
    /// more cannot hold the process forever) and says goodbye on every connection, so peers see
    /// an orderly end, not a failure.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(super::setup::TIMEOUT_MS.get() as u64);
        for c in self.conns.iter_mut().flatten() {
            c.close();
        }
        while !self.flushed() && Instant::now() < deadline {
            self.flush();
            sleep_on(&self.epoll, Duration::from_millis(10));
        }
    }
}

impl Channel for TcpChannel {
    /// Ends the connection to `peer`, whose records broke the engine's protocol: nothing more
    /// is read from it, and it sees the connection shut down. The engine has failed it already,
    /// so this is not reported again.
    fn close(&mut self, peer: usize, why: &str) {
        let Some(c) = self.conns[peer].as_mut() else { return };
        if c.broken.is_none() {
            c.broken = Some(super::conn::Broken::Protocol(why.to_string()));
        }
        let _ = epoll::delete(&*self.epoll, &c.fd);
        let _ = rustix::net::shutdown(&c.fd, rustix::net::Shutdown::Both);
        self.rejoin_set(Some(peer));
        self.reported[peer] = true;
    }

    /// The next broken connection not yet reported: the peer and what happened.
    fn take_failure(&mut self) -> Option<(usize, String)> {
        self.failures.pop_front()
    }

    /// Whether a failure waits in [`take_failure`](Self::take_failure).
    #[inline]
    fn has_failure(&self) -> bool {
        !self.failures.is_empty()
    }

    fn caps(&self) -> Caps {
        let chunk = CHUNK.get().clamp(4096, super::wire::MAX_FRAME_PAYLOAD as usize);
        Caps {
            max_inline: chunk,
            max_record: chunk,
            single_copy: false,
            claim_words: 0,
            multicast: false,
            eager_max: Some(EAGER_MAX.get()),
        }
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    #[inline]
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if peer == self.me {
            self.loopback.push(header, &[payload]);
            return Ok(());
        }
        let c = self.conns[peer].as_mut().unwrap_or_else(|| panic!("no TCP connection to rank {peer}"));
        let sent = c.send(header, payload);
        if c.pending() > 0 {
            self.pending_out = true;
        }
        sent
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        if peer == self.me {
            self.loopback.push(header, pieces);
            return Ok(());
        }
        let c = self.conns[peer].as_mut().unwrap_or_else(|| panic!("no TCP connection to rank {peer}"));
        let sent = c.send_gather(header, pieces);
        if c.pending() > 0 {
            self.pending_out = true;
        }
        sent
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        // No shared post over TCP: all or none, so check room first.
        if peers
            .iter()
            .any(|&p| p != self.me && self.conns[p].as_ref().is_some_and(|c| c.pending() >= super::conn::OUT_LIMIT))
        {
            return Err(WouldBlock);
        }
        for &p in peers {
            self.try_send(p, header, payload)?;
        }
        Ok(())
    }

    /// Waits in the kernel on `peer`'s connection when it is this channel's only one and nothing
    /// else waits: nothing to send, no record buffered or sent to ourselves. (With several
    /// connections a record from another peer could wait behind the one awaited: the caller
    /// yields instead.)
    fn poll_blocking<F: FnMut(usize, &Header, &[u8])>(&mut self, peer: usize, mut f: F) -> Option<usize> {
        if crate::transport::WAIT_BLOCK.get() == 0
            || !self.only_connection(Some(peer))
            || self.pending_out
            || !self.buffered.is_empty()
            || !self.loopback.is_empty()
        {
            return None;
        }
        Some(self.receive(peer, &mut f, true))
    }

    fn receive_calls(&self) -> ReceiveCalls {
        self.calls
    }

    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        let mut handled = 0;
        if !self.loopback.is_empty() {
            let me = self.me;
            handled += self.loopback.drain(|h, p| f(me, h, p));
        }
        if self.pending_out {
            self.flush();
        }
        if !self.buffered.is_empty() {
            for peer in std::mem::take(&mut self.buffered) {
                handled += self.receive(peer, &mut f, false);
            }
        }
        if let Some((peer, _)) = self.alone {
            // Out of the set, so no scan would see it: read it whatever the hint.
            return handled + self.receive(peer, &mut f, false);
        }
        if let Some(peer) = hint.filter(|&p| self.reaches(p)) {
            handled += self.receive(peer, &mut f, false);
        }
        self.polls = self.polls.wrapping_add(1);
        // A scan finds only other peers' records: none where the hinted peer's connection is the
        // only one (one rank a host), where it cost a spinning waiter an `epoll_wait` every
        // SCAN_EVERY polls that the raw polled ping-pong does not make.
        if handled == 0 && (hint.is_none() || (self.polls.is_multiple_of(SCAN_EVERY) && !self.only_connection(hint))) {
            handled += self.scan(&mut f);
        }
        handled
    }

    fn read_remote(&self, peer: usize, _addr: u64, _dst: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("rank {peer} is on another host: no single copy over TCP"),
        ))
    }

    fn sleep(&self, timeout: Duration) {
        match &self.alone {
            None => sleep_on(&self.epoll, timeout),
            Some((_, watch)) => crate::transport::udp::sleep_watching(&*self.epoll, watch, timeout),
        }
    }

    fn flushed(&self) -> bool {
        self.conns.iter().flatten().all(|c| c.pending() == 0 || c.broken.is_some())
    }
}

/// Waits until a socket of `epoll` is ready or `timeout` passes.
pub(crate) fn sleep_on(epoll: &OwnedFd, timeout: Duration) {
    let ts = rustix::time::Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
    // On the stack: a sleep of two ranks on one core comes once a message.
    let mut events = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 1];
    let _ = epoll::wait(epoll, &mut events, Some(&ts));
}

/// `n` connected endpoints in this process over loopback, for the conformance suite.
#[cfg(test)]
pub(crate) fn endpoints(n: usize) -> Vec<TcpChannel> {
    let listeners = (0..n).map(|_| super::listen::listen(&[std::net::Ipv4Addr::LOCALHOST]).unwrap()).collect();
    set_up(listeners, &super::handshake::Secret::generate().unwrap())
}

/// Runs set-up for one rank per listener (each in a thread), all on loopback.
#[cfg(test)]
pub(crate) fn set_up(listeners: Vec<super::listen::Listeners>, secret: &super::handshake::Secret) -> Vec<TcpChannel> {
    use super::setup::{establish, Target};
    use std::net::{Ipv4Addr, SocketAddr};
    let n = listeners.len();
    let targets: Vec<Target> = listeners
        .iter()
        .enumerate()
        .map(|(rank, l)| Target {
            rank,
            host: "localhost".into(),
            addrs: vec![SocketAddr::from((Ipv4Addr::LOCALHOST, l.port))],
        })
        .collect();
    let hosts = vec!["localhost".to_string(); n];
    std::thread::scope(|s| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(me, l)| {
                let (targets, secret, hosts) = (&targets, secret.clone(), hosts.clone());
                s.spawn(move || {
                    let est = establish(me, n, l, targets, &secret).unwrap();
                    TcpChannel::new(me, hosts, est).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;

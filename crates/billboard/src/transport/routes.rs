//! Routes: which channel reaches each rank (CoR's routes, PVM's `PvmRoute`).
//!
//! Ranks on this host are reached through the shared-memory billboard, ranks on other hosts over
//! TCP; the choice is made once, at start, from where each rank says it lives (`addr::host_key`).
//! `BB_ROUTES=tcp` sends everything but a rank's messages to itself over TCP, even on one host
//! (tests use it to run the engine's suite over TCP); `BB_ROUTES=udp` does the same over the
//! reliable UDP protocol (`transport/udp`), which then also replaces TCP between hosts. The
//! billboard always holds at least this rank: it is its route to itself, the self route, memory
//! whatever the choice. A poll that waits on another peer looks at the billboard (over TCP or
//! UDP) or at its other rings (`shm`) only every 16th time; so a rank that sent itself a record
//! marks it, and the next poll drains its own ring first, whatever peer it names: a message to
//! oneself completes at the first poll on every route.
//!
//! Processes that join later (spawned children, a job met through a port, `MPI_Comm_join`)
//! are reached over TCP whatever the job's route: their connection is a TCP connection already,
//! authenticated by the port's token, and UDP's datagrams are sealed with this job's secret,
//! which another job does not share. Under `BB_ROUTES=udp` they get a TCP channel of their own
//! beside the UDP route ([`Routes::add_tcp_peers`]).
//!
//! [`Routes`] is a table, per peer: which channel reaches it (its index on the billboard,
//! [`REMOTE`] or [`JOINED`]) and the capabilities of its route;
//! `bootstrap/wire.rs` fills it at start-up. A new route off the billboard is a folder under
//! `transport/`, a variant of [`Remote`], and its set-up in the wire-up.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use super::remote::Remote;
use super::remote::Watch;
use super::shm::{self, ShmChannel};
use super::tcp::{sleep_on, TcpChannel};
use super::{Caps, Channel, Header, ReceiveCalls, WouldBlock};
use crate::{Error, Result};

/// The index of a rank reached through the job's route off the billboard (TCP or UDP).
const REMOTE: u32 = u32::MAX;
/// The index of a peer that joined after start, beside a UDP route (over TCP: see above).
const JOINED: u32 = u32::MAX - 1;

/// Whether `index` names a socket route, not a billboard index.
#[inline]
fn off_board(index: u32) -> bool {
    index >= JOINED
}

/// While waiting on a billboard peer, TCP sockets are scanned on every this many polls.
const TCP_EVERY: u32 = 16;

/// What polling a socket costs (a `recv` that finds nothing, ~0.5 µs), in spin pauses.
const TCP_POLL_PAUSES: u32 = 16;

/// How one rank is reached, for `bbrun --info` and verbose reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// This process.
    SelfRoute,
    SharedMemory,
    Tcp,
    Udp,
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Route::SelfRoute => "self",
            Route::SharedMemory => "shm",
            Route::Tcp => "tcp",
            Route::Udp => "udp",
        })
    }
}

/// What `BB_ROUTES` chooses: the billboard within a host and TCP between hosts (`auto`), or
/// every route but a rank's own over TCP or over UDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteChoice {
    Auto,
    Tcp,
    Udp,
}

impl RouteChoice {
    /// `BB_ROUTES` from the environment.
    pub fn from_env() -> Result<RouteChoice> {
        RouteChoice::parse(&std::env::var("BB_ROUTES").unwrap_or_default())
    }

    pub fn parse(text: &str) -> Result<RouteChoice> {
        match text {
            "" | "auto" => Ok(RouteChoice::Auto),
            "tcp" => Ok(RouteChoice::Tcp),
            "udp" => Ok(RouteChoice::Udp),
            other => Err(Error::InvalidArgument(format!(
                "BB_ROUTES={other:?}: expected \"auto\" (shared memory within a host, TCP between hosts), \"tcp\" or \"udp\" \
                 (every route but a rank's own over TCP, or over UDP)"
            ))),
        }
    }

    /// The route between ranks on different hosts (and, unless `Auto`, on one host).
    pub fn remote(self) -> Route {
        match self {
            RouteChoice::Udp => Route::Udp,
            _ => Route::Tcp,
        }
    }
}

/// How this rank reaches one rank: its index on this host's billboard, and what its route can do.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    /// Its index on this host's billboard, or the socket channel that reaches it: [`REMOTE`] or
    /// [`JOINED`] (both take peer numbers as they are).
    pub index: u32,
    pub caps: Caps,
}

/// This rank's routes to every rank of the job: a table of [`Peer`]s, the billboard of this
/// host, the route off it (TCP, or UDP), and beside UDP the TCP channel of joined peers.
pub struct Routes {
    /// Per world rank. Without a remote route (one host) the billboard index is the world
    /// rank: the fast paths rely on that.
    table: Vec<Peer>,
    /// World rank of each billboard index.
    shm_world: Vec<usize>,
    shm: ShmChannel,
    /// The route to ranks off the billboard: TCP, or UDP under `BB_ROUTES=udp`.
    remote: Option<Remote>,
    /// Peers that joined after start when `remote` is UDP ([`JOINED`]); with TCP they join it.
    joined: Option<TcpChannel>,
    /// With more than one thing to wait on (billboard peers and a socket route, or two socket
    /// routes): where this rank sleeps.
    both: Option<SleepSet>,
    /// Per world rank: the index of its host (ranks with equal indices share a host).
    node: Vec<usize>,
    /// Numbers of joined peers let go ([`Routes::release`]): their connections are closed, so
    /// no record of theirs can arrive, and the next peers to join take them.
    released: Vec<usize>,
    polls: u32,
    /// This rank (world number), and whether it posted records to itself (its own ring) that
    /// a poll has not drained since.
    me: usize,
    self_posted: bool,
}

impl Routes {
    /// The routes of a rank whose billboard holds world ranks `billboard` (ascending, this
    /// rank among them) through `shm`, and every other rank through `remote`; `node[r]` is the
    /// host of rank r; `both`: where a rank with peers on both routes sleeps.
    pub(crate) fn new(
        billboard: Vec<usize>,
        shm: ShmChannel,
        remote: Option<Remote>,
        both: Option<SleepSet>,
        node: Vec<usize>,
    ) -> Routes {
        let off = Peer { index: REMOTE, caps: remote.as_ref().map_or_else(|| shm.caps(), |r| r.caps()) };
        let mut table = vec![off; node.len()];
        for (i, &r) in billboard.iter().enumerate() {
            table[r] = Peer { index: i as u32, caps: shm.caps() };
        }
        debug_assert!(remote.is_some() || table.iter().all(|p| p.index != REMOTE), "a rank with no route");
        let me = billboard[shm.me()];
        Routes {
            table,
            shm_world: billboard,
            shm,
            remote,
            joined: None,
            both,
            node,
            released: Vec::new(),
            polls: 0,
            me,
            self_posted: false,
        }
    }

    /// Closes the TCP connection to `peer`, a process that joined later and that no
    /// communicator uses any more (see `TcpChannel::release`); its number is free for the
    /// next peer to join.
    pub(crate) fn release(&mut self, peer: usize) {
        match (self.table.get(peer).map(|p| p.index), &mut self.remote, &mut self.joined) {
            (Some(REMOTE), Some(Remote::Tcp(tcp)), _) | (Some(JOINED), _, Some(tcp)) if tcp.reaches(peer) => {
                tcp.release(peer);
                self.released.push(peer);
            }
            _ => {}
        }
    }

    /// Numbers for `n` peers joining now: released ones first (lowest first), then new ones
    /// after every number known so far, so a program that connects and disconnects in a loop
    /// keeps its per-peer tables as large as the most peers it held at once.
    fn numbers_for(&mut self, n: usize) -> Vec<usize> {
        self.released.sort_unstable_by(|a, b| b.cmp(a));
        let reused = self.released.len().min(n);
        let mut numbers: Vec<usize> = self.released.drain(self.released.len() - reused..).rev().collect();
        numbers.extend(self.table.len()..self.table.len() + n - reused);
        numbers
    }

    /// Adds peers that joined after start (another job's ranks: spawned children, or a group
    /// met through a port), reached over TCP through `established` (new peer k's socket and
    /// the bytes that followed its handshake; index k counts from 0). `hosts` names them and
    /// `node` gives their host index (equal: same billboard, theirs). Returns each new peer's
    /// number: released ones first (see [`Routes::numbers_for`]), then numbers after every
    /// rank known so far.
    ///
    /// Why TCP even on this host: the billboard segment is sized and mapped once, at start, by
    /// the ranks of one job; a process of another job cannot join it. Why TCP beside UDP: see
    /// the module's note. A rank that now has more than one thing to wait on sleeps on an epoll
    /// set holding both (billboard peers that did not add peers themselves wake it by the
    /// futex, which it notices within `BB_SLEEP_US`).
    pub(crate) fn add_tcp_peers(
        &mut self,
        hosts: Vec<String>,
        node: Vec<usize>,
        established: Vec<(usize, OwnedFd, Vec<u8>)>,
    ) -> Result<Vec<usize>> {
        let first = self.table.len();
        let numbers = self.numbers_for(hosts.len());
        let established: Vec<_> = established.into_iter().map(|(k, fd, early)| (numbers[k], fd, early)).collect();
        let me = self.shm_world[self.shm.me()];
        let board = (self.shm_world.len() > 1).then_some(&mut self.shm);
        let index = if self.joined.is_some() { JOINED } else { REMOTE };
        let (index, caps) = match (&mut self.remote, &mut self.joined) {
            (Some(Remote::Tcp(tcp)), _) | (Some(Remote::Udp(_)), Some(tcp)) => {
                tcp.add(numbers.iter().copied().zip(hosts).collect(), established)?;
                (index, tcp.caps())
            }
            // The first peers to join: none was released before, so they come after all.
            (None, _) => {
                debug_assert_eq!(numbers.first(), Some(&first), "numbers released without a TCP channel");
                let mut tcp = Remote::Tcp(TcpChannel::new(me, peer_hosts(first, hosts), established)?);
                if let Some(shm) = board {
                    self.both = Some(sleep_set(Some(shm), &[tcp.waker()])?);
                }
                let caps = tcp.caps();
                self.remote = Some(tcp);
                (REMOTE, caps)
            }
            (Some(udp @ Remote::Udp(_)), None) => {
                debug_assert_eq!(numbers.first(), Some(&first), "numbers released without a TCP channel");
                let mut tcp = TcpChannel::new(me, peer_hosts(first, hosts), established)?;
                // Whether UDP's sockets and timer or the new connections wake it, one set.
                self.both = Some(sleep_set(board, &[udp.waker(), tcp.waker()])?);
                let caps = tcp.caps();
                self.joined = Some(tcp);
                (JOINED, caps)
            }
        };
        for (&p, host) in numbers.iter().zip(node) {
            if p < first {
                (self.table[p], self.node[p]) = (Peer { index, caps }, host);
            } else {
                self.table.push(Peer { index, caps });
                self.node.push(host);
            }
        }
        Ok(numbers)
    }

    /// The host index of every world rank (equal index: same host).
    pub fn nodes(&self) -> &[usize] {
        &self.node
    }

    /// What a waiter needs to sleep without holding the routes.
    pub(crate) fn sleeper(&mut self) -> Sleeper {
        let Some(remote) = &mut self.remote else { return Sleeper::Shm(self.shm.sleeper()) };
        // Each socket route sends what it still owes and readies its set (UDP: sockets, timer).
        let waker = remote.waker();
        if let Some(joined) = &mut self.joined {
            drop(joined.waker());
        }
        let watch = remote.watch();
        match &self.both {
            None => Sleeper::Tcp(waker, watch),
            Some(SleepSet { set, bell: None }) => Sleeper::Tcp(Arc::clone(set), watch),
            Some(SleepSet { set, bell: Some(bell) }) => {
                Sleeper::Both(self.shm.sleeper(), Arc::clone(set), Arc::clone(bell), watch)
            }
        }
    }

    /// The first byte of board slot `slot` of `peer` (coll/board.rs), if `peer` is on this
    /// host's billboard. The memory stays mapped as long as these routes live.
    pub(crate) fn board_slot(&self, peer: usize, slot: usize) -> Option<*mut u8> {
        match self.table.get(peer)?.index {
            i if off_board(i) => None,
            i => Some(self.shm.board_slot(i as usize, slot)),
        }
    }

    /// The billboard index of `peer`, which must be on this host's billboard (the remote
    /// memory of large transfers is there alone).
    fn on_billboard(&self, peer: usize) -> usize {
        debug_assert!(!off_board(self.table[peer].index), "rank {peer} is not on this host's billboard");
        self.table[peer].index as usize
    }

    /// Drains this rank's own ring (the self route) into `f`, before a poll that names
    /// another peer and so might not look there.
    #[cold]
    fn drain_self<F: FnMut(usize, &Header, &[u8])>(&mut self, f: &mut F) -> usize {
        let (mine, me) = (self.shm.me(), self.me);
        let mut handled = 0;
        self.shm.poll(Some(mine), |s, h, p| {
            handled += (s == mine) as usize;
            f(if s == mine { me } else { self.shm_world[s] }, h, p)
        });
        // A drain stops after a budget of records: what it left waits for the next poll.
        self.self_posted = handled > 0;
        handled
    }
}

impl Routes {
    /// The rest of [`Channel::poll`] where some peers sit on other hosts: out of line, so the
    /// one-host poll, and the engine's round it is inlined into, carry none of the socket
    /// routes' code and registers (an empty round of a wait on the billboard: see
    /// `ShmChannel::poll`).
    #[inline(never)]
    fn poll_hosts<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        let index = hint.map(|p| self.table[p].index);
        let local_hint = index.filter(|&i| !off_board(i)).map(|i| i as usize);
        let shm_world = &self.shm_world;
        self.polls = self.polls.wrapping_add(1);
        let every = self.polls.is_multiple_of(TCP_EVERY);
        // Alone on its billboard, a rank that waits on a socket peer can find there only what it
        // sent itself: it looks every TCP_EVERY polls (a wait that names no peer, or itself,
        // looks every time), so a spinning poll costs the socket's `recv` and little more, as
        // the raw ping-pong does (callgrind, 2 ranks BB_ROUTES=tcp: 455 -> 353 instructions).
        let mut handled = if shm_world.len() > 1 || index != Some(REMOTE) || every {
            self.shm.poll(local_hint, |s, h, p| f(shm_world[s], h, p))
        } else {
            0
        };
        if let Some(remote) = &mut self.remote {
            if index == Some(REMOTE) || every {
                handled += remote.poll(hint.filter(|_| index == Some(REMOTE)), &mut f);
            }
        }
        if let Some(joined) = &mut self.joined {
            if index == Some(JOINED) || every {
                handled += joined.poll(hint.filter(|_| index == Some(JOINED)), &mut f);
            }
        }
        handled
    }
}

impl Channel for Routes {
    /// The billboard's: what the engine may assume of every route (`caps_for` per peer).
    fn caps(&self) -> Caps {
        self.shm.caps()
    }

    #[inline]
    fn caps_for(&self, peer: usize) -> Caps {
        self.table[peer].caps
    }

    fn oversubscribed(&self) -> bool {
        self.shm.oversubscribed()
    }

    #[inline]
    fn has_failure(&self) -> bool {
        self.shm.has_failure()
            || self.remote.as_ref().is_some_and(Remote::has_failure)
            || self.joined.as_ref().is_some_and(TcpChannel::has_failure)
    }

    fn take_failure(&mut self) -> Option<(usize, String)> {
        if let Some((s, why)) = self.shm.take_failure() {
            return Some((self.shm_world[s], why));
        }
        self.remote.as_mut().and_then(Remote::take_failure).or_else(|| self.joined.as_mut()?.take_failure())
    }

    /// Only the billboard has ends that close unseen (a TCP peer's close or death breaks its
    /// connection, which the poll finds).
    fn look_for_closed(&mut self) {
        self.shm.look_for_closed();
    }

    /// A TCP connection is shut down, so the peer sees it end.
    fn close(&mut self, peer: usize, why: &str) {
        match (self.table[peer].index, &mut self.remote, &mut self.joined) {
            (REMOTE, Some(remote), _) => remote.close(peer, why),
            (JOINED, _, Some(tcp)) => tcp.close(peer, why),
            (l, _, _) => self.shm.close(l as usize, why),
        }
    }

    /// A peer over a socket (TCP, UDP) is found by the poll itself, a `recv` that costs as much
    /// as [`TCP_POLL_PAUSES`]: counted as spent, so a waiter on a socket spins as long as one on
    /// the billboard, not many times longer (on one core it kept the peer off the core 50
    /// `recv`s per message, 20 µs where one yield hands over). When ranks outnumber the cores,
    /// the peer that must answer most likely waits for this one: a poll that found nothing
    /// spends the whole spin (`u32::MAX`), so the waiter yields at once (two ranks on one core,
    /// 8 B one-way: 3.2 µs with four polls before each yield, see bench/README.md).
    #[inline]
    fn spin_for(&self, peer: usize, spins: u32) -> u32 {
        match self.table[peer].index {
            i if off_board(i) => {
                if self.shm.oversubscribed() {
                    return u32::MAX;
                }
                std::hint::spin_loop();
                TCP_POLL_PAUSES
            }
            l => self.shm.spin_for(l as usize, spins),
        }
    }

    /// The socket route's, where it is this rank's only way in: with billboard peers (who ring
    /// a sleeper only) or joined peers beside it, a wait on one socket could keep their records
    /// waiting up to [`BLOCK_BOUND`](super::BLOCK_BOUND).
    fn poll_blocking<F: FnMut(usize, &Header, &[u8])>(&mut self, peer: usize, f: F) -> Option<usize> {
        match (&mut self.remote, &self.joined, self.table[peer].index) {
            (Some(remote), None, REMOTE) if self.shm_world.len() == 1 => remote.poll_blocking(peer, f),
            _ => None,
        }
    }

    fn receive_calls(&self) -> ReceiveCalls {
        let remote = self.remote.as_ref().map(Remote::receive_calls).unwrap_or_default();
        remote.plus(self.joined.as_ref().map(TcpChannel::receive_calls).unwrap_or_default())
    }

    /// (Taken from this rank's own ring, a record leaves `self_posted` set: the next drain finds
    /// the ring empty and clears it.)
    #[inline]
    fn take_head(&mut self, peer: usize, take: impl FnOnce(&Header, &[u8]) -> bool) -> bool {
        match self.table[peer].index {
            i if off_board(i) => false,
            l => self.shm.take_head(l as usize, take),
        }
    }

    fn read_remote_iov(
        &self,
        peer: usize,
        local: &mut [libc::iovec],
        remote: &mut [libc::iovec],
    ) -> std::io::Result<()> {
        self.shm.read_remote_iov(self.on_billboard(peer), local, remote)
    }

    fn write_remote(&self, peer: usize, addr: u64, src: &[u8]) -> std::io::Result<()> {
        self.shm.write_remote(self.on_billboard(peer), addr, src)
    }

    fn claim_word(&self, peer: usize, from_peer: bool, k: usize) -> &crate::sync::AtomicU64 {
        self.shm.claim_word(self.on_billboard(peer), from_peer, k)
    }

    fn nranks(&self) -> usize {
        self.table.len()
    }

    #[inline]
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        self.self_posted |= peer == self.me;
        let Some(tcp) = &mut self.remote else {
            // One host: the billboard holds every rank, in world order.
            return self.shm.try_send(peer, header, payload);
        };
        match self.table[peer].index {
            REMOTE => tcp.try_send(peer, header, payload),
            JOINED => self.joined.as_mut().expect("a joined peer's channel").try_send(peer, header, payload),
            l => self.shm.try_send(l as usize, header, payload),
        }
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        self.self_posted |= peer == self.me;
        let Some(tcp) = &mut self.remote else {
            return self.shm.try_send_gather(peer, header, pieces);
        };
        match self.table[peer].index {
            REMOTE => tcp.try_send_gather(peer, header, pieces),
            JOINED => self.joined.as_mut().expect("a joined peer's channel").try_send_gather(peer, header, pieces),
            l => self.shm.try_send_gather(l as usize, header, pieces),
        }
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        self.self_posted |= peers.contains(&self.me);
        if self.remote.is_none() {
            // One host: the billboard holds every rank, in world order.
            return self.shm.try_multicast(peers, header, payload);
        }
        if peers.iter().all(|&p| !off_board(self.table[p].index)) {
            let local: Vec<usize> = peers.iter().map(|&p| self.table[p].index as usize).collect();
            return self.shm.try_multicast(&local, header, payload);
        }
        for &p in peers {
            self.try_send(p, header, payload)?;
        }
        Ok(())
    }

    #[inline]
    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        // The self route first where this poll might not look at it (see the module's note); a
        // poll that names this rank drains its ring first anyway.
        let mine = if self.self_posted && hint != Some(self.me) { self.drain_self(&mut f) } else { 0 };
        if self.remote.is_none() {
            // One host: the billboard holds every rank, in world order.
            return mine + self.shm.poll(hint, f);
        }
        mine + self.poll_hosts(hint, f)
    }

    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
        match self.table[peer].index {
            REMOTE => self.remote.as_ref().expect("a remote rank has a socket route").read_remote(peer, addr, dst),
            JOINED => self.joined.as_ref().expect("a joined peer's channel").read_remote(peer, addr, dst),
            l => self.shm.read_remote(l as usize, addr, dst),
        }
    }

    fn sleep(&self, timeout: Duration) {
        match (&self.remote, &self.both) {
            (None, _) => self.shm.sleep(timeout),
            (Some(remote), None) => remote.sleep(timeout),
            (Some(remote), Some(SleepSet { set, bell })) => {
                let watch = remote.watch();
                match bell {
                    None => sleep_in(set, &watch, timeout),
                    Some(bell) => self.shm.sleeper().sleep_on_bell(bell, || sleep_in(set, &watch, timeout)),
                }
            }
        }
    }

    fn flushed(&self) -> bool {
        self.remote.as_ref().is_none_or(|t| t.flushed()) && self.joined.as_ref().is_none_or(|t| t.flushed())
    }
}

/// The host names of the channel of peers that join after `first` peers: unnamed before them.
fn peer_hosts(first: usize, hosts: Vec<String>) -> Vec<String> {
    let mut all = vec![String::new(); first];
    all.extend(hosts);
    all
}

/// Where a rank with more than one thing to wait on sleeps: one epoll set holding each socket
/// route's set (ready when one of its sockets, or UDP's timer, is) and, with billboard peers,
/// this rank's doorbell, which they ring when they post to it while it sleeps.
pub(crate) struct SleepSet {
    set: Arc<OwnedFd>,
    bell: Option<Arc<OwnedFd>>,
}

/// The [`SleepSet`] of the socket routes whose sets are `wakers`, with the doorbell of `shm` if
/// given (installed here).
pub(crate) fn sleep_set(shm: Option<&mut ShmChannel>, wakers: &[Arc<OwnedFd>]) -> Result<SleepSet> {
    use rustix::event::epoll;
    let os = |call: &'static str| move |e: std::io::Error| Error::Os { call, errno: e };
    let bell = match shm {
        Some(shm) => {
            shm.install_bell().map_err(os("bind (billboard doorbell)"))?;
            Some(shm.bell().expect("installed"))
        }
        None => None,
    };
    let set = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| os("epoll_create")(e.into()))?;
    for fd in wakers.iter().chain(&bell) {
        epoll::add(&set, fd, epoll::EventData::new_u64(0), epoll::EventFlags::IN)
            .map_err(|e| os("epoll_ctl")(e.into()))?;
    }
    Ok(SleepSet { set: Arc::new(set), bell })
}

/// Sleeps without a borrow of the routes (see [`shm::Sleeper`]).
pub(crate) enum Sleeper {
    Shm(shm::Sleeper),
    /// An epoll set (a socket route's, or one holding both socket routes' sets) and the sockets
    /// watched beside it.
    Tcp(Arc<OwnedFd>, Watch),
    /// Billboard peers ring the doorbell in the epoll set: (set, doorbell, watched sockets).
    Both(shm::Sleeper, Arc<OwnedFd>, Arc<OwnedFd>, Watch),
}

impl Sleeper {
    pub fn sleep(&self, timeout: Duration) {
        match self {
            Sleeper::Shm(s) => s.sleep(timeout),
            Sleeper::Tcp(set, watch) => sleep_in(set, watch, timeout),
            Sleeper::Both(s, set, bell, watch) => s.sleep_on_bell(bell, || sleep_in(set, watch, timeout)),
        }
    }
}

/// Sleeps on the epoll set `set` and the sockets of `watch` (UDP's receiving sockets, in no
/// set: see `udp/channel.rs`).
fn sleep_in(set: &OwnedFd, watch: &Watch, timeout: Duration) {
    match watch {
        None => sleep_on(set, timeout),
        Some(socks) => super::udp::sleep_watching(set, socks, timeout),
    }
}

/// The route between ranks `a` and `b` when rank `r` lives on host `host_of[r]`: the one rule,
/// used by the library at start and by `bbrun --info` to show a placement's routes.
pub fn route_between(a: usize, b: usize, host_of: &[usize], choice: RouteChoice) -> Route {
    if a == b {
        Route::SelfRoute
    } else if host_of[a] == host_of[b] && choice == RouteChoice::Auto {
        Route::SharedMemory
    } else {
        choice.remote()
    }
}

/// The routes of a job whose ranks all share `shm` (each rank its own endpoint), for tests
/// that drive an engine in this process.
#[cfg(test)]
pub(crate) fn shm_only(shm: ShmChannel) -> Routes {
    let n = shm.nranks();
    Routes::new((0..n).collect(), shm, None, None, vec![0; n])
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A record a rank sends itself is handed over by the next poll, also one that names another
    /// peer (which looks at other rings only every 16th time): before the self route was marked,
    /// it took 16 polls.
    #[test]
    fn a_record_to_itself_comes_at_the_next_poll_whatever_peer_it_names() {
        let mut eps = shm::endpoints(2, 32 << 10, 64 << 10, 4).into_iter();
        let mut routes = shm_only(eps.next().unwrap());
        let _peer = eps.next().unwrap();
        let header = Header { kind: 1, context: 2, source: 0, tag: 3, aux: 0 };
        for round in 0..40u8 {
            routes.try_send(0, &header, &[round]).unwrap();
            let mut got = Vec::new();
            let polls = (1..=16).find(|_| {
                routes.poll(Some(1), |s, h, p| got.push((s, h.tag, p.to_vec())));
                !got.is_empty()
            });
            assert_eq!(polls, Some(1), "round {round}: polls until the record to itself came");
            assert_eq!(got, [(0, 3, vec![round])], "round {round}");
        }
        // A blocking receive's short cut takes it straight from the ring, and the next polls
        // find nothing more.
        routes.try_send(0, &header, b"direct").unwrap();
        assert!(routes.take_head(0, |_, p| p == b"direct"));
        assert_eq!(routes.poll(Some(1), |_, _, _| panic!("taken already")), 0);
        assert!(!routes.self_posted, "a drain that found nothing clears the mark");
    }

    /// A joining peer's socket as `add_tcp_peers` takes it: its index, the socket, early bytes.
    type Joining = (usize, OwnedFd, Vec<u8>);

    /// `n` sockets of peers joining now (index k for new peer k), with the other ends.
    fn joining(n: usize) -> (Vec<Joining>, Vec<std::net::TcpStream>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let others: Vec<_> = (0..n).map(|_| std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap()).collect();
        let ours = (0..n).map(|k| (k, OwnedFd::from(l.accept().unwrap().0), Vec::new())).collect();
        (ours, others)
    }

    /// Peers that join after others left take the numbers released, lowest first, then new
    /// ones: the table grows only to the most peers held at once.
    #[test]
    fn joining_peers_take_released_numbers_first() {
        let mut eps = shm::endpoints(2, 32 << 10, 64 << 10, 4).into_iter();
        let mut routes = shm_only(eps.next().unwrap());
        let _peer = eps.next().unwrap();
        let join = |routes: &mut Routes, n: usize| {
            let (ours, others) = joining(n);
            let numbers = routes.add_tcp_peers(vec!["there".into(); n], vec![7; n], ours).unwrap();
            (numbers, others)
        };
        let (first, _a) = join(&mut routes, 2);
        assert_eq!(first, [2, 3]);
        for round in 0..5 {
            for &p in &first {
                routes.release(p);
            }
            let (again, _b) = join(&mut routes, 2);
            assert_eq!(again, [2, 3], "round {round}");
            assert_eq!(routes.nranks(), 4, "round {round}: the table stays as large");
        }
        routes.release(3);
        routes.release(3); // a second release of one number frees it once
        let (more, _c) = join(&mut routes, 3);
        assert_eq!(more, [3, 4, 5], "the released number, then new ones");
        assert_eq!(routes.nodes()[3..], [7, 7, 7]);
        assert_eq!(routes.nranks(), 6);
    }
}

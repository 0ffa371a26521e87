//! Routes: which channel reaches each rank (CoR's routes, PVM's `PvmRoute`).
//!
//! Ranks on this host are reached through the shared-memory billboard, ranks on other hosts over
//! TCP; the choice is made once, at start, from where each rank says it lives (`addr::host_key`).
//! `BB_ROUTES=tcp` sends everything but a rank's messages to itself over TCP, even on one host
//! (tests use it to run the engine's suite over TCP); `BB_ROUTES=udp` does the same over the
//! reliable UDP protocol (`transport/udp`), which then also replaces TCP between hosts. The
//! billboard always holds at least this rank (its route to itself).
//!
//! Start-up, through the launcher's key-value space: every rank publishes its host and TCP
//! address (`bb-route-<rank>`), then per host the lowest rank creates the segment and publishes
//! its name (`bb-shm-<node>`), the others map it, and once all have it is unlinked; meanwhile
//! the TCP connections are made and authenticated. A one-host job under `bbrun` (which says so
//! with `BB_NNODES=1`) skips the TCP part: two barriers, as before routes existed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use super::remote::Remote;
use super::shm::{self, ShmChannel};
use super::tcp::addr::{self, IfChoice};
use super::tcp::handshake::Secret;
use super::tcp::listen::listen;
use super::tcp::setup::{self, Target};
use super::tcp::{sleep_on, TcpChannel};
use super::udp::UdpChannel;
use super::{Caps, Channel, Header, WouldBlock};
use crate::bootstrap::Job;
use crate::{Error, Result};

/// `local[rank]` of a rank that is not on this host's billboard.
const REMOTE: u32 = u32::MAX;

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

/// This rank's routes to every rank of the job.
pub struct Routes {
    /// Per world rank: its index on this host's billboard, or [`REMOTE`]. Without TCP (one
    /// host) the identity: the fast paths rely on that.
    local: Vec<u32>,
    /// World rank of each billboard index.
    shm_world: Vec<usize>,
    shm: ShmChannel,
    /// The route to ranks off the billboard: TCP, or UDP under `BB_ROUTES=udp`.
    tcp: Option<Remote>,
    /// With peers on both routes: where this rank sleeps, an epoll set holding TCP's set and
    /// the billboard doorbell (`shm/bell.rs`), and that doorbell.
    both: Option<(Arc<OwnedFd>, Arc<OwnedFd>)>,
    /// Per world rank: the index of its host (ranks with equal indices share a host).
    node: Vec<usize>,
    polls: u32,
}

impl Routes {
    /// What the channel reaching `peer` can do.
    pub fn caps_for(&self, peer: usize) -> Caps {
        match (self.local[peer], &self.tcp) {
            (REMOTE, Some(tcp)) => tcp.caps(),
            _ => self.shm.caps(),
        }
    }

    /// The host index of every world rank (equal index: same host).
    pub fn nodes(&self) -> &[usize] {
        &self.node
    }

    pub fn oversubscribed(&self) -> bool {
        self.shm.oversubscribed()
    }

    /// Whether a broken route waits in [`take_failure`](Self::take_failure).
    #[inline]
    pub fn has_failure(&self) -> bool {
        self.shm.has_failure() || self.tcp.as_ref().is_some_and(Remote::has_failure)
    }

    /// The next broken route not yet reported: the peer and what happened.
    pub fn take_failure(&mut self) -> Option<(usize, String)> {
        if let Some((s, why)) = self.shm.take_failure() {
            return Some((self.shm_world[s], format!("it sent what the billboard cannot hold: {why}")));
        }
        self.tcp.as_mut().and_then(Remote::take_failure)
    }

    /// Stops taking records from `peer`, whose records broke the engine's protocol: nothing
    /// more of it is read (a TCP connection is shut down, so the peer sees it end).
    pub fn close(&mut self, peer: usize, why: &str) {
        match (self.local[peer], &mut self.tcp) {
            (REMOTE, Some(tcp)) => tcp.close(peer, why),
            (l, _) => self.shm.close(l as usize, None),
        }
    }

    /// Spins for at most `spins` pauses until a record from `peer` waits (see
    /// [`ShmChannel::spin_for`]); returns the pauses spent. A peer over TCP is found by the
    /// poll itself, a `recv` that costs as much as [`TCP_POLL_PAUSES`]: counted as spent, so a
    /// waiter on TCP spins as long as one on the billboard, not many times longer (on one core
    /// it kept the peer off the core 50 `recv`s per message, 20 µs where one yield hands over).
    #[inline]
    pub(crate) fn spin_for(&self, peer: usize, spins: u32) -> u32 {
        match self.local[peer] {
            REMOTE => {
                std::hint::spin_loop();
                TCP_POLL_PAUSES
            }
            l => self.shm.spin_for(l as usize, spins),
        }
    }

    /// [`ShmChannel::take_head`] for a billboard peer; false for any other.
    #[inline]
    pub(crate) fn take_head(&mut self, peer: usize, take: impl FnOnce(&Header, &[u8]) -> bool) -> bool {
        match self.local[peer] {
            REMOTE => false,
            l => self.shm.take_head(l as usize, take),
        }
    }

    /// What a waiter needs to sleep without holding the routes.
    pub(crate) fn sleeper(&mut self) -> Sleeper {
        match (&mut self.tcp, &self.both) {
            (None, _) => Sleeper::Shm(self.shm.sleeper()),
            (Some(tcp), None) => Sleeper::Tcp(tcp.waker()),
            (Some(tcp), Some((set, bell))) => {
                drop(tcp.waker()); // flushes what the sockets still owe
                Sleeper::Both(self.shm.sleeper(), Arc::clone(set), Arc::clone(bell))
            }
        }
    }

    /// `read_remote` into several local pieces (billboard peers only).
    pub(crate) fn read_remote_vectored(&self, peer: usize, addr: u64, iov: &mut [libc::iovec]) -> std::io::Result<()> {
        self.shm.read_remote_vectored(self.local[peer] as usize, addr, iov)
    }

    /// Copies `src` into `peer`'s memory at `addr` (billboard peers only; see
    /// [`ShmChannel::write_remote`]).
    pub(crate) fn write_remote(&self, peer: usize, addr: u64, src: &[u8]) -> std::io::Result<()> {
        self.shm.write_remote(self.local[peer] as usize, addr, src)
    }

    /// Claim word `k` of the copies shared with billboard peer `peer`: the one of messages it
    /// sends us (`from_peer`), or of ours to it.
    pub(crate) fn claim_word(&self, peer: usize, from_peer: bool, k: usize) -> &crate::sync::AtomicU64 {
        let (me, peer) = (self.shm.me(), self.local[peer] as usize);
        if from_peer {
            self.shm.claim_word(me, peer, k)
        } else {
            self.shm.claim_word(peer, me, k)
        }
    }

    /// Copies from several pieces of `peer`'s memory into several local ones (billboard peers
    /// only; see [`ShmChannel::read_remote_iov`]).
    pub(crate) fn read_remote_iov(
        &self,
        peer: usize,
        local: &mut [libc::iovec],
        remote: &mut [libc::iovec],
    ) -> std::io::Result<()> {
        self.shm.read_remote_iov(self.local[peer] as usize, local, remote)
    }
}

impl Channel for Routes {
    /// The billboard's: what the engine may assume of every route ([`Routes::caps_for`] per peer).
    fn caps(&self) -> Caps {
        self.shm.caps()
    }

    fn nranks(&self) -> usize {
        self.local.len()
    }

    #[inline]
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        let Some(tcp) = &mut self.tcp else {
            // One host: the billboard holds every rank, in world order.
            return self.shm.try_send(peer, header, payload);
        };
        match self.local[peer] {
            REMOTE => tcp.try_send(peer, header, payload),
            l => self.shm.try_send(l as usize, header, payload),
        }
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        let Some(tcp) = &mut self.tcp else {
            return self.shm.try_send_gather(peer, header, pieces);
        };
        match self.local[peer] {
            REMOTE => tcp.try_send_gather(peer, header, pieces),
            l => self.shm.try_send_gather(l as usize, header, pieces),
        }
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if peers.iter().all(|&p| self.local[p] != REMOTE) {
            let local: Vec<usize> = peers.iter().map(|&p| self.local[p] as usize).collect();
            return self.shm.try_multicast(&local, header, payload);
        }
        for &p in peers {
            self.try_send(p, header, payload)?;
        }
        Ok(())
    }

    #[inline]
    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        if self.tcp.is_none() {
            // One host: the billboard holds every rank, in world order.
            return self.shm.poll(hint, f);
        }
        let remote_hint = hint.filter(|&p| self.local[p] == REMOTE);
        let local_hint = match hint {
            Some(p) if remote_hint.is_none() => Some(self.local[p] as usize),
            _ => None,
        };
        let shm_world = &self.shm_world;
        let mut handled = self.shm.poll(local_hint, |s, h, p| f(shm_world[s], h, p));
        if let Some(tcp) = &mut self.tcp {
            self.polls = self.polls.wrapping_add(1);
            if remote_hint.is_some() || self.polls.is_multiple_of(TCP_EVERY) {
                handled += tcp.poll(remote_hint, f);
            }
        }
        handled
    }

    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
        match self.local[peer] {
            REMOTE => self.tcp.as_ref().expect("a remote rank has a TCP route").read_remote(peer, addr, dst),
            l => self.shm.read_remote(l as usize, addr, dst),
        }
    }

    fn sleep(&self, timeout: Duration) {
        match (&self.tcp, &self.both) {
            (None, _) => self.shm.sleep(timeout),
            (Some(tcp), None) => tcp.sleep(timeout),
            (Some(_), Some((set, bell))) => self.shm.sleeper().sleep_on_bell(bell, || sleep_on(set, timeout)),
        }
    }

    fn flushed(&self) -> bool {
        self.tcp.as_ref().is_none_or(|t| t.flushed())
    }
}

/// Sleeps without a borrow of the routes (see [`shm::Sleeper`]).
pub(crate) enum Sleeper {
    Shm(shm::Sleeper),
    Tcp(Arc<OwnedFd>),
    /// Billboard peers ring the doorbell in the epoll set: (set, doorbell).
    Both(shm::Sleeper, Arc<OwnedFd>, Arc<OwnedFd>),
}

impl Sleeper {
    pub fn sleep(&self, timeout: Duration) {
        match self {
            Sleeper::Shm(s) => s.sleep(timeout),
            Sleeper::Tcp(e) => sleep_on(e, timeout),
            Sleeper::Both(s, set, bell) => s.sleep_on_bell(bell, || sleep_on(set, timeout)),
        }
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

/// Where one rank said it lives and listens.
#[derive(Clone)]
struct Advert {
    /// The kernel it runs on: hosts that are network namespaces of one machine share its cores.
    kernel: String,
    host: String,
    port: u16,
    addrs: Vec<Ipv4Addr>,
}

impl Advert {
    fn encode(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        format!("{}|{}|{}|{}", self.kernel, self.host, self.port, addrs.join(","))
    }

    fn decode(rank: usize, text: &str) -> Result<Advert> {
        let bad = || Error::Bootstrap(format!("rank {rank} published a malformed route: {text:?}"));
        let (kernel, rest) = text.split_once('|').ok_or_else(bad)?;
        let mut parts = rest.rsplitn(3, '|');
        let (addrs, port, host) = (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next());
        let addrs = addrs.split(',').filter(|a| !a.is_empty()).map(|a| a.parse().map_err(|_| bad()));
        Ok(Advert {
            kernel: kernel.to_string(),
            host: host.ok_or_else(bad)?.to_string(),
            port: port.parse().map_err(|_| bad())?,
            addrs: addrs.collect::<Result<_>>()?,
        })
    }
}

/// This machine's kernel, as the boot id names it (unique per boot); the host key without one.
fn kernel_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|_| addr::host_key())
}

/// Sets up this rank's routes to every rank of `job` (see the module documentation).
pub(crate) fn connect(job: &mut Job) -> Result<Routes> {
    let via = RouteChoice::from_env()?;
    let one_host = std::env::var("BB_NNODES").is_ok_and(|n| n.trim() == "1");
    if job.size == 1 || (one_host && via == RouteChoice::Auto) {
        let all: Vec<usize> = (0..job.size).collect();
        let shm = shm::connect(job, &all, "0", outnumbered(job.size))?;
        return Ok(Routes {
            local: (0..job.size as u32).collect(),
            shm_world: all,
            shm,
            tcp: None,
            both: None,
            node: vec![0; job.size],
            polls: 0,
        });
    }
    let me = job.rank;
    let choice = IfChoice::parse(&std::env::var("BB_TCP_IF").unwrap_or_default())?;
    // Listen on exactly the addresses offered (loopback where none is: peers on this host only).
    let mut offered = addr::offered(&choice, &addr::interfaces()?)?;
    if offered.is_empty() {
        offered.push(Ipv4Addr::LOCALHOST);
    }
    // TCP listens on them, UDP binds a socket on each: either way, the port this rank publishes.
    let (listeners, udp) = match via == RouteChoice::Udp {
        true => (None, Some(UdpChannel::bind(&offered)?)),
        false => (Some(listen(&offered)?), None),
    };
    let port = match (&listeners, &udp) {
        (Some(l), _) => l.port,
        (_, Some(u)) => u.local_addr().map_err(|e| Error::Os { call: "getsockname", errno: e })?.port(),
        _ => unreachable!("one of the two"),
    };
    let mine = Advert { kernel: kernel_id(), host: addr::host_key(), port, addrs: offered };
    job.put(&format!("bb-route-{me}"), &mine.encode())?;
    job.barrier()?;
    let mut adverts = Vec::with_capacity(job.size);
    for r in 0..job.size {
        adverts.push(if r == me { mine.clone() } else { Advert::decode(r, &job.get(&format!("bb-route-{r}"))?)? });
    }

    // Hosts in order of their lowest rank; the billboard holds this host's ranks.
    let mut host_names: Vec<&str> = Vec::new();
    let node: Vec<usize> = adverts
        .iter()
        .map(|a| {
            host_names.iter().position(|h| *h == a.host).unwrap_or_else(|| {
                host_names.push(&a.host);
                host_names.len() - 1
            })
        })
        .collect();
    let billboard: Vec<usize> = (0..job.size)
        .filter(|&r| matches!(route_between(me, r, &node, via), Route::SelfRoute | Route::SharedMemory))
        .collect();
    let mut local = vec![REMOTE; job.size];
    for (i, &r) in billboard.iter().enumerate() {
        local[r] = i as u32;
    }
    let segment_key = if via == RouteChoice::Auto { node[me].to_string() } else { format!("r{me}") };
    // Every rank on this machine competes for its cores, whichever route reaches it (all of
    // them TCP under BB_ROUTES=tcp, and hosts that are network namespaces of one machine share
    // it): a waiter that spins keeps the core its peer needs.
    let here = adverts.iter().filter(|a| a.kernel == mine.kernel).count();
    let shm = shm::connect(job, &billboard, &segment_key, outnumbered(here))?;

    let targets: Vec<Target> = (0..job.size)
        .filter(|&r| local[r] == REMOTE)
        .map(|r| {
            let a = &adverts[r];
            // A loopback address means this host to whoever connects: only to ranks that share it.
            let reachable = |ip: &&Ipv4Addr| node[r] == node[me] || !ip.is_loopback();
            let addrs = a.addrs.iter().filter(reachable).map(|&ip| SocketAddr::new(IpAddr::V4(ip), a.port)).collect();
            Target { rank: r, host: host_label(&a.host), addrs }
        })
        .collect();
    let mut shm = shm;
    let mut tcp = if targets.is_empty() {
        None // every rank shares this host (under a launcher that did not say so)
    } else {
        let secret = Secret::from_env().map_err(|e| {
            Error::Bootstrap(format!("{e}: ranks on different hosts need the job secret bbrun gives them"))
        })?;
        let hosts = adverts.iter().map(|a| host_label(&a.host)).collect();
        Some(match (listeners, udp) {
            (Some(listeners), _) => {
                let established = setup::establish(me, job.size, listeners, &targets, &secret)?;
                Remote::Tcp(TcpChannel::new(me, hosts, established)?)
            }
            (None, Some(udp)) => {
                // No connection to make: a peer's first address is where its datagrams go.
                let mut addrs = vec![None; job.size];
                for t in &targets {
                    addrs[t.rank] = t.addrs.first().copied();
                }
                Remote::Udp(UdpChannel::new(me, hosts, udp, &secret, addrs)?)
            }
            (None, None) => unreachable!("one of the two"),
        })
    };
    let both = match &mut tcp {
        Some(tcp) if billboard.len() > 1 => Some(sleep_set(&mut shm, tcp)?),
        _ => None,
    };
    Ok(Routes { local, shm_world: billboard, shm, tcp, both, node, polls: 0 })
}

/// The routes of a job whose ranks all share `shm` (each rank its own endpoint), for tests
/// that drive an engine in this process.
#[cfg(test)]
pub(crate) fn shm_only(shm: ShmChannel) -> Routes {
    let n = shm.nranks();
    Routes {
        local: (0..n as u32).collect(),
        shm_world: (0..n).collect(),
        shm,
        tcp: None,
        both: None,
        node: vec![0; n],
        polls: 0,
    }
}

/// Where a rank with peers on both routes sleeps: one epoll set holding TCP's (ready when a
/// socket is) and this rank's billboard doorbell, which its billboard peers ring when they post
/// to it while it sleeps. Returns (set, doorbell).
fn sleep_set(shm: &mut ShmChannel, tcp: &mut Remote) -> Result<(Arc<OwnedFd>, Arc<OwnedFd>)> {
    use rustix::event::epoll;
    let os = |call: &'static str| move |e: std::io::Error| Error::Os { call, errno: e };
    shm.install_bell().map_err(os("bind (billboard doorbell)"))?;
    let bell = shm.bell().expect("installed");
    let set = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| os("epoll_create")(e.into()))?;
    for fd in [&tcp.waker(), &bell] {
        epoll::add(&set, fd, epoll::EventData::new_u64(0), epoll::EventFlags::IN)
            .map_err(|e| os("epoll_ctl")(e.into()))?;
    }
    Ok((Arc::new(set), bell))
}

/// Whether `ranks` processes outnumber the cores this process may run on.
fn outnumbered(ranks: usize) -> bool {
    ranks > std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A host key as people read it: the name, without the network namespace number.
fn host_label(key: &str) -> String {
    key.split('~').next().unwrap_or(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adverts_round_trip_and_bad_ones_are_named() {
        let a = Advert {
            kernel: "b00t".into(),
            host: "node7~4026531833".into(),
            port: 40001,
            addrs: vec![Ipv4Addr::new(10, 0, 0, 1)],
        };
        let b = Advert::decode(3, &a.encode()).unwrap();
        assert_eq!((b.host.as_str(), b.port, b.addrs.as_slice()), ("node7~4026531833", 40001, a.addrs.as_slice()));
        assert_eq!(b.kernel, "b00t");
        let none = Advert::decode(3, "k|h|5|").unwrap();
        assert!(none.addrs.is_empty());
        let e = Advert::decode(3, "k|h|x|1.2.3.4").err().unwrap().to_string();
        assert!(e.contains("rank 3") && e.contains("h|x|1.2.3.4"), "{e}");
        assert_eq!(host_label("node7~4026531833"), "node7");
    }
}

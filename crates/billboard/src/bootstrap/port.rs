//! Ports: how two groups of processes that share no launcher meet (MPI_Open_port,
//! MPI_Comm_accept, MPI_Comm_connect; MPI_Comm_spawn uses the same to meet its children).
//!
//! A port is a listening TCP socket of the accepting root and a fresh random *token*. Its name
//! carries both, as text a program passes on by its own means (a file, the launcher's name
//! service, the children's environment):
//!
//! ```text
//! bbport:1:<ipv4>[,<ipv4>...]:<tcp port>:<token, 32 bytes in hex>
//! ```
//!
//! Why this is safe: every connection made for a port, the roots' link here and then every
//! connection between the two groups (`api/dynamic.rs`), runs the TCP route's handshake
//! (`transport/tcp/handshake.rs`) keyed by the token instead of a job secret. Whoever connects
//! must prove it knows the token, so it must have been given the port's name; whoever answers
//! must prove the same, so a connector never talks to an impostor on a reused port. Two bbrun
//! jobs have different secrets, and neither secret is sent: the token is made per port, and
//! only names the program itself hands out reveal it. A stranger who guesses the port number
//! is dropped after a failed handshake, and the accept goes on waiting.
//!
//! After the handshake the roots' link is a plain blocking stream: each side sends one blob
//! (`u32` length, little-endian, then the bytes) and reads the other's.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use crate::transport::tcp::addr::{self, IfChoice};
pub(crate) use crate::transport::tcp::handshake::Secret;
use crate::transport::tcp::listen::{listen, Incoming, Listeners};
use crate::transport::tcp::setup::{establish, Handshaking, Progress, Target};
use crate::tunables::Tunable;
use crate::{Error, Result};

pub static CONNECT_WAIT_MS: Tunable = Tunable::new(
    "BB_PORT_CONNECT_MS",
    60_000,
    "how long MPI_Comm_connect tries to reach a port before it fails (ms; MPICH waits about as long)",
)
.read_at(crate::tunables::Effect::EachUse);

const PREFIX: &str = "bbport:1:";

/// A blob on a roots' link is at most this big (the adverts of a group of many thousands).
const MAX_BLOB: usize = 64 << 20;

/// What a port name says.
#[derive(Clone, Debug)]
pub struct PortName {
    pub addrs: Vec<SocketAddr>,
    pub token: Secret,
}

impl PortName {
    pub fn encode(&self) -> String {
        let ips: Vec<String> = self.addrs.iter().map(|a| a.ip().to_string()).collect();
        let port = self.addrs.first().map_or(0, |a| a.port());
        format!("{PREFIX}{}:{port}:{}", ips.join(","), self.token.to_hex())
    }

    pub fn decode(name: &str) -> Result<PortName> {
        let bad =
            |why: &str| Error::InvalidArgument(format!("port name {name:?} is not one MPI_Open_port made: {why}"));
        let rest = name.trim().strip_prefix(PREFIX).ok_or_else(|| bad("it does not start with bbport:1:"))?;
        let mut parts = rest.split(':');
        let (ips, port, token) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(i), Some(p), Some(t), None) => (i, p, t),
            _ => return Err(bad("expected addresses:port:token")),
        };
        let port: u16 = port.parse().map_err(|_| bad("the TCP port is not a number"))?;
        let addrs = ips
            .split(',')
            .map(|ip| ip.parse::<Ipv4Addr>().map(|ip| SocketAddr::from((ip, port))).map_err(|_| bad("a bad address")))
            .collect::<Result<Vec<_>>>()?;
        let token = Secret::from_hex(token).map_err(|e| bad(&e.to_string()))?;
        Ok(PortName { addrs, token })
    }
}

/// The addresses this process offers for connections (`BB_TCP_IF`), loopback when none.
fn offered_addrs() -> Result<Vec<Ipv4Addr>> {
    let choice = IfChoice::parse(&std::env::var("BB_TCP_IF").unwrap_or_default())?;
    let mut offered = addr::offered(&choice, &addr::interfaces()?)?;
    if offered.is_empty() {
        offered.push(Ipv4Addr::LOCALHOST);
    }
    Ok(offered)
}

/// An open port: its listening sockets and token.
pub struct Port {
    pub name: String,
    listeners: Listeners,
    token: Secret,
}

impl Port {
    /// Opens a port on this process's offered addresses (MPI_Open_port).
    pub fn open() -> Result<Port> {
        let offered = offered_addrs()?;
        let listeners = listen(&offered)?;
        let token = Secret::generate().map_err(|e| Error::Bootstrap(e.to_string()))?;
        let addrs = offered.iter().map(|&ip| SocketAddr::from((ip, listeners.port))).collect();
        let name = PortName { addrs, token: token.clone() }.encode();
        Ok(Port { name, listeners, token })
    }

    /// Waits for one connection that proves it knows the token (MPI_Comm_accept's root);
    /// strangers are dropped and the wait goes on, until `deadline` if there is one, or until
    /// `give_up` (asked every poll, so it must be cheap or keep its own pace) returns an error.
    pub(crate) fn accept_link(&self, deadline: Option<Instant>, give_up: &dyn Fn() -> Result<()>) -> Result<Link> {
        let mut incoming = Incoming::new(0, 2);
        loop {
            give_up()?;
            let now = Instant::now();
            if deadline.is_some_and(|d| now > d) {
                return Err(Error::Port(format!(
                    "no process connected to port {} in time",
                    PortName::decode(&self.name).map_or_else(|_| self.name.clone(), |n| n.encode_public())
                )));
            }
            incoming.accept(&self.listeners, &self.token, 1, now)?;
            if let Some((_, h, early)) = incoming.step(now).into_iter().next() {
                return Link::new(h.fd, early);
            }
            wait_readable(&self.listeners, &incoming);
        }
    }

    pub(crate) fn token(&self) -> &Secret {
        &self.token
    }
}

/// One process's end of a join of two groups (`api/dynamic.rs`): it listens where the other
/// group's processes reach it, and tells them so through its advert (host, addresses, port).
pub(crate) struct JoinEnd {
    listeners: Listeners,
    pub host: String,
    pub addrs: Vec<Ipv4Addr>,
    pub port: u16,
}

/// A process of the other group, as its advert says: its rank in the union of both groups,
/// the host to name it by in errors, where it listens.
pub(crate) struct JoinPeer {
    pub rank: usize,
    pub host: String,
    pub addrs: Vec<Ipv4Addr>,
    pub port: u16,
}

impl JoinEnd {
    /// Listens on this process's offered addresses (`BB_TCP_IF`).
    pub(crate) fn open() -> Result<JoinEnd> {
        let addrs = offered_addrs()?;
        let listeners = listen(&addrs)?;
        Ok(JoinEnd { host: addr::host_key(), port: listeners.port, addrs, listeners })
    }

    /// Connects to the peers below `me` and accepts those above, each connection proving the
    /// port's `token` (the TCP route's handshake); the listeners close after. Returns the
    /// sockets by union rank, each with the bytes that came early, for the engine's TCP route.
    pub(crate) fn connect(
        self,
        me: usize,
        nranks: usize,
        peers: &[JoinPeer],
        token: &Secret,
    ) -> Result<Vec<(usize, OwnedFd, Vec<u8>)>> {
        let targets: Vec<Target> = peers
            .iter()
            .map(|p| Target {
                rank: p.rank,
                host: p.host.clone(),
                addrs: p.addrs.iter().map(|&ip| SocketAddr::from((ip, p.port))).collect(),
            })
            .collect();
        establish(me, nranks, self.listeners, &targets, token)
    }
}

/// Sleeps until a listener or a handshake in progress has something, or 10 ms pass.
fn wait_readable(listeners: &Listeners, incoming: &Incoming) {
    use rustix::event::{poll, PollFd, PollFlags};
    use std::os::fd::AsFd;
    let mut fds: Vec<PollFd<'_>> = listeners.socks.iter().map(|l| PollFd::new(l, PollFlags::IN)).collect();
    fds.extend(incoming.list.iter().map(|h| PollFd::from_borrowed_fd(h.fd.as_fd(), PollFlags::IN)));
    let ten_ms = rustix::event::Timespec { tv_sec: 0, tv_nsec: 10_000_000 };
    let _ = poll(&mut fds, Some(&ten_ms));
}

/// The authenticated link between the two roots.
pub(crate) struct Link {
    stream: TcpStream,
    early: Vec<u8>,
}

impl Link {
    fn new(fd: OwnedFd, early: Vec<u8>) -> Result<Link> {
        let stream = TcpStream::from(fd);
        stream.set_nonblocking(false).map_err(|e| Error::Os { call: "fcntl (port link)", errno: e })?;
        let _ = stream.set_nodelay(true);
        Ok(Link { stream, early })
    }

    /// Connects to the port `name` as its connecting root (MPI_Comm_connect), trying each of
    /// its addresses until [`CONNECT_WAIT_MS`] has passed.
    pub(crate) fn connect(name: &PortName) -> Result<Link> {
        let deadline = Instant::now() + Duration::from_millis(CONNECT_WAIT_MS.get() as u64);
        let mut last = String::from("no address");
        loop {
            for &addr in &name.addrs {
                let mut h = Handshaking::connect(addr, &name.token, 1, 0)?;
                loop {
                    match h.step() {
                        Progress::Waiting if h.deadline > Instant::now() && deadline > Instant::now() => {
                            std::thread::sleep(Duration::from_millis(1))
                        }
                        Progress::Waiting => {
                            last = format!("{addr}: no answer in time");
                            break;
                        }
                        Progress::Done { early, .. } => return Link::new(h.fd, early),
                        Progress::Failed { why, .. } => {
                            last = format!("{addr}: {why}");
                            break;
                        }
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(Error::Bootstrap(format!(
                    "cannot connect to port {} within {} ms (BB_PORT_CONNECT_MS): {last}",
                    name.encode_public(),
                    CONNECT_WAIT_MS.get()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `mine` and returns what the other root sent.
    pub(crate) fn swap(&mut self, mine: &[u8]) -> Result<Vec<u8>> {
        let io = |e: std::io::Error| Error::Bootstrap(format!("the link to the other group's root broke: {e}"));
        let mut out = (mine.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(mine);
        self.stream.write_all(&out).map_err(io)?;
        let mut len = [0u8; 4];
        self.read_exact(&mut len).map_err(io)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_BLOB {
            return Err(Error::Bootstrap(format!("the other group's root sent a blob of {len} bytes")));
        }
        let mut theirs = vec![0u8; len];
        self.read_exact(&mut theirs).map_err(io)?;
        Ok(theirs)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        let from_early = buf.len().min(self.early.len());
        buf[..from_early].copy_from_slice(&self.early[..from_early]);
        self.early.drain(..from_early);
        self.stream.read_exact(&mut buf[from_early..])
    }
}

impl PortName {
    /// The name without its token, for messages (the token is a credential).
    pub fn encode_public(&self) -> String {
        let ips: Vec<String> = self.addrs.iter().map(|a| a.ip().to_string()).collect();
        format!("{PREFIX}{}:{}:<token>", ips.join(","), self.addrs.first().map_or(0, |a| a.port()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_are_refused() {
        let port = Port::open().unwrap();
        let name = PortName::decode(&port.name).unwrap();
        assert_eq!(name.encode(), port.name);
        assert!(!name.encode_public().contains(&port.token().to_hex()));
        for bad in ["", "tag#0$", "bbport:1:1.2.3.4:x:00", "bbport:1:1.2.3.4:5:abcd", "bbport:1:1.2.3.4:5"] {
            assert!(PortName::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn link_needs_the_token() {
        let port = Port::open().unwrap();
        let good = PortName::decode(&port.name).unwrap();
        let mut wrong = good.clone();
        wrong.token = Secret::generate().unwrap();
        let acceptor = std::thread::scope(|s| {
            let t = s.spawn(|| port.accept_link(None, &|| Ok(())).and_then(|mut l| l.swap(b"from acceptor")));
            // A stranger with the wrong token is refused (it never gets a link, and the
            // acceptor never answers its MAC); then the right one gets through.
            let mut stranger = Handshaking::connect(wrong.addrs[0], &wrong.token, 1, 0).unwrap();
            let until = Instant::now() + Duration::from_secs(5);
            loop {
                match stranger.step() {
                    Progress::Done { .. } => panic!("a wrong token was accepted"),
                    Progress::Failed { .. } => break,
                    Progress::Waiting => {
                        assert!(Instant::now() < until, "the stranger was neither refused nor dropped")
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut link = Link::connect(&good).unwrap();
            assert_eq!(link.swap(b"from connector").unwrap(), b"from acceptor");
            t.join().unwrap()
        });
        assert_eq!(acceptor.unwrap(), b"from connector");
    }
}

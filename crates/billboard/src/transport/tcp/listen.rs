//! The listening side of set-up: sockets bound to the addresses this rank publishes and nothing
//! else, and the connections taken from them while they prove themselves, with a bound on what a
//! stranger can cost.
//!
//! The listeners live only as long as set-up (`setup::establish` drops them once every expected
//! peer is connected): after it, a connection to the port is refused by the kernel, and nothing of
//! ours runs for it. During set-up a stranger (a port scanner, garbage, a wrong secret, a silent
//! connection, or thousands of them) costs at most [`STRANGER_SLOTS`] descriptors beyond the
//! peers still expected, [`LOGGED_DROPS`] log lines plus one summary, and no time of the job's:
//! garbage is refused on its first bytes, and when the slots are full the oldest connection that
//! has not sent its HELLO (or has not answered the CHALLENGE for [`PROOF_GRACE`]) makes room. An
//! honest peer sends its HELLO as soon as it is connected and its PROOF as soon as it has the
//! CHALLENGE, so it is never the one that goes; if it were, it connects again (`setup.rs`).
//! Left open: a flood of forged HELLOs, each silent after its CHALLENGE, can delay set-up by up
//! to [`PROOF_GRACE`] per slot's worth of them; it cannot make a stranger a peer.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::SocketFlags;

use super::handshake::Secret;
use super::setup::{Handshaking, Progress};
use crate::{Error, Result};

/// Handshakes with strangers held at once, beyond the peers still expected.
pub(crate) const STRANGER_SLOTS: usize = 32;

/// A connection that has had the CHALLENGE this long without answering may make room for another.
pub(crate) const PROOF_GRACE: Duration = Duration::from_secs(1);

/// Dropped connections logged one by one; the rest are counted in one line at the end.
pub(crate) const LOGGED_DROPS: usize = 4;

/// Connections taken per round, so the handshakes in progress are stepped between rounds.
const ACCEPTS_PER_ROUND: usize = 64;

/// Tries to find one port free on every address.
const BIND_TRIES: usize = 16;

/// This rank's listening sockets: one per published address, all on one port (peers learn one
/// port and a list of addresses).
pub(crate) struct Listeners {
    pub socks: Vec<TcpListener>,
    pub port: u16,
}

/// Binds `addrs` (at least one), on a port the kernel picks for the first and the others share.
pub(crate) fn listen(addrs: &[Ipv4Addr]) -> Result<Listeners> {
    let bind = |a: Ipv4Addr, port: u16| {
        let l = TcpListener::bind((a, port))?;
        l.set_nonblocking(true)?;
        Ok::<_, std::io::Error>(l)
    };
    let os =
        |a: Ipv4Addr| move |e| Error::Bootstrap(format!("cannot listen on {a} (BB_TCP_IF picks the address): {e}"));
    let (&first, rest) = addrs.split_first().ok_or_else(|| Error::Bootstrap("no address to listen on".into()))?;
    let mut last = None;
    for _ in 0..BIND_TRIES {
        let l = bind(first, 0).map_err(os(first))?;
        let port = l.local_addr().map_err(|e| Error::Os { call: "getsockname", errno: e })?.port();
        let mut socks = vec![l];
        for &a in rest {
            match bind(a, port) {
                Ok(l) => socks.push(l),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => break,
                Err(e) => return Err(os(a)(e)),
            }
        }
        if socks.len() == addrs.len() {
            return Ok(Listeners { socks, port });
        }
        last = Some(port);
    }
    Err(Error::Bootstrap(format!(
        "no TCP port free on every address of {} in {BIND_TRIES} tries (last: {})",
        addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
        last.unwrap_or(0)
    )))
}

/// Connections from the listeners, proving themselves; bounded as the module documentation says.
pub(crate) struct Incoming {
    me: usize,
    nranks: usize,
    pub list: Vec<Handshaking>,
    dropped: usize,
}

impl Incoming {
    pub fn new(me: usize, nranks: usize) -> Incoming {
        Incoming { me, nranks, list: Vec::new(), dropped: 0 }
    }

    /// Takes pending connections from `listeners`, while fewer than `expected + STRANGER_SLOTS`
    /// handshakes are held (making room where a stranger can go).
    pub fn accept(&mut self, listeners: &Listeners, secret: &Secret, expected: usize, now: Instant) -> Result<()> {
        let cap = expected + STRANGER_SLOTS;
        for l in &listeners.socks {
            for _ in 0..ACCEPTS_PER_ROUND {
                if self.list.len() >= cap && !self.make_room(now) {
                    return Ok(()); // the rest wait in the kernel's backlog
                }
                let fd = match rustix::net::accept_with(l, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
                    Ok(fd) => fd,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR | Errno::CONNABORTED) => continue,
                    Err(e) => return Err(Error::Os { call: "accept (TCP listener)", errno: e.into() }),
                };
                let from = rustix::net::getpeername(&fd)
                    .ok()
                    .flatten()
                    .and_then(|a| SocketAddr::try_from(a).ok())
                    .map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
                self.list.push(Handshaking::accept(fd, from, secret, self.me, self.nranks)?);
            }
        }
        Ok(())
    }

    /// Drops the oldest connection that has not sent its HELLO, or has sat on its CHALLENGE for
    /// [`PROOF_GRACE`]; false if there is none.
    fn make_room(&mut self, now: Instant) -> bool {
        let evictable = |h: &Handshaking| h.heard_at().is_none_or(|t| now.duration_since(t) > PROOF_GRACE);
        let oldest = self.list.iter().enumerate().filter(|(_, h)| evictable(h)).min_by_key(|(_, h)| h.started);
        let Some((i, _)) = oldest else { return false };
        let h = self.list.swap_remove(i);
        self.drop_one(&h, "too many connections at once: the oldest silent one goes");
        true
    }

    /// Steps every handshake; returns the authenticated ones as (peer, handshake, early bytes).
    pub fn step(&mut self, now: Instant) -> Vec<(usize, Handshaking, Vec<u8>)> {
        let mut done = Vec::new();
        let mut i = 0;
        while i < self.list.len() {
            match self.list[i].step() {
                Progress::Waiting if self.list[i].deadline > now => i += 1,
                Progress::Waiting => {
                    let h = self.list.swap_remove(i);
                    self.drop_one(&h, "no handshake in time");
                }
                Progress::Done { peer, early } => done.push((peer, self.list.swap_remove(i), early)),
                Progress::Failed { why, .. } => {
                    let h = self.list.swap_remove(i);
                    self.drop_one(&h, &why);
                }
            }
        }
        done
    }

    /// Logs a dropped connection attempt (the first [`LOGGED_DROPS`]; the rest are counted).
    pub fn drop_one(&mut self, h: &Handshaking, why: &str) {
        self.dropped += 1;
        if self.dropped <= LOGGED_DROPS {
            eprintln!("billboard: rank {}: dropped a connection from {}: {why}", self.me, h.remote);
        }
    }

    /// How many connections were dropped in all.
    #[cfg(test)]
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

impl Drop for Incoming {
    /// Says how many drops went unlogged, in one line.
    fn drop(&mut self) {
        if self.dropped > LOGGED_DROPS {
            eprintln!(
                "billboard: rank {}: dropped {} more connections during set-up (not authenticated)",
                self.me,
                self.dropped - LOGGED_DROPS
            );
        }
    }
}

#[cfg(test)]
#[path = "listen_tests.rs"]
mod tests;

//! The route to ranks off this host's billboard: TCP, or the reliable UDP protocol
//! (`BB_ROUTES=udp`). Routes holds one and asks it the same things whichever it is.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use super::tcp::TcpChannel;
use super::udp::UdpChannel;
use super::{Caps, Channel, Header, ReceiveCalls, WouldBlock};

/// Sockets a sleeper watches beside an epoll set for the sleep alone (UDP's receiving sockets,
/// TCP's lone connection).
pub(crate) type Watch = Option<Arc<[OwnedFd]>>;

// One per process, never moved on a hot path: boxing the larger would only add a pointer chase.
#[allow(clippy::large_enum_variant)]
pub enum Remote {
    Tcp(TcpChannel),
    Udp(UdpChannel),
}

/// Runs `$e` with `$c` bound to whichever channel `$r` holds.
macro_rules! each {
    ($r:expr, $c:ident => $e:expr) => {
        match $r {
            Remote::Tcp($c) => $e,
            Remote::Udp($c) => $e,
        }
    };
}

impl Remote {
    /// The epoll set a sleeper waits on, after sending what the channel still owes.
    pub(crate) fn waker(&mut self) -> Arc<OwnedFd> {
        each!(self, c => c.waker())
    }

    /// The sockets a sleeper watches beside the set: UDP's receiving sockets, which are in no
    /// epoll set, and TCP's lone connection (`TcpChannel::watch_alone`).
    pub(crate) fn watch(&self) -> Watch {
        match self {
            Remote::Tcp(tcp) => tcp.watch(),
            Remote::Udp(udp) => Some(udp.watch()),
        }
    }
}

impl Channel for Remote {
    /// The next broken route not yet reported: the peer and what happened.
    fn take_failure(&mut self) -> Option<(usize, String)> {
        each!(self, c => c.take_failure())
    }

    #[inline]
    fn has_failure(&self) -> bool {
        each!(self, c => c.has_failure())
    }

    /// Stops taking records from `peer`, whose records broke the engine's protocol.
    fn close(&mut self, peer: usize, why: &str) {
        each!(self, c => c.close(peer, why))
    }

    fn caps(&self) -> Caps {
        each!(self, c => c.caps())
    }

    fn nranks(&self) -> usize {
        each!(self, c => c.nranks())
    }

    #[inline]
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        each!(self, c => c.try_send(peer, header, payload))
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        each!(self, c => c.try_send_gather(peer, header, pieces))
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        each!(self, c => c.try_multicast(peers, header, payload))
    }

    #[inline]
    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, f: F) -> usize {
        each!(self, c => c.poll(hint, f))
    }

    fn poll_blocking<F: FnMut(usize, &Header, &[u8])>(&mut self, peer: usize, f: F) -> Option<usize> {
        each!(self, c => c.poll_blocking(peer, f))
    }

    fn receive_calls(&self) -> ReceiveCalls {
        each!(self, c => c.receive_calls())
    }

    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
        each!(self, c => c.read_remote(peer, addr, dst))
    }

    fn sleep(&self, timeout: Duration) {
        each!(self, c => c.sleep(timeout))
    }

    fn flushed(&self) -> bool {
        each!(self, c => c.flushed())
    }
}

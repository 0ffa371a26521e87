//! Doorbells: how a billboard sender wakes a receiver that sleeps in `epoll_wait`.
//!
//! A rank that also has peers over TCP cannot sleep on its futex word: data from a socket would
//! not wake it. It sleeps in one `epoll_wait` on its sockets and on its doorbell, a datagram
//! socket bound to an abstract name derived from the segment's (nothing in the file system, gone
//! with the process). It says so in its sleep word (`wait::BELL`), and a sender that finds that
//! word sends one byte to the doorbell instead of waking the futex. Anyone on the host may send
//! there: a stranger's datagram is a spurious wake-up, nothing more.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::net::{self, AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType};

/// This rank's doorbell, and the address of every peer's.
pub(crate) struct Bell {
    /// Shared with the sleeper, which empties it after waking.
    socket: Arc<OwnedFd>,
    peers: Vec<SocketAddrUnix>,
}

impl Bell {
    /// Binds doorbell `me` of the `n` of segment `segment` (its unique name).
    pub(crate) fn bind(segment: &str, me: usize, n: usize) -> io::Result<Bell> {
        let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
        let socket = net::socket_with(AddressFamily::UNIX, SocketType::DGRAM, flags, None)?;
        let peers = (0..n)
            .map(|i| SocketAddrUnix::new_abstract_name(format!("{segment}.bell{i}").as_bytes()))
            .collect::<rustix::io::Result<Vec<_>>>()?;
        net::bind(&socket, &peers[me])?;
        Ok(Bell { socket: Arc::new(socket), peers })
    }

    /// Wakes `peer`, which said it sleeps on its doorbell. A full queue (EAGAIN) means it has
    /// been rung already; a peer gone has nobody to wake.
    pub(crate) fn ring(&self, peer: usize) {
        let _ = net::sendto(&self.socket, &[1], SendFlags::DONTWAIT, &self.peers[peer]);
    }

    /// Empties this rank's doorbell after a sleep, so the next sleep blocks again.
    pub(crate) fn quiet(fd: BorrowedFd<'_>) {
        let mut byte = [0u8; 1];
        while net::recv(fd, &mut byte, RecvFlags::DONTWAIT).is_ok() {}
    }

    /// The socket, for a sleeper that outlives a borrow of the channel.
    pub(crate) fn socket(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.socket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::event::epoll;

    #[test]
    fn a_rung_bell_wakes_epoll_and_quiets() {
        let name = format!("/bb-test-bell-{}", std::process::id());
        let (a, b) = (Bell::bind(&name, 0, 2).unwrap(), Bell::bind(&name, 1, 2).unwrap());
        let ep = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
        epoll::add(&ep, &*b.socket(), epoll::EventData::new_u64(1), epoll::EventFlags::IN).unwrap();
        let ready = |ms: i64| {
            let mut ev: Vec<epoll::Event> = Vec::with_capacity(1);
            let ts = rustix::time::Timespec { tv_sec: 0, tv_nsec: ms * 1_000_000 };
            epoll::wait(&ep, rustix::buffer::spare_capacity(&mut ev), Some(&ts)).unwrap();
            !ev.is_empty()
        };
        assert!(!ready(0), "a bell nobody rang is quiet");
        a.ring(1);
        a.ring(1);
        assert!(ready(1000), "the ring wakes the sleeper");
        Bell::quiet(std::os::fd::AsFd::as_fd(&*b.socket()));
        assert!(!ready(0), "quieted");
        // A second bell on the same name is refused: names are per segment and index.
        assert!(Bell::bind(&name, 1, 2).is_err());
    }
}

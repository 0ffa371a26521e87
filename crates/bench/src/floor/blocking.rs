//! The blocking floors: a ping-pong between a process and its forked peer through a pipe pair, a
//! loopback TCP connection (`TCP_NODELAY`) or a pair of connected loopback UDP sockets, each side
//! blocked in `read`/`recv` until the other writes. Where the spinning floors lose (two processes
//! on one core, a spinner keeping the core its peer needs), this is what the kernel's own
//! hand-over costs; the socket kinds add what their protocol stacks cost on top of a pipe, the
//! floor of the TCP and UDP routes on one core.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

use super::{CHILD_BYTE, PARENT_BYTE};
use crate::peer::Peer;
use crate::plan::{latency_iters, Trials};
use crate::stats::{trimmed, Summary};

/// The kernel channel a blocking ping-pong goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Pipe,
    Tcp,
    Udp,
}

/// Largest message the UDP floor sends (one datagram each way, as the route's 64 KiB datagrams
/// over loopback); larger sizes are not measured (`Summary::MISSING`).
const UDP_MAX: usize = 65_507;

/// One end of the channel: a way to send a message whole and to receive one whole.
enum End {
    Stream { rx: Box<dyn Read + Send>, tx: Box<dyn Write + Send> },
    Datagram(UdpSocket),
}

impl End {
    fn send(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            End::Stream { tx, .. } => tx.write_all(b),
            End::Datagram(s) => s.send(b).map(drop),
        }
    }

    fn recv(&mut self, b: &mut [u8]) -> io::Result<()> {
        match self {
            End::Stream { rx, .. } => rx.read_exact(b),
            End::Datagram(s) => match s.recv(b)? {
                n if n == b.len() => Ok(()),
                n => Err(io::Error::other(format!("a datagram of {n} bytes where {} were sent", b.len()))),
            },
        }
    }
}

/// The two ends of a fresh channel of `kind` (the parent's, the child's).
fn ends(kind: Kind) -> io::Result<(End, End)> {
    Ok(match kind {
        Kind::Pipe => {
            let (down_r, down_w) = pipe()?;
            let (up_r, up_w) = pipe()?;
            (
                End::Stream { rx: Box::new(up_r), tx: Box::new(down_w) },
                End::Stream { rx: Box::new(down_r), tx: Box::new(up_w) },
            )
        }
        Kind::Tcp => {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            let a = TcpStream::connect(listener.local_addr()?)?;
            let (b, _) = listener.accept()?;
            let mut pair = Vec::with_capacity(2);
            for s in [a, b] {
                s.set_nodelay(true)?;
                pair.push(End::Stream { rx: Box::new(s.try_clone()?), tx: Box::new(s) });
            }
            let child = pair.pop().expect("two");
            (pair.pop().expect("two"), child)
        }
        Kind::Udp => {
            let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            a.connect(b.local_addr()?)?;
            b.connect(a.local_addr()?)?;
            // A datagram lost (a full buffer) fails the floor rather than hanging it.
            for s in [&a, &b] {
                s.set_read_timeout(Some(Duration::from_secs(2)))?;
            }
            (End::Datagram(a), End::Datagram(b))
        }
    })
}

/// Whether `kind` measures messages of `size` bytes.
fn measures(kind: Kind, size: usize) -> bool {
    kind != Kind::Udp || size <= UDP_MAX
}

/// One-way microseconds (round trip / 2) per size; 0 B moves one byte through a pipe or TCP (no
/// empty message there) and one empty datagram through UDP.
pub(super) fn pingpong(kind: Kind, sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    let max = sizes.iter().copied().max().unwrap_or(0).max(1);
    let len_of = |size: usize| if kind == Kind::Udp { size } else { size.max(1) };
    let (mut mine, mut theirs) = ends(kind)?;
    let mut inbox = vec![0u8; max];
    let mut child_box = vec![0u8; max];
    let (parent_msg, child_msg) = (vec![PARENT_BYTE; max], vec![CHILD_BYTE; max]);
    let peer = Peer::spawn(|| {
        for &size in sizes.iter().filter(|&&s| measures(kind, s)) {
            let len = len_of(size);
            for _ in 0..trials.total() * latency_iters(size) {
                let ok = theirs.recv(&mut child_box[..len]).is_ok()
                    && child_box[..len].iter().all(|&b| b == PARENT_BYTE)
                    && theirs.send(&child_msg[..len]).is_ok();
                if !ok {
                    // SAFETY: async-signal-safe exit of the forked child.
                    unsafe { libc::_exit(2) };
                }
            }
        }
    })?;
    drop(theirs);
    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        if !measures(kind, size) {
            results.push(Summary::MISSING);
            continue;
        }
        let (len, iters) = (len_of(size), latency_iters(size));
        let mut samples = Vec::with_capacity(trials.timed);
        for trial in 0..trials.total() {
            let start = Instant::now();
            for _ in 0..iters {
                mine.send(&parent_msg[..len])?;
                mine.recv(&mut inbox[..len])?;
            }
            if trial >= trials.warmup {
                samples.push(start.elapsed().as_secs_f64() / iters as f64 / 2.0 * 1e6);
            }
        }
        if inbox[..len].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("{kind:?} floor read wrong bytes at {size} B")));
        }
        results.push(trimmed(&samples).unwrap_or(Summary::MISSING));
    }
    peer.join()?;
    Ok(results)
}

/// A pipe's (read end, write end).
fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pingpong_delivers_every_size_on_every_kind() {
        let sizes = [0, 1, 100_000];
        for kind in [Kind::Pipe, Kind::Tcp, Kind::Udp] {
            let got = pingpong(kind, &sizes, Trials { timed: 3, warmup: 1 }).unwrap();
            assert_eq!(got.len(), sizes.len());
            let measured = if kind == Kind::Udp { 2 } else { 3 };
            assert!(got[..measured].iter().all(|s| s.median > 0.0), "{kind:?}: {got:?}");
            assert!(got[measured..].iter().all(|s| s.median.is_nan()), "{kind:?}: {got:?}");
        }
    }
}

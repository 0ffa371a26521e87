//! The raw TCP floor: two processes, one TCP connection, nothing else (no engine, no framing, no
//! MPI). What the TCP route is compared against, the way the shared-memory floor is for the
//! billboard channel.
//!
//! Two ways to wait, as the TCP route can:
//! - *polled*: non-blocking sockets, `recv(MSG_DONTWAIT)` / `send(MSG_DONTWAIT)` retried in a busy
//!   loop. The lowest latency a socket gives: no sleep, no wake-up.
//! - *blocking*: blocking sockets; a `recv` with nothing to read sleeps in the kernel and is woken
//!   by the arrival. What a thread that sleeps in `epoll_wait` pays per message.
//!
//! Both ends set `TCP_NODELAY` (no Nagle delay for small messages) and keep the kernel's default
//! buffer sizes. The connecting side drives: before each measurement it sends a [`Segment`] that
//! tells the listening side what to answer, so only the driver's command line matters.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{recv, send, RecvFlags, SendFlags};

/// Byte the driver's payloads are filled with; the listener's are [`SERVER_BYTE`]. Each side
/// checks that it received the other's bytes.
pub const DRIVER_BYTE: u8 = 0x5a;
pub const SERVER_BYTE: u8 = 0xc5;

/// How long the driver keeps retrying a refused connection (the listener may start later).
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(10);

/// How a side waits for the socket. The value is its code on the wire and its column in tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Non-blocking socket, busy-polling `recv(MSG_DONTWAIT)`.
    Polled = 0,
    /// Blocking socket: sleep in `recv`/`send` until the kernel wakes the thread.
    Blocking = 1,
}

impl Wait {
    fn code(self) -> u32 {
        self as u32
    }

    fn from_code(code: u32) -> io::Result<Wait> {
        match code {
            0 => Ok(Wait::Polled),
            1 => Ok(Wait::Blocking),
            _ => Err(protocol("unknown wait mode")),
        }
    }
}

/// One end of the connection, set up to wait one way or the other.
pub struct Link {
    stream: TcpStream,
    wait: Wait,
}

impl Link {
    /// Connects to a listening peer, retrying while it refuses for up to [`CONNECT_PATIENCE`].
    pub fn connect(addr: SocketAddr) -> io::Result<Link> {
        let deadline = Instant::now() + CONNECT_PATIENCE;
        loop {
            match TcpStream::connect(addr) {
                Ok(stream) => return Link::new(stream),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("connect to {addr}: {e}"))),
            }
        }
    }

    /// Accepts one connection.
    pub fn accept(listener: &TcpListener) -> io::Result<Link> {
        let (stream, _) = listener.accept()?;
        Link::new(stream)
    }

    fn new(stream: TcpStream) -> io::Result<Link> {
        stream.set_nodelay(true)?;
        Ok(Link { stream, wait: Wait::Blocking })
    }

    pub fn set_wait(&mut self, wait: Wait) -> io::Result<()> {
        self.stream.set_nonblocking(wait == Wait::Polled)?;
        self.wait = wait;
        Ok(())
    }

    /// Sends all of `buf`; a polled link spins while the socket buffer is full.
    pub fn send_all(&self, mut buf: &[u8]) -> io::Result<()> {
        let flags = match self.wait {
            Wait::Polled => SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
            Wait::Blocking => SendFlags::NOSIGNAL,
        };
        while !buf.is_empty() {
            match send(&self.stream, buf, flags) {
                Ok(n) => buf = &buf[n..],
                Err(Errno::AGAIN | Errno::INTR) => std::hint::spin_loop(),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Receives exactly `buf.len()` bytes; a polled link spins until they are there.
    pub fn recv_exact(&self, mut buf: &mut [u8]) -> io::Result<()> {
        let flags = match self.wait {
            Wait::Polled => RecvFlags::DONTWAIT,
            Wait::Blocking => RecvFlags::empty(),
        };
        while !buf.is_empty() {
            match recv(&self.stream, &mut *buf, flags) {
                Ok((0, _)) => {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed the connection"))
                }
                Ok((n, _)) => buf = &mut buf[n..],
                Err(Errno::AGAIN | Errno::INTR) => std::hint::spin_loop(),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// Bytes a message of `size` puts on the wire: TCP has no empty message, so 0 B moves one byte.
pub fn wire_len(size: usize) -> usize {
    size.max(1)
}

/// What the driver asks the listener to do next. Encoded as five little-endian words (8 bytes
/// each): op, wait mode, size, count, messages per trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Echo `round_trips` messages of `size` bytes: receive one, send one back.
    PingPong { wait: Wait, size: usize, round_trips: usize },
    /// `trials` times: receive `per_trial` messages of `size` bytes, then send a 1-byte ack.
    Stream { wait: Wait, size: usize, per_trial: usize, trials: usize },
    /// No more measurements: close.
    End,
}

const SEGMENT_BYTES: usize = 40;

impl Segment {
    fn encode(&self) -> [u8; SEGMENT_BYTES] {
        let words: [u64; 5] = match *self {
            Segment::PingPong { wait, size, round_trips } => {
                [1, wait.code().into(), size as u64, round_trips as u64, 0]
            }
            Segment::Stream { wait, size, per_trial, trials } => {
                [2, wait.code().into(), size as u64, trials as u64, per_trial as u64]
            }
            Segment::End => [0; 5],
        };
        let mut b = [0u8; SEGMENT_BYTES];
        for (chunk, w) in b.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8; SEGMENT_BYTES]) -> io::Result<Segment> {
        let w = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let wait = || Wait::from_code(u32::try_from(w(1)).map_err(|_| protocol("bad wait mode"))?);
        let size = usize::try_from(w(2)).map_err(|_| protocol("size too large"))?;
        if size > MAX_MESSAGE {
            return Err(protocol("size past the largest message"));
        }
        Ok(match w(0) {
            0 => Segment::End,
            1 => Segment::PingPong { wait: wait()?, size, round_trips: w(3) as usize },
            2 => Segment::Stream { wait: wait()?, size, trials: w(3) as usize, per_trial: w(4) as usize },
            _ => return Err(protocol("unknown segment")),
        })
    }
}

/// Largest message the listener allocates for (it trusts the driver, but not without bound).
pub const MAX_MESSAGE: usize = 64 << 20;

fn protocol(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("tcp-floor protocol: {what}"))
}

impl Link {
    /// Tells the listener what comes next; then both sides switch to its wait mode.
    pub fn announce(&mut self, segment: Segment) -> io::Result<()> {
        self.send_all(&segment.encode())?;
        if let Segment::PingPong { wait, .. } | Segment::Stream { wait, .. } = segment {
            self.set_wait(wait)?;
        }
        Ok(())
    }
}

/// The listening side: answers segments until [`Segment::End`] or the driver hangs up.
pub fn serve(mut link: Link) -> io::Result<()> {
    let mut out = Vec::new();
    let mut inbox = Vec::new();
    loop {
        let mut b = [0u8; SEGMENT_BYTES];
        link.recv_exact(&mut b)?;
        let segment = Segment::decode(&b)?;
        let size = match segment {
            Segment::PingPong { size, .. } | Segment::Stream { size, .. } => wire_len(size),
            Segment::End => return Ok(()),
        };
        out.resize(size, SERVER_BYTE);
        inbox.clear();
        inbox.resize(size, 0);
        match segment {
            Segment::PingPong { wait, round_trips, .. } => {
                link.set_wait(wait)?;
                for _ in 0..round_trips {
                    link.recv_exact(&mut inbox)?;
                    link.send_all(&out)?;
                }
            }
            Segment::Stream { wait, per_trial, trials, .. } => {
                link.set_wait(wait)?;
                for _ in 0..trials {
                    for _ in 0..per_trial {
                        link.recv_exact(&mut inbox)?;
                    }
                    link.send_all(&[SERVER_BYTE])?;
                }
            }
            Segment::End => unreachable!(),
        }
        check_payload(&inbox, DRIVER_BYTE)?;
    }
}

/// Fails unless every byte of the last message received is the peer's: a floor that measured
/// lost or garbled bytes would report a flattering figure.
pub fn check_payload(received: &[u8], expected: u8) -> io::Result<()> {
    match received.iter().position(|&b| b != expected) {
        None => Ok(()),
        Some(at) => Err(protocol(&format!("byte {at} of a {}-byte message is {:#04x}", received.len(), received[at]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_round_trip() {
        for s in [
            Segment::PingPong { wait: Wait::Polled, size: 0, round_trips: 3520 },
            Segment::Stream { wait: Wait::Blocking, size: 4 << 20, per_trial: 2, trials: 220 },
            Segment::End,
        ] {
            assert_eq!(Segment::decode(&s.encode()).unwrap(), s);
        }
        let mut bad = Segment::End.encode();
        bad[0] = 9;
        assert!(Segment::decode(&bad).is_err());
    }

    #[test]
    fn both_wait_modes_echo_over_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || serve(Link::accept(&listener)?));
        let mut link = Link::connect(addr).unwrap();
        for wait in [Wait::Polled, Wait::Blocking] {
            for size in [0, 1, 70_000] {
                link.announce(Segment::PingPong { wait, size, round_trips: 3 }).unwrap();
                let out = vec![DRIVER_BYTE; wire_len(size)];
                let mut inbox = vec![0; wire_len(size)];
                for _ in 0..3 {
                    link.send_all(&out).unwrap();
                    link.recv_exact(&mut inbox).unwrap();
                }
                check_payload(&inbox, SERVER_BYTE).unwrap();
            }
            link.announce(Segment::Stream { wait, size: 1 << 20, per_trial: 3, trials: 2 }).unwrap();
            let out = vec![DRIVER_BYTE; 1 << 20];
            for _ in 0..2 {
                for _ in 0..3 {
                    link.send_all(&out).unwrap();
                }
                let mut ack = [0u8];
                link.recv_exact(&mut ack).unwrap();
                assert_eq!(ack, [SERVER_BYTE]);
            }
        }
        link.set_wait(Wait::Blocking).unwrap();
        link.announce(Segment::End).unwrap();
        server.join().unwrap().unwrap();
    }
}

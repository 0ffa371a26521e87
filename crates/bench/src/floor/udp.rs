//! The raw UDP floor: two processes, one pair of connected UDP sockets, nothing else (no
//! sequence numbers, acknowledgements, MAC or engine). What the UDP route (`BB_ROUTES=udp`) is
//! compared against, the way the TCP floor is for the TCP route.
//!
//! A message of `size` bytes goes as datagrams of at most `datagram` payload bytes (0 B: one
//! empty datagram), each sent with one `send` and read with one `recv` on non-blocking sockets,
//! busy-polling (`MSG_DONTWAIT`): the per-datagram cost of the kernel and nothing more.
//! - *ping-pong*: one message each way per round trip.
//! - *stream*: the driver sends a trial's messages as fast as `send` takes them; the listener
//!   counts the bytes that arrive. A trial ends when the driver says so over the control
//!   connection and the listener, having drained its socket, answers how many bytes it got: the
//!   rate is bytes delivered / trial time (what a sender that outruns its receiver loses is
//!   not counted), and the fraction delivered is reported beside it.
//!
//! A TCP connection carries the control messages (what to do next, the end of a trial, the
//! count), so the datagrams carry payload only. The first 8 bytes of a streamed datagram hold its
//! trial number, so a straggler from one trial is not counted in the next.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{recv, send, RecvFlags, SendFlags};

use super::tcp::{CONNECT_PATIENCE, DRIVER_BYTE, SERVER_BYTE};

/// Largest payload of one datagram (IPv4: 65,535 - 20 - 8).
pub const MAX_DATAGRAM: usize = 65_507;
/// A ping-pong side that hears nothing this long gives up: a datagram was lost.
const PATIENCE: Duration = Duration::from_secs(5);
/// Socket buffers asked for, as the UDP route asks (the kernel caps them at `net.core.*mem_max`).
const SOCKET_BUFFER: usize = 4 << 20;

/// What the driver asks the listener to do next: four little-endian words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Echo `round_trips` messages of `size` bytes in datagrams of `datagram` bytes.
    PingPong {
        size: usize,
        datagram: usize,
        round_trips: usize,
    },
    /// Count streamed datagrams for `trials` trials, answering each trial's count.
    Stream {
        trials: usize,
    },
    End,
}

const COMMAND_BYTES: usize = 32;

impl Command {
    fn encode(&self) -> [u8; COMMAND_BYTES] {
        let words: [u64; 4] = match *self {
            Command::PingPong { size, datagram, round_trips } => [1, size as u64, datagram as u64, round_trips as u64],
            Command::Stream { trials } => [2, trials as u64, 0, 0],
            Command::End => [0; 4],
        };
        let mut b = [0u8; COMMAND_BYTES];
        for (chunk, w) in b.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8; COMMAND_BYTES]) -> io::Result<Command> {
        let w = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")) as usize;
        Ok(match w(0) {
            0 => Command::End,
            1 if w(1) <= MAX_MESSAGE && (1..=MAX_DATAGRAM).contains(&w(2)) => {
                Command::PingPong { size: w(1), datagram: w(2), round_trips: w(3) }
            }
            2 => Command::Stream { trials: w(1) },
            _ => return Err(protocol("unknown or out-of-range command")),
        })
    }
}

/// Largest ping-pong message the listener allocates for.
pub const MAX_MESSAGE: usize = 64 << 20;

fn protocol(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("udp-floor protocol: {what}"))
}

/// One end: the control connection and the connected, non-blocking UDP socket.
pub struct Link {
    ctl: TcpStream,
    sock: UdpSocket,
}

impl Link {
    /// Accepts the driver on `listener`; the UDP socket is bound to the listener's address.
    pub fn accept(listener: &TcpListener) -> io::Result<Link> {
        let sock = UdpSocket::bind(listener.local_addr()?)?;
        let (mut ctl, from) = listener.accept()?;
        let mut port = [0u8; 2];
        ctl.read_exact(&mut port)?;
        sock.connect(SocketAddr::new(from.ip(), u16::from_le_bytes(port)))?;
        ctl.write_all(&[1])?; // connected: the driver may send
        Link::new(ctl, sock)
    }

    /// Connects to a listening peer, retrying while it refuses for up to [`CONNECT_PATIENCE`].
    pub fn connect(addr: SocketAddr) -> io::Result<Link> {
        let deadline = Instant::now() + CONNECT_PATIENCE;
        let mut ctl = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("connect to {addr}: {e}"))),
            }
        };
        let sock = UdpSocket::bind(SocketAddr::new(ctl.local_addr()?.ip(), 0))?;
        sock.connect(addr)?;
        ctl.write_all(&sock.local_addr()?.port().to_le_bytes())?;
        ctl.read_exact(&mut [0u8])?;
        Link::new(ctl, sock)
    }

    fn new(ctl: TcpStream, sock: UdpSocket) -> io::Result<Link> {
        ctl.set_nodelay(true)?;
        use rustix::net::sockopt;
        let _ = sockopt::set_socket_recv_buffer_size(&sock, SOCKET_BUFFER);
        let _ = sockopt::set_socket_send_buffer_size(&sock, SOCKET_BUFFER);
        Ok(Link { ctl, sock })
    }

    /// Sends one datagram, spinning while the socket buffer is full.
    fn send(&self, d: &[u8]) -> io::Result<()> {
        loop {
            match send(&self.sock, d, SendFlags::DONTWAIT) {
                Ok(_) => return Ok(()),
                Err(Errno::AGAIN | Errno::INTR | Errno::NOBUFS) => std::hint::spin_loop(),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Receives one datagram if one is there.
    fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match recv(&self.sock, buf, RecvFlags::DONTWAIT) {
            Ok((n, _)) => Ok(Some(n)),
            Err(Errno::AGAIN | Errno::INTR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Sends a message of `msg.len()` bytes as datagrams of at most `datagram` bytes.
    pub fn send_message(&self, msg: &[u8], datagram: usize) -> io::Result<()> {
        if msg.is_empty() {
            return self.send(&[]);
        }
        msg.chunks(datagram).try_for_each(|d| self.send(d))
    }

    /// Receives a message of `buf.len()` bytes (datagrams in order: one message is in flight
    /// at a time and a path that reorders or loses ends the measurement with an error).
    pub fn recv_message(&self, buf: &mut [u8]) -> io::Result<()> {
        let (mut at, mut datagrams) = (0, 0);
        let mut since = None;
        while at < buf.len() || (buf.is_empty() && datagrams == 0) {
            match self.try_recv(&mut buf[at..])? {
                Some(n) => {
                    at += n;
                    datagrams += 1;
                }
                None => {
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() > PATIENCE {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("udp-floor: {at} of {} bytes after {PATIENCE:?}: a datagram was lost", buf.len()),
                        ));
                    }
                    std::hint::spin_loop();
                }
            }
        }
        Ok(())
    }

    /// Tells the listener what comes next.
    pub fn announce(&mut self, c: Command) -> io::Result<()> {
        self.ctl.write_all(&c.encode())
    }

    /// Streams trial number `trial` (from 1, one after another after a [`Command::Stream`]): `count` messages of `size` bytes in datagrams of `datagram` bytes;
    /// returns the bytes the listener received.
    pub fn stream_trial(&mut self, trial: u64, size: usize, datagram: usize, count: usize) -> io::Result<u64> {
        let datagram = datagram.max(8);
        let mut d = vec![DRIVER_BYTE; datagram];
        d[..8].copy_from_slice(&trial.to_le_bytes());
        for _ in 0..count {
            let mut left = size;
            while left > 0 {
                let n = left.min(datagram).max(8);
                self.send(&d[..n])?;
                left = left.saturating_sub(n);
            }
        }
        self.ctl.write_all(&trial.to_le_bytes())?;
        let mut got = [0u8; 8];
        self.ctl.read_exact(&mut got)?;
        Ok(u64::from_le_bytes(got))
    }
}

/// The listening side: answers commands until [`Command::End`] or the driver hangs up.
pub fn serve(mut link: Link) -> io::Result<()> {
    let mut inbox = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::new();
    loop {
        let mut b = [0u8; COMMAND_BYTES];
        link.ctl.read_exact(&mut b)?;
        match Command::decode(&b)? {
            Command::End => return Ok(()),
            Command::PingPong { size, datagram, round_trips } => {
                out.resize(size, SERVER_BYTE);
                let mut msg = vec![0u8; size];
                for _ in 0..round_trips {
                    link.recv_message(&mut msg)?;
                    link.send_message(&out, datagram)?;
                }
                check_payload(&msg, DRIVER_BYTE)?;
            }
            Command::Stream { trials } => count_stream(&mut link, &mut inbox, trials as u64)?,
        }
    }
}

/// Counts streamed bytes for `trials` trials (numbered from 1): polls the socket and, between
/// datagrams, the control connection for the driver's end of the trial (its number); then drains
/// the socket and answers the count.
fn count_stream(link: &mut Link, inbox: &mut [u8], trials: u64) -> io::Result<()> {
    link.ctl.set_nonblocking(true)?;
    let result = (1..=trials).try_for_each(|trial| {
        let tag = trial.to_le_bytes();
        let (mut bytes, mut mark, mut have) = (0u64, [0u8; 8], 0);
        let mut drain = |link: &Link, bytes: &mut u64| -> io::Result<()> {
            while let Some(n) = link.try_recv(inbox)? {
                if n >= 8 && inbox[..8] == tag {
                    check_payload(&inbox[8..n], DRIVER_BYTE)?;
                    *bytes += n as u64;
                }
            }
            Ok(())
        };
        while have < 8 {
            drain(link, &mut bytes)?;
            match link.ctl.read(&mut mark[have..]) {
                Ok(0) => return Err(protocol("the driver hung up mid-stream")),
                Ok(n) => have += n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(e),
            }
        }
        if mark != tag {
            return Err(protocol("trial marks out of order"));
        }
        drain(link, &mut bytes)?;
        link.ctl.set_nonblocking(false)?;
        link.ctl.write_all(&bytes.to_le_bytes())?;
        link.ctl.set_nonblocking(true)
    });
    link.ctl.set_nonblocking(false)?;
    result
}

/// Fails unless every byte is `expected`: a floor that measured garbled bytes would flatter.
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
    fn commands_round_trip() {
        for c in [
            Command::PingPong { size: 0, datagram: 1472, round_trips: 3 },
            Command::Stream { trials: 220 },
            Command::End,
        ] {
            assert_eq!(Command::decode(&c.encode()).unwrap(), c);
        }
        let bad = Command::PingPong { size: 1, datagram: MAX_DATAGRAM + 1, round_trips: 1 };
        assert!(Command::decode(&bad.encode()).is_err());
    }

    #[test]
    fn pingpong_and_stream_over_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || serve(Link::accept(&listener)?));
        let mut link = Link::connect(addr).unwrap();
        for (size, datagram) in [(0, 1472), (1, 1472), (70_000, 1472), (70_000, MAX_DATAGRAM)] {
            link.announce(Command::PingPong { size, datagram, round_trips: 3 }).unwrap();
            let out = vec![DRIVER_BYTE; size];
            let mut inbox = vec![0; size];
            for _ in 0..3 {
                link.send_message(&out, datagram).unwrap();
                link.recv_message(&mut inbox).unwrap();
            }
            check_payload(&inbox, SERVER_BYTE).unwrap();
        }
        link.announce(Command::Stream { trials: 3 }).unwrap();
        for trial in 1..=3 {
            // A few datagrams: the receiver keeps up, every byte arrives.
            let got = link.stream_trial(trial, 4096, 1472, 4).unwrap();
            assert_eq!(got, 4 * 4096, "trial {trial}");
        }
        link.announce(Command::End).unwrap();
        server.join().unwrap().unwrap();
    }
}

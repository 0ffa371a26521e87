//! Messages between tasks of different hosts go over TCP: each task listens on one address
//! that other hosts reach (the engine's choice: `BB_TCP_IF`, else the first interface that is
//! up and not loopback or a container bridge) and tells its agent where (`Frame::Listening`);
//! a sender asks its agent (`Frame::Where`) and connects. Frames go on the connection as on a
//! Unix socket (`link.rs`), with `TCP_NODELAY` so a small message leaves at once.
//!
//! Before anything else on a connection, both tasks prove that they know the machine's secret
//! without sending it: the engine's TCP handshake (`billboard::transport::tcp::handshake`, an
//! HMAC-SHA256 challenge-response over fresh nonces of both sides), with tids in place of
//! ranks: the connecting task names itself and the tid it means to reach. A connection that
//! fails it is dropped before a frame of it is read. The `Hello` frame after it then carries
//! no secret (`Link::proven` vouches for the tid it names).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::time::Duration;

use billboard::transport::tcp::addr::{interfaces, offered, IfChoice};
use billboard::transport::tcp::handshake::{Acceptor, Initiator, Secret, Step};

use crate::error::PvmError;

/// How long a connection to a task of another host may take to open.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// The handshake names ranks below a count; tids are positive `i32`s, so every one is below.
const ANY_TID: u32 = u32::MAX;

/// A listener on the address other hosts reach, and that address as `ip:port`; `None` where
/// this host offers none (then only tasks of this host reach this one).
pub(crate) fn listen() -> Option<(TcpListener, String)> {
    let choice = IfChoice::parse(&std::env::var("BB_TCP_IF").unwrap_or_default()).ok()?;
    let ip = *offered(&choice, &interfaces().ok()?).ok()?.first()?;
    let l = TcpListener::bind((ip, 0)).ok()?;
    l.set_nonblocking(true).ok()?;
    let addr = l.local_addr().ok()?.to_string();
    Some((l, addr))
}

/// The machine's secret (hex, from the agent's folder) as the handshake's key.
fn key(secret: &str) -> Result<Secret, PvmError> {
    Secret::from_hex(secret.trim()).map_err(|e| {
        crate::state::say(format_args!("libpvm: the machine's secret: {e}"));
        PvmError::SysErr
    })
}

/// A connection to a task of another host whose handshake is under way.
pub(crate) struct Dial {
    stream: TcpStream,
    proving: Initiator,
    tid: i32,
}

/// Connects to task `tid` at `addr` (what its agent said) and says the handshake's HELLO as
/// task `me`; [`Dial::advance`] completes it.
pub(crate) fn connect(addr: &str, me: i32, tid: i32, secret: &str) -> Result<Dial, PvmError> {
    let to: SocketAddr = addr.parse().map_err(|_| PvmError::SysErr)?;
    let mut stream = TcpStream::connect_timeout(&to, CONNECT_WAIT).map_err(|e| {
        crate::state::say(format_args!("libpvm: cannot connect to t{tid:x} at {addr}: {e}"));
        PvmError::NoTask
    })?;
    stream.set_nodelay(true).map_err(|_| PvmError::SysErr)?;
    let mut proving = Initiator::new(&key(secret)?, me as u32, tid as u32).map_err(|_| PvmError::SysErr)?;
    // 48 bytes on a new connection: the socket takes them whole.
    stream.write_all(&proving.take_transmit()).map_err(|_| PvmError::NoTask)?;
    stream.set_nonblocking(true).map_err(|_| PvmError::SysErr)?;
    Ok(Dial { stream, proving, tid })
}

impl Dial {
    /// Takes the acceptor's CHALLENGE if it came: true once the peer proved the secret and
    /// this side's PROOF is sent ([`into_stream`](Self::into_stream) then); false while it
    /// has not answered (it answers from inside a PVM call); an error where it is not task
    /// `tid` of this machine or went away.
    pub(crate) fn advance(&mut self) -> Result<bool, PvmError> {
        let refused = |why: &dyn std::fmt::Display| {
            crate::state::say(format_args!("libpvm: connection to t{:x} refused: {why}", self.tid));
            PvmError::NoTask
        };
        let mut buf = [0u8; 128];
        let n = match self.stream.read(&mut buf) {
            Ok(0) => return Err(refused(&"it closed the connection")),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => return Ok(false),
            Err(e) => return Err(refused(&e)),
        };
        match self.proving.on_bytes(&buf[..n]) {
            Ok(Step::Wait) => Ok(false),
            // The acceptor says nothing after its CHALLENGE.
            Ok(Step::Done { consumed, .. }) if consumed < n => Err(refused(&"bytes after its challenge")),
            Ok(Step::Done { .. }) => {
                self.stream.set_nonblocking(false).map_err(|_| PvmError::SysErr)?;
                self.stream.write_all(&self.proving.take_transmit()).map_err(|e| refused(&e))?;
                Ok(true)
            }
            Err(e) => Err(refused(&e)),
        }
    }

    /// The connection, after `advance` said true.
    pub(crate) fn into_stream(self) -> OwnedFd {
        self.stream.into()
    }
}

/// A connection another host's task made to this one (task `me`), and the acceptor's side
/// of its handshake (`Link::read_now` feeds it).
pub(crate) fn accepted(s: TcpStream, me: i32, secret: &str) -> Option<(OwnedFd, Box<Acceptor>)> {
    s.set_nodelay(true).ok()?;
    s.set_nonblocking(true).ok()?;
    let proving = Acceptor::new(&key(secret).ok()?, me as u32, ANY_TID).ok()?;
    Some((s.into(), Box::new(proving)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{send_carrier, Link};
    use crate::wire::Frame;

    const SECRET: &str = "00112233445566778899aabbccddeeff";
    const ME: i32 = 0x40001;
    const PEER: i32 = 0x80001;

    /// A task's TCP listener on loopback, a connection to it from task `ME` knowing `secret`,
    /// and the accepted end as task `PEER` (knowing `SECRET`) takes it.
    fn dial(secret: &str) -> (Result<Dial, PvmError>, Link) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let d = connect(&l.local_addr().unwrap().to_string(), ME, PEER, secret);
        let (s, _) = l.accept().unwrap();
        let (fd, proving) = accepted(s, PEER, SECRET).unwrap();
        (d, Link::accepted_tcp(fd, proving))
    }

    /// Runs both ends' handshakes until the dialler is through or refuses.
    fn shake(d: &mut Dial, link: &mut Link) -> Result<(), PvmError> {
        for _ in 0..2000 {
            link.read_now();
            if d.advance()? {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("no handshake in 2 s");
    }

    #[test]
    fn a_task_that_knows_the_secret_is_proven_by_the_tid_it_names() {
        let (d, mut link) = dial(SECRET);
        let mut d = d.unwrap();
        shake(&mut d, &mut link).unwrap();
        let fd = d.into_stream();
        send_carrier(&fd, None).unwrap();
        let hello = Frame::Hello { secret: String::new(), pid: 1, tid: ME, name: String::new() };
        std::io::Write::write_all(&mut TcpStream::from(fd), &hello.encode()).unwrap();
        let mut got = None;
        for _ in 0..2000 {
            link.read_now();
            got = link.next_frame();
            if got.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got, Some(hello));
        assert_eq!(link.proven, Some(ME));
        assert!(!link.closed);
    }

    #[test]
    fn a_task_of_another_machine_is_refused_and_learns_nothing_to_replay() {
        let (d, mut link) = dial("ffeeddccbbaa99887766554433221100");
        // The dialler checks the acceptor's MAC first: it never sends a proof to a peer
        // that does not share its secret.
        assert_eq!(shake(&mut d.unwrap(), &mut link), Err(PvmError::NoTask));
        assert_eq!(link.proven, None);
    }

    #[test]
    fn a_stranger_is_dropped_on_its_first_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stranger = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (fd, proving) = accepted(l.accept().unwrap().0, PEER, SECRET).unwrap();
        let mut link = Link::accepted_tcp(fd, proving);
        // What the old hello looked like: a carrier byte, then a frame with a secret.
        stranger.write_all(b"S\x30\0\0\0\x01\0\0\0").unwrap();
        for _ in 0..2000 {
            link.read_now();
            if link.closed {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(link.closed);
        assert_eq!(link.next_frame(), None);
    }
}

//! One connection between two tasks, and the system calls on it: the first byte that says how
//! frames travel (with the ring's memfd for the shared-memory route), reading with a
//! descriptor passed, and noticing the peer's end. A connection is a Unix socket between tasks
//! of one host, TCP between hosts: the calls here are the same on both, except that a TCP
//! connection starts with the handshake that proves the secret (`tcp.rs`), fed here before
//! any byte of it is taken as the carrier byte or a frame.

use std::ffi::{c_int, c_void};
use std::io::ErrorKind;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::io::{AsRawFd, RawFd};

use billboard::transport::tcp::handshake::{Acceptor, Step};

use crate::error::PvmError;
use crate::ring::Ring;
use crate::wire::{Frame, FrameBuffer};

/// How a connection from another task carries its frames, told by its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// Not known yet: the first byte has not come.
    Unknown,
    /// `b'S'`: on the socket itself.
    Socket,
    /// `b'R'`: through the shared-memory ring whose memfd came with that byte; the socket
    /// then carries only wake-up bytes.
    Ring,
}

/// One connection the progress loop reads.
pub(crate) struct Link {
    pub stream: OwnedFd,
    pub frames: FrameBuffer,
    /// The task at the other end, once it said hello (`None` on an accepted connection
    /// before its hello).
    pub peer: Option<i32>,
    /// Its process, as its hello said (for single copies out of its memory).
    pub peer_pid: i32,
    pub closed: bool,
    pub carrier: Carrier,
    pub ring: Option<Ring>,
    /// A TCP connection's handshake (`tcp.rs`) until the peer proved the secret: no byte
    /// of it is taken as a frame before.
    pub proving: Option<Box<Acceptor>>,
    /// The tid a TCP connection's handshake authenticated: its `Hello` must name it.
    pub proven: Option<i32>,
}

impl Link {
    /// The agent's connection: frames on the socket from the first byte.
    pub fn to_agent(stream: OwnedFd) -> Link {
        Link {
            stream,
            frames: FrameBuffer::default(),
            peer: None,
            peer_pid: 0,
            closed: false,
            carrier: Carrier::Socket,
            ring: None,
            proving: None,
            proven: None,
        }
    }

    /// A connection another task made to this one.
    pub fn accepted(stream: OwnedFd) -> Link {
        Link { carrier: Carrier::Unknown, ..Link::to_agent(stream) }
    }

    /// A TCP connection a task of another host made to this one: its handshake first.
    pub fn accepted_tcp(stream: OwnedFd, proving: Box<Acceptor>) -> Link {
        Link { proving: Some(proving), ..Link::accepted(stream) }
    }

    /// Feeds the handshake; the bytes after it (frames), or `None` while it goes on or
    /// when it failed (then the connection is closed).
    fn prove<'a>(&mut self, data: &'a [u8]) -> Option<&'a [u8]> {
        let proving = self.proving.as_mut()?;
        let step = proving.on_bytes(data);
        let reply = proving.take_transmit();
        // SAFETY: a non-blocking send of `reply`, live for the call; a new connection's
        // socket takes its 76 bytes whole, anything less is a failure.
        let sent = reply.is_empty()
            || unsafe {
                libc::send(
                    self.stream.as_raw_fd(),
                    reply.as_ptr().cast(),
                    reply.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            } == reply.len() as isize;
        match step {
            Ok(Step::Wait) if sent => None,
            Ok(Step::Done { peer, consumed }) if sent => {
                self.proving = None;
                self.proven = i32::try_from(peer).ok();
                Some(&data[consumed..])
            }
            _ => {
                // A stranger, a task of another machine, or a broken peer.
                self.closed = true;
                None
            }
        }
    }

    /// Reads all that is there now into the frame buffer (`next_frame` hands them out).
    pub fn read_now(&mut self) {
        // Not zeroed: recvmsg writes what it returns, and only that is read (zeroing 64 KiB
        // cost ~2 us a wake-up).
        let mut chunk = [std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
        let cap = chunk.len();
        loop {
            match recv_with_fd(self.stream.as_raw_fd(), &mut chunk) {
                Ok(([], _)) => {
                    self.closed = true;
                    break;
                }
                Ok((mut data, fd)) => {
                    let n = data.len();
                    if self.proving.is_some() {
                        match self.prove(data) {
                            Some(rest) => data = rest,
                            None if self.closed => break,
                            None => continue,
                        }
                    }
                    if data.is_empty() {
                        continue;
                    }
                    if self.carrier == Carrier::Unknown {
                        self.carrier = match (data[0], fd) {
                            (b'S', _) => Carrier::Socket,
                            (b'R', Some(fd)) => match Ring::open(&fd) {
                                Ok(r) => {
                                    self.ring = Some(r);
                                    Carrier::Ring
                                }
                                Err(_) => Carrier::Unknown,
                            },
                            _ => Carrier::Unknown,
                        };
                        if self.carrier == Carrier::Unknown {
                            // A stranger or a broken peer: dropped.
                            self.closed = true;
                            break;
                        }
                        data = &data[1..];
                    }
                    if self.carrier == Carrier::Socket {
                        self.frames.push(data);
                    }
                    if n < cap {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.closed = true;
                    break;
                }
            }
        }
        self.drain_ring();
    }

    /// Moves what waits in the ring to the frame buffer; whether there was anything.
    pub fn drain_ring(&mut self) -> bool {
        let Some(r) = &mut self.ring else { return false };
        match r.read_into(&mut self.frames) {
            Ok(n) => n > 0,
            Err(_) => {
                self.closed = true;
                false
            }
        }
    }

    /// The small-message path of a receive: the message at the front of the ring when it is
    /// the next thing from this peer (no byte of its stream waits in the frame buffer), lies
    /// whole in one record, and is `wanted` (by tag and context): copied once, straight out
    /// of the ring into reused memory, with no frame buffer, frame or queue between. Anything
    /// else stays for [`Link::drain_ring`]. The bytes go into `spare`'s memory when it has
    /// some (the task's, `Task::spare`).
    pub fn take_message(
        &mut self,
        wanted: impl Fn(i32, i32) -> bool,
        spare: &mut Vec<u8>,
    ) -> Option<crate::task::Arrived> {
        let f = self.front_message(wanted)?;
        let mut bytes = if spare.capacity() > 0 { std::mem::take(spare) } else { crate::buffer::reuse() };
        crate::small_copy::extend(&mut bytes, f.data());
        self.ring.as_mut()?.consume_record(f.record);
        Some(crate::task::Arrived::new(f.src, f.tag, f.ctx, f.enc, bytes))
    }

    /// The message [`Link::take_message`] would take, left where it is: its bytes are
    /// read in the ring (valid until the ring moves on: [`Link::hold_front`] keeps them).
    pub fn front_message(&self, wanted: impl Fn(i32, i32) -> bool) -> Option<Front> {
        let (Some(src), Some(ring)) = (self.peer, self.ring.as_ref()) else { return None };
        if !self.frames.is_empty() {
            return None;
        }
        let rec = ring.next_record()?;
        let (tag, ctx, enc, data) = crate::wire::message_in(rec)?;
        if !wanted(tag, ctx) {
            return None;
        }
        Some(Front { src, tag, ctx, enc, at: data.as_ptr(), len: data.len(), record: rec.len() })
    }

    /// The message [`Link::front_message`] found is received but stays in its ring cell,
    /// which the sender may not write over until [`Link::release_front`].
    pub fn hold_front(&mut self, f: &Front) {
        if let Some(r) = self.ring.as_mut() {
            r.hold_record(f.record);
        }
    }

    /// The held message is no longer read: its cell goes back to the sender.
    pub fn release_front(&mut self) {
        if let Some(r) = self.ring.as_mut() {
            r.release_hold();
        }
    }

    /// The next frame that has arrived whole (one at a time: no list per message).
    pub fn next_frame(&mut self) -> Option<Frame> {
        match self.frames.next_frame() {
            Ok(f) => f,
            Err(_) => {
                // A peer that sends what does not decode is dropped.
                self.closed = true;
                None
            }
        }
    }
}

/// A small message at the front of a ring (`Link::front_message`): who sent it, its tag,
/// context and encoding, where its bytes lie in the ring, and its record's length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Front {
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
    pub enc: i32,
    at: *const u8,
    pub len: usize,
    record: usize,
}

impl Front {
    /// The message's bytes, in the ring.
    pub fn data(&self) -> &[u8] {
        // SAFETY: `at` and `len` name a published record's bytes inside the ring's mapping,
        // which the link holding the ring keeps mapped, read before the record is consumed.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }
}

/// This task's connection to another task, for sending.
pub(crate) struct Route {
    pub stream: OwnedFd,
    pub ring: Option<Ring>,
    /// Single-copy messages posted on the ring so far (the last one's sequence number).
    pub posted: u64,
    /// The receiver's last shared-copy request this task has answered.
    pub helped: u64,
}

/// Reads from a socket without blocking, taking a descriptor passed with the bytes (the first
/// one; any other is closed).
pub(crate) fn recv_with_fd(
    fd: RawFd,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> std::io::Result<(&[u8], Option<OwnedFd>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid; it points at iov and control, live for this call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: recvmsg fills the buffers msg describes.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut got = None;
    // SAFETY: walking the control messages recvmsg wrote, with the libc macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<c_int>();
                for i in 0..count {
                    let raw = libc::CMSG_DATA(c).cast::<c_int>().add(i).read_unaligned();
                    let owned = OwnedFd::from_raw_fd(raw);
                    if got.is_none() {
                        got = Some(owned);
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    // SAFETY: recvmsg wrote the first n bytes (n <= buf.len()).
    let read = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
    Ok((read, got))
}

/// Sends the first byte of a connection to a task, with the ring's memfd when there is one.
pub(crate) fn send_carrier(stream: &OwnedFd, ring_fd: Option<&OwnedFd>) -> Result<(), PvmError> {
    let byte = [if ring_fd.is_some() { b'R' } else { b'S' }];
    let mut iov = libc::iovec { iov_base: byte.as_ptr() as *mut c_void, iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: a zeroed msghdr is valid; it points at iov and control, live for this call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = ring_fd {
        // SAFETY: one SCM_RIGHTS control message with one descriptor, inside `control`.
        unsafe {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as _;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as _;
            libc::CMSG_DATA(c).cast::<c_int>().write_unaligned(fd.as_raw_fd());
        }
    }
    // SAFETY: sendmsg reads what msg describes; MSG_NOSIGNAL: no SIGPIPE in the program.
    let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n == 1 {
        Ok(())
    } else {
        Err(PvmError::NoTask)
    }
}

/// Whether the task at the other end of a sending connection has closed it (it never writes
/// to it, so any end of stream is its end).
pub(crate) fn peer_closed(stream: &OwnedFd) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: a 1-byte peek into `b`.
    let n = unsafe { libc::recv(stream.as_raw_fd(), b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    n == 0
}

/// Makes a connection's reads and writes return at once (`WouldBlock`) instead of waiting.
pub(crate) fn set_nonblocking(fd: &OwnedFd) -> Result<(), PvmError> {
    // SAFETY: fcntl on a descriptor we own; no memory involved.
    let ok = unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    ok.then_some(()).ok_or(PvmError::SysErr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message_header;

    /// A link whose peer (tid 7) said hello, reading the ring `tx` writes.
    fn ring_link() -> (Link, Ring) {
        let (tx, fd) = Ring::create(4096).unwrap();
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut l = Link::accepted(a.into());
        (l.ring, l.peer, l.carrier) = (Some(Ring::open(&fd).unwrap()), Some(7), Carrier::Ring);
        (l, tx)
    }

    fn message(tag: i32, data: &[u8]) -> Vec<u8> {
        [&message_header(7, tag, 0, 1, data.len()).unwrap()[..], data].concat()
    }

    #[test]
    fn a_wanted_small_message_is_taken_from_the_ring_into_the_spare_memory() {
        let (mut l, mut tx) = ring_link();
        let mut spare = Vec::with_capacity(100);
        let at = spare.as_ptr();
        assert!(l.take_message(|_, _| true, &mut spare).is_none(), "nothing there");
        assert!(tx.write_whole(&[&message(3, b"abc")]));
        let m = l.take_message(|tag, ctx| tag == 3 && ctx == 0, &mut spare).expect("taken");
        assert_eq!((m.src, m.tag, m.ctx, m.enc, &m.data[..]), (7, 3, 0, 1, &b"abc"[..]));
        assert_eq!(m.data.as_ptr(), at, "into the spare vector's memory");
        assert!(!l.drain_ring(), "taken once");
    }

    #[test]
    fn what_is_not_wanted_or_comes_after_waiting_bytes_goes_the_general_way_in_order() {
        let (mut l, mut tx) = ring_link();
        let mut spare = Vec::new();
        assert!(tx.write_whole(&[&message(1, b"first")]));
        assert!(l.take_message(|tag, _| tag == 2, &mut spare).is_none(), "not wanted: left");
        assert!(tx.write_whole(&[&message(2, b"second")]));
        assert!(l.drain_ring());
        let tags: Vec<i32> = std::iter::from_fn(|| l.next_frame())
            .map(|f| match f {
                Frame::Message { tag, .. } => tag,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(tags, [1, 2]);
        // Half a frame in the frame buffer: the ring's next record is not the next message.
        let m = message(4, b"split");
        assert!(tx.write_whole(&[&m[..10]]));
        assert!(l.drain_ring());
        assert!(tx.write_whole(&[&m[10..]]));
        assert!(tx.write_whole(&[&message(5, b"after")]));
        assert!(l.take_message(|_, _| true, &mut spare).is_none(), "bytes wait before it");
        assert!(l.drain_ring());
        assert!(matches!(l.next_frame(), Some(Frame::Message { tag: 4, .. })));
        assert!(matches!(l.next_frame(), Some(Frame::Message { tag: 5, .. })));
    }
}

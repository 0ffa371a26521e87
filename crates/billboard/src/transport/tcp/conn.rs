//! One authenticated connection to a peer rank: records out with `sendmsg` (header and payload
//! as two slices, no copy while the socket takes them), records in with `recv` into the frame
//! reader's buffer.
//!
//! A record the socket does not take whole has its tail copied to `out` and is sent as the
//! socket drains; while `out` holds more than [`OUT_LIMIT`] bytes, sends are refused with
//! [`WouldBlock`], so a slow receiver pushes back instead of making us buffer without bound.

use std::io::IoSlice;
use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{RecvFlags, SendAncillaryBuffer, SendFlags};

use super::stream::{Frame, FrameReader};
use super::wire::{encode, encode_record, FrameHeader, FRAME_HEADER_BYTES};
use crate::transport::{Header, ReceiveCalls, WouldBlock};

/// Bytes of accepted-but-unsent records past which sends are refused (one record may exceed it).
pub(crate) const OUT_LIMIT: usize = 256 << 10;

/// Slices one gathered `sendmsg` passes at most (a frame of more pieces takes several calls;
/// the kernel's limit is 1024).
const GATHER_BATCH: usize = 64;

/// `recv` calls per connection per poll, so one busy peer cannot starve the others.
const READS_PER_POLL: usize = 4;

/// Why a connection is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Broken {
    /// The peer closed without its close frame: it died or its route went away.
    Eof,
    /// A system call failed (reset, timeout, unreachable).
    Os(Errno),
    /// The peer broke the frame protocol.
    Protocol(String),
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Eof => f.write_str("the connection was closed without a goodbye (the process died?)"),
            Broken::Os(e) => write!(f, "the connection failed: {e}"),
            Broken::Protocol(why) => write!(f, "it broke the frame protocol: {why}"),
        }
    }
}

pub(crate) struct Conn {
    pub fd: OwnedFd,
    reader: FrameReader,
    /// Encoded bytes accepted but not yet taken by the socket: `out[out_start..]`.
    out: Vec<u8>,
    out_start: usize,
    /// The peer sent its close frame: end of stream is expected now.
    peer_closed: bool,
    pub broken: Option<Broken>,
    /// Registered for EPOLLOUT (while `out` holds bytes), so a sleeper wakes when it drains.
    pub wants_out: bool,
}

impl Conn {
    /// `early` holds bytes that arrived right behind the handshake: the first frames.
    pub fn new(fd: OwnedFd, early: &[u8]) -> Conn {
        let mut reader = FrameReader::new();
        let mut rest = early;
        while !rest.is_empty() {
            let n = reader.feed(rest);
            rest = &rest[n..];
            assert!(n > 0 || rest.is_empty(), "handshake leftovers larger than one frame buffer");
        }
        Conn { fd, reader, out: Vec::new(), out_start: 0, peer_closed: false, broken: None, wants_out: false }
    }

    /// Bytes waiting in `out`.
    #[inline]
    pub fn pending(&self) -> usize {
        self.out.len() - self.out_start
    }

    /// Sends one engine record, or keeps what the socket does not take; refuses while `out` is
    /// over its limit. A broken connection swallows records: its failure is reported by poll.
    pub fn send(&mut self, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if self.broken.is_some() {
            return Ok(());
        }
        if self.pending() > 0 {
            self.flush();
            if self.pending() > 0 {
                if self.pending() >= OUT_LIMIT {
                    return Err(WouldBlock);
                }
                self.out.extend_from_slice(&encode_record(header, payload.len()));
                self.out.extend_from_slice(payload);
                return Ok(());
            }
        }
        let h = encode_record(header, payload.len());
        let total = FRAME_HEADER_BYTES + payload.len();
        let sent = self.send_slices(&[IoSlice::new(&h), IoSlice::new(payload)]);
        if sent < total {
            // The socket is full: keep the tail (at most one record) for flush.
            self.out.clear();
            self.out_start = 0;
            self.out.extend_from_slice(&h[sent.min(FRAME_HEADER_BYTES)..]);
            self.out.extend_from_slice(&payload[sent.saturating_sub(FRAME_HEADER_BYTES)..]);
        }
        Ok(())
    }

    /// Sends one engine record whose payload is `pieces` joined, as `send` does: the socket
    /// takes the frame header and the pieces as one gathered `sendmsg` (in batches of
    /// [`GATHER_BATCH`] slices), and what it refuses is kept in `out` (at most one record).
    pub fn send_gather(&mut self, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        if self.broken.is_some() {
            return Ok(());
        }
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if self.pending() > 0 {
            self.flush();
            if self.pending() > 0 {
                if self.pending() >= OUT_LIMIT {
                    return Err(WouldBlock);
                }
                self.out.extend_from_slice(&encode_record(header, total));
                for p in pieces {
                    self.out.extend_from_slice(p);
                }
                return Ok(());
            }
        }
        let frame = encode_record(header, total);
        let head: &[u8] = &frame;
        // The frame as a list of slices: the header, then the pieces; (slice, bytes taken of it).
        let mut next = 0; // index into [head, pieces...] of the first slice not wholly taken
        let mut skip = 0; // bytes of that slice already taken
        let slice = |i: usize| if i == 0 { head } else { pieces[i - 1] };
        let count = pieces.len() + 1;
        while next < count {
            let mut iov = [IoSlice::new(&[]); GATHER_BATCH];
            let mut k = 0;
            let mut want = 0;
            while k < GATHER_BATCH && next + k < count {
                let s = &slice(next + k)[if k == 0 { skip } else { 0 }..];
                iov[k] = IoSlice::new(s);
                want += s.len();
                k += 1;
            }
            let mut taken = self.send_slices(&iov[..k]);
            let full = taken < want;
            // Advance past what was taken.
            while taken > 0 {
                let left = slice(next).len() - skip;
                if taken < left {
                    skip += taken;
                    break;
                }
                taken -= left;
                next += 1;
                skip = 0;
            }
            if full {
                // The socket is full: keep the tail (at most one record) for flush.
                self.out.clear();
                self.out_start = 0;
                self.out.extend_from_slice(&slice(next)[skip..]);
                for i in next + 1..count {
                    self.out.extend_from_slice(slice(i));
                }
                break;
            }
            // Skip empty slices so the loop ends.
            while next < count && slice(next).len() == skip {
                next += 1;
                skip = 0;
            }
        }
        Ok(())
    }

    /// Tells the peer no more frames follow (best effort: at finalize).
    pub fn close(&mut self) {
        if self.broken.is_none() {
            self.out.extend_from_slice(&encode(&FrameHeader::Close));
            self.flush();
        }
    }

    /// Writes what `out` holds, as far as the socket takes it.
    pub fn flush(&mut self) {
        while self.pending() > 0 && self.broken.is_none() {
            let n = match send_slices(&self.fd, &[IoSlice::new(&self.out[self.out_start..])]) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) => {
                    self.broken = Some(Broken::Os(e));
                    return;
                }
            };
            self.out_start += n;
        }
        if self.pending() == 0 {
            self.out.clear();
            self.out_start = 0;
        }
    }

    /// One `sendmsg` without SIGPIPE; returns the bytes taken (0 when the socket is full or broken).
    fn send_slices(&mut self, slices: &[IoSlice<'_>]) -> usize {
        match send_slices(&self.fd, slices) {
            Ok(n) => n,
            Err(e) => {
                self.broken = Some(Broken::Os(e));
                0
            }
        }
    }

    /// Reads what has arrived and hands each record to `f(header, payload)`; returns how many.
    /// `wait`: if no whole record is buffered, the first `recv` waits for bytes in the kernel
    /// (up to the socket's receive timeout, `setup::tune`); its outcome is counted in `calls`.
    pub fn receive(&mut self, f: &mut impl FnMut(&Header, &[u8]), wait: bool, calls: &mut ReceiveCalls) -> usize {
        if self.broken.is_some() {
            // Frames still buffered behind the fault are not handed out.
            return 0;
        }
        let mut handled = self.deliver(f);
        let mut wait = wait && handled == 0;
        for _ in 0..READS_PER_POLL {
            if self.broken.is_some() {
                break;
            }
            let buf = self.reader.unfilled();
            let room = buf.len();
            let flags = if std::mem::take(&mut wait) { RecvFlags::empty() } else { RecvFlags::DONTWAIT };
            let got = rustix::net::recv(self.fd.as_fd(), buf, flags);
            calls.count(matches!(got, Ok((n, _)) if n > 0), flags.is_empty());
            match got {
                Ok((0, _)) => {
                    if !self.peer_closed {
                        self.broken = Some(Broken::Eof);
                    }
                    break;
                }
                Ok((n, _)) => {
                    self.reader.filled(n);
                    handled += self.deliver(f);
                    if n < room {
                        break;
                    }
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(e) => self.broken = Some(Broken::Os(e)),
            }
        }
        handled
    }

    fn deliver(&mut self, f: &mut impl FnMut(&Header, &[u8])) -> usize {
        let mut handled = 0;
        loop {
            match self.reader.next_frame() {
                Ok(None) => return handled,
                Ok(Some(Frame::Record { header, payload })) => {
                    f(&header, payload);
                    handled += 1;
                }
                Ok(Some(Frame::Close)) => self.peer_closed = true,
                Err(e) => {
                    self.broken = Some(Broken::Protocol(e.to_string()));
                    return handled;
                }
            }
        }
    }
}

/// `sendmsg` without SIGPIPE, not blocking: the bytes taken, 0 when the socket is full.
fn send_slices(fd: &OwnedFd, slices: &[IoSlice<'_>]) -> Result<usize, Errno> {
    loop {
        let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
        match rustix::net::sendmsg(fd, slices, &mut SendAncillaryBuffer::default(), flags) {
            Ok(n) => return Ok(n),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Ok(0),
            Err(e) => return Err(e),
        }
    }
}

//! A task's sending side: the connection to another task (made on first use, with its ring),
//! writing frames to a ring or a socket without ever blocking the process for good, and
//! `send`/`send_parts`, which choose between the route and a single copy (`single_copy.rs`).

use std::ffi::c_void;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::PvmError;
use crate::link::{peer_closed, send_carrier, set_nonblocking, Route};
use crate::place;
use crate::ring::Ring;
use crate::task::{Arrived, Task};
use crate::wire::Frame;

impl Task {
    /// Writes all of `parts` to `fd`, taking in arrivals while the socket is full.
    pub(crate) fn write_all(&mut self, fd: RawFd, parts: &[&[u8]]) -> Result<(), PvmError> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut done = 0;
        while done < total {
            let mut iov = Vec::with_capacity(parts.len());
            let mut skip = done;
            for p in parts {
                if skip >= p.len() {
                    skip -= p.len();
                    continue;
                }
                iov.push(libc::iovec { iov_base: p[skip..].as_ptr() as *mut c_void, iov_len: p.len() - skip });
                skip = 0;
            }
            // SAFETY: a zeroed msghdr is valid; iov points to live slices for this call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = iov.len() as _;
            // SAFETY: sendmsg reads the iovecs set up above; MSG_NOSIGNAL: a closed peer is an
            // error return, not SIGPIPE in the program.
            let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
            if n >= 0 {
                done += n as usize;
                continue;
            }
            match std::io::Error::last_os_error().kind() {
                ErrorKind::WouldBlock => self.progress(None, Some(fd)),
                ErrorKind::Interrupted => {}
                _ => return Err(PvmError::NoTask),
            }
        }
        Ok(())
    }

    /// The connection to `tid`, made on first use: to a task of this host on its socket,
    /// through a ring of shared memory unless `BB_PVM_SHM=0`; to a task of another host over
    /// TCP. A task that is still starting is waited for; one the agent does not know is
    /// `PvmNoTask`.
    pub(crate) fn link_to(&mut self, tid: i32) -> Result<(), PvmError> {
        if self.outbound.contains_key(tid) {
            return Ok(());
        }
        if !place::is_task_tid(tid) {
            return Err(PvmError::BadParam);
        }
        let mut pause = Duration::from_micros(200);
        let local = place::host_of(tid) == place::host_of(self.tid);
        let path = place::task_socket(&self.dir, tid);
        let stream: OwnedFd = loop {
            if local {
                if let Ok(s) = UnixStream::connect(&path) {
                    break s.into();
                }
                // Not listening (yet): the agent says whether it will be.
                self.request_status(&Frame::Lookup { tid })?;
            } else {
                match self.request(&Frame::Where { tid })? {
                    Frame::At { addr } => break self.dial(&addr, tid)?,
                    Frame::Status { code, .. } if code < 0 => return Err(PvmError::from_code(code)),
                    // Still starting: asked again below.
                    _ => {}
                }
            }
            self.progress(Some(pause), None);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        let mut ring = if self.shm && local { Ring::create(self.ring_bytes).ok() } else { None };
        if let Some((r, _)) = &mut ring {
            r.set_probe(crate::single_copy::probe_address());
        }
        send_carrier(&stream, ring.as_ref().map(|(_, fd)| fd))?;
        set_nonblocking(&stream)?;
        self.outbound.insert(tid, Route { stream, ring: ring.map(|(r, _)| r), posted: 0, helped: 0 });
        let hello = Frame::Hello {
            // Over TCP the handshake proved it: the secret never goes on a network.
            secret: if local { self.secret.clone() } else { String::new() },
            pid: std::process::id() as i32,
            tid: self.tid,
            name: String::new(),
        };
        self.write_route(tid, &[&hello.encode()])
    }

    /// A connection to task `tid` of another host at `addr`, once both proved the secret
    /// (`tcp.rs`). The peer answers from inside a PVM call, so this task takes in arrivals
    /// (and answers handshakes itself) while it waits: two tasks connecting to each other
    /// both go on.
    fn dial(&mut self, addr: &str, tid: i32) -> Result<OwnedFd, PvmError> {
        let mut dial = crate::tcp::connect(addr, self.tid, tid, &self.secret)?;
        let mut pause = Duration::from_micros(50);
        while !dial.advance()? {
            self.progress(Some(pause), None);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
        Ok(dial.into_stream())
    }

    /// Writes `parts` to the task at the end of an existing route.
    pub(crate) fn write_route(&mut self, tid: i32, parts: &[&[u8]]) -> Result<(), PvmError> {
        // The common case: the ring has room for the whole frame.
        if let Some(Route { stream, ring: Some(ring), .. }) = self.outbound.get_mut(tid) {
            if ring.write_whole(parts) {
                if ring.receiver_asleep() {
                    wake(stream);
                }
                return Ok(());
            }
        }
        let mut route = self.outbound.remove(tid).ok_or(PvmError::NoTask)?;
        let r = match route.ring.is_some() {
            true => self.write_ring(&mut route, parts),
            false => self.write_all(route.stream.as_raw_fd(), parts),
        };
        if r.is_ok() {
            self.outbound.insert(tid, route);
        }
        r
    }

    /// Writes `parts` into a route's ring, waking its receiver when it sleeps; while the ring
    /// is full, takes in arrivals (so two tasks that fill each other's rings both go on).
    fn write_ring(&mut self, route: &mut Route, parts: &[&[u8]]) -> Result<(), PvmError> {
        let Route { stream, ring, .. } = route;
        let ring = ring.as_mut().expect("a ring route");
        let mut idle = 0u32;
        for part in parts {
            let mut off = 0;
            while off < part.len() {
                let n = ring.write(&part[off..]);
                off += n;
                if n > 0 {
                    idle = 0;
                    if ring.receiver_asleep() {
                        wake(stream);
                    }
                    continue;
                }
                if peer_closed(stream) {
                    return Err(PvmError::NoTask);
                }
                idle += 1;
                if idle < 2000 {
                    std::hint::spin_loop();
                } else {
                    self.progress(Some(Duration::from_micros(50)), None);
                }
            }
        }
        Ok(())
    }

    /// Sends a message: to itself straight into its own queue.
    pub fn send(&mut self, tid: i32, tag: i32, enc: i32, data: &[u8]) -> Result<(), PvmError> {
        self.send_parts(&[tid], tag, enc, &[data])
    }

    /// Sends a message whose bytes are `parts` in order to each of `tids`: through each
    /// route, or left in place for the receivers' single copies, posted to all before it
    /// waits for any (`single_copy.rs`).
    pub fn send_parts(&mut self, tids: &[i32], tag: i32, enc: i32, parts: &[&[u8]]) -> Result<(), PvmError> {
        // One receiver, a small message, a ring with room: nothing to post or wait for.
        if let [t] = *tids {
            if let Some(r) = self.post_on_ring(t, tag, enc, parts) {
                return r;
            }
        }
        let mut posted = Vec::new();
        let mut r = Ok(());
        for &t in tids {
            r = self.post(t, tag, enc, parts, &mut posted);
            if r.is_err() {
                break;
            }
        }
        // Even after an error, the receivers of what was posted read this memory until they
        // say they are done.
        if posted.is_empty() {
            return r;
        }
        let w = self.wait_single_copies(&posted, parts);
        r.and(w)
    }

    /// Sends one message to `tid`; a single copy posted is added to `posted`.
    fn post(
        &mut self,
        tid: i32,
        tag: i32,
        enc: i32,
        parts: &[&[u8]],
        posted: &mut Vec<(i32, u64)>,
    ) -> Result<(), PvmError> {
        if tid == self.tid {
            let ctx = self.ctx;
            self.arrive(Arrived::new(tid, tag, ctx, enc, parts.concat()));
            return Ok(());
        }
        if let Some(r) = self.post_on_ring(tid, tag, enc, parts) {
            return r;
        }
        let len = parts.iter().map(|p| p.len()).sum();
        self.link_to(tid)?;
        if len >= self.single_copy {
            if let Some(seq) = self.post_single_copy(tid, tag, enc, parts)? {
                posted.push((tid, seq));
                return Ok(());
            }
        }
        let header = crate::wire::message_header(self.tid, tag, self.ctx, enc, len).ok_or(PvmError::Overflow)?;
        // The header before the parts, on the stack for the usual message.
        if parts.len() <= 3 {
            let mut all: [&[u8]; 4] = [&[]; 4];
            all[0] = &header;
            all[1..=parts.len()].copy_from_slice(parts);
            return self.write_route(tid, &all[..=parts.len()]);
        }
        let mut all = Vec::with_capacity(parts.len() + 1);
        all.push(&header[..]);
        all.extend_from_slice(parts);
        self.write_route(tid, &all)
    }
}

impl Task {
    /// The usual message: small, to another task whose route is there, a ring with room now
    /// (one look-up, the header written straight into the record). `None`: it goes the
    /// general way (`post`).
    #[inline]
    pub(crate) fn post_on_ring(
        &mut self,
        tid: i32,
        tag: i32,
        enc: i32,
        parts: &[&[u8]],
    ) -> Option<Result<(), PvmError>> {
        let len = parts.iter().map(|p| p.len()).sum();
        if tid == self.tid || len >= self.single_copy {
            return None;
        }
        let Some(Route { stream, ring: Some(ring), .. }) = self.outbound.get_mut(tid) else { return None };
        let Some(header) = crate::wire::message_header(self.tid, tag, self.ctx, enc, len) else {
            return Some(Err(PvmError::Overflow));
        };
        if !ring.write_message(&header, parts) {
            return None;
        }
        if ring.receiver_asleep() {
            wake(stream);
        }
        Some(Ok(()))
    }
}

impl Task {
    /// The usual message, its bytes in one piece (a send buffer with no in-place stretch):
    /// as [`Task::post_on_ring`], with the header's words stored straight into the record.
    #[inline(always)]
    pub(crate) fn post_small(&mut self, tid: i32, tag: i32, enc: i32, data: &[u8]) -> Option<Result<(), PvmError>> {
        if tid == self.tid || data.len() >= self.single_copy {
            return None;
        }
        let (me, ctx) = (self.tid, self.ctx);
        let Some(Route { stream, ring: Some(ring), .. }) = self.outbound.get_mut(tid) else { return None };
        let Some(words) = crate::wire::message_words(me, tag, ctx, enc, data.len()) else {
            return Some(Err(PvmError::Overflow));
        };
        if !ring.write_small_message(words, data) {
            return None;
        }
        if ring.receiver_asleep() {
            wake(stream);
        }
        Some(Ok(()))
    }
}

/// Wakes a ring's receiver that sleeps in poll: one byte on the connection beside the ring.
fn wake(stream: &OwnedFd) {
    // SAFETY: a one-byte non-blocking send; a full socket already wakes it.
    unsafe { libc::send(stream.as_raw_fd(), b"w".as_ptr().cast(), 1, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
}

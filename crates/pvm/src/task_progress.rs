//! A task's progress loop, which every blocking call turns: it waits on the agent's
//! connection, the listening sockets and every inbound link, drains the shared-memory rings,
//! and takes each message that arrived in (`Arrived`): to a message handler that matches it,
//! else to the queue that receives match against (`task_receive.rs`). The agent's answers
//! wait for `Task::request`, caught output of children is printed.

use std::os::unix::io::{AsRawFd, RawFd};
use std::time::Duration;

use crate::link::Link;
use crate::place;
use crate::ring::Ring;
use crate::single_copy::Remote;
use crate::task::{Handler, Task, SHOW_TIDS};
use crate::wire::Frame;

/// A message that arrived and waits to be received.
#[derive(Debug)]
pub struct Arrived {
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
    pub enc: i32,
    pub data: Vec<u8>,
    /// A single-copy message still in its sender's memory (`data` is then empty); only
    /// while a receive hands it out (`single_copy.rs`). Boxed: rare, and an arrival moves
    /// (into the queue, out of it) with its fields in registers rather than by `memcpy`.
    pub remote: Option<Box<Remote>>,
}

impl Arrived {
    pub fn new(src: i32, tag: i32, ctx: i32, enc: i32, data: Vec<u8>) -> Arrived {
        Arrived { src, tag, ctx, enc, data, remote: None }
    }

    /// Copies a single-copy message in from its sender's memory, freeing the sender.
    pub fn settle(&mut self) {
        let Some(r) = self.remote.take() else { return };
        let len = r.len();
        match (*r).read_all() {
            Ok(d) => self.data = d,
            Err(e) => crate::state::say(format_args!(
                "libpvm: cannot read a message of {len} bytes (tag {}) from t{:x}'s memory: {}",
                self.tag,
                self.src,
                e.text()
            )),
        }
    }
}

impl Task {
    /// Waits up to `timeout` (`None`: until something happens) for input, and takes in all
    /// that arrived. With `writable`, also returns when that descriptor can take bytes.
    pub(crate) fn progress(&mut self, timeout: Option<Duration>, writable: Option<RawFd>) {
        let mut timeout = timeout;
        if self.drain_rings() {
            timeout = Some(Duration::ZERO);
        }
        // Before sleeping, tell every ring's sender, then look once more (ring.rs's handshake).
        let may_sleep = timeout != Some(Duration::ZERO);
        if may_sleep {
            for r in self.inbound.iter().filter_map(|l| l.ring.as_ref()) {
                r.set_asleep(true);
            }
            if self.inbound.iter().filter_map(|l| l.ring.as_ref()).any(Ring::has_data) {
                timeout = Some(Duration::ZERO);
            }
        }
        // The list is kept between waits: no allocation per wait.
        let mut fds = std::mem::take(&mut self.poll_fds);
        fds.clear();
        fds.extend([
            libc::pollfd { fd: self.agent.stream.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ]);
        fds.push(libc::pollfd {
            fd: self.tcp_listener.as_ref().map_or(-1, |l| l.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.extend(self.inbound.iter().map(|l| libc::pollfd {
            fd: l.stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        if let Some(fd) = writable {
            fds.push(libc::pollfd { fd, events: libc::POLLOUT, revents: 0 });
        }
        if self.agent_lost {
            fds[0].fd = -1;
        }
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as _,
        });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fds` is a valid array of pollfd for its length; ts_ptr null or a timespec.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ts_ptr, std::ptr::null()) };
        if may_sleep {
            for r in self.inbound.iter().filter_map(|l| l.ring.as_ref()) {
                r.set_asleep(false);
            }
        }
        if n <= 0 {
            self.poll_fds = fds;
            self.drain_rings();
            return;
        }
        let polled_links = self.inbound.len();
        if fds[0].revents != 0 {
            self.agent.read_now();
            while let Some(f) = self.agent.next_frame() {
                self.take_from_agent(f);
            }
            if self.agent.closed {
                self.agent_lost = true;
            }
        }
        if fds[1].revents != 0 {
            while let Ok((s, _)) = self.listener.accept() {
                if s.set_nonblocking(true).is_ok() {
                    self.inbound.push(Link::accepted(s.into()));
                }
            }
        }
        if fds[2].revents != 0 {
            while let Some(Ok((s, _))) = self.tcp_listener.as_ref().map(|l| l.accept()) {
                if let Some((s, proving)) = crate::tcp::accepted(s, self.tid, &self.secret) {
                    self.inbound.push(Link::accepted_tcp(s, proving));
                }
            }
        }
        for i in 0..polled_links {
            if fds.get(3 + i).is_some_and(|p| p.revents != 0) {
                self.inbound[i].read_now();
                while let Some(f) = self.inbound[i].next_frame() {
                    self.take_from_task(i, f);
                }
            }
        }
        self.poll_fds = fds;
        self.drain_rings();
        self.inbound.retain(|l| !l.closed);
    }

    /// Takes in what waits in every ring; whether there was anything.
    pub(crate) fn drain_rings(&mut self) -> bool {
        let mut got = false;
        for i in 0..self.inbound.len() {
            if self.inbound[i].drain_ring() {
                got = true;
                while let Some(f) = self.inbound[i].next_frame() {
                    self.take_from_task(i, f);
                }
            }
        }
        got
    }

    /// A message arrived: for a message handler that matches it, else for a receive.
    pub(crate) fn arrive(&mut self, mut m: Arrived) {
        let matches = |h: &Handler| {
            (h.src == -1 || h.src == m.src) && (h.tag == -1 || h.tag == m.tag) && (h.ctx == -1 || h.ctx == m.ctx)
        };
        match self.handlers.iter().find(|h| matches(h)) {
            Some(h) => {
                m.settle();
                self.for_handlers.push_back((h.func, m));
                crate::state::HANDLERS_WAITING.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            None => {
                if !self.lazy_ok {
                    m.settle();
                }
                self.queue.push_back(m)
            }
        }
    }

    /// Copies in every queued single-copy message but the one at `keep`.
    pub(crate) fn settle_queue(&mut self, keep: Option<usize>) {
        for (i, m) in self.queue.iter_mut().enumerate() {
            if Some(i) != keep {
                m.settle();
            }
        }
    }

    fn take_from_agent(&mut self, f: Frame) {
        match f {
            Frame::Message { src, tag, ctx, enc, data } => self.arrive(Arrived::new(src, tag, ctx, enc, data)),
            Frame::Output { tid, event, text } => self.print_caught(tid, event, &text),
            other => self.replies.push_back(other),
        }
    }

    fn take_from_task(&mut self, link: usize, f: Frame) {
        let l = &mut self.inbound[link];
        match (l.peer, f) {
            // Over TCP the handshake proved the secret (for the tid the hello names); on a
            // Unix socket the hello carries it.
            (None, Frame::Hello { secret, tid, pid, .. })
                if l.proven.map_or_else(|| place::same_secret(&secret, &self.secret), |p| p == tid) =>
            {
                l.peer = Some(tid);
                l.peer_pid = pid;
                if let Some(r) = &l.ring {
                    if crate::single_copy::can_read(pid, r.probe()) {
                        r.allow_single_copy();
                    }
                }
            }
            (Some(peer), Frame::Message { tag, ctx, enc, data, .. }) => {
                self.arrive(Arrived::new(peer, tag, ctx, enc, data))
            }
            (Some(peer), Frame::Remote { tag, ctx, enc, seq, pieces }) if l.ring.is_some() => {
                let acker = l.ring.as_ref().expect("checked").acker(seq);
                let remote = Some(Box::new(Remote::new(l.peer_pid, pieces, acker)));
                self.arrive(Arrived { src: peer, tag, ctx, enc, data: Vec::new(), remote })
            }
            // A stranger, or a peer that breaks the protocol: dropped.
            _ => l.closed = true,
        }
    }

    /// Prints a child's caught output as Debian's library does: each line as `[t40002] text`,
    /// and `[t40002] BEGIN` and `[t40002] EOF` around it; only the lines, as they are, with
    /// `PvmShowTids` off.
    fn print_caught(&self, tid: i32, event: i32, text: &[u8]) {
        let Some(file) = self.catch else { return };
        let show_tids = SHOW_TIDS.load(std::sync::atomic::Ordering::Relaxed);
        let mut line = if show_tids { format!("[t{tid:x}] ").into_bytes() } else { Vec::new() };
        match event {
            crate::wire::OUTPUT_BEGIN if show_tids => line.extend_from_slice(b"BEGIN"),
            crate::wire::OUTPUT_EOF if show_tids => line.extend_from_slice(b"EOF"),
            crate::wire::OUTPUT_LINE => line.extend_from_slice(text),
            _ => return,
        }
        line.push(b'\n');
        // SAFETY: `file` is the FILE * the program gave pvm_catchout, valid while it is set.
        unsafe {
            libc::fwrite(line.as_ptr().cast(), 1, line.len(), file as *mut libc::FILE);
            libc::fflush(file as *mut libc::FILE);
        }
    }
}

//! This process as a PVM task: enrolling with the host agent (starting it if none runs), the
//! direct connections to other tasks, and the one progress loop every blocking call turns.
//!
//! Each task listens on its own socket in the agent's folder, and on TCP for tasks of other
//! hosts (`tcp.rs`). A send connects to the receiver's socket (or its TCP address) on first use (proving the secret, naming itself) and keeps the
//! connection; the receiver accepts it in its progress loop. Writes never block the process
//! for good: while a write waits for room, the loop keeps reading what arrives, so two tasks
//! that send large messages to each other at once both get through.

use std::collections::VecDeque;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use billboard::tunables::Tunable;

use crate::error::PvmError;
use crate::idmap::IdMap;
use crate::link::{Link, Route};
use crate::place;
use crate::ring::Ring;
use crate::single_copy::Remote;
use crate::spin::{self, Spin};
use crate::wire::{Frame, FrameBuffer};

/// Where a wait found its message: in the queue, or taken straight from a ring.
enum Found {
    Queued(usize),
    Taken(Arrived),
}

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

pub static SHM: Tunable = Tunable::new(
    "BB_PVM_SHM",
    1,
    "PVM: 1 carries messages between tasks of a host through shared-memory rings, 0 on their sockets",
);
/// `PvmShowTids` (`pvm_setopt`): caught output is printed with its task's tid, and where
/// each task's begins and ends (PVM's default), or as it is.
pub static SHOW_TIDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// The PVM library's tunables, for `bbrun --info`.
pub fn tunables() -> [&'static Tunable; 7] {
    [
        &SHM,
        &crate::spin::SPIN_US,
        &crate::spin::SPIN_MAX_US,
        &crate::ring::RING_BYTES,
        &crate::single_copy::SINGLE_COPY_BYTES,
        &crate::huge_pages::HUGE_PAGES,
        &crate::agent::LINGER_MS,
    ]
}

/// A message handler (`pvm_addmhf`): messages matching src, tag and context (-1: any) go to
/// `func` instead of to a receive.
#[derive(Clone, Copy, Debug)]
pub struct Handler {
    pub id: i32,
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
    /// The C function `int (*)(int mid)`, as an address.
    pub func: usize,
}

/// An enrolled task.
pub struct Task {
    pub tid: i32,
    pub ptid: i32,
    pub siblings: Vec<i32>,
    /// The context messages are sent in and received from (`pvm_setcontext`).
    pub ctx: i32,
    pub(crate) dir: PathBuf,
    pub(crate) secret: String,
    agent: Link,
    agent_lost: bool,
    listener: UnixListener,
    /// Where tasks of other hosts connect (`tcp.rs`); `None` where this host offers no address.
    tcp_listener: Option<std::net::TcpListener>,
    /// `progress`'s list of descriptors, kept between waits.
    poll_fds: Vec<libc::pollfd>,
    inbound: Vec<Link>,
    pub(crate) outbound: IdMap<Route>,
    pub queue: VecDeque<Arrived>,
    pub handlers: Vec<Handler>,
    /// Messages for handlers, to be handed over when the library's lock is free
    /// (`state::call`), as handlers call the library themselves.
    pub for_handlers: VecDeque<(usize, Arrived)>,
    /// A wait returned early for the handlers (and must run again after them).
    pub cut_short: bool,
    replies: VecDeque<Frame>,
    /// Where caught output of children goes (`pvm_catchout`): a C `FILE *`.
    pub catch: Option<usize>,
    /// `BB_PVM_SHM`, `BB_PVM_SPIN_US`/`_MAX_US`, `BB_PVM_RING_BYTES`, `BB_PVM_SINGLE_COPY`, read once.
    pub(crate) shm: bool,
    spin: Spin,
    pub(crate) ring_bytes: usize,
    pub(crate) single_copy: usize,
    /// While a receive waits: an arriving single-copy message may stay in its sender's
    /// memory (the receive may hand it out); at any other time it is copied in at once.
    lazy_ok: bool,
    /// Memory for the next message taken straight from a ring (`take_direct`): the receive
    /// buffer's old vector, handed back by `pvm_recv` (`Buffers::deliver`), so a small
    /// message costs neither an allocation nor the shared pool's thread-local (`buffer::reuse`).
    pub spare: Vec<u8>,
}

// SAFETY: the FILE pointer in `catch` is only used under the library's lock, as C's stdio
// allows from any thread.
unsafe impl Send for Task {}

/// How long a task waits for its agent to answer the hello, or to start.
pub(crate) const START_WAIT: Duration = Duration::from_secs(10);

impl Task {
    /// Enrolls this process: finds or starts the host agent, says hello, and listens.
    pub fn enroll() -> Result<Task, PvmError> {
        let dir = place::dir();
        let mut stream = crate::agent_start::connect_or_start_agent(&dir)?;
        let secret = std::fs::read_to_string(place::secret_file(&dir)).map_err(|_| PvmError::SysErr)?;
        let given = std::env::var(place::TID_ENV).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
        // A program this task starts by itself is a task of its own, not this one.
        std::env::remove_var(place::TID_ENV);
        let hello =
            Frame::Hello { secret: secret.clone(), pid: std::process::id() as i32, tid: given, name: program_name() };
        stream.set_read_timeout(Some(START_WAIT)).map_err(|_| PvmError::SysErr)?;
        place::write_frame(&mut stream, &hello).map_err(|_| PvmError::SysErr)?;
        let mut frames = FrameBuffer::default();
        let Ok(Some(Frame::Welcome { tid, ptid, siblings })) = place::read_frame(&mut stream, &mut frames) else {
            return Err(PvmError::SysErr);
        };
        let path = place::task_socket(&dir, tid);
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(|_| PvmError::SysErr)?;
        listener.set_nonblocking(true).map_err(|_| PvmError::SysErr)?;
        let tcp = crate::tcp::listen();
        let addr = tcp.as_ref().map(|(_, a)| a.clone()).unwrap_or_default();
        place::write_frame(&mut stream, &Frame::Listening { addr }).map_err(|_| PvmError::SysErr)?;
        stream.set_read_timeout(None).map_err(|_| PvmError::SysErr)?;
        stream.set_nonblocking(true).map_err(|_| PvmError::SysErr)?;
        let mut agent = Link::to_agent(stream.into());
        agent.frames = frames;
        Ok(Task {
            tid,
            ptid,
            siblings,
            ctx: 0,
            dir,
            secret,
            agent,
            agent_lost: false,
            listener,
            tcp_listener: tcp.map(|(l, _)| l),
            poll_fds: Vec::new(),
            inbound: Vec::new(),
            outbound: IdMap::default(),
            queue: VecDeque::new(),
            handlers: Vec::new(),
            for_handlers: VecDeque::new(),
            cut_short: false,
            replies: VecDeque::new(),
            catch: None,
            shm: SHM.get() != 0,
            spin: Spin::from_tunables(),
            ring_bytes: crate::ring::RING_BYTES.get(),
            single_copy: match crate::single_copy::SINGLE_COPY_BYTES.get() {
                0 => usize::MAX,
                n => n,
            },
            lazy_ok: false,
            spare: Vec::new(),
        })
    }

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
    fn settle_queue(&mut self, keep: Option<usize>) {
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

    /// Asks the agent something and waits for its answer (arrivals meanwhile are kept).
    pub fn request(&mut self, f: &Frame) -> Result<Frame, PvmError> {
        if self.agent_lost {
            return Err(PvmError::SysErr);
        }
        let bytes = f.encode();
        let fd = self.agent.stream.as_raw_fd();
        self.write_all(fd, &[&bytes]).map_err(|_| PvmError::SysErr)?;
        loop {
            if let Some(r) = self.replies.pop_front() {
                return Ok(r);
            }
            if self.agent_lost {
                return Err(PvmError::SysErr);
            }
            self.progress(None, None);
        }
    }

    /// A request whose answer is a status code.
    pub fn request_status(&mut self, f: &Frame) -> Result<i32, PvmError> {
        match self.request(f)? {
            Frame::Status { code, .. } if code < 0 => Err(PvmError::from_code(code)),
            Frame::Status { code, .. } => Ok(code),
            _ => Err(PvmError::SysErr),
        }
    }

    /// Takes the first waiting message from `src` with `tag` (-1: any) in the current context,
    /// waiting up to `timeout` (`None`: for ever, `Some(0)`: not at all).
    pub fn receive(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<Arrived> {
        match self.wait_matching(src, tag, timeout)? {
            Found::Queued(i) => self.queue.remove(i),
            Found::Taken(m) => Some(m),
        }
    }

    /// As [`Task::receive`], but a large message may still be in its sender's memory
    /// (`Arrived::remote`): for a receive whose buffer copies it out itself.
    pub fn receive_in_place(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<Arrived> {
        self.lazy_ok = true;
        let found = self.wait_matching(src, tag, timeout);
        self.lazy_ok = false;
        let i = match found {
            Some(Found::Taken(m)) => {
                self.settle_queue(None);
                return Some(m);
            }
            Some(Found::Queued(i)) => Some(i),
            None => None,
        };
        self.settle_queue(i);
        self.queue.remove(i?)
    }

    /// Where the first matching message waits in the queue, waiting as `receive` does.
    pub fn wait_for(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<usize> {
        match self.wait_matching(src, tag, timeout)? {
            Found::Queued(i) => Some(i),
            Found::Taken(m) => {
                // Newer than all queued from its sender, and the first that matches.
                self.queue.push_back(m);
                Some(self.queue.len() - 1)
            }
        }
    }

    /// A message that matches, straight from the front of a ring (`Link::take_message`),
    /// where no message handler might want it instead.
    fn take_direct(&mut self, src: i32, tag: i32, ctx: i32) -> Option<Arrived> {
        if !self.handlers.is_empty() {
            return None;
        }
        let wanted = |t: i32, c: i32| (tag == -1 || t == tag) && c == ctx;
        let spare = &mut self.spare;
        self.inbound.iter_mut().filter(|l| src == -1 || l.peer == Some(src)).find_map(|l| l.take_message(wanted, spare))
    }

    fn wait_matching(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<Found> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut first = true;
        loop {
            if !self.for_handlers.is_empty() {
                // The caller (state::call) runs the handlers, then this wait again.
                self.cut_short = true;
                return None;
            }
            let ctx = self.ctx;
            if let Some(i) = self
                .queue
                .iter()
                .position(|m| (src == -1 || m.src == src) && (tag == -1 || m.tag == tag) && m.ctx == ctx)
            {
                return Some(Found::Queued(i));
            }
            // What does not match is copied in before this task waits: its senders go on.
            self.settle_queue(None);
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) && !first {
                return None;
            }
            first = false;
            // A message on a ring comes sooner than a sleeping process wakes: poll the rings
            // a while (no system call) before sleeping, as long as `spin.rs` says.
            let mut spun_out = false;
            let rings = self.inbound.iter().filter(|l| l.ring.is_some()).count();
            if left != Some(Duration::ZERO) && rings > 0 {
                // Yielding between looks lets a peer that shares this core run (the engine's
                // ladder: spin, then yield, then sleep); with more tasks than cores, at once.
                let spin_looks = if spin::oversubscribed(rings + 1) { 0 } else { 1024 };
                let mut until = None;
                let mut looks = 0u32;
                // While spinning, the clock is read every 256th look: a look is a few loads, a
                // clock read in a VM as long as several looks (a tenth of a ping-pong's
                // samples, at every 16th), and a message that lands meanwhile waits for it.
                // The spin's end is set at the first of those reads, not before the first
                // look: a message already there costs no clock read.
                loop {
                    // A small message that matches is taken whole from its ring; anything
                    // else goes the general way (frames, the queue) and is matched above.
                    if let Some(m) = self.take_direct(src, tag, ctx) {
                        return Some(Found::Taken(m));
                    }
                    if self.drain_rings() {
                        break;
                    }
                    looks += 1;
                    if looks < spin_looks {
                        std::hint::spin_loop();
                        if !looks.is_multiple_of(256) {
                            continue;
                        }
                    } else {
                        std::thread::yield_now();
                    }
                    let now = Instant::now();
                    // Never past a timed receive's deadline (the spin may reach 1 ms).
                    let end = *until.get_or_insert_with(|| {
                        deadline.map_or(now + self.spin.now(), |d| d.min(now + self.spin.now()))
                    });
                    if now >= end {
                        spun_out = true;
                        break;
                    }
                }
                if self.queue.iter().any(|m| (src == -1 || m.src == src) && (tag == -1 || m.tag == tag) && m.ctx == ctx)
                {
                    continue;
                }
            }
            let slept = spun_out.then(Instant::now);
            self.progress(left, None);
            if let Some(t) = slept {
                self.spin.slept(t.elapsed());
            }
        }
    }

    /// Takes in what has arrived, waiting up to `timeout` (`None`: until something comes)
    /// while nothing has: the wait of a receive that matches by the program's function.
    pub fn take_in(&mut self, timeout: Option<Duration>) {
        self.progress(timeout, None)
    }

    /// The descriptors on which input for this task arrives (`pvm_getfds`).
    pub fn wait_fds(&self) -> Vec<i32> {
        let mut v = vec![self.agent.stream.as_raw_fd(), self.listener.as_raw_fd()];
        v.extend(self.tcp_listener.as_ref().map(|l| l.as_raw_fd()));
        v.extend(self.inbound.iter().map(|l| l.stream.as_raw_fd()));
        v
    }

    /// Leaves PVM: tells the agent and stops listening.
    pub fn leave(mut self) {
        if let Some(_file) = self.catch {
            // Like PVM, a task that catches its children's output waits for them to end
            // first, so that all of it is printed, and says so.
            let mut said = false;
            while let Ok(Frame::TasksAre { tasks }) = self.request(&Frame::Tasks { which: 0 }) {
                if !tasks.iter().any(|t| t.ptid == self.tid) {
                    break;
                }
                if !std::mem::replace(&mut said, true) {
                    let who = crate::state::who(Some(self.tid));
                    crate::state::say(format_args!("{who}: child task(s) still running.  waiting..."));
                }
                self.progress(Some(Duration::from_millis(20)), None);
            }
            self.progress(Some(Duration::ZERO), None);
        }
        let _ = self.request(&Frame::Exit);
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(place::task_socket(&self.dir, self.tid));
    }
}

fn program_name() -> String {
    std::fs::read_to_string("/proc/self/comm").map(|s| s.trim_end().to_string()).unwrap_or_default()
}

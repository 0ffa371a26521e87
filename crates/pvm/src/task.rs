//! This process as a PVM task: enrolling with the host agent (starting it if none runs), what
//! the task holds, asking the agent, and leaving. Its other concerns each have a file: the
//! progress loop every blocking call turns and the arrivals it takes in (`task_progress.rs`),
//! receives (`task_receive.rs`), and sends (`task_send.rs`).
//!
//! Each task listens on its own socket in the agent's folder, and on TCP for tasks of other
//! hosts (`tcp.rs`). A send connects to the receiver's socket (or its TCP address) on first
//! use (proving the secret, naming itself) and keeps the connection; the receiver accepts it
//! in its progress loop. Writes never block the process for good: while a write waits for
//! room, the loop keeps reading what arrives, so two tasks that send large messages to each
//! other at once both get through.

use std::collections::VecDeque;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::Duration;

use billboard::tunables::Tunable;

use crate::error::PvmError;
use crate::link::{Link, Route};
use crate::place;
use crate::spin::Spin;
pub use crate::task_progress::Arrived;
use crate::wire::{Frame, FrameBuffer};

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
    pub(crate) agent: Link,
    pub(crate) agent_lost: bool,
    pub(crate) listener: UnixListener,
    /// Where tasks of other hosts connect (`tcp.rs`); `None` where this host offers no address.
    pub(crate) tcp_listener: Option<std::net::TcpListener>,
    /// `progress`'s list of descriptors, kept between waits.
    pub(crate) poll_fds: Vec<libc::pollfd>,
    pub(crate) inbound: Vec<Link>,
    pub(crate) outbound: crate::idmap::LastUsed<Route>,
    pub queue: VecDeque<Arrived>,
    pub handlers: Vec<Handler>,
    /// Messages for handlers, to be handed over when the library's lock is free
    /// (`state::call`), as handlers call the library themselves.
    pub for_handlers: VecDeque<(usize, Arrived)>,
    /// A wait returned early for the handlers (and must run again after them).
    pub cut_short: bool,
    pub(crate) replies: VecDeque<Frame>,
    /// Where caught output of children goes (`pvm_catchout`): a C `FILE *`.
    pub catch: Option<usize>,
    /// `BB_PVM_SHM`, `BB_PVM_SPIN_US`/`_MAX_US`, `BB_PVM_RING_BYTES`, `BB_PVM_SINGLE_COPY`, read once.
    pub(crate) shm: bool,
    pub(crate) spin: Spin,
    pub(crate) ring_bytes: usize,
    pub(crate) single_copy: usize,
    /// While a receive waits: an arriving single-copy message may stay in its sender's
    /// memory (the receive may hand it out); at any other time it is copied in at once.
    pub(crate) lazy_ok: bool,
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
            outbound: Default::default(),
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

//! The host agent (`bbpvmd`): pvmd's role on one host. It hands out tids, starts tasks for
//! `pvm_spawn`, knows which tasks live (a task lives while its connection to the agent is
//! open), tells those who asked when one ends (`pvm_notify`), answers `pvm_config` and
//! `pvm_tasks`, keeps the groups, and forwards caught output. It carries no messages between
//! tasks: they talk directly.
//!
//! One thread per task connection and one per spawned child (waiting for it, and reading its
//! output), all on one [`State`] behind a lock. The agent leaves when it has had no task for
//! `BB_PVM_LINGER_MS` (default 2000) or on `pvm_halt`, removing its folder's files.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use billboard::tunables::Tunable;

use crate::error::PvmError;
use crate::groups::Groups;
use crate::mailbox::Mailbox;
use crate::place::{self, HOST_TID, TID_LOCAL_MASK};
use crate::wire::{Frame, FrameBuffer, HostEntry, TaskEntry};

const NO_PARENT: i32 = -23;

/// One task the agent knows.
struct TaskRecord {
    ptid: i32,
    pid: i32,
    name: String,
    siblings: Vec<i32>,
    /// Its library has said hello (a spawned task is known from its fork until then).
    enrolled: bool,
    /// Started by the agent: it is gone when its process has ended and its output is
    /// forwarded (not when it leaves PVM), so that a parent sees all its output.
    spawned: bool,
    /// It left PVM (its connection closed) while its process still runs.
    left: bool,
}

/// A `pvm_notify(PvmTaskExit)` in force: `watcher` gets a message tagged `tag` when `watched`
/// ends.
struct ExitNotify {
    watcher: i32,
    tag: i32,
    watched: i32,
}

/// What the agent knows, behind one lock.
struct State {
    tasks: BTreeMap<i32, TaskRecord>,
    last_local: i32,
    notifies: Vec<ExitNotify>,
    /// Each enrolled task's connection, to send it notifications and caught output.
    writers: HashMap<i32, Arc<Mutex<UnixStream>>>,
    catching: Vec<i32>,
    groups: Groups,
    mailbox: Mailbox,
    connections: usize,
    idle_since: Instant,
    halting: bool,
}

pub struct Agent {
    dir: PathBuf,
    secret: String,
    hostname: String,
    state: Mutex<State>,
}

#[path = "agent_spawn.rs"]
mod spawn;

impl Agent {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn new_tid(st: &mut State) -> Result<i32, PvmError> {
        for _ in 0..TID_LOCAL_MASK {
            st.last_local = if st.last_local >= TID_LOCAL_MASK { 1 } else { st.last_local + 1 };
            let tid = HOST_TID | st.last_local;
            if !st.tasks.contains_key(&tid) {
                return Ok(tid);
            }
        }
        Err(PvmError::OutOfRes)
    }

    /// Sends `f` to an enrolled task; a task that cannot take it is gone soon anyway.
    fn tell(st: &State, tid: i32, f: &Frame) {
        if let Some(w) = st.writers.get(&tid) {
            let mut s = w.lock().unwrap_or_else(|e| e.into_inner());
            let _ = place::write_frame(&mut s, f);
        }
    }

    /// The message a watcher gets when `tid` ends: one XDR int, the tid, from the agent.
    fn exit_message(tag: i32, tid: i32) -> Frame {
        Frame::Message { src: HOST_TID, tag, ctx: 0, enc: 0, data: tid.to_be_bytes().to_vec() }
    }

    /// A task ended (its connection closed, or its process exited): forget it and notify.
    fn task_gone(&self, tid: i32) {
        let mut st = self.lock();
        if st.tasks.remove(&tid).is_none() {
            return;
        }
        st.writers.remove(&tid);
        st.catching.retain(|&t| t != tid);
        st.groups.task_gone(tid);
        st.mailbox.task_gone(tid);
        let fire: Vec<(i32, i32)> =
            st.notifies.iter().filter(|n| n.watched == tid).map(|n| (n.watcher, n.tag)).collect();
        st.notifies.retain(|n| n.watched != tid && n.watcher != tid);
        for (watcher, tag) in fire {
            Self::tell(&st, watcher, &Self::exit_message(tag, tid));
        }
        let released = st.groups.take_ready_barriers();
        for (members, code) in released {
            for m in members {
                Self::tell(&st, m, &Frame::Status { code, list: vec![] });
            }
        }
        if st.tasks.is_empty() {
            st.idle_since = Instant::now();
        }
        let _ = std::fs::remove_file(place::task_socket(&self.dir, tid));
    }

    /// Serves one connection: a task's hello, then its requests until it leaves.
    fn serve(self: Arc<Self>, stream: UnixStream) {
        let mut fb = FrameBuffer::default();
        let mut rd = stream;
        let tid = match self.enroll(&mut rd, &mut fb) {
            Some(t) => t,
            None => return,
        };
        while let Ok(Some(f)) = place::read_frame(&mut rd, &mut fb) {
            let leaving = f == Frame::Exit;
            if let Some(reply) = self.request(tid, f) {
                let st = self.lock();
                Self::tell(&st, tid, &reply);
            }
            if leaving {
                break;
            }
        }
        let spawned = self.lock().tasks.get(&tid).is_some_and(|t| t.spawned);
        if spawned {
            // Its process's end is what ends it (`start_one`'s waiter); it takes no more
            // messages from the agent.
            let mut st = self.lock();
            st.writers.remove(&tid);
            if let Some(t) = st.tasks.get_mut(&tid) {
                t.left = true;
            }
        } else {
            self.task_gone(tid);
        }
    }

    /// Checks a hello and gives the task its tid; `None` drops the connection.
    fn enroll(&self, rd: &mut UnixStream, fb: &mut FrameBuffer) -> Option<i32> {
        let Ok(Some(Frame::Hello { secret, pid, tid, name })) = place::read_frame(rd, fb) else { return None };
        if !place::same_secret(&secret, &self.secret) {
            return None;
        }
        let writer = Arc::new(Mutex::new(rd.try_clone().ok()?));
        let mut st = self.lock();
        let tid = if tid != 0 {
            // A task we spawned: it must be the process we started.
            match st.tasks.get_mut(&tid) {
                Some(t) if !t.enrolled && t.pid == pid => {
                    t.enrolled = true;
                    tid
                }
                _ => return None,
            }
        } else {
            let tid = Self::new_tid(&mut st).ok()?;
            st.tasks.insert(
                tid,
                TaskRecord {
                    ptid: NO_PARENT,
                    pid,
                    name,
                    siblings: vec![tid],
                    enrolled: true,
                    spawned: false,
                    left: false,
                },
            );
            tid
        };
        st.writers.insert(tid, writer);
        let t = &st.tasks[&tid];
        let welcome = Frame::Welcome { tid, ptid: t.ptid, siblings: t.siblings.clone() };
        Self::tell(&st, tid, &welcome);
        Some(tid)
    }

    /// Answers one request of task `from`; `None` when the answer comes later (a barrier).
    fn request(self: &Arc<Self>, from: i32, f: Frame) -> Option<Frame> {
        let status = |r: Result<i32, PvmError>| Frame::Status { code: r.unwrap_or_else(|e| e.code()), list: vec![] };
        Some(match f {
            Frame::Spawn(req) => Frame::Spawned { tids: self.spawn(from, &req) },
            Frame::Kill { tid, sig } => status(self.kill(from, tid, sig)),
            Frame::Notify { what, tag, tids } => status(self.notify(from, what, tag, &tids)),
            Frame::Config => Frame::ConfigIs {
                hosts: vec![HostEntry {
                    tid: HOST_TID,
                    name: self.hostname.clone(),
                    arch: place::ARCH.into(),
                    speed: 1000,
                    dsig: 0x0040_8841,
                }],
            },
            Frame::Tasks { which } => {
                let st = self.lock();
                let tasks: Vec<TaskEntry> = st
                    .tasks
                    .iter()
                    .filter(|(&tid, _)| which == 0 || which == HOST_TID || which == tid)
                    .map(|(&tid, t)| TaskEntry {
                        tid,
                        ptid: t.ptid,
                        host: HOST_TID,
                        flag: if t.enrolled { 4 } else { 0 },
                        name: t.name.clone(),
                        pid: t.pid,
                    })
                    .collect();
                if tasks.is_empty() && which != 0 && which != HOST_TID {
                    return Some(status(Err(PvmError::NoTask)));
                }
                Frame::TasksAre { tasks }
            }
            Frame::Lookup { tid } => {
                let st = self.lock();
                status(match st.tasks.get(&tid) {
                    Some(t) if t.left => Err(PvmError::NoTask),
                    Some(t) if t.enrolled => Ok(1),
                    Some(_) => Ok(2),
                    None => Err(PvmError::NoTask),
                })
            }
            Frame::CatchOut { on } => {
                let mut st = self.lock();
                st.catching.retain(|&t| t != from);
                if on != 0 {
                    st.catching.push(from);
                }
                status(Ok(0))
            }
            Frame::Halt => {
                let mut st = self.lock();
                st.halting = true;
                for (&tid, t) in &st.tasks {
                    if tid != from && t.pid > 0 {
                        // SAFETY: kill(2) on a pid we recorded; no memory involved.
                        unsafe { libc::kill(t.pid, libc::SIGTERM) };
                    }
                }
                status(Ok(0))
            }
            Frame::Exit => status(Ok(0)),
            Frame::MboxPut { name, flags, enc, data } => status(self.lock().mailbox.put(&name, from, flags, enc, data)),
            Frame::MboxGet { name, index, flags } => match self.lock().mailbox.get(&name, index, flags, from) {
                Ok(e) => Frame::MboxEntry { owner: e.owner, enc: e.enc, data: e.data },
                Err(e) => status(Err(e)),
            },
            Frame::MboxDel { name, index } => status(self.lock().mailbox.delete(&name, index, from).map(|()| 0)),
            Frame::MboxList { pattern } => Frame::MboxClasses { classes: self.lock().mailbox.list(&pattern) },
            Frame::Group { op, name, arg } => {
                let mut st = self.lock();
                let r = st.groups.request(from, op, &name, arg);
                let released = st.groups.take_ready_barriers();
                for (members, code) in released {
                    for m in members {
                        Self::tell(&st, m, &Frame::Status { code, list: vec![] });
                    }
                }
                return r;
            }
            _ => status(Err(PvmError::BadParam)),
        })
    }

    fn kill(&self, from: i32, tid: i32, sig: i32) -> Result<i32, PvmError> {
        let st = self.lock();
        let t = st.tasks.get(&tid).ok_or(PvmError::NoTask)?;
        if (tid == from && sig == libc::SIGTERM) || t.pid <= 0 || !(0..65).contains(&sig) {
            return Err(PvmError::BadParam);
        }
        // SAFETY: kill(2) on a pid we recorded; no memory involved.
        unsafe { libc::kill(t.pid, sig) };
        Ok(0)
    }

    fn notify(&self, from: i32, what: i32, tag: i32, tids: &[i32]) -> Result<i32, PvmError> {
        const TASK_EXIT: i32 = 1;
        const CANCEL: i32 = 256;
        let mut st = self.lock();
        match what & !CANCEL {
            TASK_EXIT if what & CANCEL != 0 => {
                st.notifies.retain(|n| !(n.watcher == from && n.tag == tag && tids.contains(&n.watched)));
            }
            TASK_EXIT => {
                for &t in tids {
                    if st.tasks.contains_key(&t) {
                        st.notifies.push(ExitNotify { watcher: from, tag, watched: t });
                    } else {
                        // Already gone: told at once, as pvmd does.
                        Self::tell(&st, from, &Self::exit_message(tag, t));
                    }
                }
            }
            // Host added or deleted: one host, none come or go.
            2..=5 => {}
            _ => return Err(PvmError::BadParam),
        }
        Ok(0)
    }
}

/// Runs the agent for `dir` until it is idle or halted. Returns at once (Ok) if another
/// agent already serves the folder.
pub fn run(dir: &Path) -> std::io::Result<()> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::symlink_metadata(dir)?;
            if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder of this user with mode 0700: refusing to use it",
                    dir.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(dir.join("lock"))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Ok(());
    }
    let secret = place::new_secret()?;
    let tmp = dir.join("secret.tmp");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?
        .write_all(secret.as_bytes())?;
    std::fs::rename(&tmp, place::secret_file(dir))?;
    let sock = place::agent_socket(dir);
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock)?;
    listener.set_nonblocking(true)?;

    let agent = Arc::new(Agent {
        dir: dir.to_path_buf(),
        secret,
        hostname: hostname(),
        state: Mutex::new(State {
            tasks: BTreeMap::new(),
            last_local: 0,
            notifies: Vec::new(),
            writers: HashMap::new(),
            catching: Vec::new(),
            groups: Groups::default(),
            mailbox: Mailbox::default(),
            connections: 0,
            idle_since: Instant::now(),
            halting: false,
        }),
    });
    let linger = Duration::from_millis(LINGER_MS.get() as u64);
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nonblocking(false);
                agent.lock().connections += 1;
                let a = Arc::clone(&agent);
                std::thread::spawn(move || {
                    Arc::clone(&a).serve(s);
                    let mut st = a.lock();
                    st.connections -= 1;
                    st.idle_since = Instant::now();
                });
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        {
            let st = agent.lock();
            if st.halting || (st.tasks.is_empty() && st.connections == 0 && st.idle_since.elapsed() >= linger) {
                break;
            }
        }
        let mut pfd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 50) };
    }
    // Leaving: the socket first, so that no new task finds a dying agent.
    let _ = std::fs::remove_file(&sock);
    let halting = agent.lock().halting;
    if halting {
        std::thread::sleep(Duration::from_millis(200));
        let st = agent.lock();
        for t in st.tasks.values() {
            if t.pid > 0 {
                // SAFETY: kill(2) on a pid we recorded.
                unsafe { libc::kill(t.pid, libc::SIGKILL) };
            }
        }
    }
    let tids: Vec<i32> = agent.lock().tasks.keys().copied().collect();
    for tid in tids {
        let _ = std::fs::remove_file(place::task_socket(dir, tid));
    }
    let _ = std::fs::remove_file(place::secret_file(dir));
    let _ = std::fs::remove_file(dir.join("lock"));
    let _ = std::fs::remove_dir(dir);
    drop(lock);
    Ok(())
}

pub static LINGER_MS: Tunable = Tunable::new(
    "BB_PVM_LINGER_MS",
    2000,
    "PVM host agent: ms it waits with no task before it leaves (long enough for a program's next run from a script)",
);

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Makes this process a daemon: returns in a grandchild detached from the caller's session
/// (the caller's library does not wait for it), `Ok(false)` in the original process.
pub fn daemonize() -> std::io::Result<bool> {
    // SAFETY: called before any thread exists; the child only continues single-threaded.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: setsid/fork in the single-threaded child.
            unsafe { libc::setsid() };
            match unsafe { libc::fork() } {
                -1 => std::process::exit(1),
                0 => Ok(true),
                _ => std::process::exit(0),
            }
        }
        pid => {
            let mut st = 0;
            // SAFETY: reaps the first child, which exits at once.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            Ok(false)
        }
    }
}

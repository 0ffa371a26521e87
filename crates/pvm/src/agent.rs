//! The host agent (`bbpvmd`): pvmd's role on one host. It hands out tids, starts tasks for
//! `pvm_spawn`, knows which tasks live (a task lives while its connection to the agent is
//! open), tells those who asked when one ends (`pvm_notify`), answers `pvm_config` and
//! `pvm_tasks`, keeps the groups, and forwards caught output. It carries no messages between
//! tasks: they talk directly.
//!
//! One thread per task connection and one per spawned child (waiting for it, and reading its
//! output), all on one [`State`] behind a lock. The agent leaves when it has had no task for
//! `BB_PVM_LINGER_MS` (default 2000) and no other host (pvmd stays while the machine has
//! hosts, so an added host outlives the program that added it), or on `pvm_halt`, removing
//! its folder's files.
//!
//! Several hosts (`agent_hosts.rs`): the first agent keeps what the whole virtual machine
//! knows (tasks of every host, notifies, groups, the message box); an added host's agent
//! enrolls and spawns its own tasks, and passes everything else up to the first.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::error::PvmError;
use crate::groups::Groups;
use crate::mailbox::Mailbox;
use crate::place::{self, HOST_TID, TID_LOCAL_MASK};
use crate::wire::{Frame, FrameBuffer, HostEntry, TaskEntry};

/// A connection frames are written to: a task's socket, or the pipe to another host's agent.
pub(crate) type Pipe = Arc<Mutex<Box<dyn Write + Send>>>;

pub(crate) fn pipe(w: impl Write + Send + 'static) -> Pipe {
    Arc::new(Mutex::new(Box::new(w)))
}

/// Writes a frame on a pipe; a reader that is gone is gone soon anyway.
pub(crate) fn send(p: &Pipe, f: &Frame) {
    let mut w = p.lock().unwrap_or_else(|e| e.into_inner());
    let _ = place::write_frame(&mut *w, f);
}

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
    /// The host it runs on (its agent's tid).
    host: i32,
    /// Where tasks of other hosts reach it (`Frame::Listening`): `None` until it says, empty
    /// where its host offers no address.
    addr: Option<String>,
}

impl TaskRecord {
    fn new(ptid: i32, pid: i32, name: String, host: i32) -> TaskRecord {
        TaskRecord {
            ptid,
            pid,
            name,
            siblings: Vec::new(),
            enrolled: false,
            spawned: false,
            left: false,
            host,
            addr: None,
        }
    }
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
    /// The last local part given out, per host.
    last_local: HashMap<i32, i32>,
    notifies: Vec<ExitNotify>,
    /// Each enrolled task's connection, to send it notifications and caught output.
    writers: HashMap<i32, Pipe>,
    /// The first agent: the hosts added since (`agent_hosts.rs`).
    hosts: Vec<hosts::HostLink>,
    /// `pvm_notify(PvmHostDelete)` and `(PvmHostAdd)` in force.
    host_notifies: Vec<hosts::HostNotify>,
    /// Spawns on other hosts waiting for their answer, by request id.
    spawns_waiting: HashMap<i32, mpsc::Sender<Vec<i32>>>,
    /// `pvm_hostsync`s waiting for another host's clock, by request id: the host, where
    /// its answer goes.
    clocks_waiting: HashMap<i32, (i32, mpsc::Sender<u64>)>,
    next_id: i32,
    /// Where the next default placement starts, in the list of hosts.
    next_host: usize,
    /// An added host's agent: the pipe up to the first agent.
    up: Option<Pipe>,
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
    /// This host's tid (its local part 0).
    host_tid: i32,
    state: Mutex<State>,
}

#[path = "agent_hosts.rs"]
mod hosts;
#[path = "agent_life.rs"]
mod life;
pub use hosts::{now_micros, run_added};
use life::Joining;
pub use life::{daemonize, run, LINGER_MS};
#[path = "agent_spawn.rs"]
mod spawn;

impl Agent {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new tid on `host`. An added host's agent gives out the upper half of its local
    /// parts itself (tasks started there from a shell), the first agent the lower half.
    fn new_tid(st: &mut State, host: i32) -> Result<i32, PvmError> {
        let half = (TID_LOCAL_MASK + 1) / 2;
        let (low, high) = if st.up.is_some() { (half, TID_LOCAL_MASK) } else { (1, half - 1) };
        let last = st.last_local.entry(host).or_insert(low - 1);
        for _ in 0..half {
            *last = if *last >= high { low } else { *last + 1 };
            let tid = host | *last;
            if !st.tasks.contains_key(&tid) {
                return Ok(tid);
            }
        }
        Err(PvmError::OutOfRes)
    }

    /// Sends `f` to a task: on its connection where it is enrolled here, else through the
    /// agent of its host (the first agent routes; an added host's agent passes up what is for
    /// another host). A task that cannot take it is gone soon anyway.
    fn tell(&self, st: &State, tid: i32, f: &Frame) {
        if let Some(w) = st.writers.get(&tid) {
            return send(w, f);
        }
        let via = match &st.up {
            // A task of this host that is not connected (yet, or any more).
            Some(_) if place::host_of(tid) == self.host_tid => None,
            Some(up) => Some(up),
            None => st.hosts.iter().find(|h| h.tid == place::host_of(tid)).map(|h| &h.pipe),
        };
        if let Some(p) = via {
            send(p, &Frame::Relay { tid, frame: Box::new(f.clone()) });
        }
    }

    /// The message a watcher gets when `tid` ends (or host `tid` is deleted): one XDR int,
    /// the tid, from the agent.
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
        let _ = std::fs::remove_file(place::task_socket(&self.dir, tid));
        if let Some(up) = &st.up {
            // The first agent notifies.
            return send(up, &Frame::Gone { tid });
        }
        st.catching.retain(|&t| t != tid);
        st.groups.task_gone(tid);
        st.mailbox.task_gone(tid);
        let fire: Vec<(i32, i32)> =
            st.notifies.iter().filter(|n| n.watched == tid).map(|n| (n.watcher, n.tag)).collect();
        st.notifies.retain(|n| n.watched != tid && n.watcher != tid);
        for (watcher, tag) in fire {
            self.tell(&st, watcher, &Self::exit_message(tag, tid));
        }
        let released = st.groups.take_ready_barriers();
        for (members, code) in released {
            for m in members {
                self.tell(&st, m, &Frame::Status { code, list: vec![] });
            }
        }
        if st.tasks.is_empty() {
            st.idle_since = Instant::now();
        }
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
                self.tell(&st, tid, &reply);
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
        let writer = pipe(rd.try_clone().ok()?);
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
            let tid = Self::new_tid(&mut st, self.host_tid).ok()?;
            let t = TaskRecord {
                siblings: vec![tid],
                enrolled: true,
                ..TaskRecord::new(NO_PARENT, pid, name, self.host_tid)
            };
            st.tasks.insert(tid, t);
            tid
        };
        st.writers.insert(tid, writer);
        let t = &st.tasks[&tid];
        let welcome = Frame::Welcome { tid, ptid: t.ptid, siblings: t.siblings.clone() };
        if let Some(up) = &st.up {
            send(up, &Frame::Enrolled { tid, ptid: t.ptid, pid, name: t.name.clone() });
        }
        self.tell(&st, tid, &welcome);
        Some(tid)
    }

    /// Answers one request of task `from`; `None` when the answer comes later (a barrier).
    fn request(self: &Arc<Self>, from: i32, f: Frame) -> Option<Frame> {
        let status = |r: Result<i32, PvmError>| Frame::Status { code: r.unwrap_or_else(|e| e.code()), list: vec![] };
        if let Some(up) = &self.lock().up {
            // The first agent answers, through this one (`Relay`).
            send(up, &Frame::Request { from, frame: Box::new(f) });
            return None;
        }
        Some(match f {
            Frame::Spawn(req) => Frame::Spawned { tids: self.spawn(from, &req) },
            Frame::Kill { tid, sig } => status(self.kill(from, tid, sig)),
            Frame::Notify { what, tag, tids } => status(self.notify(from, what, tag, &tids)),
            Frame::Config => {
                let st = self.lock();
                let names = std::iter::once((HOST_TID, self.hostname.clone()))
                    .chain(st.hosts.iter().map(|h| (h.tid, h.name.clone())));
                let hosts = names
                    .map(|(tid, name)| HostEntry {
                        tid,
                        name,
                        arch: place::ARCH.into(),
                        speed: 1000,
                        dsig: 0x0040_8841,
                    })
                    .collect();
                Frame::ConfigIs { hosts }
            }
            Frame::HostClock { host, .. } => self.host_clock(host),
            Frame::AddHosts { names } => Frame::Status { code: 0, list: self.add_hosts(&names) },
            Frame::DelHosts { names } => Frame::Status { code: 0, list: self.del_hosts(&names) },
            Frame::Listening { addr } => {
                if let Some(t) = self.lock().tasks.get_mut(&from) {
                    t.addr = Some(addr);
                }
                return None;
            }
            Frame::Where { tid } => match self.lock().tasks.get(&tid).map(|t| t.addr.as_deref()) {
                Some(Some("")) => {
                    crate::state::say(format_args!("bbpvmd: t{tid:x}'s host offers no address to other hosts"));
                    status(Err(PvmError::NoTask))
                }
                Some(Some(addr)) => Frame::At { addr: addr.into() },
                // Still starting.
                Some(None) => status(Ok(2)),
                None => status(Err(PvmError::NoTask)),
            },
            Frame::Tasks { which } => {
                let st = self.lock();
                let tasks: Vec<TaskEntry> = st
                    .tasks
                    .iter()
                    .filter(|(&tid, t)| which == 0 || which == t.host || which == tid)
                    .map(|(&tid, t)| TaskEntry {
                        tid,
                        ptid: t.ptid,
                        host: t.host,
                        flag: if t.enrolled { 4 } else { 0 },
                        name: t.name.clone(),
                        pid: t.pid,
                    })
                    .collect();
                if tasks.is_empty() && which != 0 && place::is_task_tid(which) {
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
                    if tid != from && t.pid > 0 && t.host == self.host_tid {
                        // SAFETY: kill(2) on a pid we recorded; no memory involved.
                        unsafe { libc::kill(t.pid, libc::SIGTERM) };
                    }
                }
                for h in &st.hosts {
                    send(&h.pipe, &Frame::Halt);
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
                        self.tell(&st, m, &Frame::Status { code, list: vec![] });
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
        if (tid == from && sig == libc::SIGTERM) || !(0..65).contains(&sig) {
            return Err(PvmError::BadParam);
        }
        if let Some(h) = st.hosts.iter().find(|h| h.tid == t.host) {
            send(&h.pipe, &Frame::Kill { tid, sig });
            return Ok(0);
        }
        if t.pid <= 0 {
            return Err(PvmError::BadParam);
        }
        // SAFETY: kill(2) on a pid we recorded; no memory involved.
        unsafe { libc::kill(t.pid, sig) };
        Ok(0)
    }

    fn notify(&self, from: i32, what: i32, tag: i32, tids: &[i32]) -> Result<i32, PvmError> {
        const TASK_EXIT: i32 = 1;
        const HOST_DELETE: i32 = 2;
        const HOST_ADD: i32 = 3;
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
                        self.tell(&st, from, &Self::exit_message(tag, t));
                    }
                }
            }
            HOST_DELETE | HOST_ADD => self.host_notify(&mut st, from, what, tag, tids),
            // Routes come and go with hosts here: nothing to tell.
            4 | 5 => {}
            _ => return Err(PvmError::BadParam),
        }
        Ok(0)
    }
}

//! A virtual machine of several hosts, as pvmd's: `pvm_addhosts` (the console's `add`) has
//! the first agent start `bbpvmd --added` on the new host through a launcher command
//! (`BB_PVM_LAUNCHER`, a template as `bbrun --launcher`'s: `ssh` by default, `ip netns exec
//! {host}` in tests), whose stdin and stdout become the link between the two agents, as with
//! bbrun's remote agents. The first agent writes `Join` (the secret never goes on a command
//! line); the added one serves its own folder (`<first's folder>.<host>`) and answers `Joined`.
//!
//! The first agent keeps what the whole machine knows: every host's tasks, notifies, groups,
//! the message box. An added agent enrolls its tasks (`Enrolled`, `Gone`), starts the ones the
//! first reserved for it (`SpawnAt`, `Started`), signals them (`Kill`), and passes its tasks'
//! requests up (`Request`); answers and notifications come down (`Relay`). Messages between
//! tasks never pass through agents: tasks of different hosts connect over TCP (`tcp.rs`).
//! When the link ends (the host was deleted, its agent died, or the first agent left), the
//! first agent forgets the host's tasks (their watchers hear they exited) and tells the
//! `PvmHostDelete` watchers; the added agent ends its tasks and leaves.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::{pipe, send, Agent, Joining, Pipe, State, TaskRecord};
use crate::error::PvmError;
use crate::place::{self, HOST_TID, MAX_HOSTS};
use crate::wire::{Frame, FrameBuffer};

/// How long a new host's agent may take to answer (a slow login included), and a deleted
/// one to leave.
const JOIN_WAIT: Duration = Duration::from_secs(30);
const LEAVE_WAIT: Duration = Duration::from_secs(5);

const HOST_DELETE: i32 = 2;
const HOST_ADD: i32 = 3;
const CANCEL: i32 = 256;

/// An added host, as the first agent knows it.
pub(crate) struct HostLink {
    pub tid: i32,
    pub name: String,
    /// The launcher command's stdin: orders to the host's agent.
    pub pipe: Pipe,
    pid: u32,
}

/// A `pvm_notify` on hosts: `PvmHostDelete` of host `arg`, or `PvmHostAdd` `arg` more times
/// (-1: every time).
pub(crate) struct HostNotify {
    watcher: i32,
    tag: i32,
    what: i32,
    arg: i32,
}

/// The launcher command for `host`: `BB_PVM_LAUNCHER` (default `ssh`), `{host}` in a word
/// replaced by the host's name, else the name added as one more word.
fn launcher(host: &str) -> Vec<String> {
    let template = std::env::var("BB_PVM_LAUNCHER").unwrap_or_else(|_| "ssh".into());
    let mut words: Vec<String> = template.split_whitespace().map(|w| w.replace("{host}", host)).collect();
    if !template.contains("{host}") {
        words.push(host.into());
    }
    words
}

impl Agent {
    /// `pvm_addhosts`: each host's tid, or an error code in its place.
    pub(super) fn add_hosts(self: &Arc<Self>, names: &[String]) -> Vec<i32> {
        names.iter().map(|n| self.add_host(n).unwrap_or_else(|e| e.code())).collect()
    }

    fn add_host(self: &Arc<Self>, name: &str) -> Result<i32, PvmError> {
        let host_tid = {
            let st = self.lock();
            if name.is_empty() || name.contains('/') {
                return Err(PvmError::BadParam);
            }
            if [self.hostname.as_str(), "localhost"].contains(&name) || st.hosts.iter().any(|h| h.name == name) {
                return Err(PvmError::DupHost);
            }
            let n = (2..=MAX_HOSTS).find(|&n| !st.hosts.iter().any(|h| h.tid == n << 18)).ok_or(PvmError::OutOfRes)?;
            n << 18
        };
        let words = launcher(name);
        let exe = std::env::current_exe().map_err(|_| PvmError::CantStart)?;
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .arg(exe)
            .arg("--added")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                crate::state::say(format_args!("bbpvmd: cannot run {words:?} to add host {name}: {e}"));
                PvmError::CantStart
            })?;
        let (mut to, from) = (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"));
        let dir = format!("{}.{name}", self.dir.display());
        let join = Frame::Join { secret: self.secret.clone(), host_tid, name: name.into(), dir };
        let (tell_joined, joined) = mpsc::channel();
        if place::write_frame(&mut to, &join).is_ok() {
            let me = Arc::clone(self);
            let link = HostLink { tid: host_tid, name: name.into(), pipe: pipe(to), pid: child.id() };
            std::thread::spawn(move || {
                me.read_added(link, from, tell_joined);
                let _ = child.wait();
            });
        } else {
            let _ = child.kill();
            let _ = child.wait();
        }
        joined.recv_timeout(JOIN_WAIT).unwrap_or(Err(PvmError::CantStart))
    }

    /// The first agent's end of a link: the `Joined`, then what the added agent says until
    /// the link ends.
    fn read_added(
        self: &Arc<Self>,
        link: HostLink,
        mut from: impl std::io::Read,
        joined: mpsc::Sender<Result<i32, PvmError>>,
    ) {
        let mut fb = FrameBuffer::default();
        let host = link.tid;
        if !matches!(place::read_frame(&mut from, &mut fb), Ok(Some(Frame::Joined { .. }))) {
            let _ = joined.send(Err(PvmError::CantStart));
            // SAFETY: kill(2) on the launcher command we started (waited for by our caller).
            unsafe { libc::kill(link.pid as i32, libc::SIGKILL) };
            return;
        }
        {
            let mut st = self.lock();
            st.hosts.push(link);
            let _ = joined.send(Ok(host));
            // PvmHostAdd's message: a count, then the new hosts' tids.
            let mut data = 1i32.to_be_bytes().to_vec();
            data.extend(host.to_be_bytes());
            let fire: Vec<(i32, i32)> =
                st.host_notifies.iter().filter(|n| n.what == HOST_ADD).map(|n| (n.watcher, n.tag)).collect();
            for n in st.host_notifies.iter_mut().filter(|n| n.what == HOST_ADD) {
                n.arg -= i32::from(n.arg > 0);
            }
            st.host_notifies.retain(|n| n.what != HOST_ADD || n.arg != 0);
            for (watcher, tag) in fire {
                let f = Frame::Message { src: HOST_TID, tag, ctx: 0, enc: 0, data: data.clone() };
                self.tell(&st, watcher, &f);
            }
        }
        while let Ok(Some(f)) = place::read_frame(&mut from, &mut fb) {
            self.from_added(host, f);
        }
        self.host_lost(host);
    }

    /// One frame from added host `host`'s agent.
    fn from_added(self: &Arc<Self>, host: i32, f: Frame) {
        match f {
            Frame::Enrolled { tid, ptid, pid, name } if place::host_of(tid) == host => {
                let mut st = self.lock();
                let t = st
                    .tasks
                    .entry(tid)
                    .or_insert_with(|| TaskRecord { siblings: vec![tid], ..TaskRecord::new(ptid, pid, name, host) });
                t.enrolled = true;
                t.pid = pid;
            }
            Frame::Gone { tid } if place::host_of(tid) == host => self.task_gone(tid),
            Frame::Relay { tid, frame } => {
                let st = self.lock();
                self.tell(&st, tid, &frame);
            }
            // Answered on a thread of its own: a spawn waits for another host's answer.
            Frame::Request { from, frame } if place::host_of(from) == host => {
                let me = Arc::clone(self);
                std::thread::spawn(move || {
                    if let Some(reply) = me.request(from, *frame) {
                        let st = me.lock();
                        me.tell(&st, from, &reply);
                    }
                });
            }
            Frame::ClockIs { id, micros } => {
                if let Some((_, w)) = self.lock().clocks_waiting.remove(&id) {
                    let _ = w.send(micros);
                }
            }
            Frame::Started { id, tids } => {
                if let Some(w) = self.lock().spawns_waiting.remove(&id) {
                    let _ = w.send(tids);
                }
            }
            // What an agent must not say: ignored.
            _ => {}
        }
    }

    /// Host `host`'s link ended: its tasks are gone, and its `PvmHostDelete` watchers hear.
    fn host_lost(&self, host: i32) {
        let tids: Vec<i32> = {
            let mut st = self.lock();
            st.hosts.retain(|h| h.tid != host);
            // Its clock's askers hear `PvmNoHost`.
            st.clocks_waiting.retain(|_, (h, _)| *h != host);
            st.tasks.iter().filter(|(_, t)| t.host == host).map(|(&tid, _)| tid).collect()
        };
        for tid in tids {
            self.task_gone(tid);
        }
        let mut st = self.lock();
        let fire: Vec<(i32, i32)> = st
            .host_notifies
            .iter()
            .filter(|n| n.what == HOST_DELETE && n.arg == host)
            .map(|n| (n.watcher, n.tag))
            .collect();
        st.host_notifies.retain(|n| !(n.what == HOST_DELETE && n.arg == host));
        for (watcher, tag) in fire {
            self.tell(&st, watcher, &Self::exit_message(tag, host));
        }
        if st.tasks.is_empty() {
            st.idle_since = Instant::now();
        }
    }

    /// `pvm_hostsync`: the time of day on the host of tid `host`, read by that host's agent
    /// (pvmd's `DM_HOSTSYNC`); `PvmNoHost` for a host not in the machine.
    pub(super) fn host_clock(&self, host: i32) -> Frame {
        let no_host = Frame::Status { code: PvmError::NoHost.code(), list: vec![] };
        let host = place::host_of(host);
        if host == HOST_TID {
            return Frame::ClockIs { id: 0, micros: now_micros() };
        }
        let (tell, told) = mpsc::channel();
        let id = {
            let mut st = self.lock();
            let Some(pipe) = st.hosts.iter().find(|h| h.tid == host).map(|h| h.pipe.clone()) else { return no_host };
            let id = st.next_id;
            st.next_id = st.next_id.wrapping_add(1);
            st.clocks_waiting.insert(id, (host, tell));
            send(&pipe, &Frame::HostClock { host, id });
            id
        };
        match told.recv_timeout(JOIN_WAIT) {
            Ok(micros) => Frame::ClockIs { id: 0, micros },
            Err(_) => {
                self.lock().clocks_waiting.remove(&id);
                no_host
            }
        }
    }

    /// `pvm_delhosts`: each host is told to leave; 0 once it has, or an error code.
    pub(super) fn del_hosts(&self, names: &[String]) -> Vec<i32> {
        names
            .iter()
            .map(|name| {
                let Some(host) = self.lock().hosts.iter().find(|h| &h.name == name).map(|h| (h.tid, h.pipe.clone()))
                else {
                    return PvmError::NoHost.code();
                };
                send(&host.1, &Frame::Halt);
                let deadline = Instant::now() + LEAVE_WAIT;
                while self.lock().hosts.iter().any(|h| h.tid == host.0) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                0
            })
            .collect()
    }

    /// `pvm_notify(PvmHostDelete / PvmHostAdd)`, with `PvmNotifyCancel`.
    pub(super) fn host_notify(&self, st: &mut State, from: i32, what: i32, tag: i32, tids: &[i32]) {
        let kind = what & !CANCEL;
        if kind == HOST_ADD {
            // A new count replaces the one in force (PVM's manual).
            st.host_notifies.retain(|n| !(n.watcher == from && n.what == HOST_ADD && n.tag == tag));
            let count = tids.first().copied().unwrap_or(-1);
            if what & CANCEL == 0 && count != 0 {
                st.host_notifies.push(HostNotify { watcher: from, tag, what: kind, arg: count });
            }
            return;
        }
        if what & CANCEL != 0 {
            st.host_notifies
                .retain(|n| !(n.watcher == from && n.what == kind && n.tag == tag && tids.contains(&n.arg)));
            return;
        }
        for &h in tids {
            if h == HOST_TID || st.hosts.iter().any(|l| l.tid == h) {
                st.host_notifies.push(HostNotify { watcher: from, tag, what: kind, arg: h });
            } else {
                // Not (or no longer) in the machine: told at once, as pvmd does.
                self.tell(st, from, &Self::exit_message(tag, h));
            }
        }
    }
}

/// The first agent leaving: every added host is told to leave, and given a moment to.
pub(super) fn let_hosts_go(agent: &Arc<Agent>) {
    for h in &agent.lock().hosts {
        send(&h.pipe, &Frame::Halt);
    }
    let deadline = Instant::now() + LEAVE_WAIT;
    while !agent.lock().hosts.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `bbpvmd --added`: an added host's agent. It reads its `Join` on stdin, then serves the
/// folder named there.
pub fn run_added() -> std::io::Result<()> {
    let mut frames = FrameBuffer::default();
    let Some(Frame::Join { secret, host_tid, name: _, dir }) =
        place::read_frame(&mut std::io::stdin().lock(), &mut frames)?
    else {
        return Err(std::io::Error::other("expected the first agent's Join on stdin"));
    };
    if host_tid <= HOST_TID || place::host_of(host_tid) != host_tid {
        return Err(std::io::Error::other(format!("host tid {host_tid:#x} in Join")));
    }
    super::life::serve_folder(Path::new(&dir), Some(Joining { secret, host_tid, frames }))
}

/// An added agent's end of the link: `Joined`, then a thread that carries out the first
/// agent's orders until the link ends, which halts this host.
pub(super) fn serve_first(agent: &Arc<Agent>, mut frames: FrameBuffer) {
    let up = agent.lock().up.clone().expect("an added agent");
    send(&up, &Frame::Joined { pid: std::process::id() as i32 });
    let a = Arc::clone(agent);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        while let Ok(Some(f)) = place::read_frame(&mut input, &mut frames) {
            match f {
                Frame::Relay { tid, frame } => {
                    let st = a.lock();
                    if let Some(w) = st.writers.get(&tid) {
                        send(w, &frame);
                    }
                }
                Frame::SpawnAt { id, from, catch, tids, req } => {
                    let (a, up) = (Arc::clone(&a), up.clone());
                    std::thread::spawn(move || {
                        let tids = a.spawn_here(from, catch, &tids, &req);
                        send(&up, &Frame::Started { id, tids });
                    });
                }
                Frame::HostClock { id, .. } => send(&up, &Frame::ClockIs { id, micros: now_micros() }),
                Frame::Kill { tid, sig } => {
                    if let Some(t) = a.lock().tasks.get(&tid).filter(|t| t.pid > 0) {
                        // SAFETY: kill(2) on a pid we recorded.
                        unsafe { libc::kill(t.pid, sig) };
                    }
                }
                Frame::Halt => break,
                _ => {}
            }
        }
        let mut st = a.lock();
        st.halting = true;
        for t in st.tasks.values().filter(|t| t.pid > 0) {
            // SAFETY: kill(2) on a pid we recorded.
            unsafe { libc::kill(t.pid, libc::SIGTERM) };
        }
        let _ = std::io::stderr().flush();
    });
}

/// This host's time of day, in microseconds since the epoch.
pub fn now_micros() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

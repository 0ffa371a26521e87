//! The host agent's spawning (`agent.rs`): placing `pvm_spawn`'s children on the machine's
//! hosts, starting this host's with their tids and environment, waiting for each, and forwarding its output: as messages to the task the
//! spawner named (`PvmOutputTid`, as pvmd sends them: Debian's console prints them), else to
//! the parent that catches it (`pvm_catchout`), else to the agent's log.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};

use super::{send, Agent, TaskRecord};
use crate::error::PvmError;
use crate::place;
use crate::wire::{Frame, SpawnRequest, OUTPUT_BEGIN, OUTPUT_EOF, OUTPUT_LINE};

impl Agent {
    /// Starts `req.count` copies of `req.file`, each on the host its placement names (here,
    /// or through that host's agent); each slot holds a tid or an error code.
    pub(super) fn spawn(self: &Arc<Self>, from: i32, req: &SpawnRequest) -> Vec<i32> {
        let n = usize::try_from(req.count).unwrap_or(0);
        let hosts = match self.placement(req, n) {
            Ok(h) => h,
            Err(e) => return vec![e.code(); n],
        };
        let here = self.host_tid;
        let exe = match hosts.contains(&here).then(|| find_program(&req.file, &req.path, &req.cwd)) {
            Some(None) => return vec![PvmError::NoFile.code(); n],
            Some(exe) => exe,
            None => None,
        };
        // Every tid is reserved, with the whole sibling list, before the first child runs:
        // a child that enrolls at once must already see all its siblings (spmd hung when the
        // first one saw only itself).
        let (tids, sink, waiting) = {
            let mut st = self.lock();
            let tids: Vec<i32> =
                hosts.iter().map(|&h| Self::new_tid(&mut st, h).unwrap_or_else(|e| e.code())).collect();
            let siblings: Vec<i32> = tids.iter().copied().filter(|&t| t > 0).collect();
            for (&t, &h) in tids.iter().zip(&hosts).filter(|(&t, _)| t > 0) {
                // A placeholder until its fork: pid 0, not enrolled.
                let rec = TaskRecord {
                    siblings: siblings.clone(),
                    spawned: true,
                    ..TaskRecord::new(from, 0, req.file.clone(), h)
                };
                st.tasks.insert(t, rec);
            }
            let catching = st.catching.contains(&from);
            let sink = Sink::new(req.output, if catching { from } else { 0 });
            // Other hosts are asked first; they start theirs while this one starts its own.
            let links: Vec<_> =
                st.hosts.iter().filter(|l| hosts.contains(&l.tid)).map(|l| (l.tid, l.pipe.clone())).collect();
            let mut waiting = Vec::new();
            for (host, pipe) in links {
                let id = st.next_id;
                st.next_id = st.next_id.wrapping_add(1);
                let (tx, rx) = mpsc::channel();
                st.spawns_waiting.insert(id, tx);
                let catch = if catching { from } else { 0 };
                send(&pipe, &Frame::SpawnAt { id, from, catch, tids: tids.clone(), req: req.clone() });
                waiting.push((host, id, rx));
            }
            (tids, sink, waiting)
        };
        let mut out = tids.clone();
        for (slot, &tid) in out.iter_mut().zip(&tids).filter(|(_, &t)| t > 0 && place::host_of(t) == here) {
            let exe = exe.as_deref().expect("found above");
            *slot = self.start_one(tid, exe, req, sink).map_or_else(
                |e| {
                    self.lock().tasks.remove(&tid);
                    e.code()
                },
                |()| tid,
            );
        }
        for (host, id, rx) in waiting {
            let got = rx.recv_timeout(SPAWN_WAIT).ok();
            self.lock().spawns_waiting.remove(&id);
            let mut got = got.unwrap_or_default().into_iter();
            for (slot, &tid) in out.iter_mut().zip(&tids).filter(|(_, &t)| t > 0 && place::host_of(t) == host) {
                *slot = got.next().unwrap_or(PvmError::CantStart.code());
                if *slot < 0 {
                    self.lock().tasks.remove(&tid);
                }
            }
        }
        out
    }

    /// The host of each of `n` children: the one `PvmTaskHost` names, else pvmd's default, a
    /// round over the machine's hosts from where the last spawn stopped.
    fn placement(&self, req: &SpawnRequest, n: usize) -> Result<Vec<i32>, PvmError> {
        const TASK_HOST: i32 = 1;
        const TASK_ARCH: i32 = 2;
        let mut st = self.lock();
        if req.flags & TASK_HOST != 0 {
            let here = ["", ".", "localhost", self.hostname.as_str()].contains(&req.place.as_str());
            let host = match here {
                true => self.host_tid,
                false => st.hosts.iter().find(|h| h.name == req.place).ok_or(PvmError::NoHost)?.tid,
            };
            return Ok(vec![host; n]);
        }
        if req.flags & TASK_ARCH != 0 && req.place != place::ARCH {
            return Err(PvmError::NoHost);
        }
        let all: Vec<i32> = std::iter::once(self.host_tid).chain(st.hosts.iter().map(|h| h.tid)).collect();
        let first = st.next_host;
        st.next_host = (first + n) % all.len();
        Ok((0..n).map(|i| all[(first + i) % all.len()]).collect())
    }

    /// An added host's agent: starts the children of `tids` that the first agent placed here
    /// (`Frame::SpawnAt`); their tids, or error codes, in order.
    pub(super) fn spawn_here(self: &Arc<Self>, from: i32, catch: i32, tids: &[i32], req: &SpawnRequest) -> Vec<i32> {
        let mine: Vec<i32> = tids.iter().copied().filter(|&t| t > 0 && place::host_of(t) == self.host_tid).collect();
        let Some(exe) = find_program(&req.file, &req.path, &req.cwd) else {
            return vec![PvmError::NoFile.code(); mine.len()];
        };
        {
            let mut st = self.lock();
            let siblings: Vec<i32> = tids.iter().copied().filter(|&t| t > 0).collect();
            for &t in &mine {
                let rec = TaskRecord {
                    siblings: siblings.clone(),
                    spawned: true,
                    ..TaskRecord::new(from, 0, req.file.clone(), self.host_tid)
                };
                st.tasks.insert(t, rec);
            }
        }
        let sink = Sink::new(req.output, catch);
        mine.into_iter()
            .map(|tid| {
                self.start_one(tid, &exe, req, sink).map_or_else(
                    |e| {
                        self.lock().tasks.remove(&tid);
                        e.code()
                    },
                    |()| tid,
                )
            })
            .collect()
    }

    /// Starts the child for the reserved `tid`.
    fn start_one(self: &Arc<Self>, tid: i32, exe: &Path, req: &SpawnRequest, sink: Sink) -> Result<(), PvmError> {
        // The lock is held from the fork until the record holds the pid: a child that
        // enrolls at once waits for it.
        let mut st = self.lock();
        // stdout and stderr share one pipe, as under pvmd: what the child writes comes out in
        // the order it wrote it.
        let (output, into) = output_pipe().map_err(|_| PvmError::OutOfRes)?;
        let mut cmd = Command::new(exe);
        cmd.args(&req.argv)
            .current_dir(if req.cwd.is_empty() { "/" } else { &req.cwd })
            .env(place::TID_ENV, tid.to_string())
            .env(place::DIR_ENV, &self.dir)
            .env(place::OUTPUT_ENV, req.output.map(|v| v.to_string()).join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::from(into.try_clone().map_err(|_| PvmError::OutOfRes)?))
            .stderr(Stdio::from(into));
        for kv in &req.env {
            if let Some((k, v)) = kv.split_once('=') {
                cmd.env(k, v);
            }
        }
        // SAFETY: only async-signal-safe calls between fork and exec: the child leaves the
        // agent's session-less process group so a signal to the agent's group spares it.
        unsafe {
            cmd.pre_exec(|| {
                libc::setpgid(0, 0);
                Ok(())
            })
        };
        let mut child = cmd.spawn().map_err(|_| PvmError::NoFile)?;
        // Our copies of the pipe's writing end go with `cmd`, so that the reader sees the end
        // of the output when the child's close.
        drop(cmd);
        let pid = child.id() as i32;
        if let Some(rec) = st.tasks.get_mut(&tid) {
            rec.pid = pid;
        }
        drop(st);
        // Whoever takes the output hears where each child's begins, before its spawn returns,
        // and where it ends, once both its pipes are closed (as pvmd says BEGIN and EOF).
        self.tell_output(sink, tid, OUTPUT_BEGIN, &[]);
        let me = Arc::clone(self);
        let reader = std::thread::spawn(move || me.forward_output(tid, sink, std::fs::File::from(output)));
        let me = Arc::clone(self);
        std::thread::spawn(move || {
            let _ = child.wait();
            // All its output is forwarded before anyone hears it ended (a parent that
            // caught it waits for its children to end, then for nothing more).
            let _ = reader.join();
            me.tell_output(sink, tid, OUTPUT_EOF, &[]);
            me.task_gone(tid);
        });
        Ok(())
    }

    /// Hands `sink` a child's line of output (without its newline), or the start or end of
    /// it (`event`). Only the receiver's connection is held while writing (not the agent's
    /// state): a task that does not read for a while stalls only its children's output.
    /// False where the receiver is gone (a line then goes to the log).
    fn tell_output(&self, sink: Sink, tid: i32, event: i32, line: &[u8]) -> bool {
        let (to, f) = match sink {
            Sink::Log => return false,
            Sink::Catcher(parent) => (parent, Frame::Output { tid, event, text: line.to_vec() }),
            Sink::Messages { to, tag, ctx } => (to, output_message(tid, event, line, tag, ctx)),
        };
        let w = {
            let st = self.lock();
            match st.writers.get(&to) {
                Some(w) => w.clone(),
                // A task of another host: through the agents.
                None if place::is_task_tid(to) && place::host_of(to) != self.host_tid => {
                    self.tell(&st, to, &f);
                    return true;
                }
                None => return false,
            }
        };
        send(&w, &f);
        true
    }

    /// A child's output, line by line: to its sink, else to the agent's log (its stderr:
    /// `BB_PVM_LOG`, else nowhere), as pvmd writes it to its log.
    fn forward_output(&self, tid: i32, sink: Sink, out: std::fs::File) {
        let mut r = BufReader::new(out);
        let mut line = Vec::new();
        while r.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if !self.tell_output(sink, tid, OUTPUT_LINE, &line) {
                let mut e = std::io::stderr().lock();
                let _ = writeln!(e, "[t{tid:x}] {}", String::from_utf8_lossy(&line));
            }
            line.clear();
        }
    }
}

/// Where a spawned child's output goes.
#[derive(Clone, Copy)]
enum Sink {
    /// The agent's log.
    Log,
    /// The parent, which called `pvm_catchout` (`Frame::Output`, printed by its library).
    Catcher(i32),
    /// Messages to task `to` with `tag` in context `ctx`, as pvmd sends them.
    Messages { to: i32, tag: i32, ctx: i32 },
}

impl Sink {
    /// Messages where the spawner set `PvmOutputTid` (`output`), else the parent that
    /// catches output (`catcher`, 0: none), else the log.
    fn new(output: [i32; 3], catcher: i32) -> Sink {
        match (output, catcher) {
            ([to, tag, ctx], _) if to != 0 => Sink::Messages { to, tag, ctx },
            (_, c) if c != 0 => Sink::Catcher(c),
            _ => Sink::Log,
        }
    }
}

/// How long a spawn waits for another host's agent to start its share.
const SPAWN_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// pvmd's output message (Debian's `pvmclaimo` reads it), in PVM's default encoding: the
/// child's tid, then a byte count and the bytes (a line with its newline), or an event in
/// the count: -1 the task was spawned, 0 its output ended.
fn output_message(tid: i32, event: i32, line: &[u8], tag: i32, ctx: i32) -> Frame {
    const TO_SPAWN: i32 = -1;
    const TO_EOF: i32 = 0;
    let mut data = tid.to_be_bytes().to_vec();
    match event {
        OUTPUT_BEGIN => data.extend(TO_SPAWN.to_be_bytes()),
        OUTPUT_EOF => data.extend(TO_EOF.to_be_bytes()),
        _ => {
            data.extend((line.len() as i32 + 1).to_be_bytes());
            data.extend(line);
            data.push(b'\n');
            // XDR pads a run of bytes to a multiple of 4.
            data.resize(data.len().next_multiple_of(4), 0);
        }
    }
    Frame::Message { src: place::HOST_TID, tag, ctx, enc: 0, data }
}

/// A pipe for a child's output: (reading end, writing end), both closed on exec.
fn output_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Finds `file` as pvmd does: a path with a slash as given (relative to the spawner's
/// folder), else the first executable of that name in `path`.
fn find_program(file: &str, path: &[String], cwd: &str) -> Option<PathBuf> {
    let executable =
        |p: &Path| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    if file.is_empty() {
        return None;
    }
    if file.contains('/') {
        let p = Path::new(cwd).join(file);
        return executable(&p).then_some(p);
    }
    path.iter().map(|d| Path::new(d).join(file)).find(|p| executable(p))
}

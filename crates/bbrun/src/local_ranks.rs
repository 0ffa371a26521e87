//! The ranks of a job on this host, as one unit: the launcher drives it for hosts it runs
//! itself, an agent for its own host. It starts the ranks, watches their PMI sockets, output
//! pipes and exits, and tells what happened as [`Report`]s, the very messages an agent sends
//! up, so the launcher handles ranks on every host alike.
//!
//! A rank's last words come before its exit: when a rank is reaped, its pending PMI lines and
//! output are read first, so an abort it sent just before exiting, or its last line, is
//! reported before [`Report::Exited`].

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::event::{PollFd, PollFlags};

use crate::rank::{PmiInput, Rank};
use crate::relay::{Exit, Report, Stream};
use crate::signals;
use crate::spawn::{spawn_rank, JobInfo};
use crate::stdin::Rank0Pipe;

/// What one poll entry of these ranks watches (`usize`: index among them).
#[derive(Clone, Copy, Debug)]
pub enum Watch {
    Pmi(usize),
    Stdout(usize),
    Stderr(usize),
    Rank0Stdin,
}

pub struct LocalRanks {
    ranks: Vec<Rank>,
    stdin: Rank0Pipe,
}

impl LocalRanks {
    /// Starts this host's ranks, a part per program (several in an MPMD job): world ranks
    /// `world` (in order) with `job` for each `(job, world)`, reporting each start. A rank that
    /// cannot start is reported as [`Report::Failed`] (code 127 when the program is not there,
    /// 126 when it cannot run, as a shell would) and no further rank is started.
    pub fn start(parts: &[(JobInfo<'_>, Vec<usize>)], out: &mut Vec<Report>) -> LocalRanks {
        let mut ranks = LocalRanks::none();
        let mut local_base = 0;
        for (job, world) in parts {
            let members: Vec<(usize, usize)> = world.iter().map(|&r| (r, r)).collect();
            if !ranks.start_members(job, &members, local_base, out) {
                break;
            }
            local_base += world.len();
        }
        let stdin = ranks.ranks.iter_mut().find(|r| r.world == 0).and_then(Rank::take_stdin);
        ranks.stdin = Rank0Pipe::new(stdin);
        ranks
    }

    /// Starts more processes here: `members` are (the launcher's member number, rank in
    /// `job`), the first `local_base`th of `job` on this host; a spawn's children come this way.
    /// Whether all started (else the first that did not is reported, and the rest not tried).
    pub fn start_members(
        &mut self,
        job: &JobInfo<'_>,
        members: &[(usize, usize)],
        local_base: usize,
        out: &mut Vec<Report>,
    ) -> bool {
        for (i, &(member, rank)) in members.iter().enumerate() {
            let local = local_base + i;
            let started = spawn_rank(job, rank, local).and_then(|s| {
                let pid = s.child.id() as i32;
                // A rank we cannot watch must not run unwatched.
                Rank::new(member, s).inspect_err(|_| signals::kill_group(pid, libc::SIGKILL))
            });
            match started {
                Ok(r) => {
                    out.push(Report::Started { rank: member, pid: r.pid as u32 });
                    self.ranks.push(r);
                }
                Err(e) => {
                    let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
                    let message = format!(
                        "cannot start rank {rank} ('{}'): {e}{}",
                        job.program.display(),
                        out_of_descriptors(&e)
                    );
                    if job.spawned {
                        never_started(&members[i..], message, code, out);
                    } else {
                        out.push(Report::Failed { code, message });
                    }
                    return false;
                }
            }
        }
        true
    }

    /// No ranks: what an agent holds before its job is set up, or when it could not start it.
    pub fn none() -> LocalRanks {
        LocalRanks { ranks: Vec::new(), stdin: Rank0Pipe::new(None) }
    }

    /// Appends what to poll; `read_output`: false holds output back (the reader is behind).
    pub fn watch<'a>(&'a self, read_output: bool, fds: &mut Vec<PollFd<'a>>, watches: &mut Vec<Watch>) {
        let readable = PollFlags::IN;
        if let Some(fd) = self.stdin.waiting() {
            fds.push(PollFd::from_borrowed_fd(fd, PollFlags::OUT));
            watches.push(Watch::Rank0Stdin);
        }
        for (i, rank) in self.ranks.iter().enumerate() {
            if let Some(pmi) = &rank.pmi {
                let flags = if pmi.wants_write() { readable | PollFlags::OUT } else { readable };
                fds.push(PollFd::from_borrowed_fd(pmi.fd(), flags));
                watches.push(Watch::Pmi(i));
            }
            if !read_output {
                continue;
            }
            if let Some(s) = &rank.stdout {
                fds.push(PollFd::from_borrowed_fd(s.fd(), readable));
                watches.push(Watch::Stdout(i));
            }
            if let Some(s) = &rank.stderr {
                fds.push(PollFd::from_borrowed_fd(s.fd(), readable));
                watches.push(Watch::Stderr(i));
            }
        }
    }

    /// Handles a ready poll entry.
    pub fn on_ready(&mut self, watch: Watch, events: PollFlags, out: &mut Vec<Report>) {
        let hangup = events.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL);
        match watch {
            Watch::Pmi(i) => {
                if events.contains(PollFlags::OUT) {
                    self.flush_pmi(i);
                }
                if events.contains(PollFlags::IN) || hangup {
                    self.read_pmi(i, out);
                }
            }
            Watch::Stdout(i) => self.pump(i, Stream::Stdout, false, out),
            Watch::Stderr(i) => self.pump(i, Stream::Stderr, false, out),
            Watch::Rank0Stdin => {
                if self.stdin.on_writable() {
                    out.push(Report::StdinTaken);
                }
            }
        }
    }

    /// Reaps ranks that have exited (on SIGCHLD), each after its last words.
    pub fn reap(&mut self, out: &mut Vec<Report>) {
        for i in 0..self.ranks.len() {
            if let Some(status) = self.ranks[i].try_reap() {
                self.read_pmi(i, out);
                self.pump(i, Stream::Stdout, true, out);
                self.pump(i, Stream::Stderr, true, out);
                let rank = self.ranks[i].world;
                if rank == 0 {
                    self.stdin.close();
                }
                out.push(Report::Exited { rank, exit: exit_of(status) });
            }
        }
    }

    /// Sends PMI reply lines to world rank `rank`.
    pub fn send_pmi(&mut self, rank: usize, line: &str) {
        let Some(r) = self.ranks.iter_mut().find(|r| r.world == rank) else { return };
        if let Some(conn) = r.pmi.as_mut() {
            if conn.send(line).is_err() {
                r.pmi = None;
            }
        }
    }

    /// Input for rank 0, if it is here.
    pub fn stdin_data(&mut self, data: &[u8], out: &mut Vec<Report>) {
        if self.stdin.push(data) {
            out.push(Report::StdinTaken);
        }
    }

    pub fn stdin_end(&mut self) {
        self.stdin.close();
    }

    /// Signals every rank's process group, including ranks that exited (their children may
    /// remain in the group).
    pub fn signal_all(&self, sig: i32) {
        for rank in &self.ranks {
            signals::kill_group(rank.pid, sig);
        }
    }

    /// Signals the process groups of launcher members `members` that are here.
    pub fn signal_members(&self, members: &[usize], sig: i32) {
        for rank in self.ranks.iter().filter(|r| members.contains(&r.world)) {
            signals::kill_group(rank.pid, sig);
        }
    }

    pub fn any_running(&self) -> bool {
        self.ranks.iter().any(Rank::running)
    }

    /// Whether every output stream has ended.
    pub fn outputs_closed(&self) -> bool {
        self.ranks.iter().all(Rank::outputs_closed)
    }

    /// Gives up on output streams still open (a leftover process holds them), ending them.
    pub fn close_outputs(&mut self, out: &mut Vec<Report>) {
        for r in &mut self.ranks {
            for (slot, stream) in [(&mut r.stdout, Stream::Stdout), (&mut r.stderr, Stream::Stderr)] {
                if slot.take().is_some() {
                    out.push(Report::OutputEnd { rank: r.world, stream });
                }
            }
        }
    }

    fn read_pmi(&mut self, i: usize, out: &mut Vec<Report>) {
        let r = &mut self.ranks[i];
        let Some(conn) = r.pmi.as_mut() else { return };
        match conn.read_lines() {
            Ok(Some(PmiInput::Lines(lines))) => {
                out.extend(lines.into_iter().map(|line| Report::Pmi { rank: r.world, line }));
            }
            Ok(Some(PmiInput::Overlong)) => {
                r.pmi = None;
                out.push(Report::PmiBroken { rank: r.world });
            }
            Ok(None) | Err(_) => r.pmi = None,
        }
    }

    fn flush_pmi(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        if let Some(conn) = r.pmi.as_mut() {
            if conn.flush().is_err() {
                r.pmi = None;
            }
        }
    }

    fn pump(&mut self, i: usize, stream: Stream, until_empty: bool, out: &mut Vec<Report>) {
        let r = &mut self.ranks[i];
        let slot = if stream == Stream::Stdout { &mut r.stdout } else { &mut r.stderr };
        let Some(pipe) = slot.as_mut() else { return };
        let mut data = Vec::new();
        let open = pipe.pump(&mut data, until_empty);
        if !data.is_empty() {
            out.push(Report::Output { rank: r.world, stream, data });
        }
        if !open {
            *slot = None;
            out.push(Report::OutputEnd { rank: r.world, stream });
        }
    }
}

/// Descriptors this process holds per running rank: its PMI socket and its stdout and
/// stderr pipes (and rank 0's stdin).
const DESCRIPTORS_PER_RANK: usize = 3;

/// What to do when starting a rank ran out of file descriptors: ours (EMFILE, the limit
/// `ulimit -n` sets) or the system's (ENFILE).
fn out_of_descriptors(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EMFILE) => {
            let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
            let limit = limit.map_or_else(|| "unlimited".to_string(), |l| l.to_string());
            format!(
                "; this process holds {DESCRIPTORS_PER_RANK} descriptors per rank it starts and may open {limit} \
                 (ulimit -n): raise that limit or start fewer ranks per host"
            )
        }
        Some(libc::ENFILE) => "; the system's table of open files is full".to_string(),
        _ => String::new(),
    }
}

fn exit_of(status: ExitStatus) -> Exit {
    match status.signal() {
        Some(sig) => Exit::Signal(sig),
        None => Exit::Code(status.code().unwrap_or(1)),
    }
}

/// Spawned members that could not start: unlike the job's own ranks this does not end the job
/// but fails their spawn (MPI_ERR_SPAWN in the parents), so each reports an exit (as a shell
/// would: 127 not found, 126 not runnable), the first with why on its stderr.
pub fn never_started(members: &[(usize, usize)], message: String, code: i32, out: &mut Vec<Report>) {
    for (k, &(member, _)) in members.iter().enumerate() {
        if k == 0 {
            let data = format!("bbrun: {message}\n").into_bytes();
            out.push(Report::Output { rank: member, stream: Stream::Stderr, data });
        }
        out.push(Report::Exited { rank: member, exit: Exit::Code(code) });
    }
}

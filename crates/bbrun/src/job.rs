//! Running one job on this host: start the ranks, then one `poll` loop serves PMI, forwards
//! output, stdin and signals, notices deaths, and tears the job down.
//!
//! Tear-down policy (as `mpiexec` users expect): the first rank that fails (non-zero exit,
//! killed by a signal, PMI abort, exit without PMI finalize while others run, or leaving a PMI
//! barrier the others wait in) is named in one
//! line on stderr; every rank's process group gets SIGTERM, then SIGKILL [`KILL_AFTER`] later,
//! so the job is gone within a second. bbrun exits with that rank's code (128 + signal for a
//! signal). When every rank has exited, whatever they left in their process groups is killed
//! and the job's `/dev/shm` segments are removed, so nothing outlives the job.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::pmi_server::{Event, PmiServer};
use crate::rank::{forward, PmiInput, Rank};
use crate::signals::{self, SignalFd};
use crate::spawn::{spawn_rank, JobInfo};
use crate::stdin::StdinForward;

/// Time between SIGTERM and SIGKILL when stopping a job: long enough for a rank to flush and
/// exit on SIGTERM, short enough that the whole job is gone well within one second.
const KILL_AFTER: Duration = Duration::from_millis(300);

/// After the last rank exited, how long to wait for its pipes to reach end-of-file (a process
/// that left the rank's process group may still hold them).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

pub struct Options {
    pub size: usize,
    pub tag_output: bool,
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// What one poll entry watches.
#[derive(Clone, Copy)]
enum Source {
    Signals,
    Stdin,
    Rank0Stdin,
    Pmi(usize),
    Stdout(usize),
    Stderr(usize),
}

struct Job {
    ranks: Vec<Rank>,
    server: PmiServer,
    signals: SignalFd,
    stdin: StdinForward,
    /// The exit code of the first failure; `None` while all is well.
    failure: Option<i32>,
    /// A signal we received and forwarded; the job ends with 128 + it.
    caught: Option<i32>,
    kill_at: Option<Instant>,
    drain_until: Option<Instant>,
    warned: Vec<String>,
}

/// Runs the job and returns bbrun's exit code.
pub fn run(opts: &Options, jobid: &str) -> i32 {
    let signals = match SignalFd::open() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bbrun: cannot set up signal handling: {e}");
            return 1;
        }
    };
    let info = JobInfo { program: &opts.program, args: &opts.args, size: opts.size, jobid };
    let mut ranks = Vec::with_capacity(opts.size);
    let mut start_error = None;
    for index in 0..opts.size {
        let started = spawn_rank(&info, index).and_then(|s| {
            let pid = s.child.id() as i32;
            // A rank we cannot watch must not run unwatched.
            Rank::new(index, s, opts.tag_output).inspect_err(|_| signals::kill_group(pid, libc::SIGKILL))
        });
        match started {
            Ok(rank) => ranks.push(rank),
            Err(e) => {
                // As a shell would: 127 when the program is not there, 126 when it cannot run.
                let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
                start_error = Some((format!("cannot start rank {index} ('{}'): {e}", opts.program.display()), code));
                break;
            }
        }
    }
    let stdin = ranks.first_mut().and_then(Rank::take_stdin);
    let mut job = Job {
        ranks,
        server: PmiServer::new(opts.size, format!("kvs_{jobid}")),
        signals,
        stdin: StdinForward::new(stdin),
        failure: None,
        caught: None,
        kill_at: None,
        drain_until: None,
        warned: Vec::new(),
    };
    if let Some((why, code)) = start_error {
        eprintln!("bbrun: {why}; stopping the job");
        job.failure = Some(code);
        job.stop(libc::SIGTERM);
    }
    job.event_loop();
    crate::shm::remove_job_segments(jobid);
    job.exit_code()
}

impl Job {
    fn exit_code(&self) -> i32 {
        match (self.caught, self.failure) {
            (Some(sig), _) => 128 + sig,
            (None, Some(code)) => code,
            (None, None) => 0,
        }
    }

    fn stopping(&self) -> bool {
        self.failure.is_some() || self.caught.is_some()
    }

    fn event_loop(&mut self) {
        loop {
            let now = Instant::now();
            if self.kill_at.is_some_and(|t| t <= now) {
                self.kill_at = None;
                self.signal_all(libc::SIGKILL);
            }
            self.flush_partial_lines(now);
            if self.ranks.iter().all(|r| !r.running()) {
                if self.drain_until.is_none() {
                    // Whatever the ranks started and left behind goes with them.
                    self.signal_all(libc::SIGKILL);
                    self.stdin.close();
                    self.drain_until = Some(now + DRAIN_AFTER_EXIT);
                }
                let drained = self.ranks.iter().all(Rank::outputs_closed);
                if drained || self.drain_until.is_some_and(|t| t <= now) {
                    return;
                }
            }
            self.wait_and_dispatch(now);
        }
    }

    /// One `poll` over everything, then handles what became ready.
    fn wait_and_dispatch(&mut self, now: Instant) {
        let stdin = std::io::stdin();
        let mut sources = Vec::new();
        let mut fds = Vec::new();
        let readable = PollFlags::IN;
        fds.push(PollFd::from_borrowed_fd(self.signals.as_fd(), readable));
        sources.push(Source::Signals);
        if self.stdin.wants_read() {
            fds.push(PollFd::from_borrowed_fd(stdin.as_fd(), readable));
            sources.push(Source::Stdin);
        }
        if let Some(fd) = self.stdin.pipe_waiting() {
            fds.push(PollFd::from_borrowed_fd(fd, PollFlags::OUT));
            sources.push(Source::Rank0Stdin);
        }
        for (i, rank) in self.ranks.iter().enumerate() {
            if let Some(pmi) = &rank.pmi {
                let flags = if pmi.wants_write() { readable | PollFlags::OUT } else { readable };
                fds.push(PollFd::from_borrowed_fd(pmi.fd(), flags));
                sources.push(Source::Pmi(i));
            }
            if let Some(s) = &rank.stdout {
                fds.push(PollFd::from_borrowed_fd(s.fd(), readable));
                sources.push(Source::Stdout(i));
            }
            if let Some(s) = &rank.stderr {
                fds.push(PollFd::from_borrowed_fd(s.fd(), readable));
                sources.push(Source::Stderr(i));
            }
        }
        let deadline = [self.kill_at, self.drain_until, self.next_partial_line_deadline()].into_iter().flatten().min();
        let timeout = deadline.map(|d| Timespec::try_from(d.saturating_duration_since(now)).unwrap_or_default());
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return,
            Err(e) => {
                eprintln!("bbrun: poll failed: {e}; stopping the job");
                self.failure.get_or_insert(1);
                self.stop(libc::SIGKILL);
                return;
            }
        }
        let ready: Vec<(Source, PollFlags)> = fds
            .iter()
            .zip(&sources)
            .filter(|(fd, _)| !fd.revents().is_empty())
            .map(|(fd, s)| (*s, fd.revents()))
            .collect();
        drop(fds);
        let now = Instant::now();
        for (source, events) in ready {
            let hangup = events.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL);
            match source {
                Source::Signals => self.on_signals(now),
                Source::Stdin => self.stdin.on_readable(events.contains(PollFlags::NVAL)),
                Source::Rank0Stdin => self.stdin.on_writable(),
                Source::Pmi(i) => {
                    if events.contains(PollFlags::OUT) {
                        self.flush_pmi(i);
                    }
                    if events.intersects(PollFlags::IN) || hangup {
                        self.on_pmi_readable(i);
                    }
                }
                Source::Stdout(i) => self.pump_output(i, false, now, false),
                Source::Stderr(i) => self.pump_output(i, true, now, false),
            }
        }
    }

    fn on_signals(&mut self, now: Instant) {
        for sig in self.signals.read_all() {
            if sig == libc::SIGCHLD {
                self.reap(now);
            } else if self.stopping() {
                // A second Ctrl-C, or one while a failed job is being stopped: the user wants
                // it over now.
                self.signal_all(libc::SIGKILL);
            } else {
                eprintln!("bbrun: caught {}; passing it to all ranks", signals::name(sig));
                self.caught = Some(sig);
                self.signal_all(sig);
                self.kill_at = Some(now + KILL_AFTER);
            }
        }
    }

    fn reap(&mut self, now: Instant) {
        for i in 0..self.ranks.len() {
            if let Some(status) = self.ranks[i].try_reap() {
                self.on_exit(i, status, now);
            }
        }
    }

    /// A rank's process ended. Its last output and PMI lines are taken first, so its own
    /// words (and an abort it sent just before exiting) come before our verdict.
    fn on_exit(&mut self, i: usize, status: ExitStatus, now: Instant) {
        self.on_pmi_readable(i);
        self.pump_output(i, false, now, true);
        self.pump_output(i, true, now, true);
        self.server.rank_exited(i);
        if i == 0 {
            self.stdin.close();
        }
        use std::os::unix::process::ExitStatusExt;
        let pid = self.ranks[i].pid;
        if let Some(sig) = status.signal() {
            let why = format!("rank {i} (pid {pid}) killed by signal {sig} ({})", signals::name(sig));
            self.fail(&why, 128 + sig);
        } else if let Some(code) = status.code().filter(|c| *c != 0) {
            // Peers of a rank that was killed may see its route break and give up before we
            // hear of the death itself: reap the others first, so the report names the cause.
            if !self.stopping() {
                self.reap(now);
            }
            self.fail(&format!("rank {i} (pid {pid}) exited with code {code}"), code);
        } else if self.server.mid_session(i) && self.ranks.iter().any(Rank::running) {
            // As Open MPI does: the others would wait for this rank in their next collective
            // forever. A rank that finalizes gets the ack before it can exit, so no race here.
            self.fail(&format!("rank {i} (pid {pid}) exited with code 0 without calling PMI finalize"), 1);
        } else {
            self.check_barrier();
        }
    }

    /// A barrier that waits for a rank which has exited can never complete.
    fn check_barrier(&mut self) {
        if let Some(r) = self.server.barrier_blocked_by() {
            let pid = self.ranks[r].pid;
            let why = format!("rank {r} (pid {pid}) exited without joining the PMI barrier the other ranks wait in");
            self.fail(&why, 1);
        }
    }

    fn on_pmi_readable(&mut self, i: usize) {
        let Some(conn) = self.ranks[i].pmi.as_mut() else { return };
        let lines = match conn.read_lines() {
            Ok(Some(PmiInput::Lines(lines))) => lines,
            Ok(Some(PmiInput::Overlong)) => {
                self.ranks[i].pmi = None;
                let pid = self.ranks[i].pid;
                return self.fail(&format!("rank {i} (pid {pid}) sent an overlong PMI line"), 1);
            }
            Ok(None) | Err(_) => {
                self.ranks[i].pmi = None;
                return;
            }
        };
        let mut events = Vec::new();
        for line in &lines {
            self.server.handle_line(i, line, &mut events);
        }
        for event in events {
            match event {
                Event::Reply { rank, line } => {
                    if let Some(conn) = self.ranks[rank].pmi.as_mut() {
                        if conn.send(&line).is_err() {
                            self.ranks[rank].pmi = None;
                        }
                    }
                }
                Event::Abort { rank, code, msg } => {
                    let pid = self.ranks[rank].pid;
                    let why = if msg.is_empty() { String::new() } else { format!(": {msg}") };
                    let exit = match code.rem_euclid(256) {
                        0 if code != 0 => 1,
                        c => c,
                    };
                    self.fail(&format!("rank {rank} (pid {pid}) called PMI abort with code {code}{why}"), exit);
                }
                Event::Malformed { rank, error } => {
                    let pid = self.ranks[rank].pid;
                    self.fail(&format!("rank {rank} (pid {pid}) broke the PMI protocol: {error}"), 1);
                }
                Event::Unsupported { rank, cmd } => {
                    if !self.warned.contains(&cmd) {
                        eprintln!("bbrun: warning: rank {rank} used PMI command '{cmd}', which bbrun does not support");
                        self.warned.push(cmd);
                    }
                }
            }
        }
        self.check_barrier();
    }

    fn flush_pmi(&mut self, i: usize) {
        if let Some(conn) = self.ranks[i].pmi.as_mut() {
            if conn.flush().is_err() {
                self.ranks[i].pmi = None;
            }
        }
    }

    fn pump_output(&mut self, i: usize, stderr: bool, now: Instant, until_empty: bool) {
        let rank = &mut self.ranks[i];
        let slot = if stderr { &mut rank.stderr } else { &mut rank.stdout };
        let Some(stream) = slot.as_mut() else { return };
        let mut out = Vec::new();
        let open = stream.pump(now, &mut out, until_empty);
        forward(stream.to_stderr, &out);
        if !open {
            *slot = None;
        }
    }

    fn next_partial_line_deadline(&self) -> Option<Instant> {
        let streams = self.ranks.iter().flat_map(|r| [&r.stdout, &r.stderr]).flatten();
        streams.filter_map(|s| s.lines.deadline()).min()
    }

    fn flush_partial_lines(&mut self, now: Instant) {
        for rank in &mut self.ranks {
            for stream in [&mut rank.stdout, &mut rank.stderr].into_iter().flatten() {
                let mut out = Vec::new();
                stream.lines.flush_due(now, &mut out);
                forward(stream.to_stderr, &out);
            }
        }
    }

    /// Records the first failure, says so once, and starts stopping the job.
    fn fail(&mut self, why: &str, code: i32) {
        if self.stopping() {
            return;
        }
        self.failure = Some(code);
        if self.ranks.iter().any(Rank::running) {
            eprintln!("bbrun: {why}; stopping the job");
        } else {
            eprintln!("bbrun: {why}");
        }
        self.stop(libc::SIGTERM);
    }

    fn stop(&mut self, sig: i32) {
        self.signal_all(sig);
        if sig != libc::SIGKILL {
            self.kill_at = Some(Instant::now() + KILL_AFTER);
        }
    }

    /// Signals every rank's process group, including ranks that exited (their children may
    /// remain in the group).
    fn signal_all(&self, sig: i32) {
        for rank in &self.ranks {
            signals::kill_group(rank.pid, sig);
        }
    }
}

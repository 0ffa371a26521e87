//! `bbrun --agent`: the host agent the launcher starts on each remote host (through `ssh` or a
//! `--launcher` template). It talks to the launcher only over its own stdin and stdout, in the
//! relay protocol (`relay.rs`): it reads the job's setup, starts this host's ranks, relays their
//! PMI lines up and the server's replies down, sends their output and exits up, and passes
//! signals and rank 0's input down.
//!
//! It never outlives the job, nor lets the ranks outlive it:
//! - `Stop` (the job is over): kill what is left of the ranks' process groups, send the last
//!   reports, remove this host's `/dev/shm` segments of the job, exit;
//! - the launcher gone (stdin at end of file, a broken stream, or SIGTERM/SIGHUP/SIGINT to the
//!   agent, which is how ssh and `PR_SET_PDEATHSIG` say so): SIGTERM to every rank, SIGKILL
//!   [`KILL_AFTER`] later, remove the segments, exit;
//! - the agent itself killed: its ranks die with it (`PR_SET_PDEATHSIG` in `spawn.rs`).

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::local_ranks::{LocalRanks, Watch};
use crate::pipes::{read_some, set_nonblocking, write_pending, Chunk, RawFd};
use crate::relay::{self, Decoder, Order, Report, Setup};
use crate::signals::SignalFd;
use crate::spawn::{find_program_in, JobInfo};

/// A part of the setup (`relay::Part`) as a rank's start takes it, its program found here.
struct Ready {
    ranks: Vec<usize>,
    program: PathBuf,
    args: Vec<OsString>,
    /// The setup's variables, then the part's own (which win).
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
}

impl Ready {
    /// Every part of `setup`, or why a program is not found here (with a shell's exit code).
    fn parts(setup: &Setup) -> Result<Vec<Ready>, (String, i32)> {
        let os = |b: &[u8]| OsString::from_vec(b.to_vec());
        let env = |vars: &[(Vec<u8>, Vec<u8>)]| vars.iter().map(|(k, v)| (os(k), os(v))).collect::<Vec<_>>();
        setup
            .parts
            .iter()
            .map(|part| {
                let mut vars = env(&setup.env);
                vars.extend(env(&part.env));
                let path = vars.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str());
                let program = PathBuf::from(os(&part.program));
                find_program_in(&program, path)?;
                Ok(Ready {
                    ranks: part.ranks.iter().map(|&r| r as usize).collect(),
                    program,
                    args: part.args.iter().map(|a| os(a)).collect(),
                    env: vars,
                    cwd: PathBuf::from(os(&part.cwd)),
                })
            })
            .collect()
    }

    fn info<'a>(&'a self, setup: &'a Setup, local_size: usize, spawned: bool) -> JobInfo<'a> {
        JobInfo {
            program: &self.program,
            args: &self.args,
            size: setup.size as usize,
            jobid: &setup.jobid,
            secret: &setup.secret,
            host: &setup.host,
            node_id: setup.node_id as usize,
            nnodes: setup.nnodes as usize,
            local_size,
            env: &self.env,
            // A folder that does not exist here: the ranks start where the agent is.
            cwd: Some(self.cwd.as_path()).filter(|d| d.is_dir()),
            spawned,
        }
    }
}

/// Time between SIGTERM and SIGKILL when the launcher is gone (as in `job.rs`).
const KILL_AFTER: Duration = Duration::from_millis(300);

/// After the ranks are gone, how long their pipes may stay open (held by leftover processes).
const DRAIN: Duration = Duration::from_millis(500);

/// Output waiting for the launcher beyond this holds the ranks' output back.
const OUTBOX_LIMIT: usize = 1 << 20;

/// How long the last reports may take to reach the launcher at the end.
const LAST_WORDS: Duration = Duration::from_secs(1);

struct Agent {
    signals: SignalFd,
    decoder: Decoder<Order>,
    /// Reports not yet written to stdout.
    outbox: Vec<u8>,
    ranks: LocalRanks,
    jobid: Option<String>,
    /// Jobs of spawns started here, whose segments go with the job's.
    spawned_jobs: Vec<String>,
    /// The launcher sent `Stop`.
    stopped: bool,
    /// The launcher is gone: nothing more comes in, nothing more goes out.
    orphaned: bool,
    kill_at: Option<Instant>,
    drain_until: Option<Instant>,
}

/// Runs the agent; returns its exit code.
pub fn main() -> i32 {
    let signals = match SignalFd::open() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bbrun agent: cannot set up signal handling: {e}");
            return 1;
        }
    };
    for fd in [io::stdin().as_fd(), io::stdout().as_fd()] {
        if let Err(e) = set_nonblocking(fd) {
            eprintln!("bbrun agent: cannot use stdin/stdout: {e}");
            return 1;
        }
    }
    let mut agent = Agent {
        signals,
        decoder: Decoder::default(),
        outbox: Vec::new(),
        ranks: LocalRanks::none(),
        jobid: None,
        spawned_jobs: Vec::new(),
        stopped: false,
        orphaned: false,
        kill_at: None,
        drain_until: None,
    };
    relay::start_stream(&mut agent.outbox);
    agent.run();
    for jobid in agent.spawned_jobs.iter().chain(&agent.jobid) {
        crate::shm::remove_job_segments(jobid);
    }
    agent.last_words();
    0
}

#[derive(Clone, Copy)]
enum Source {
    Signals,
    Orders,
    Reports,
    Ranks(Watch),
}

impl Agent {
    fn run(&mut self) {
        loop {
            let now = Instant::now();
            if self.kill_at.is_some_and(|t| t <= now) {
                self.kill_at = None;
                self.ranks.signal_all(libc::SIGKILL);
            }
            if (self.stopped || self.orphaned) && !self.ranks.any_running() {
                let until = *self.drain_until.get_or_insert_with(|| {
                    // Whatever the ranks started and left behind goes with them.
                    self.ranks.signal_all(libc::SIGKILL);
                    now + DRAIN
                });
                if self.ranks.outputs_closed() || until <= now {
                    let mut out = Vec::new();
                    self.ranks.close_outputs(&mut out);
                    self.report(out);
                    return;
                }
            }
            self.wait_and_dispatch(now);
        }
    }

    fn wait_and_dispatch(&mut self, now: Instant) {
        let (stdin, stdout) = (io::stdin(), io::stdout());
        let mut fds = vec![PollFd::from_borrowed_fd(self.signals.as_fd(), PollFlags::IN)];
        let mut sources = vec![Source::Signals];
        if !self.orphaned {
            fds.push(PollFd::from_borrowed_fd(stdin.as_fd(), PollFlags::IN));
            sources.push(Source::Orders);
            if !self.outbox.is_empty() {
                fds.push(PollFd::from_borrowed_fd(stdout.as_fd(), PollFlags::OUT));
                sources.push(Source::Reports);
            }
        }
        let mut watches = Vec::new();
        self.ranks.watch(self.outbox.len() < OUTBOX_LIMIT, &mut fds, &mut watches);
        sources.extend(watches.into_iter().map(Source::Ranks));
        let deadline = [self.kill_at, self.drain_until].into_iter().flatten().min();
        let timeout = deadline.map(|d| Timespec::try_from(d.saturating_duration_since(now)).unwrap_or_default());
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                eprintln!("bbrun agent: poll failed: {e}");
                return self.orphan();
            }
        }
        let ready = crate::pipes::ready(&fds, sources);
        drop(fds);
        let mut out = Vec::new();
        for (source, events) in ready {
            match source {
                Source::Signals => self.on_signals(&mut out),
                Source::Orders => self.read_orders(&mut out),
                Source::Reports => self.flush(),
                Source::Ranks(w) => self.ranks.on_ready(w, events, &mut out),
            }
        }
        self.report(out);
    }

    fn on_signals(&mut self, out: &mut Vec<Report>) {
        for sig in self.signals.read_all() {
            if sig == libc::SIGCHLD {
                self.ranks.reap(out);
            } else {
                // ssh hangs up, or the launcher's PR_SET_PDEATHSIG: the launcher is gone.
                self.orphan();
            }
        }
    }

    fn read_orders(&mut self, out: &mut Vec<Report>) {
        match read_some(&mut RawFd(io::stdin().as_fd())) {
            Chunk::Data(bytes) => self.decoder.push(&bytes),
            Chunk::Empty => return,
            Chunk::End => return self.orphan(),
        }
        loop {
            match self.decoder.next() {
                Ok(Some(order)) => self.obey(order, out),
                Ok(None) => return,
                Err(e) => {
                    eprintln!("bbrun agent: the launcher's stream is broken: {e}");
                    return self.orphan();
                }
            }
        }
    }

    fn obey(&mut self, order: Order, out: &mut Vec<Report>) {
        match order {
            Order::Setup(setup) if self.jobid.is_none() => self.start(&setup, out),
            Order::Setup(_) => {}
            Order::Spawn { first, local_base, local_size, setup } => {
                self.spawn(&setup, first as usize, local_base as usize, local_size as usize, out)
            }
            Order::PmiReply { rank, line } => self.ranks.send_pmi(rank, &line),
            Order::Stdin(data) => self.ranks.stdin_data(&data, out),
            Order::StdinEnd => self.ranks.stdin_end(),
            Order::Signal(sig) => self.ranks.signal_all(sig),
            Order::Kill { ranks } => {
                let ranks: Vec<usize> = ranks.iter().map(|&r| r as usize).collect();
                self.ranks.signal_members(&ranks, libc::SIGKILL)
            }
            Order::Stop => {
                self.stopped = true;
                self.ranks.signal_all(libc::SIGKILL);
            }
            Order::Check { id, program, path, wdir } => {
                out.push(Report::Checked { id, error: check(&program, &path, &wdir) })
            }
        }
    }

    fn start(&mut self, setup: &Setup, out: &mut Vec<Report>) {
        self.jobid = Some(setup.jobid.clone());
        let parts = match Ready::parts(setup) {
            Ok(parts) => parts,
            Err((message, code)) => return out.push(Report::Failed { code, message }),
        };
        let infos: Vec<_> = parts.iter().map(|p| (p.info(setup, setup.processes(), false), p.ranks.clone())).collect();
        self.ranks = LocalRanks::start(&infos, out);
    }

    /// Starts processes of a spawn: members `first + rank` (see [`Order::Spawn`]).
    fn spawn(&mut self, setup: &Setup, first: usize, local_base: usize, local_size: usize, out: &mut Vec<Report>) {
        self.spawned_jobs.push(setup.jobid.clone());
        let parts = match Ready::parts(setup) {
            Ok(parts) => parts,
            // A spawn's program not found here fails the spawn, not the job.
            Err((message, code)) => {
                let members: Vec<(usize, usize)> = setup
                    .parts
                    .iter()
                    .flat_map(|p| p.ranks.iter())
                    .map(|&r| (first + r as usize, r as usize))
                    .collect();
                return crate::local_ranks::never_started(&members, message, code, out);
            }
        };
        let mut base = local_base;
        for part in &parts {
            let members: Vec<(usize, usize)> = part.ranks.iter().map(|&r| (first + r, r)).collect();
            if !self.ranks.start_members(&part.info(setup, local_size, true), &members, base, out) {
                return;
            }
            base += members.len();
        }
    }

    /// The launcher is gone: stop the ranks (SIGTERM, then SIGKILL) and end.
    fn orphan(&mut self) {
        if !self.orphaned {
            self.orphaned = true;
            self.outbox.clear();
            self.ranks.signal_all(libc::SIGTERM);
            self.kill_at = Some(Instant::now() + KILL_AFTER);
        }
    }

    fn report(&mut self, reports: Vec<Report>) {
        if self.orphaned {
            return;
        }
        for r in &reports {
            relay::encode(r, &mut self.outbox);
        }
        self.flush();
    }

    fn flush(&mut self) {
        if write_pending(&mut RawFd(io::stdout().as_fd()), &mut self.outbox).is_err() {
            self.orphan();
        }
    }

    /// Writes the last reports, waiting a little for the launcher to take them.
    fn last_words(&mut self) {
        let until = Instant::now() + LAST_WORDS;
        while !self.orphaned && !self.outbox.is_empty() && Instant::now() < until {
            self.flush();
            let stdout = io::stdout();
            let mut fds = [PollFd::from_borrowed_fd(stdout.as_fd(), PollFlags::OUT)];
            let _ = poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 50_000_000 }));
        }
    }
}

/// Why `program` cannot run on this host for a spawn ([`Order::Check`]; empty: it can): found
/// through `path`, in `wdir` when one is given (a relative name with a slash lies there), as the
/// launcher checks a command on its own host.
fn check(program: &[u8], path: &[u8], wdir: &[u8]) -> String {
    let os = |b: &[u8]| OsString::from_vec(b.to_vec());
    let name = String::from_utf8_lossy(program);
    let mut program = PathBuf::from(os(program));
    if !wdir.is_empty() {
        let dir = PathBuf::from(os(wdir));
        if !dir.is_dir() {
            return format!("cannot start '{name}': its working directory {} is not a directory", dir.display());
        }
        if name.contains('/') && program.is_relative() {
            program = dir.join(program);
        }
    }
    let path = os(path);
    match find_program_in(&program, Some(path.as_os_str()).filter(|p| !p.is_empty())) {
        Ok(_) => String::new(),
        Err((why, _)) => why,
    }
}

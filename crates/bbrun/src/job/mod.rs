//! Running one job: start the ranks on every host (this machine's ourselves, the others' through
//! an agent each), then one `poll` loop serves PMI, forwards output, stdin and signals, notices
//! deaths, and tears the job down. Ranks on every host report in the same [`Report`]s, so the
//! policy below does not care where a rank runs.
//!
//! Tear-down policy (as `mpiexec` users expect): the first rank that fails (non-zero exit,
//! killed by a signal, PMI abort, exit without PMI finalize while others run, or leaving a PMI
//! barrier the others wait in) is named in one line on stderr, with its host when the job has
//! more than this machine; every rank's process group gets SIGTERM, then SIGKILL [`KILL_AFTER`]
//! later, so the job is gone within a second. bbrun exits with that rank's code (128 + signal
//! for a signal). An agent that dies, or a launcher command that fails, ends the job the same
//! way, naming the host (exit code 1). When every rank has exited, whatever they left in their
//! process groups is killed, agents are told to stop (and clean their hosts up), and the job's
//! `/dev/shm` segments here are removed, so nothing outlives the job. A job that runs past
//! `MPIEXEC_TIMEOUT` is stopped the same way (`time_limit.rs`), with exit code 255 as Hydra.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::agent_link::{forwarded_env, AgentLink, GREETING_WAIT};
use crate::hosts::{process_mapping, Placement};
use crate::launcher::Launcher;
use crate::local_ranks::{LocalRanks, Watch};
use crate::output::LineSplitter;
use crate::pmi_server::{Event, PmiServer};
use crate::rank::forward;
use crate::relay::{Exit, Order, Part, Report, Setup, Stream};
use crate::signals::{self, SignalFd};
use crate::spawn::JobInfo;
use crate::stdin::StdinSource;

mod reports;
mod spawn;
mod start;
use spawn::universe_size;
pub mod time_limit;

/// Time between SIGTERM and SIGKILL when stopping a job: long enough for a rank to flush and
/// exit on SIGTERM, short enough that the whole job is gone well within one second.
const KILL_AFTER: Duration = Duration::from_millis(300);

/// After SIGKILL went to every rank, how long an agent may take to report its ranks' exits
/// before its connection is cut (which makes it, or its ranks, end anyway).
const AGENT_GRACE: Duration = Duration::from_millis(1000);

/// After the last rank exited, how long to wait for its pipes to reach end-of-file (a process
/// that left the rank's process group may still hold them).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// After `Stop`, how long agents may take to clean up and exit before they are killed.
const AGENT_STOP_WAIT: Duration = Duration::from_millis(1500);

pub struct Options {
    pub tag_output: bool,
    /// The programs, in rank order: one, or several in an MPMD job.
    pub apps: Vec<App>,
    pub placement: Placement,
    /// Per host: started by bbrun itself (this machine) rather than by an agent.
    pub local: Vec<bool>,
    pub launcher: Launcher,
    /// How long the job may run (`MPIEXEC_TIMEOUT`, [`time_limit`]).
    pub time_limit: Option<Duration>,
}

/// One program of the job and its ranks (MPMD: `bbrun -n 1 ./a : -n 2 ./b`, MPI_APPNUM 0 and 1).
#[derive(Debug)]
pub struct App {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Its own variables (`-env`), set over the launcher's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Where its ranks start (`-wdir`); `None`: where bbrun is.
    pub wdir: Option<PathBuf>,
    /// How many ranks run it: the world ranks after those of the apps before it.
    pub ranks: usize,
}

/// How bbrun reaches the ranks of one host.
enum Host {
    Local(LocalRanks),
    Remote(AgentLink),
    /// An agent that could not start or has ended.
    Down,
}

/// One rank as the launcher sees it, wherever it runs.
struct Member {
    host: usize,
    /// How messages name a spawned process (`rank 1 of spawned job 1 ('./child')`); `None`
    /// for the ranks bbrun started, named by their rank.
    label: Option<String>,
    pid: Option<u32>,
    exited: bool,
    stdout: LineSplitter,
    stderr: LineSplitter,
}

impl Member {
    /// Writes what the line splitters hold, ending an unfinished tagged line.
    fn finish_output(&mut self) {
        for (splitter, to_stderr) in [(&mut self.stdout, false), (&mut self.stderr, true)] {
            let mut out = Vec::new();
            splitter.finish(&mut out);
            forward(to_stderr, &out);
        }
    }
}

/// What one poll entry watches.
#[derive(Clone, Copy)]
enum Source {
    Signals,
    Stdin,
    Local(usize, Watch),
    FromAgent(usize),
    ToAgent(usize),
}

struct Job {
    server: PmiServer,
    hosts: Vec<Host>,
    names: Vec<String>,
    members: Vec<Member>,
    /// Name hosts in messages: the job is more than this machine.
    name_hosts: bool,
    signals: SignalFd,
    stdin: StdinSource,
    /// The exit code of the first failure; `None` while all is well.
    failure: Option<i32>,
    /// A signal we received and forwarded; the job ends with 128 + it.
    caught: Option<i32>,
    kill_at: Option<Instant>,
    give_up_at: Option<Instant>,
    /// A rank that exited with an error, blamed once [`BLAME_GRACE`] has passed without a
    /// likelier cause: (report, exit code, when).
    suspect: Option<(String, i32, Instant)>,
    /// Once every rank has exited: until when local pipes may drain, and agents may clean up.
    drain_until: Option<Instant>,
    agents_until: Option<Instant>,
    warned: Vec<String>,
    /// The job's time limit and when it runs out; `None` once it has been enforced.
    time_limit: Option<(Duration, Instant)>,
    /// What spawned processes inherit: the job's id and secret, the program's environment.
    jobid: String,
    secret: String,
    tag_output: bool,
    /// Spawns done so far (each names its processes' job `<jobid>c<n>`).
    spawns: usize,
    /// Spawns waiting for other hosts' agents to check their commands.
    pending_spawns: Vec<spawn::PendingSpawn>,
    /// Checks asked of agents so far (each answer names its check by this count).
    checks: u32,
}

/// How long a rank's error exit waits for a likelier cause (another rank's death, reported a
/// little later) before it is blamed and the job stopped.
const BLAME_GRACE: Duration = Duration::from_millis(300);

/// Runs the job and returns bbrun's exit code.
pub fn run(opts: &Options, jobid: &str) -> i32 {
    let signals = match SignalFd::open() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bbrun: cannot set up signal handling: {e}");
            return 1;
        }
    };
    let secret = match billboard::transport::tcp::handshake::Secret::generate() {
        Ok(s) => s.to_hex(),
        Err(e) => {
            eprintln!("bbrun: cannot make the job secret: {e}");
            return 1;
        }
    };
    let placement = &opts.placement;
    let size = placement.host_of.len();
    let sizes: Vec<usize> = opts.apps.iter().map(|a| a.ranks).collect();
    debug_assert_eq!(sizes.iter().sum::<usize>(), size);
    let mut server = PmiServer::new(&sizes, format!("kvs_{jobid}"));
    server.set_process_mapping(process_mapping(&placement.host_of));
    server.set_universe_size(universe_size(placement, &opts.local));
    let members = placement
        .host_of
        .iter()
        .enumerate()
        .map(|(rank, &host)| {
            let tag = opts.tag_output.then_some(rank);
            Member {
                host,
                label: None,
                pid: None,
                exited: false,
                stdout: LineSplitter::new(tag),
                stderr: LineSplitter::new(tag),
            }
        })
        .collect();
    let mut job = Job {
        server,
        hosts: placement.hosts.iter().map(|_| Host::Down).collect(),
        names: placement.hosts.clone(),
        members,
        name_hosts: placement.hosts.len() > 1 || opts.local.iter().any(|l| !l),
        signals,
        stdin: StdinSource::new(),
        failure: None,
        caught: None,
        kill_at: None,
        suspect: None,
        give_up_at: None,
        drain_until: None,
        agents_until: None,
        warned: Vec::new(),
        time_limit: opts.time_limit.map(|limit| (limit, Instant::now() + limit)),
        jobid: jobid.to_owned(),
        secret: secret.clone(),
        tag_output: opts.tag_output,
        spawns: 0,
        pending_spawns: Vec::new(),
        checks: 0,
    };
    job.start_hosts(opts, jobid, &secret);
    job.event_loop();
    job.finish();
    crate::shm::remove_job_segments(jobid);
    for n in 1..=job.spawns {
        crate::shm::remove_job_segments(&format!("{jobid}c{n}"));
    }
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
            self.on_timers(now);
            self.flush_partial_lines(now);
            if self.members.iter().all(|m| m.exited) && self.wound_up(now) {
                return;
            }
            self.wait_and_dispatch(now);
        }
    }

    fn on_timers(&mut self, now: Instant) {
        self.check_time_limit(now);
        if let Some((why, code, at)) = self.suspect.take() {
            if at > now && !self.members.iter().all(|m| m.exited) {
                self.suspect = Some((why, code, at));
            } else {
                self.fail(&why, code);
            }
        }
        if self.kill_at.is_some_and(|t| t <= now) {
            self.kill_at = None;
            self.signal_all(libc::SIGKILL);
            self.give_up_at = Some(now + AGENT_GRACE);
        }
        if self.give_up_at.is_some_and(|t| t <= now) {
            self.give_up_at = None;
            // An agent that has not reported its ranks gone by now is cut off: its ranks then
            // die with it (or with their host's agent, on stdin's end).
            for h in 0..self.hosts.len() {
                let waiting = self.members.iter().any(|m| m.host == h && !m.exited);
                if let (Host::Remote(link), true) = (&mut self.hosts[h], waiting) {
                    eprintln!(
                        "bbrun: the agent on host {} did not report its ranks' end; cutting it off",
                        self.names[h]
                    );
                    link.kill();
                }
            }
        }
        for h in 0..self.hosts.len() {
            let Host::Remote(link) = &self.hosts[h] else { continue };
            if link.gone(now) {
                self.on_agent_gone(h);
            } else if link.greeting_deadline().is_some_and(|t| t <= now) {
                let secs = GREETING_WAIT.get();
                let why = format!(
                    "the agent on host {} did not answer within {secs} s (`{}`): is the host reachable, and does it \
                     let us in without a password?",
                    self.names[h], link.command
                );
                self.cut_off(h, &why);
            }
        }
    }

    /// Every rank has exited: kill leftovers, stop the agents, and say whether the job is over
    /// (local pipes drained, agents gone, or their time is up).
    fn wound_up(&mut self, now: Instant) -> bool {
        if self.drain_until.is_none() {
            for host in &mut self.hosts {
                match host {
                    // Whatever the ranks started and left behind goes with them.
                    Host::Local(ranks) => ranks.signal_all(libc::SIGKILL),
                    Host::Remote(link) => link.send(&Order::Stop),
                    Host::Down => {}
                }
            }
            self.stdin.close();
            self.drain_until = Some(now + DRAIN_AFTER_EXIT);
            self.agents_until = Some(now + AGENT_STOP_WAIT);
        }
        let drained = self.hosts.iter().all(|h| !matches!(h, Host::Local(r) if !r.outputs_closed()));
        let agents_gone = self.hosts.iter().all(|h| !matches!(h, Host::Remote(_)));
        let past = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        (drained || past(self.drain_until)) && (agents_gone || past(self.agents_until))
    }

    /// After the loop: ends what is still open, so every line is out and no agent is left.
    fn finish(&mut self) {
        for h in 0..self.hosts.len() {
            let mut reports = Vec::new();
            match &mut self.hosts[h] {
                Host::Local(ranks) => ranks.close_outputs(&mut reports),
                Host::Remote(link) => {
                    link.kill_and_wait();
                    self.hosts[h] = Host::Down;
                }
                Host::Down => {}
            }
            for report in reports {
                self.on_report(h, report, Instant::now());
            }
        }
        self.members.iter_mut().for_each(Member::finish_output);
    }

    /// One `poll` over everything, then handles what became ready.
    fn wait_and_dispatch(&mut self, now: Instant) {
        let stdin = std::io::stdin();
        let mut sources = vec![Source::Signals];
        let mut fds = vec![PollFd::from_borrowed_fd(self.signals.as_fd(), PollFlags::IN)];
        if self.stdin.wants_read() {
            fds.push(PollFd::from_borrowed_fd(stdin.as_fd(), PollFlags::IN));
            sources.push(Source::Stdin);
        }
        for (h, host) in self.hosts.iter().enumerate() {
            match host {
                Host::Local(ranks) => {
                    let mut watches = Vec::new();
                    ranks.watch(true, &mut fds, &mut watches);
                    sources.extend(watches.into_iter().map(|w| Source::Local(h, w)));
                }
                Host::Remote(link) => {
                    if let Some(fd) = link.output() {
                        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                        sources.push(Source::FromAgent(h));
                    }
                    if let Some(fd) = link.waiting_input() {
                        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::OUT));
                        sources.push(Source::ToAgent(h));
                    }
                }
                Host::Down => {}
            }
        }
        let timeout =
            self.next_deadline().map(|d| Timespec::try_from(d.saturating_duration_since(now)).unwrap_or_default());
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
        let ready = crate::pipes::ready(&fds, sources);
        drop(fds);
        let now = Instant::now();
        for (source, events) in ready {
            let mut reports = Vec::new();
            let host = match source {
                Source::Signals => {
                    self.on_signals(now);
                    continue;
                }
                Source::Stdin => {
                    self.on_stdin(events.contains(PollFlags::NVAL));
                    continue;
                }
                Source::Local(h, watch) => {
                    if let Host::Local(ranks) = &mut self.hosts[h] {
                        ranks.on_ready(watch, events, &mut reports);
                    }
                    h
                }
                Source::FromAgent(h) => {
                    if let Host::Remote(link) = &mut self.hosts[h] {
                        link.on_readable(now, &mut reports);
                    }
                    h
                }
                Source::ToAgent(h) => {
                    if let Host::Remote(link) = &mut self.hosts[h] {
                        link.flush();
                    }
                    continue;
                }
            };
            for report in reports {
                self.on_report(host, report, now);
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let splitters = self.members.iter().flat_map(|m| [&m.stdout, &m.stderr]);
        let agents = self.hosts.iter().flat_map(|h| match h {
            Host::Remote(link) => [link.deadline(), link.greeting_deadline()],
            _ => [None, None],
        });
        let suspect = self.suspect.as_ref().map(|s| s.2);
        let limit = self.time_limit.map(|(_, at)| at);
        [self.kill_at, self.give_up_at, self.drain_until, self.agents_until, suspect, limit]
            .into_iter()
            .flatten()
            .chain(splitters.filter_map(LineSplitter::deadline))
            .chain(agents.flatten())
            .min()
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
        for h in 0..self.hosts.len() {
            let mut reports = Vec::new();
            match &mut self.hosts[h] {
                Host::Local(ranks) => ranks.reap(&mut reports),
                Host::Remote(link) => link.try_reap(now),
                Host::Down => {}
            }
            for report in reports {
                self.on_report(h, report, now);
            }
        }
    }

    fn on_stdin(&mut self, invalid: bool) {
        let h = self.members[0].host;
        let data = self.stdin.read(invalid);
        let mut reports = Vec::new();
        match (&mut self.hosts[h], data) {
            (Host::Local(ranks), Some(data)) => ranks.stdin_data(&data, &mut reports),
            (Host::Local(ranks), None) => ranks.stdin_end(),
            (Host::Remote(link), Some(data)) => link.send(&Order::Stdin(data)),
            (Host::Remote(link), None) => link.send(&Order::StdinEnd),
            (Host::Down, _) => self.stdin.close(),
        }
        for report in reports {
            self.on_report(h, report, Instant::now());
        }
    }

    fn send_pmi(&mut self, rank: usize, line: String) {
        match &mut self.hosts[self.members[rank].host] {
            Host::Local(ranks) => ranks.send_pmi(rank, &line),
            Host::Remote(link) => link.send(&Order::PmiReply { rank, line }),
            Host::Down => {}
        }
    }

    fn flush_partial_lines(&mut self, now: Instant) {
        for m in &mut self.members {
            for (splitter, to_stderr) in [(&mut m.stdout, false), (&mut m.stderr, true)] {
                let mut out = Vec::new();
                splitter.flush_due(now, &mut out);
                forward(to_stderr, &out);
            }
        }
    }

    fn stop(&mut self, sig: i32) {
        self.signal_all(sig);
        if sig != libc::SIGKILL {
            self.kill_at = Some(Instant::now() + KILL_AFTER);
        }
    }

    /// Signals every rank's process group on every host.
    fn signal_all(&mut self, sig: i32) {
        for host in &mut self.hosts {
            match host {
                Host::Local(ranks) => ranks.signal_all(sig),
                Host::Remote(link) => link.send(&Order::Signal(sig)),
                Host::Down => {}
            }
        }
    }
}

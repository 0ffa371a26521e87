//! Spawning (MPI_Comm_spawn): a member's PMI spawn request becomes a new group of processes
//! with a job id, key-value space and barrier of their own (`<jobid>c<n>`), and the job's
//! secret: each command on the host its `host` info key names (one of the job's), else on the
//! host of the member that asked; this machine's through us, the others' through their agents
//! (`Order::Spawn`). They are members like the ranks bbrun started: their output is forwarded,
//! their exits tracked, and the same tear-down policy holds (a child that fails after MPI_Init
//! ends the job, and the job ends only once parents and children are all done).
//!
//! A child that ends before MPI_Init (whatever its exit code), or cannot be started, fails its
//! spawn instead ([`Job::spawn_failed`]): the rest of its group is killed, and the parents'
//! root, which asks the PMI server while it waits for the children, returns MPI_ERR_SPAWN
//! naming it at once rather than after BB_SPAWN_WAIT_MS. The job goes on.
//!
//! Every command is checked before any process starts: a command that cannot be run, a
//! working directory that is not there, or a host that is not the job's fails the whole
//! request with a message naming the command, and no child runs. On another host its agent
//! checks the command (`Order::Check`): the request waits for every answer ([`PendingSpawn`])
//! and fails, naming the host, if one says no.

use std::path::PathBuf;

use super::*;
use crate::pmi_spawn::{SpawnCommand, SpawnRequest};

/// MPI_UNIVERSE_SIZE: the ranks the job was started with, or this machine's cores when the job
/// runs here alone and has more room (what a spawn may fill without oversubscribing).
pub(crate) fn universe_size(placement: &Placement, local: &[bool]) -> usize {
    let size = placement.host_of.len();
    if local.iter().all(|&l| l) {
        size.max(std::thread::available_parallelism().map_or(1, |n| n.get()))
    } else {
        size
    }
}

/// A spawn whose commands on other hosts their agents are checking: answered once every
/// check is in (`awaiting` of them still out).
pub(super) struct PendingSpawn {
    id: u32,
    requester: usize,
    request: SpawnRequest,
    ready: Vec<Ready>,
    awaiting: usize,
    /// The first refusal, naming its host.
    refused: Option<String>,
}

/// A command, checked: where and what to run.
struct Ready {
    host: usize,
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
}

impl Job {
    /// Answers member `rank`'s spawn request, after starting its processes (or not).
    pub(super) fn on_spawn(&mut self, rank: usize, request: SpawnRequest) {
        let ready = match self.check_spawn(rank, &request) {
            Ok(ready) => ready,
            Err(why) => return self.answer_spawn(rank, Err(why)),
        };
        // The commands for other hosts go to their agents to check first.
        let path = forwarded_env().into_iter().find(|(k, _)| k == b"PATH").map(|(_, v)| v).unwrap_or_default();
        self.checks += 1;
        let id = self.checks;
        let mut awaiting = 0;
        for (command, r) in request.commands.iter().zip(&ready) {
            if let Host::Remote(link) = &mut self.hosts[r.host] {
                let wdir = command.info("wdir").map_or_else(Vec::new, |d| d.as_bytes().to_vec());
                let program = r.program.as_os_str().as_bytes().to_vec();
                link.send(&Order::Check { id, program, path: path.clone(), wdir });
                awaiting += 1;
            }
        }
        match awaiting {
            0 => {
                let result = self.start_spawn(&request, &ready);
                self.answer_spawn(rank, result)
            }
            _ => {
                self.pending_spawns.push(PendingSpawn { id, requester: rank, request, ready, awaiting, refused: None })
            }
        }
    }

    /// Host `h`'s agent answered check `id`.
    pub(super) fn on_checked(&mut self, h: usize, id: u32, error: String) {
        let Some(at) = self.pending_spawns.iter().position(|p| p.id == id && p.awaiting > 0) else {
            return self.cut_off(h, &format!("the agent on host {} answered a check nobody asked", self.names[h]));
        };
        let pending = &mut self.pending_spawns[at];
        pending.awaiting -= 1;
        if !error.is_empty() && pending.refused.is_none() {
            pending.refused = Some(format!("on host {}: {error}", self.names[h]));
        }
        if pending.awaiting > 0 {
            return;
        }
        let PendingSpawn { requester, request, ready, refused, .. } = self.pending_spawns.remove(at);
        let result = match refused {
            Some(why) => Err(why),
            None => self.start_spawn(&request, &ready),
        };
        self.answer_spawn(requester, result);
    }

    fn answer_spawn(&mut self, rank: usize, result: Result<usize, String>) {
        if let Event::Reply { rank, line } = self.server.spawn_result(rank, result) {
            self.send_pmi(rank, line);
        }
    }

    /// Where each command of `request` runs, checked as far as this host can.
    fn check_spawn(&self, requester: usize, request: &SpawnRequest) -> Result<Vec<Ready>, String> {
        if self.stopping() {
            return Err("the job is stopping".into());
        }
        let here = self.members[requester].host;
        request.commands.iter().map(|c| self.check_command(c, here)).collect()
    }

    /// Starts the checked commands as one new group; returns its first member.
    fn start_spawn(&mut self, request: &SpawnRequest, ready: &[Ready]) -> Result<usize, String> {
        if self.stopping() {
            return Err("the job is stopping".into());
        }
        // The group's hosts, in order of first use: its BB_NODE_ID and BB_NNODES.
        let mut hosts: Vec<usize> = Vec::new();
        for r in ready {
            if !hosts.contains(&r.host) {
                hosts.push(r.host);
            }
        }
        let on_host =
            |h: usize| request.commands.iter().zip(ready).filter(|(_, r)| r.host == h).map(|(c, _)| c.nprocs).sum();
        let local_size: Vec<usize> = hosts.iter().map(|&h| on_host(h)).collect();
        self.spawns += 1;
        let n = self.spawns;
        let child_job = format!("{}c{n}", self.jobid);
        let sizes: Vec<usize> = request.commands.iter().map(|c| c.nprocs).collect();
        let total: usize = sizes.iter().sum();
        let first = self.server.add_group(&sizes, format!("kvs_{child_job}"), &request.preput);
        let (mut offset, mut local_base) = (0, vec![0; hosts.len()]);
        let now = Instant::now();
        // What this host's starts report is handled once every member exists: a process that
        // cannot start fails the whole group, whose later commands must be there to be stopped.
        let mut reports = Vec::new();
        for (command, ready) in request.commands.iter().zip(ready) {
            let h = ready.host;
            let node = hosts.iter().position(|&x| x == h).expect("listed");
            for r in offset..offset + command.nprocs {
                let tag = self.tag_output.then_some(first + r);
                self.members.push(Member {
                    host: h,
                    label: Some(format!("rank {r} of spawned job {n} ('{}')", command.execname)),
                    pid: None,
                    exited: false,
                    stdout: LineSplitter::new(tag),
                    stderr: LineSplitter::new(tag),
                });
            }
            let ranks = offset..offset + command.nprocs;
            match &mut self.hosts[h] {
                Host::Local(local) => {
                    let info = JobInfo {
                        program: &ready.program,
                        args: &ready.args,
                        size: total,
                        jobid: &child_job,
                        secret: &self.secret,
                        host: &self.names[h],
                        node_id: node,
                        nnodes: hosts.len(),
                        local_size: local_size[node],
                        env: &[],
                        cwd: ready.cwd.as_deref(),
                        spawned: true,
                    };
                    let members: Vec<(usize, usize)> = ranks.map(|r| (first + r, r)).collect();
                    local.start_members(&info, &members, local_base[node], &mut reports);
                }
                Host::Remote(link) => {
                    let cwd = ready.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
                    let setup = Setup {
                        jobid: child_job.clone(),
                        secret: self.secret.clone(),
                        host: self.names[h].clone(),
                        node_id: node as u32,
                        nnodes: hosts.len() as u32,
                        size: total as u32,
                        env: forwarded_env(),
                        parts: vec![Part {
                            ranks: ranks.map(|r| r as u32).collect(),
                            program: ready.program.as_os_str().as_bytes().to_vec(),
                            args: ready.args.iter().map(|a| a.as_bytes().to_vec()).collect(),
                            cwd: cwd.as_os_str().as_bytes().to_vec(),
                            env: Vec::new(),
                        }],
                    };
                    let (first, base, size) = (first as u32, local_base[node] as u32, local_size[node] as u32);
                    link.send(&Order::Spawn { first, local_base: base, local_size: size, setup: Box::new(setup) });
                }
                Host::Down => unreachable!("check_command refuses a host that is down"),
            }
            offset += command.nprocs;
            local_base[node] += command.nprocs;
        }
        let here = self.hosts.iter().position(|h| matches!(h, Host::Local(_)));
        for report in reports {
            self.on_report(here.expect("reports come only from this host's starts"), report, now);
        }
        Ok(first)
    }

    /// Spawned member `rank` ended before MPI_Init (`how`: its exit): its group can never
    /// connect to its parents, so the spawn fails (the parents' root asks, see `pmi_server.rs`)
    /// and the rest of the group is stopped. Whether that was so (else the usual verdicts hold).
    pub(super) fn spawn_failed(&mut self, rank: usize, exit: Exit, how: &str) -> bool {
        let why = format!("{} {how} before MPI_Init", self.who(rank));
        let was_failed = self.server.group_failed(rank);
        let rest = self.server.ended_before_init(rank, why, exit == Exit::Signal(libc::SIGKILL));
        if was_failed {
            return true; // stopped by us, or failed beside the first
        }
        if !self.server.group_failed(rank) {
            return false;
        }
        for h in 0..self.hosts.len() {
            let here: Vec<usize> = rest.iter().copied().filter(|&m| self.members[m].host == h).collect();
            match &mut self.hosts[h] {
                _ if here.is_empty() => {}
                Host::Local(local) => local.signal_members(&here, libc::SIGKILL),
                Host::Remote(link) => link.send(&Order::Kill { ranks: here.iter().map(|&m| m as u32).collect() }),
                Host::Down => {}
            }
        }
        true
    }

    /// Where and what `command` runs, honouring its `host`, `wdir` and `path` info keys; by
    /// default on host `here`.
    fn check_command(&self, command: &SpawnCommand, here: usize) -> Result<Ready, String> {
        let name = &command.execname;
        let host = match command.info("host") {
            None => here,
            Some(wanted) => self
                .host_named(wanted)
                .ok_or_else(|| format!("cannot start '{name}' on host {wanted}: it is not one of the job's hosts"))?,
        };
        let args = command.args.iter().map(OsString::from).collect();
        let cwd = command.info("wdir").map(PathBuf::from);
        match self.hosts[host] {
            Host::Local(_) => {}
            // The agent looks the program up and checks the folder on its own host.
            Host::Remote(_) => return Ok(Ready { host, program: PathBuf::from(name), args, cwd }),
            Host::Down => {
                let why = "bbrun runs no agent there (none of the job's ranks is on it, or its agent ended)";
                return Err(format!("cannot start '{name}' on host {}: {why}", self.names[host]));
            }
        }
        let program = billboard::bootstrap::program::spawned_program(name, command.info("wdir"), command.info("path"))?;
        Ok(Ready { host, program, args, cwd })
    }

    /// The job's host called `name`: by the name it was given, or this machine by any of its
    /// names when the job runs ranks here.
    fn host_named(&self, name: &str) -> Option<usize> {
        if let Some(h) = self.names.iter().position(|n| n == name) {
            return Some(h);
        }
        let hostname = billboard::transport::tcp::addr::host_name();
        if crate::hosts::is_this_machine(name, &hostname) {
            return self.hosts.iter().position(|h| matches!(h, Host::Local(_)));
        }
        None
    }
}

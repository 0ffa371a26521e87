//! Spawning (MPI_Comm_spawn): a member's PMI spawn request becomes a new group of processes
//! on this machine, with a job id, key-value space and barrier of their own (`<jobid>c<n>`), and
//! the job's secret. They are members like the ranks bbrun started: their output is forwarded,
//! their exits tracked, and the same tear-down policy holds (a child that fails ends the job,
//! and the job ends only once parents and children are all done).
//!
//! Every command is checked before any process starts: a command that cannot be run, a
//! working directory that is not there, or a host that is not this machine fails the whole
//! request with a message naming the command, and no child runs.

use std::path::{Path, PathBuf};

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

/// A command, checked: what to run and where.
struct Ready {
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
}

impl Job {
    /// Answers member `rank`'s spawn request, after starting its processes (or not).
    pub(super) fn on_spawn(&mut self, rank: usize, request: SpawnRequest) {
        let result = self.start_spawn(&request);
        if let Event::Reply { rank, line } = PmiServer::spawn_result(rank, result) {
            self.send_pmi(rank, line);
        }
    }

    fn start_spawn(&mut self, request: &SpawnRequest) -> Result<(), String> {
        if self.stopping() {
            return Err("the job is stopping".into());
        }
        let h = self
            .hosts
            .iter()
            .position(|host| matches!(host, Host::Local(_)))
            .ok_or("bbrun spawns processes on its own machine, and this job runs none of its ranks there")?;
        let ready = request.commands.iter().map(|c| self.check_command(c, h)).collect::<Result<Vec<_>, _>>()?;
        self.spawns += 1;
        let n = self.spawns;
        let child_job = format!("{}c{n}", self.jobid);
        let sizes: Vec<usize> = request.commands.iter().map(|c| c.nprocs).collect();
        let total: usize = sizes.iter().sum();
        let first = self.server.add_group(&sizes, format!("kvs_{child_job}"), &request.preput);
        let mut offset = 0;
        let now = Instant::now();
        for (command, ready) in request.commands.iter().zip(&ready) {
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
            let info = JobInfo {
                program: &ready.program,
                args: &ready.args,
                size: total,
                jobid: &child_job,
                secret: &self.secret,
                host: &self.names[h],
                node_id: 0,
                nnodes: 1,
                local_size: total,
                env: &[],
                cwd: ready.cwd.as_deref(),
                spawned: true,
            };
            let members: Vec<(usize, usize)> = (offset..offset + command.nprocs).map(|r| (first + r, r)).collect();
            let mut reports = Vec::new();
            if let Host::Local(ranks) = &mut self.hosts[h] {
                ranks.start_members(&info, &members, offset, &mut reports);
            }
            for report in reports {
                self.on_report(h, report, now);
            }
            offset += command.nprocs;
        }
        Ok(())
    }

    /// Where and what `command` runs, honouring its `host`, `wdir` and `path` info keys.
    fn check_command(&self, command: &SpawnCommand, here: usize) -> Result<Ready, String> {
        let name = &command.execname;
        if let Some(host) = command.info("host") {
            let hostname = billboard::transport::tcp::addr::host_name();
            if host != self.names[here] && !crate::hosts::is_this_machine(host, &hostname) {
                let why = if self.names.iter().any(|n| n == host) {
                    "bbrun spawns on its own machine only for now"
                } else {
                    "it is not one of the job's hosts"
                };
                return Err(format!("cannot start '{name}' on host {host}: {why}"));
            }
        }
        let cwd = command.info("wdir").map(PathBuf::from);
        if let Some(dir) = &cwd {
            if !dir.is_dir() {
                return Err(format!(
                    "cannot start '{name}': its working directory {} is not a directory",
                    dir.display()
                ));
            }
        }
        let mut program = PathBuf::from(name);
        if let (Some(dir), true) = (&cwd, name.contains('/') && program.is_relative()) {
            program = dir.join(&program);
        }
        // `path`: directories to look in first, then the PATH the children inherit.
        let mut search: Vec<PathBuf> =
            command.info("path").map_or_else(Vec::new, |p| std::env::split_paths(p).collect());
        search.extend(std::env::var_os("PATH").iter().flat_map(std::env::split_paths));
        let search = std::env::join_paths(search).map_err(|e| format!("cannot start '{name}': {e}"))?;
        crate::spawn::find_program_in(&program, Some(&search)).map_err(|(why, _)| why)?;
        if !name.contains('/') {
            // Found through `path` or PATH: run what was found, whatever PATH the child has.
            if let Some(found) = std::env::split_paths(&search).map(|d| d.join(name)).find(|p| is_program(p)) {
                program = found;
            }
        }
        Ok(Ready { program, args: command.args.iter().map(OsString::from).collect(), cwd })
    }
}

fn is_program(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

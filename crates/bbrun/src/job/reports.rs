//! What hosts report about their ranks, and the verdicts: which failure ends the job, and
//! how it is told.

use super::*;

impl Job {
    /// Handles what host `h` reports about its ranks.
    pub(super) fn on_report(&mut self, h: usize, report: Report, now: Instant) {
        let rank = match &report {
            Report::Started { rank, .. }
            | Report::Pmi { rank, .. }
            | Report::PmiBroken { rank }
            | Report::Output { rank, .. }
            | Report::OutputEnd { rank, .. }
            | Report::Exited { rank, .. } => Some(*rank),
            Report::StdinTaken | Report::Failed { .. } | Report::Checked { .. } => None,
        };
        if let Some(r) = rank.filter(|&r| self.members.get(r).is_none_or(|m| m.host != h)) {
            let why = format!("the agent on host {} spoke of rank {r}, which is not on that host", self.names[h]);
            return self.cut_off(h, &why);
        }
        match report {
            Report::Started { rank, pid } => self.members[rank].pid = Some(pid),
            Report::Pmi { rank, line } => self.on_pmi_line(rank, &line),
            Report::PmiBroken { rank } => self.fail(&format!("{} sent an overlong PMI line", self.who(rank)), 1),
            Report::Output { rank, stream, data } => {
                let m = &mut self.members[rank];
                let splitter = if stream == Stream::Stdout { &mut m.stdout } else { &mut m.stderr };
                let mut out = Vec::new();
                splitter.push(&data, now, &mut out);
                forward(stream == Stream::Stderr, &out);
            }
            Report::OutputEnd { rank, stream } => {
                let m = &mut self.members[rank];
                let splitter = if stream == Stream::Stdout { &mut m.stdout } else { &mut m.stderr };
                let mut out = Vec::new();
                splitter.finish(&mut out);
                forward(stream == Stream::Stderr, &out);
            }
            Report::Exited { rank, exit } => self.on_exit(rank, exit),
            Report::StdinTaken => self.stdin.taken(),
            Report::Checked { id, error } => self.on_checked(h, id, error),
            Report::Failed { code, message } => {
                self.never_started(h);
                let on = if self.name_hosts { format!("on host {}: ", self.names[h]) } else { String::new() };
                self.fail(&format!("{on}{message}"), code);
            }
        }
    }

    /// Ranks of host `h` that never started count as gone.
    pub(super) fn never_started(&mut self, h: usize) {
        for r in 0..self.members.len() {
            let m = &self.members[r];
            if m.host == h && m.pid.is_none() && !m.exited {
                self.members[r].exited = true;
                self.server.rank_exited(r);
            }
        }
    }

    /// A rank's process ended (its last output and PMI lines were reported before).
    pub(super) fn on_exit(&mut self, rank: usize, exit: Exit) {
        if self.members[rank].exited {
            return;
        }
        self.members[rank].exited = true;
        self.server.rank_exited(rank);
        if rank == 0 {
            self.stdin.close();
        }
        let how = match exit {
            Exit::Signal(sig) => format!("was killed by signal {sig} ({})", signals::name(sig)),
            Exit::Code(code) => format!("exited with code {code}"),
        };
        if self.spawn_failed(rank, exit, &how) {
            return self.check_barrier();
        }
        let who = self.who(rank);
        match exit {
            Exit::Signal(sig) => {
                self.fail(&format!("{who} killed by signal {sig} ({})", signals::name(sig)), 128 + sig)
            }
            Exit::Code(code) if code != 0 => {
                // Peers of a rank that was killed may see its route break and give up before we
                // hear of the death itself: reap the others first, so the report names the cause.
                // A death may be reported later than its peers' errors (through another host's
                // agent; or, on one busy host, the killed process is not yet reapable when the
                // peer that saw its connection close has already exited): give it a moment
                // before blaming this rank.
                if !self.stopping() {
                    self.reap(Instant::now());
                }
                let why = format!("{who} exited with code {code}");
                if !self.stopping() {
                    self.suspect.get_or_insert((why, code, Instant::now() + BLAME_GRACE));
                } else {
                    self.fail(&why, code)
                }
            }
            Exit::Code(_) if self.server.mid_session(rank) && self.members.iter().any(|m| !m.exited) => {
                // As Open MPI does: the others would wait for this rank in their next collective
                // forever. A rank that finalizes gets the ack before it can exit, so no race here.
                self.fail(&format!("{who} exited with code 0 without calling PMI finalize"), 1);
            }
            Exit::Code(_) => self.check_barrier(),
        }
    }

    /// An agent's link ended (its stream, its process, or both).
    pub(super) fn on_agent_gone(&mut self, h: usize) {
        let Host::Remote(mut link) = std::mem::replace(&mut self.hosts[h], Host::Down) else { return };
        link.kill_and_wait();
        let lost: Vec<usize> = (0..self.members.len()).filter(|&r| self.members[r].host == h).collect();
        for &r in &lost {
            self.members[r].finish_output();
        }
        let lost: Vec<usize> = lost.into_iter().filter(|&r| !self.members[r].exited).collect();
        if lost.is_empty() {
            return;
        }
        for &r in &lost {
            self.members[r].exited = true;
            self.server.rank_exited(r);
        }
        let host = &self.names[h];
        let why = if let Some(broken) = &link.broken {
            format!("the agent on host {host} (`{}`) broke the relay protocol: {broken}", link.command)
        } else if !link.greeted() {
            format!("cannot start the agent on host {host}: `{}` {}", link.command, link.ending())
        } else {
            format!("lost the agent on host {host}: it {} while {} ran there", link.ending(), rank_list(&lost))
        };
        self.fail(&why, 1);
    }

    /// Ends the job over an agent that broke the protocol.
    pub(super) fn cut_off(&mut self, h: usize, why: &str) {
        if let Host::Remote(link) = &mut self.hosts[h] {
            link.kill();
        }
        self.fail(why, 1);
    }

    /// A barrier that waits for a rank which has exited can never complete.
    pub(super) fn check_barrier(&mut self) {
        if let Some(r) = self.server.barrier_blocked_by() {
            let why = format!("{} exited without joining the PMI barrier the other ranks wait in", self.who(r));
            self.fail(&why, 1);
        }
    }

    pub(super) fn on_pmi_line(&mut self, rank: usize, line: &str) {
        let mut events = Vec::new();
        self.server.handle_line(rank, line, &mut events);
        for event in events {
            match event {
                Event::Reply { rank, line } => self.send_pmi(rank, line),
                Event::Abort { rank, code, msg } => {
                    let why = if msg.is_empty() { String::new() } else { format!(": {msg}") };
                    let exit = match code.rem_euclid(256) {
                        0 if code != 0 => 1,
                        c => c,
                    };
                    self.fail(&format!("{} called PMI abort with code {code}{why}", self.who(rank)), exit);
                }
                Event::Spawn { rank, request } => self.on_spawn(rank, request),
                Event::Malformed { rank, error } => {
                    self.fail(&format!("{} broke the PMI protocol: {error}", self.who(rank)), 1);
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

    /// `rank 3 (pid 1234)`, and ` on host h2` when the job is more than this machine.
    pub(super) fn who(&self, rank: usize) -> String {
        let m = &self.members[rank];
        let name = m.label.clone().unwrap_or_else(|| format!("rank {rank}"));
        let mut who = match m.pid {
            Some(pid) => format!("{name} (pid {pid})"),
            None => name,
        };
        if self.name_hosts {
            who.push_str(&format!(" on host {}", self.names[m.host]));
        }
        who
    }

    /// Records the first failure, says so once, and starts stopping the job.
    pub(super) fn fail(&mut self, why: &str, code: i32) {
        if self.stopping() {
            return;
        }
        self.failure = Some(code);
        if self.members.iter().any(|m| !m.exited) {
            eprintln!("bbrun: {why}; stopping the job");
        } else {
            eprintln!("bbrun: {why}");
        }
        self.stop(libc::SIGTERM);
    }
}

/// `rank 3` or `ranks 2, 3`.
pub(super) fn rank_list(ranks: &[usize]) -> String {
    let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
    let s = if ranks.len() == 1 { "" } else { "s" };
    format!("rank{s} {}", list.join(", "))
}

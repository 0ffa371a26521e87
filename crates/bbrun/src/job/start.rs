//! Starting a job's hosts: an agent for each remote host, then this machine's ranks.

use super::*;

impl Job {
    /// Starts agents first (their hosts then start ranks while we start ours), then the ranks
    /// of this machine.
    pub(super) fn start_hosts(&mut self, opts: &Options, jobid: &str, secret: &str) {
        let now = Instant::now();
        let size = self.members.len();
        let nnodes = (0..self.hosts.len()).filter(|&h| !opts.placement.ranks_on(h).is_empty()).count();
        let cwd = std::env::current_dir().unwrap_or_default();
        let order: Vec<usize> = (0..self.hosts.len())
            .filter(|&h| !opts.local[h])
            .chain((0..self.hosts.len()).filter(|&h| opts.local[h]))
            .collect();
        for h in order {
            if self.stopping() {
                break;
            }
            let ranks = opts.placement.ranks_on(h);
            if ranks.is_empty() {
                continue;
            }
            let mut reports = Vec::new();
            if opts.local[h] {
                let info = JobInfo {
                    program: &opts.program,
                    args: &opts.args,
                    size,
                    jobid,
                    secret,
                    host: &self.names[h],
                    node_id: h,
                    nnodes,
                    local_size: ranks.len(),
                    env: &[],
                    cwd: None,
                    spawned: false,
                };
                self.hosts[h] = Host::Local(LocalRanks::start(&info, &ranks, &mut reports));
            } else {
                let setup = Setup {
                    jobid: jobid.to_owned(),
                    secret: secret.to_owned(),
                    host: self.names[h].clone(),
                    node_id: h as u32,
                    nnodes: nnodes as u32,
                    size: size as u32,
                    ranks: ranks.iter().map(|&r| r as u32).collect(),
                    program: opts.program.as_os_str().as_bytes().to_vec(),
                    args: opts.args.iter().map(|a| a.as_bytes().to_vec()).collect(),
                    env: forwarded_env(),
                    cwd: cwd.as_os_str().as_bytes().to_vec(),
                };
                match AgentLink::start(&opts.launcher, &self.names[h], &setup) {
                    Ok(link) => self.hosts[h] = Host::Remote(link),
                    Err(why) => {
                        self.never_started(h);
                        self.fail(&why, 1);
                    }
                }
            }
            for report in reports {
                self.on_report(h, report, now);
            }
        }
        // Ranks of hosts skipped above never start.
        for h in 0..self.hosts.len() {
            if matches!(self.hosts[h], Host::Down) {
                self.never_started(h);
            }
        }
    }
}

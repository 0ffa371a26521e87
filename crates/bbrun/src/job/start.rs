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
            // Each program's ranks on this host, in rank order.
            let mut first = 0;
            let parts: Vec<(&App, Vec<usize>)> = opts
                .apps
                .iter()
                .map(|app| {
                    let mine = ranks.iter().copied().filter(|r| (first..first + app.ranks).contains(r)).collect();
                    first += app.ranks;
                    (app, mine)
                })
                .filter(|(_, mine): &(_, Vec<usize>)| !mine.is_empty())
                .collect();
            if opts.local[h] {
                let infos: Vec<_> = parts
                    .into_iter()
                    .map(|(app, mine)| {
                        let info = JobInfo {
                            program: &app.program,
                            args: &app.args,
                            size,
                            jobid,
                            secret,
                            host: &self.names[h],
                            node_id: h,
                            nnodes,
                            local_size: ranks.len(),
                            env: &app.env,
                            cwd: app.wdir.as_deref(),
                            spawned: false,
                        };
                        (info, mine)
                    })
                    .collect();
                self.hosts[h] = Host::Local(LocalRanks::start(&infos, &mut reports));
            } else {
                let bytes = |s: &std::ffi::OsStr| s.as_bytes().to_vec();
                let setup = Setup {
                    jobid: jobid.to_owned(),
                    secret: secret.to_owned(),
                    host: self.names[h].clone(),
                    node_id: h as u32,
                    nnodes: nnodes as u32,
                    size: size as u32,
                    env: forwarded_env(),
                    parts: parts
                        .into_iter()
                        .map(|(app, mine)| Part {
                            ranks: mine.iter().map(|&r| r as u32).collect(),
                            program: bytes(app.program.as_os_str()),
                            args: app.args.iter().map(|a| bytes(a)).collect(),
                            cwd: bytes(app.wdir.as_deref().unwrap_or(&cwd).as_os_str()),
                            env: app.env.iter().map(|(k, v)| (bytes(k), bytes(v))).collect(),
                        })
                        .collect(),
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

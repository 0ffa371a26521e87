//! The PMI-1 server of one job, sans-IO: it takes the lines ranks send and returns the lines to
//! send back, plus the events the launcher must act on (an abort, a spawn, a protocol error). The
//! event loop in `job.rs` owns the sockets; this file owns the key-value spaces, the barriers and
//! the name service, so all are tested here without processes. Wire format:
//! `billboard::bootstrap::pmi::wire`; spawn requests: `pmi_spawn.rs`.
//!
//! A job is one or more *groups*: the ranks bbrun started, then each set of processes a spawn
//! started (an MPI_COMM_WORLD of their own). Every process the launcher runs is a *member*,
//! numbered across groups in the order they started; each group has its own key-value space,
//! barrier and ranks `0..size`, and the name service (`publish_name`) is the whole job's.
//!
//! A spawned group *fails* when one of its processes ends before `cmd=init` (it exited, even
//! with 0, was killed, or could not be started): its parents' root learns it by asking
//! `cmd=bb_spawn_state id=<group>` (the `bb_spawn` of its `spawn_result`) while it waits for the
//! children to connect, instead of waiting BB_SPAWN_WAIT_MS for a connection that cannot come.
//! The answer is `cmd=bb_spawn_state_result rc=0 failed=<instances, comma-separated; empty while
//! none failed> error_msg=<why>`. A failed group's barrier no longer holds the job, and its
//! lines are ignored: the launcher kills what is left of it.

use std::collections::HashMap;

use billboard::bootstrap::pmi::wire::{format_line, parse_line, Command, Message};

use crate::pmi_spawn::{Collected, SpawnCollector, SpawnRequest};

/// Limits announced in `cmd=maxes`: Hydra's values, so MPICH's own simple-PMI client (whose
/// line buffer is 1024 bytes) is never offered more than it can read.
const KVSNAME_MAX: usize = 256;
const KEYLEN_MAX: usize = 64;
const VALLEN_MAX: usize = 1024;

/// What the launcher must do after a line was handled.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Send `line` to member `rank`.
    Reply { rank: usize, line: String },
    /// The member asked to end the job (`cmd=abort`).
    Abort { rank: usize, code: i32, msg: String },
    /// The member asks for processes (MPI_Comm_spawn); the launcher answers with
    /// [`PmiServer::spawn_result`] once it has started them, or could not.
    Spawn { rank: usize, request: SpawnRequest },
    /// The member sent a line we cannot decode; it now waits for a reply that will not come.
    Malformed { rank: usize, error: String },
    /// A command this server does not implement (answered with rc=-1); worth one warning.
    Unsupported { rank: usize, cmd: String },
}

#[derive(Default)]
struct MemberState {
    group: usize,
    /// Rank within its group.
    rank: usize,
    /// Which command of its spawn started it (MPI_APPNUM).
    appnum: usize,
    inited: bool,
    finalized: bool,
    in_barrier: bool,
    exited: bool,
    /// Inside a multi-line `mcmd=spawn ... endcmd` request.
    spawn: SpawnCollector,
}

/// One MPI_COMM_WORLD: its key-value space and barrier.
struct Group {
    kvsname: String,
    kvs: HashMap<String, String>,
    /// Its members, by rank.
    members: Vec<usize>,
    barrier_count: usize,
    /// Why the group failed to start (a spawned group only), and which of its ranks ended
    /// before `cmd=init`.
    failure: Option<(String, Vec<usize>)>,
}

pub struct PmiServer {
    groups: Vec<Group>,
    members: Vec<MemberState>,
    /// The job's name service: service name to port name.
    names: HashMap<String, String>,
    universe_size: usize,
}

impl PmiServer {
    /// A server for a job of `sizes[k]` ranks of each program k (MPI_APPNUM k).
    pub fn new(sizes: &[usize], kvsname: String) -> Self {
        let size = sizes.iter().sum();
        let mut server =
            PmiServer { groups: Vec::new(), members: Vec::new(), names: HashMap::new(), universe_size: size };
        server.add_group(sizes, kvsname, &[]);
        server
    }

    /// Adds a group of `sizes.iter().sum()` members (command k of a spawn gives the next
    /// `sizes[k]`, with appnum k) whose key-value space starts with `preput`; returns the
    /// first new member's number.
    pub fn add_group(&mut self, sizes: &[usize], kvsname: String, preput: &[(String, String)]) -> usize {
        let first = self.members.len();
        let size: usize = sizes.iter().sum();
        let mut kvs: HashMap<String, String> = preput.iter().cloned().collect();
        // MPICH reads this key to learn which ranks share a node (Hydra sets it too):
        // "(vector,(first node, node count, ranks per node))": here all ranks on node 0.
        kvs.insert("PMI_process_mapping".to_owned(), format!("(vector,(0,1,{size}))"));
        let group = self.groups.len();
        let appnums = sizes.iter().enumerate().flat_map(|(k, &n)| std::iter::repeat_n(k, n));
        for (rank, appnum) in appnums.enumerate() {
            self.members.push(MemberState { group, rank, appnum, ..Default::default() });
        }
        self.groups.push(Group {
            kvsname,
            kvs,
            members: (first..first + size).collect(),
            barrier_count: 0,
            failure: None,
        });
        first
    }

    /// Sets `PMI_process_mapping` (which ranks share a node) for a job on several hosts.
    pub fn set_process_mapping(&mut self, value: String) {
        self.groups[0].kvs.insert("PMI_process_mapping".to_owned(), value);
    }

    /// What `cmd=get_universe_size` answers (MPI_UNIVERSE_SIZE): at least the first group.
    pub fn set_universe_size(&mut self, size: usize) {
        self.universe_size = size.max(self.groups[0].members.len());
    }

    /// The answer to member `rank`'s spawn request: `Ok(first)` once its processes started
    /// (`first`: the new group's first member), or why not (naming the command).
    pub fn spawn_result(&self, rank: usize, result: Result<usize, String>) -> Event {
        let line = match result {
            Ok(first) => {
                format_line("spawn_result", &[("rc", "0"), ("bb_spawn", &self.members[first].group.to_string())])
            }
            Err(why) => format_line("spawn_result", &[("rc", "-1"), ("error_msg", &why)]),
        };
        Event::Reply { rank, line }
    }

    /// Whether the member has done `cmd=init` and not yet `cmd=finalize`.
    pub fn mid_session(&self, rank: usize) -> bool {
        self.members[rank].inited && !self.members[rank].finalized
    }

    /// Member `member` of a spawned group ended before `cmd=init` (`why` says how; `killed`:
    /// by SIGKILL, as the launcher stops the rest of a failed group): its group fails, and the
    /// members still to be stopped are returned. Empty when the member did init, is of the
    /// first group, or its group had already failed; then it is named among the failed
    /// instances too, unless it was killed.
    pub fn ended_before_init(&mut self, member: usize, why: String, killed: bool) -> Vec<usize> {
        let m = &self.members[member];
        let g = m.group;
        if m.inited || g == 0 {
            return Vec::new();
        }
        if let Some((_, failed)) = &mut self.groups[g].failure {
            if !killed {
                failed.push(m.rank);
            }
            return Vec::new();
        }
        self.groups[g].failure = Some((why, vec![m.rank]));
        self.groups[g].members.iter().copied().filter(|&o| o != member && !self.members[o].exited).collect()
    }

    /// Whether member `member`'s group failed to start ([`Self::ended_before_init`]).
    pub fn group_failed(&self, member: usize) -> bool {
        self.groups[self.members[member].group].failure.is_some()
    }

    /// Records that a member's process is gone. It can never join a barrier again.
    pub fn rank_exited(&mut self, rank: usize) {
        self.members[rank].exited = true;
    }

    /// A member that has exited while others of its group wait for it in a barrier (which
    /// can then never complete), if there is one: the launcher must stop the job instead.
    pub fn barrier_blocked_by(&self) -> Option<usize> {
        self.groups
            .iter()
            .filter(|g| g.barrier_count > 0 && g.failure.is_none())
            .find_map(|g| g.members.iter().copied().find(|&m| self.members[m].exited && !self.members[m].in_barrier))
    }

    /// Handles one line from member `rank`, appending what to do to `out`.
    pub fn handle_line(&mut self, member: usize, line: &str, out: &mut Vec<Event>) {
        let rank = member;
        let reply = |out: &mut Vec<Event>, cmd: &str, fields: &[(&str, &str)]| {
            out.push(Event::Reply { rank, line: format_line(cmd, fields) })
        };
        if self.members[member].spawn.open() {
            if let Collected::Request(request) = self.members[member].spawn.line(line) {
                match request {
                    Ok(request) => out.push(Event::Spawn { rank, request }),
                    Err(why) => out.push(self.spawn_result(rank, Err(why))),
                }
            }
            return;
        }
        if self.group_failed(member) {
            return; // the launcher is stopping it
        }
        if line.trim() == "mcmd=spawn" {
            self.members[member].spawn.start();
            return;
        }
        if let Some(line) = parse_line(line).ok().and_then(|m| self.name_service(&m).or_else(|| self.spawn_state(&m))) {
            return out.push(Event::Reply { rank, line });
        }
        let command = match Command::parse(line) {
            Ok(c) => c,
            Err(e) => return out.push(Event::Malformed { rank, error: e.to_string() }),
        };
        let g = self.members[member].group;
        let size = self.groups[g].members.len().to_string();
        match command {
            Command::InitAck { .. } => {
                let rank_text = self.members[member].rank.to_string();
                reply(out, "initack", &[]);
                reply(out, "set", &[("size", &size)]);
                reply(out, "set", &[("rank", &rank_text)]);
                reply(out, "set", &[("debug", "0")]);
            }
            Command::Init { version, .. } => {
                let rc = if version == 1 { "0" } else { "-1" };
                self.members[member].inited |= version == 1;
                reply(out, "response_to_init", &[("pmi_version", "1"), ("pmi_subversion", "1"), ("rc", rc)]);
            }
            Command::GetMaxes => {
                let (k, l, v) = (KVSNAME_MAX.to_string(), KEYLEN_MAX.to_string(), VALLEN_MAX.to_string());
                reply(out, "maxes", &[("kvsname_max", &k), ("keylen_max", &l), ("vallen_max", &v), ("rc", "0")]);
            }
            Command::GetMyKvsname => reply(out, "my_kvsname", &[("kvsname", &self.groups[g].kvsname), ("rc", "0")]),
            Command::GetAppnum => {
                let appnum = self.members[member].appnum.to_string();
                reply(out, "appnum", &[("appnum", &appnum), ("rc", "0")])
            }
            Command::GetUniverseSize => {
                reply(out, "universe_size", &[("size", &self.universe_size.to_string()), ("rc", "0")])
            }
            Command::Put { kvsname, key, value } => {
                if kvsname != self.groups[g].kvsname {
                    reply(out, "put_result", &[("rc", "-1"), ("msg", "unknown_kvsname")]);
                } else {
                    // A second put of a key replaces the value (Hydra refuses it; being liberal
                    // costs nothing here and lets a rank republish its address).
                    self.groups[g].kvs.insert(key, value);
                    reply(out, "put_result", &[("rc", "0"), ("msg", "success")]);
                }
            }
            Command::Get { kvsname, key } => match self.groups[g].kvs.get(&key) {
                Some(value) if kvsname == self.groups[g].kvsname => {
                    reply(out, "get_result", &[("rc", "0"), ("msg", "success"), ("value", value)])
                }
                _ => {
                    let msg = format!("key_{key}_not_found");
                    reply(out, "get_result", &[("rc", "-1"), ("msg", &msg), ("value", "unknown")]);
                }
            },
            Command::BarrierIn => {
                if !self.members[member].in_barrier {
                    self.members[member].in_barrier = true;
                    self.groups[g].barrier_count += 1;
                }
                if self.groups[g].barrier_count == self.groups[g].members.len() {
                    self.groups[g].barrier_count = 0;
                    for &m in &self.groups[g].members {
                        self.members[m].in_barrier = false;
                        out.push(Event::Reply { rank: m, line: format_line("barrier_out", &[("rc", "0")]) });
                    }
                }
            }
            Command::Abort { code, msg } => out.push(Event::Abort { rank, code, msg }),
            Command::Finalize => {
                self.members[member].finalized = true;
                reply(out, "finalize_ack", &[("rc", "0")]);
            }
            Command::Unsupported { cmd } => {
                let reply_cmd = format!("{cmd}_result");
                reply(out, &reply_cmd, &[("rc", "-1"), ("msg", "unsupported_by_bbrun")]);
                out.push(Event::Unsupported { rank, cmd });
            }
        }
    }

    /// `bb_spawn_state id=<group>`: whether a spawned group failed to start (see the top).
    fn spawn_state(&self, m: &Message) -> Option<String> {
        if m.cmd != "bb_spawn_state" {
            return None;
        }
        let group = m.get("id").and_then(|id| id.parse::<usize>().ok()).and_then(|g| self.groups.get(g));
        Some(match group {
            None => format_line("bb_spawn_state_result", &[("rc", "-1"), ("error_msg", "no such spawn")]),
            Some(Group { failure: Some((why, failed)), .. }) => {
                let failed: Vec<String> = failed.iter().map(usize::to_string).collect();
                format_line("bb_spawn_state_result", &[("rc", "0"), ("failed", &failed.join(",")), ("error_msg", why)])
            }
            Some(_) => format_line("bb_spawn_state_result", &[("rc", "0"), ("failed", "")]),
        })
    }

    /// `publish_name`, `unpublish_name`, `lookup_name` (MPICH's simple-PMI names for them):
    /// one name space for the whole job. The reply line if `m` was one of them.
    fn name_service(&mut self, m: &Message) -> Option<String> {
        let service = m.get("service").unwrap_or("").to_string();
        let line = match m.cmd.as_str() {
            "publish_name" => {
                let port = m.get("port").unwrap_or("").to_string();
                if service.is_empty() || port.is_empty() {
                    format_line("publish_result", &[("rc", "-1"), ("msg", "service_or_port_missing")])
                } else if let std::collections::hash_map::Entry::Vacant(e) = self.names.entry(service) {
                    e.insert(port);
                    format_line("publish_result", &[("rc", "0"), ("msg", "success")])
                } else {
                    format_line("publish_result", &[("rc", "-1"), ("msg", "service_already_published")])
                }
            }
            "unpublish_name" => match self.names.remove(&service) {
                Some(_) => format_line("unpublish_result", &[("rc", "0"), ("msg", "success")]),
                None => format_line("unpublish_result", &[("rc", "-1"), ("msg", "service_not_published")]),
            },
            "lookup_name" => match self.names.get(&service) {
                Some(port) => format_line("lookup_result", &[("rc", "0"), ("port", port)]),
                None => format_line("lookup_result", &[("rc", "-1"), ("msg", "service_not_published")]),
            },
            _ => return None,
        };
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: &mut PmiServer, rank: usize, line: &str) -> Vec<Event> {
        let mut out = Vec::new();
        server.handle_line(rank, line, &mut out);
        out
    }

    fn replies(events: &[Event]) -> Vec<(usize, &str)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Reply { rank, line } => Some((*rank, line.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn handshake_replies() {
        let mut s = PmiServer::new(&[2], "kvs_1".into());
        let e = run(&mut s, 1, "cmd=init pmi_version=1 pmi_subversion=1\n");
        assert_eq!(replies(&e), [(1, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n")]);
        assert!(s.mid_session(1));
        let e = run(&mut s, 1, "cmd=get_maxes\n");
        assert_eq!(replies(&e), [(1, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0\n")]);
        let e = run(&mut s, 1, "cmd=get_my_kvsname\n");
        assert_eq!(replies(&e), [(1, "cmd=my_kvsname kvsname=kvs_1 rc=0\n")]);
        let e = run(&mut s, 0, "cmd=get_universe_size\n");
        assert_eq!(replies(&e), [(0, "cmd=universe_size size=2 rc=0\n")]);
        let e = run(&mut s, 1, "cmd=finalize\n");
        assert_eq!(replies(&e), [(1, "cmd=finalize_ack rc=0\n")]);
        assert!(!s.mid_session(1));
    }

    #[test]
    fn pmi2_init_is_refused() {
        let mut s = PmiServer::new(&[1], "k".into());
        let e = run(&mut s, 0, "cmd=init pmi_version=2 pmi_subversion=0");
        assert!(replies(&e)[0].1.contains("rc=-1"));
        assert!(!s.mid_session(0));
    }

    #[test]
    fn put_then_get_and_missing_keys() {
        let mut s = PmiServer::new(&[2], "k".into());
        run(&mut s, 0, "cmd=put kvsname=k key=a value=1");
        let e = run(&mut s, 1, "cmd=get kvsname=k key=a");
        assert_eq!(replies(&e), [(1, "cmd=get_result rc=0 msg=success value=1\n")]);
        let e = run(&mut s, 1, "cmd=get kvsname=k key=b");
        assert!(replies(&e)[0].1.starts_with("cmd=get_result rc=-1 msg=key_b_not_found"));
        let e = run(&mut s, 1, "cmd=put kvsname=other key=a value=1");
        assert!(replies(&e)[0].1.contains("rc=-1"));
        let e = run(&mut s, 0, "cmd=get kvsname=k key=PMI_process_mapping");
        assert!(replies(&e)[0].1.ends_with("value=(vector,(0,1,2))\n"));
    }

    #[test]
    fn barrier_releases_everyone_once_all_arrive() {
        let mut s = PmiServer::new(&[3], "k".into());
        assert!(run(&mut s, 0, "cmd=barrier_in").is_empty());
        assert!(run(&mut s, 0, "cmd=barrier_in").is_empty(), "a repeated barrier_in counts once");
        assert!(run(&mut s, 2, "cmd=barrier_in").is_empty());
        let e = run(&mut s, 1, "cmd=barrier_in");
        assert_eq!(replies(&e).iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1, 2]);
        // The next barrier starts from zero.
        assert!(run(&mut s, 1, "cmd=barrier_in").is_empty());
    }

    #[test]
    fn an_exited_rank_blocks_a_waiting_barrier() {
        let mut s = PmiServer::new(&[3], "k".into());
        s.rank_exited(2);
        assert_eq!(s.barrier_blocked_by(), None, "no one waits yet");
        run(&mut s, 0, "cmd=barrier_in");
        assert_eq!(s.barrier_blocked_by(), Some(2));
    }

    #[test]
    fn abort_malformed_and_unsupported() {
        let mut s = PmiServer::new(&[2], "k".into());
        let e = run(&mut s, 1, "cmd=abort exitcode=7 error_msg=out of memory");
        assert_eq!(e, [Event::Abort { rank: 1, code: 7, msg: "out of memory".into() }]);
        let e = run(&mut s, 0, "hello");
        assert!(matches!(&e[..], [Event::Malformed { rank: 0, .. }]));
        let e = run(&mut s, 0, "cmd=spawn_now");
        assert_eq!(replies(&e), [(0, "cmd=spawn_now_result rc=-1 msg=unsupported_by_bbrun\n")]);
    }

    #[test]
    fn multi_line_spawn_becomes_one_event() {
        let mut s = PmiServer::new(&[1], "k".into());
        assert!(run(&mut s, 0, "mcmd=spawn").is_empty());
        for line in ["nprocs=2", "execname=./child", "totspawns=1", "spawnssofar=1", "argcnt=0", "preput_num=0"] {
            assert!(run(&mut s, 0, line).is_empty());
        }
        let e = run(&mut s, 0, "endcmd");
        let [Event::Spawn { rank: 0, request }] = &e[..] else { panic!("{e:?}") };
        assert_eq!((request.commands[0].execname.as_str(), request.commands[0].nprocs), ("./child", 2));
        // The launcher starts them as a group with a key-value space and barrier of its own.
        let first = s.add_group(&[1, 1], "k2".into(), &[("PARENT".into(), "port".into())]);
        assert_eq!(first, 1);
        let e = run(&mut s, 2, "cmd=get kvsname=k2 key=PARENT");
        assert_eq!(replies(&e), [(2, "cmd=get_result rc=0 msg=success value=port\n")]);
        let e = run(&mut s, 2, "cmd=get_appnum");
        assert_eq!(replies(&e), [(2, "cmd=appnum appnum=1 rc=0\n")]);
        assert!(run(&mut s, 1, "cmd=barrier_in").is_empty());
        let e = run(&mut s, 2, "cmd=barrier_in");
        assert_eq!(replies(&e).iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2], "the parent is not in it");
        let e = run(&mut s, 1, "cmd=get kvsname=k key=PMI_process_mapping");
        assert!(replies(&e)[0].1.contains("rc=-1"), "another group's space is not ours");
        assert_eq!(
            s.spawn_result(0, Err("cannot run 'x': not found".into())),
            Event::Reply { rank: 0, line: "cmd=spawn_result rc=-1 error_msg=cannot run 'x': not found\n".into() }
        );
    }

    #[test]
    fn a_spawned_member_that_ends_before_init_fails_its_group() {
        let mut s = PmiServer::new(&[1], "k".into());
        let first = s.add_group(&[2, 1], "k2".into(), &[]);
        let Event::Reply { line, .. } = s.spawn_result(0, Ok(first)) else { panic!() };
        assert_eq!(line, "cmd=spawn_result rc=0 bb_spawn=1\n");
        let e = run(&mut s, 0, "cmd=bb_spawn_state id=1");
        assert_eq!(replies(&e), [(0, "cmd=bb_spawn_state_result rc=0 failed=\n")]);
        run(&mut s, 1, "cmd=init pmi_version=1 pmi_subversion=1");
        run(&mut s, 1, "cmd=barrier_in");
        assert!(s.ended_before_init(1, "x".into(), false).is_empty(), "it did init");
        assert!(s.ended_before_init(0, "y".into(), false).is_empty(), "the first group is not a spawn");
        s.rank_exited(3);
        assert_eq!(s.ended_before_init(3, "rank 2 exited with code 3 before MPI_Init".into(), false), [1, 2]);
        assert!(s.group_failed(1) && !s.group_failed(0));
        assert_eq!(s.barrier_blocked_by(), None, "a failed group's barrier holds nobody");
        let e = run(&mut s, 0, "cmd=bb_spawn_state id=1");
        let want = "cmd=bb_spawn_state_result rc=0 failed=2 error_msg=rank 2 exited with code 3 before MPI_Init\n";
        assert_eq!(replies(&e), [(0, want)]);
        assert!(s.ended_before_init(2, "z".into(), true).is_empty(), "stopped by the launcher: not named");
        assert!(run(&mut s, 2, "cmd=barrier_in").is_empty(), "a failed group's lines are ignored");
        let e = run(&mut s, 0, "cmd=bb_spawn_state id=1");
        assert_eq!(replies(&e), [(0, want)]);
        let mut t = PmiServer::new(&[1], "k".into());
        t.add_group(&[3], "k2".into(), &[]);
        t.ended_before_init(1, "rank 0 exited with code 0 before MPI_Init".into(), false);
        t.ended_before_init(3, "w".into(), false);
        let e = run(&mut t, 0, "cmd=bb_spawn_state id=1");
        let want = "cmd=bb_spawn_state_result rc=0 failed=0,2 error_msg=rank 0 exited with code 0 before MPI_Init\n";
        assert_eq!(replies(&e), [(0, want)], "one that ended on its own just after is named too");
        let e = run(&mut s, 0, "cmd=bb_spawn_state id=9");
        assert!(replies(&e)[0].1.contains("rc=-1"));
    }

    #[test]
    fn the_name_service_spans_the_job() {
        let mut s = PmiServer::new(&[1], "k".into());
        s.add_group(&[1], "k2".into(), &[]);
        let e = run(&mut s, 0, "cmd=publish_name service=svc port=p1");
        assert!(replies(&e)[0].1.starts_with("cmd=publish_result rc=0"));
        let e = run(&mut s, 0, "cmd=publish_name service=svc port=p2");
        assert!(replies(&e)[0].1.contains("rc=-1"), "published twice");
        let e = run(&mut s, 1, "cmd=lookup_name service=svc");
        assert_eq!(replies(&e), [(1, "cmd=lookup_result rc=0 port=p1\n")]);
        let e = run(&mut s, 1, "cmd=unpublish_name service=svc");
        assert!(replies(&e)[0].1.starts_with("cmd=unpublish_result rc=0"));
        let e = run(&mut s, 0, "cmd=lookup_name service=svc");
        assert!(replies(&e)[0].1.contains("rc=-1"));
    }

    #[test]
    fn port_mode_introduction_gets_set_lines() {
        let mut s = PmiServer::new(&[4], "k".into());
        let e = run(&mut s, 3, "cmd=initack pmiid=3");
        let lines: Vec<_> = replies(&e).iter().map(|r| r.1).collect();
        assert_eq!(lines, ["cmd=initack\n", "cmd=set size=4\n", "cmd=set rank=3\n", "cmd=set debug=0\n"]);
    }
}

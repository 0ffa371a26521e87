//! The PMI-1 server of one job, sans-IO: it takes the lines ranks send and returns the lines to
//! send back, plus the events the launcher must act on (an abort, a protocol error). The event
//! loop in `job.rs` owns the sockets; this file owns the key-value space and the barrier, so both
//! are tested here without processes. Wire format: `billboard::bootstrap::pmi::wire`.

use std::collections::HashMap;

use billboard::bootstrap::pmi::wire::{format_line, Command};

/// Limits announced in `cmd=maxes`: Hydra's values, so MPICH's own simple-PMI client (whose
/// line buffer is 1024 bytes) is never offered more than it can read.
const KVSNAME_MAX: usize = 256;
const KEYLEN_MAX: usize = 64;
const VALLEN_MAX: usize = 1024;

/// What the launcher must do after a line was handled.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Send `line` to rank `rank`.
    Reply { rank: usize, line: String },
    /// The rank asked to end the job (`cmd=abort`).
    Abort { rank: usize, code: i32, msg: String },
    /// The rank sent a line we cannot decode; it now waits for a reply that will not come.
    Malformed { rank: usize, error: String },
    /// A command this server does not implement (answered with rc=-1); worth one warning.
    Unsupported { rank: usize, cmd: String },
}

#[derive(Default, Clone)]
struct RankState {
    inited: bool,
    finalized: bool,
    in_barrier: bool,
    exited: bool,
    /// Inside a multi-line `mcmd=spawn ... endcmd` request, which is swallowed then refused.
    in_mcmd: bool,
}

pub struct PmiServer {
    size: usize,
    kvsname: String,
    kvs: HashMap<String, String>,
    ranks: Vec<RankState>,
    barrier_count: usize,
}

impl PmiServer {
    pub fn new(size: usize, kvsname: String) -> Self {
        let mut kvs = HashMap::new();
        // MPICH reads this key to learn which ranks share a node (Hydra sets it too):
        // "(vector,(first node, node count, ranks per node))": here all ranks on node 0.
        kvs.insert("PMI_process_mapping".to_owned(), format!("(vector,(0,1,{size}))"));
        PmiServer { size, kvsname, kvs, ranks: vec![RankState::default(); size], barrier_count: 0 }
    }

    /// Sets `PMI_process_mapping` (which ranks share a node) for a job on several hosts.
    pub fn set_process_mapping(&mut self, value: String) {
        self.kvs.insert("PMI_process_mapping".to_owned(), value);
    }

    /// Whether the rank has done `cmd=init` and not yet `cmd=finalize`.
    pub fn mid_session(&self, rank: usize) -> bool {
        self.ranks[rank].inited && !self.ranks[rank].finalized
    }

    /// Records that a rank's process is gone. It can never join a barrier again.
    pub fn rank_exited(&mut self, rank: usize) {
        self.ranks[rank].exited = true;
    }

    /// A rank that has exited while others wait for it in a barrier (which can then never
    /// complete), if there is one: the launcher must stop the job instead of hanging.
    pub fn barrier_blocked_by(&self) -> Option<usize> {
        if self.barrier_count == 0 {
            return None;
        }
        self.ranks.iter().position(|r| r.exited && !r.in_barrier)
    }

    /// Handles one line from `rank`, appending what to do to `out`.
    pub fn handle_line(&mut self, rank: usize, line: &str, out: &mut Vec<Event>) {
        let reply = |out: &mut Vec<Event>, cmd: &str, fields: &[(&str, &str)]| {
            out.push(Event::Reply { rank, line: format_line(cmd, fields) })
        };
        if self.ranks[rank].in_mcmd {
            if line.trim() == "endcmd" {
                self.ranks[rank].in_mcmd = false;
                reply(out, "spawn_result", &[("rc", "-1"), ("msg", "bbrun_does_not_spawn")]);
            }
            return;
        }
        let command = match Command::parse(line) {
            Ok(c) => c,
            Err(e) => return out.push(Event::Malformed { rank, error: e.to_string() }),
        };
        let size = self.size.to_string();
        match command {
            Command::InitAck { .. } => {
                let rank_text = rank.to_string();
                reply(out, "initack", &[]);
                reply(out, "set", &[("size", &size)]);
                reply(out, "set", &[("rank", &rank_text)]);
                reply(out, "set", &[("debug", "0")]);
            }
            Command::Init { version, .. } => {
                let rc = if version == 1 { "0" } else { "-1" };
                self.ranks[rank].inited |= version == 1;
                reply(out, "response_to_init", &[("pmi_version", "1"), ("pmi_subversion", "1"), ("rc", rc)]);
            }
            Command::GetMaxes => {
                let (k, l, v) = (KVSNAME_MAX.to_string(), KEYLEN_MAX.to_string(), VALLEN_MAX.to_string());
                reply(out, "maxes", &[("kvsname_max", &k), ("keylen_max", &l), ("vallen_max", &v), ("rc", "0")]);
            }
            Command::GetMyKvsname => reply(out, "my_kvsname", &[("kvsname", &self.kvsname), ("rc", "0")]),
            Command::GetAppnum => reply(out, "appnum", &[("appnum", "0"), ("rc", "0")]),
            Command::GetUniverseSize => reply(out, "universe_size", &[("size", &size), ("rc", "0")]),
            Command::Put { kvsname, key, value } => {
                if kvsname != self.kvsname {
                    reply(out, "put_result", &[("rc", "-1"), ("msg", "unknown_kvsname")]);
                } else {
                    // A second put of a key replaces the value (Hydra refuses it; being liberal
                    // costs nothing here and lets a rank republish its address).
                    self.kvs.insert(key, value);
                    reply(out, "put_result", &[("rc", "0"), ("msg", "success")]);
                }
            }
            Command::Get { kvsname, key } => match self.kvs.get(&key) {
                Some(value) if kvsname == self.kvsname => {
                    reply(out, "get_result", &[("rc", "0"), ("msg", "success"), ("value", value)])
                }
                _ => {
                    let msg = format!("key_{key}_not_found");
                    reply(out, "get_result", &[("rc", "-1"), ("msg", &msg), ("value", "unknown")]);
                }
            },
            Command::BarrierIn => {
                if !self.ranks[rank].in_barrier {
                    self.ranks[rank].in_barrier = true;
                    self.barrier_count += 1;
                }
                if self.barrier_count == self.size {
                    self.barrier_count = 0;
                    for (r, state) in self.ranks.iter_mut().enumerate() {
                        state.in_barrier = false;
                        out.push(Event::Reply { rank: r, line: format_line("barrier_out", &[("rc", "0")]) });
                    }
                }
            }
            Command::Abort { code, msg } => out.push(Event::Abort { rank, code, msg }),
            Command::Finalize => {
                self.ranks[rank].finalized = true;
                reply(out, "finalize_ack", &[("rc", "0")]);
            }
            Command::Unsupported { cmd } if cmd.starts_with("mcmd:") => {
                self.ranks[rank].in_mcmd = true;
                out.push(Event::Unsupported { rank, cmd });
            }
            Command::Unsupported { cmd } => {
                let reply_cmd = format!("{cmd}_result");
                reply(out, &reply_cmd, &[("rc", "-1"), ("msg", "unsupported_by_bbrun")]);
                out.push(Event::Unsupported { rank, cmd });
            }
        }
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
        let mut s = PmiServer::new(2, "kvs_1".into());
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
        let mut s = PmiServer::new(1, "k".into());
        let e = run(&mut s, 0, "cmd=init pmi_version=2 pmi_subversion=0");
        assert!(replies(&e)[0].1.contains("rc=-1"));
        assert!(!s.mid_session(0));
    }

    #[test]
    fn put_then_get_and_missing_keys() {
        let mut s = PmiServer::new(2, "k".into());
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
        let mut s = PmiServer::new(3, "k".into());
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
        let mut s = PmiServer::new(3, "k".into());
        s.rank_exited(2);
        assert_eq!(s.barrier_blocked_by(), None, "no one waits yet");
        run(&mut s, 0, "cmd=barrier_in");
        assert_eq!(s.barrier_blocked_by(), Some(2));
    }

    #[test]
    fn abort_malformed_and_unsupported() {
        let mut s = PmiServer::new(2, "k".into());
        let e = run(&mut s, 1, "cmd=abort exitcode=7 error_msg=out of memory");
        assert_eq!(e, [Event::Abort { rank: 1, code: 7, msg: "out of memory".into() }]);
        let e = run(&mut s, 0, "hello");
        assert!(matches!(&e[..], [Event::Malformed { rank: 0, .. }]));
        let e = run(&mut s, 0, "cmd=publish_name service=a port=b");
        assert_eq!(replies(&e), [(0, "cmd=publish_name_result rc=-1 msg=unsupported_by_bbrun\n")]);
    }

    #[test]
    fn multi_line_spawn_is_swallowed_then_refused() {
        let mut s = PmiServer::new(1, "k".into());
        let e = run(&mut s, 0, "mcmd=spawn");
        assert!(matches!(&e[..], [Event::Unsupported { .. }]));
        assert!(run(&mut s, 0, "nprocs=2").is_empty());
        let e = run(&mut s, 0, "endcmd");
        assert!(replies(&e)[0].1.starts_with("cmd=spawn_result rc=-1"));
    }

    #[test]
    fn port_mode_introduction_gets_set_lines() {
        let mut s = PmiServer::new(4, "k".into());
        let e = run(&mut s, 3, "cmd=initack pmiid=3");
        let lines: Vec<_> = replies(&e).iter().map(|r| r.1).collect();
        assert_eq!(lines, ["cmd=initack\n", "cmd=set size=4\n", "cmd=set rank=3\n", "cmd=set debug=0\n"]);
    }
}

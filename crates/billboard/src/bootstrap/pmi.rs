//! PMI client: how a rank started by `bbrun`, MPICH's Hydra or Slurm's `srun --mpi=pmi2` learns
//! its rank, the job size, and exchanges the addresses of its peers (a key-value space plus a
//! barrier). It speaks PMI-1 ([`wire`]), or PMI-2 ([`v2`]) where [`VERSION`] says: in a Slurm
//! step not started by bbrun, PMI-2 being Slurm's own protocol (its `--mpi=pmi2` plugin serves
//! PMI-1 lines too; bbrun only those). Not under Hydra: its PMI-2 `kvs-fence` returns before
//! the other ranks reach it (measured), which the set-up's barriers cannot take.
//!
//! The launcher tells the process how to reach it through the environment, as Hydra does:
//! - `PMI_FD=<fd>`: an inherited, connected stream socket; `PMI_RANK` and `PMI_SIZE` give the
//!   rank and job size (what `bbrun` and Hydra's local launches use);
//! - `PMI_PORT=<host>:<port>` and `PMI_ID=<id>`: connect over TCP, introduce ourselves with
//!   `cmd=initack pmiid=<id>`, and learn size and rank from the server's `cmd=set` lines.
//!
//! The wire format is documented in [`wire`]. Every call is a request and its reply, blocking:
//! PMI is used only while the job starts and ends, never on a message path.

pub mod v2;
pub mod wire;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::tunables::Tunable;
use crate::{Error, Result};
use wire::{format_line, parse_line, Message, MAX_LINE};

pub static VERSION: Tunable = Tunable::new(
    "BB_PMI",
    0,
    "PMI wire to the launcher: 1 (bbrun, Hydra, Slurm) or 2 (Slurm's srun --mpi=pmi2; not Hydra, whose PMI-2 fence is no barrier); 0: 2 in a Slurm step bbrun did not start",
);

/// Limits used when a server's `cmd=maxes` omits one (simple PMI's own defaults).
const DEFAULT_KVSNAME_MAX: usize = 256;
const DEFAULT_KEYLEN_MAX: usize = 64;
const DEFAULT_VALLEN_MAX: usize = 1024;

/// `PMI_FD` names one descriptor; two clients owning it would close it twice.
static PMI_FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// A connection to the job's PMI-1 server.
pub struct Pmi {
    conn: BufReader<File>,
    rank: usize,
    size: usize,
    appnum: i32,
    kvsname: String,
    keylen_max: usize,
    vallen_max: usize,
    finalized: bool,
    /// Speaking PMI-2 (whose key-value space is named by the job id, [`Pmi::kvsname`]).
    v2: bool,
}

/// How the environment says to reach the server.
#[derive(Debug, PartialEq, Eq)]
enum Endpoint {
    Fd { fd: i32, rank: usize, size: usize },
    Port { addr: String, pmiid: String },
}

impl Pmi {
    /// Connects using `PMI_FD` (an inherited fd) or `PMI_PORT` (`host:port`) + `PMI_ID`, then
    /// does `init`, `get_maxes`, `get_my_kvsname` and `get_appnum`. `Ok(None)` when neither
    /// variable is set: the process was started without a launcher (a singleton).
    pub fn from_env() -> Result<Option<Pmi>> {
        match endpoint_from(|name| std::env::var(name).ok())? {
            None => Ok(None),
            Some(Endpoint::Fd { fd, rank, size }) => {
                let conn = take_inherited_fd(fd)?;
                Pmi::start(conn, Some((rank, size)), None).map(Some)
            }
            Some(Endpoint::Port { addr, pmiid }) => {
                let stream = TcpStream::connect(addr.as_str()).map_err(|e| {
                    Error::Bootstrap(format!("cannot connect to the PMI server at PMI_PORT={addr}: {e}"))
                })?;
                // Lines are small and each waits for its reply: Nagle would only add delay.
                let _ = stream.set_nodelay(true);
                Pmi::start(File::from(OwnedFd::from(stream)), None, Some(&pmiid)).map(Some)
            }
        }
    }

    /// Runs the opening handshake over a connected stream. `known` is (rank, size) when the
    /// environment gave them; otherwise `pmiid` is sent and the server's `cmd=set` lines say.
    fn start(conn: File, known: Option<(usize, usize)>, pmiid: Option<&str>) -> Result<Pmi> {
        let mut pmi = Pmi {
            conn: BufReader::new(conn),
            rank: 0,
            size: 0,
            appnum: 0,
            kvsname: String::new(),
            keylen_max: DEFAULT_KEYLEN_MAX,
            vallen_max: DEFAULT_VALLEN_MAX,
            finalized: false,
            v2: false,
        };
        match (known, pmiid) {
            (Some((rank, size)), _) => (pmi.rank, pmi.size) = (rank, size),
            (None, pmiid) => pmi.learn_rank_and_size(pmiid.unwrap_or("0"))?,
        }
        if pmi.rank >= pmi.size {
            return Err(Error::Bootstrap(format!("PMI says rank {} of a job of size {}", pmi.rank, pmi.size)));
        }

        if use_pmi2(|name| std::env::var(name).ok()) {
            pmi.start_v2()?;
            return Ok(pmi);
        }
        let init = format_line("init", &[("pmi_version", "1"), ("pmi_subversion", "1")]);
        let reply = pmi.call(&init, "response_to_init")?;
        pmi.check_rc(&reply, "init")?;
        if let Some(v) = reply.get("pmi_version") {
            if v.trim() != "1" {
                return Err(Error::Bootstrap(format!("the PMI server speaks PMI version {v}, not 1")));
            }
        }

        let maxes = pmi.call(&format_line("get_maxes", &[]), "maxes")?;
        pmi.check_rc(&maxes, "get_maxes")?;
        let limit = |key, default| maxes.get(key).map_or(Ok(default), |_| maxes.require_int::<usize>(key));
        let kvsname_max = limit("kvsname_max", DEFAULT_KVSNAME_MAX)?;
        pmi.keylen_max = limit("keylen_max", DEFAULT_KEYLEN_MAX)?;
        pmi.vallen_max = limit("vallen_max", DEFAULT_VALLEN_MAX)?;

        let name = pmi.call(&format_line("get_my_kvsname", &[]), "my_kvsname")?;
        pmi.check_rc(&name, "get_my_kvsname")?;
        pmi.kvsname = name.require("kvsname")?.to_owned();
        if pmi.kvsname.is_empty() || pmi.kvsname.len() > kvsname_max {
            return Err(Error::Bootstrap(format!("PMI kvsname {:?} is empty or too long", pmi.kvsname)));
        }

        let appnum = pmi.call(&format_line("get_appnum", &[]), "appnum")?;
        pmi.check_rc(&appnum, "get_appnum")?;
        pmi.appnum = appnum.get("appnum").map_or(Ok(0), |_| appnum.require_int("appnum"))?;
        Ok(pmi)
    }

    /// The PMI-2 handshake ([`v2`]): version 2 asked in a PMI-1 line, then `fullinit` (which
    /// tells size and appnum, and checks the rank) and `job-getid` (the key-value space's name).
    fn start_v2(&mut self) -> Result<()> {
        let init = format_line("init", &[("pmi_version", "2"), ("pmi_subversion", "0")]);
        let reply = self.call(&init, "response_to_init")?;
        self.check_rc(&reply, "init")?;
        if reply.get("pmi_version").map(str::trim) != Some("2") {
            return Err(Error::Bootstrap(format!(
                "asked for PMI-2 (BB_PMI), the server offers version {}",
                reply.get("pmi_version").unwrap_or("(none)")
            )));
        }
        self.v2 = true;
        let rank = self.rank.to_string();
        // Slurm names the job in PMI_JOBID and refuses a fullinit without it; Hydra sets none.
        let jobid = std::env::var("PMI_JOBID").ok().filter(|j| !j.trim().is_empty());
        let mut fields = vec![("pmirank", rank.as_str()), ("threaded", "FALSE")];
        if let Some(jobid) = &jobid {
            fields.insert(0, ("pmijobid", jobid));
        }
        let full = self.call2("fullinit", &fields, "fullinit")?;
        let (rank, size) = (full.require_int::<usize>("rank")?, full.require_int::<usize>("size")?);
        if (rank, size) != (self.rank, self.size) {
            return Err(Error::Bootstrap(format!(
                "PMI-2 fullinit says rank {rank} of {size}, the environment rank {} of {}",
                self.rank, self.size
            )));
        }
        self.appnum = full.get("appnum").map_or(Ok(0), |_| full.require_int("appnum"))?;
        self.kvsname = self.call2("job-getid", &[], "job-getid")?.require("jobid")?.to_owned();
        if self.kvsname.is_empty() {
            return Err(Error::Bootstrap("PMI-2 job-getid gave an empty job id".into()));
        }
        self.vallen_max = v2::MAX_BODY / 2;
        Ok(())
    }

    /// Sends PMI-2 command `cmd` and reads its `cmd-response`, which must have rc=0.
    fn call2(&mut self, cmd: &str, fields: &[(&str, &str)], what: &str) -> Result<Message> {
        send_all(self.conn.get_ref(), &v2::encode(cmd, fields))
            .map_err(|e| Error::Bootstrap(format!("cannot send {cmd} to the PMI-2 server: {e}")))?;
        let reply = self.read_message(cmd)?;
        if reply.cmd != format!("{cmd}-response") {
            return Err(Error::Bootstrap(format!(
                "expected cmd={cmd}-response from the PMI-2 server, got cmd={}",
                reply.cmd
            )));
        }
        self.check_rc(&reply, what)?;
        Ok(reply)
    }

    /// Reads one PMI-2 message; end of stream is an error that says what we waited for.
    fn read_message(&mut self, request: &str) -> Result<Message> {
        let closed = |e: std::io::Error| {
            Error::Bootstrap(format!(
                "the PMI-2 server closed the connection or failed ({e}) while we waited for the reply to {request}; \
                 did the launcher die?"
            ))
        };
        let mut length = [0u8; v2::LENGTH_DIGITS];
        self.conn.read_exact(&mut length).map_err(closed)?;
        let mut body = vec![0u8; v2::body_length(&length)?];
        self.conn.read_exact(&mut body).map_err(closed)?;
        let body = String::from_utf8(body)
            .map_err(|_| Error::Bootstrap(format!("the PMI-2 reply to {request} is not UTF-8")))?;
        v2::parse(&body)
    }

    /// PMI_PORT mode: `cmd=initack pmiid=ID`, answered by `cmd=initack` and three `cmd=set`
    /// lines (size, rank, debug), as in MPICH's simple PMI.
    fn learn_rank_and_size(&mut self, pmiid: &str) -> Result<()> {
        self.call(&format_line("initack", &[("pmiid", pmiid)]), "initack")?;
        let (mut rank, mut size, mut debug) = (None, None, false);
        while rank.is_none() || size.is_none() || !debug {
            let set = self.read_reply("set", "initack")?;
            rank = set.get("rank").map_or(Ok(rank), |_| set.require_int("rank").map(Some))?;
            size = set.get("size").map_or(Ok(size), |_| set.require_int("size").map(Some))?;
            debug |= set.get("debug").is_some();
        }
        (self.rank, self.size) = (rank.unwrap_or(0), size.unwrap_or(0));
        Ok(())
    }

    /// This process's rank in the job, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Which application of an MPMD launch (`a : b`) this process belongs to; 0 for most jobs.
    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// The name of the job's key-value space.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Stores `key=value` in the job's key-value space; other ranks see it after a [`barrier`].
    ///
    /// PMI-1 cannot carry spaces, `=` in keys, or newlines: such text is refused here with a
    /// clear error rather than garbled on the wire.
    ///
    /// [`barrier`]: Pmi::barrier
    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        self.check_key(key)?;
        if value.len() >= self.vallen_max || value.contains([' ', '\t', '\n', '\r']) {
            return Err(Error::Bootstrap(format!(
                "PMI value for key {key:?} is {} bytes or holds white space; the server accepts \
                 at most {} bytes without spaces",
                value.len(),
                self.vallen_max - 1
            )));
        }
        if self.v2 {
            return self.call2("kvs-put", &[("key", key), ("value", value)], &format!("put of key {key:?}")).map(drop);
        }
        let line = format_line("put", &[("kvsname", &self.kvsname), ("key", key), ("value", value)]);
        let reply = self.call(&line, "put_result")?;
        self.check_rc(&reply, &format!("put of key {key:?}"))
    }

    /// Reads `key` from the job's key-value space.
    pub fn get(&mut self, key: &str) -> Result<String> {
        self.check_key(key)?;
        if self.v2 {
            let jobid = self.kvsname.clone();
            let reply = self.call2(
                "kvs-get",
                &[("jobid", &jobid), ("srcid", "-1"), ("key", key)],
                &format!("get of key {key:?}"),
            )?;
            if reply.get("found") != Some("TRUE") {
                return Err(Error::Bootstrap(format!("PMI-2 get of key {key:?}: no such key")));
            }
            return Ok(reply.require("value")?.to_owned());
        }
        let line = format_line("get", &[("kvsname", &self.kvsname), ("key", key)]);
        let reply = self.call(&line, "get_result")?;
        self.check_rc(&reply, &format!("get of key {key:?}"))?;
        Ok(reply.require("value")?.to_owned())
    }

    /// Waits until every rank of the job has called `barrier`; puts made before it are then
    /// visible to every rank's `get`.
    pub fn barrier(&mut self) -> Result<()> {
        if self.v2 {
            return self.call2("kvs-fence", &[], "barrier").map(drop);
        }
        let reply = self.call(&format_line("barrier_in", &[]), "barrier_out")?;
        self.check_rc(&reply, "barrier")
    }

    /// Asks the launcher to end the whole job with exit code `code`; `msg` says why. The
    /// server sends no reply (it kills the job), so this returns once the request is written.
    pub fn abort(&mut self, code: i32, msg: &str) -> Result<()> {
        let code = code.to_string();
        let msg: String = msg.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        if self.v2 {
            let msg = format!("exit code {code}: {msg}");
            return send_all(self.conn.get_ref(), &v2::encode("abort", &[("isworldabort", "TRUE"), ("msg", &msg)]))
                .map_err(|e| Error::Bootstrap(format!("cannot send abort to the PMI-2 server: {e}")));
        }
        // error_msg must come last: it takes the rest of the line.
        let line = format_line("abort", &[("exitcode", &code), ("error_msg", &msg)]);
        self.send(&line, "abort")
    }

    /// Tells the server this rank is done with PMI and waits for its acknowledgement. A rank
    /// that exits without it is reported by `bbrun` as having died before finalizing.
    pub fn finalize(&mut self) -> Result<()> {
        if self.finalized {
            return Ok(());
        }
        if self.v2 {
            self.call2("finalize", &[], "finalize")?;
        } else {
            let reply = self.call(&format_line("finalize", &[]), "finalize_ack")?;
            self.check_rc(&reply, "finalize")?;
        }
        self.finalized = true;
        Ok(())
    }

    /// The number of processes the job may hold in all (`MPI_UNIVERSE_SIZE`).
    /// Hydra answers -1 when it does not know: then 0.
    pub fn universe_size(&mut self) -> Result<usize> {
        if self.v2 {
            let reply = self.call2("info-getjobattr", &[("key", "universeSize")], "get of universeSize")?;
            return match reply.get("found") {
                Some("TRUE") => Ok(reply.require_int::<i64>("value")?.max(0) as usize),
                _ => Ok(0),
            };
        }
        let reply = self.call(&format_line("get_universe_size", &[]), "universe_size")?;
        self.check_rc(&reply, "get_universe_size")?;
        Ok(reply.require_int::<i64>("size")?.max(0) as usize)
    }

    /// Asks the launcher to start `commands` as one new job (MPI_Comm_spawn_multiple), with
    /// `preput` in its key-value space: MPICH's simple-PMI wire, one `mcmd=spawn` block per
    /// command, answered by one `cmd=spawn_result` after the last. A refusal says why (the
    /// launcher names the command it could not start). Returns bbrun's number for the new group
    /// (`bb_spawn`, for [`Pmi::spawn_state`]); `None` from a launcher that gives none (Hydra).
    pub fn spawn(&mut self, commands: &[SpawnCommand], preput: &[(&str, &str)]) -> Result<Option<u32>> {
        self.pmi1_only("MPI_Comm_spawn")?;
        if std::env::var_os("BB_JOBID").is_none() {
            // Not bbrun's job: the launcher (Hydra) starts what it is asked, and a command that
            // cannot run is only an error line of its proxy, while the parents would wait
            // BB_SPAWN_WAIT_MS. What runs here is checked here first, as bbrun checks it.
            for c in commands.iter().filter(|c| c.info("host").is_none_or(this_machine)) {
                super::program::spawned_program(&c.command, c.info("wdir"), c.info("path")).map_err(Error::Spawn)?;
            }
        }
        let clean = |what: &str, text: &str| -> Result<()> {
            if text.contains(['\n', '\r']) {
                return Err(Error::Spawn(format!("{what} {text:?} holds a line break, which PMI cannot carry")));
            }
            Ok(())
        };
        let mut block = String::new();
        for (i, c) in commands.iter().enumerate() {
            clean("command", &c.command)?;
            block.push_str(&format!("mcmd=spawn\nnprocs={}\nexecname={}\n", c.nprocs, c.command));
            block.push_str(&format!("totspawns={}\nspawnssofar={}\n", commands.len(), i + 1));
            block.push_str(&format!("argcnt={}\n", c.args.len()));
            for (k, a) in c.args.iter().enumerate() {
                clean("argument", a)?;
                block.push_str(&format!("arg{}={a}\n", k + 1));
            }
            block.push_str(&format!("preput_num={}\n", preput.len()));
            for (k, (key, value)) in preput.iter().enumerate() {
                block.push_str(&format!("preput_key_{k}={key}\npreput_val_{k}={value}\n"));
            }
            block.push_str(&format!("info_num={}\n", c.info.len()));
            for (k, (key, value)) in c.info.iter().enumerate() {
                clean("info value", value)?;
                block.push_str(&format!("info_key_{k}={key}\ninfo_val_{k}={value}\n"));
            }
            block.push_str("endcmd\n");
        }
        self.send(&block, "spawn")?;
        let reply = self.read_reply("spawn_result", "spawn")?;
        match reply.rc()? {
            0 => Ok(reply.get("bb_spawn").and_then(|id| id.parse().ok())),
            rc => Err(Error::Spawn(
                reply
                    .get("error_msg")
                    .or(reply.get("msg"))
                    .map_or_else(|| format!("the launcher refused the spawn (rc={rc})"), str::to_owned),
            )),
        }
    }

    /// Publishes `port` under `service` in the launcher's name service (MPI_Publish_name).
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<()> {
        self.pmi1_only("MPI_Publish_name")?;
        let reply =
            self.call(&format_line("publish_name", &[("service", service), ("port", port)]), "publish_result")?;
        self.check_rc(&reply, &format!("publish of service {service:?}"))
    }

    /// Withdraws `service` (MPI_Unpublish_name).
    pub fn unpublish_name(&mut self, service: &str) -> Result<()> {
        self.pmi1_only("MPI_Unpublish_name")?;
        let reply = self.call(&format_line("unpublish_name", &[("service", service)]), "unpublish_result")?;
        self.check_rc(&reply, &format!("unpublish of service {service:?}"))
    }

    /// The port published under `service` (MPI_Lookup_name).
    pub fn lookup_name(&mut self, service: &str) -> Result<String> {
        self.pmi1_only("MPI_Lookup_name")?;
        let reply = self.call(&format_line("lookup_name", &[("service", service)]), "lookup_result")?;
        self.check_rc(&reply, &format!("lookup of service {service:?}"))?;
        Ok(reply.require("port")?.to_owned())
    }

    /// Spawning and the name service go through the launcher's PMI-1 (bbrun's or Hydra's).
    fn pmi1_only(&self, what: &str) -> Result<()> {
        match self.v2 {
            false => Ok(()),
            true => Err(Error::Spawn(format!(
                "{what} needs a launcher that serves PMI-1 (bbrun, or Hydra's mpiexec); this job speaks PMI-2 \
                 (Slurm's srun --mpi=pmi2, or BB_PMI=2)"
            ))),
        }
    }

    /// Whether bbrun's spawned group `id` failed to start (one of its processes ended before
    /// MPI_Init): why, and the ranks in the group (instances) that ended; `None` while none did.
    pub fn spawn_state(&mut self, id: u32) -> Result<Option<(String, Vec<usize>)>> {
        let reply = self.call(&format_line("bb_spawn_state", &[("id", &id.to_string())]), "bb_spawn_state_result")?;
        self.check_rc(&reply, "bb_spawn_state")?;
        let failed: Vec<usize> = reply.get("failed").unwrap_or("").split(',').filter_map(|i| i.parse().ok()).collect();
        if failed.is_empty() {
            return Ok(None);
        }
        Ok(Some((reply.get("error_msg").unwrap_or("a spawned process ended before MPI_Init").to_owned(), failed)))
    }

    fn check_key(&self, key: &str) -> Result<()> {
        if key.is_empty() || key.len() >= self.keylen_max || key.contains([' ', '\t', '\n', '\r', '=']) {
            return Err(Error::Bootstrap(format!(
                "PMI key {key:?} is empty, longer than {} bytes, or holds a space or '='",
                self.keylen_max - 1
            )));
        }
        Ok(())
    }

    fn check_rc(&self, reply: &Message, what: &str) -> Result<()> {
        match reply.rc()? {
            0 => Ok(()),
            rc => Err(Error::Bootstrap(format!(
                "PMI {what} failed (rc={rc}{}{})",
                reply.get("msg").map_or("", |_| ": "),
                reply.get("msg").unwrap_or("")
            ))),
        }
    }

    /// Sends `line` and reads the reply, which must be `cmd=<expect>`.
    fn call(&mut self, line: &str, expect: &str) -> Result<Message> {
        let request = line.split_whitespace().next().unwrap_or(line);
        self.send(line, request)?;
        self.read_reply(expect, request)
    }

    fn send(&mut self, line: &str, what: &str) -> Result<()> {
        send_all(self.conn.get_ref(), line.as_bytes())
            .map_err(|e| Error::Bootstrap(format!("cannot send {what} to the PMI server: {e}")))
    }

    /// Reads one line, which must be `cmd=<expect>`. End of stream is an error that says what
    /// we were waiting for, so a dead launcher never leaves a rank blocked forever.
    fn read_reply(&mut self, expect: &str, request: &str) -> Result<Message> {
        let mut buf = Vec::new();
        let n = (&mut self.conn)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::Bootstrap(format!("reading the PMI reply to {request} failed: {e}")))?;
        if n == 0 || buf.last() != Some(&b'\n') {
            let why = if n == 0 { "closed the connection" } else { "sent an unfinished or overlong line" };
            return Err(Error::Bootstrap(format!(
                "the PMI server {why} while we waited for cmd={expect} (the reply to {request}); \
                 did the launcher die?"
            )));
        }
        let text =
            String::from_utf8(buf).map_err(|_| Error::Bootstrap(format!("the PMI reply to {request} is not UTF-8")))?;
        let reply = parse_line(&text)?;
        if reply.cmd != expect {
            return Err(Error::Bootstrap(format!(
                "expected cmd={expect} in reply to {request}, got {:?}",
                text.trim_end()
            )));
        }
        Ok(reply)
    }
}

/// One command of a spawn: `nprocs` copies of `command args...`, placed as `info` says
/// (`host`, `wdir`, `path`: the keys MPI reserves).
#[derive(Clone, Debug, Default)]
pub struct SpawnCommand {
    pub command: String,
    pub args: Vec<String>,
    pub nprocs: usize,
    pub info: Vec<(String, String)>,
}

impl SpawnCommand {
    /// The value of info key `key`, if given.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Whether a spawn's `host` info key names this machine (its name, or the loopback's).
fn this_machine(host: &str) -> bool {
    host == "localhost" || host == "127.0.0.1" || host == crate::transport::tcp::addr::host_name()
}

/// Whether to speak PMI-2 ([`VERSION`], read through `var` for the automatic choice): in a
/// Slurm step (`SLURM_STEP_ID`) that bbrun did not start (no `BB_JOBID`).
fn use_pmi2(var: impl Fn(&str) -> Option<String>) -> bool {
    match VERSION.get() {
        1 => false,
        2 => true,
        _ => var("SLURM_STEP_ID").is_some() && var("BB_JOBID").is_none(),
    }
}

/// Reads the environment (through `var`, so tests need not change the real one).
fn endpoint_from(var: impl Fn(&str) -> Option<String>) -> Result<Option<Endpoint>> {
    let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let number = |name: &str| -> Result<usize> {
        let text = var(name)
            .ok_or_else(|| Error::Bootstrap(format!("PMI_FD is set but {name} is not: the launcher must give both")))?;
        text.trim().parse().map_err(|_| Error::Bootstrap(format!("{name}={text:?} is not a number")))
    };
    if let Some(fd) = var("PMI_FD") {
        let fd = fd
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|fd| *fd >= 0)
            .ok_or_else(|| Error::Bootstrap(format!("PMI_FD={fd:?} is not a file descriptor number")))?;
        return Ok(Some(Endpoint::Fd { fd, rank: number("PMI_RANK")?, size: number("PMI_SIZE")? }));
    }
    if let Some(addr) = var("PMI_PORT") {
        if !addr.contains(':') {
            return Err(Error::Bootstrap(format!("PMI_PORT={addr:?} is not host:port")));
        }
        let pmiid = var("PMI_ID")
            .ok_or_else(|| Error::Bootstrap("PMI_PORT is set but PMI_ID is not: the launcher must give both".into()))?;
        return Ok(Some(Endpoint::Port { addr, pmiid }));
    }
    Ok(None)
}

/// Takes ownership of the launcher's descriptor, once per process.
fn take_inherited_fd(fd: i32) -> Result<File> {
    // SAFETY: F_GETFD only reads the descriptor table; any fd number is acceptable input.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Error::Bootstrap(format!("PMI_FD={fd} is not an open file descriptor")));
    }
    if PMI_FD_TAKEN.swap(true, Ordering::AcqRel) {
        return Err(Error::Bootstrap(format!("PMI_FD={fd} is already owned by another Pmi in this process")));
    }
    // Close-on-exec: a program the rank starts must not hold the socket open, or the launcher
    // would not see it close when the rank dies.
    // SAFETY: fd is open (checked above); setting FD_CLOEXEC touches nothing else.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the launcher passed this open descriptor for PMI alone, and the flag above makes
    // this the only owner in the process, so no one else closes it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Writes all of `bytes`. On a socket it uses `send(MSG_NOSIGNAL)` so a launcher that died
/// turns into an error here, not a SIGPIPE that kills a C program using our library.
fn send_all(conn: &File, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: bytes is a valid readable buffer of bytes.len() bytes for the whole call.
        let n = unsafe { libc::send(conn.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOTSOCK) => return std::io::Write::write_all(&mut &*conn, bytes),
                _ => return Err(err),
            }
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

#[cfg(test)]
mod tests;

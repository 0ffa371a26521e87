//! Dynamic processes: two groups of processes that did not start together become one
//! intercommunicator (MPI 4.0 chapter 11). The accepting group's root holds a port
//! (`bootstrap/port.rs`), the connecting group's root reaches it; spawned children connect to
//! their parents' port the same way ([`Launcher::spawn`]), and MPI_Comm_join opens a port on
//! one side of a socket the program already has.
//!
//! How the groups join, in every member of both (collective over each local communicator):
//! 1. each process opens a listening socket and describes itself in one line (its job, its
//!    world rank there, its host, the address it listens on);
//! 2. the lines reach the root, the two roots swap their group's lines over the port's
//!    authenticated link, and each root broadcasts the other group's lines and the port's token;
//! 3. every process connects to (or accepts) every process of the other group that is not of
//!    its own job, each connection authenticated by the token (`bootstrap/port.rs`, with the
//!    TCP route's handshake), and adds them to its engine as new peers, over TCP: a billboard
//!    is mapped once, at start, by one job's ranks. Processes of the same job (two groups of one MPI_COMM_WORLD) keep
//!    their routes;
//! 4. a context id free in all of them is agreed on over the union (accepting group first).
//!
//! A failure at the root (no such port, a link that breaks) is broadcast, so every member of
//! the group returns the error and none waits for a link that will not come.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::comm::{Communicator, Source, TagMatch};
use super::context;
use super::intercomm::Remote;
use crate::bootstrap::port::{JoinEnd, JoinPeer, Link, Port, PortName, Secret};
use crate::bootstrap::Job;
use crate::tunables::Tunable;
use crate::{Error, Result};

pub static SPAWN_WAIT_MS: Tunable = Tunable::new(
    "BB_SPAWN_WAIT_MS",
    120_000,
    "how long MPI_Comm_spawn waits for its children to connect before it fails (ms; a loaded host may start them slowly)",
)
.read_at(crate::tunables::Effect::EachUse);

/// This process's job, as the other group must know it to tell who shares its routes.
static JOB_ID: OnceLock<String> = OnceLock::new();

/// Host indices of the billboards of other jobs, by `job#node`: the same billboard gets the
/// same index in every join, so every process of a communicator sees the same hosts. With
/// each, how many joined peers live there; a key goes with the last of them, so a program
/// that spawns in a loop keeps no entry per child job.
static NODE_KEYS: Mutex<Option<HashMap<String, (usize, usize)>>> = Mutex::new(None);

/// The ports this process has open, by name (MPI_Open_port .. MPI_Close_port).
static PORTS: Mutex<Vec<Port>> = Mutex::new(Vec::new());

/// Processes of another job joined by one MPI_Comm_accept/connect/spawn/join (engine peers
/// `peers`), held by the intercommunicator made with them and by every communicator made from
/// it. When the last of those goes (MPI_Comm_disconnect, MPI_Comm_free), their connections
/// close and their numbers go to the next processes to join, so a server that accepts clients
/// one after another keeps no socket of those gone and its per-peer tables do not grow.
/// Communicators are never dropped inside the engine (it holds none), so taking its lock here
/// is safe.
pub(crate) struct JoinedPeers {
    engine: crate::engine::EngineRef,
    peers: Vec<usize>,
    /// Each peer's `job#node` in [`NODE_KEYS`].
    node_keys: Vec<String>,
}

impl Drop for JoinedPeers {
    fn drop(&mut self) {
        self.engine.release_peers(&self.peers);
        let mut map = lock(&NODE_KEYS);
        let Some(map) = map.as_mut() else { return };
        for key in &self.node_keys {
            if let Some((_, holders)) = map.get_mut(key) {
                *holders -= 1;
                if *holders == 0 {
                    map.remove(key);
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn set_job_id(id: &str) {
    let _ = JOB_ID.set(id.to_string());
}

fn job_id() -> &'static str {
    JOB_ID.get().map_or("", String::as_str)
}

/// Opens a port (MPI_Open_port) and returns its name.
pub fn open_port() -> Result<String> {
    let port = Port::open()?;
    let name = port.name.clone();
    lock(&PORTS).push(port);
    Ok(name)
}

/// Closes a port this process opened (MPI_Close_port).
pub fn close_port(name: &str) -> Result<()> {
    let mut ports = lock(&PORTS);
    let i = ports
        .iter()
        .position(|p| p.name == name.trim())
        .ok_or_else(|| Error::Port(format!("{name:?} is not a port this process opened (or it was closed)")))?;
    ports.swap_remove(i);
    Ok(())
}

/// One process as the other group learns it: `job|world rank|node|host|port|ip,ip`.
struct Advert {
    job: String,
    world: usize,
    node: usize,
    host: String,
    port: u16,
    addrs: Vec<Ipv4Addr>,
}

impl Advert {
    fn encode(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(Ipv4Addr::to_string).collect();
        format!("{}|{}|{}|{}|{}|{}", self.job, self.world, self.node, self.host, self.port, addrs.join(","))
    }

    fn decode(line: &str) -> Result<Advert> {
        let bad = || Error::Port(format!("the other group sent a malformed description: {line:?}"));
        let f: Vec<&str> = line.split('|').collect();
        if f.len() != 6 {
            return Err(bad());
        }
        Ok(Advert {
            job: f[0].to_string(),
            world: f[1].parse().map_err(|_| bad())?,
            node: f[2].parse().map_err(|_| bad())?,
            host: f[3].to_string(),
            port: f[4].parse().map_err(|_| bad())?,
            addrs: f[5]
                .split(',')
                .filter(|a| !a.is_empty())
                .map(|a| a.parse().map_err(|_| bad()))
                .collect::<Result<_>>()?,
        })
    }

    fn node_key(&self) -> String {
        format!("{}#{}", self.job, self.node)
    }
}

/// Which side of a join this group is.
enum Side<'a> {
    /// Accepting on the port (its group comes first in the union); a spawn waits for the
    /// processes it names, until a deadline or until the launcher says they cannot come.
    Accept(&'a str, Option<SpawnWait<'a>>),
    Connect(&'a str),
}

/// How a spawn's root waits for its children: until `deadline`, or until `failed` says the
/// launcher saw one of them end before MPI_Init. `who` names them.
struct SpawnWait<'a> {
    deadline: Instant,
    who: String,
    failed: &'a dyn Fn() -> Result<()>,
}

impl Communicator {
    /// MPI_Comm_accept: waits on `port` (read at `root` only) for a group to connect, and
    /// returns the intercommunicator to it. Collective over this communicator.
    pub fn accept(&self, port: &str, root: usize) -> Result<Communicator> {
        self.join_groups(Side::Accept(port, None), root)
    }

    /// MPI_Comm_connect: connects to the group accepting on `port` (read at `root` only).
    pub fn connect(&self, port: &str, root: usize) -> Result<Communicator> {
        self.join_groups(Side::Connect(port), root)
    }

    fn join_groups(&self, side: Side<'_>, root: usize) -> Result<Communicator> {
        self.intra_only("MPI_Comm_accept and MPI_Comm_connect's communicator")?;
        self.checked_world_rank(root)?;
        let local = self.dup()?;
        let end = JoinEnd::open()?;
        let me_world = self.world_rank(self.rank());
        let mine = Advert {
            job: job_id().to_string(),
            world: me_world,
            node: self.engine().nodes()[me_world],
            host: end.host.clone(),
            port: end.port,
            addrs: end.addrs.clone(),
        };
        // 1-2: the adverts to the root, the roots swap, the other group's back with the token.
        let lines = gather_lines(&local, root, &mine.encode())?;
        let mut reply = Vec::new();
        if local.rank() == root {
            reply = match root_swap(&side, &lines.join("\n")) {
                Ok((theirs, token)) => format!("ok\n{}\n{theirs}", token.to_hex()).into_bytes(),
                // The bare reason: the members make it an error of their own kind again.
                Err(e) => format!("error\n{}", reason(e)).into_bytes(),
            };
        }
        let reply = String::from_utf8(bcast_blob(&local, root, reply)?)
            .map_err(|_| Error::Port("the other group's description is not text".into()))?;
        let mut parts = reply.splitn(3, '\n');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("ok"), Some(token), Some(theirs)) => {
                let token = Secret::from_hex(token).map_err(|e| Error::Port(e.to_string()))?;
                let theirs = theirs.lines().map(Advert::decode).collect::<Result<Vec<_>>>()?;
                let accepting = matches!(side, Side::Accept(..));
                self.mesh(local, end, theirs, accepting, &token)
            }
            (Some("error"), Some(first), rest) => {
                let why = [Some(first), rest].iter().flatten().copied().collect::<Vec<_>>().join("\n");
                Err(Error::Port(why))
            }
            _ => Err(Error::Port("the root's broadcast of the other group is malformed".into())),
        }
    }

    /// Steps 3 and 4: connections to the other group, then the intercommunicator.
    fn mesh(
        &self,
        local: Communicator,
        end: JoinEnd,
        theirs: Vec<Advert>,
        accepting: bool,
        token: &Secret,
    ) -> Result<Communicator> {
        let (n_mine, n_theirs) = (self.size(), theirs.len());
        if n_theirs == 0 {
            return Err(Error::Port("the other group has no members".into()));
        }
        let me = if accepting { self.rank() } else { n_theirs + self.rank() };
        let their_first = if accepting { n_mine } else { 0 };
        let mine_job = job_id();
        // The other group's processes of another job, in their rank order: new peers.
        let new: Vec<usize> = (0..n_theirs).filter(|&r| theirs[r].job != mine_job).collect();
        let peers: Vec<JoinPeer> = new
            .iter()
            .map(|&r| {
                let a = &theirs[r];
                JoinPeer { rank: their_first + r, host: host_label(&a.host), addrs: a.addrs.clone(), port: a.port }
            })
            .collect();
        let mut members: Vec<usize> = theirs.iter().map(|a| a.world).collect();
        let mut joined = None;
        if !new.is_empty() {
            let established = end.connect(me, n_mine + n_theirs, &peers, token)?;
            let index_of = |union_rank: usize| new.iter().position(|&r| their_first + r == union_rank);
            let established = established
                .into_iter()
                .filter_map(|(u, fd, early)| index_of(u).map(|k| (k, fd, early)))
                .collect::<Vec<_>>();
            if established.len() != new.len() {
                return Err(Error::Port(format!(
                    "only {} of the {} processes of the other group connected",
                    established.len(),
                    new.len()
                )));
            }
            let hosts = new.iter().map(|&r| host_label(&theirs[r].host)).collect();
            let node_keys: Vec<String> = new.iter().map(|&r| theirs[r].node_key()).collect();
            let nodes = self.node_indices(&node_keys);
            let numbers = self.engine().add_tcp_peers(hosts, nodes, established)?;
            for (&r, &p) in new.iter().zip(&numbers) {
                members[r] = p;
            }
            joined = Some(Arc::new(JoinedPeers { engine: self.engine().clone(), peers: numbers, node_keys }));
        } else {
            drop(end);
        }
        let mine = self.member_list();
        let union =
            if accepting { [mine.clone(), members.clone()].concat() } else { [members.clone(), mine.clone()].concat() };
        let view = self.union_view(union.clone(), me);
        let everyone: Vec<usize> = (0..union.len()).collect();
        let context = context::agree(&view, &everyone, me, super::comm::TAG_INTER)?;
        let remote = Remote { members, local, low: accepting };
        let made = self.inter_child(context, self.rank(), Some(mine), Some(remote));
        Ok(match joined {
            Some(peers) => made.holding(peers),
            None => made,
        })
    }

    /// Host indices for billboards of other jobs, named by `job#node`: the same key always
    /// gets the same index while a peer there is joined, apart from this job's hosts and from
    /// every index a peer has now.
    fn node_indices(&self, keys: &[String]) -> Vec<usize> {
        let mut map = lock(&NODE_KEYS);
        let map = map.get_or_insert_with(HashMap::new);
        let nodes = self.engine().nodes();
        keys.iter()
            .map(|key| {
                let next = nodes.iter().chain(map.values().map(|(i, _)| i)).max().map_or(0, |m| m + 1);
                let (index, holders) = map.entry(key.clone()).or_insert((next, 0));
                *holders += 1;
                *index
            })
            .collect()
    }

    /// MPI_Comm_join: the two processes at the ends of connected socket `fd` become an
    /// intercommunicator of one process each. Each opens a port and sends its name over the
    /// socket; the one with the lower name accepts, the other connects.
    pub fn join(&self, fd: std::os::fd::BorrowedFd<'_>) -> Result<Communicator> {
        let solo = self.solo();
        let port = open_port()?;
        let result = (|| {
            let theirs = swap_over_socket(fd, port.as_bytes())?;
            let theirs =
                String::from_utf8(theirs).map_err(|_| Error::Port("the other end sent no port name".into()))?;
            if theirs == port {
                return Err(Error::Port("both ends of the socket are this process".into()));
            }
            if port < theirs {
                solo.accept(&port, 0)
            } else {
                solo.connect(&theirs, 0)
            }
        })();
        let _ = close_port(&port);
        result
    }
}

/// The root's part: accept on the named port (which this process must have open) or connect
/// to it, then swap the groups' descriptions. Returns theirs and the port's token.
fn root_swap(side: &Side<'_>, mine: &str) -> Result<(String, Secret)> {
    let (mut link, token) = match side {
        Side::Accept(name, until) => {
            // The port stays open while we wait, and can be closed only after: take it out of
            // the list for the wait so MPI_Open_port in another thread is not held up.
            let port = {
                let mut ports = lock(&PORTS);
                let i = ports.iter().position(|p| p.name == name.trim()).ok_or_else(|| {
                    Error::Port(format!("{name:?} is not a port this process opened (MPI_Open_port)"))
                })?;
                ports.swap_remove(i)
            };
            let linked = match until {
                None => port.accept_link(None, &|| Ok(())),
                Some(wait) => port.accept_link(Some(wait.deadline), wait.failed).map_err(|e| match e {
                    Error::Spawn(_) => e,
                    _ => Error::Spawn(format!(
                        "{} did not connect within {} ms (BB_SPAWN_WAIT_MS): did they start?",
                        wait.who,
                        SPAWN_WAIT_MS.get()
                    )),
                }),
            };
            let token = port.token().clone();
            lock(&PORTS).push(port);
            (linked?, token)
        }
        Side::Connect(name) => {
            let name = PortName::decode(name).map_err(|e| Error::Port(e.to_string()))?;
            (Link::connect(&name).map_err(|e| Error::Port(e.to_string()))?, name.token.clone())
        }
    };
    let theirs = link.swap(mine.as_bytes())?;
    let theirs = String::from_utf8(theirs).map_err(|_| Error::Port("the other root sent no text".into()))?;
    Ok((theirs, token))
}

/// Every member's `line` at `root`, in rank order (empty elsewhere).
fn gather_lines(comm: &Communicator, root: usize, line: &str) -> Result<Vec<String>> {
    const TAG: i32 = 1;
    if comm.rank() != root {
        let blob = line.as_bytes().to_vec();
        comm.send_on(comm.context_id(), &(blob.len() as u64).to_le_bytes(), root, TAG, super::SendMode::Standard)?;
        comm.send_on(comm.context_id(), &blob, root, TAG, super::SendMode::Standard)?;
        return Ok(Vec::new());
    }
    let mut lines = Vec::with_capacity(comm.size());
    for r in 0..comm.size() {
        if r == root {
            lines.push(line.to_string());
            continue;
        }
        let mut len = [0u8; 8];
        comm.recv_on(comm.context_id(), &mut len, Source::Rank(r), TagMatch::Tag(TAG))?;
        let mut blob = vec![0u8; u64::from_le_bytes(len) as usize];
        comm.recv_on(comm.context_id(), &mut blob, Source::Rank(r), TagMatch::Tag(TAG))?;
        lines.push(String::from_utf8(blob).map_err(|_| Error::Port(format!("rank {r} described itself badly")))?);
    }
    Ok(lines)
}

/// `blob` from `root` to every member.
fn bcast_blob(comm: &Communicator, root: usize, blob: Vec<u8>) -> Result<Vec<u8>> {
    let mut len = (blob.len() as u64).to_le_bytes();
    comm.bcast_bytes(&mut len, root)?;
    let mut out = if comm.rank() == root { blob } else { vec![0u8; u64::from_le_bytes(len) as usize] };
    comm.bcast_bytes(&mut out, root)?;
    Ok(out)
}

/// Sends `mine` (length first) on a connected stream socket and reads what the other end sends.
fn swap_over_socket(fd: std::os::fd::BorrowedFd<'_>, mine: &[u8]) -> Result<Vec<u8>> {
    use rustix::net::{recv, send, RecvFlags, SendFlags};
    let io = |e: rustix::io::Errno| Error::Port(format!("MPI_Comm_join's socket: {e}"));
    let mut out = (mine.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(mine);
    let mut sent = 0;
    while sent < out.len() {
        sent += send(fd, &out[sent..], SendFlags::NOSIGNAL).map_err(io)?;
    }
    let read_exact = |buf: &mut [u8]| -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match recv(fd, &mut buf[got..], RecvFlags::empty()).map_err(io)? {
                (0, _) => {
                    return Err(Error::Port("MPI_Comm_join's socket closed before the other end answered".into()))
                }
                (n, _) => got += n,
            }
        }
        Ok(())
    };
    let mut len = [0u8; 4];
    read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > 4096 {
        return Err(Error::Port(format!("MPI_Comm_join's other end sent {len} bytes for a port name")));
    }
    let mut theirs = vec![0u8; len];
    read_exact(&mut theirs)?;
    Ok(theirs)
}

/// A host key as people read it: the name, without the network namespace number.
fn host_label(key: &str) -> String {
    key.split('~').next().unwrap_or(key).to_string()
}

/// The launcher, for what only it can do: start processes, and its name service. Shared by
/// the universe and the MPI layer's calls, which must not hold the library's state meanwhile.
#[derive(Clone)]
pub struct Launcher(pub(super) Arc<Mutex<Job>>);

pub use crate::bootstrap::pmi::SpawnCommand;

impl Launcher {
    /// MPI_UNIVERSE_SIZE: how many processes the launcher says the job may hold; `None`
    /// without a launcher, or when it does not know.
    pub fn universe_size(&self) -> Option<usize> {
        let mut job = lock(&self.0);
        job.pmi().and_then(|p| p.universe_size()).ok().filter(|&n| n > 0)
    }

    /// MPI_APPNUM: which command of its spawn started this process (0 for most jobs).
    pub fn appnum(&self) -> i32 {
        lock(&self.0).pmi().map_or(0, |p| p.appnum())
    }

    pub fn publish_name(&self, service: &str, port: &str) -> Result<()> {
        lock(&self.0).pmi()?.publish_name(service, port)
    }

    pub fn unpublish_name(&self, service: &str) -> Result<()> {
        lock(&self.0).pmi()?.unpublish_name(service)
    }

    pub fn lookup_name(&self, service: &str) -> Result<String> {
        lock(&self.0).pmi()?.lookup_name(service)
    }

    /// MPI_Comm_spawn(_multiple), collective over `comm`: `root` (the only one whose `commands`
    /// are read) has the launcher start them as one new job whose MPI_COMM_WORLD connects back
    /// to a port it opened; returns the intercommunicator to the children. A command that
    /// cannot be started is an error naming it, in every member, and no child runs; so is a
    /// child that ends before MPI_Init, as soon as the launcher (bbrun) sees it, and then
    /// `failed` (at the root) lists which of them (their ranks among the children) ended.
    pub fn spawn(
        &self,
        comm: &Communicator,
        root: usize,
        commands: Result<Vec<SpawnCommand>>,
        failed: &mut Vec<usize>,
    ) -> Result<Communicator> {
        comm.intra_only("MPI_Comm_spawn's communicator")?;
        comm.checked_world_rank(root)?;
        let mut status = Vec::new();
        let mut port = String::new();
        let mut who = String::new();
        let mut group = None;
        if comm.rank() == root {
            let started = commands.and_then(|commands| {
                let names: Vec<String> = commands.iter().map(|c| format!("'{}'", c.command)).collect();
                who = format!("the spawned processes ({})", names.join(", "));
                port = open_port()?;
                let mut job = lock(&self.0);
                group = job.pmi()?.spawn(&commands, &[(crate::bootstrap::PARENT_PORT_KEY, &port)])?;
                Ok(())
            });
            status = match started {
                Ok(()) => b"ok".to_vec(),
                Err(e) => {
                    if !port.is_empty() {
                        let _ = close_port(&port);
                    }
                    format!("error\n{}", reason(e)).into_bytes()
                }
            };
        }
        let status = bcast_blob(comm, root, status)?;
        if let Some(why) = status.strip_prefix(b"error\n") {
            return Err(Error::Spawn(String::from_utf8_lossy(why).into_owned()));
        }
        // Under Hydra a command that cannot run is refused only by its proxy, after the spawn
        // succeeded: the children's connection then never comes, and the wait must end.
        let deadline = Instant::now() + Duration::from_millis(SPAWN_WAIT_MS.get() as u64);
        let ended = std::cell::RefCell::new(Vec::new());
        let next_ask = std::cell::Cell::new(Instant::now());
        // bbrun knows when a child ends: ask it every SPAWN_ASK_EVERY while waiting.
        let ask = || -> Result<()> {
            let Some(id) = group.filter(|_| Instant::now() >= next_ask.get()) else { return Ok(()) };
            next_ask.set(Instant::now() + SPAWN_ASK_EVERY);
            match lock(&self.0).pmi()?.spawn_state(id)? {
                None => Ok(()),
                Some((why, which)) => {
                    *ended.borrow_mut() = which;
                    Err(Error::Spawn(why))
                }
            }
        };
        let wait = SpawnWait { deadline, who, failed: &ask };
        let children = comm.join_groups(Side::Accept(&port, Some(wait)), root).map_err(|e| match e {
            Error::Port(why) => Error::Spawn(why),
            other => other,
        });
        *failed = ended.take();
        if comm.rank() == root {
            let _ = close_port(&port);
        }
        children
    }
}

/// How often a spawn's root asks bbrun whether a child ended before MPI_Init: a failed spawn
/// is reported within about this, and 20 PMI round trips a second cost the launcher nothing.
const SPAWN_ASK_EVERY: Duration = Duration::from_millis(50);

/// What went wrong, without the "spawn: " or "port: " its kind prints before it.
fn reason(e: Error) -> String {
    match e {
        Error::Spawn(why) | Error::Port(why) => why,
        other => other.to_string(),
    }
}

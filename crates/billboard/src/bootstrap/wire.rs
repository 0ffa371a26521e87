//! Wire-up: this rank's routes to every rank, set up through the launcher's key-value space.
//!
//! Every rank publishes where it lives and listens (`bb-route-<rank>`: its kernel, host and
//! addresses); then per host the lowest rank creates the billboard segment and publishes its
//! name (`bb-shm-<node>`), the others map it, and once all have it is unlinked; meanwhile the
//! TCP connections are made and authenticated (or the UDP route's peers are noted). A one-host
//! job under `bbrun` (which says so with `BB_NNODES=1`) skips the network part: two barriers.
//! The result is the [`Routes`] table the engine sends through.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::Job;
use crate::transport::routes::{route_between, sleep_set, Remote, Route, RouteChoice, Routes};
use crate::transport::shm;
use crate::transport::tcp::addr::{self, IfChoice};
use crate::transport::tcp::handshake::Secret;
use crate::transport::tcp::listen::listen;
use crate::transport::tcp::setup::{self, Target};
use crate::transport::tcp::TcpChannel;
use crate::transport::udp::UdpChannel;
use crate::{Error, Result};

/// Where one rank said it lives and listens.
#[derive(Clone)]
struct Advert {
    /// The kernel it runs on: hosts that are network namespaces of one machine share its cores.
    kernel: String,
    /// The CPUs it may run on (its affinity mask, 64 CPUs a word, lowest first; empty where the
    /// kernel does not say): ranks bound one to a core (Hydra's `-bind-to core`, Slurm's CPU
    /// binding) each see one CPU, and only together say how many cores the job has here.
    cpus: Vec<u64>,
    host: String,
    port: u16,
    addrs: Vec<Ipv4Addr>,
}

impl Advert {
    fn encode(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        let cpus: Vec<String> = self.cpus.iter().map(|w| format!("{w:x}")).collect();
        format!("{}|{}|{}|{}|{}", self.kernel, cpus.join("."), self.host, self.port, addrs.join(","))
    }

    fn decode(rank: usize, text: &str) -> Result<Advert> {
        let bad = || Error::Bootstrap(format!("rank {rank} published a malformed route: {text:?}"));
        let (kernel, rest) = text.split_once('|').ok_or_else(bad)?;
        let (cpus, rest) = rest.split_once('|').ok_or_else(bad)?;
        let cpus = cpus.split('.').filter(|w| !w.is_empty()).map(|w| u64::from_str_radix(w, 16).map_err(|_| bad()));
        let mut parts = rest.rsplitn(3, '|');
        let (addrs, port, host) = (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next());
        let addrs = addrs.split(',').filter(|a| !a.is_empty()).map(|a| a.parse().map_err(|_| bad()));
        Ok(Advert {
            kernel: kernel.to_string(),
            cpus: cpus.collect::<Result<_>>()?,
            host: host.ok_or_else(bad)?.to_string(),
            port: port.parse().map_err(|_| bad())?,
            addrs: addrs.collect::<Result<_>>()?,
        })
    }
}

/// This machine's kernel, as the boot id names it (unique per boot); the host key without one.
fn kernel_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|_| addr::host_key())
}

/// Sets up this rank's routes to every rank of `job` (see the module documentation).
pub(crate) fn connect(job: &mut Job) -> Result<Routes> {
    let via = RouteChoice::from_env()?;
    let one_host = std::env::var("BB_NNODES").is_ok_and(|n| n.trim() == "1");
    if job.size == 1 || (one_host && via == RouteChoice::Auto) {
        let all: Vec<usize> = (0..job.size).collect();
        let shm = shm::connect(job, &all, "0", outnumbered(job.size))?;
        return Ok(Routes::new(all, shm, None, None, vec![0; job.size]));
    }
    let me = job.rank;
    let choice = IfChoice::parse(&std::env::var("BB_TCP_IF").unwrap_or_default())?;
    // Listen on exactly the addresses offered (loopback where none is: peers on this host only).
    let mut offered = addr::offered(&choice, &addr::interfaces()?)?;
    if offered.is_empty() {
        offered.push(Ipv4Addr::LOCALHOST);
    }
    // TCP listens on them, UDP binds a socket on each: either way, the port this rank publishes.
    let (listeners, udp) = match via == RouteChoice::Udp {
        true => (None, Some(UdpChannel::bind(&offered)?)),
        false => (Some(listen(&offered)?), None),
    };
    let port = match (&listeners, &udp) {
        (Some(l), _) => l.port,
        (_, Some(u)) => u.local_addr().map_err(|e| Error::Os { call: "getsockname", errno: e })?.port(),
        _ => unreachable!("one of the two"),
    };
    let mine = Advert { kernel: kernel_id(), cpus: cpu_mask(), host: addr::host_key(), port, addrs: offered };
    job.put(&format!("bb-route-{me}"), &mine.encode())?;
    job.barrier()?;
    let mut adverts = Vec::with_capacity(job.size);
    for r in 0..job.size {
        adverts.push(if r == me { mine.clone() } else { Advert::decode(r, &job.get(&format!("bb-route-{r}"))?)? });
    }

    // Hosts in order of their lowest rank; the billboard holds this host's ranks.
    let mut host_names: Vec<&str> = Vec::new();
    let node: Vec<usize> = adverts
        .iter()
        .map(|a| {
            host_names.iter().position(|h| *h == a.host).unwrap_or_else(|| {
                host_names.push(&a.host);
                host_names.len() - 1
            })
        })
        .collect();
    let billboard: Vec<usize> = (0..job.size)
        .filter(|&r| matches!(route_between(me, r, &node, via), Route::SelfRoute | Route::SharedMemory))
        .collect();
    let segment_key = if via == RouteChoice::Auto { node[me].to_string() } else { format!("r{me}") };
    // Every rank on this machine competes for its cores, whichever route reaches it (all of
    // them TCP under BB_ROUTES=tcp, and hosts that are network namespaces of one machine share
    // it): a waiter that spins keeps the core its peer needs.
    let here: Vec<&Advert> = adverts.iter().filter(|a| a.kernel == mine.kernel).collect();
    let shm = shm::connect(job, &billboard, &segment_key, outnumber_their_cpus(&here))?;

    let targets: Vec<Target> = (0..job.size)
        .filter(|r| billboard.binary_search(r).is_err())
        .map(|r| {
            let a = &adverts[r];
            // A loopback address means this host to whoever connects: only to ranks that share it.
            let reachable = |ip: &&Ipv4Addr| node[r] == node[me] || !ip.is_loopback();
            let addrs = a.addrs.iter().filter(reachable).map(|&ip| SocketAddr::new(IpAddr::V4(ip), a.port)).collect();
            Target { rank: r, host: host_label(&a.host), addrs }
        })
        .collect();
    let mut shm = shm;
    let mut tcp = if targets.is_empty() {
        None // every rank shares this host (under a launcher that did not say so)
    } else {
        let secret = Secret::from_env().map_err(|e| {
            Error::Bootstrap(format!("{e}: ranks on different hosts need the job secret bbrun gives them"))
        })?;
        let hosts = adverts.iter().map(|a| host_label(&a.host)).collect();
        Some(match (listeners, udp) {
            (Some(listeners), _) => {
                let established = setup::establish(me, job.size, listeners, &targets, &secret)?;
                let mut tcp = TcpChannel::new(me, hosts, established)?;
                // Routes watches the socket route's lone connection beside its set.
                tcp.watch_alone()?;
                Remote::Tcp(tcp)
            }
            (None, Some(udp)) => {
                // No connection to make: a peer's first address is where its datagrams go.
                let mut addrs = vec![None; job.size];
                for t in &targets {
                    addrs[t.rank] = t.addrs.first().copied();
                }
                Remote::Udp(UdpChannel::new(me, hosts, udp, &secret, addrs)?)
            }
            (None, None) => unreachable!("one of the two"),
        })
    };
    let both = match &mut tcp {
        Some(remote) if billboard.len() > 1 => Some(sleep_set(Some(&mut shm), &[remote.waker()])?),
        _ => None,
    };
    Ok(Routes::new(billboard, shm, tcp, both, node))
}

/// Whether `ranks` processes outnumber the cores this process may run on.
fn outnumbered(ranks: usize) -> bool {
    ranks > std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether the ranks of one machine outnumber the CPUs they may run on together (the union of
/// their masks): ranks bound one to a core each see one CPU, and a wait that took that for a
/// crowded machine yielded at every look (NetPIPE under `mpiexec.hydra -bind-to core`, 1 B:
/// 0.53-0.84 us one way where unbound 0.13-0.15, 2026-11-28). Where a mask is unknown, this
/// process's own count decides, as before.
fn outnumber_their_cpus(here: &[&Advert]) -> bool {
    if here.iter().any(|a| a.cpus.is_empty()) {
        return outnumbered(here.len());
    }
    let words = here.iter().map(|a| a.cpus.len()).max().unwrap_or(0);
    let cpus: u32 =
        (0..words).map(|i| here.iter().fold(0u64, |u, a| u | a.cpus.get(i).copied().unwrap_or(0)).count_ones()).sum();
    here.len() > cpus as usize
}

/// This process's affinity mask, 64 CPUs a word (empty where the kernel does not say).
fn cpu_mask() -> Vec<u64> {
    // SAFETY: cpu_set_t is plain bits; sched_getaffinity fills at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; `set` is a cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    let mut words = vec![0u64; libc::CPU_SETSIZE as usize / 64];
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size in CPUs.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            words[cpu / 64] |= 1 << (cpu % 64);
        }
    }
    while words.last() == Some(&0) {
        words.pop();
    }
    words
}

/// A host key as people read it: the name, without the network namespace number.
fn host_label(key: &str) -> String {
    key.split('~').next().unwrap_or(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adverts_round_trip_and_bad_ones_are_named() {
        let a = Advert {
            kernel: "b00t".into(),
            cpus: vec![0x3, 0, 1 << 63],
            host: "node7~4026531833".into(),
            port: 40001,
            addrs: vec![Ipv4Addr::new(10, 0, 0, 1)],
        };
        let b = Advert::decode(3, &a.encode()).unwrap();
        assert_eq!((b.host.as_str(), b.port, b.addrs.as_slice()), ("node7~4026531833", 40001, a.addrs.as_slice()));
        assert_eq!((b.kernel.as_str(), b.cpus.as_slice()), ("b00t", a.cpus.as_slice()));
        let none = Advert::decode(3, "k||h|5|").unwrap();
        assert!(none.addrs.is_empty() && none.cpus.is_empty());
        let e = Advert::decode(3, "k|3|h|x|1.2.3.4").err().unwrap().to_string();
        assert!(e.contains("rank 3") && e.contains("h|x|1.2.3.4"), "{e}");
        assert!(Advert::decode(3, "k|3g|h|5|").is_err(), "a mask that is not hex");
        assert_eq!(host_label("node7~4026531833"), "node7");
    }

    #[test]
    fn ranks_bound_one_to_a_core_do_not_outnumber_their_cores_together() {
        let bound = |cpus: Vec<u64>| Advert { kernel: "k".into(), cpus, host: "h".into(), port: 1, addrs: vec![] };
        let (cpu0, cpu1, both) = (bound(vec![1]), bound(vec![2]), bound(vec![3]));
        // Hydra's -bind-to core: one CPU each, two between them.
        assert!(!outnumber_their_cpus(&[&cpu0, &cpu1]));
        // Both bound to one CPU, or three ranks on two: crowded.
        assert!(outnumber_their_cpus(&[&cpu0, &bound(vec![1])]));
        assert!(outnumber_their_cpus(&[&cpu0, &cpu1, &both]));
        // Masks past 64 CPUs count by their bits, whatever their lengths.
        assert!(!outnumber_their_cpus(&[&cpu0, &bound(vec![0, 1])]));
        // This process's own mask is one of them, and the sum is its CPUs at least.
        let mine = bound(cpu_mask());
        assert!(!mine.cpus.is_empty(), "sched_getaffinity says nothing here");
        assert!(!outnumber_their_cpus(&[&mine]));
    }
}

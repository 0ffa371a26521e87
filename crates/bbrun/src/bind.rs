//! Binding ranks to processors (`--bind-to`, as MPICH's Hydra `-bind-to` and Open MPI's
//! `--bind-to`): each rank of a host gets one unit of the processors its launcher may use, the
//! `local_rank`th unit, wrapping around when ranks outnumber units (as Hydra does; Open MPI
//! refuses there without `--bind-to core:overload-allowed`).
//!
//! The policy travels to every host in the ranks' environment (`BB_BIND_TO`), so an agent binds
//! its own ranks by its own host's topology, read from `/sys/devices/system/cpu`.

use std::ffi::OsStr;
use std::path::Path;

use rustix::thread::{sched_getaffinity, CpuSet};

/// The variable that carries the policy to the agents and the ranks.
pub const ENV: &str = "BB_BIND_TO";

/// What one rank is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// One logical processor.
    Hwthread,
    /// Every logical processor of one physical core.
    Core,
    /// Every processor of one package.
    Socket,
    /// Every processor of one NUMA node.
    Numa,
}

/// `none` (or nothing) is no binding; the others name a [`Unit`].
pub fn parse(word: &str) -> Result<Option<Unit>, String> {
    Ok(Some(match word {
        "" | "none" => return Ok(None),
        "hwthread" => Unit::Hwthread,
        "core" => Unit::Core,
        "socket" | "package" => Unit::Socket,
        "numa" => Unit::Numa,
        other => return Err(format!("{other:?} is not a binding (none, hwthread, core, socket or numa)")),
    }))
}

/// The processors the `local_rank`th rank gets under `unit`, from those this process may run on.
pub fn processors_for(unit: Unit, local_rank: usize) -> std::io::Result<CpuSet> {
    let allowed = allowed()?;
    let units = group(&allowed, |cpu| key(unit, cpu, Path::new("/sys/devices/system/cpu")));
    let mut set = CpuSet::new();
    units[local_rank % units.len()].iter().for_each(|&cpu| set.set(cpu));
    Ok(set)
}

/// The processors this process may run on, in order.
fn allowed() -> std::io::Result<Vec<usize>> {
    let set = sched_getaffinity(None)?;
    let cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect();
    if cpus.is_empty() {
        return Err(std::io::Error::other("this process may run on no processor"));
    }
    Ok(cpus)
}

/// The allowed processors grouped into units, units in order of their first processor.
fn group(allowed: &[usize], key: impl Fn(usize) -> (u64, u64)) -> Vec<Vec<usize>> {
    let mut units: Vec<((u64, u64), Vec<usize>)> = Vec::new();
    for &cpu in allowed {
        let k = key(cpu);
        match units.iter_mut().find(|(uk, _)| *uk == k) {
            Some((_, cpus)) => cpus.push(cpu),
            None => units.push((k, vec![cpu])),
        }
    }
    units.into_iter().map(|(_, cpus)| cpus).collect()
}

/// Which unit `cpu` belongs to, from the kernel's topology under `sys` (a processor whose
/// topology cannot be read is a unit of its own).
fn key(unit: Unit, cpu: usize, sys: &Path) -> (u64, u64) {
    let dir = sys.join(format!("cpu{cpu}"));
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join("topology").join(name)).ok()?.trim().parse().ok()
    };
    let own = (u64::MAX, cpu as u64);
    match unit {
        Unit::Hwthread => own,
        Unit::Core => read("physical_package_id").zip(read("core_id")).unwrap_or(own),
        Unit::Socket => read("physical_package_id").map_or(own, |p| (p, 0)),
        Unit::Numa => numa_node(&dir).map_or(own, |n| (n, 0)),
    }
}

/// The NUMA node of a processor: its folder holds a `nodeN` entry.
fn numa_node(cpu_dir: &Path) -> Option<u64> {
    std::fs::read_dir(cpu_dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name();
        let digits = name.as_encoded_bytes().strip_prefix(b"node")?;
        std::str::from_utf8(digits).ok()?.parse().ok()
    })
}

/// The policy in `env` (the variables a launcher passed), else in this process's environment.
pub fn policy(env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Result<Option<Unit>, String> {
    let given = env.iter().rev().find(|(k, _)| k == OsStr::new(ENV)).map(|(_, v)| v.clone());
    match given.or_else(|| std::env::var_os(ENV)) {
        Some(word) => parse(&word.to_string_lossy()).map_err(|e| format!("{ENV}: {e}")),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/sys/devices/system/cpu`: two packages, two cores each, two threads a core,
    /// the siblings numbered as Linux does on x86 (cpu N and N+4 share a core).
    fn fake_sys() -> Scratch {
        let dir = Scratch::new();
        for cpu in 0..8u64 {
            let topo = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topo).unwrap();
            let core = cpu % 4;
            std::fs::write(topo.join("physical_package_id"), format!("{}\n", core / 2)).unwrap();
            std::fs::write(topo.join("core_id"), format!("{}\n", core % 2)).unwrap();
            std::fs::create_dir_all(dir.path().join(format!("cpu{cpu}/node{}", core / 2))).unwrap();
        }
        dir
    }

    /// A scratch folder, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            let path = std::env::temp_dir().join(format!(
                "bbrun-bind-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Scratch(path)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn units_group_the_allowed_processors_by_the_kernels_topology() {
        let sys = fake_sys();
        let all: Vec<usize> = (0..8).collect();
        let by = |unit| group(&all, |cpu| key(unit, cpu, sys.path()));
        assert_eq!(by(Unit::Hwthread), (0..8).map(|c| vec![c]).collect::<Vec<_>>());
        assert_eq!(by(Unit::Core), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(by(Unit::Socket), vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        assert_eq!(by(Unit::Numa), vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        // Only what the launcher may use counts: a core with one allowed thread is still a core.
        assert_eq!(group(&[1, 2, 5], |cpu| key(Unit::Core, cpu, sys.path())), vec![vec![1, 5], vec![2]]);
    }

    #[test]
    fn a_processor_without_topology_is_its_own_unit() {
        let sys = fake_sys();
        assert_eq!(key(Unit::Core, 9, sys.path()), (u64::MAX, 9));
        assert_eq!(key(Unit::Numa, 9, sys.path()), (u64::MAX, 9));
    }

    #[test]
    fn words_name_a_unit_or_none_and_others_are_refused() {
        assert_eq!(parse("core"), Ok(Some(Unit::Core)));
        assert_eq!(parse("none"), Ok(None));
        assert_eq!(parse("hwthread"), Ok(Some(Unit::Hwthread)));
        let err = parse("cores").unwrap_err();
        assert!(err.contains("\"cores\" is not a binding") && err.contains("hwthread, core"), "{err}");
    }

    #[test]
    fn ranks_take_units_in_turn_and_wrap_around() {
        let allowed = allowed().unwrap();
        for local_rank in 0..allowed.len() * 2 {
            let set = processors_for(Unit::Hwthread, local_rank).unwrap();
            let on: Vec<usize> = allowed.iter().copied().filter(|&c| set.is_set(c)).collect();
            assert_eq!(on, vec![allowed[local_rank % allowed.len()]]);
        }
    }
}

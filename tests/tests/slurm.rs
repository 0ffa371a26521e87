//! Slurm's own launcher runs programs on Billboard's library: `srun --mpi=pmi2` starts an
//! MPICH-built program, whose ranks speak PMI-2 to Slurm's step daemon (`bootstrap/pmi/v2.rs`,
//! the choice in a Slurm step) or PMI-1 (`BB_PMI=1`; the plugin serves both).
//! A private one-node cluster (MUNGE, slurmctld and slurmd, their configuration, state, socket
//! and ports in a scratch folder of their own) runs for the test and is stopped after it.
//! Needs root, `slurm-wlm` and `munge` (scripts/test.sh installs them); skips, saying why,
//! without them. And `bbrun` inside an allocation (`salloc -n 3 bbrun ...`) places the ranks on
//! the allocation's node and starts its agent there through `srun`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bb_tests::{processes_named, root, shm_files};

/// The cluster's one node: this machine under a name bbrun does not take for it.
const NODE: &str = "bbnode";

/// A one-node Slurm cluster of our own, stopped and removed when dropped.
struct Cluster {
    dir: PathBuf,
    daemons: Vec<Child>,
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        // SAFETY: geteuid only reads the process's credentials.
        if unsafe { geteuid() } != 0 {
            return Err("the daemons need root".into());
        }
        for tool in ["munged", "slurmctld", "slurmd", "srun", "sinfo"] {
            which(tool).ok_or_else(|| format!("{tool} is not installed (apt-get install slurm-wlm munge)"))?;
        }
        let dir = std::env::temp_dir().join(format!("bb-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        let mut cluster = Cluster { dir, daemons: Vec::new() };
        let d = cluster.dir.clone();
        let path = |name: &str| d.join(name).display().to_string();
        // MUNGE, on a socket and key of its own.
        let key = random_bytes(1024)?;
        write_private(&d.join("munge.key"), &key)?;
        cluster.spawn(Command::new("munged").args([
            "--foreground",
            "--force",
            &format!("--socket={}", path("munge.socket")),
            &format!("--key-file={}", path("munge.key")),
            &format!("--pid-file={}", path("munged.pid")),
            &format!("--log-file={}", path("munged.log")),
            &format!("--seed-file={}", path("munged.seed")),
        ]))?;
        // The node is this machine under another name, so bbrun in an allocation starts its agent
        // there through srun, as on a real cluster's other nodes.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map_err(|e| e.to_string())?.trim().to_owned();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (ctld_port, d_port) = (free_port()?, free_port()?);
        let conf = format!(
            "ClusterName=bbtest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={ctld_port}\nSlurmdPort={d_port}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\nSlurmctldPidFile={ctldpid}\nSlurmdPidFile={dpid}\n\
             SlurmctldLogFile={ctldlog}\nSlurmdLogFile={dlog}\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nMpiDefault=none\nSchedulerType=sched/builtin\n\
             ReturnToService=2\nJobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n",
            sock = path("munge.socket"),
            state = path("state"),
            spool = path("spool"),
            ctldpid = path("slurmctld.pid"),
            dpid = path("slurmd.pid"),
            ctldlog = path("slurmctld.log"),
            dlog = path("slurmd.log"),
        );
        std::fs::write(d.join("slurm.conf"), conf).map_err(|e| e.to_string())?;
        wait_for(|| d.join("munge.socket").exists(), "munged's socket")?;
        cluster.spawn(Command::new("slurmctld").args(["-D", "-c", "-f", &path("slurm.conf")]))?;
        cluster.spawn(Command::new("slurmd").args(["-D", "-f", &path("slurm.conf"), "-N", NODE]))?;
        let idle = || {
            cluster_command(&d, "sinfo", &["-h", "-o", "%T"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        };
        wait_for(idle, "the node to be idle")?;
        Ok(cluster)
    }

    /// `salloc options bbrun args...` under a 60 s timeout, `input` on its stdin: bbrun inside
    /// an allocation.
    fn salloc_bbrun(&self, options: &[&str], args: &[&str], input: &[u8]) -> Output {
        use std::io::Write;
        let mut cmd = cluster_command(&self.dir, "timeout", &["-k", "5", "60", "salloc"]);
        cmd.args(options).arg(root().join("dist/bin/bbrun")).args(args);
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run salloc");
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("wait for salloc");
        let _ = writer.join();
        out
    }

    fn spawn(&mut self, cmd: &mut Command) -> Result<(), String> {
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        self.daemons.push(child.map_err(|e| format!("cannot start {cmd:?}: {e}"))?);
        Ok(())
    }

    /// `srun --mpi=pmi2 options -- program` under a 60 s timeout, our library first on the
    /// ranks' path and `BB_PMI=pmi` in their environment.
    fn srun(&self, pmi: &str, args: &[&str]) -> Output {
        let lib = format!("LD_LIBRARY_PATH={}", root().join("dist/lib").display());
        let mut cmd = cluster_command(&self.dir, "timeout", &["-k", "5", "60", "srun", "--mpi=pmi2"]);
        cmd.args(args.iter().take_while(|a| **a != "--")).args(["env", &lib, &format!("BB_PMI={pmi}")]);
        cmd.args(args.iter().skip_while(|a| **a != "--").skip(1));
        cmd.output().expect("run srun")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd and slurmctld first (they talk through MUNGE as they stop), MUNGE last.
        for child in self.daemons.iter_mut().rev() {
            // SAFETY: kill(2) of a child we started and have not reaped.
            unsafe { kill(child.id() as i32, 15) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

extern "C" {
    fn geteuid() -> u32;
    fn kill(pid: i32, sig: i32) -> i32;
}

/// `program args` with the cluster's configuration in its environment.
fn cluster_command(dir: &Path, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).env("SLURM_CONF", dir.join("slurm.conf")).stdin(Stdio::null());
    cmd
}

fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Writes `bytes` to a new file only its owner may read (MUNGE refuses a key others can).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    file.as_mut().map_err(|e| e.to_string())?.write_all(bytes).map_err(|e| e.to_string())
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn wait_for(ready: impl Fn() -> bool, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        if Instant::now() > deadline {
            return Err(format!("gave up waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Builds `tests/c/<name>.c` with MPICH's mpicc into `dir`.
fn build(name: &str, dir: &Path) -> Option<PathBuf> {
    let mpicc = which("mpicc.mpich")?;
    let exe = dir.join(name);
    let built = Command::new(mpicc)
        .args(["-O1", "-Wno-stringop-overflow", "-I"])
        .arg(root().join("tests/c"))
        .arg("-o")
        .arg(&exe)
        .arg(root().join(format!("tests/c/{name}.c")))
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "mpicc.mpich could not build tests/c/{name}.c");
    Some(exe)
}

#[test]
fn srun_runs_programs_built_for_mpich_on_billboard_and_bbrun_fills_an_allocation() {
    if !root().join("dist/lib/libmpich.so.12").exists() {
        return eprintln!("SKIP Slurm: dist/ is not built (make)");
    }
    let cluster = match Cluster::start() {
        Ok(c) => c,
        Err(why) => return eprintln!("SKIP Slurm: {why}"),
    };
    let Some(p2p) = build("p2p_basic", &cluster.dir) else {
        return eprintln!("SKIP Slurm: mpicc.mpich is missing");
    };
    let coll = build("coll_basic", &cluster.dir).expect("mpicc.mpich");
    let shm_before = shm_files();
    let runs: [(&[&str], &Path, &str); 2] = [
        (&["-n", "2", "--"], &p2p, "PASS p2p_basic"),
        // More ranks than cores: Slurm oversubscribes only when asked.
        (&["-n", "3", "--overcommit", "--"], &coll, "PASS coll_basic"),
    ];
    for ((options, exe, pass), pmi) in runs.iter().flat_map(|run| [(run, "0"), (run, "1")]) {
        let mut args = options.to_vec();
        args.push(exe.to_str().unwrap());
        let out = cluster.srun(pmi, &args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains(pass), "srun --mpi=pmi2 {args:?}, BB_PMI={pmi}:\n{text}");
        assert!(processes_named(&exe.to_string_lossy()).is_empty(), "ranks of {} outlived the step", exe.display());
    }
    // bbrun in an allocation: the ranks go on its node (this machine, named otherwise, so the
    // agent starts through srun as a job step), as many as its tasks.
    // Rank 0's stdin comes through srun too.
    let script = "[ $PMI_RANK = 0 ] && cat; echo rank $PMI_RANK of $PMI_SIZE on $BB_HOST";
    let out = cluster.salloc_bbrun(&["-n", "3", "--overcommit"], &["sh", "-c", script], b"in-1\nin-2\n");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let mut expect: Vec<String> = (0..3).map(|r| format!("rank {r} of 3 on {NODE}")).collect();
    expect.splice(0..0, ["in-1".to_string(), "in-2".to_string()]);
    assert!(
        out.status.success() && lines == expect,
        "bbrun in salloc -n 3: {lines:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cluster.salloc_bbrun(&["-n", "3", "--overcommit"], &[coll.to_str().unwrap()], b"");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("PASS coll_basic"), "bbrun coll_basic in salloc -n 3:\n{text}");
    assert!(processes_named(&coll.to_string_lossy()).is_empty(), "ranks of coll_basic outlived the job");
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the jobs left {new:?} in /dev/shm");
}

//! Helpers for the multi-process tests: find `bbrun` and the rank programs, run a job under a
//! timeout, and check that it left no process and no shared-memory file behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_path_buf()
}

/// Builds `source` (relative to the repository's root) with a compiler wrapper of Debian's
/// MPICH packages (`h5pcc.mpich`, `caf.mpich`, ...), `-O1`, into `dir/name`, in `dir`; the
/// wrapper's failure fails the test with its messages.
pub fn build_with(wrapper: &Path, source: &str, dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let built = Command::new(wrapper)
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(root().join(source))
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", wrapper.display()));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{} failed:\n{stderr}", wrapper.display());
    exe
}

/// Builds `tests/c/<name>.c` with our `dist/bin/mpicc` (`-O1`) into a folder of its own (a
/// test removes it with the program's parent folder); `None`, after a SKIP line, until `make`
/// has built `dist/`.
pub fn build_c_test(name: &str) -> Option<PathBuf> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dist = root().join("dist");
    if !dist.join("bin/mpicc").exists() || !dist.join("lib/libmpi.so.12").exists() {
        eprintln!("SKIP: dist/ is not built (make)");
        return None;
    }
    // A folder per call: tests building the same program run at once.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("bb-{name}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("make the build folder");
    Some(build_with(&dist.join("bin/mpicc"), &format!("tests/c/{name}.c"), &dir, name))
}

/// A binary of this workspace, built in the same profile as the running test.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing: build it first (`cargo build --workspace --bins`)", path.display());
    path
}

/// Files of ours in /dev/shm (`bb-*`), but those of jobs still running: a test compares the
/// files before and after its own job, and on a shared machine another engineer's job may be
/// mapping its segment just then (its name holds a live process: `bb-USER-PIDxRANDOM-...` of a
/// job's segment, PID its bbrun's; `bb-win-PID-...` of a window, PID a rank's). A leftover of
/// the test's own job names a process that has ended.
pub fn shm_files() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.retain(|n| n.starts_with("bb-") && !owner(n).is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists()));
    v.sort();
    v
}

/// The process a `/dev/shm` name of ours holds: the digits before the `x` of a job id
/// (`PIDxRANDOM`), or the part of digits after `bb-win-`.
fn owner(name: &str) -> Option<u32> {
    let parts: Vec<&str> = name.split('-').collect();
    let job = parts.iter().find_map(|p| {
        let (pid, rest) = p.split_once('x')?;
        (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty()).then_some(pid)
    });
    let plain = || match parts.as_slice() {
        ["bb", "win", pid, ..] => Some(*pid),
        _ => None,
    };
    job.or_else(plain)?.parse().ok()
}

/// Pids of live processes whose command line contains `needle` (zombies excluded).
pub fn processes_named(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// The outcome of one job.
pub struct Job {
    pub output: Output,
    pub elapsed: Duration,
    /// CPU seconds the job's processes used (user + system).
    pub cpu_seconds: f64,
}

impl Job {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }
    /// Panics with the job's output unless it exited 0.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.output.status.success(),
            "job failed ({:?})\n--- stdout\n{}\n--- stderr\n{}",
            self.output.status,
            self.stdout(),
            self.stderr()
        );
        self
    }
}

/// Runs `bbrun -n <n> <program> <args>` with `env`, killing it after `timeout`, and checks
/// that nothing of the job survives it: no rank process, no new `/dev/shm/bb-*` file.
pub fn run(n: usize, program: &str, args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Job {
    let _turn = one_job_at_a_time();
    let shm_before = shm_files();
    let cpu_before = children_cpu_seconds();
    let mut cmd = Command::new(binary("bbrun"));
    cmd.arg("-n").arg(n.to_string()).arg(binary(program)).args(args);
    cmd.envs(env.iter().copied()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn bbrun");
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().expect("wait for bbrun"));
    while !waiter.is_finished() {
        if start.elapsed() > timeout {
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc_kill(pid as i32, 9) };
            let out = waiter.join().unwrap();
            kill_all(program);
            panic!(
                "job `{program} {}` on {n} ranks timed out after {timeout:?}\n--- stdout\n{}\n--- stderr\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = waiter.join().unwrap();
    let elapsed = start.elapsed();
    let cpu_seconds = children_cpu_seconds() - cpu_before;
    let left = processes_named(&binary(program).to_string_lossy());
    kill_all(program);
    assert!(left.is_empty(), "rank processes {left:?} outlived the job");
    let shm_after = shm_files();
    let new: Vec<_> = shm_after.iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the job left {new:?} in /dev/shm");
    Job { output, elapsed, cpu_seconds }
}

/// One job at a time: the leftover checks look at every process and segment of ours, and two
/// jobs would see each other's (and share two cores besides). Hold the guard for the job.
pub fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// CPU seconds used by waited-for children so far (bbrun accumulates its ranks').
fn children_cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<[i64; 18]>::zeroed();
    // SAFETY: getrusage(RUSAGE_CHILDREN) fills a struct rusage (18 longs on x86_64 Linux).
    let usage = unsafe {
        assert_eq!(getrusage(-1, usage.as_mut_ptr().cast()), 0);
        usage.assume_init()
    };
    // ru_utime and ru_stime are (seconds, microseconds) pairs.
    (usage[0] + usage[2]) as f64 + (usage[1] + usage[3]) as f64 * 1e-6
}

fn kill_all(program: &str) {
    for pid in processes_named(&binary(program).to_string_lossy()) {
        // SAFETY: plain kill(2).
        unsafe { libc_kill(pid as i32, 9) };
    }
}

extern "C" {
    fn getrusage(who: i32, usage: *mut i64) -> i32;
    fn geteuid() -> u32;
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// A `bbrun` job started with any arguments, to act on while it runs (kill one of its
/// processes, say) before [`Running::finish`] waits for it and checks it left nothing.
pub struct Running {
    child: Option<std::process::Child>,
    start: Instant,
    shm_before: Vec<String>,
    /// Command-line fragments of the job's processes: none may outlive it.
    watch: Vec<String>,
    _turn: std::sync::MutexGuard<'static, ()>,
}

/// The command line of bbrun's host agents, for leftover checks.
pub fn agent_needle() -> String {
    format!("{} --agent", binary("bbrun").display())
}

impl Running {
    /// Starts `bbrun args...` with `stdin` as its input. `watch`: command-line fragments of the
    /// ranks (agents are always watched).
    pub fn start(args: &[&str], stdin: &[u8], watch: &[&str]) -> Running {
        Running::start_env(args, &[], stdin, watch)
    }

    /// [`Running::start`] with variables added to bbrun's environment.
    pub fn start_env(args: &[&str], env: &[(&str, &str)], stdin: &[u8], watch: &[&str]) -> Running {
        let turn = one_job_at_a_time();
        let shm_before = shm_files();
        let mut watch: Vec<String> = watch.iter().map(|w| w.to_string()).collect();
        watch.push(agent_needle());
        let mut cmd = Command::new(binary("bbrun"));
        cmd.args(args).envs(env.iter().copied()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let start = Instant::now();
        let mut child = cmd.spawn().expect("spawn bbrun");
        let mut input = child.stdin.take().unwrap();
        let data = stdin.to_vec();
        // A rank 0 that reads nothing must not block the test on a full pipe.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = input.write_all(&data);
        });
        Running { child: Some(child), start, shm_before, watch, _turn: turn }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends `sig` to bbrun itself.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc_kill(self.pid() as i32, sig) };
    }

    /// Waits for the job (killing it after `timeout`), then checks that none of its processes
    /// and no new `/dev/shm/bb-*` file is left, waiting up to `settle` for them to go (agents
    /// clean up after bbrun itself is gone).
    pub fn finish(mut self, timeout: Duration, settle: Duration) -> Job {
        let child = self.child.take().unwrap();
        let pid = child.id();
        let waiter = std::thread::spawn(move || child.wait_with_output().expect("wait for bbrun"));
        while !waiter.is_finished() {
            if self.start.elapsed() > timeout {
                // SAFETY: plain kill(2) of our own child.
                unsafe { libc_kill(pid as i32, 9) };
                let out = waiter.join().unwrap();
                self.kill_leftovers();
                panic!(
                    "bbrun timed out after {timeout:?}\n--- stdout\n{}\n--- stderr\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let output = waiter.join().unwrap();
        let elapsed = self.start.elapsed();
        let job = Job { output, elapsed, cpu_seconds: 0.0 };
        let deadline = Instant::now() + settle;
        loop {
            let (left, new_shm) = self.leftovers();
            if left.is_empty() && new_shm.is_empty() {
                return job;
            }
            if Instant::now() >= deadline {
                self.kill_leftovers();
                panic!("the job left processes {left:?} and /dev/shm files {new_shm:?}\n--- stderr\n{}", job.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn leftovers(&self) -> (Vec<u32>, Vec<String>) {
        let left: Vec<u32> = self.watch.iter().flat_map(|w| processes_named(w)).collect();
        let new_shm = shm_files().into_iter().filter(|f| !self.shm_before.contains(f)).collect();
        (left, new_shm)
    }

    fn kill_leftovers(&self) {
        for pid in self.watch.iter().flat_map(|w| processes_named(w)) {
            // SAFETY: plain kill(2).
            unsafe { libc_kill(pid as i32, 9) };
        }
        for f in self.leftovers().1 {
            let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that panicked before finish(): leave nothing running.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            self.kill_leftovers();
        }
    }
}

/// Network namespaces standing in for hosts: `bbt-<pid>-<i>`, each with `lo` up and an `eth0`
/// at 10.231.<k>.<j>/24 (j = 1..=n within this set, k numbering the sets of this process), all
/// joined by a bridge that lives in one more namespace (`bbt-<pid>-sw<k>`), so the machine's
/// own network is never touched. `i` counts on across the sets of a process, so tests running
/// in parallel never collide. Dropping it deletes them all, also when the test panics. Use
/// them with `bbrun --launcher 'ip netns exec {host}' --host <name>,...`.
pub struct Netns {
    pub names: Vec<String>,
    created: Vec<String>,
    subnet: usize,
}

impl Netns {
    /// `None`, after printing a SKIP line, when we are not root or `ip` is missing.
    pub fn create(n: usize) -> Option<Netns> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static SETS: AtomicUsize = AtomicUsize::new(0);
        static HOSTS: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: geteuid has no preconditions.
        if unsafe { geteuid() } != 0 {
            println!("SKIP: network namespaces need root");
            return None;
        }
        if !Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success()) {
            println!("SKIP: the `ip` command (iproute2) is missing");
            return None;
        }
        let pid = std::process::id();
        let subnet = SETS.fetch_add(1, Ordering::Relaxed) % 256;
        let first = HOSTS.fetch_add(n, Ordering::Relaxed) + 1;
        let mut ns = Netns { names: Vec::new(), created: Vec::new(), subnet };
        let switch = format!("bbt-{pid}-sw{subnet}");
        ns.add(&switch);
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &switch, "link", "set", "br0", "up"]);
        for j in 1..=n {
            let name = format!("bbt-{pid}-{}", first + j - 1);
            ns.add(&name);
            let port = format!("v{j}");
            ip(&["-n", &name, "link", "set", "lo", "up"]);
            ip(&["-n", &switch, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &name]);
            ip(&["-n", &switch, "link", "set", &port, "master", "br0", "up"]);
            ip(&["-n", &name, "addr", "add", &format!("{}/24", ns.address(j)), "dev", "eth0"]);
            ip(&["-n", &name, "link", "set", "eth0", "up"]);
            ns.names.push(name);
        }
        Some(ns)
    }

    fn add(&mut self, name: &str) {
        ip(&["netns", "add", name]);
        self.created.push(name.to_owned());
    }

    /// The address of host `j` (1-based) of this set on its bridge.
    pub fn address(&self, j: usize) -> String {
        format!("10.231.{}.{j}", self.subnet)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for name in self.created.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

#[cfg(test)]
mod owner_tests {
    use super::owner;

    #[test]
    fn a_shm_name_tells_the_process_whose_job_or_window_it_is() {
        assert_eq!(owner("bb-root-12345x0badf00d-1234abcd"), Some(12345));
        assert_eq!(owner("bb-some-user-77x00000001c2-deadbeef"), Some(77));
        assert_eq!(owner("bb-win-4321-0000abcd"), Some(4321));
        assert_eq!(owner("bb-other"), None);
    }
}

/// What the waits of one rank of `bb-pt2pt onecore` (or `ring`) cost per message it received:
/// yields of the core, polls of the routes, and receive calls that found data, found none, and
/// waited in the kernel.
#[derive(Debug)]
pub struct WaitCalls {
    pub yields: f64,
    pub polls: f64,
    pub found: f64,
    pub empty: f64,
    pub blocking: f64,
}

/// The `wait calls` line of each rank in `job`'s output (`bb-pt2pt onecore`, `ring`).
pub fn wait_calls(job: &Job) -> Vec<WaitCalls> {
    let out = job.stdout();
    out.lines()
        .filter(|l| l.starts_with("wait calls of rank"))
        .map(|l| {
            let field = |name: &str| -> f64 {
                let at = l.find(&format!(" {name}=")).unwrap_or_else(|| panic!("no {name} in {l:?}"));
                let v = l[at + name.len() + 2..].split_whitespace().next().unwrap_or_default();
                v.parse().unwrap_or_else(|_| panic!("{name} in {l:?}"))
            };
            let messages = field("messages");
            WaitCalls {
                yields: field("yields") / messages,
                polls: field("polls") / messages,
                found: field("found") / messages,
                empty: field("empty") / messages,
                blocking: field("blocking") / messages,
            }
        })
        .collect()
}

/// Two ranks ping-pong on one core over a socket route (`env`: BB_ROUTES=tcp or udp). Each
/// wait hands the core to the peer before it polls, so a message costs its waiter one receive,
/// which finds it: with `BB_WAIT_BLOCK=1` (`blocking`) a receive that waits in the kernel (the
/// kernel switches to the peer and back as in a pipe ping-pong), else a yield and then a
/// receive that does not wait.
pub fn assert_one_core_waits_cost_one_receive(env: &[(&str, &str)], blocking: bool) {
    let env: Vec<(&str, &str)> =
        env.iter().copied().chain([("BB_WAIT_BLOCK", if blocking { "1" } else { "0" })]).collect();
    let job = run(2, "bb-pt2pt", &["onecore"], &env, Duration::from_secs(120));
    job.assert_success();
    let calls = wait_calls(&job);
    assert_eq!(calls.len(), 2, "stdout: {}", job.stdout());
    for c in &calls {
        // A receive that found nothing (the peer kept off the core by other processes: a
        // blocking one timed out, or a yield came back to us first) is counted: a loaded
        // machine makes a few.
        assert!(c.found >= 0.99 && c.found < 1.01, "one receive that finds data per message: {c:?}");
        assert!(c.empty < 0.25, "receives that found nothing per message: {c:?}");
        if blocking {
            assert!(c.yields < 0.05, "yields per message: {c:?}");
            assert!(c.blocking >= 0.95, "receives that waited in the kernel per message: {c:?}");
        } else {
            assert!(c.yields >= 0.95 && c.yields < 1.25, "yields per message: {c:?}");
            assert_eq!(c.blocking, 0.0, "receives that waited in the kernel per message: {c:?}");
        }
    }
}

//! Helpers for the multi-process tests: find `bbrun` and the rank programs, run a job under a
//! timeout, and check that it left no process and no shared-memory file behind.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A binary of this workspace, built in the same profile as the running test.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing: build it first (`cargo build --workspace --bins`)", path.display());
    path
}

/// Files of ours in /dev/shm (`bb-*`).
pub fn shm_files() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.retain(|n| n.starts_with("bb-"));
    v.sort();
    v
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
    // One job at a time: the leftover checks look at every process and segment of ours, and
    // two jobs would see each other's (and share two cores besides).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

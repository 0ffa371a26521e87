//! Running bbrun under a watchdog, and checking that a job left nothing behind.
#![allow(dead_code)] // each test file uses a different part

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BBRUN: &str = env!("CARGO_BIN_EXE_bbrun");
pub const PROBE: &str = env!("CARGO_BIN_EXE_bb-pmi-probe");

/// Longest any job in these tests may take before the watchdog kills it and fails the test.
pub const WATCHDOG: Duration = Duration::from_secs(20);

pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// bbrun's pid, for tests that signal it.
    pub pid: u32,
}

/// Runs `bbrun args...` with `stdin` as its input, under [`WATCHDOG`].
pub fn bbrun(args: &[&str], stdin: Option<&str>) -> Outcome {
    bbrun_with(args, stdin, |_| {})
}

/// Like [`bbrun`], and calls `meanwhile(pid)` once bbrun has started.
pub fn bbrun_with(args: &[&str], stdin: Option<&str>, meanwhile: impl FnOnce(u32)) -> Outcome {
    bbrun_env(args, &[], stdin, meanwhile)
}

/// Like [`bbrun_with`], with `env` set for bbrun.
pub fn bbrun_env(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>, meanwhile: impl FnOnce(u32)) -> Outcome {
    let start = Instant::now();
    let mut child = Command::new(BBRUN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bbrun");
    let pid = child.id();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let text = text.to_owned();
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    meanwhile(pid);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bbrun {args:?} still running after {WATCHDOG:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = start.elapsed();
    Outcome {
        code: status.code(),
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
        elapsed,
        pid,
    }
}

/// `sh -c script` as bbrun's program.
pub fn sh(n: usize, script: &str) -> Vec<String> {
    vec!["-n".into(), n.to_string(), "sh".into(), "-c".into(), script.into()]
}

pub fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The numbers printed after `marker` in `text` (e.g. pids a script printed as `pid=123`).
pub fn numbers_after(text: &str, marker: &str) -> Vec<u32> {
    text.split(marker)
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect()
}

/// Asserts that each process is gone (or a zombie awaiting its reaper), within one second.
pub fn assert_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(1);
    for &pid in pids {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state is the field after the parenthesized command name.
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next().unwrap_or('?'));
            if matches!(state, None | Some('Z') | Some('X')) {
                break;
            }
            assert!(Instant::now() < deadline, "process {pid} is still alive after the job: {stat}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Asserts that no `/dev/shm/bb-*` file of this job id remains.
pub fn assert_no_shm(jobid: &str) {
    assert!(!jobid.is_empty());
    let needle = format!("-{jobid}-");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| d.flatten().filter_map(|e| e.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    let ours: Vec<_> = left.iter().filter(|n| n.starts_with("bb-") && n.contains(&needle)).collect();
    assert!(ours.is_empty(), "left in /dev/shm: {ours:?}");
}

/// The job id a script printed as `jobid=...`.
pub fn jobid(text: &str) -> String {
    text.split("jobid=").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("").to_owned()
}

/// The children of process `pid` (from /proc).
pub fn children(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

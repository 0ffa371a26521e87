//! Signals sent to bbrun reach every rank, and the job is torn down.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn signal_job(sig: i32, expect: i32) {
    let script = "echo jobid=$BB_JOBID; sleep 30 & wait";
    let mut job_pids = Vec::new();
    let out = bbrun_with(&args(&sh(3, script)), None, |pid| {
        // Wait until every rank has started its sleeper, note all their pids, signal bbrun.
        let deadline = Instant::now() + Duration::from_secs(10);
        while sleepers_of(pid).len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        job_pids = children(pid);
        job_pids.extend(sleepers_of(pid));
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(pid as i32, sig) };
    });
    assert_eq!(out.code, Some(expect), "{}", out.stderr);
    assert!(out.stderr.contains("caught SIG"), "{}", out.stderr);
    assert_eq!(job_pids.len(), 6, "3 ranks and 3 sleepers");
    assert_gone(&job_pids);
    assert_no_shm(&jobid(&out.stdout));
}

/// The `sleep` processes started by the children of `bbrun_pid`.
fn sleepers_of(bbrun_pid: u32) -> Vec<u32> {
    let ranks: Vec<u32> = children(bbrun_pid);
    ranks.iter().flat_map(|r| children(*r)).filter(|p| comm(*p) == "sleep").collect()
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_owned()
}

#[test]
fn sigterm_tears_down_every_rank() {
    signal_job(libc::SIGTERM, 128 + libc::SIGTERM);
}

#[test]
fn sigint_tears_down_every_rank() {
    signal_job(libc::SIGINT, 128 + libc::SIGINT);
}

#[test]
fn sighup_tears_down_every_rank() {
    signal_job(libc::SIGHUP, 128 + libc::SIGHUP);
}

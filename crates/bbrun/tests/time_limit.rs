//! `MPIEXEC_TIMEOUT`: a job that runs longer is stopped whole (ranks, what they started, host
//! agents, `/dev/shm` segments), with a line that says why and exit status 255, as MPICH's
//! Hydra does; a value that is not a positive number of seconds is refused before anything runs.

mod common;
use common::*;
use std::time::Duration;

const SCRIPT: &str = "echo pid=$$ jobid=$BB_JOBID; touch /dev/shm/bb-x-$BB_JOBID-r$PMI_RANK; \
    sleep 30 & echo pid=$!; if [ $PMI_RANK = 1 ]; then trap '' TERM; fi; while :; do sleep 0.05; done";

fn timed_out(out: &Outcome, secs: u64) {
    assert_eq!(out.code, Some(255), "{}", out.stderr);
    let limit = Duration::from_secs(secs);
    assert!(out.elapsed >= limit && out.elapsed < limit + Duration::from_secs(2), "took {:?}", out.elapsed);
    let verdict: Vec<&str> = out.stderr.lines().filter(|l| l.contains("MPIEXEC_TIMEOUT")).collect();
    assert_eq!(verdict.len(), 1, "{}", out.stderr);
    let expected = format!("bbrun: the job exceeded MPIEXEC_TIMEOUT={secs} s with ranks 0, 1, 2 still running");
    assert!(verdict[0].starts_with(&expected), "{}", verdict[0]);
    let pids = numbers_after(&out.stdout, "pid=");
    assert_eq!(pids.len(), 6, "{}", out.stdout);
    assert_gone(&pids);
    assert_no_shm(&jobid(&out.stdout));
}

#[test]
fn a_job_past_its_time_limit_is_killed_with_255() {
    // Rank 1 ignores SIGTERM, and every rank has a child of its own: all must go.
    let out = bbrun_env(&args(&sh(3, SCRIPT)), &[("MPIEXEC_TIMEOUT", "1")], None, |_| {});
    timed_out(&out, 1);
}

#[test]
fn a_job_past_its_time_limit_on_another_host_is_killed_with_its_agent() {
    // The launcher template makes host `elsewhere` an agent started here (`env` runs it).
    let mut argv =
        vec!["--launcher".to_string(), "env BB_TEST_HOST={host}".into(), "--host".into(), "elsewhere:3".into()];
    argv.extend(sh(3, SCRIPT).into_iter().skip(2));
    let mut agents = Vec::new();
    let out = bbrun_env(&args(&argv), &[("MPIEXEC_TIMEOUT", "2")], None, |pid| {
        std::thread::sleep(Duration::from_millis(1000));
        agents = children(pid);
    });
    assert!(!agents.is_empty(), "no agent under bbrun:\n{}", out.stderr);
    timed_out(&out, 2);
    assert_gone(&agents);
}

#[test]
fn a_job_within_its_time_limit_is_untouched() {
    let out = bbrun_env(&args(&sh(2, "sleep 0.2; echo done")), &[("MPIEXEC_TIMEOUT", "10")], None, |_| {});
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.matches("done").count(), 2, "{}", out.stdout);
    assert!(!out.stderr.contains("MPIEXEC_TIMEOUT"), "{}", out.stderr);
    // Empty counts as unset.
    let out = bbrun_env(&args(&sh(1, "true")), &[("MPIEXEC_TIMEOUT", "")], None, |_| {});
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[test]
fn a_bad_time_limit_is_refused_naming_the_variable() {
    for bad in ["0", "-5", "ten", "2.5"] {
        let out = bbrun_env(&args(&sh(2, "echo ran")), &[("MPIEXEC_TIMEOUT", bad)], None, |_| {});
        assert_eq!(out.code, Some(2), "{bad}: {}", out.stderr);
        let expected = format!("bbrun: MPIEXEC_TIMEOUT=\"{bad}\" is not a positive whole number of seconds");
        assert_eq!(out.stderr.trim(), expected);
        assert!(out.stdout.is_empty(), "the job ran: {}", out.stdout);
    }
}

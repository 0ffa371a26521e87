//! bbrun's exit status and fail-fast tear-down: the first failing rank is named, the others
//! are stopped within a second, and nothing is left behind.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn all_ranks_zero_gives_zero() {
    let out = bbrun(&args(&sh(4, "exit 0")), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!out.stderr.contains("stopping"), "{}", out.stderr);
}

#[test]
fn early_exit_code_is_passed_on_and_the_rest_stopped() {
    // Rank 1 gives the others a moment to start their background sleepers, which must go too.
    let script =
        "echo pid=$$ jobid=$BB_JOBID; if [ $PMI_RANK = 1 ]; then sleep 0.3; exit 3; fi; sleep 30 & echo pid=$!; wait";
    let out = bbrun(&args(&sh(4, script)), None);
    assert_eq!(out.code, Some(3), "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(2), "took {:?}", out.elapsed);
    let verdict: Vec<&str> = out.stderr.lines().filter(|l| l.contains("stopping the job")).collect();
    assert_eq!(verdict.len(), 1, "{}", out.stderr);
    assert!(verdict[0].contains("rank 1 (pid ") && verdict[0].contains("exited with code 3"), "{}", verdict[0]);
    let pids = numbers_after(&out.stdout, "pid=");
    assert!(pids.len() >= 4, "{}", out.stdout);
    assert_gone(&pids);
    assert_no_shm(&jobid(&out.stdout));
}

#[test]
fn kill_9_of_one_rank_gives_137_and_names_it() {
    let script = "echo pid=$$; if [ $PMI_RANK = 2 ]; then kill -9 $$; fi; sleep 30";
    let out = bbrun(&args(&sh(4, script)), None);
    assert_eq!(out.code, Some(137), "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(2), "took {:?}", out.elapsed);
    let verdict: Vec<&str> = out.stderr.lines().filter(|l| l.contains("stopping the job")).collect();
    assert_eq!(verdict.len(), 1, "{}", out.stderr);
    assert!(verdict[0].contains("rank 2 (pid ") && verdict[0].contains("signal 9 (SIGKILL)"), "{}", verdict[0]);
    assert_gone(&numbers_after(&out.stdout, "pid="));
}

#[test]
fn a_rank_ignoring_sigterm_is_killed_within_a_second() {
    let script = "trap '' TERM; echo pid=$$; if [ $PMI_RANK = 0 ]; then exit 5; fi; while :; do sleep 0.05; done";
    let out = bbrun(&args(&sh(2, script)), None);
    assert_eq!(out.code, Some(5), "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(2), "took {:?}", out.elapsed);
    assert_gone(&numbers_after(&out.stdout, "pid="));
}

#[test]
fn leftover_shm_segments_are_removed() {
    let script = "touch /dev/shm/bb-$(id -un)-$BB_JOBID-r$PMI_RANK; echo jobid=$BB_JOBID; [ $PMI_RANK = 1 ] && kill -9 $$; sleep 30";
    let out = bbrun(&args(&sh(2, script)), None);
    assert_eq!(out.code, Some(137), "{}", out.stderr);
    assert_no_shm(&jobid(&out.stdout));
    // A job that ends well is swept too.
    let out = bbrun(&args(&sh(2, "touch /dev/shm/bb-x-$BB_JOBID-r$PMI_RANK; echo jobid=$BB_JOBID")), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_no_shm(&jobid(&out.stdout));
}

#[test]
fn program_not_found_is_named() {
    let out = bbrun(&["-n", "2", "no-such-program-for-bbrun"], None);
    assert_eq!(out.code, Some(127));
    assert!(out.stderr.contains("'no-such-program-for-bbrun'") && out.stderr.contains("not found"), "{}", out.stderr);
    let out = bbrun(&["-n", "1", "/no/such/dir/prog"], None);
    assert_eq!(out.code, Some(127));
    assert!(out.stderr.contains("/no/such/dir/prog"), "{}", out.stderr);
}

#[test]
fn argument_errors_are_clear() {
    let out = bbrun(&["-n", "0", "true"], None);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("-n"), "{}", out.stderr);
    let out = bbrun(&["-n", "two", "true"], None);
    assert_eq!(out.code, Some(2));
    let out = bbrun(&["-n", "2"], None);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("no program"), "{}", out.stderr);
}

#[test]
fn more_ranks_than_cores_warns_once_and_runs() {
    let cores = std::thread::available_parallelism().unwrap().get();
    let n = (cores + 1).to_string();
    let out = bbrun(&["-n", &n, "true"], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stderr.lines().filter(|l| l.contains("warning") && l.contains("cores")).count(), 1);
}

#[test]
fn background_processes_left_by_ranks_are_killed() {
    // Each rank leaves a sleeper behind, holding its stdout open, and exits 0.
    let out = bbrun(&args(&sh(2, "sleep 30 & echo pid=$!")), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(2), "took {:?}", out.elapsed);
    let pids = numbers_after(&out.stdout, "pid=");
    assert_eq!(pids.len(), 2, "{}", out.stdout);
    assert_gone(&pids);
}

#[test]
fn ranks_die_when_bbrun_is_killed() {
    let mut ranks = Vec::new();
    let out = bbrun_with(&args(&sh(3, "exec sleep 30")), None, |pid| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while children(pid).len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        ranks = children(pid);
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    assert_eq!(out.code, None, "killed by a signal");
    assert_eq!(ranks.len(), 3);
    // PR_SET_PDEATHSIG(SIGKILL) takes them down with bbrun.
    assert_gone(&ranks);
}

#[test]
fn running_out_of_descriptors_is_reported_once_with_the_limit() {
    use std::os::unix::process::CommandExt;
    const LIMIT: u64 = 24;
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["20", BBRUN, "-n", "16", "sh", "-c", "echo pid=$$; sleep 30"]);
    // SAFETY: setrlimit is async-signal-safe and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: LIMIT, rlim_max: LIMIT };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = std::time::Instant::now();
    let out = cmd.output().expect("run bbrun under a descriptor limit");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(126), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    let reports: Vec<&str> = stderr.lines().filter(|l| l.contains("Too many open files")).collect();
    assert_eq!(reports.len(), 1, "{stderr}");
    assert!(reports[0].contains("cannot start rank "), "{}", reports[0]);
    assert!(reports[0].contains(&format!("may open {LIMIT} (ulimit -n)")), "{}", reports[0]);
    // The ranks that did start are stopped.
    assert_gone(&numbers_after(&stdout, "pid="));
}

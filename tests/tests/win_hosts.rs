//! One-sided communication on windows that span hosts: network namespaces stand in for hosts
//! (as in `coll_hosts.rs`), the launcher template `ip netns exec {host}` starts each host's
//! agent. `tests/c/win_hosts.c` (built with our `dist/bin/mpicc`) runs fence puts,
//! exclusive-lock read-modify-writes, shared-lock accumulates, fetch-and-op tickets,
//! compare-and-swap and lock_all gets on one window over every rank, and checks each answer;
//! here on 2 hosts of 1 and 2 ranks each (so a window also joins ranks of one host with ranks
//! of another), with windows from MPI_Win_allocate and from MPI_Win_create. Every job runs
//! under a timeout and must leave no process and no /dev/shm file behind.
//!
//! `tests/c/win_compute_target.c` runs over TCP between the hosts: the target computes outside
//! MPI while the others lock, fetch-and-op and unlock 1000 times each, until they are done (or
//! 30 s); the window's progress thread (started by itself: the window spans hosts) must serve
//! them all meanwhile.
//!
//! Needs root, `ip` and `dist/` (`make`); prints a SKIP line and passes without them.

use std::time::Duration;

use bb_tests::{build_c_test as build, root, Netns, Running};

const T: Duration = Duration::from_secs(120);
const SETTLE: Duration = Duration::from_secs(3);
const LAUNCHER: &str = "ip netns exec {host}";

#[test]
fn windows_spanning_hosts_lock_put_get_and_accumulate() {
    let Some(exe) = build("win_hosts") else { return };
    let Some(ns) = Netns::create(2) else { return };
    let program = exe.to_str().unwrap();
    let lib = root().join("dist/lib");
    let env = [("LD_LIBRARY_PATH", lib.to_str().unwrap()), ("BB_CTEST_TIMEOUT", "60")];
    // Slots per host and ranks: one on each; two on each; two beside one.
    for (slots, n) in [([1, 1], 2), ([2, 2], 4), ([2, 1], 3)] {
        let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
        let (hosts, ranks) = (hosts.join(","), n.to_string());
        for flavor in [&[][..], &["create"][..]] {
            let mut args = vec!["--launcher", LAUNCHER, "--host", &hosts, "-n", &ranks, program];
            args.extend_from_slice(flavor);
            let job = Running::start_env(&args, &env, b"", &[program]).finish(T, SETTLE);
            let what = format!("{n} ranks on hosts {hosts}, {flavor:?}");
            job.assert_success();
            let out = job.stdout();
            assert!(out.lines().any(|l| l == "PASS win_hosts") && !out.contains("FAIL"), "{what}:\n{out}");
        }
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

#[test]
fn a_target_computing_outside_mpi_serves_fetch_and_op_across_hosts() {
    let Some(exe) = build("win_compute_target") else { return };
    let Some(ns) = Netns::create(2) else { return };
    let program = exe.to_str().unwrap();
    let lib = root().join("dist/lib");
    let env = [("LD_LIBRARY_PATH", lib.to_str().unwrap()), ("BB_CTEST_TIMEOUT", "60")];
    // The target alone on its host; then with an origin beside it (shared memory to it).
    for (slots, n) in [([1, 1], 2), ([2, 1], 3)] {
        let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
        let (hosts, ranks) = (hosts.join(","), n.to_string());
        let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &ranks, program];
        let job = Running::start_env(&args, &env, b"", &[program]).finish(T, SETTLE);
        let out = job.stdout();
        let what = format!("{n} ranks on hosts {hosts}");
        assert!(out.lines().any(|l| l == "PASS win_compute_target") && !out.contains("FAIL"), "{what}:\n{out}");
        job.assert_success();
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

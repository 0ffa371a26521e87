//! MPI-IO across hosts: network namespaces stand in for hosts (as in `win_hosts.rs`) that share
//! one file system, and a collective access whose ranks interleave goes through the aggregators
//! by itself there (two-phase I/O, `crates/mpi/src/io/two_phase.rs`: "automatic" aggregates
//! when the ranks span hosts), each rank's pieces sent to them over TCP.
//!
//! `tests/c/file_io.c` reads every access mode back and compares it with the file's bytes (and
//! a strided collective write with a serial one); `tests/c/datarep.c` writes and reads through
//! a representation that keeps each int as 8 bytes in the file, blocking, nonblocking and split
//! collective, and checks the file's raw bytes: the aggregators move data in the file's sizes,
//! not memory's. Both on 2 hosts of 1 + 1, 2 + 2 and 2 + 1 ranks, under a timeout, leaving no
//! process and no /dev/shm file behind.
//!
//! Needs root, `ip` and `dist/` (`make`); prints a SKIP line and passes without them.

use std::time::Duration;

use bb_tests::{build_c_test, root, Netns, Running};

const T: Duration = Duration::from_secs(120);
const SETTLE: Duration = Duration::from_secs(3);
const LAUNCHER: &str = "ip netns exec {host}";

/// Runs `tests/c/<name>.c` on two namespace hosts at each layout; every run must pass.
fn passes_across_two_hosts(name: &str) {
    let Some(exe) = build_c_test(name) else { return };
    let Some(ns) = Netns::create(2) else { return };
    let program = exe.to_str().unwrap();
    let lib = root().join("dist/lib");
    let env = [("LD_LIBRARY_PATH", lib.to_str().unwrap()), ("BB_CTEST_TIMEOUT", "60")];
    // Slots per host and ranks: one on each; two on each; two beside one.
    for (slots, n) in [([1, 1], 2), ([2, 2], 4), ([2, 1], 3)] {
        let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
        let (hosts, ranks) = (hosts.join(","), n.to_string());
        let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &ranks, program];
        let job = Running::start_env(&args, &env, b"", &[program]).finish(T, SETTLE);
        let out = job.stdout();
        let what = format!("{name}: {n} ranks on hosts {hosts}");
        assert!(out.lines().any(|l| l == format!("PASS {name}")) && !out.contains("FAIL"), "{what}:\n{out}");
        job.assert_success();
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

#[test]
fn every_access_mode_across_hosts_reads_back_the_files_bytes() {
    passes_across_two_hosts("file_io");
}

#[test]
fn a_size_changing_datarep_converts_through_the_aggregators_across_hosts() {
    passes_across_two_hosts("datarep");
}

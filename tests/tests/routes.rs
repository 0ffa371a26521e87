//! Billboard programs across hosts: network namespaces stand in for hosts (as in `hosts.rs`),
//! ranks on one host talk through the shared-memory billboard and ranks on different hosts over
//! TCP, in the same job. Every job runs under a timeout and must leave no process and no
//! /dev/shm file behind; the namespaces are removed even when a test fails.
//!
//! Needs root and `ip`; each test prints a SKIP line and passes without them.

use std::time::{Duration, Instant};

use bb_tests::{binary, Job, Netns, Running};

const T: Duration = Duration::from_secs(120);
const SETTLE: Duration = Duration::from_secs(3);
const LAUNCHER: &str = "ip netns exec {host}";

/// `name:slots,...` of the namespaces.
fn hosts(ns: &Netns, slots: &[usize]) -> String {
    let list: Vec<String> = ns.names.iter().zip(slots).map(|(n, s)| format!("{n}:{s}")).collect();
    list.join(",")
}

fn start(ns: &Netns, slots: &[usize], env: &[(&str, &str)], program: &str, args: &[&str]) -> Running {
    let program = binary(program);
    let program = program.to_str().unwrap();
    let placement = hosts(ns, slots);
    let mut all = vec!["--launcher", LAUNCHER, "--host", &placement, program];
    all.extend_from_slice(args);
    Running::start_env(&all, env, b"", &[program])
}

fn run(ns: &Netns, slots: &[usize], env: &[(&str, &str)], program: &str, args: &[&str]) -> Job {
    start(ns, slots, env, program, args).finish(T, SETTLE)
}

fn expect_ok(job: &Job, what: &str) {
    job.assert_success();
    assert!(job.stdout().contains(what), "stdout: {}\nstderr: {}", job.stdout(), job.stderr());
}

#[test]
fn two_hosts_two_ranks_each_use_both_routes() {
    let Some(ns) = Netns::create(2) else { return };
    // Ranks 0,1 on the first host, 2,3 on the second: every case crosses hosts and stays on one.
    expect_ok(&run(&ns, &[2, 2], &[], "bb-pt2pt", &["all"]), "ok all on 4 ranks");
    expect_ok(&run(&ns, &[2, 2], &[], "bb-coll", &[]), "ok coll on 4 ranks");
}

#[test]
fn a_sleeping_rank_with_peers_on_both_routes_is_woken_by_its_data() {
    let Some(ns) = Netns::create(2) else { return };
    // Rank 1 shares rank 0's host and also has TCP peers: it sleeps in epoll, and rank 0's
    // post on the billboard must ring its doorbell there. Ranks 2 and 3 wake on the socket.
    let env = [("BB_SPIN", "1"), ("BB_YIELD", "1"), ("BB_SLEEP_US", "30000000")];
    expect_ok(&run(&ns, &[2, 2], &env, "bb-pt2pt", &["wakeup"]), "ok wakeup on 4 ranks");
}

#[test]
fn three_hosts_two_ranks_each() {
    let Some(ns) = Netns::create(3) else { return };
    expect_ok(&run(&ns, &[2, 2, 2], &[], "bb-pt2pt", &["all"]), "ok all on 6 ranks");
    expect_ok(&run(&ns, &[2, 2, 2], &[], "bb-coll", &[]), "ok coll on 6 ranks");
}

#[test]
fn sizes_up_to_64_mib_between_hosts() {
    let Some(ns) = Netns::create(2) else { return };
    expect_ok(&run(&ns, &[1, 1], &[], "bb-pt2pt", &["sizes64"]), "ok sizes64 on 2 ranks");
}

#[test]
fn kill_9_of_a_rank_on_the_second_host_is_reported_and_ends_the_job() {
    let Some(ns) = Netns::create(2) else { return };
    let job = run(&ns, &[2, 2], &[], "bb-pt2pt", &["kill9"]);
    assert_eq!(job.code(), Some(137), "stderr:\n{}", job.stderr());
    let report = job.stderr();
    assert!(report.contains("rank 2") && report.contains(&ns.names[1]), "names rank and host:\n{report}");
}

#[test]
fn a_link_cut_mid_job_fails_the_ranks_naming_the_peer() {
    let Some(ns) = Netns::create(2) else { return };
    let env = [("BB_TCP_TIMEOUT_MS", "2000")];
    let job = start(&ns, &[1, 1], &env, "bb-pt2pt", &["pingpong"]);
    std::thread::sleep(Duration::from_millis(1500));
    let cut = Instant::now();
    let down = std::process::Command::new("ip")
        .args(["-n", &ns.names[1], "link", "set", "eth0", "down"])
        .status()
        .expect("run ip");
    assert!(down.success());
    let job = job.finish(T, SETTLE);
    let took = cut.elapsed();
    let report = job.stderr();
    assert_ne!(job.code(), Some(0), "the job cannot succeed without its link:\n{report}");
    assert!(took < Duration::from_secs(15), "noticed after {took:?}:\n{report}");
    assert!(report.contains("is gone") && report.contains("on host"), "the error names the peer:\n{report}");
}

/// `ss` in namespace `ns`: the TCP sockets listed by `args`, one per line.
fn sockets(ns: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("ip").args(["netns", "exec", ns, "ss", "-Hn"]).args(args).output();
    String::from_utf8_lossy(&out.expect("run ss").stdout).into_owned()
}

/// Once the ranks are connected nobody listens: a stranger finds the port closed (the listeners
/// were bound to the published address, and are closed as soon as every peer is in).
#[test]
fn nothing_listens_once_the_ranks_are_connected() {
    let Some(ns) = Netns::create(2) else { return };
    if !std::process::Command::new("ss").arg("-V").output().is_ok_and(|o| o.status.success()) {
        println!("SKIP: no `ss` (iproute2)");
        return;
    }
    // Rank 0 sleeps 2 s after MPI_Init-equivalent set-up, rank 1 waits for it.
    let job = start(&ns, &[1, 1], &[], "bb-pt2pt", &["idle"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while sockets(&ns.names[1], &["-t", "state", "established"]).trim().is_empty() {
        assert!(Instant::now() < deadline, "the ranks never connected");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The handshake takes a round trip or two after the kernel's connection.
    std::thread::sleep(Duration::from_millis(500));
    let listening: Vec<String> = ns.names.iter().map(|n| sockets(n, &["-lt"])).collect();
    expect_ok(&job.finish(T, SETTLE), "ok idle on 2 ranks");
    for (n, l) in ns.names.iter().zip(&listening) {
        assert!(l.trim().is_empty(), "{n} still listens after set-up:\n{l}");
    }
}

#[test]
fn an_interface_that_does_not_exist_is_named() {
    let Some(ns) = Netns::create(2) else { return };
    let job = run(&ns, &[1, 1], &[("BB_TCP_IF", "eth9")], "bb-pt2pt", &["init"]);
    assert_ne!(job.code(), Some(0));
    assert!(job.stderr().contains("BB_TCP_IF=eth9"), "stderr:\n{}", job.stderr());
}

/// C programs built with our `mpicc` (MPICH's ABI), across two hosts: the MPI library over both
/// routes. Skipped when `make` has not filled `dist/`.
#[test]
fn mpi_programs_across_two_hosts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mpicc = root.join("dist/bin/mpicc");
    if !mpicc.exists() {
        println!("SKIP: no dist/bin/mpicc (run make first)");
        return;
    }
    let Some(ns) = Netns::create(2) else { return };
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("routes-mpi");
    std::fs::create_dir_all(&out).unwrap();
    for name in ["p2p_basic", "coll_basic", "datatypes_large"] {
        let exe = out.join(name);
        let src = root.join(format!("tests/c/{name}.c"));
        let built = std::process::Command::new(&mpicc).arg("-O1").arg("-o").arg(&exe).arg(&src).arg("-lm").status();
        assert!(built.is_ok_and(|s| s.success()), "mpicc {name}.c");
        let exe = exe.to_str().unwrap();
        let placement = hosts(&ns, &[2, 2]);
        let job = Running::start(&["--launcher", LAUNCHER, "--host", &placement, exe], b"", &[exe]).finish(T, SETTLE);
        job.assert_success();
        assert!(!job.stdout().contains("FAIL"), "{name}: {}", job.stdout());
        assert!(job.stdout().contains(&format!("PASS {name}")), "{name} printed no PASS line: {}", job.stdout());
    }
}

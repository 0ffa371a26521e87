//! The UDP route (`BB_ROUTES=udp`: every route but a rank's own over the reliable datagram
//! protocol), as real multi-process jobs under `bbrun`: on one host over loopback, with
//! datagrams dropped, duplicated and reordered (`BB_UDP_FAULTS`, the socket layer's fault
//! injection: this kernel has no netem), and across two network-namespace hosts. Every job runs
//! under a timeout and must leave no process and no /dev/shm file behind.

use std::time::Duration;

use bb_tests::{binary, run, Job, Netns, Running};

const T: Duration = Duration::from_secs(120);
const SECRET: (&str, &str) = ("BB_JOB_SECRET", "8e1f0c2d4b6a79583c2e1f0d4b6a7958");
const UDP: [(&str, &str); 2] = [("BB_ROUTES", "udp"), SECRET];
/// 5 % lost, 1 % twice, 10 % overtaken: the figures of the netem line.
const FAULTS: (&str, &str) = ("BB_UDP_FAULTS", "loss=5,dup=1,reorder=10,seed=11");

fn env(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    UDP.iter().chain(extra).copied().collect()
}

fn case(n: usize, program: &str, args: &[&str], env: &[(&str, &str)]) -> Job {
    let job = run(n, program, args, env, T);
    job.assert_success();
    let name = args.first().copied().unwrap_or("coll");
    assert!(job.stdout().contains(&format!("ok {name} on {n} ranks")), "stdout: {}", job.stdout());
    job
}

#[test]
fn every_case_over_udp_on_2_and_4_ranks() {
    for n in [2, 4] {
        case(n, "bb-pt2pt", &["all"], &env(&[]));
    }
    case(2, "bb-pt2pt", &["sizes"], &env(&[]));
    case(2, "bb-pt2pt", &["blocks"], &env(&[]));
}

#[test]
fn collectives_over_udp() {
    for n in [2, 4] {
        case(n, "bb-coll", &[], &env(&[]));
    }
}

#[test]
fn loss_duplication_and_reordering_lose_nothing() {
    let faulty = env(&[FAULTS]);
    for n in [2, 4] {
        case(n, "bb-pt2pt", &["all"], &faulty);
        case(n, "bb-coll", &[], &faulty);
    }
    // Up to 16 MiB, each byte checked: hundreds of thousands of datagrams, thousands repaired.
    case(2, "bb-pt2pt", &["sizes"], &faulty);
    // Datagrams of the loopback's size: fewer, larger ones lost.
    case(2, "bb-pt2pt", &["sizes"], &env(&[FAULTS, ("BB_UDP_MTU", "60000")]));
}

#[test]
fn a_peer_that_acknowledges_nothing_fails_after_the_deadline_named() {
    // Every datagram dropped: no acknowledgement ever comes back.
    let faulty = env(&[("BB_UDP_FAULTS", "loss=100"), ("BB_UDP_TIMEOUT_MS", "500")]);
    let job = run(2, "bb-pt2pt", &["all"], &faulty, T);
    assert_ne!(job.code(), Some(0));
    let report = job.stderr();
    assert!(
        report.contains("is gone") && report.contains("on host") && report.contains("BB_UDP_TIMEOUT_MS"),
        "the error names the peer, its host and the deadline:\n{report}"
    );
    assert!(job.elapsed < Duration::from_secs(10), "took {:?}", job.elapsed);
}

#[test]
fn bad_fault_settings_are_named() {
    let job = run(2, "bb-pt2pt", &["all"], &env(&[("BB_UDP_FAULTS", "loss")]), T);
    assert_ne!(job.code(), Some(0));
    assert!(job.stderr().contains("BB_UDP_FAULTS=\"loss\""), "{}", job.stderr());
}

#[test]
fn a_rank_waiting_on_udp_sleeps_and_wakes_on_its_data() {
    let job = case(2, "bb-pt2pt", &["idle"], &env(&[]));
    let cpu = job.cpu_seconds;
    assert!(cpu < 0.5, "the job used {cpu:.2} CPU seconds over {:?} of waiting", job.elapsed);
    // Ranks asleep at once for up to 30 s: only the datagram (or a due retransmission) wakes them.
    let sleep = [("BB_SPIN", "1"), ("BB_YIELD", "1"), ("BB_SLEEP_US", "30000000")];
    case(3, "bb-pt2pt", &["wakeup"], &env(&sleep));
    case(3, "bb-pt2pt", &["wakeup"], &env(&[sleep[0], sleep[1], sleep[2], FAULTS]));
}

#[test]
fn two_namespace_hosts_over_udp() {
    let Some(ns) = Netns::create(2) else { return };
    let placement: Vec<String> = ns.names.iter().map(|n| format!("{n}:2")).collect();
    let program = binary("bb-pt2pt");
    let program = program.to_str().unwrap();
    for extra in [&[][..], &[FAULTS][..]] {
        let placement = placement.join(",");
        let args = ["--launcher", "ip netns exec {host}", "--host", &placement, program, "all"];
        let job = Running::start_env(&args, &env(extra), b"", &[program]).finish(T, Duration::from_secs(3));
        job.assert_success();
        assert!(job.stdout().contains("ok all on 4 ranks"), "stdout: {}\nstderr: {}", job.stdout(), job.stderr());
    }
}

#[test]
fn kill_9_of_a_rank_over_udp_is_reported_by_rank_and_host_and_nothing_hangs() {
    let job = run(4, "bb-pt2pt", &["kill9"], &env(&[]), T);
    assert_eq!(job.code(), Some(137), "stderr:\n{}", job.stderr());
    assert!(job.stderr().contains("rank 2") && job.stderr().contains("signal 9"), "{}", job.stderr());
    assert!(job.elapsed < Duration::from_secs(3), "took {:?}", job.elapsed);
    let Some(ns) = Netns::create(2) else { return };
    let placement: Vec<String> = ns.names.iter().map(|n| format!("{n}:2")).collect();
    let program = binary("bb-pt2pt");
    let program = program.to_str().unwrap();
    let placement = placement.join(",");
    let args = ["--launcher", "ip netns exec {host}", "--host", &placement, program, "kill9"];
    let job = Running::start_env(&args, &env(&[]), b"", &[program]).finish(T, Duration::from_secs(3));
    assert_eq!(job.code(), Some(137), "stderr:\n{}", job.stderr());
    let report = job.stderr();
    assert!(report.contains("rank 2") && report.contains(&ns.names[1]), "names rank and host:\n{report}");
    assert!(job.elapsed < Duration::from_secs(5), "took {:?}", job.elapsed);
}

#[test]
fn two_ranks_on_one_core_wait_for_a_message_with_one_receive() {
    bb_tests::assert_one_core_waits_cost_one_receive(&env(&[]), false);
    bb_tests::assert_one_core_waits_cost_one_receive(&env(&[]), true);
}

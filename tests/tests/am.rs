//! Active messages as real multi-process jobs under `bbrun`: streams of every size in order,
//! replies, a handler that keeps work (a fetch-and-add counter), messages that come before
//! their handler; 1 to 8 ranks over shared memory, over TCP (`BB_ROUTES=tcp`) and UDP
//! (`BB_ROUTES=udp`), and across network-namespace hosts. Each job runs under a timeout and
//! must leave no process and no /dev/shm file behind.

use std::time::Duration;

use bb_tests::{binary, run, Netns, Running};

const T: Duration = Duration::from_secs(180);

fn case(n: usize, name: &str, env: &[(&str, &str)]) {
    let job = run(n, "bb-am", &[name], env, T);
    job.assert_success();
    assert!(job.stdout().contains(&format!("ok {name} on {n} ranks")), "stdout: {}", job.stdout());
}

#[test]
fn every_case_over_shared_memory_on_1_2_4_and_8_ranks() {
    for n in [1, 2, 4, 8] {
        case(n, "all", &[]);
    }
}

#[test]
fn every_case_over_shared_memory_with_the_pipelined_fallback() {
    case(3, "all", &[("BB_SHM_SINGLE_COPY", "0")]);
}

#[test]
fn every_case_over_tcp_on_1_2_4_and_8_ranks() {
    for n in [1, 2, 4, 8] {
        case(n, "all", &[("BB_ROUTES", "tcp")]);
    }
}

#[test]
fn every_case_over_udp() {
    for n in [2, 4] {
        case(n, "all", &[("BB_ROUTES", "udp")]);
    }
}

#[test]
fn every_case_across_two_hosts() {
    let Some(ns) = Netns::create(2) else { return };
    let program = binary("bb-am");
    let program = program.to_str().unwrap();
    let placement: Vec<String> = ns.names.iter().map(|n| format!("{n}:2")).collect();
    let placement = placement.join(",");
    let args = ["--launcher", "ip netns exec {host}", "--host", &placement, program, "all"];
    let job = Running::start_env(&args, &[], b"", &[program]).finish(T, Duration::from_secs(3));
    job.assert_success();
    assert!(job.stdout().contains("ok all on 4 ranks"), "stdout: {}\nstderr: {}", job.stdout(), job.stderr());
}

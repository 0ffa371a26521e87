//! Dynamic processes across two separate `bbrun` jobs (the C program `tests/c/two_jobs.c`,
//! built with our `dist/bin/mpicc`): a server job accepts on a port whose name it writes to a
//! file; a client job with a wrong token in that name is refused (MPI_ERR_PORT) and does not
//! disturb the server; then a client job connects, and the two exchange data, merge and reduce.
//! A server that accepts 20 rounds of connect, exchange and disconnect keeps its descriptors
//! level (disconnect closes the other job's connections); after 1,000 rounds both jobs' per-peer
//! tables hold no more peers than the two jobs have (disconnected peers' numbers are reused).
//! A client that MPI_Isends more than the sockets hold and disconnects and finalizes at once
//! has every byte received (MPI_Comm_disconnect waits for the pending communication), also
//! under `BB_ROUTES=tcp`.
//! Groups kept from a disconnected job's communicators do not name the processes of the next
//! job, which take its numbers.
//! And a spawned child that dies ends the job, named by bbrun (`tests/c/spawn_errors.c die`);
//! and a spawn onto another host (network namespaces as hosts, as in `hosts.rs`; needs root).
//! A spawned child that ends before MPI_Init (exits 0, exits 3, cannot be executed) fails the
//! spawn at once with MPI_ERR_SPAWN, and the job goes on (`spawn_errors early [HOST]`), on
//! one host and on another host.
//! Spawn and connect/accept under `BB_ROUTES=udp`, on one host and across two namespace hosts:
//! joined peers are reached over TCP beside the job's UDP route, and a rank asleep wakes for
//! data on either.
//! Every job runs under a timeout and must leave no process and no /dev/shm file behind.
//! The other spawn tests are C programs of the suite (`tests/c/spawn*.c`, run by `c_suite.rs`).
//! And MPMD lines (`bbrun -n 1 ./mpmd first : -n 2 ./mpmd second`, `tests/c/mpmd.c`): one
//! world, MPI_APPNUM per program, on one host and with programs sharing a remote host.
//! Skips until `dist/` exists (`make`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bb_tests::{processes_named, root, shm_files};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The UDP route with every wait asleep at once and for up to 30 s: only data (a datagram, or
/// bytes on a joined peer's TCP connection) wakes a rank in time, through the one sleep set.
const UDP_ASLEEP: [(&str, &str); 4] =
    [("BB_ROUTES", "udp"), ("BB_SPIN", "1"), ("BB_YIELD", "1"), ("BB_SLEEP_US", "30000000")];

fn start(n: usize, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    start_with(&[], n, exe, args, env)
}

fn start_with(options: &[&str], n: usize, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let dist = root().join("dist");
    Command::new(dist.join("bin/bbrun"))
        .args(options)
        .arg("-n")
        .arg(n.to_string())
        .arg(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", dist.join("lib"))
        .env("BB_CTEST_TIMEOUT", "50")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bbrun")
}

/// Waits for `child` until the deadline, killing it (and failing) past it.
fn finish(child: Child, what: &str, deadline: Instant) -> Output {
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().expect("wait for bbrun"));
    while !waiter.is_finished() {
        if Instant::now() > deadline {
            // SAFETY: kill(2) of our own child.
            unsafe { kill(pid as i32, 9) };
            let out = waiter.join().unwrap();
            panic!(
                "{what} timed out\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    waiter.join().unwrap()
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

fn assert_passed(out: &Output, what: &str) {
    assert_program_passed(out, "two_jobs", what);
}

/// The job succeeded and the C program `name` said PASS and nothing FAILed.
fn assert_program_passed(out: &Output, name: &str, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let pass = format!("PASS {name}");
    assert!(
        out.status.success() && stdout.lines().any(|l| l == pass) && !stdout.contains("FAIL"),
        "{what}: {:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds `tests/c/<name>.c` with our mpicc into a fresh folder; `None` (skip) without `dist/`.
fn build(name: &str) -> Option<(PathBuf, PathBuf)> {
    let dist = root().join("dist");
    if !dist.join("bin/mpicc").exists() || !dist.join("lib/libmpi.so.12").exists() {
        eprintln!("skipped: dist/ is not built (make)");
        return None;
    }
    // A folder per call: tests building the same program run at once.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("bb-dynamic-{name}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    let built = Command::new(dist.join("bin/mpicc"))
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(root().join(format!("tests/c/{name}.c")))
        .status()
        .expect("run mpicc");
    assert!(built.success(), "{name}.c does not build");
    Some((dir, exe))
}

fn assert_nothing_left(exe: &Path, shm_before: &[String]) {
    let left = processes_named(&exe.to_string_lossy());
    assert!(left.is_empty(), "processes {left:?} outlived the jobs");
    let new: Vec<String> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the jobs left {new:?} in /dev/shm");
}

#[test]
fn a_spawned_child_that_dies_ends_the_job_and_is_named() {
    let Some((dir, exe)) = build("spawn_errors") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let shm_before = shm_files();
    let job = start(1, &exe, &["die"], &[]);
    let out = finish(job, "the job whose child dies", Instant::now() + TIMEOUT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "bbrun's exit code is the child's\n{stderr}");
    assert!(
        stderr.contains("rank 0 of spawned job 1 (") && stderr.contains("exited with code 3"),
        "bbrun names the dead child: {stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("FAIL"), "the parent did not outlive its child");
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `spawn_errors early` with `options` and `args` at `n` ranks: must pass and leave
/// nothing behind. The program bounds each failed spawn's time itself.
fn early_end_fails_the_spawn(options: &[&str], n: usize, args: &[&str]) {
    let Some((dir, exe)) = build("spawn_errors") else { return };
    let shm_before = shm_files();
    let job = start_with(options, n, &exe, args, &[]);
    let out = finish(job, "the spawns whose children end before MPI_Init", Instant::now() + TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "PASS spawn_errors-early") && !stdout.contains("FAIL"),
        "{:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprint!("{stdout}"); // how long each failed spawn took
    std::thread::sleep(Duration::from_secs(1)); // agents clean up after bbrun exits
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_spawned_child_that_ends_before_mpi_init_fails_the_spawn_at_once() {
    let _turn = bb_tests::one_job_at_a_time();
    for n in [1, 2] {
        early_end_fails_the_spawn(&[], n, &["early"]);
    }
}

#[test]
fn a_child_on_another_host_that_ends_before_mpi_init_fails_the_spawn_at_once() {
    let Some(ns) = bb_tests::Netns::create(2) else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let hosts = format!("{}:1,{}:1", ns.names[0], ns.names[1]);
    let options = ["--launcher", "ip netns exec {host}", "--host", &hosts];
    early_end_fails_the_spawn(&options, 2, &["early", &ns.names[1]]);
}

#[test]
fn a_spawn_onto_another_host_starts_the_children_there() {
    spawn_onto_another_host(&[]);
}

/// Two parents on two namespace hosts, one each, spawn children onto the second (tests/c/spawn.c
/// `on HOST`) with `env`.
fn spawn_onto_another_host(env: &[(&str, &str)]) {
    let Some((dir, exe)) = build("spawn") else { return };
    let Some(ns) = bb_tests::Netns::create(2) else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let shm_before = shm_files();
    let hosts = format!("{}:1,{}:1", ns.names[0], ns.names[1]);
    let options = ["--launcher", "ip netns exec {host}", "--host", &hosts];
    let job = start_with(&options, 2, &exe, &["on", &ns.names[1]], env);
    let out = finish(job, "the spawn onto another host", Instant::now() + TIMEOUT);
    assert_program_passed(&out, "spawn", &format!("the spawn onto another host with {env:?}"));
    std::thread::sleep(Duration::from_secs(1)); // agents clean up after bbrun exits
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the MPMD line `options` + `-n N mpmd NAME sizes... : ...` of `sizes` and checks it passed.
fn run_mpmd(exe: &Path, options: &[&str], sizes: &[usize]) {
    let dist = root().join("dist");
    let names = ["first", "second", "third"];
    let sizes_text: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
    let mut cmd = Command::new(dist.join("bin/bbrun"));
    cmd.args(options);
    for (k, n) in sizes.iter().enumerate() {
        if k > 0 {
            cmd.arg(":");
        }
        cmd.arg("-n").arg(n.to_string()).arg(exe).arg(names[k]).args(&sizes_text);
    }
    let child = cmd
        .env("BB_CTEST_TIMEOUT", "50")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bbrun");
    let out = finish(child, &format!("the MPMD line {sizes:?}"), Instant::now() + TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "PASS mpmd") && !stdout.contains("FAIL"),
        "{sizes:?} {options:?}: {:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_mpmd_line_runs_its_programs_in_one_world_each_with_its_appnum() {
    let Some((dir, exe)) = build("mpmd") else { return };
    let shm_before = shm_files();
    for sizes in [&[1, 2][..], &[2, 1, 1], &[1, 1]] {
        run_mpmd(&exe, &[], sizes);
    }
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two programs share the first (remote) host: its agent starts both parts.
#[test]
fn an_mpmd_line_across_hosts_starts_each_hosts_parts() {
    let Some((dir, exe)) = build("mpmd") else { return };
    let Some(ns) = bb_tests::Netns::create(2) else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let shm_before = shm_files();
    let hosts = format!("{}:2,{}:2", ns.names[0], ns.names[1]);
    run_mpmd(&exe, &["--launcher", "ip netns exec {host}", "--host", &hosts], &[1, 3]);
    run_mpmd(&exe, &["--launcher", "ip netns exec {host}", "--host", &hosts], &[1, 1, 2]);
    std::thread::sleep(Duration::from_secs(1)); // agents clean up after bbrun exits
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spawn_connect_and_accept_over_udp_reach_the_joined_processes_over_tcp() {
    let deadline = Instant::now() + 3 * TIMEOUT;
    let shm_before = shm_files();
    let mut built = Vec::new();
    for (name, n) in [("spawn", 1), ("spawn", 2), ("spawn_multiple", 2), ("connect_accept", 3)] {
        let Some((dir, exe)) = build(name) else { return };
        let _turn = bb_tests::one_job_at_a_time();
        let out = finish(start(n, &exe, &[], &UDP_ASLEEP), name, deadline);
        assert_program_passed(&out, name, &format!("{name} on {n} ranks over UDP"));
        built.push((dir, exe));
    }
    // Two jobs, each over UDP inside, meet through a port.
    let Some((dir, exe)) = build("two_jobs") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let file = dir.join("port");
    let file = file.to_str().unwrap();
    let server = start(2, &exe, &["server", file], &UDP_ASLEEP);
    let client = finish(start(2, &exe, &["client", file], &UDP_ASLEEP), "the client job over UDP", deadline);
    let server = finish(server, "the server job over UDP", deadline);
    assert_passed(&client, "the client job over UDP");
    assert_passed(&server, "the server job over UDP");
    built.push((dir, exe));
    for (dir, exe) in built {
        assert_nothing_left(&exe, &shm_before);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_spawn_onto_another_host_over_udp() {
    spawn_onto_another_host(&UDP_ASLEEP);
}

#[test]
fn two_bbrun_jobs_connect_through_a_port_and_a_wrong_token_is_refused() {
    let Some((dir, exe)) = build("two_jobs") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let port_file = dir.join("port");
    let file = port_file.to_str().unwrap();
    let shm_before = shm_files();
    let deadline = Instant::now() + TIMEOUT;

    let server = start(2, &exe, &["server", file], &[]);
    let bad = start(1, &exe, &["badclient", file], &[("BB_PORT_CONNECT_MS", "2000")]);
    let bad = finish(bad, "the client with a wrong token", deadline);
    assert_passed(&bad, "the client with a wrong token");
    let client = start(2, &exe, &["client", file], &[]);
    let client = finish(client, "the client job", deadline);
    let server = finish(server, "the server job", deadline);
    assert_passed(&client, "the client job");
    assert_passed(&server, "the server job");

    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `two_jobs stale_server` accepts two client jobs one after the other; the second's processes
/// take the numbers the first's had. Groups the server kept from the first job's communicators
/// name the first job's processes, gone now, not the second's: translated to the second job's
/// groups they are MPI_UNDEFINED, compared MPI_UNEQUAL, and MPI_Comm_create_group with them is
/// MPI_ERR_GROUP naming a disconnected process.
#[test]
fn a_group_kept_from_a_disconnected_job_does_not_name_the_processes_that_took_its_numbers() {
    let Some((dir, exe)) = build("two_jobs") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let port_file = dir.join("port");
    let file = port_file.to_str().unwrap();
    let shm_before = shm_files();
    let deadline = Instant::now() + TIMEOUT;
    let server = start(2, &exe, &["stale_server", file], &[]);
    let first = start(2, &exe, &["stale_client", file], &[]);
    let first = finish(first, "the first client job", deadline);
    assert_passed(&first, "the first client job");
    let mut second = start(2, &exe, &["stale_client", file], &[]);
    let server = finish(server, "the server job", deadline);
    if !server.status.success() {
        // A failing server leaves the second client waiting for it: its output says why.
        let _ = second.kill();
        let _ = second.wait();
    }
    assert_passed(&server, "the server job");
    let second = finish(second, "the second client job", deadline);
    assert_passed(&second, "the second client job");
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A thousand rounds of connect, exchange (checked every round) and disconnect: both jobs'
/// per-peer tables hold no more peers than the two jobs have (the disconnected ones' numbers
/// are taken again), and their descriptors stay level.
#[test]
fn a_thousand_connect_disconnect_rounds_keep_the_peer_tables_bounded() {
    let env = [("BB_CTEST_TIMEOUT", "290")];
    server_and_client(["rounds_server", "rounds_client"], &["1000"], [&[], &[]], &env, 5 * TIMEOUT);
}

/// 200 rounds of spawning a child, exchanging with it and disconnecting (`spawn loop 200`):
/// the parent's descriptors and per-peer tables stay level, and no child, socket or /dev/shm
/// file is left.
#[test]
fn two_hundred_spawn_disconnect_rounds_leave_nothing_and_keep_the_tables_level() {
    let Some((dir, exe)) = build("spawn") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let shm_before = shm_files();
    let job = start(1, &exe, &["loop", "200"], &[("BB_CTEST_TIMEOUT", "290")]);
    let out = finish(job, "200 spawns", Instant::now() + 5 * TIMEOUT);
    assert_program_passed(&out, "spawn", "200 rounds of spawn and disconnect");
    std::thread::sleep(Duration::from_secs(1)); // agents clean up after bbrun exits
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_that_accepts_twenty_rounds_keeps_its_descriptors_level() {
    server_and_client(["rounds_server", "rounds_client"], &[], [&[], &[]], &[], TIMEOUT);
}

/// Runs `two_jobs SERVER FILE args...` and `two_jobs CLIENT FILE args...` (2 ranks each, with
/// bbrun options `options[0]` and `options[1]`, and `env`) within `within`: both must pass and
/// leave nothing behind.
fn server_and_client(modes: [&str; 2], args: &[&str], options: [&[&str]; 2], env: &[(&str, &str)], within: Duration) {
    let Some((dir, exe)) = build("two_jobs") else { return };
    let _turn = bb_tests::one_job_at_a_time();
    let port_file = dir.join("port");
    let file = port_file.to_str().unwrap();
    let shm_before = shm_files();
    let deadline = Instant::now() + within;
    let [server, client] =
        [0, 1].map(|k| start_with(options[k], 2, &exe, &[&[modes[k], file][..], args].concat(), env));
    let client = finish(client, &format!("the {} job", modes[1]), deadline);
    let server = finish(server, &format!("the {} job", modes[0]), deadline);
    assert_passed(&client, &format!("the {} job {args:?} {options:?} {env:?}", modes[1]));
    assert_passed(&server, &format!("the {} job {args:?} {options:?} {env:?}", modes[0]));
    assert_nothing_left(&exe, &shm_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `two_jobs flush_server` and `flush_client`: the client's MPI_Isends (sockets full, the rest
/// queued in user space) reach the server whole although the client disconnects and finalizes
/// at once, and every request is complete after MPI_Comm_disconnect on both sides.
fn disconnect_flushes(server_options: &[&str], client_options: &[&str], env: &[(&str, &str)]) {
    server_and_client(["flush_server", "flush_client"], &[], [server_options, client_options], env, TIMEOUT);
}

#[test]
fn disconnect_waits_for_pending_sends_and_the_peer_receives_every_byte() {
    disconnect_flushes(&[], &[], &[]);
    disconnect_flushes(&[], &[], &[("BB_ROUTES", "tcp")]);
}

/// The server job on one namespace host, the client job on another.
#[test]
fn disconnect_flushes_to_a_job_on_another_host() {
    let Some(ns) = bb_tests::Netns::create(2) else { return };
    let (server_host, client_host) = (format!("{}:2", ns.names[0]), format!("{}:2", ns.names[1]));
    let launcher = "ip netns exec {host}";
    disconnect_flushes(
        &["--launcher", launcher, "--host", &server_host],
        &["--launcher", launcher, "--host", &client_host],
        &[],
    );
}

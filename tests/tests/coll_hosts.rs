//! Collectives on ranks of several hosts: network namespaces stand in for hosts (as in
//! `routes.rs`), the launcher template `ip netns exec {host}` starts each host's agent. bb-coll
//! checks every collective against the values each rank computes alone (rank order for a
//! non-commutative operator up to 64 KiB, a sum and every data-moving collective from 0 B to
//! 1 MiB, first/middle/last root, in place and not), here
//! with each network and hierarchical algorithm forced, on 2 and 3 hosts of 1 to 3 ranks each:
//! consecutive and interleaved placements, uneven hosts. Every job runs under a timeout and
//! must leave no process and no /dev/shm file behind.
//!
//! Needs root and `ip`; each test prints a SKIP line and passes without them.

use std::time::Duration;

use bb_tests::{binary, build_with, root, Job, Netns, Running};

const T: Duration = Duration::from_secs(120);
const SETTLE: Duration = Duration::from_secs(3);
const LAUNCHER: &str = "ip netns exec {host}";

/// Slots per host and the rank count: ranks fill each host's slots in turn, then wrap around,
/// so `[1, 2]` with 5 ranks puts 0 and 3 on the first host, 1, 2 and 4 on the second.
/// (Two hosts of two ranks each run in `the_algorithms_forced_are_those_that_run`.)
const PLACEMENTS: [(&[usize], usize); 5] = [(&[1, 1], 2), (&[2, 1], 3), (&[1, 2], 5), (&[3, 1, 2], 6), (&[1, 1, 1], 5)];

/// The algorithm sets, each forced on every placement; the first is the table's own choice.
const SETS: [&[(&str, &str)]; 5] = [
    &[],
    &[
        ("BB_COLL_BCAST", "hier"),
        ("BB_COLL_BARRIER", "hier"),
        ("BB_COLL_REDUCE", "hier"),
        ("BB_COLL_ALLREDUCE", "hier"),
        ("BB_COLL_ALLGATHER", "hier"),
        ("BB_COLL_GATHER", "hier"),
        ("BB_COLL_SCATTER", "hier"),
    ],
    &[
        ("BB_COLL_BCAST", "scatter-allgather"),
        ("BB_COLL_ALLREDUCE", "ring"),
        ("BB_COLL_ALLGATHER", "ring"),
        ("BB_COLL_ALLTOALL", "pairwise"),
    ],
    &[
        ("BB_COLL_BCAST", "tree"),
        ("BB_COLL_BARRIER", "dissemination"),
        ("BB_COLL_ALLREDUCE", "doubling"),
        ("BB_COLL_ALLGATHER", "doubling"),
    ],
    &[
        ("BB_COLL_REDUCE", "tree"),
        ("BB_COLL_ALLGATHER", "bruck"),
        ("BB_COLL_ALLTOALL", "linear"),
        ("BB_COLL_GATHER", "linear"),
        ("BB_COLL_SCATTER", "linear"),
    ],
];

fn run(ns: &Netns, (slots, n): (&[usize], usize), env: &[(&str, &str)]) -> Job {
    let program = binary("bb-coll");
    let program = program.to_str().unwrap();
    let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
    let (hosts, n) = (hosts.join(","), n.to_string());
    let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &n, program, "sizes"];
    Running::start_env(&args, env, b"", &[program]).finish(T, SETTLE)
}

fn expect_ok(job: &Job, n: usize, what: &str) {
    job.assert_success();
    let want = format!("ok coll on {n} ranks");
    assert!(job.stdout().contains(&want), "{what}:\nstdout: {}\nstderr: {}", job.stdout(), job.stderr());
}

/// Every collective by every algorithm for several hosts, forced, on every placement.
#[test]
fn collectives_across_hosts_by_every_algorithm() {
    let Some(ns) = Netns::create(3) else { return };
    for set in SETS {
        for placement in PLACEMENTS {
            expect_ok(&run(&ns, placement, set), placement.1, &format!("{set:?} on {placement:?}"));
        }
    }
}

/// The forced algorithms are the ones that run (the verbose report names each choice), and
/// unforced, several hosts choose the hierarchy; one that cannot apply says what runs instead.
#[test]
fn the_algorithms_forced_are_those_that_run() {
    let Some(ns) = Netns::create(2) else { return };
    let verbose = ("BB_VERBOSE", "1");
    let job = run(&ns, (&[2, 1], 3), &[verbose]);
    expect_ok(&job, 3, "the table");
    let err = job.stderr();
    for what in ["bcast", "barrier", "reduce", "allreduce", "allgather", "gather", "scatter"] {
        let line = format!(": {what} on a communicator of 3 ranks (several hosts, context 1)");
        let chosen = err.lines().find(|l| l.contains(&line)).unwrap_or_else(|| panic!("no {line}:\n{err}"));
        assert!(chosen.contains("(hier; table;"), "{chosen}");
    }
    for set in &SETS[1..] {
        let env: Vec<_> = set.iter().copied().chain([verbose]).collect();
        let job = run(&ns, (&[2, 2], 4), &env);
        expect_ok(&job, 4, &format!("{set:?}"));
        for (switch, algorithm) in set.iter() {
            let forced = format!("({algorithm}; forced by {switch})");
            assert!(job.stderr().contains(&forced), "{forced} missing:\n{}", job.stderr());
        }
    }
    // bb-coll's ordered reductions cannot go around a ring: recursive doubling keeps rank order.
    let job = run(&ns, (&[2, 2], 4), &[("BB_COLL_ALLREDUCE", "ring"), verbose]);
    expect_ok(&job, 4, "ring asked");
    assert!(job.stderr().contains("(doubling (ring asked: the operator does not commute);"), "{}", job.stderr());
}

/// MPI programs built for MPICH (tests/c, as in `c_suite.rs`) run on our library across hosts:
/// every reduction form (MPI_Reduce_scatter by the hierarchy now), non-commutative user ops in
/// rank order, large vectors, types with holes, and the nonblocking collectives, by the table,
/// on an interleaved placement, on three hosts, and on 2 hosts of 2 consecutive ranks (the
/// blocking forms' host phases on the board, `coll/hier_board.rs`). Skips without
/// `mpicc.mpich` or `dist/`.
#[test]
fn mpich_built_collective_programs_across_hosts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let lib = root.join("dist/lib");
    if !lib.join("libmpi.so.12").exists() {
        println!("SKIP: dist/lib/libmpi.so.12 is missing (make)");
        return;
    }
    let Some(ns) = Netns::create(3) else { return };
    let out = std::env::temp_dir().join(format!("bb-coll-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    for program in ["coll_reduce", "reduce_large", "reduce_holes", "icoll", "coll_basic"] {
        let exe = out.join(program);
        let built = std::process::Command::new("mpicc.mpich")
            .arg("-o")
            .arg(&exe)
            .arg(root.join(format!("tests/c/{program}.c")))
            .status();
        if !built.is_ok_and(|s| s.success()) {
            println!("SKIP: mpicc.mpich could not build {program}");
            let _ = std::fs::remove_dir_all(&out);
            return;
        }
        for (slots, n) in [(&[1usize, 2][..], 5usize), (&[1, 1, 1], 3), (&[2, 2], 4)] {
            let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
            let (hosts, count) = (hosts.join(","), n.to_string());
            let exe = exe.to_str().unwrap();
            let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &count, exe];
            let env = [("LD_LIBRARY_PATH", lib.to_str().unwrap())];
            let job = Running::start_env(&args, &env, b"", &[exe]).finish(T, SETTLE);
            job.assert_success();
            let pass = format!("PASS {program}");
            assert!(
                job.stdout().contains(&pass),
                "{program} on {hosts}, {n} ranks:\n{}\n{}",
                job.stdout(),
                job.stderr()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Blocking barrier, bcast, reduce, allreduce, allgather, gather and scatter on 2 hosts of 1,
/// 2 and 3 ranks each (and an interleaved placement): with the hierarchy (the table's, or
/// forced) each host's phases run on its board, so no rank exchanges a message with a member
/// of its own host, values checked by bb-coll; with `BB_BOARD=0` they go by messages (what
/// the count would show if the board were not used).
#[test]
fn hierarchical_host_phases_run_on_the_board() {
    let Some(ns) = Netns::create(2) else { return };
    let hier = SETS[1];
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        for env in [&[][..], hier] {
            let job = run_mode(&ns, placement, env, "hier-board");
            expect_mode(&job, placement.1, "hier-board", &format!("{env:?} on {placement:?}"));
            assert_eq!(on_host(&job), 0, "{env:?} on {placement:?}: messages on a host\n{}", job.stdout());
        }
        if placement.0.iter().any(|&s| s > 1) {
            let job = run_mode(&ns, placement, &[("BB_BOARD", "0")], "hier-board");
            expect_mode(&job, placement.1, "hier-board", &format!("BB_BOARD=0 on {placement:?}"));
            assert!(on_host(&job) > 0, "BB_BOARD=0 on {placement:?}: host phases by messages\n{}", job.stdout());
        }
    }
}

fn run_mode(ns: &Netns, (slots, n): (&[usize], usize), env: &[(&str, &str)], mode: &str) -> Job {
    let program = binary("bb-coll");
    let program = program.to_str().unwrap();
    let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
    let (hosts, n) = (hosts.join(","), n.to_string());
    let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &n, program, mode];
    Running::start_env(&args, env, b"", &[program]).finish(T, SETTLE)
}

fn expect_mode(job: &Job, n: usize, mode: &str, what: &str) {
    job.assert_success();
    let want = format!("ok {mode} on {n} ranks");
    assert!(job.stdout().contains(&want), "{what}:\nstdout: {}\nstderr: {}", job.stdout(), job.stderr());
}

fn run_hier(ns: &Netns, (slots, n): (&[usize], usize), env: &[(&str, &str)], mode: &str) -> Job {
    let program = binary("bb-hier");
    let program = program.to_str().unwrap();
    let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
    let (hosts, n) = (hosts.join(","), n.to_string());
    let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &n, program, mode];
    Running::start_env(&args, env, b"", &[program]).finish(T, SETTLE)
}

/// The messages bb-coll or bb-hier reports its ranks exchanged with members of their own host.
fn on_host(job: &Job) -> u64 {
    let out = job.stdout();
    let counts = out.lines().filter_map(|l| l.split(": ").nth(1)?.strip_suffix(" messages on its host"));
    counts.map(|c| c.parse::<u64>().unwrap()).sum()
}

/// Blocking reduce_scatter (even and uneven blocks, in place), scan and exscan, allgatherv of
/// uneven parts, and bcast, reduce and allreduce past the board's 2 KiB data area up to 1 MiB
/// (cells of the board) on 2 hosts of 1, 2 and 3 ranks and an interleaved placement, a sum
/// and a non-commutative operator in rank order, values checked by bb-hier. With the board's
/// host phases taken as far as they go (the scans' `hier` forced, the cells' limits at 1 MiB)
/// no rank exchanges a message with a member of its own host (the scans on consecutive hosts
/// only: interleaved they stay the chain); with `BB_BOARD=0` they go by messages; by the
/// table's own limits the values are the same.
#[test]
fn the_other_collectives_host_phases_run_on_the_board() {
    let Some(ns) = Netns::create(2) else { return };
    let whole = [("BB_COLL_SCAN", "hier"), ("BB_HIER_BOARD_MAX", "1048576"), ("BB_HIER_BCAST_MAX", "1048576")];
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &whole, "more");
        expect_mode(&job, placement.1, "more", &format!("{placement:?}"));
        let consecutive = placement.1 == placement.0.iter().sum::<usize>();
        if consecutive {
            assert_eq!(on_host(&job), 0, "{placement:?}: messages on a host\n{}", job.stdout());
        }
        if placement.0.iter().any(|&s| s > 1) {
            let job = run_hier(&ns, placement, &[("BB_BOARD", "0")], "more");
            expect_mode(&job, placement.1, "more", &format!("BB_BOARD=0 on {placement:?}"));
            assert!(on_host(&job) > 0, "BB_BOARD=0 on {placement:?}: host phases by messages\n{}", job.stdout());
        }
    }
    let job = run_hier(&ns, (&[2, 2], 4), &[], "more");
    expect_mode(&job, 4, "more", "the table's limits");
}

/// Blocking gatherv and scatterv across hosts (uneven parts from 0 B to 70,000, some past one
/// data area, every root, in place at the root and not, values checked by bb-hier) on 2 hosts
/// of 1 to 3 ranks and an interleaved placement: with parts within one data area one message
/// crosses between the hosts a call (the other host's leader's to the root, or the root's to
/// it), and no rank exchanges a message with a member of its own host (the host phases on the
/// board), also where a host's scatterv parts together pass one data area (parts of 1000 and
/// 2000 bytes: the host's post in cells; before, 2 x 3 sent two of three such parts by message
/// and the root's host one; `BB_HIER_PARTS_MAX=2048` still does). Flat, one crossed for every rank of the other host, and the root's host exchanged
/// messages too (main, 2 x 2, 64 calls: 32-33 messages on each rank's host, 257 sent and
/// received between hosts). Gatherv forced through the leaders (the table gives it them only
/// where a host holds 3 members, `BB_GATHERV_HIER_WIDEST`); by the table the values again.
#[test]
fn gatherv_and_scatterv_go_through_the_hosts_leaders() {
    let Some(ns) = Netns::create(2) else { return };
    let job = run_hier(&ns, (&[2, 2], 4), &[], "parts");
    expect_mode(&job, 4, "parts", "the table");
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[("BB_COLL_GATHER", "hier")], "parts");
        expect_mode(&job, placement.1, "parts", &format!("{placement:?}"));
        let (between, calls) = between_hosts(&job, placement.1);
        let out = job.stdout();
        assert_eq!(between, calls, "{placement:?}: one message between the root and the other host a call\n{out}");
        assert_eq!(on_host(&job), 0, "{placement:?}: messages on a host\n{out}");
    }
    // A host's post held to one data area: the parts past it go by message.
    let env = [("BB_COLL_GATHER", "hier"), ("BB_HIER_PARTS_MAX", "2048")];
    let job = run_hier(&ns, (&[3, 3], 6), &env, "parts");
    expect_mode(&job, 6, "parts", "one data area a host");
    let (between, calls) = between_hosts(&job, 6);
    assert!(between > calls, "one data area a host: every part through the leaders\n{}", job.stdout());
}

/// Blocking gather and scatter of parts of one length across hosts (0 B to 20,000: inline,
/// one data area, cells of it, past `BB_HIER_PARTS_MAX` a host; every root, in place at the
/// root and not, values checked by bb-hier) on 2 hosts of 1 to 3 ranks and an interleaved
/// placement: past `BB_GATHER_HIER_MAX` where a host's parts fit `BB_HIER_PARTS_MAX` (parts of
/// 1,100 to 5,000 bytes) one
/// message crosses between the hosts a call and no rank exchanges a message with a member of
/// its own host, the host phases on the board in cells (before, both went by flat messages:
/// 2 x 2, 80 calls, 160 messages on the hosts and 160 between them, as `BB_HIER_PARTS_MAX=0`
/// still does).
#[test]
fn gather_and_scatter_past_one_post_go_on_the_board_in_cells() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "rooted");
        expect_mode(&job, placement.1, "rooted", &format!("{placement:?}"));
        let (between, calls) = between_hosts(&job, placement.1);
        let out = job.stdout();
        assert_eq!(between, calls, "{placement:?}: one message between the root and the other host a call\n{out}");
        assert_eq!(on_host(&job), 0, "{placement:?}: messages on a host\n{out}");
    }
    // Forced flat, the values again.
    let flat = [("BB_COLL_GATHER", "linear"), ("BB_COLL_SCATTER", "linear")];
    let job = run_hier(&ns, (&[2, 2], 4), &flat, "rooted");
    expect_mode(&job, 4, "rooted", "linear");
    assert!(on_host(&job) > 0, "linear: the root's host by messages\n{}", job.stdout());
}

/// Blocking all-to-all and all-to-allv across hosts (parts of 0 B to 20,000, uneven ones and
/// empty ones at uneven places, values and gaps checked by bb-hier) on 2 hosts of 1 to 3 ranks
/// and an interleaved placement: where every part fits the host's share of
/// `BB_HIER_ALLTOALL_MAX`, one message crosses from each host's leader to the other's a call
/// (that moves bytes: a call of empty parts crosses none)
/// and no rank exchanges a message with a member of its own host (the host phases on the
/// board). Before, every rank sent each rank a message (main, 2 x 2, 12 calls: 96 messages on
/// the hosts, 96 between them), as `BB_COLL_ALLTOALL=linear` still does. MPI_IN_PLACE and derived datatypes
/// (the MPI layer's packing) in `mpich_built_collective_programs_across_hosts` (coll_basic).
#[test]
fn alltoall_goes_through_the_hosts_leaders_on_the_board() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "alltoall");
        expect_mode(&job, placement.1, "alltoall", &format!("{placement:?}"));
        let (between, calls) = between_hosts(&job, placement.1);
        let out = job.stdout();
        assert_eq!(between, 2 * calls, "{placement:?}: one message from each host to the other a call\n{out}");
        assert_eq!(on_host(&job), 0, "{placement:?}: messages on a host\n{out}");
    }
    let job = run_hier(&ns, (&[2, 2], 4), &[("BB_COLL_ALLTOALL", "linear")], "alltoall");
    expect_mode(&job, 4, "alltoall", "linear");
    let (between, calls) = between_hosts(&job, 4);
    assert!(between == 8 * calls && on_host(&job) > 0, "linear: a message to every rank\n{}", job.stdout());
}

/// Blocking all-to-all and all-to-allv of parts past every host's share of
/// `BB_HIER_ALLTOALL_MAX` (13,000 bytes and up, uneven parts and empty ones; values and gaps
/// checked by bb-hier) on 2 hosts of 1 to 3 ranks and an interleaved placement: each part with
/// bytes for another host goes by its one message and nothing else crosses, as flat. Before,
/// the all-to-allv's leaders still exchanged their (empty) messages a call beside those parts
/// (2 x 2: 10 crossed a call where 8 parts cross, 4 of them empty).
#[test]
fn alltoall_parts_past_the_share_cross_by_their_own_messages_alone() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "alltoall-past");
        expect_mode(&job, placement.1, "alltoall-past", &format!("{placement:?}"));
        let (between, _) = between_hosts(&job, placement.1);
        let out = job.stdout();
        let parts = out.lines().filter_map(|l| l.split(": ").nth(1)?.strip_suffix(" parts with bytes for other hosts"));
        let parts: u64 = parts.map(|c| c.parse::<u64>().unwrap()).sum();
        assert_eq!(between, parts, "{placement:?}: one message a part with bytes for another host, no other\n{out}");
    }
}

/// Erroneous all-to-allvs whose counts disagree between ranks (parts of 100 bytes, within the
/// share, but the last rank expects 50 from rank 0; then the next member of rank 0's host
/// does) on 2 hosts of 1 to 3 ranks and an interleaved placement: across hosts the leader of
/// the last rank's host receives more than its members' counts say, on a host the member reads
/// more than it expects; that rank fails with a truncation (as a flat all-to-allv fails at the
/// receiver), every other rank returns, and all go on to the end. Before, that leader returned
/// at once and its members waited on the board for its post for ever (2 x 2: the job ran into
/// its timeout), and a member on a host took the first 50 bytes silently.
#[test]
fn an_alltoallv_whose_counts_disagree_fails_where_they_do_and_hangs_nobody() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[1usize, 1][..], 2usize), (&[2, 2], 4), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "alltoallv-disagree");
        expect_mode(&job, placement.1, "alltoallv-disagree", &format!("{placement:?}"));
        let out = job.stdout();
        let shared_host = placement.1 > placement.0.len();
        for place in ["across hosts"].into_iter().chain(shared_host.then_some("on a host")) {
            let failed: Vec<&str> = out.lines().filter(|l| l.contains(&format!("counts {place} failed"))).collect();
            let ok = out.lines().filter(|l| l.ends_with(&format!("counts {place}: ok"))).count();
            let what = format!("{placement:?} {place}");
            assert_eq!((failed.len(), ok), (1, placement.1 - 1), "{what}: one rank fails, the others return\n{out}");
            assert!(failed[0].contains("message truncated"), "{what}: a truncation\n{out}");
        }
    }
}

/// The messages bb-hier's ranks sent to other hosts, summed, and the calls they made.
fn between_hosts(job: &Job, n: usize) -> (u64, u64) {
    let out = job.stdout();
    let counts: Vec<(u64, u64)> = out
        .lines()
        .filter_map(|l| {
            let rest = l.split(": ").nth(1)?.strip_suffix(" calls")?;
            let (between, calls) = rest.split_once(" messages sent to other hosts in ")?;
            Some((between.parse().ok()?, calls.parse().ok()?))
        })
        .collect();
    assert_eq!(counts.len(), n, "a count per rank\n{out}");
    (counts.iter().map(|c| c.0).sum(), counts[0].1)
}

/// MPIX_Comm_revoke's path: a rank revokes a hierarchical communicator (the first, last and a
/// middle rank in turn) while the others are blocked in its barrier, in a host phase on the
/// board or the leaders' between hosts: every one returns revoked (the host's and leaders'
/// communicators are revoked with it), and so does a later bcast on it.
#[test]
fn a_revocation_reaches_the_hierarchys_host_phases() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[2usize, 2][..], 4usize), (&[3, 3], 6), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "revoke");
        expect_mode(&job, placement.1, "revoke", &format!("{placement:?}"));
    }
}

/// More hierarchical communicators (12) than a rank has board slots (8), all alive and used:
/// the hosts that find no slot free run their host phases by messages, values still right.
#[test]
fn hosts_without_a_free_board_slot_run_their_phases_by_messages() {
    let Some(ns) = Netns::create(2) else { return };
    for placement in [(&[2usize, 2][..], 4usize), (&[1, 2], 5)] {
        let job = run_hier(&ns, placement, &[], "slots");
        expect_mode(&job, placement.1, "slots", &format!("{placement:?}"));
        assert!(on_host(&job) > 0, "{placement:?}: no host ran out of slots\n{}", job.stdout());
    }
}

/// tests/c/mpix_revoke.c (MPIX_Comm_revoke through MPI, built with our `mpicc`: MPICH 4.0.2
/// stops in it) across hosts: among its checks a barrier that every rank but the last is
/// blocked in when the last revokes its communicator, here the hierarchy's (host phases on the
/// board, the leaders' between hosts): each fails with MPIX_ERR_REVOKED. Skips without
/// `dist/` (make).
#[test]
fn mpix_revoke_across_hosts() {
    let dist = root().join("dist");
    if !dist.join("lib/libmpi.so.12").exists() {
        println!("SKIP: dist/lib/libmpi.so.12 is missing (make)");
        return;
    }
    let Some(ns) = Netns::create(2) else { return };
    let out = std::env::temp_dir().join(format!("bb-revoke-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let exe = build_with(&dist.join("bin/mpicc"), "tests/c/mpix_revoke.c", &out, "mpix_revoke");
    let exe = exe.to_str().unwrap();
    for (slots, n) in [(&[2usize, 2][..], 4usize), (&[3, 3], 6), (&[1, 2], 5)] {
        let hosts: Vec<String> = ns.names.iter().zip(slots).map(|(h, s)| format!("{h}:{s}")).collect();
        let (hosts, count) = (hosts.join(","), n.to_string());
        let args = ["--launcher", LAUNCHER, "--host", &hosts, "-n", &count, exe];
        let env = [("LD_LIBRARY_PATH", dist.join("lib").to_str().unwrap().to_string())];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let job = Running::start_env(&args, &env, b"", &[exe]).finish(T, SETTLE);
        job.assert_success();
        assert!(job.stdout().contains("PASS mpix_revoke"), "{hosts}, {n} ranks:\n{}\n{}", job.stdout(), job.stderr());
    }
    let _ = std::fs::remove_dir_all(&out);
}

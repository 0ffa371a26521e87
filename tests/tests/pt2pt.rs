//! Point-to-point over the billboard, as real multi-process jobs under `bbrun`.
//! Each job runs under a timeout and must leave no process and no /dev/shm file behind.

use std::time::Duration;

use bb_tests::{binary, one_job_at_a_time, run, shm_files};

const T: Duration = Duration::from_secs(120);

fn case(n: usize, name: &str, env: &[(&str, &str)]) {
    let job = run(n, "bb-pt2pt", &[name], env, T);
    job.assert_success();
    assert!(job.stdout().contains(&format!("ok {name} on {n} ranks")), "stdout: {}", job.stdout());
}

#[test]
fn every_case_on_1_2_4_and_8_ranks() {
    // 8 ranks oversubscribe a 2-core machine: waiting must yield, not spin out time slices.
    for n in [1, 2, 4, 8] {
        case(n, "all", &[]);
    }
}

#[test]
fn ordering_under_oversubscription() {
    case(8, "order", &[]);
}

/// Where the ranks outnumber the cores, the peer a wait needs most likely waits for this core:
/// the wait hands it over (a yield) after every poll that found nothing, with no spin first
/// (engine/ladder.rs, `BB_SPIN_CROWDED`). A token round 4 ranks pinned to 2 cpus (`bb-pt2pt
/// ring`) and a ping-pong of 2 ranks on one (`onecore`): a poll without a yield after it is one
/// that found the message, at most one a message (before, `BB_SPIN_CROWDED=50`: 3.0 in both).
#[test]
fn a_crowded_wait_yields_after_every_poll_that_found_nothing() {
    for (n, case) in [(4, "ring"), (2, "onecore")] {
        let job = run(n, "bb-pt2pt", &[case], &[], T);
        job.assert_success();
        let calls = bb_tests::wait_calls(&job);
        assert_eq!(calls.len(), n, "a line a rank: {}", job.stdout());
        for c in &calls {
            assert!(c.polls - c.yields <= 1.0, "{case}: polls not followed by a yield, a message: {c:?}");
        }
    }
}

#[test]
fn sizes_up_to_16_mib_with_single_copy() {
    case(2, "sizes", &[]);
}

#[test]
fn sizes_up_to_16_mib_with_the_pipelined_fallback() {
    case(2, "sizes", &[("BB_SHM_SINGLE_COPY", "0")]);
    case(4, "truncate", &[("BB_SHM_SINGLE_COPY", "0")]);
}

#[test]
fn shared_copies_divide_large_messages_between_both_ends() {
    case(2, "shared", &[]);
    case(4, "shared", &[]);
    // Chunks of one page and every message shared: the most claims and the most turns.
    case(2, "shared", &[("BB_SHM_SHARED_CHUNK", "4096"), ("BB_SHM_SHARED_COPY", "1")]);
}

#[test]
fn shared_copies_the_kernel_refuses_still_deliver() {
    let job = run(2, "bb-pt2pt", &["refused"], &[("BB_VERBOSE", "1")], T);
    job.assert_success();
    let err = job.stderr();
    // Whether the sender tries a write before the receiver has read everything depends on the
    // scheduler here; the engine simulation pins that path (`a_refused_shared_write_gives_its_pages_back`).
    assert!(err.contains("shared copy from rank 1: read refused"), "the receiver's read was refused:\n{err}");
    assert!(err.contains("single copy from rank 1 refused"), "and it went on by the pipeline:\n{err}");
}

#[test]
fn non_contiguous_sends_by_every_protocol() {
    // Gathered eager records, the gathered single copy (block list read first), and with
    // single copy off the gathered pipeline; tiny rings and slots force queued gathered sends.
    case(2, "blocks", &[]);
    case(2, "blocks", &[("BB_SHM_SINGLE_COPY", "0")]);
    case(2, "blocks", &[("BB_SHM_RING_BYTES", "4096"), ("BB_SHM_SLOTS", "2"), ("BB_SHM_SLOT_BYTES", "8192")]);
}

#[test]
fn a_large_send_returns_while_its_receiver_computes() {
    // The receiver sleeps 3 s after its receive: the send must not wait for its next call.
    case(2, "prompt", &[]);
    case(2, "prompt", &[("BB_SHM_SINGLE_COPY", "0")]);
}

#[test]
fn the_fallback_is_announced_once_in_verbose_mode() {
    let job = run(2, "bb-pt2pt", &["sizes"], &[("BB_SHM_SINGLE_COPY", "0"), ("BB_VERBOSE", "1")], T);
    job.assert_success();
    let lines = job.stderr().lines().filter(|l| l.contains("pipelined copy")).count();
    assert!((1..=2).contains(&lines), "one line per rank at most, got:\n{}", job.stderr());
}

#[test]
fn tiny_rings_and_slots_still_deliver_everything() {
    // Forces ring-full and slot-exhaustion paths (queued sends, credits, ACK reclaim).
    let env = [("BB_SHM_RING_BYTES", "4096"), ("BB_SHM_SLOTS", "2"), ("BB_SHM_SLOT_BYTES", "8192")];
    case(4, "all", &env);
}

#[test]
fn a_singleton_starts_without_bbrun() {
    // Its turn as for a job: another job's leftover check kills every bb-pt2pt it finds.
    let _turn = one_job_at_a_time();
    let before = shm_files();
    let out = std::process::Command::new(binary("bb-pt2pt")).arg("all").output().expect("run singleton");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok all on 1 ranks"));
    assert_eq!(shm_files(), before, "the singleton's segment is gone");
}

/// A rank that dies while the others wait on it: bbrun names it, stops the rest within a
/// second or two, exits non-zero, and `run` checks nothing is left behind.
fn fault(case: &str, env: &[(&str, &str)], expect_code: i32, expect_words: &[&str]) {
    let job = run(4, "bb-pt2pt", &[case], env, Duration::from_secs(30));
    assert_eq!(job.code(), Some(expect_code), "stderr:\n{}", job.stderr());
    assert!(job.elapsed < Duration::from_secs(2), "took {:?}", job.elapsed);
    let report = job.stderr();
    for w in expect_words {
        assert!(report.contains(w), "the report should say {w:?}:\n{report}");
    }
}

#[test]
fn kill_9_of_a_rank_ends_the_job_and_names_it() {
    fault("kill9", &[], 137, &["rank 2", "signal 9"]);
}

#[test]
fn exit_3_of_a_rank_ends_the_job_with_its_code() {
    fault("exit3", &[], 3, &["rank 2", "code 3"]);
}

#[test]
fn a_waiting_rank_sleeps_instead_of_spinning() {
    let job = run(2, "bb-pt2pt", &["idle"], &[], T);
    job.assert_success();
    let cpu = job.cpu_seconds;
    // Spinning through the 2 s wait would cost about 2 CPU seconds; sleeping costs milliseconds.
    assert!(cpu < 0.5, "the job used {cpu:.2} CPU seconds over {:?} of waiting", job.elapsed);
}

/// A ladder that goes to sleep at once, for as long as 30 s: only the data can wake a rank in time.
const SLEEP_AT_ONCE: [(&str, &str); 3] = [("BB_SPIN", "1"), ("BB_YIELD", "1"), ("BB_SLEEP_US", "30000000")];

#[test]
fn a_sleeping_rank_is_woken_by_its_data_on_either_route() {
    let tcp: Vec<_> = SLEEP_AT_ONCE.iter().chain(&TCP).copied().collect();
    for env in [&SLEEP_AT_ONCE[..], &tcp[..]] {
        case(3, "wakeup", env);
    }
}

/// Every collective algorithm forced in turn (`BB_COLL_<NAME>`) on 1 to 8 ranks (8
/// oversubscribe the 2 cores): bb-coll checks every result against the value each rank
/// computes alone. Large messages go by the pipelined copy here (single copies off); the
/// table's own mix and the copies are in `collectives_by_the_table_and_by_copies`.
const ALGORITHMS: [&[(&str, &str)]; 6] = [
    &[
        ("BB_COLL_BCAST", "post"),
        ("BB_COLL_BARRIER", "post"),
        ("BB_COLL_REDUCE", "post"),
        ("BB_COLL_ALLREDUCE", "post"),
        ("BB_COLL_ALLGATHER", "post"),
    ],
    &[
        ("BB_COLL_BCAST", "tree"),
        ("BB_COLL_BARRIER", "dissemination"),
        ("BB_COLL_REDUCE", "tree"),
        ("BB_COLL_ALLREDUCE", "tree"),
        ("BB_COLL_ALLGATHER", "gather-bcast"),
    ],
    &[("BB_COLL_REDUCE", "split"), ("BB_COLL_ALLREDUCE", "split")],
    // The algorithms for several hosts run on one too (odd rank counts: doubling's fold,
    // Bruck's last partial round); the hierarchy of one host is its host phases alone.
    &[
        ("BB_COLL_BCAST", "scatter-allgather"),
        ("BB_COLL_BARRIER", "hier"),
        ("BB_COLL_REDUCE", "hier"),
        ("BB_COLL_ALLREDUCE", "doubling"),
        ("BB_COLL_ALLGATHER", "bruck"),
        ("BB_COLL_ALLTOALL", "pairwise"),
    ],
    // The board where a post fits (bb-coll's larger sizes take the table's paths).
    &[
        ("BB_COLL_BCAST", "board"),
        ("BB_COLL_BARRIER", "board"),
        ("BB_COLL_REDUCE", "board"),
        ("BB_COLL_ALLREDUCE", "board"),
        ("BB_COLL_ALLGATHER", "board"),
        ("BB_COLL_GATHER", "board"),
        ("BB_COLL_SCATTER", "board"),
        ("BB_COLL_ALLTOALL", "board"),
    ],
    // Broadcasts past one data area in cells of the board (a partial last cell at 8193,
    // 10,000 and 300,000 B), and every collective message from 1 byte by rendezvous.
    &[("BB_COLL_BCAST", "board-cells"), ("BB_COLL_RENDEZVOUS_MIN", "1")],
];

#[test]
fn collectives_on_1_to_8_ranks_by_every_algorithm() {
    for algorithms in ALGORITHMS {
        let env: Vec<_> = algorithms.iter().copied().chain([("BB_SHM_SINGLE_COPY", "0")]).collect();
        for n in 1..=8 {
            let job = run(n, "bb-coll", &["large"], &env, T);
            job.assert_success();
            assert!(job.stdout().contains(&format!("ok coll on {n} ranks")), "{env:?}: {}", job.stdout());
        }
    }
}

/// The messages of the data-moving collectives go by rendezvous from `BB_COLL_RENDEZVOUS_MIN`
/// bytes (the receiver's single copy; the pipeline where single copies are off), posts split
/// into a send each: every part of 0 B to 1 MiB, every root, in place and not (bb-coll's
/// `sizes`), and broadcasts in the board's cells beside them.
#[test]
fn collective_messages_by_rendezvous_below_the_eager_limit() {
    for copies in ["1", "0"] {
        let env = [("BB_COLL_RENDEZVOUS_MIN", "1"), ("BB_COLL_BCAST", "board-cells"), ("BB_SHM_SINGLE_COPY", copies)];
        for n in [2, 3, 5] {
            let job = run(n, "bb-coll", &["large", "sizes"], &env, T);
            job.assert_success();
            assert!(job.stdout().contains(&format!("ok coll on {n} ranks")), "{env:?}: {}", job.stdout());
        }
    }
}

/// Reductions by the tree, the posts and the board group their operands alike, in the
/// binomial tree's order (bb-coll's `association`: an operator that is neither associative
/// nor commutative names the grouping). The posts and the board folded right to left before,
/// and ScaLAPACK's xdsep failed its orthogonality check with them.
#[test]
fn reductions_group_operands_as_the_tree_by_every_algorithm_of_one_host() {
    for algorithm in ["tree", "post", "board"] {
        let env = [("BB_COLL_REDUCE", algorithm), ("BB_COLL_ALLREDUCE", algorithm)];
        for n in 1..=8 {
            let job = run(n, "bb-coll", &["association"], &env, T);
            job.assert_success();
            assert!(job.stdout().contains(&format!("ok association on {n} ranks")), "{env:?}: {}", job.stdout());
        }
    }
}

/// The 2-rank halves reduce (coll/reduce_halves.rs: each rank folds a part by single copy,
/// the other's landing in the root's result): typed blocking reduces (bb-coll's `halves`:
/// every root, a non-commutative operator on 16-byte elements and a commutative one on odd
/// counts of 8-byte words, across 256 KiB chunks, up to 1 MiB) forced on 2 ranks, and by
/// the table (from `BB_REDUCE_HALVES_MIN`, set, and by its default, 128 KiB, where each rank
/// has a core); the verbose report names it on both ranks. Forced where it
/// cannot run (3 and 4 ranks, single copies off) the tree does the work and the report
/// says why.
#[test]
fn typed_reduces_by_halves_on_2_ranks() {
    type Env = &'static [(&'static str, &'static str)];
    let cases: [(usize, Env, &str); 6] = [
        (2, &[("BB_COLL_REDUCE", "halves")], "(halves; forced by"),
        (2, &[("BB_REDUCE_HALVES_MIN", "65536")], "(halves; table;"),
        (2, &[], "(halves; table;"),
        (3, &[("BB_COLL_REDUCE", "halves")], "(halves asked"),
        (4, &[("BB_COLL_REDUCE", "halves")], "(halves asked"),
        (2, &[("BB_COLL_REDUCE", "halves"), ("BB_SHM_SINGLE_COPY", "0")], "(halves asked"),
    ];
    // The table gives 2 ranks the halves only where each has a core.
    let crowded = std::thread::available_parallelism().map_or(1, |c| c.get()) < 2;
    for (n, env, report) in cases.into_iter().filter(|c| !(crowded && c.2.contains("table"))) {
        let err = typed_reduces_reported(n, env, report);
        assert!(!err.contains("single copy from rank"), "{env:?}: a copy was refused:\n{err}");
    }
}

/// Runs bb-coll's typed reduces (`halves` mode) on `n` ranks with `env` and BB_VERBOSE=1,
/// checks their results and that every rank's report names `report`; gives back stderr.
fn typed_reduces_reported(n: usize, env: &[(&str, &str)], report: &str) -> String {
    let env: Vec<_> = env.iter().copied().chain([("BB_VERBOSE", "1")]).collect();
    let job = run(n, "bb-coll", &["halves"], &env, T);
    job.assert_success();
    assert!(job.stdout().contains(&format!("ok halves on {n} ranks")), "{env:?}: {}", job.stdout());
    let err = job.stderr();
    let head = format!("]: reduce on a communicator of {n} ranks (one host, context 1)");
    let named = err.lines().filter(|l| l.contains(&head) && l.contains(report)).count();
    assert_eq!(named, n, "{env:?}: every rank reports {report:?}:\n{err}");
    err
}

/// The reduce through the board in cells (coll/board_reduce_cells.rs: every rank but the root
/// posts its vector in cells of 16 KiB, the root folds each as it comes): bb-coll's typed
/// blocking reduces (every root, a non-commutative operator on 16-byte elements and a
/// commutative one on odd counts of 8-byte words, around the board's data area and the cell,
/// up to 1 MiB) forced on 2 to 4 ranks, and by the table (from `BB_REDUCE_CELLS_MIN`, where
/// ranks outnumber cores: 4 ranks on a machine of fewer cores); the verbose report names it
/// on every rank.
#[test]
fn typed_reduces_in_board_cells() {
    type Env = &'static [(&'static str, &'static str)];
    let forced: Env = &[("BB_COLL_REDUCE", "board-cells")];
    let table: Env = &[("BB_REDUCE_CELLS_MIN", "65536")];
    let (by_force, by_table) = ("(board-cells; forced by", "(board-cells; table;");
    let crowded = std::thread::available_parallelism().map_or(1, |c| c.get()) < 4;
    let cases = [(2, forced, by_force), (3, forced, by_force), (4, forced, by_force), (4, table, by_table)];
    for (n, env, report) in cases.into_iter().filter(|c| c.2 == by_force || crowded) {
        typed_reduces_reported(n, env, report);
    }
}

/// Broadcasts of a few hundred KiB and more where ranks outnumber cores go through the board
/// in cells by the table (`BB_BCAST_CELLS_MIN`; coll/board_bcast_cells.rs): bb-coll's `large`
/// (every root, up to 300,000 B) on 4 ranks, with the cells' small range (`BB_BCAST_CELLS_MAX`)
/// shut, so only the large one can give them; every rank's verbose report names them and the
/// results are checked. Skipped where 4 ranks each have a core (the table keeps the tree).
#[test]
fn large_broadcasts_where_ranks_outnumber_cores_go_in_board_cells() {
    if std::thread::available_parallelism().map_or(1, |c| c.get()) >= 4 {
        eprintln!("skipped: 4 ranks each have a core here");
        return;
    }
    let env = [("BB_BCAST_CELLS_MAX", "2048"), ("BB_VERBOSE", "1")];
    let job = run(4, "bb-coll", &["large"], &env, T);
    job.assert_success();
    assert!(job.stdout().contains("ok coll on 4 ranks"), "{}", job.stdout());
    let err = job.stderr();
    let head = "]: bcast on a communicator of 4 ranks (one host, context 1)";
    let cells = err.lines().filter(|l| l.contains(head) && l.contains("(board-cells; table;")).count();
    assert_eq!(cells, 4, "every rank reports the board's cells by the table:\n{err}");
}

/// Gather and scatter of parts of one length down binomial trees (forced; the table takes
/// them from 8 ranks): every root, in place and not, parts from 0 B up, laid out in reverse
/// rank order with gaps that must stay untouched (bb-coll's `sizes`).
#[test]
fn gather_and_scatter_down_binomial_trees() {
    let env = [("BB_COLL_GATHER", "binomial"), ("BB_COLL_SCATTER", "binomial")];
    for n in [2, 3, 5, 8] {
        let job = run(n, "bb-coll", &["sizes"], &env, T);
        job.assert_success();
        assert!(job.stdout().contains(&format!("ok coll on {n} ranks")), "{}", job.stdout());
    }
}

/// The table's own mix of algorithms, and trees with single copies but not shared ones, on 3
/// to 8 ranks. A receiver used to fail with "a ring record of form 30 (40, 144, 360) and
/// length 0" from a peer: a ring cell that had held the middle of a payload on an earlier lap
/// kept payload bytes in its publish word, and reduction data equal to the position the
/// reader waited for there read as a published record (3 ranks, debug build, single copies
/// off: every run; the table on 7 ranks: 2 runs in 3). The sender now clears the next
/// record's publish word (transport/shm/ring.rs).
#[test]
fn collectives_by_the_table_and_by_copies() {
    let trees = [("BB_COLL_REDUCE", "tree"), ("BB_COLL_ALLREDUCE", "tree"), ("BB_SHM_SHARED_COPY", "0")];
    for _ in 0..3 {
        run(3, "bb-coll", &["large"], &[("BB_SHM_SINGLE_COPY", "0")], T).assert_success();
        run(7, "bb-coll", &[], &[], T).assert_success();
        run(6, "bb-coll", &["large"], &trees, T).assert_success();
        run(8, "bb-coll", &["large"], &trees, T).assert_success();
    }
}

/// BB_VERBOSE names each collective algorithm a communicator uses, once per choice.
#[test]
fn verbose_reports_each_collective_choice_once() {
    let job = run(5, "bb-coll", &[], &[("BB_VERBOSE", "1")], T);
    job.assert_success();
    let err = job.stderr();
    let line = |text: &str| err.lines().filter(|l| l.contains(text)).count();
    // The world of five ranks: its first broadcast is of 0 bytes (on the board), its first
    // past the board's data area of 8192 (a post), past the eager limit of 65537; a
    // duplicate's first is of 100 bytes (nonblocking: a post).
    assert_eq!(
        line("bcast on a communicator of 5 ranks (one host, context 1), first at 0 bytes: on the board"),
        5,
        "{err}"
    );
    // The blocking barrier on the board, and the nonblocking one there too (the slot agreed
    // by then): one choice, reported once a process.
    assert_eq!(line("barrier on a communicator of 5 ranks (one host, context 1)"), 5, "{err}");
    let past_board =
        "bcast on a communicator of 5 ranks (one host, context 1), first at 8192 bytes: the root posts once";
    assert_eq!(line(past_board), 5, "{err}");
    let past_eager = "bcast on a communicator of 5 ranks (one host, context 1), first at 65537 bytes: binomial tree";
    assert_eq!(line(past_eager), 5, "{err}");
    // Where the five ranks outnumber the cores, a broadcast from BB_BCAST_CELLS_MIN (256 KiB)
    // goes through the board in cells again: a fifth choice; with a core each, the tree still.
    let crowded = std::thread::available_parallelism().map_or(1, |c| c.get()) < 5;
    let cells =
        "bcast on a communicator of 5 ranks (one host, context 1), first at 300000 bytes: on the board in cells";
    assert_eq!(line(cells), if crowded { 5 } else { 0 }, "{err}");
    let choices = if crowded { 25 } else { 20 };
    assert_eq!(line("bcast on a communicator of 5 ranks"), choices, "each choice once a process: {err}");
}

/// Every route but a rank's own goes over TCP (loopback), as between hosts.
const TCP: [(&str, &str); 2] = [("BB_ROUTES", "tcp"), ("BB_JOB_SECRET", "8e1f0c2d4b6a79583c2e1f0d4b6a7958")];

#[test]
fn every_case_over_tcp_on_2_and_4_ranks() {
    for n in [2, 4] {
        case(n, "all", &TCP);
    }
}

#[test]
fn two_ranks_on_one_core_wait_for_a_message_with_one_receive_over_tcp() {
    bb_tests::assert_one_core_waits_cost_one_receive(&TCP, false);
    bb_tests::assert_one_core_waits_cost_one_receive(&TCP, true);
}

#[test]
fn sizes_up_to_16_mib_over_tcp() {
    case(2, "sizes", &TCP);
}

#[test]
fn non_contiguous_sends_over_tcp() {
    case(2, "blocks", &TCP);
}

#[test]
fn collectives_over_tcp() {
    let job = run(3, "bb-coll", &[], &TCP, T);
    job.assert_success();
    assert!(job.stdout().contains("ok coll on 3 ranks"), "{}", job.stdout());
}

#[test]
fn kill_9_of_a_rank_over_tcp_ends_the_job_and_names_it() {
    fault("kill9", &TCP, 137, &["rank 2", "signal 9"]);
}

#[test]
fn a_rank_waiting_on_tcp_sleeps_instead_of_spinning() {
    let job = run(2, "bb-pt2pt", &["idle"], &TCP, T);
    job.assert_success();
    let cpu = job.cpu_seconds;
    assert!(cpu < 0.5, "the job used {cpu:.2} CPU seconds over {:?} of waiting", job.elapsed);
}

/// A message a rank sends itself completes at the first poll on every route, also when the
/// wait names another peer first (`bb-pt2pt selfsend`): through the billboard it waited for the
/// poll that looks beyond the awaited peer, every 16th (on main: 200 such waits took 1,100 to
/// 1,700 polls over TCP and UDP, and as many socket receives).
#[test]
fn a_message_to_itself_completes_at_the_first_poll_on_every_route() {
    let secret = ("BB_JOB_SECRET", "8e1f0c2d4b6a79583c2e1f0d4b6a7958");
    for route in ["auto", "tcp", "udp"] {
        let job = run(2, "bb-pt2pt", &["selfsend"], &[("BB_ROUTES", route), secret], T);
        job.assert_success();
        let out = job.stdout();
        let line = out.lines().find(|l| l.starts_with("self polls of rank 0")).unwrap_or_else(|| panic!("{out}"));
        let field = |name: &str| -> u64 {
            let at = line.find(&format!(" {name}=")).unwrap_or_else(|| panic!("no {name} in {line:?}"));
            line[at + name.len() + 2..].split_whitespace().next().unwrap().parse().unwrap()
        };
        let messages = field("messages");
        // One poll a message; a few more where the machine's load delays the barrier's last
        // records, never one in 16.
        assert!(field("alone") <= messages + messages / 10, "BB_ROUTES={route}: {line}");
        assert!(field("beside") <= messages + messages / 10, "BB_ROUTES={route}: {line}");
    }
}

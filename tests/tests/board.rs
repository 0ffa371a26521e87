//! Collectives on the board (`coll/board*.rs`), forced by `BB_COLL_<NAME>=board`, as real
//! jobs under `bbrun` on 1 to 8 ranks (8 oversubscribe the 2 cores): bb-board runs every one
//! back to back with varying roots, sizes and in-place forms on alternating communicators,
//! frees and remakes them (slots reused) and makes more than there are slots, checking every
//! result against what each rank computes alone. Each job runs under a timeout and must
//! leave no process and no /dev/shm file behind (`bb_tests::run`).

use std::time::Duration;

use bb_tests::run;

const T: Duration = Duration::from_secs(180);

const BOARD: [(&str, &str); 10] = [
    ("BB_COLL_BARRIER", "board"),
    ("BB_COLL_BCAST", "board"),
    ("BB_COLL_REDUCE", "board"),
    ("BB_COLL_ALLREDUCE", "board"),
    ("BB_COLL_GATHER", "board"),
    ("BB_COLL_SCATTER", "board"),
    ("BB_COLL_ALLGATHER", "board"),
    ("BB_COLL_ALLTOALL", "board"),
    ("BB_COLL_REDUCE_SCATTER", "board"),
    ("BB_COLL_SCAN", "board"),
];

/// The verbose report's line for `what` on the board, as every rank of a world of `n` prints it.
fn on_board(err: &str, what: &str, n: usize) -> usize {
    let head = format!("]: {what} on a communicator of {n} ranks (one host, context 1)");
    err.lines().filter(|l| l.contains(&head) && l.contains("(board")).count()
}

#[test]
fn every_board_collective_on_1_to_8_ranks() {
    let env: Vec<_> = BOARD.iter().copied().chain([("BB_VERBOSE", "1")]).collect();
    for n in 1..=8 {
        let iters = if n > 4 { "40" } else { "120" };
        let job = run(n, "bb-board", &[iters], &env, T);
        job.assert_success();
        assert!(job.stdout().contains(&format!("ok board on {n} ranks")), "{}", job.stdout());
        let err = job.stderr();
        let all = [
            "barrier",
            "bcast",
            "reduce",
            "allreduce",
            "gather",
            "scatter",
            "allgather",
            "alltoall",
            "reduce_scatter",
            "scan",
        ];
        for what in all {
            // A world of one rank has nobody to share a board with: the messages' paths run.
            let want = if n == 1 { 0 } else { n };
            assert_eq!(on_board(&err, what, n), want, "{what} on the board, {n} ranks:\n{err}");
        }
    }
}

#[test]
fn the_leaders_barrier_and_the_table_choice() {
    let leader: Vec<_> =
        BOARD.iter().copied().map(|(k, v)| if k == "BB_COLL_BARRIER" { (k, "board-leader") } else { (k, v) }).collect();
    for n in [2, 3, 5] {
        run(n, "bb-board", &["60"], &leader, T).assert_success();
        // Unforced: the table's own mix (the board where it gives it).
        run(n, "bb-board", &["60"], &[], T).assert_success();
    }
}

/// A rank that sleeps at once while waiting on the board (nothing rings a doorbell for a board
/// post) still goes on: its naps are short.
#[test]
fn board_waiters_that_sleep_at_once_still_finish() {
    let env: Vec<_> = BOARD.iter().copied().chain([("BB_SPIN", "1"), ("BB_YIELD", "1")]).collect();
    for n in [2, 4] {
        run(n, "bb-board", &["20"], &env, T).assert_success();
    }
}

/// A communicator keeps its board choices between calls, until a tool changes a setting
/// (`tunables::settings_generation`): a switch forced while the job runs takes effect at the
/// next collective, and letting the table choose again brings the board back.
#[test]
fn a_forced_switch_takes_effect_at_the_next_collective() {
    for n in [2, 3] {
        let job = run(n, "bb-board", &["switch"], &[("BB_VERBOSE", "1")], T);
        job.assert_success();
        assert!(job.stdout().contains(&format!("ok switch on {n} ranks")), "{}", job.stdout());
        let err = job.stderr();
        let head = format!("]: barrier on a communicator of {n} ranks (one host, context 1)");
        for by in ["(board", "(dissemination"] {
            let lines = err.lines().filter(|l| l.contains(&head) && l.contains(by)).count();
            assert_eq!(lines, n, "barrier {by} reported by every rank:\n{err}");
        }
    }
}

/// Reduce-scatter in the board's cells (forced: the table keeps the allreduce past one data
/// area): vectors past 2 KiB cut into cells, one epoch each, every rank folding its block's
/// part of each, checked by bb-board's rounds beside the other collectives.
#[test]
fn reduce_scatter_in_cells_past_one_data_area() {
    let env = [("BB_COLL_REDUCE_SCATTER", "board-cells"), ("BB_VERBOSE", "1")];
    for n in [2, 3, 5, 8] {
        let iters = if n > 4 { "20" } else { "40" };
        let job = run(n, "bb-board", &[iters], &env, T);
        job.assert_success();
        let err = job.stderr();
        let head = format!("]: reduce_scatter on a communicator of {n} ranks (one host, context 1)");
        let cells = err.lines().filter(|l| l.contains(&head) && l.contains("(board-cells")).count();
        assert_eq!(cells, n, "reduce_scatter in cells on every rank, {n} ranks:\n{err}");
    }
}

/// Erroneous all-to-allvs whose counts disagree (`bb-hier alltoallv-disagree-cases`: rank 0
/// sends rank 1 more or fewer bytes than rank 1 expects, within a data area, past it, past the
/// rendezvous threshold, empty against not) by every algorithm on one host, 2 to 4 ranks (4 on
/// the 2 cores): where rank 1 expects fewer it alone fails, with a truncation naming rank 0 and
/// both lengths, and where it expects more it keeps what came, as a message's receive does;
/// nobody hangs, and a right all-to-allv runs after them. Before, the pairwise exchange stopped
/// at rank 1's truncated first round and the partners of its later rounds waited for ever, and
/// the board copied the first bytes of a longer part silently.
#[test]
fn an_alltoallv_whose_counts_disagree_fails_where_they_do_and_hangs_nobody_on_one_host() {
    for algorithm in ["", "board", "linear", "pairwise"] {
        for n in [2, 3, 4] {
            let env: Vec<(&str, &str)> = match algorithm {
                "" => vec![],
                forced => vec![("BB_COLL_ALLTOALL", forced)],
            };
            let job = run(n, "bb-hier", &["alltoallv-disagree-cases"], &env, Duration::from_secs(60));
            let out = job.stdout();
            assert!(out.contains(&format!("ok alltoallv-disagree-cases on {n} ranks")), "{algorithm:?} {n}:\n{out}");
            for (sent, expected) in [(100, 50), (50, 100), (100, 0), (0, 100), (40_000, 20_000), (20_000, 40_000)] {
                let case = format!("counts {sent} to {expected}");
                let what = format!("{algorithm:?} on {n} ranks, {case}");
                let failed: Vec<&str> = out.lines().filter(|l| l.contains(&format!("{case} failed"))).collect();
                let ok = out.lines().filter(|l| l.ends_with(&format!("{case}: ok"))).count();
                if sent > expected {
                    assert_eq!((failed.len(), ok), (1, n - 1), "{what}: rank 1 fails, the others return\n{out}");
                    let truncation = format!("message truncated: {sent} bytes from rank 0 ");
                    let receive = format!("the {expected}-byte receive buffer");
                    assert!(
                        failed[0].starts_with("rank 1: ")
                            && failed[0].contains(&truncation)
                            && failed[0].contains(&receive),
                        "{what}: rank 1's truncation names rank 0 and both lengths\n{out}"
                    );
                } else {
                    assert_eq!((failed.len(), ok), (0, n), "{what}: every rank returns\n{out}");
                }
            }
        }
    }
}

//! Communicator creation as real multi-process jobs under `bbrun` (rank program `bb-comm`):
//! concurrent creation from several threads, id reuse, exhaustion, ids held by posted receives.
//! Each job runs under a timeout and must leave no process and no /dev/shm file behind.

use std::time::Duration;

use bb_tests::run;

const T: Duration = Duration::from_secs(120);

fn case(n: usize, name: &str) {
    let job = run(n, "bb-comm", &[name], &[], T);
    job.assert_success();
    assert!(job.stdout().contains(&format!("ok {name} on {n} ranks")), "stdout: {}", job.stdout());
}

#[test]
fn a_revoked_communicators_board_slot_comes_back() {
    // 24 revoked communicators and a fresh one (and the world) each run a barrier on the board:
    // with their slots lost, at most 8 could.
    let env = [("BB_COLL_BARRIER", "board"), ("BB_VERBOSE", "1")];
    for n in [2, 3] {
        let job = run(n, "bb-comm", &["revoked_boards"], &env, T);
        job.assert_success();
        assert!(job.stdout().contains(&format!("ok revoked_boards on {n} ranks")), "stdout: {}", job.stdout());
        let head = format!("barrier on a communicator of {n} ranks (one host");
        let on_board = job.stderr().lines().filter(|l| l.contains(&head) && l.contains("(board")).count();
        assert_eq!(on_board, (24 + 2) * n, "barriers on the board, every rank's\n{}", job.stderr());
    }
}

#[test]
fn threads_create_communicators_at_once_without_sharing_ids() {
    for n in [1, 2, 3, 4] {
        case(n, "threads");
    }
}

#[test]
fn ten_thousand_dup_and_drop_cycles_reuse_ids() {
    for n in [1, 2, 4] {
        case(n, "churn");
    }
}

#[test]
fn holding_every_id_fails_clearly_and_dropping_frees_them() {
    for n in [1, 3] {
        case(n, "exhaust");
    }
}

#[test]
fn a_posted_receive_keeps_its_dropped_communicators_id() {
    for n in [1, 2] {
        case(n, "retire");
    }
}

#[test]
fn idup_runs_in_the_background_and_makes_distinct_communicators() {
    for n in [1, 2, 3, 4] {
        case(n, "idup");
    }
}

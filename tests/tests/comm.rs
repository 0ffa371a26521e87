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

//! Nonblocking collectives on the board (`coll/board_steps.rs`) as real jobs under `bbrun`:
//! bb-icoll overlaps Ibarrier, Ibcast, Iallreduce and Ireduce on three communicators, with
//! blocking collectives between their starts, completes them in changing orders (reversed,
//! test-all sweeps, wait-any) beside point-to-point traffic, and checks every value against
//! what each rank computes alone. On one host, once a blocking collective agreed a board
//! slot, the ranks exchange no message for them (on main, hundreds: the message schedules).
//! Each job runs under a timeout and must leave no process and no /dev/shm file behind.

use std::time::Duration;

use bb_tests::run;

const T: Duration = Duration::from_secs(180);

/// Every rank's count of messages exchanged during the collective batches (`rank R: M
/// collective messages`).
fn messages(out: &str) -> Vec<u64> {
    out.lines().filter_map(|l| l.strip_suffix(" collective messages")?.split(": ").nth(1)?.parse().ok()).collect()
}

#[test]
fn overlapping_nonblocking_collectives_run_on_the_board_1_to_8_ranks() {
    for n in 1..=8 {
        let iters = if n > 4 { "12" } else { "30" };
        let job = run(n, "bb-icoll", &[iters], &[], T);
        job.assert_success();
        let out = job.stdout();
        assert!(out.contains(&format!("ok icoll on {n} ranks")), "{out}");
        let counts = messages(&out);
        assert_eq!(counts.len(), n, "{out}");
        // A few stray arrivals of the communicators' creation may be counted; the batches
        // themselves move hundreds of messages where they go by messages.
        assert!(counts.iter().all(|&m| m <= 4), "{n} ranks exchanged messages for board collectives: {counts:?}");
    }
}

/// A program whose first collectives on the world are nonblocking (no blocking one agreed a
/// slot yet): the world's slot is agreed in `init`, so they run on the board from the first.
#[test]
fn nonblocking_collectives_before_any_blocking_one_run_on_the_worlds_board() {
    for n in [2, 3, 4] {
        let job = run(n, "bb-icoll", &["12", "fresh"], &[], T);
        job.assert_success();
        let counts = messages(&job.stdout());
        assert_eq!(counts.len(), n, "{}", job.stdout());
        assert!(counts.iter().all(|&m| m == 0), "{n} ranks exchanged messages for board collectives: {counts:?}");
    }
}

#[test]
fn without_the_board_the_same_program_goes_by_messages() {
    // The fallback where no slot was agreed (BB_BOARD=0: no blocking collective takes one).
    let job = run(3, "bb-icoll", &["10"], &[("BB_BOARD", "0")], T);
    job.assert_success();
    assert!(messages(&job.stdout()).iter().all(|&m| m > 50), "{}", job.stdout());
}

#[test]
fn nonblocking_waiters_that_sleep_at_once_still_finish() {
    // Nothing rings a doorbell for a board post: a waiter that climbs straight to sleeping
    // must still see it (its sleep is a short nap while a board step is in flight).
    for n in [2, 4] {
        run(n, "bb-icoll", &["6"], &[("BB_SPIN", "1"), ("BB_YIELD", "1")], T).assert_success();
    }
}

/// A rank far ahead of a reader that stopped calling the library with an epoch unfinished
/// must not overwrite the line that reader still has to read (see bb-icoll's `mark`).
#[test]
fn a_writer_ahead_never_overwrites_a_line_an_unfinished_reader_needs() {
    for n in [3, 4] {
        let job = run(n, "bb-icoll", &["0", "mark"], &[], T);
        job.assert_success();
        assert!(messages(&job.stdout()).iter().all(|&m| m <= 4), "{}", job.stdout());
    }
}

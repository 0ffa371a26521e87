//! End to end PMI-1: the library's client (in bb-pmi-probe) against bbrun's server.

mod common;
use common::*;

#[test]
fn every_rank_sees_every_other_ranks_key() {
    for n in [1usize, 2, 4, 8] {
        let n_text = n.to_string();
        let out = bbrun(&["-n", &n_text, PROBE], None);
        assert_eq!(out.code, Some(0), "n={n}: {}", out.stderr);
        for rank in 0..n {
            for peer in 0..n {
                let line = format!("rank {rank} of {n}: probe-{peer}=from-{peer}\n");
                assert!(out.stdout.contains(&line), "n={n}: missing {line:?} in\n{}", out.stdout);
            }
        }
        assert_eq!(out.stdout.lines().count(), n * n);
    }
}

#[test]
fn np_is_an_alias_of_n() {
    let out = bbrun(&["-np", "2", PROBE, "--quick"], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[test]
fn ranks_get_the_job_environment() {
    let script =
        "echo \"r=$PMI_RANK s=$PMI_SIZE lr=$BB_LOCAL_RANK ls=$BB_LOCAL_SIZE j=$BB_JOBID pj=$PMI_JOBID fd=$PMI_FD\"";
    let out = bbrun(&args(&sh(2, script)), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let jobid = out.stdout.split("j=").nth(1).unwrap().split_whitespace().next().unwrap().to_owned();
    assert!(jobid.starts_with(&format!("{}x", out.pid)), "{jobid}");
    for rank in 0..2 {
        let want = format!("r={rank} s=2 lr={rank} ls=2 j={jobid} pj={jobid} fd=");
        assert!(out.stdout.contains(&want), "{want:?} not in {}", out.stdout);
    }
}

#[test]
fn abort_ends_the_job_with_its_code() {
    let out = bbrun(&["-n", "3", PROBE, "--abort", "7"], None);
    assert_eq!(out.code, Some(7), "{}", out.stderr);
    assert!(out.stderr.contains("rank 1") && out.stderr.contains("abort"), "{}", out.stderr);
    assert_eq!(out.stderr.matches("stopping the job").count(), 1, "{}", out.stderr);
}

#[test]
fn a_rank_that_skips_the_barrier_stops_the_job() {
    // Rank 1 exits cleanly without PMI while rank 0 waits in a barrier for it: a hang unless
    // bbrun notices.
    let script = format!("if [ $PMI_RANK = 0 ]; then exec {PROBE} --quick; fi; exit 0");
    let out = bbrun(&args(&sh(2, &script)), None);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("rank 1") && out.stderr.contains("barrier"), "{}", out.stderr);
}

#[test]
fn exiting_without_finalize_while_others_run_stops_the_job() {
    let out = bbrun(&["-n", "2", PROBE, "--exit-early"], None);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("rank 1") && out.stderr.contains("finalize"), "{}", out.stderr);
}

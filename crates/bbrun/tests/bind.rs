//! `--bind-to` (MPICH's `-bind-to`, Open MPI's `--bind-to`): each rank of a host runs on its own
//! unit of the processors bbrun may use, in turn.

mod common;
use common::*;

/// The processors this test may run on, from the kernel's list (`0-1,4`).
fn allowed_here() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_owned();
    expand(&list)
}

fn expand(list: &str) -> Vec<usize> {
    list.split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<usize>>(),
            None => vec![part.parse().unwrap()],
        })
        .collect()
}

/// Each rank's processors as it saw them, by rank.
fn processors_by_rank(extra: &[&str], n: usize) -> Vec<Vec<usize>> {
    let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    a.extend(sh(n, "echo $PMI_RANK $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"));
    let out = bbrun(&args(&a), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut ranks: Vec<(usize, Vec<usize>)> = out
        .stdout
        .lines()
        .map(|l| {
            let (rank, list) = l.split_once(' ').unwrap();
            (rank.parse().unwrap(), expand(list))
        })
        .collect();
    ranks.sort();
    assert_eq!(ranks.len(), n, "{}", out.stdout);
    ranks.into_iter().map(|(_, cpus)| cpus).collect()
}

#[test]
fn ranks_bound_to_hwthreads_take_one_processor_each_in_turn() {
    let allowed = allowed_here();
    let n = allowed.len() + 1;
    for option in ["--bind-to", "-bind-to"] {
        let got = processors_by_rank(&[option, "hwthread"], n);
        let expect: Vec<Vec<usize>> = (0..n).map(|r| vec![allowed[r % allowed.len()]]).collect();
        assert_eq!(got, expect, "{option} hwthread");
    }
}

#[test]
fn ranks_bound_to_cores_share_no_core_while_cores_last() {
    let allowed = allowed_here();
    let got = processors_by_rank(&["--bind-to", "core"], 2);
    for cpus in &got {
        assert!(!cpus.is_empty() && cpus.iter().all(|c| allowed.contains(c)), "{got:?} not within {allowed:?}");
    }
    // Two cores or more: the two ranks' processors do not overlap.
    if got[0] != got[1] {
        assert!(got[0].iter().all(|c| !got[1].contains(c)), "{got:?}");
    }
}

#[test]
fn without_binding_or_with_none_ranks_may_run_anywhere_allowed() {
    let allowed = allowed_here();
    assert_eq!(processors_by_rank(&[], 2), vec![allowed.clone(), allowed.clone()]);
    assert_eq!(processors_by_rank(&["--bind-to", "none"], 2), vec![allowed.clone(), allowed]);
}

#[test]
fn an_unknown_unit_is_a_usage_error_naming_it() {
    let out = bbrun(&["--bind-to", "cores", "true"], None);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("'cores'") && out.stderr.contains("hwthread, core, socket or numa"), "{}", out.stderr);
}

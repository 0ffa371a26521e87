//! `--info`, `--version`, `--help`.

mod common;
use common::*;

#[test]
fn info_lists_every_tunable_with_value_and_origin() {
    let out = bbrun(&["--info"], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let line = out.stdout.lines().find(|l| l.starts_with("BB_EAGER_INLINE ")).expect("BB_EAGER_INLINE listed");
    assert!(line.contains("default"), "{line}");
    for t in billboard::tunables::all().chain(mpi::tunables()).chain(pvm::task::tunables()) {
        assert!(out.stdout.contains(t.env), "{} missing", t.env);
    }
    // The MPI library's own: where windows live, and single copy to created ones.
    for env in ["BB_RMA_SHM", "BB_RMA_SINGLE_COPY"] {
        assert!(out.stdout.lines().any(|l| l.starts_with(&format!("{env} "))), "{env} missing");
    }
}

#[test]
fn info_reports_environment_overrides() {
    let out = std::process::Command::new(BBRUN).arg("--info").env("BB_EAGER_INLINE", "512").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("BB_EAGER_INLINE ")).unwrap();
    assert!(line.contains(" 512 ") && line.contains("environment"), "{line}");
}

#[test]
fn version_and_help() {
    let out = bbrun(&["--version"], None);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.starts_with("bbrun "), "{}", out.stdout);
    // What mpichversion tells of MPICH: the MPI version and the ABI.
    for says in ["MPI_VERSION 4, MPI_SUBVERSION 0", "MPICH 4.0.2", "libmpi.so.12", "libmpichfort.so.12"] {
        assert!(out.stdout.contains(says), "--version does not say {says:?}:\n{}", out.stdout);
    }
    let out = bbrun(&["--help"], None);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("--tag-output") && out.stdout.contains("-n"), "{}", out.stdout);
}

/// The network and hierarchical algorithms are listed with the switch that forces each, and a
/// forced one is shown as the value.
#[test]
fn info_lists_the_algorithms_for_several_hosts() {
    let out = std::process::Command::new(BBRUN).arg("--info").env("BB_COLL_ALLTOALL", "pairwise").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let switch =
        |env: &str| text.lines().find(|l| l.starts_with(&format!("{env} "))).unwrap_or_else(|| panic!("{env}: {text}"));
    assert!(
        switch("BB_COLL_ALLTOALL").contains(" pairwise ") && switch("BB_COLL_ALLTOALL").contains("linear|pairwise")
    );
    assert!(switch("BB_COLL_ALLREDUCE").contains("tree|post|split|doubling|ring|hier"));
    assert!(switch("BB_COLL_ALLGATHER").contains("post|gather-bcast|ring|doubling|bruck|hier"));
    assert!(switch("BB_COLL_BCAST").contains("post|tree|scatter-allgather|hier"));
    assert!(switch("BB_COLL_BARRIER").contains("post|dissemination|hier"));
    assert!(switch("BB_COLL_REDUCE").contains("tree|post|split|hier"));
    assert!(
        switch("BB_COLL_GATHER").contains("linear|hier|binomial")
            && switch("BB_COLL_SCATTER").contains("linear|hier|binomial")
    );
    for tunable in [
        "BB_BCAST_SCATTER_MIN",
        "BB_ALLREDUCE_RING_MIN",
        "BB_ALLGATHER_RING_MIN",
        "BB_ALLTOALL_PAIRWISE_MIN",
        "BB_BCAST_TREE_MAX",
        "BB_ALLGATHER_BRUCK_MAX",
        "BB_GATHER_BINOMIAL_RANKS",
        "BB_GATHER_BINOMIAL_MAX",
    ] {
        assert!(text.contains(tunable), "{tunable} missing: {text}");
    }
}

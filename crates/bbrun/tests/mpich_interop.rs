//! Interoperation with MPICH, where it is installed (Debian's `mpich` package): MPICH's own
//! simple-PMI client (inside libmpich) against bbrun's server, and our client under MPICH's
//! Hydra (`mpiexec.hydra`, both its PMI_FD and PMI_PORT modes). Skipped, with a note, when
//! MPICH is absent.

mod common;
use common::*;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

const HELLO: &str = r#"
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    fflush(stdout);
    if (argc > 1 && rank == 1) MPI_Abort(MPI_COMM_WORLD, 9);
    MPI_Finalize();
    return 0;
}
"#;

#[test]
fn mpich_programs_run_under_bbrun() {
    if !have("mpicc.mpich") {
        eprintln!("note: mpicc.mpich not installed; skipping");
        return;
    }
    let dir = std::env::temp_dir().join(format!("bbrun-mpich-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("hello.c");
    let exe = dir.join("hello");
    std::fs::write(&src, HELLO).unwrap();
    let cc = Command::new("mpicc.mpich").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let exe = exe.to_str().unwrap();

    let out = bbrun(&["-n", "3", exe], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for r in 0..3 {
        assert!(out.stdout.contains(&format!("rank {r} of 3 sum 3\n")), "{}", out.stdout);
    }
    let out = bbrun(&["-n", "3", exe, "abort"], None);
    assert_eq!(out.code, Some(9), "{}", out.stderr);
    assert!(out.stderr.contains("rank 1") && out.stderr.contains("abort"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn our_client_runs_under_hydra() {
    if !have("mpiexec.hydra") {
        eprintln!("note: mpiexec.hydra not installed; skipping");
        return;
    }
    for mode in [&[][..], &["-pmi-port"][..]] {
        let out =
            Command::new("timeout").args(["20", "mpiexec.hydra"]).args(mode).args(["-n", "3", PROBE]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.lines().count(), 9, "{mode:?}: {stdout}");
        assert!(stdout.contains("rank 2 of 3: probe-0=from-0"), "{stdout}");
    }
}

//! Real Debian binaries built for MPICH, run unchanged on Billboard's MPI library through
//! `dist/bin/bbrun` (which puts `dist/lib`, with `libmpich.so.12`, first on the library path):
//! NetPIPE (`netpipe-mpich2`) and ScaLAPACK's LU tests (`scalapack-mpi-test`), the runs of
//! seed 001. Skipped, saying why, when the packages or `dist/` are missing (`scripts/test.sh`
//! installs the packages and builds `dist/`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bb_tests::{processes_named, shm_files};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_path_buf()
}

/// `dist/bin/bbrun` when our MPI library is installed beside it.
fn bbrun() -> Option<PathBuf> {
    let dist = root().join("dist");
    (dist.join("lib/libmpich.so.12").exists() && dist.join("bin/bbrun").exists()).then(|| dist.join("bin/bbrun"))
}

/// Runs `bbrun -n N program args` in `dir` under a timeout; returns stdout+stderr.
fn run(n: usize, program: &Path, args: &[&str], dir: &Path, timeout: Duration) -> (bool, String) {
    let shm_before = shm_files();
    let out = Command::new("timeout")
        .arg("-k")
        .arg("5")
        .arg(timeout.as_secs().to_string())
        .arg(bbrun().expect("checked"))
        .arg("-n")
        .arg(n.to_string())
        .arg(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run bbrun");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(processes_named(&program.to_string_lossy()).is_empty(), "ranks of {} outlived the job", program.display());
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the job left {new:?} in /dev/shm");
    (out.status.success(), text)
}

fn skip(what: &str, why: &str) {
    eprintln!("SKIP {what}: {why}");
}

#[test]
fn netpipe_built_for_mpich_runs_on_billboard() {
    let np = Path::new("/usr/bin/NPmpich2");
    if !np.exists() {
        return skip("NetPIPE", "/usr/bin/NPmpich2 is missing (apt-get install netpipe-mpich2)");
    }
    if bbrun().is_none() {
        return skip("NetPIPE", "dist/ has no MPI library (run make)");
    }
    let dir = std::env::temp_dir().join(format!("bb-netpipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ok, text) = run(2, np, &["-u", "65536", "-o", "np.out"], &dir, Duration::from_secs(120));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "NetPIPE failed:\n{text}");
    // NetPIPE prints one line per size it measured: "  N:  bytes  times -->  Mbps in  usec".
    let measured = text.lines().filter(|l| l.contains("Mbps in")).count();
    assert!(measured > 30, "NetPIPE measured only {measured} sizes:\n{text}");
}

#[test]
fn scalapack_lu_tests_built_for_mpich_pass_on_billboard() {
    let tests = Path::new("/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests");
    if !tests.join("xdlu").exists() {
        return skip("ScaLAPACK", "its MPICH tests are missing (apt-get install scalapack-mpi-test)");
    }
    if bbrun().is_none() {
        return skip("ScaLAPACK", "dist/ has no MPI library (run make)");
    }
    let dir = std::env::temp_dir().join(format!("bb-scalapack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(tests.join("LU.dat"), dir.join("LU.dat")).expect("copy LU.dat");
    for program in ["xdlu", "xslu"] {
        for n in [1, 2, 4] {
            let (ok, text) = run(n, &tests.join(program), &[], &dir, Duration::from_secs(300));
            assert!(ok, "{program} on {n} ranks failed:\n{text}");
            let count = |what: &str| -> usize {
                let line = text.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no `{what}` in:\n{text}"));
                line.split_whitespace().next().and_then(|w| w.parse().ok()).expect("a count")
            };
            let passed = count("tests completed and passed residual checks");
            let failed = count("tests completed and failed residual checks");
            assert_eq!(failed, 0, "{program} on {n} ranks: {failed} residual checks failed:\n{text}");
            assert!(passed >= 60, "{program} on {n} ranks passed only {passed} checks");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_built_for_mpich_runs_on_billboard_under_mpichs_own_hydra() {
    let (Some(_), Ok(hydra), Ok(mpicc)) = (bbrun(), which("mpiexec.hydra"), which("mpicc.mpich")) else {
        return skip("Hydra launch", "needs dist/ (make) and MPICH's mpiexec.hydra and mpicc.mpich");
    };
    let dir = std::env::temp_dir().join(format!("bb-hydra-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("p2p_basic");
    let built = Command::new(mpicc)
        .args(["-O1", "-Wno-stringop-overflow", "-o"])
        .arg(&exe)
        .arg(root().join("tests/c/p2p_basic.c"))
        .status()
        .expect("run mpicc.mpich");
    assert!(built.success(), "mpicc.mpich could not build tests/c/p2p_basic.c");
    let lib = root().join("dist/lib");
    let out = Command::new("timeout")
        .args(["-k", "5", "60"])
        .arg(hydra)
        .args(["-n", "2", "env"])
        .arg(format!("LD_LIBRARY_PATH={}", lib.display()))
        .arg(&exe)
        .output()
        .expect("run mpiexec.hydra");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success() && text.contains("PASS p2p_basic"), "under Hydra:\n{text}");
}

fn which(program: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| p.exists())
        .ok_or(())
}

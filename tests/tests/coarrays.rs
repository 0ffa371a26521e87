//! Coarray Fortran on Billboard's one-sided communication: `tests/caf/coarrays.f90` (a sum
//! with `co_sum`, a halo exchange through coarrays between `sync all`s, a counter in a
//! `critical` section, `event post` / `event wait`), built as any user of Debian's
//! OpenCoarrays for MPICH builds it (`caf.mpich`: gfortran and `libcaf_mpich`, against MPICH's
//! headers), run unchanged under `dist/bin/bbrun` at 1, 2 and 4 images. OpenCoarrays does
//! all of it with MPI windows (MPI_Win_allocate, lock_all, put, get, accumulate,
//! fetch-and-op, compare-and-swap, flush, MPI_Win_sync polling for events). Skipped, saying
//! why, without `libcoarrays-mpich-dev` or `dist/` (`scripts/test.sh` installs the package and
//! builds `dist/`).

use std::path::Path;
use std::process::Command;

use bb_tests::{build_with, processes_named, root, shm_files};

fn skip(why: &str) {
    eprintln!("SKIP coarrays: {why}");
}

#[test]
fn coarray_fortran_built_for_mpich_runs_on_billboard() {
    let caf = Path::new("/usr/bin/caf.mpich");
    if !caf.exists() {
        return skip("caf.mpich is missing (apt-get install libcoarrays-mpich-dev)");
    }
    let bbrun = root().join("dist/bin/bbrun");
    if !bbrun.exists() || !root().join("dist/lib/libmpich.so.12").exists() {
        return skip("dist/ has no MPI library (run make)");
    }
    let dir = std::env::temp_dir().join(format!("bb-caf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build_with(caf, "tests/caf/coarrays.f90", &dir, "coarrays");
    let shm_before = shm_files();
    for n in [1, 2, 4] {
        let out = Command::new("timeout")
            .args(["-k", "5", "120"])
            .arg(&bbrun)
            .arg("-n")
            .arg(n.to_string())
            .arg(&exe)
            .output()
            .expect("run bbrun");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("PASS coarrays"), "coarrays on {n} images:\n{text}");
        assert!(processes_named(&exe.to_string_lossy()).is_empty(), "images of coarrays outlived the job");
    }
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the jobs left {new:?} in /dev/shm");
    let _ = std::fs::remove_dir_all(&dir);
}

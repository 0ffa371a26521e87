//! Parallel HDF5 on Billboard's MPI-IO: `tests/hdf5/ph5_rw.c`, built as any MPICH user builds
//! it (Debian's `h5pcc.mpich`, against MPICH's `mpi.h` and Debian's `libhdf5_mpich`), run
//! unchanged under `dist/bin/bbrun` (which puts our `libmpich.so.12` first): it writes three
//! 2-D datasets (contiguous and chunked) collectively through the MPI-IO driver, a hyperslab
//! per rank, reads them back
//! and checks them; then `h5dump` reads the file from outside and every value is compared.
//! Skipped, saying why, without `libhdf5-mpich-dev`/`hdf5-tools` or `dist/` (`scripts/test.sh`
//! installs the packages and builds `dist/`).

use std::path::Path;
use std::process::Command;

use bb_tests::{build_with, processes_named, root, shm_files};

fn skip(why: &str) {
    eprintln!("SKIP parallel HDF5: {why}");
}

/// The numbers of a text, in order.
fn numbers(text: &str) -> Vec<i64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-')).filter_map(|w| w.parse().ok()).collect()
}

#[test]
fn parallel_hdf5_built_for_mpich_writes_and_reads_collectively_on_billboard() {
    let (h5pcc, h5dump) = (Path::new("/usr/bin/h5pcc.mpich"), Path::new("/usr/bin/h5dump"));
    if !h5pcc.exists() || !h5dump.exists() {
        return skip("h5pcc.mpich or h5dump is missing (apt-get install libhdf5-mpich-dev hdf5-tools)");
    }
    let bbrun = root().join("dist/bin/bbrun");
    if !bbrun.exists() || !root().join("dist/lib/libmpich.so.12").exists() {
        return skip("dist/ has no MPI library (run make)");
    }
    let dir = std::env::temp_dir().join(format!("bb-hdf5-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build_with(h5pcc, "tests/hdf5/ph5_rw.c", &dir, "ph5_rw");
    let expect = Command::new(&exe).arg("--expect").output().expect("ph5_rw --expect");
    let expected = numbers(&String::from_utf8_lossy(&expect.stdout));
    assert_eq!(expected.len(), 16 * 24);

    let shm_before = shm_files();
    // Each rank's own accesses, and ROMIO's two-phase I/O through aggregators (asked by hints).
    for (n, mode) in [(1, ""), (2, ""), (4, ""), (4, "two-phase")] {
        let file = dir.join(format!("ph5_rw-{n}{mode}.h5"));
        let out = Command::new("timeout")
            .args(["-k", "5", "120"])
            .arg(&bbrun)
            .arg("-n")
            .arg(n.to_string())
            .arg(&exe)
            .arg(&file)
            .args((!mode.is_empty()).then_some(mode))
            .output()
            .expect("run bbrun");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("PASS ph5_rw"), "ph5_rw {mode} on {n} ranks:\n{text}");
        assert!(processes_named(&exe.to_string_lossy()).is_empty(), "ranks of ph5_rw outlived the job");
        for dataset in ["/rows", "/cols", "/chunked"] {
            let dump = dir.join("dump.txt");
            let ran = Command::new(h5dump)
                .args(["-d", dataset, "-y", "-w", "0", "-o"])
                .arg(&dump)
                .arg(&file)
                .output()
                .expect("run h5dump");
            assert!(ran.status.success(), "h5dump {dataset}:\n{}", String::from_utf8_lossy(&ran.stderr));
            let got = numbers(&std::fs::read_to_string(&dump).expect("h5dump output"));
            assert_eq!(got, expected, "{dataset} as h5dump reads it, written by {n} ranks");
        }
        // The MPI-IO layer left nothing beside the file (shared-pointer side files).
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "left beside the file: {left:?}");
    }
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(new.is_empty(), "the jobs left {new:?} in /dev/shm");
}

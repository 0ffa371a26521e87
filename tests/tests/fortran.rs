//! Billboard's own Fortran library (`dist/lib/libmpichfort.so.12`, `mpif.h`, the `mpi`
//! module, `mpifort`), against Debian's MPICH 4.0.2:
//! - its exports are MPICH's: every F77 subroutine in all four manglings, the common blocks,
//!   the entries MPICH's `mpi_f08` module calls (`*_f08_`, `*_f08ts_`, `*_large_`); what is
//!   pending (module internals) is counted and named;
//! - every constant of Debian's `mpif.h` has the same value in ours (a Fortran program prints
//!   them, built once against each);
//! - Fortran programs (`tests/fortran/`: mpif.h, `use mpi`, `use mpi_f08`) built with our
//!   `mpifort`/`mpif90`, and the same built with MPICH's `mpif90.mpich` (its `mpif.h` and
//!   modules), pass at 1 to 4 ranks;
//! - Debian's BLACS testers `xCbtest` and `xFbtest` (package `scalapack-mpi-test`, built
//!   against MPICH) pass at 4 ranks in their folder, loading our `libmpichfort.so.12` (the
//!   loader's own report, `LD_DEBUG=libs`, names the file).
//!
//! Skipped, saying why, without `dist/` (run `make`), gfortran or the Debian packages.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bb_tests::{build_with, one_job_at_a_time, processes_named, root, shm_files};

const MPICH_FORT: &str = "/usr/lib/x86_64-linux-gnu/libmpichfort.so.12";
const MPICH_MPIF_H: &str = "/usr/include/x86_64-linux-gnu/mpich/mpif.h";
const BLACS_DIR: &str = "/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests/BLACS";

fn skip(test: &str, why: &str) {
    eprintln!("SKIP {test}: {why}");
}

fn ours() -> Option<PathBuf> {
    let lib = root().join("dist/lib/libmpichfort.so.12");
    lib.exists().then_some(lib)
}

fn dynamic_symbols(lib: &Path) -> BTreeSet<String> {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().expect("run nm");
    assert!(out.status.success(), "nm {}: {}", lib.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect()
}

/// Why an MPICH symbol may be absent from ours, or None when it must be there.
fn pending(name: &str) -> Option<&'static str> {
    if name.starts_with("MPIR_C_") || name.starts_with("MPIR_F08_") {
        Some("provided by libmpi.so.12")
    } else {
        None
    }
}

#[test]
fn exports_are_mpichs_f77_and_f08_symbols() {
    let Some(lib) = ours() else { return skip("fortran exports", "dist/ has no libmpichfort (run make)") };
    if !Path::new(MPICH_FORT).exists() {
        return skip("fortran exports", "Debian's libmpichfort.so.12 is missing (apt-get install libmpich-dev)");
    }
    let theirs = dynamic_symbols(Path::new(MPICH_FORT));
    let ours = dynamic_symbols(&lib);
    let mut waiting: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut missing = Vec::new();
    for name in theirs.difference(&ours) {
        match pending(name) {
            Some(why) => *waiting.entry(why).or_default() += 1,
            None => missing.push(name.as_str()),
        }
    }
    // Our own mpi_f08 module's compiled parts (its == and /= procedures, gfortran's type
    // descriptors) live under its own prefix, beside the MPICH names programs built with
    // MPICH's module call.
    let extra: Vec<_> = ours.difference(&theirs).filter(|n| !n.starts_with("__mpi_f08_MOD_")).collect();
    eprintln!("libmpichfort.so.12: {} symbols, MPICH's {}; pending: {waiting:?}", ours.len(), theirs.len());
    assert!(missing.is_empty(), "{} of MPICH's symbols are missing: {missing:?}", missing.len());
    assert!(extra.is_empty(), "symbols MPICH does not export: {extra:?}");
    for probe in [
        "mpi_send_",
        "mpi_send__",
        "mpi_send",
        "MPI_SEND",
        "pmpi_send_",
        "PMPI_SEND",
        "mpipriv1_",
        "mpi_send_f08ts_",
        "mpi_send_f08ts_large_",
        "pmpir_send_f08ts_",
        "mpi_comm_rank_f08_",
        "MPIX_COMM_AGREE",
        "pmpixr_comm_agree_f08_",
        "mpi_delete_error_class_f08_",
    ] {
        assert!(ours.contains(probe), "{probe} is not exported");
    }
}

/// The PARAMETER names of an mpif.h (`PARAMETER (A=1,B=2)` lines).
fn parameter_names(mpif_h: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in mpif_h.lines() {
        let l = line.trim();
        if !l.to_ascii_uppercase().starts_with("PARAMETER") {
            continue;
        }
        let inner = l[9..].trim().trim_start_matches('(').trim_end_matches(')');
        for item in inner.split(',') {
            if let Some((name, _)) = item.split_once('=') {
                names.push(name.trim().to_owned());
            }
        }
    }
    names
}

fn run_in(dir: &Path, program: &Path) -> Output {
    Command::new("timeout").args(["-k", "5", "60"]).arg(program).current_dir(dir).output().expect("run")
}

#[test]
fn mpif_h_values_are_mpichs() {
    let Some(_) = ours() else { return skip("mpif.h values", "dist/ has no mpif.h (run make)") };
    if !Path::new(MPICH_MPIF_H).exists() || Command::new("gfortran").arg("--version").output().is_err() {
        return skip("mpif.h values", "gfortran or Debian's mpif.h is missing");
    }
    let names = parameter_names(&std::fs::read_to_string(MPICH_MPIF_H).unwrap());
    assert!(names.len() > 250, "read only {} names from {MPICH_MPIF_H}", names.len());
    let dir = std::env::temp_dir().join(format!("bb-mpif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One program, built against each header; list-directed output prints either kind.
    let mut src = String::from("program values\ninclude 'mpif.h'\n");
    for n in &names {
        src += &format!("print *, '{n}', {n}\n");
    }
    src += "end program\n";
    std::fs::write(dir.join("values.f90"), src).unwrap();
    let mut printed = Vec::new();
    for (tag, include) in
        [("mpich", PathBuf::from(MPICH_MPIF_H).parent().unwrap().to_path_buf()), ("ours", root().join("dist/include"))]
    {
        let exe = dir.join(format!("values-{tag}"));
        let built = Command::new("gfortran")
            .arg("-ffree-line-length-none")
            .arg(format!("-I{}", include.display()))
            .args(["values.f90", "-o"])
            .arg(&exe)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(built.status.success(), "building against {tag}'s mpif.h:\n{}", String::from_utf8_lossy(&built.stderr));
        let out = run_in(&dir, &exe);
        assert!(out.status.success());
        printed.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let differ: Vec<_> = printed[0].lines().zip(printed[1].lines()).filter(|(a, b)| a != b).collect();
    assert!(differ.is_empty(), "{} of {} values differ (MPICH's, ours): {differ:#?}", differ.len(), names.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Builds `tests/fortran/NAME.f90` with `wrapper` and runs it at 1 to 4 ranks under bbrun,
/// checking from the loader's report (`LD_DEBUG=libs`) that every rank loaded our
/// libmpichfort.so.12, whichever wrapper built it.
fn fortran_program_passes(wrapper: &Path, name: &str) {
    fortran_program_passes_spawning(wrapper, name, 0)
}

/// [`fortran_program_passes`] for a program whose job spawns `children` processes, which load
/// the library too.
fn fortran_program_passes_spawning(wrapper: &Path, name: &str, children: usize) {
    let Some(lib) = ours() else { return skip(name, "dist/ has no Fortran library (run make)") };
    if Command::new("gfortran").arg("--version").output().is_err() || !wrapper.exists() {
        return skip(name, &format!("gfortran or {} is missing", wrapper.display()));
    }
    let tag = wrapper.file_name().unwrap().to_string_lossy().replace('.', "-");
    let dir = std::env::temp_dir().join(format!("bb-fortran-{name}-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build_with(wrapper, &format!("tests/fortran/{name}.f90"), &dir, name);
    // One job at a time in this process, so that /dev/shm shows only this one's files.
    let _turn = one_job_at_a_time();
    let shm_before = shm_files();
    let loaded = format!("calling init: {}", lib.display());
    for n in 1..=4 {
        let out = Command::new("timeout")
            .args(["-k", "5", "120"])
            .arg(root().join("dist/bin/bbrun"))
            .args(["-n", &n.to_string()])
            .arg(&exe)
            .env("LD_DEBUG", "libs")
            .output()
            .expect("run bbrun");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains(&format!("PASS {name}")), "{name} ({tag}) at {n} ranks:\n{text}");
        assert_eq!(
            text.matches(&loaded).count(),
            n + children,
            "{name} ({tag}) at {n} ranks did not load {}:\n{text}",
            lib.display()
        );
        assert!(processes_named(&exe.to_string_lossy()).is_empty(), "ranks of {name} outlived the job");
    }
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "the jobs left {new:?} in /dev/shm");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mpif_h_program_passes_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f77_basics");
}

#[test]
fn mpif_h_program_of_callbacks_files_and_info_passes_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f77_more");
}

#[test]
fn use_mpi_program_passes_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpif90"), "use_mpi");
}

/// A `use mpi_f08` program built with our module and mpifort.
#[test]
fn mpi_f08_program_passes_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f08_basics");
}

/// The same `use mpi_f08` program built with MPICH's module runs on our library's f08 entries.
#[test]
fn mpi_f08_program_built_with_mpich_passes_on_ours() {
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f08_basics");
}

/// A program built with MPICH's modules that puts MPI handles into CLASS(*) variables (gfortran's
/// descriptors of MPICH's mpi_f08_types) and compares `use mpi`'s handle types (mpi_constants'
/// == and /=) and calls the string helpers of MPICH's module mpi_c_interface_glue (its .mod is
/// installed): it did not load before ("undefined symbol: __mpi_f08_types_MOD___vtab_...", then
/// "__mpi_c_interface_glue_MOD_mpir_fortran_string_f2c").
#[test]
fn mpich_module_internals_a_program_references_are_ours() {
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "mpich_module_internals");
}

/// Non-contiguous sections as the buffers of nonblocking and persistent calls (mpi_f08), with
/// our module and MPICH's.
#[test]
fn mpi_f08_sections_of_nonblocking_calls_pass_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f08_sections");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f08_sections");
}

/// Non-contiguous sections as the buffers of reductions and v/w collectives (blocking,
/// nonblocking, persistent: packed copies unpacked at completion), with our module and MPICH's.
#[test]
fn mpi_f08_sections_of_reductions_and_v_collectives_pass_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f08_reductions");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f08_reductions");
}

/// MPI_Comm_spawn and MPI_Comm_spawn_multiple from mpi_f08 with arguments, which the children
/// check, with our module and MPICH's.
#[test]
fn mpi_f08_spawn_passes_arguments_to_the_children() {
    // Two children by MPI_Comm_spawn, one for each of MPI_Comm_spawn_multiple's two commands.
    fortran_program_passes_spawning(&root().join("dist/bin/mpifort"), "spawn_argv_f08", 4);
    fortran_program_passes_spawning(Path::new("/usr/bin/mpif90.mpich"), "spawn_argv_f08", 4);
}

/// MPI_Register_datarep from mpi_f08: the program's conversion and extent functions, called
/// through the Fortran trampolines by file views naming the representation; with our module and
/// MPICH's.
#[test]
fn mpi_f08_user_data_representation_converts_through_a_file_view() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "datarep_f08");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "datarep_f08");
}

/// The large-count (`_c`) entries from mpi_f08: INTEGER(KIND=MPI_COUNT_KIND) counts, with our
/// module and MPICH's.
#[test]
fn mpi_f08_large_count_calls_pass_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "f08_large_count");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f08_large_count");
}

/// The `mpi` module's explicit interfaces (keyword calls, LOGICAL flags, status arrays) and
/// MPI_SIZEOF, built with our module and with MPICH's.
#[test]
fn use_mpi_interfaces_program_passes_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpif90"), "use_mpi_interfaces");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "use_mpi_interfaces");
}

/// As with MPICH's module, a call with an argument of the wrong type does not compile.
#[test]
fn use_mpi_rejects_a_wrong_argument_type() {
    let ours = root().join("dist/bin/mpif90");
    if ours_module().is_none() || Command::new("gfortran").arg("--version").output().is_err() {
        return skip("use_mpi_rejects_a_wrong_argument_type", "dist/ has no mpi.mod or gfortran is missing");
    }
    let dir = std::env::temp_dir().join(format!("bb-fortran-wrongarg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("wrongarg.f90");
    std::fs::write(
        &src,
        "program w\n  use mpi\n  implicit none\n  integer :: ierr\n  real :: rank\n  call MPI_Init(ierr)\n  \
         call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)\n  call MPI_Finalize(ierr)\nend program\n",
    )
    .unwrap();
    for wrapper in [ours.as_path(), Path::new("/usr/bin/mpif90.mpich")] {
        if !wrapper.exists() {
            continue;
        }
        let out = Command::new(wrapper)
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join("w.o"))
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && text.contains("Type mismatch in argument") && text.contains("rank"),
            "{} compiled MPI_Comm_rank with a REAL rank:\n{text}",
            wrapper.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The procedures a gfortran module file declares (it is gzip'd text: `'name' 'module' '' 1
/// ((PROCEDURE ...`).
fn module_procedures(file: &Path, module: &str) -> BTreeSet<String> {
    let out = Command::new("zcat").arg(file).output().expect("run zcat");
    let text = String::from_utf8_lossy(&out.stdout);
    let tail = format!("' '{module}' '' 1 ((PROCEDURE");
    text.match_indices(&tail)
        .filter_map(|(at, _)| text[..at].rfind('\'').map(|open| text[open + 1..at].to_string()))
        .collect()
}

/// Our `mpi` module declares an explicit interface where MPICH 4.0.2's does (its mpi_base), so
/// that what compiles with one compiles with the other: the same names but MPICH's
/// extensions and the routines MPI-3 deleted (MPICH keeps interfaces for those).
#[test]
fn use_mpi_declares_the_interfaces_mpichs_module_declares() {
    let Some(ours) = ours_module() else { return skip("use_mpi interfaces", "dist/ has no mpi.mod (run make)") };
    let Some(mpich) = std::fs::read_dir("/usr/lib/x86_64-linux-gnu/fortran")
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("mpich/mpi_base.mod"))
        .find(|p| p.exists())
    else {
        return skip("use_mpi interfaces", "MPICH's mpi_base.mod is missing (apt-get install libmpich-dev)");
    };
    let ours = module_procedures(&ours, "mpi");
    let theirs = module_procedures(&mpich, "mpi_base");
    const DELETED: &[&str] = &[
        "mpi_attr_delete",
        "mpi_errhandler_create",
        "mpi_errhandler_get",
        "mpi_errhandler_set",
        "mpi_keyval_free",
        "mpi_type_extent",
        "mpi_type_hindexed",
        "mpi_type_hvector",
        "mpi_type_lb",
        "mpi_type_struct",
        "mpi_type_ub",
    ];
    let missing: Vec<_> = theirs.difference(&ours).filter(|n| !DELETED.contains(&n.as_str())).collect();
    // mpi_conversion_fn_null: mpif.h's EXTERNAL callback, a procedure in both (MPICH's in mpi_constants).
    let extra: Vec<_> = ours
        .difference(&theirs)
        .filter(|n| !n.starts_with("mpix_") && n.as_str() != "mpi_conversion_fn_null")
        .collect();
    eprintln!("use mpi: {} procedures declared, MPICH's mpi_base {}", ours.len(), theirs.len());
    assert!(missing.is_empty(), "MPICH's module declares these, ours not: {missing:?}");
    assert!(
        extra.is_empty(),
        "ours declares these, MPICH's module not (programs it compiles may not compile with ours): {extra:?}"
    );
    assert!(theirs.len() > 200, "read only {} procedures from {}", theirs.len(), mpich.display());
}

fn ours_module() -> Option<PathBuf> {
    let m = root().join("dist/include/mpi.mod");
    m.exists().then_some(m)
}

/// MPICH's MPIX_ subroutines, from mpif.h and from `use mpi_f08`, with our wrapper and MPICH's.
#[test]
fn mpix_programs_pass_at_1_to_4_ranks() {
    fortran_program_passes(&root().join("dist/bin/mpifort"), "mpix_f77");
    fortran_program_passes(&root().join("dist/bin/mpifort"), "mpix_f08");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "mpix_f77");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "mpix_f08");
}

/// The same programs built by MPICH's own wrapper (its mpif.h, its `mpi` module) run on ours.
#[test]
fn programs_built_with_mpichs_mpif90_pass_on_ours() {
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f77_basics");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "f77_more");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "mpi_sizeof");
    fortran_program_passes(Path::new("/usr/bin/mpif90.mpich"), "use_mpi");
}

/// One BLACS tester at 4 ranks in its folder: every test group reports 0 FAILED, every
/// auxiliary test PASSED, and the run ends in the BLACS_ABORT test as designed (rank 2 aborts
/// the job, so the exit status is not 0 under MPICH either).
fn blacs_tester_passes(tester: &str) {
    let Some(lib) = ours() else { return skip(tester, "dist/ has no Fortran library (run make)") };
    let exe = Path::new(BLACS_DIR).join(tester);
    if !exe.exists() {
        return skip(tester, "scalapack-mpi-test is missing (apt-get install scalapack-mpi-test)");
    }
    let _turn = one_job_at_a_time();
    let shm_before = shm_files();
    let out = Command::new("timeout")
        .args(["-k", "5", "600"])
        .arg(root().join("dist/bin/bbrun"))
        .args(["-n", "4"])
        .arg(format!("./{tester}"))
        .env("LD_DEBUG", "libs")
        .current_dir(BLACS_DIR)
        .output()
        .expect("run bbrun");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let report: Vec<&str> =
        text.lines().filter(|l| !l.trim_start().starts_with(|c: char| c.is_ascii_digit())).collect();
    let loaded = format!("calling init: {}", lib.display());
    let ours_loaded = text.lines().filter(|l| l.contains(&loaded)).count();
    assert_eq!(ours_loaded, 4, "{tester}: our libmpichfort.so.12 was not the one each of 4 ranks loaded:\n{text}");
    assert!(
        !text.contains("calling init: /lib/x86_64-linux-gnu/libmpichfort")
            && !text.contains("calling init: /usr/lib/x86_64-linux-gnu/libmpichfort"),
        "{tester} loaded MPICH's libmpichfort"
    );
    let groups: Vec<_> = report.iter().filter(|l| l.contains(" TESTS;")).collect();
    let failed: Vec<_> = groups.iter().filter(|l| !l.contains(" 0 FAILED")).collect();
    assert!(
        groups.len() >= 20 && failed.is_empty(),
        "{tester}: {} test groups, failing: {failed:?}\n{}",
        groups.len(),
        report.join("\n")
    );
    let aux_failed: Vec<_> = report.iter().filter(|l| l.contains("FAILED") && !l.contains(" TESTS;")).collect();
    assert!(aux_failed.is_empty(), "{tester}: {aux_failed:?}");
    assert!(
        report.iter().any(|l| l.contains("killed other procs")),
        "{tester} did not reach its BLACS_ABORT test:\n{}",
        report.join("\n")
    );
    assert!(out.status.code() != Some(124) && out.status.code() != Some(137), "{tester} hung");
    assert!(processes_named(tester).is_empty(), "ranks of {tester} outlived the job");
    let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
    assert!(new.is_empty(), "{tester} left {new:?} in /dev/shm");
}

#[test]
fn blacs_c_tester_passes_on_our_fortran_library() {
    blacs_tester_passes("xCbtest");
}

#[test]
fn blacs_fortran_tester_passes_on_our_fortran_library() {
    blacs_tester_passes("xFbtest");
}

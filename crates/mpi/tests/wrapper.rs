//! The compiler wrappers (`bin/mpicc`, run as mpicc, mpicxx, mpif90) take MPICH 4.0.2's wrapper
//! options where MPICH's take them, anywhere on the line: `-show`, `-compile_info`,
//! `-link_info` print the command (MPICH prints the same full command for the three),
//! `-show-compile-info`/`-show-link-info` only the flags the wrapper adds, `-cc=` and kin pick
//! the compiler, `-profile=` is refused. Run from the source tree: the wrapper's prefix is
//! `crates/mpi` (its `include/` holds mpi.h).

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `wrapper` with `args`: (exit code, stdout, stderr).
fn run(wrapper: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(wrapper)
        .args(args)
        .env_remove("BB_CC")
        .env_remove("MPICH_CC")
        .env_remove("BB_FC")
        .env_remove("MPICH_FC")
        .output()
        .expect("run the wrapper");
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim_end().to_string();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The wrapper under another name (mpif90, mpicxx): a symlink in a scratch folder; the
/// wrapper resolves it, so its prefix stays `crates/mpi`.
fn named(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bb-wrapper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join(name);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(crate_dir().join("bin/mpicc"), &link).unwrap();
    link
}

#[test]
fn mpich_show_options_print_the_command_anywhere_on_the_line() {
    let mpicc = crate_dir().join("bin/mpicc");
    let prefix = crate_dir();
    let p = prefix.display();
    let full = format!("gcc -I{p}/include a.c -o a -L{p}/lib -Wl,-rpath,{p}/lib -lmpi");
    for opt in ["-show", "-compile_info", "-compile-info", "-link_info", "-link-info"] {
        assert_eq!(run(&mpicc, &[opt, "a.c", "-o", "a"]), (0, full.clone(), String::new()), "{opt} first");
        assert_eq!(run(&mpicc, &["a.c", opt, "-o", "a"]), (0, full.clone(), String::new()), "{opt} inside");
    }
    // Compiling only: no link flags.
    assert_eq!(run(&mpicc, &["-c", "a.c", "-compile_info"]).1, format!("gcc -I{p}/include -c a.c"));
    assert_eq!(run(&mpicc, &["-show-compile-info"]).1, format!("-I{p}/include"));
    assert_eq!(run(&mpicc, &["-show-link-info"]).1, format!("-L{p}/lib -Wl,-rpath,{p}/lib -lmpi"));
    assert_eq!(
        run(&mpicc, &["-cc=clang", "-show", "a.c"]).1,
        format!("clang -I{p}/include a.c -L{p}/lib -Wl,-rpath,{p}/lib -lmpi")
    );
    let (code, out, err) = run(&mpicc, &["-profile=mpe", "a.c"]);
    assert!(code != 0 && out.is_empty() && err.contains("-profile=mpe is not supported"), "{code} {out} {err}");
}

#[test]
fn fortran_and_cxx_wrappers_take_the_same_options() {
    let p = crate_dir();
    let p = p.display();
    let mpif90 = named("mpif90");
    assert_eq!(run(&mpif90, &["-show-compile-info"]).1, format!("-fallow-argument-mismatch -I{p}/include"));
    assert_eq!(run(&mpif90, &["-show-link-info"]).1, format!("-L{p}/lib -Wl,-rpath,{p}/lib -lmpichfort -lmpi"));
    assert_eq!(
        run(&mpif90, &["x.f90", "-link_info"]).1,
        format!(
            "gfortran -fallow-argument-mismatch -I{p}/include x.f90 -L{p}/lib -Wl,-rpath,{p}/lib -lmpichfort -lmpi"
        )
    );
    assert_eq!(run(&named("mpicxx"), &["-compile_info", "-c", "x.cc"]).1, format!("g++ -I{p}/include -c x.cc"));
}

/// What the options mean is MPICH's: its own mpicc prints one command for the three.
#[test]
fn mpichs_wrapper_prints_one_command_for_show_compile_info_and_link_info() {
    let mpich = Path::new("/usr/bin/mpicc.mpich");
    if !mpich.exists() {
        eprintln!("SKIP: mpicc.mpich is not installed");
        return;
    }
    let show = run(mpich, &["-show", "a.c"]);
    assert_eq!(run(mpich, &["-compile_info", "a.c"]), show);
    assert_eq!(run(mpich, &["a.c", "-link_info"]), show);
}

//! The C test suite of `tests/c/` (one MPI program per feature, see `tests/c/suite.txt`), built
//! twice — with our `dist/bin/mpicc` against our `mpi.h`, and with Debian's `mpicc.mpich` against
//! MPICH's own `mpi.h` — and run under `dist/bin/bbrun` with `LD_LIBRARY_PATH=dist/lib`. Both
//! builds must pass: this pins the ABI.
//!
//! Until our library exists (`dist/bin/mpicc`, `dist/lib/libmpi.so.12`), both tests skip with a
//! message. `BB_C_SUITE_LAUNCHER=mpirun.mpich` instead runs the MPICH-built suite under real
//! MPICH (no `LD_LIBRARY_PATH`), which validates the tests themselves.
//! `BB_C_SUITE_ONLY=p2p_basic,coll_reduce` restricts the run to some programs.
//! Run with `--nocapture` to see each job's time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bb_tests::{processes_named, root, shm_files};

/// A job that runs longer than this is killed and fails (the programs' own watchdog fires at 50 s).
const JOB_TIMEOUT: Duration = Duration::from_secs(90);

/// The two tests build and launch jobs: one at a time on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    Pass,
    Abort,
    Fatal,
    /// The feature is still being written (see the MPI issue's notes): reported, not judged.
    Pending,
}

struct Case {
    program: String,
    ranks: Vec<usize>,
    expect: Expect,
    args: Vec<String>,
}

fn suite() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/c/suite.txt")).expect("tests/c/suite.txt");
    let only: Option<Vec<String>> =
        std::env::var("BB_C_SUITE_ONLY").ok().map(|s| s.split(',').map(|p| p.trim().to_string()).collect());
    let mut cases = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f.len() >= 3, "bad line in suite.txt: {line}");
        let expect = match f[2] {
            "pass" => Expect::Pass,
            "abort" => Expect::Abort,
            "fatal" => Expect::Fatal,
            "pending" => Expect::Pending,
            e => panic!("bad expectation {e} in suite.txt"),
        };
        if only.as_ref().is_some_and(|o| !o.iter().any(|p| p == f[0])) {
            continue;
        }
        cases.push(Case {
            program: f[0].to_string(),
            ranks: f[1].split(',').map(|n| n.parse().expect("rank count")).collect(),
            expect,
            args: f[3..].iter().map(|s| s.to_string()).collect(),
        });
    }
    cases
}

/// Builds every program of tests/c with `mpicc` into `out`.
fn build(mpicc: &Path, out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    let status = Command::new("sh")
        .arg(root().join("tests/c/build.sh"))
        .arg(mpicc)
        .arg(out)
        .status()
        .expect("run tests/c/build.sh");
    // Programs of features still being written ("pending") may fail to build; the others
    // are checked one by one in run_suite.
    if !status.success() {
        eprintln!("note: some programs did not build with {}", mpicc.display());
    }
}

/// How jobs are launched.
struct Launcher {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    /// bbrun must leave no /dev/shm/bb-* file; the fatal message check is strict for us only.
    ours: bool,
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    timed_out: bool,
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

fn launch(l: &Launcher, n: usize, exe: &Path, args: &[String]) -> Outcome {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&l.argv[0]);
    cmd.args(&l.argv[1..]).arg("-n").arg(n.to_string()).arg(exe).args(args);
    cmd.env("BB_CTEST_TIMEOUT", "50").envs(l.env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", l.argv[0]));
    let pgid = child.id() as i32;
    let waiter = std::thread::spawn(move || child.wait_with_output());
    let mut timed_out = false;
    while !waiter.is_finished() {
        if start.elapsed() > JOB_TIMEOUT && !timed_out {
            timed_out = true;
            // SAFETY: kill(2) of the process group we created.
            unsafe { kill(-pgid, 9) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = waiter.join().unwrap().expect("wait for the job");
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
        timed_out,
    }
}

/// Checks one outcome; returns the reasons it is wrong.
fn judge(case: &Case, o: &Outcome, l: &Launcher) -> Vec<String> {
    let mut why = Vec::new();
    let lines: Vec<&str> = o.stdout.lines().map(|s| s.trim_end()).collect();
    let pass_line = format!("PASS {}", case.program);
    if o.timed_out {
        why.push(format!("timed out after {JOB_TIMEOUT:?}"));
    }
    if let Some(f) = lines.iter().find(|s| s.starts_with("FAIL")) {
        why.push(format!("printed `{f}`"));
    }
    match case.expect {
        Expect::Pending => {}
        Expect::Pass => {
            if o.code != Some(0) {
                why.push(format!("exit status {:?}, expected 0", o.code));
            }
            let passes = lines.iter().filter(|s| **s == pass_line).count();
            if passes != 1 {
                why.push(format!("`{pass_line}` printed {passes} times, expected once"));
            }
        }
        Expect::Abort | Expect::Fatal => {
            if o.code == Some(0) {
                why.push("exit status 0, expected non-zero".into());
            }
            if lines.iter().any(|s| s.starts_with("PASS")) {
                why.push("printed a PASS line".into());
            }
            let marker = if case.expect == Expect::Abort { "ABORTING abort" } else { "ABOUT TO FAIL fatal" };
            if !lines.iter().any(|s| s.starts_with(marker)) {
                if l.ours {
                    why.push(format!("`{marker}` not printed"));
                } else {
                    // Hydra sometimes tears the job down before forwarding the rank's output.
                    eprintln!("    note: `{marker}` not printed (not enforced for this launcher)");
                }
            }
            if case.expect == Expect::Fatal {
                let all = format!("{}\n{}", o.stdout, o.stderr);
                let named = all.lines().filter(|s| !s.starts_with("ABOUT TO FAIL")).any(|s| s.contains("MPI_Send"));
                if !named {
                    if l.ours {
                        why.push("the fatal error message does not name MPI_Send".into());
                    } else {
                        // Hydra sometimes kills the job before MPICH's message reaches stderr.
                        eprintln!(
                            "    note: the fatal error message does not name MPI_Send (not enforced for this launcher)"
                        );
                    }
                }
            }
        }
    }
    why
}

fn run_suite(label: &str, dir: &Path, l: &Launcher) {
    let mut failures = Vec::new();
    let total = Instant::now();
    for case in suite() {
        let exe = dir.join(&case.program);
        if case.expect == Expect::Pending {
            // A feature still being written: reported, never failed; it becomes "pass" in
            // suite.txt once it passes.
            let state = if exe.exists() { "builds; not yet required to pass" } else { "does not build yet" };
            eprintln!("[{label}] PENDING {} ({state})", case.program);
            continue;
        }
        if !exe.exists() {
            failures.push(format!("{}: did not build", case.program));
            continue;
        }
        for &n in &case.ranks {
            let shm_before = shm_files();
            let o = launch(l, n, &exe, &case.args);
            let mut why = judge(&case, &o, l);
            // Nothing of the job may survive it.
            std::thread::sleep(Duration::from_millis(20));
            let left = processes_named(&exe.to_string_lossy());
            if !left.is_empty() {
                why.push(format!("rank processes {left:?} outlived the job"));
                for pid in left {
                    // SAFETY: kill(2) of a leftover rank of our own job.
                    unsafe { kill(pid as i32, 9) };
                }
            }
            if l.ours {
                let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
                if !new.is_empty() {
                    why.push(format!("left {new:?} in /dev/shm"));
                }
            }
            let what = format!("{} -n {n} {}", case.program, case.args.join(" "));
            eprintln!(
                "[{label}] {:7} {what:32} {:6.2} s",
                if why.is_empty() { "ok" } else { "FAILED" },
                o.elapsed.as_secs_f64()
            );
            if !why.is_empty() {
                failures.push(format!(
                    "{what}: {}\n--- stdout\n{}--- stderr\n{}",
                    why.join("; "),
                    o.stdout,
                    tail(&o.stderr, 3000)
                ));
            }
        }
    }
    eprintln!("[{label}] all jobs in {:.1} s", total.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "[{label}] {} job(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// `mpicc.mpich` on PATH?
fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(prog)).find(|p| p.is_file())
}

/// Our installed library and tools, or why the tests must skip.
fn ours() -> Result<Launcher, String> {
    let dist = root().join("dist");
    let need = [dist.join("bin/mpicc"), dist.join("lib/libmpi.so.12")];
    if let Some(missing) = need.iter().find(|p| !p.exists()) {
        return Err(format!("{} is missing (build and install crates/mpi into dist/ first)", missing.display()));
    }
    let bbrun = ["bin/bbrun", "bin/mpiexec"].iter().map(|b| dist.join(b)).find(|p| p.exists());
    let Some(bbrun) = bbrun else { return Err("dist/bin/bbrun is missing".into()) };
    Ok(Launcher {
        argv: vec![bbrun.to_string_lossy().into_owned()],
        env: vec![("LD_LIBRARY_PATH".into(), dist.join("lib").to_string_lossy().into_owned())],
        ours: true,
    })
}

fn external_launcher() -> Option<Launcher> {
    let l = std::env::var("BB_C_SUITE_LAUNCHER").ok().filter(|s| !s.trim().is_empty())?;
    Some(Launcher { argv: l.split_whitespace().map(String::from).collect(), env: Vec::new(), ours: false })
}

/// Built with our `dist/bin/mpicc` against our `mpi.h`, run on our library.
#[test]
fn c_suite_built_with_our_mpicc() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if external_launcher().is_some() {
        eprintln!("SKIP c_suite_built_with_our_mpicc: BB_C_SUITE_LAUNCHER is set (our header needs our library)");
        return;
    }
    let l = match ours() {
        Ok(l) => l,
        Err(why) => {
            eprintln!("SKIP c_suite_built_with_our_mpicc: {why}");
            return;
        }
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-suite-ours");
    build(&root().join("dist/bin/mpicc"), &dir);
    run_suite("ours/ours", &dir, &l);
}

/// Built with Debian's `mpicc.mpich` against MPICH's `mpi.h`, run on our library (or, with
/// `BB_C_SUITE_LAUNCHER`, on MPICH itself).
#[test]
fn c_suite_built_with_mpicc_mpich() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (l, label) = match external_launcher() {
        Some(l) => (l, "mpich/launcher"),
        None => match ours() {
            Ok(l) => (l, "mpich/ours"),
            Err(why) => {
                eprintln!("SKIP c_suite_built_with_mpicc_mpich: {why}; set BB_C_SUITE_LAUNCHER=mpirun.mpich to run the suite on MPICH");
                return;
            }
        },
    };
    let Some(mpicc) = which("mpicc.mpich") else {
        eprintln!("SKIP c_suite_built_with_mpicc_mpich: mpicc.mpich is not installed (apt-get install libmpich-dev)");
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-suite-mpich");
    build(&mpicc, &dir);
    run_suite(label, &dir, &l);
}

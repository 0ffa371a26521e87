//! Real Debian binaries built for MPICH, run unchanged on Billboard's MPI library through
//! `dist/bin/bbrun` (which puts `dist/lib`, with `libmpich.so.12`, first on the library path):
//! NetPIPE (`netpipe-mpich2`) and ScaLAPACK's LU tests (`scalapack-mpi-test`), the runs of
//! seed 001, BAGEL (`bagel`), a C++ quantum chemistry program, NWChem (`nwchem-mpich`),
//! whose Global Arrays run on MPI one-sided communication (ARMCI-MPI), and MOCASSIN
//! (`mocassin`, Fortran), Tachyon (`tachyon-nox` on `libtachyon-mpich-0`, persistent requests),
//! Message Passing Yorick (`yorick-mpy-mpich2`);
//! and a profiling tool built for MPICH (PMPI). Skipped, saying why,
//! when the packages or `dist/` are missing (`scripts/test.sh` installs the packages and builds
//! `dist/`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bb_tests::{processes_named, root, shm_files};

/// `dist/bin/bbrun` when our MPI library is installed beside it.
fn bbrun() -> Option<PathBuf> {
    let dist = root().join("dist");
    (dist.join("lib/libmpich.so.12").exists() && dist.join("bin/bbrun").exists()).then(|| dist.join("bin/bbrun"))
}

/// Runs `bbrun -n N program args` in `dir` under a timeout; returns stdout+stderr.
fn run(n: usize, program: &Path, args: &[&str], dir: &Path, timeout: Duration) -> (bool, String) {
    Job { timeout, ..Job::new(n, program, args, dir) }.run()
}

/// [`run`] with environment variables for the ranks, under a 300 s timeout.
fn run_env(n: usize, program: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    Job { env, ..Job::new(n, program, args, dir) }.run()
}

/// `bbrun [options] -n N program args` in `dir`, with `env` set and `input` on rank 0's stdin,
/// under a timeout (300 s unless set).
struct Job<'a> {
    n: usize,
    program: &'a Path,
    args: &'a [&'a str],
    dir: &'a Path,
    timeout: Duration,
    env: &'a [(&'a str, &'a str)],
    options: &'a [&'a str],
    input: &'a [u8],
}

impl<'a> Job<'a> {
    fn new(n: usize, program: &'a Path, args: &'a [&'a str], dir: &'a Path) -> Self {
        Job { n, program, args, dir, timeout: Duration::from_secs(300), env: &[], options: &[], input: b"" }
    }

    /// Whether the job succeeded, and its stdout and stderr; it must leave no rank and no
    /// /dev/shm file behind.
    fn run(&self) -> (bool, String) {
        let shm_before = shm_files();
        let mut child = Command::new("timeout")
            .envs(self.env.iter().copied())
            .args(["-k", "5", &self.timeout.as_secs().to_string()])
            .arg(bbrun().expect("checked"))
            .args(self.options)
            .arg("-n")
            .arg(self.n.to_string())
            .arg(self.program)
            .args(self.args)
            .current_dir(self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run bbrun");
        let mut stdin = child.stdin.take().expect("piped");
        let input = self.input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("wait for bbrun");
        let _ = writer.join();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let program = self.program.to_string_lossy();
        assert!(processes_named(&program).is_empty(), "ranks of {program} outlived the job");
        let new: Vec<_> = shm_files().into_iter().filter(|f| !shm_before.contains(f)).collect();
        assert!(new.is_empty(), "the job left {new:?} in /dev/shm");
        (out.status.success(), text)
    }
}

/// Builds `source` (under the repository) into `out` with `compiler` (MPICH's `mpicc.mpich`
/// or `mpif90.mpich`) and `flags`, failing the test if it cannot.
fn build(compiler: &Path, flags: &[&str], source: &str, out: &Path) {
    let ok = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(root().join(source))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{} could not build {source}", compiler.display());
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
    // A fixed number of repeats per size (-n): NetPIPE otherwise scales them to its own timings,
    // and on a loaded machine the whole run can outlast any limit. This checks that it runs.
    let args = ["-n", "200", "-u", "65536", "-o", "np.out"];
    let (ok, text) = run(2, np, &args, &dir, Duration::from_secs(120));
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
    // Debian's LU.dat, less its last switch: "Test Cond. Est. and Iter. Ref. Routines" runs
    // P?GERFS, whose P?LACON reads EST before setting it (Reference-ScaLAPACK issue 121, fixed
    // upstream by PR 122 after Debian's 2.2.1). A rank then branches on whatever its stack held
    // there, and the ranks part ways ("PSGETRS parameter number 1 had an illegal value", then a
    // hang) under MPICH too: 2 of 10 runs of xdlu on grids 1x2 and 2x1 under mpirun.mpich.
    // Factorization and solve, the part that exercises MPI, stay in; scripts/scalapack.sh runs
    // the whole tester list as CTest does.
    let lu = std::fs::read_to_string(tests.join("LU.dat")).expect("read LU.dat");
    let last = lu.lines().last().unwrap_or_default();
    assert!(last.trim_start().starts_with('T'), "LU.dat's last line is no longer the T/F switch: {last}");
    let without_refinement = lu.replacen(last, &last.replacen('T', "F", 1), 1);
    std::fs::write(dir.join("LU.dat"), without_refinement).expect("write LU.dat");
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

/// The numbers a BAGEL run prints with 8 decimals (energies, gradients, dipoles), in order;
/// its timings have 2 and are left out.
fn bagel_results(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter(|w| w.split_once('.').is_some_and(|(_, frac)| frac.len() == 8))
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn bagel_built_for_mpich_computes_on_billboard_what_it_computes_on_mpich() {
    let (Some(_), Ok(bagel), Ok(mpirun)) = (bbrun(), which("BAGEL"), which("mpirun.mpich")) else {
        return skip("BAGEL", "needs dist/ (make), BAGEL (apt-get install bagel) and mpirun.mpich");
    };
    let examples = Path::new("/usr/share/doc/bagel/examples");
    let dir = std::env::temp_dir().join(format!("bb-bagel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Hartree-Fock with density fitting and its gradient, CASSCF, MP2, DFT (B3LYP), ROHF: each
    // spreads its integrals and matrices over the ranks and combines them with collectives.
    // The distributed FCI keeps its vectors in windows (MPI_Win_allocate, lock_all, MPI_Rget,
    // MPI_Raccumulate, flushes): it reads MPI_Rget's data after a flush and from its own rank
    // right after the call, as MPICH allows.
    let all =
        ["hf_svp_dfhf_grad", "h2o_svp_cas", "benzene_svp_mp2", "hf_svp_b3lyp", "hc_svp_rohf", "hf_sto3g_fci_dist"];
    for example in all {
        let input = examples.join(format!("{example}.json"));
        std::fs::copy(&input, dir.join(format!("{example}.json"))).expect("copy a BAGEL example");
        let input = format!("{example}.json");
        // One thread per rank: the ranks already fill the cores.
        let reference = Command::new("timeout")
            .args(["-k", "5", "300", "env", "OMP_NUM_THREADS=1", "BAGEL_NUM_THREADS=1"])
            .arg(&mpirun)
            .args(["-n", "2"])
            .arg(&bagel)
            .arg(&input)
            .current_dir(&dir)
            .output()
            .expect("run mpirun.mpich");
        let reference = bagel_results(&String::from_utf8_lossy(&reference.stdout));
        assert!(reference.len() > 5, "{example} under MPICH printed {} results", reference.len());
        for n in [2, 3] {
            let (ok, text) =
                run_env(n, &bagel, &[&input], &dir, &[("OMP_NUM_THREADS", "1"), ("BAGEL_NUM_THREADS", "1")]);
            assert!(ok, "BAGEL {example} on {n} ranks failed:\n{text}");
            let ours = bagel_results(&text);
            let agree =
                ours.len() == reference.len() && ours.iter().zip(&reference).all(|(a, b)| (a - b).abs() <= 1e-6);
            assert!(agree, "BAGEL {example} on {n} ranks: {ours:?}\nunder MPICH on 2: {reference:?}\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The energies an NWChem run prints ("Total SCF energy = ...", "Total DFT energy = ..."), in
/// order.
fn nwchem_energies(text: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| l.contains("Total SCF energy") || l.contains("Total DFT energy"))
        .filter_map(|l| l.rsplit('=').next()?.trim().parse().ok())
        .collect()
}

#[test]
fn nwchem_built_for_mpich_computes_on_billboard_what_it_computes_on_mpich() {
    let (Some(_), Ok(nwchem), Ok(mpirun)) = (bbrun(), which("nwchem.mpich"), which("mpirun.mpich")) else {
        return skip("NWChem", "needs dist/ (make), nwchem.mpich (apt-get install nwchem-mpich) and mpirun.mpich");
    };
    let dir = std::env::temp_dir().join(format!("bb-nwchem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Water, 6-31G*: SCF, then DFT (NWChem's default functional). Global Arrays keep the Fock and
    // density matrices in MPI windows (ARMCI-MPI): locks, puts, gets and accumulates of
    // strided patches, a fetch-and-op counter handing out tasks.
    let input =
        "start h2o\ngeometry units angstroms\n  O 0.0 0.0 0.0\n  H 0.0 0.757 0.587\n  H 0.0 -0.757 0.587\nend\n\
                 basis\n  * library 6-31g*\nend\nscf\n  print low\nend\ntask scf energy\ntask dft energy\n";
    std::fs::write(dir.join("h2o.nw"), input).unwrap();
    let fresh = || {
        for scratch in ["h2o.db", "h2o.movecs"] {
            let _ = std::fs::remove_file(dir.join(scratch));
        }
    };
    // Under MPICH 4.0.2 NWChem fails on windows from MPI_Win_allocate (stagnant convergence or
    // an ARMCI error: nwchem-mpich's README.Debian says to set ARMCI_USE_WIN_ALLOCATE=0), so its
    // reference uses MPI_Win_create; ours runs both.
    fresh();
    let reference = Command::new("timeout")
        .args(["-k", "5", "300", "env", "ARMCI_USE_WIN_ALLOCATE=0"])
        .arg(&mpirun)
        .args(["-n", "2"])
        .arg(&nwchem)
        .arg("h2o.nw")
        .current_dir(&dir)
        .output()
        .expect("run mpirun.mpich");
    let reference = nwchem_energies(&String::from_utf8_lossy(&reference.stdout));
    assert_eq!(reference.len(), 2, "NWChem under MPICH printed {reference:?}");
    // ARMCI_STRIDED_METHOD=IOV with its direct method moves a patch's separate pieces in one
    // operation: MPI_BOTTOM and a type of absolute addresses (its first MPI_Get died with
    // "NULL result buffer" before).
    let iov = [("ARMCI_STRIDED_METHOD", "IOV"), ("ARMCI_IOV_METHOD", "DIRECT")];
    // Over TCP every operation goes through the target's handler (active messages).
    let tcp = [("BB_ROUTES", "tcp")];
    let runs = [
        (2, "0", &[][..]),
        (2, "1", &[]),
        (3, "0", &[]),
        (3, "1", &[]),
        (2, "1", &iov),
        (3, "0", &iov),
        (2, "1", &tcp),
    ];
    for (n, allocate, method) in runs {
        fresh();
        let env: Vec<_> = [("ARMCI_USE_WIN_ALLOCATE", allocate)].into_iter().chain(method.iter().copied()).collect();
        let (ok, text) = run_env(n, &nwchem, &["h2o.nw"], &dir, &env);
        assert!(ok, "NWChem on {n} ranks ({env:?}) failed:\n{text}");
        let ours = nwchem_energies(&text);
        let agree = ours.len() == reference.len() && ours.iter().zip(&reference).all(|(a, b)| (a - b).abs() <= 1e-8);
        assert!(agree, "NWChem on {n} ranks ({env:?}): {ours:?}, MPICH: {reference:?}\n{text}");
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
    build(&mpicc, &["-O1", "-Wno-stringop-overflow"], "tests/c/p2p_basic.c", &exe);
    let lib = root().join("dist/lib");
    // PMI-1: Hydra's PMI-2 is not usable (its kvs-fence returns while other ranks have not
    // reached it, and a kvs-get of a key not yet put fails an assertion in mpiexec); PMI-2 is
    // tested under Slurm (slurm.rs).
    let out = Command::new("timeout")
        .args(["-k", "5", "60"])
        .arg(&hydra)
        .args(["-n", "3", "env"])
        .arg(format!("LD_LIBRARY_PATH={}", lib.display()))
        .arg(&exe)
        .output()
        .expect("run mpiexec.hydra");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("PASS p2p_basic"), "under Hydra:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under Hydra a spawned command that cannot run is an error line of Hydra's proxy and nothing
/// more: the parents must find it themselves (the spawn's root checks what runs on its host, as
/// bbrun does) and fail at once, not after BB_SPAWN_WAIT_MS; a bad `wdir` must not reach Hydra
/// either (its mpiexec fails an assertion on one and ends the job). Then a good spawn works.
/// `tests/c/spawn_errors.c now`, built with MPICH's mpicc, on 1 and 2 ranks.
#[test]
fn a_spawn_under_hydra_of_a_command_that_cannot_run_fails_at_once() {
    let (Some(_), Ok(hydra), Ok(mpicc)) = (bbrun(), which("mpiexec.hydra"), which("mpicc.mpich")) else {
        return skip("Hydra spawn", "needs dist/ (make) and MPICH's mpiexec.hydra and mpicc.mpich");
    };
    let dir = std::env::temp_dir().join(format!("bb-hydra-spawn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("spawn_errors");
    build(&mpicc, &["-O1"], "tests/c/spawn_errors.c", &exe);
    let lib = root().join("dist/lib");
    for n in ["1", "2"] {
        // The wait a failed spawn would otherwise take, far beyond the program's limit (10 s).
        // Hydra's environment reaches the children it spawns; `env` on the command line reaches
        // only the first ranks (a child on MPICH's own library fails in MPI_Init).
        let out = Command::new("timeout")
            .env("LD_LIBRARY_PATH", &lib)
            .args(["-k", "5", "120"])
            .arg(&hydra)
            .args(["-n", n, "env"])
            .arg(format!("LD_LIBRARY_PATH={}", lib.display()))
            .args(["BB_SPAWN_WAIT_MS=60000", "BB_CTEST_TIMEOUT=100"])
            .arg(&exe)
            .arg("now")
            .current_dir(&dir)
            .output()
            .expect("run mpiexec.hydra");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let passed = out.status.success() && text.contains("PASS spawn_errors-now") && !text.contains("FAIL");
        assert!(passed, "{n} rank(s) under Hydra:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// MOCASSIN (`mocassin`), a Fortran Monte Carlo photoionisation code built for MPICH: each rank
/// follows its share of the energy packets and MPI_Allreduce sums the grids and the escaped
/// energy, which must come back as the star's luminosity (its seeds come from the clock, so
/// runs differ in the noise, not in that balance). The dust benchmark `p0tau1`, shortened.
#[test]
fn mocassin_built_for_mpich_conserves_the_energy_on_billboard() {
    let bench = Path::new("/usr/share/mocassin/benchmarks/dust/1D/p0tau1");
    let (Some(_), Ok(mocassin), true) = (bbrun(), which("mocassin"), bench.is_dir()) else {
        return skip("MOCASSIN", "needs dist/ (make) and apt-get install mocassin mocassin-benchmarks");
    };
    let dir = std::env::temp_dir().join(format!("bb-mocassin-{}", std::process::id()));
    let input = dir.join("input");
    std::fs::create_dir_all(&input).unwrap();
    for file in std::fs::read_dir(bench).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, input.join(file.file_name().unwrap())).unwrap();
    }
    let text = std::fs::read_to_string(input.join("input.in")).unwrap();
    let short: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("autoPackets"))
        .map(|l| if l.starts_with("nPhotons") { "nPhotons 20000" } else { l })
        .map(|l| if l.starts_with("maxIterateMC") { "maxIterateMC 3 95." } else { l })
        .collect();
    std::fs::write(input.join("input.in"), short.join("\n") + "\n").unwrap();
    for n in [2, 3] {
        let _ = std::fs::remove_dir_all(dir.join("output"));
        std::fs::create_dir_all(dir.join("output")).unwrap();
        let (ok, text) = run(n, &mocassin, &[], &dir, Duration::from_secs(120));
        assert!(ok && text.contains("end simulation reached - clean exit"), "MOCASSIN on {n} ranks:\n{text}");
        // "Total energy radiated out of the nebula [e36 erg/s]: <escaped> <dust> <luminosity> <packets>"
        let balances: Vec<Vec<f64>> = text
            .lines()
            .filter_map(|l| l.split_once("Total energy radiated out of the nebula [e36 erg/s]:"))
            .map(|(_, v)| v.split_whitespace().filter_map(|w| w.parse().ok()).collect())
            .collect();
        assert_eq!(balances.len(), 3, "one balance per iteration on {n} ranks:\n{text}");
        for b in &balances {
            assert!(b.len() == 4 && (b[0] - b[2]).abs() <= 1e-3 * b[2] && b[3] == 20000.0, "{n} ranks: {b:?}");
        }
        assert!(dir.join("output/SED.out").exists(), "no output/SED.out on {n} ranks");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tachyon (`tachyon-nox` on `libtachyon-mpich-0`), a ray tracer whose ranks render scanlines
/// and hand them to rank 0 through persistent requests (MPI_Send_init/Recv_init, MPI_Startall,
/// MPI_Testsome): the image of `tests/tachyon/scene.dat` on 1 to 4 ranks is byte for byte the one
/// MPICH renders on as many. The MPICH build of the library is picked through the library path,
/// whatever Debian's alternative for `libtachyon.so.0` points to.
#[test]
fn tachyon_built_for_mpich_renders_on_billboard_the_image_it_renders_on_mpich() {
    let library = Path::new("/usr/lib/x86_64-linux-gnu/libtachyon-mpich.so.0");
    let (Some(_), Ok(tachyon), Ok(mpiexec), true) =
        (bbrun(), which("tachyon-nox"), which("mpiexec.mpich"), library.exists())
    else {
        return skip(
            "Tachyon",
            "needs dist/ (make), apt-get install tachyon-bin-nox libtachyon-mpich-0, and mpiexec.mpich",
        );
    };
    let dir = std::env::temp_dir().join(format!("bb-tachyon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("libtachyon.so.0"));
    std::os::unix::fs::symlink(library, dir.join("libtachyon.so.0")).unwrap();
    let scene = root().join("tests/tachyon/scene.dat");
    let scene = scene.to_str().unwrap();
    let libs = format!("LD_LIBRARY_PATH={}", dir.display());
    for n in 1..=4 {
        let reference = Command::new("timeout")
            .args(["-k", "5", "60", "env", &libs])
            .arg(&mpiexec)
            .args(["-n", &n.to_string()])
            .arg(&tachyon)
            .arg(scene)
            .args(["-format", "PPM", "-o", "mpich.ppm"])
            .current_dir(&dir)
            .output()
            .expect("run mpiexec.mpich");
        assert!(reference.status.success(), "Tachyon under MPICH on {n} ranks failed: {reference:?}");
        let options = ["-x", libs.as_str()];
        let args = [scene, "-format", "PPM", "-o", "ours.ppm"];
        let (ok, text) =
            Job { timeout: Duration::from_secs(60), options: &options, ..Job::new(n, &tachyon, &args, &dir) }.run();
        assert!(ok, "Tachyon on {n} ranks failed:\n{text}");
        let (ours, theirs) =
            (std::fs::read(dir.join("ours.ppm")).unwrap(), std::fs::read(dir.join("mpich.ppm")).unwrap());
        assert!(
            ours.len() > 200_000 && ours == theirs,
            "{n} ranks: the images differ ({} and {} bytes)",
            ours.len(),
            theirs.len()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Message Passing Yorick (`mpy.mpich2`, yorick-mpy-mpich2), an interpreter whose ranks run
/// what rank 0 reads (MPI_Probe/Iprobe, Isend/Irecv, Testsome/Waitsome, an error handler on a
/// duplicated world): Debian's own test suite (`testmp.i`: point-to-point, collectives built on
/// it, the mpool task farm) passes on 2 and 3 ranks, fed on rank 0's stdin.
#[test]
fn yorick_mpy_built_for_mpich_passes_its_test_suite_on_billboard() {
    let suite = Path::new("/usr/share/doc/yorick-mpy-common/examples/testmp.i.gz");
    let (Some(_), Ok(mpy), true) = (bbrun(), which("mpy.mpich2"), suite.exists()) else {
        return skip("Yorick mpy", "needs dist/ (make) and apt-get install yorick-mpy-mpich2");
    };
    let dir = std::env::temp_dir().join(format!("bb-mpy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unpacked = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -dc {} > testmp.i", suite.display()))
        .current_dir(&dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(unpacked, "cannot unpack {}", suite.display());
    for n in [2, 3] {
        let job = Job {
            timeout: Duration::from_secs(120),
            input: b"testmp\nquit\n",
            ..Job::new(n, &mpy, &["-j", "testmp.i"], &dir)
        };
        let (ok, text) = job.run();
        let passed = |what: &str| text.lines().filter(|l| l.trim() == what).count();
        assert!(ok, "mpy on {n} ranks:\n{text}");
        assert_eq!(passed(&format!("testmp2 passed on all {n} ranks")), 1, "{n} ranks:\n{text}");
        assert_eq!(passed(&format!("testmp3 passed on all {n} ranks")), 1, "{n} ranks:\n{text}");
        let mpool = [
            "mpool finished (vpack) nerrors=0",
            "mpool self=1 finished (vsave) nerrors=0",
            "mpool list= finished (vpack) nerrors=0",
        ];
        assert!(mpool.iter().all(|line| passed(line) >= 1), "{n} ranks:\n{text}");
        assert!(!text.contains("failed") && !text.contains("ERROR"), "{n} ranks:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A profiling tool built for MPICH (`tests/pmpi/tool.c`: MPI_ wrappers that count and call
/// PMPI_, loaded with `-x LD_PRELOAD=`) counts each call of a C, a `mpi` module and a `mpi_f08`
/// program (`tests/pmpi/calls*.c/f90`, built with MPICH's compilers) exactly as on MPICH: the
/// library never calls its own MPI_ entry points, Fortran 77 calls reach the C MPI_ names, and
/// of mpi_f08's only those with a choice buffer do (the lines below are MPICH 4.0.2's).
#[test]
fn a_profiling_tool_built_for_mpich_counts_each_call_as_on_mpich() {
    let (Some(_), Ok(mpicc), Ok(mpif90)) = (bbrun(), which("mpicc.mpich"), which("mpif90.mpich")) else {
        return skip("PMPI tool", "needs dist/ (make) and MPICH's mpicc.mpich and mpif90.mpich");
    };
    let dir = std::env::temp_dir().join(format!("bb-pmpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    build(&mpicc, &["-shared", "-fPIC"], "tests/pmpi/tool.c", &dir.join("libtool.so"));
    build(&mpicc, &["-Wno-stringop-overflow"], "tests/pmpi/calls.c", &dir.join("calls"));
    build(&mpif90, &[], "tests/pmpi/calls.f90", &dir.join("calls_mpi"));
    build(&mpif90, &[], "tests/pmpi/calls_f08.f90", &dir.join("calls_f08"));
    let counts = |program: &str| {
        let preload = format!("LD_PRELOAD={}", dir.join("libtool.so").display());
        let options = ["-x", preload.as_str()];
        let exe = dir.join(program);
        let (ok, text) =
            Job { timeout: Duration::from_secs(60), options: &options, ..Job::new(2, &exe, &[], &dir) }.run();
        assert!(ok, "{program}:\n{text}");
        let mut lines: Vec<String> = text.lines().filter(|l| l.starts_with("tool: ")).map(String::from).collect();
        lines.sort();
        lines
    };
    let c = counts("calls");
    let f77 = counts("calls_mpi");
    let f08 = counts("calls_f08");
    let _ = std::fs::remove_dir_all(&dir);
    let line = |rank: usize, counts: &str| format!("tool: rank {rank}: {counts}");
    assert_eq!(
        c,
        [
            line(0, "init 1 finalize 1 send 1 recv 0 isend 1 irecv 1 wait 0 waitall 1 sendrecv 1 bcast 1 reduce 1 allreduce 1 barrier 0 dup 1"),
            line(1, "init 1 finalize 1 send 0 recv 2 isend 1 irecv 1 wait 0 waitall 1 sendrecv 1 bcast 1 reduce 1 allreduce 1 barrier 0 dup 1"),
        ]
    );
    assert_eq!(
        f77,
        [
            line(0, "init 1 finalize 1 send 1 recv 1 isend 1 irecv 0 wait 1 waitall 0 sendrecv 0 bcast 1 reduce 0 allreduce 1 barrier 1 dup 0"),
            line(1, "init 1 finalize 1 send 0 recv 2 isend 1 irecv 0 wait 1 waitall 0 sendrecv 0 bcast 1 reduce 0 allreduce 1 barrier 1 dup 0"),
        ]
    );
    assert_eq!(
        f08,
        [
            line(0, "init 0 finalize 0 send 1 recv 1 isend 1 irecv 0 wait 0 waitall 0 sendrecv 0 bcast 1 reduce 0 allreduce 1 barrier 0 dup 0"),
            line(1, "init 0 finalize 0 send 0 recv 2 isend 1 irecv 0 wait 0 waitall 0 sendrecv 0 bcast 1 reduce 0 allreduce 1 barrier 0 dup 0"),
        ]
    );
}

fn which(program: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| p.exists())
        .ok_or(())
}

/// Ranks bound one to a core (`mpiexec.hydra -bind-to core`, as Slurm's CPU binding) see one
/// CPU each; together they have two, so two of them are no crowded machine: the 2-rank 8 MiB
/// Allreduce of `tests/c/coll_reduce.c` (built with MPICH's mpicc) goes by halves, which the
/// table gives only where ranks have a core each. Each rank took its own mask for the machine's
/// and chose "split" (and every wait yielded at once: NetPIPE 1 B 0.53-0.84 us instead of
/// 0.13-0.15). Both ranks bound to one CPU (`taskset -c 0`) are crowded, and say so.
#[test]
fn ranks_bound_one_to_a_core_under_hydra_are_not_a_crowded_machine() {
    let (Some(_), Ok(hydra), Ok(mpicc)) = (bbrun(), which("mpiexec.hydra"), which("mpicc.mpich")) else {
        return skip("Hydra binding", "needs dist/ (make) and MPICH's mpiexec.hydra and mpicc.mpich");
    };
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return skip("Hydra binding", "needs two CPUs");
    }
    let dir = std::env::temp_dir().join(format!("bb-hydra-bind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("coll_reduce");
    build(&mpicc, &["-O1", "-Wno-stringop-overflow"], "tests/c/coll_reduce.c", &exe);
    let lib = root().join("dist/lib");
    let run = |pin: Option<&str>, bind: &str| {
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", "120"]);
        if let Some(cpus) = pin {
            cmd.args(["taskset", "-c", cpus]);
        }
        let out = cmd
            .arg(&hydra)
            .args(["-bind-to", bind, "-n", "2", "-env", "BB_VERBOSE", "1"])
            .arg("-env")
            .arg("LD_LIBRARY_PATH")
            .arg(&lib)
            .arg(&exe)
            .output()
            .expect("run mpiexec.hydra");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("PASS coll_reduce"), "under Hydra -bind-to {bind}:\n{text}");
        let choice =
            |how: &str| text.lines().filter(|l| l.contains("first at 8388608 bytes") && l.contains(how)).count();
        (choice("(halves; table;"), choice("(split; table;"), text)
    };
    let (halves, _, text) = run(None, "core");
    assert_eq!(halves, 2, "bound one to a core, both ranks should fold by halves:\n{text}");
    let (_, split, text) = run(Some("0"), "none");
    assert_eq!(split, 2, "both on CPU 0, the ranks are crowded and split:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! What the PVM tests share: a virtual machine of our own per test (its agent folder, our
//! library laid out as programs load it), running programs under a timeout, the same
//! program under Debian's PVM, and C test programs built against either library.
// Each test file uses a part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A virtual machine of our own for one test: the folder of its agent, and our library laid
/// out as programs load it.
pub struct Vm {
    pub scratch: PathBuf,
}

impl Vm {
    pub fn new(name: &str) -> Vm {
        let scratch = std::env::temp_dir().join(format!("bb-pvm-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let lib_dir = scratch.join("lib");
        std::fs::create_dir_all(&lib_dir).unwrap();
        let exe = std::env::current_exe().unwrap();
        let lib = exe.parent().and_then(|d| d.parent()).unwrap().join("libpvm.so");
        assert!(
            lib.exists(),
            "{} missing: `cargo build --workspace --lib` builds it (scripts/test.sh does)",
            lib.display()
        );
        for soname in ["libpvm3.so.3", "libgpvm3.so.3"] {
            std::os::unix::fs::symlink(&lib, lib_dir.join(soname)).unwrap();
        }
        Vm { scratch }
    }

    pub fn dir(&self) -> PathBuf {
        self.scratch.join("vm")
    }

    /// A command with our library and this VM's agent folder.
    pub fn command(&self, prog: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(prog);
        c.env("LD_LIBRARY_PATH", self.scratch.join("lib"))
            .env("BB_PVMD", env!("CARGO_BIN_EXE_bbpvmd"))
            .env("BB_PVM_DIR", self.dir())
            .env("BB_PVM_LINGER_MS", "200")
            .env("PVM_PATH", "/usr/bin:/bin")
            .current_dir(&self.scratch)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Checks that the agent and every task are gone and the folder removed (waiting a little
    /// for the agent's linger).
    pub fn assert_nothing_left(&self) {
        let needle = self.dir().to_string_lossy().into_owned();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let procs = processes_with(&needle);
            let dir_left = self.dir().exists();
            if procs.is_empty() && !dir_left {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "left behind: processes {procs:?}, folder {} {}",
                self.dir().display(),
                if dir_left {
                    format!("{:?}", std::fs::read_dir(self.dir()).map(|d| d.count()))
                } else {
                    "gone".into()
                }
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

impl Drop for Vm {
    /// A test that fails (a program past its timeout, an assertion) unwinds through here: the
    /// agent and tasks of this VM that its program left (`finish` kills only the program) are
    /// killed, not left running. After [`Vm::assert_nothing_left`] nothing names the folder.
    fn drop(&mut self) {
        for pid in processes_with(&self.dir().to_string_lossy()) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Pids of processes (not zombies) whose command line or environment mentions `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if stat.rsplit(')').next().is_some_and(|s| s.trim_start().starts_with('Z')) {
            continue;
        }
        let mut text = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        text.extend(std::fs::read(e.path().join("environ")).unwrap_or_default());
        if String::from_utf8_lossy(&text).contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// Waits for a child up to `limit`, killing it past that.
pub fn finish(mut child: Child, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} ran past {limit:?}; stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = finish(cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}")), Duration::from_secs(60), what);
    String::from_utf8(out.stdout).unwrap()
}

pub fn installed(prog: &str) -> bool {
    let ok = Path::new("/usr/bin").join(prog).exists();
    if !ok {
        eprintln!("SKIP: /usr/bin/{prog} is not installed (Debian's pvm-examples / netpipe-pvm)");
    }
    ok
}

/// The same program under Debian's PVM: a pvmd of its own (in a scratch `PVM_TMP`) that finds
/// programs in /usr/bin (`prog`: a name there, or a whole path). `None` where Debian's pvmd is not installed.
pub fn under_debian(name: &str, prog: &str) -> Option<String> {
    under_debian_with_input(name, prog, "")
}

/// As [`under_debian`], with `input` on the program's stdin. Debian's group server (pvmgs)
/// is found in /usr/lib/pvm3/lib.
pub fn under_debian_with_input(name: &str, prog: &str, input: &str) -> Option<String> {
    if !Path::new("/usr/bin/pvmd").exists() {
        return None;
    }
    let tmp = std::env::temp_dir().join(format!("bb-pvm-debian-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("hostfile"), "* ep=/usr/bin:/usr/lib/pvm3/lib\n").unwrap();
    let env = |c: &mut Command| {
        c.env("PVM_ROOT", "/usr/lib/pvm3").env("PVM_TMP", &tmp).env("PVM_ALLOW_ROOT", "1").current_dir(&tmp);
    };
    let mut d = Command::new("/usr/bin/pvmd");
    env(&mut d);
    let pvmd = d.arg("hostfile").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
    // Ended however this function ends (a timeout panics in `finish`).
    let _pvmd = KillOnDrop(pvmd);
    // SAFETY: getuid cannot fail.
    let addr = tmp.join(format!("pvmd.{}", unsafe { libc::getuid() }));
    let start = Instant::now();
    while !addr.exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = Command::new(Path::new("/usr/bin").join(prog));
    env(&mut c);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = c.spawn().ok().map(|mut ch| {
        use std::io::Write;
        let _ = ch.stdin.take().unwrap().write_all(input.as_bytes());
        finish(ch, Duration::from_secs(60), prog)
    });
    drop(_pvmd);
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("{name}: compared with Debian's PVM");
    out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A child process that is killed and reaped when this goes out of scope.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn hostname() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Builds `tests/c/<name>.c` against our header and library.
pub fn build_c(vm: &Vm, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let prog = vm.scratch.join(name);
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&prog)
        .arg(&src)
        .arg("-I")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(vm.scratch.join("lib/libpvm3.so.3"))
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    prog
}

/// Builds `tests/c/<name>.c` against Debian's own header and library (`None` where
/// Debian's pvm-dev is not installed).
pub fn build_c_debian(vm: &Vm, name: &str) -> Option<PathBuf> {
    if !Path::new("/usr/include/pvm3.h").exists() {
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let prog = vm.scratch.join(format!("{name}-debian"));
    let cc = Command::new("cc").arg("-o").arg(&prog).arg(&src).arg("-lpvm3").output().unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    Some(prog)
}

/// Output with caught lines, sorted by where each came from: the lines of each `[t40002] `
/// prefix in order, under its tid (`t40002`), and every other line in order under "". What
/// stays the same however the tasks' lines interleave.
pub fn by_source(out: &str) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in out.lines() {
        let (key, text) = match line.strip_prefix("[t").and_then(|r| r.split_once("] ")) {
            Some((tid, text)) => (format!("t{tid}"), text),
            None => (String::new(), line),
        };
        m.entry(key).or_default().push(text.to_string());
    }
    m
}

/// The map `by_source` makes, written out: (source, its lines).
pub fn sources(list: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    list.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect()
}

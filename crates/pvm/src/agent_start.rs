//! How a task finds its host agent: it connects to the agent's socket, and starts `bbpvmd`
//! when none answers (the program is `$BB_PVMD`, else found beside this library or on
//! `PATH`).

use std::ffi::c_void;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::PvmError;
use crate::place;
use crate::task::START_WAIT;

/// Connects to the host agent, starting it when none answers.
pub(crate) fn connect_or_start_agent(dir: &Path) -> Result<UnixStream, PvmError> {
    let sock = place::agent_socket(dir);
    if let Ok(s) = UnixStream::connect(&sock) {
        return Ok(s);
    }
    let exe = agent_program().ok_or_else(|| {
        crate::state::say(format_args!(
            "libpvm: cannot find bbpvmd (the host agent): set BB_PVMD or install it beside the library"
        ));
        PvmError::CantStart
    })?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("--dir").arg(dir).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    match std::env::var_os("BB_PVM_LOG") {
        Some(log) => {
            let f = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(|_| PvmError::CantStart)?;
            cmd.stderr(f);
        }
        None => {
            cmd.stderr(std::process::Stdio::null());
        }
    }
    // bbpvmd detaches itself: this returns as soon as its first process has forked.
    cmd.status().map_err(|_| PvmError::CantStart)?;
    let start = Instant::now();
    while start.elapsed() < START_WAIT {
        if let Ok(s) = UnixStream::connect(&sock) {
            // The socket can exist a moment before the secret beside it is readable.
            if place::secret_file(dir).exists() {
                return Ok(s);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    crate::state::say(format_args!("libpvm: bbpvmd did not start in {}s ({})", START_WAIT.as_secs(), exe.display()));
    Err(PvmError::CantStart)
}

/// The agent program: `$BB_PVMD`, else `bbpvmd` in the `bin` folder beside this library's
/// `lib` folder (dist/), else on `PATH`.
fn agent_program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BB_PVMD") {
        return Some(PathBuf::from(p));
    }
    // SAFETY: a zeroed Dl_info is valid output space; dladdr reads only the address given.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr with an address inside this object.
    if unsafe { libc::dladdr(agent_program as *const c_void, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: dladdr returned a NUL-terminated file name.
        let lib = PathBuf::from(unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned());
        if let Some(p) = lib.parent().and_then(Path::parent).map(|d| d.join("bin/bbpvmd")) {
            if p.exists() {
                return Some(p);
            }
        }
        if let Some(p) = lib.parent().map(|d| d.join("bbpvmd")) {
            if p.exists() {
                return Some(p);
            }
        }
    }
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join("bbpvmd")).find(|p| p.exists())
}

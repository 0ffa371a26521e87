//! Where a host's PVM lives: the agent's folder, its sockets and secret, and PVM's tid layout.
//!
//! The folder is `$BB_PVM_DIR`, else `/tmp/bbpvm.<uid>` (pvmd's is `/tmp/pvmd.<uid>`), mode
//! 0700. In it: `agent` (the agent's socket), `secret` (mode 0600: 32 hex digits every
//! connection starts by proving), `lock` (held by the live agent), and one socket per task,
//! `t<tid in hex>`, on which the task accepts messages from other tasks.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::wire::{Frame, FrameBuffer, WireError};

/// PVM's tid layout (Debian's 3.4.6): bits 18..30 the host, bits 0..17 the task on it; the
/// host's agent has local part 0. The first host (whose agent started the virtual machine)
/// is host 1, as under pvmd; hosts added later are 2, 3, ...
pub const HOST_TID: i32 = 1 << 18;
pub const TID_LOCAL_MASK: i32 = (1 << 18) - 1;
/// The most hosts a virtual machine holds (the host field's 12 bits).
pub const MAX_HOSTS: i32 = 4095;

/// The architecture name this host reports (`pvm_config`, `PvmTaskArch`).
pub const ARCH: &str = "LINUX64";

/// The environment variable that names the folder.
pub const DIR_ENV: &str = "BB_PVM_DIR";
/// The tid the agent gave a task it spawned (read once by the child's library).
pub const TID_ENV: &str = "BB_PVM_TID";
/// A spawned task's output destination, inherited from its spawner: `tid,tag,context`
/// (the child's `PvmSelfOutput*` options, and the default of its `PvmOutput*`).
pub const OUTPUT_ENV: &str = "BB_PVM_OUTPUT";

pub fn dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        // SAFETY: getuid cannot fail.
        _ => PathBuf::from(format!("/tmp/bbpvm.{}", unsafe { libc::getuid() })),
    }
}

pub fn agent_socket(dir: &Path) -> PathBuf {
    dir.join("agent")
}

pub fn task_socket(dir: &Path, tid: i32) -> PathBuf {
    dir.join(format!("t{tid:x}"))
}

pub fn secret_file(dir: &Path) -> PathBuf {
    dir.join("secret")
}

/// Whether `tid` is shaped like a task (of any host: not an agent, not negative).
pub fn is_task_tid(tid: i32) -> bool {
    tid > 0 && host_of(tid) != 0 && tid & TID_LOCAL_MASK != 0
}

/// The tid of the host (its agent) that `tid` lives on.
pub fn host_of(tid: i32) -> i32 {
    tid & !TID_LOCAL_MASK
}

/// Writes one frame on a blocking stream.
pub fn write_frame(s: &mut impl Write, f: &Frame) -> std::io::Result<()> {
    s.write_all(&f.encode())?;
    s.flush()
}

/// Reads one frame from a blocking stream; `None` at a clean end of stream.
pub fn read_frame(s: &mut impl Read, fb: &mut FrameBuffer) -> std::io::Result<Option<Frame>> {
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match fb.next_frame() {
            Ok(Some(f)) => return Ok(Some(f)),
            Ok(None) => {}
            Err(WireError(e)) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        fb.push(&chunk[..n]);
    }
}

/// 32 hex digits from the kernel's random source.
pub fn new_secret() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

//! Starting one rank: its environment, its PMI socket, its pipes, and the ties that make sure
//! it never outlives the job.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What the ranks of the job on one host share.
pub struct JobInfo<'a> {
    pub program: &'a Path,
    pub args: &'a [OsString],
    pub size: usize,
    pub jobid: &'a str,
    /// The job secret, hex (`BB_JOB_SECRET`): it authenticates the ranks' TCP connections.
    pub secret: &'a str,
    /// This host's name as given to bbrun (`BB_HOST`) and its index in the job (`BB_NODE_ID`).
    pub host: &'a str,
    pub node_id: usize,
    /// Hosts the job spans (`BB_NNODES`).
    pub nnodes: usize,
    /// Ranks of the job on this host (`BB_LOCAL_SIZE`).
    pub local_size: usize,
    /// Variables passed by the launcher (to an agent's ranks), set over our own environment.
    pub env: &'a [(OsString, OsString)],
    /// Where the ranks start; `None`: where we are.
    pub cwd: Option<&'a Path>,
    /// Started by a spawn (MPI_Comm_spawn): `PMI_SPAWNED=1`, and no stdin.
    pub spawned: bool,
}

/// A started rank as the event loop holds it.
pub struct Spawned {
    pub child: Child,
    /// Our end of the rank's PMI socket.
    pub pmi: UnixStream,
}

/// `LD_LIBRARY_PATH` with our MPI library's folder first, when bbrun sits in an installation
/// (`<prefix>/bin/bbrun` beside `<prefix>/lib/libmpich.so.12`): a program built against MPICH
/// then loads Billboard's library instead, unchanged. Worked out once per job.
fn library_path() -> Option<std::ffi::OsString> {
    static PATH: std::sync::OnceLock<Option<std::ffi::OsString>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        let lib = exe.parent()?.parent()?.join("lib");
        if !lib.join("libmpich.so.12").exists() {
            return None;
        }
        let mut dirs = vec![lib];
        dirs.extend(std::env::var_os("LD_LIBRARY_PATH").iter().flat_map(std::env::split_paths));
        std::env::join_paths(dirs).ok()
    })
    .clone()
}

/// Starts world rank `rank`, the `local_rank`th on this host: its own process group (so a signal reaches everything it started),
/// `PR_SET_PDEATHSIG(SIGKILL)` (so it dies if bbrun dies), stdin piped for rank 0 and
/// `/dev/null` for the others, stdout and stderr piped, and the PMI environment.
pub fn spawn_rank(job: &JobInfo<'_>, rank: usize, local_rank: usize) -> io::Result<Spawned> {
    let (ours, theirs) = UnixStream::pair()?;
    // The rank's end must not land on 0, 1 or 2, which the spawn overwrites with the pipes
    // (possible only when bbrun itself started with one of those closed): dup() gives >= 3.
    let theirs: OwnedFd = if theirs.as_raw_fd() < 3 { theirs.try_clone()?.into() } else { theirs.into() };
    let pmi_fd = theirs.as_raw_fd();
    let parent = std::process::id() as libc::pid_t;
    let binding = match crate::bind::policy(job.env).map_err(io::Error::other)? {
        Some(unit) => Some(crate::bind::processors_for(unit, local_rank)?),
        None => None,
    };

    let mut cmd = Command::new(job.program);
    cmd.args(job.args).envs(job.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = job.cwd {
        cmd.current_dir(dir);
    }
    cmd.env("PMI_FD", pmi_fd.to_string())
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", job.size.to_string())
        .env("PMI_JOBID", job.jobid)
        .env("BB_JOBID", job.jobid)
        .env("BB_LOCAL_RANK", local_rank.to_string())
        .env("BB_LOCAL_SIZE", job.local_size.to_string())
        .env("BB_HOST", job.host)
        .env("BB_NODE_ID", job.node_id.to_string())
        // How many hosts the job spans: with one, the routes need no network exchange.
        .env("BB_NNODES", job.nnodes.to_string())
        .env(billboard::transport::tcp::handshake::SECRET_ENV, job.secret)
        // A bbrun started from inside another job must not pass that job's server on.
        .env_remove("PMI_PORT")
        .env_remove("PMI_ID")
        .env_remove("PMI_SPAWNED")
        .stdin(if rank == 0 && !job.spawned { Stdio::piped() } else { Stdio::null() });
    if job.spawned {
        cmd.env("PMI_SPAWNED", "1");
    }
    if let Some(path) = library_path() {
        cmd.env("LD_LIBRARY_PATH", path);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe system calls (sigprocmask, prctl, getppid, fcntl, sched_setaffinity); it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // bbrun blocks the signals it reads through its signalfd; a blocked mask survives
            // exec, and a rank with SIGTERM blocked would ignore our tear-down.
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // bbrun may have died before the prctl took effect: then no signal will come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            // The socket was created close-on-exec so that no other rank inherits it; this
            // rank must.
            if libc::fcntl(pmi_fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(set) = &binding {
                rustix::thread::sched_setaffinity(None, set)?;
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(theirs);
    Ok(Spawned { child, pmi: ours })
}

/// Finds the program as `exec` will: a name with a `/` is a path, anything else is looked up
/// in `PATH`. Errors say what is wrong in words, with an exit code as a shell would give
/// (127 not found, 126 not executable).
pub fn find_program(program: &Path) -> Result<PathBuf, (String, i32)> {
    find_program_in(program, std::env::var_os("PATH").as_deref())
}

/// [`find_program`] with the `PATH` the rank will have (shared with the library, whose spawn
/// checks commands itself under Hydra).
pub use billboard::bootstrap::program::find_program_in;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_like_exec_does() {
        assert!(find_program(Path::new("sh")).is_ok());
        assert!(find_program(Path::new("/bin/sh")).is_ok());
        let (msg, code) = find_program(Path::new("no-such-program-bbrun")).unwrap_err();
        assert!(msg.contains("'no-such-program-bbrun'") && msg.contains("not found"), "{msg}");
        assert_eq!(code, 127);
        let (msg, code) = find_program(Path::new("/no/such/prog")).unwrap_err();
        assert!(msg.contains("/no/such/prog"), "{msg}");
        assert_eq!(code, 127);
        let (_, code) = find_program(Path::new("/etc/passwd")).unwrap_err();
        assert_eq!(code, 126);
        let (msg, _) = find_program(Path::new("/tmp")).unwrap_err();
        assert!(msg.contains("directory"), "{msg}");
    }
}

//! The host agent's life (`agent.rs`): taking its folder (mode 0700, a lock, the secret, the
//! socket), accepting task connections, and leaving (idle or halted) without a file left.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use billboard::tunables::Tunable;

use super::{hosts, pipe, Agent, State};
use crate::groups::Groups;
use crate::mailbox::Mailbox;
use crate::place::{self, HOST_TID};
use crate::wire::FrameBuffer;

/// Runs the agent for `dir` until it is idle or halted. Returns at once (Ok) if another
/// agent already serves the folder.
pub fn run(dir: &Path) -> std::io::Result<()> {
    serve_folder(dir, None)
}

/// What an added host's agent was told by the first (`Frame::Join`).
pub(crate) struct Joining {
    pub secret: String,
    pub host_tid: i32,
    /// What came on stdin after the `Join` (the link's frames so far).
    pub frames: FrameBuffer,
}

/// Serves `dir`: as the first agent of a virtual machine (`joining` None: it makes the
/// secret, and leaves when it has neither tasks nor other hosts), or as an added host's
/// (until halted or the first is gone).
pub(super) fn serve_folder(dir: &Path, joining: Option<Joining>) -> std::io::Result<()> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::symlink_metadata(dir)?;
            if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder of this user with mode 0700: refusing to use it",
                    dir.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(dir.join("lock"))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return match joining {
            None => Ok(()),
            Some(_) => Err(std::io::Error::other("another agent serves this folder")),
        };
    }
    let (secret, host_tid) = match &joining {
        Some(j) => (j.secret.clone(), j.host_tid),
        None => (place::new_secret()?, HOST_TID),
    };
    let tmp = dir.join("secret.tmp");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?
        .write_all(secret.as_bytes())?;
    std::fs::rename(&tmp, place::secret_file(dir))?;
    let sock = place::agent_socket(dir);
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock)?;
    listener.set_nonblocking(true)?;

    let agent = Arc::new(Agent {
        dir: dir.to_path_buf(),
        secret,
        hostname: hostname(),
        host_tid,
        state: Mutex::new(State {
            tasks: BTreeMap::new(),
            last_local: HashMap::new(),
            notifies: Vec::new(),
            writers: HashMap::new(),
            hosts: Vec::new(),
            host_notifies: Vec::new(),
            spawns_waiting: HashMap::new(),
            clocks_waiting: HashMap::new(),
            next_id: 0,
            next_host: 0,
            up: joining.is_some().then(|| pipe(std::io::stdout())),
            catching: Vec::new(),
            groups: Groups::default(),
            mailbox: Mailbox::default(),
            connections: 0,
            idle_since: Instant::now(),
            halting: false,
        }),
    });
    let first = joining.is_none();
    if let Some(j) = joining {
        hosts::serve_first(&agent, j.frames);
    }
    let linger = Duration::from_millis(LINGER_MS.get() as u64);
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nonblocking(false);
                agent.lock().connections += 1;
                let a = Arc::clone(&agent);
                std::thread::spawn(move || {
                    Arc::clone(&a).serve(s);
                    let mut st = a.lock();
                    st.connections -= 1;
                    st.idle_since = Instant::now();
                });
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        {
            let st = agent.lock();
            // The added hosts are the machine's as pvmd's are: they stay until deleted or halted.
            let idle =
                st.tasks.is_empty() && st.hosts.is_empty() && st.connections == 0 && st.idle_since.elapsed() >= linger;
            if st.halting || (first && idle) {
                break;
            }
        }
        let mut pfd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 50) };
    }
    // Leaving: the socket first, so that no new task finds a dying agent.
    let _ = std::fs::remove_file(&sock);
    let halting = agent.lock().halting;
    if halting {
        std::thread::sleep(Duration::from_millis(200));
        let st = agent.lock();
        for t in st.tasks.values() {
            if t.pid > 0 && t.host == host_tid {
                // SAFETY: kill(2) on a pid we recorded.
                unsafe { libc::kill(t.pid, libc::SIGKILL) };
            }
        }
    }
    hosts::let_hosts_go(&agent);
    let tids: Vec<i32> = agent.lock().tasks.keys().copied().collect();
    for tid in tids {
        let _ = std::fs::remove_file(place::task_socket(dir, tid));
    }
    let _ = std::fs::remove_file(place::secret_file(dir));
    let _ = std::fs::remove_file(dir.join("lock"));
    let _ = std::fs::remove_dir(dir);
    drop(lock);
    Ok(())
}

pub static LINGER_MS: Tunable = Tunable::new(
    "BB_PVM_LINGER_MS",
    2000,
    "PVM host agent: ms it waits with no task and no added host before it leaves (long enough for a program's next run from a script)",
);

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Makes this process a daemon: returns in a grandchild detached from the caller's session
/// (the caller's library does not wait for it), `Ok(false)` in the original process.
pub fn daemonize() -> std::io::Result<bool> {
    // SAFETY: called before any thread exists; the child only continues single-threaded.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: setsid/fork in the single-threaded child.
            unsafe { libc::setsid() };
            match unsafe { libc::fork() } {
                -1 => std::process::exit(1),
                0 => Ok(true),
                _ => std::process::exit(0),
            }
        }
        pid => {
            let mut st = 0;
            // SAFETY: reaps the first child, which exits at once.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            Ok(false)
        }
    }
}

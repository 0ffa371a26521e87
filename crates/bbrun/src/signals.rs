//! Signals as readable events: SIGCHLD (a rank changed state) and the signals we forward
//! (SIGINT, SIGTERM, SIGHUP) are blocked and read from a `signalfd`, so the event loop learns
//! of them from the same `poll` that watches the PMI sockets and output pipes. No handler runs
//! asynchronously and no wake-up can be lost between a check and the `poll`.
//!
//! The blocked mask is inherited across `fork` and `exec`, so `spawn.rs` clears it in each
//! child before `exec`: ranks start with every signal unblocked.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

/// The signals bbrun passes on to every rank.
pub const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks SIGCHLD and the forwarded signals for this (single-threaded) process and opens a
    /// non-blocking signalfd for them.
    pub fn open() -> io::Result<SignalFd> {
        // SAFETY: sigset_t is plain data; sigemptyset initializes it before any other use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t owned by this frame for every call below.
        unsafe {
            libc::sigemptyset(&mut set);
            for sig in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
                libc::sigaddset(&mut set, *sig);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: `set` is initialized; -1 asks for a new descriptor.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: signalfd just returned this descriptor and nothing else owns it.
        Ok(SignalFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The pending signals, in arrival order (several of one kind may read as one).
    pub fn read_all(&self) -> Vec<i32> {
        let mut signals = Vec::new();
        loop {
            // SAFETY: signalfd_siginfo is plain data, filled by the read below.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: `info` is a writable buffer of exactly `size` bytes.
            let n = unsafe { libc::read(self.fd_raw(), (&mut info as *mut libc::signalfd_siginfo).cast(), size) };
            if n as usize != size {
                // EAGAIN (nothing more pending) ends the loop; EINTR cannot happen as the fd
                // never blocks.
                return signals;
            }
            signals.push(info.ssi_signo as i32);
        }
    }

    fn fd_raw(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `SIGKILL`-style name of a signal number, for messages.
pub fn name(sig: i32) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    known.iter().find(|(n, _)| *n == sig).map_or_else(|| format!("signal {sig}"), |(_, s)| s.to_string())
}

/// Sends `sig` to a rank's whole process group (the rank and whatever it started), ignoring a
/// group that is already gone.
pub fn kill_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: kill has no memory effects; a negative pid addresses the process group.
        unsafe { libc::kill(-pgid, sig) };
    }
}

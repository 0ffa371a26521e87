//! bbrun's stdin goes to rank 0 (the others read `/dev/null`), as with `mpiexec`.
//!
//! It is copied through a pipe rather than inherited: rank 0 runs in its own process group, and
//! a background process group reading the terminal would be stopped by SIGTTIN. The copy never
//! blocks: data rank 0 has not taken yet waits here, and stdin is not read again until it has.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::ChildStdin;

use crate::rank::set_nonblocking;

pub struct StdinForward {
    /// Rank 0's stdin; `None` once stdin ended or rank 0 stopped reading.
    pipe: Option<ChildStdin>,
    pending: Vec<u8>,
    /// Our stdin has more to give.
    source_open: bool,
}

impl StdinForward {
    pub fn new(pipe: Option<ChildStdin>) -> StdinForward {
        // A pipe that cannot be made non-blocking could stall the launcher: rank 0 then gets
        // end-of-file instead.
        let pipe = pipe.filter(|p| set_nonblocking(p.as_fd()).is_ok());
        StdinForward { source_open: pipe.is_some() && may_read_stdin(), pipe, pending: Vec::new() }
    }

    /// Poll our stdin (fd 0) for reading?
    pub fn wants_read(&self) -> bool {
        self.source_open && self.pipe.is_some() && self.pending.is_empty()
    }

    /// Rank 0's pipe, when data waits for it to drain.
    pub fn pipe_waiting(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().filter(|_| !self.pending.is_empty()).map(|p| p.as_fd())
    }

    /// Our stdin is readable (or at its end, or invalid: `closed`).
    pub fn on_readable(&mut self, closed: bool) {
        let mut chunk = [0u8; 16 * 1024];
        let n = if closed {
            0
        } else {
            match io::stdin().lock().read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
                Err(_) => 0,
            }
        };
        if n == 0 {
            self.source_open = false;
            // End of input reaches rank 0 as the pipe closing.
            self.pipe = None;
            return;
        }
        self.pending.extend_from_slice(&chunk[..n]);
        self.on_writable();
    }

    /// Rank 0's pipe can take more.
    pub fn on_writable(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else { return };
        while !self.pending.is_empty() {
            match pipe.write(&self.pending) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // Rank 0 closed its stdin or exited: drop the rest, stop reading ours.
                    self.pipe = None;
                    self.pending.clear();
                    self.source_open = false;
                    return;
                }
            }
        }
    }

    /// Rank 0 is gone: nothing more to forward.
    pub fn close(&mut self) {
        self.pipe = None;
        self.pending.clear();
        self.source_open = false;
    }
}

/// Reading a terminal from a background process group stops us with SIGTTIN; in that case
/// (`bbrun ... &` from an interactive shell) rank 0 gets no input rather than a stopped job.
fn may_read_stdin() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query the process and descriptor 0.
    unsafe { libc::isatty(0) == 0 || libc::tcgetpgrp(0) == libc::getpgrp() }
}

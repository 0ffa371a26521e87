//! bbrun's stdin goes to rank 0 (the others read `/dev/null`), as with `mpiexec`, on whichever
//! host rank 0 runs.
//!
//! Two halves: [`StdinSource`] reads the launcher's fd 0, [`Rank0Pipe`] writes rank 0's pipe
//! (in the launcher, or in the agent of rank 0's host). One chunk is in flight at a time: the
//! source reads the next only when the pipe reports the last one taken (`StdinTaken`), so a
//! rank 0 that reads slowly holds bbrun's stdin back instead of filling memory on any host.
//!
//! Rank 0's stdin is a pipe rather than inherited: rank 0 runs in its own process group, and a
//! background process group reading the terminal would be stopped by SIGTTIN.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::ChildStdin;

use crate::pipes::set_nonblocking;

/// Bytes read from our stdin at a time.
const CHUNK: usize = 16 * 1024;

/// The launcher's stdin.
pub struct StdinSource {
    /// Our stdin has more to give and rank 0 still takes it.
    open: bool,
    /// A chunk was handed on and its `StdinTaken` has not come back.
    in_flight: bool,
}

impl StdinSource {
    pub fn new() -> StdinSource {
        StdinSource { open: may_read_stdin(), in_flight: false }
    }

    /// Poll our stdin (fd 0) for reading?
    pub fn wants_read(&self) -> bool {
        self.open && !self.in_flight
    }

    /// Reads what stdin has (it polled readable, or `invalid`). `None`: stdin ended, and rank
    /// 0's stdin must be closed.
    pub fn read(&mut self, invalid: bool) -> Option<Vec<u8>> {
        let mut chunk = vec![0u8; CHUNK];
        let n = if invalid {
            0
        } else {
            loop {
                match io::stdin().lock().read(&mut chunk) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break 0,
                }
            }
        };
        if n == 0 {
            self.open = false;
            return None;
        }
        chunk.truncate(n);
        self.in_flight = true;
        Some(chunk)
    }

    /// Rank 0's pipe took the last chunk.
    pub fn taken(&mut self) {
        self.in_flight = false;
    }

    /// Rank 0 is gone: nothing more to forward.
    pub fn close(&mut self) {
        self.open = false;
    }
}

/// Rank 0's stdin pipe, written without blocking.
pub struct Rank0Pipe {
    /// `None` once closed, or once rank 0 stopped reading.
    pipe: Option<ChildStdin>,
    pending: Vec<u8>,
}

impl Rank0Pipe {
    pub fn new(pipe: Option<ChildStdin>) -> Rank0Pipe {
        // A pipe that cannot be made non-blocking could stall us: rank 0 then gets end-of-file.
        let pipe = pipe.filter(|p| set_nonblocking(p.as_fd()).is_ok());
        Rank0Pipe { pipe, pending: Vec::new() }
    }

    /// Queues `data`; true when the pipe took all of it at once.
    pub fn push(&mut self, data: &[u8]) -> bool {
        if self.pipe.is_none() {
            return false;
        }
        self.pending.extend_from_slice(data);
        self.on_writable()
    }

    /// The pipe, when data waits for it to drain.
    pub fn waiting(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().filter(|_| !self.pending.is_empty()).map(|p| p.as_fd())
    }

    /// Writes what the pipe takes; true when all pending data has gone. A rank 0 that closed
    /// its stdin never reports the chunk taken, so the source stops reading.
    pub fn on_writable(&mut self) -> bool {
        let Some(pipe) = self.pipe.as_mut() else { return false };
        while !self.pending.is_empty() {
            match pipe.write(&self.pending) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(_) => {
                    self.close();
                    return false;
                }
            }
        }
        true
    }

    /// End of input reaches rank 0 as the pipe closing.
    pub fn close(&mut self) {
        self.pipe = None;
        self.pending.clear();
    }
}

/// Reading a terminal from a background process group stops us with SIGTTIN; in that case
/// (`bbrun ... &` from an interactive shell) rank 0 gets no input rather than a stopped job.
fn may_read_stdin() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query the process and descriptor 0.
    unsafe { libc::isatty(0) == 0 || libc::tcgetpgrp(0) == libc::getpgrp() }
}

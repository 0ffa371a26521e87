//! One running rank as the launcher sees it: its process, its PMI connection and its two
//! output streams. Reads never block: a rank's children may hold its pipes and socket open
//! after the rank itself has gone, and the launcher must not wait on them.

use crate::pipes::set_nonblocking;
use crate::spawn::Spawned;
use billboard::bootstrap::pmi::wire::MAX_LINE;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, ExitStatus};

/// Bytes taken from a pipe or socket per read.
const READ_CHUNK: usize = 64 * 1024;

pub struct Rank {
    /// The rank's number in the job.
    pub world: usize,
    pub pid: i32,
    child: Child,
    pub status: Option<ExitStatus>,
    pub pmi: Option<PmiConn>,
    pub stdout: Option<OutputStream>,
    pub stderr: Option<OutputStream>,
}

/// The launcher's end of a rank's PMI socket.
pub struct PmiConn {
    sock: UnixStream,
    incoming: Vec<u8>,
    /// Replies not yet accepted by the socket (a rank that does not read its replies must not
    /// stall the launcher, so writes never block).
    outgoing: Vec<u8>,
}

/// One of a rank's output pipes. Bytes go up as they come; the launcher splits them into
/// lines for every host alike.
pub struct OutputStream {
    pipe: File,
}

/// What a read from a PMI connection produced.
pub enum PmiInput {
    Lines(Vec<String>),
    /// A line longer than the protocol allows: the peer is broken.
    Overlong,
}

impl Rank {
    /// Wraps started world rank `world`.
    pub fn new(world: usize, mut spawned: Spawned) -> io::Result<Rank> {
        let stream = |fd: OwnedFd| -> io::Result<OutputStream> {
            set_nonblocking(fd.as_fd())?;
            Ok(OutputStream { pipe: File::from(fd) })
        };
        let child = &mut spawned.child;
        let stdout = child.stdout.take().map(|p| stream(p.into())).transpose()?;
        let stderr = child.stderr.take().map(|p| stream(p.into())).transpose()?;
        Ok(Rank {
            world,
            pid: spawned.child.id() as i32,
            child: spawned.child,
            status: None,
            pmi: Some(PmiConn { sock: spawned.pmi, incoming: Vec::new(), outgoing: Vec::new() }),
            stdout,
            stderr,
        })
    }

    /// Rank 0's stdin pipe, for the stdin forwarder to own.
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Reaps the rank if it has exited; returns its status the first time.
    pub fn try_reap(&mut self) -> Option<ExitStatus> {
        if self.status.is_some() {
            return None;
        }
        let status = self.child.try_wait().ok().flatten()?;
        self.status = Some(status);
        Some(status)
    }

    pub fn running(&self) -> bool {
        self.status.is_none()
    }

    /// Whether both output streams have ended.
    pub fn outputs_closed(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none()
    }
}

impl PmiConn {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    pub fn wants_write(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Reads what has arrived and splits off complete lines. `Ok(None)` means the rank closed
    /// its end (it exited or finalized and closed).
    pub fn read_lines(&mut self) -> io::Result<Option<PmiInput>> {
        let mut closed = false;
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            match recv_nonblocking(self.sock.as_fd(), &mut chunk) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => self.incoming.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => {
                    closed = true;
                    break;
                }
                Err(e) => return Err(e),
            }
            if self.incoming.len() > 4 * MAX_LINE {
                break;
            }
        }
        let mut lines = Vec::new();
        while let Some(end) = self.incoming.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.incoming.drain(..=end).collect();
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        if self.incoming.len() > MAX_LINE {
            return Ok(Some(PmiInput::Overlong));
        }
        if closed && lines.is_empty() {
            return Ok(None);
        }
        // Lines that came just before the close are still handled (an abort, say); the close
        // shows up on the next read.
        Ok(Some(PmiInput::Lines(lines)))
    }

    /// Queues a reply and writes as much as the socket takes now.
    pub fn send(&mut self, line: &str) -> io::Result<()> {
        self.outgoing.extend_from_slice(line.as_bytes());
        self.flush()
    }

    /// Writes queued replies without blocking.
    pub fn flush(&mut self) -> io::Result<()> {
        while !self.outgoing.is_empty() {
            // SAFETY: `outgoing` is a readable buffer of its length for the whole call.
            let n = unsafe {
                libc::send(
                    self.sock.as_raw_fd(),
                    self.outgoing.as_ptr().cast(),
                    self.outgoing.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                return match err.kind() {
                    io::ErrorKind::WouldBlock => Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(err),
                };
            }
            self.outgoing.drain(..n as usize);
        }
        Ok(())
    }
}

impl OutputStream {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.pipe.as_fd()
    }

    /// Reads what is there (one read, or until the pipe is empty) and appends it to `out`.
    /// Returns false at end of stream.
    pub fn pump(&mut self, out: &mut Vec<u8>, until_empty: bool) -> bool {
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            match self.pipe.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
            if !until_empty {
                return true;
            }
        }
    }
}

/// Writes forwarded output to our stdout or stderr. A reader that went away (EPIPE) must not
/// stop the job, so write errors are dropped.
pub fn forward(to_stderr: bool, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let _ = if to_stderr {
        io::stderr().lock().write_all(bytes)
    } else {
        let mut out = io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush())
    };
}

/// `recv(MSG_DONTWAIT)`: a non-blocking read that leaves the socket itself blocking.
fn recv_nonblocking(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a writable buffer of buf.len() bytes for the whole call.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

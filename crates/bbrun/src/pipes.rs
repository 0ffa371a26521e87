//! Non-blocking reads and writes on pipes: the launcher and the agents never wait on one peer
//! while others need serving.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd};

/// Bytes taken from a pipe per read.
const READ_CHUNK: usize = 64 * 1024;

pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes as much of `pending` as the (non-blocking) writer takes now and drops what went.
/// An error means the reader is gone.
pub fn write_pending(writer: &mut impl Write, pending: &mut Vec<u8>) -> io::Result<()> {
    let mut written = 0;
    let result = loop {
        if written == pending.len() {
            break Ok(());
        }
        match writer.write(&pending[written..]) {
            Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    pending.drain(..written);
    result
}

/// What one read of a non-blocking pipe gave.
pub enum Chunk {
    Data(Vec<u8>),
    /// Nothing now.
    Empty,
    /// End of file, or an error that ends the stream the same way.
    End,
}

/// One read of up to [`READ_CHUNK`] bytes.
pub fn read_some(reader: &mut impl Read) -> Chunk {
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        return match reader.read(&mut chunk) {
            Ok(0) => Chunk::End,
            Ok(n) => {
                chunk.truncate(n);
                Chunk::Data(chunk)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Chunk::Empty,
            Err(_) => Chunk::End,
        };
    }
}

/// Reads and writes a descriptor directly. The agent's stdin and stdout carry binary frames:
/// `std::io::Stdout` is line-buffered (it would hold a frame back until a `\n` byte) and
/// `Stdin` buffers reads where `poll` cannot see them.
pub struct RawFd<'a>(pub BorrowedFd<'a>);

impl Read for RawFd<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        rustix::io::read(self.0, buf).map_err(io::Error::from)
    }
}

impl Write for RawFd<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        rustix::io::write(self.0, buf).map_err(io::Error::from)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The sources whose poll entries reported events, with those events (one `poll` loop's
/// dispatch list; the entries' borrows end here, so handlers may use what they watched).
pub fn ready<S>(
    fds: &[rustix::event::PollFd<'_>],
    sources: impl IntoIterator<Item = S>,
) -> Vec<(S, rustix::event::PollFlags)> {
    fds.iter().zip(sources).filter(|(fd, _)| !fd.revents().is_empty()).map(|(fd, s)| (s, fd.revents())).collect()
}

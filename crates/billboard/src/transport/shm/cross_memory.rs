//! Cross-memory copies between two processes of one host (`process_vm_readv/writev`): the
//! single copy of large messages (the channel's `read_remote`, `write_remote`) and the MPI
//! library's put and get on windows in the program's own memory. Peers allow them with
//! `prctl(PR_SET_PTRACER)` at start (`connect`); where the kernel still refuses (EPERM under a
//! strict Yama or seccomp, ENOSYS), callers fall back to a copy through shared memory.

use std::io;

/// Most I/O vectors one `process_vm_readv` takes on each side (Linux's UIO_MAXIOV).
pub const IOV_MAX: usize = 1024;

/// Which way [`copy_iov`] moves bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// From the other process into ours (`process_vm_readv`).
    Read,
    /// From ours into the other process (`process_vm_writev`).
    Write,
}

impl Direction {
    fn call(self) -> &'static str {
        match self {
            Direction::Read => "process_vm_readv",
            Direction::Write => "process_vm_writev",
        }
    }
}

/// `iov` without its first `n` bytes: the vectors filled are dropped, a partly filled one
/// shortened.
fn advance_iovecs(mut iov: &mut [libc::iovec], mut n: usize) -> &mut [libc::iovec] {
    while let Some(first) = iov.first_mut() {
        if n < first.iov_len {
            first.iov_base = first.iov_base.cast::<u8>().wrapping_add(n).cast();
            first.iov_len -= n;
            break;
        }
        n -= first.iov_len;
        iov = &mut iov[1..];
    }
    iov
}

/// Moves bytes between several pieces of our memory (`local`) and several pieces of process
/// `pid`'s (`remote`), both consumed as it goes, in calls of at most [`IOV_MAX`] vectors a
/// side, looping over partial transfers. The two lists must cover the same number of bytes.
///
/// # Safety
/// The local pieces are writable (`Read`) or readable (`Write`) for their lengths; the kernel
/// checks the remote ones.
pub unsafe fn copy_iov(
    pid: libc::pid_t,
    mut local: &mut [libc::iovec],
    mut remote: &mut [libc::iovec],
    dir: Direction,
) -> io::Result<()> {
    loop {
        // Empty pieces first: a call with nothing to move moves nothing, which is no error.
        local = advance_iovecs(local, 0);
        remote = advance_iovecs(remote, 0);
        if local.is_empty() || remote.is_empty() {
            break;
        }
        let (lb, rb) = (local.len().min(IOV_MAX) as libc::c_ulong, remote.len().min(IOV_MAX) as libc::c_ulong);
        let n = match dir {
            Direction::Read => libc::process_vm_readv(pid, local.as_ptr(), lb, remote.as_ptr(), rb, 0),
            Direction::Write => libc::process_vm_writev(pid, local.as_ptr(), lb, remote.as_ptr(), rb, 0),
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("{} moved nothing", dir.call())));
        }
        local = advance_iovecs(local, n as usize);
        remote = advance_iovecs(remote, n as usize);
    }
    if local.iter().chain(remote.iter()).any(|v| v.iov_len > 0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "local and remote pieces differ in length"));
    }
    Ok(())
}

/// Moves `len` bytes between `local` (ours) and address `remote` of process `pid`.
///
/// # Safety
/// `local..local+len` is writable (`Read`) or readable (`Write`); the kernel checks `remote`.
pub unsafe fn copy(pid: libc::pid_t, local: *mut u8, remote: u64, len: usize, dir: Direction) -> io::Result<()> {
    let mut mine = [libc::iovec { iov_base: local.cast(), iov_len: len }];
    let mut theirs = [libc::iovec { iov_base: remote as usize as *mut libc::c_void, iov_len: len }];
    copy_iov(pid, &mut mine, &mut theirs, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing to move is no error (a zero-byte single copy once failed as "moved nothing" and
    /// sent messages down the fallback path), and empty pieces among others are skipped.
    #[test]
    fn empty_copies_and_empty_pieces_move_what_there_is() {
        let pid = std::process::id() as libc::pid_t;
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 4];
        // SAFETY: both buffers are ours, for their lengths.
        unsafe {
            copy(pid, dst.as_mut_ptr(), src.as_ptr() as u64, 0, Direction::Read).expect("zero bytes");
            let mut local = [
                libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: 0 },
                libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: 4 },
            ];
            let mut remote = [
                libc::iovec { iov_base: src.as_ptr() as *mut libc::c_void, iov_len: 2 },
                libc::iovec { iov_base: src.as_ptr() as *mut libc::c_void, iov_len: 0 },
                libc::iovec { iov_base: src.as_ptr().add(2) as *mut libc::c_void, iov_len: 2 },
                libc::iovec { iov_base: src.as_ptr() as *mut libc::c_void, iov_len: 0 },
            ];
            copy_iov(pid, &mut local, &mut remote, Direction::Read).expect("pieces");
        }
        assert_eq!(dst, src);
    }
}

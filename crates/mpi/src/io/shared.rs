//! The shared file pointer (MPI 4.0 section 14.4.4): one offset, in etypes of the view, that
//! every rank of the file's communicator moves. It lives where every rank can reach it
//! whatever host it runs on, as ROMIO keeps it: an 8-byte counter in a small hidden side file
//! beside the data file (`.NAME.shfp.PID.CONTEXT`), read and moved under an fcntl lock on
//! those bytes. So it needs what MPI-IO needs anyway, the file's directory shared by the
//! ranks' hosts (with working POSIX locks, as NFS with lockd has). Where that directory is
//! not writable the side file goes in the temporary directory, which then works within one
//! host only. The side file is made on first use and removed when the file is closed.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::errors::io_error;
use crate::abi::*;
use crate::error::{err, Res};

pub(crate) struct SharedPointer {
    path: PathBuf,
    /// A fallback in the temporary directory, for a data file in a directory we cannot write.
    fallback: PathBuf,
    file: OnceLock<(File, PathBuf)>,
}

impl SharedPointer {
    /// The shared pointer of data file `data`, named by what every rank knows alike: rank
    /// 0's process id and the file communicator's context.
    pub fn new(data: &Path, owner_pid: u64, context: u32) -> SharedPointer {
        let base = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
        let name = format!(".{base}.shfp.{owner_pid}.{context}");
        let dir = data.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        SharedPointer { path: dir.join(&name), fallback: std::env::temp_dir().join(name), file: OnceLock::new() }
    }

    fn open(&self) -> Res<&File> {
        if let Some((f, _)) = self.file.get() {
            return Ok(f);
        }
        let open =
            |p: &Path| OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(p);
        let (f, path) = match open(&self.path) {
            Ok(f) => (f, self.path.clone()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EROFS | libc::EPERM)) => (
                open(&self.fallback)
                    .map_err(|e| io_error(&e, "cannot create", &self.fallback.display().to_string()))?,
                self.fallback.clone(),
            ),
            Err(e) => {
                return Err(io_error(&e, "cannot create the shared file pointer", &self.path.display().to_string()))
            }
        };
        Ok(&self.file.get_or_init(|| (f, path)).0)
    }

    /// Moves the pointer by `delta` etypes and returns where it was, atomically for all ranks.
    pub fn fetch_add(&self, delta: i64) -> Res<i64> {
        let f = self.open()?;
        let _lock = Lock::take(f)?;
        let old = read_word(f)?;
        if delta != 0 {
            write_word(f, old + delta)?;
        }
        Ok(old)
    }

    pub fn get(&self) -> Res<i64> {
        self.fetch_add(0)
    }

    pub fn set(&self, value: i64) -> Res {
        let f = self.open()?;
        let _lock = Lock::take(f)?;
        write_word(f, value)
    }

    /// Back to 0 (a new view). Nothing to do while no rank has used it: no side file yet.
    pub fn reset(&self) -> Res {
        if self.file.get().is_some() || self.path.exists() || self.fallback.exists() {
            self.set(0)?;
        }
        Ok(())
    }

    /// Removes the side file (at MPI_File_close, by one rank, after all are done with it).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(&self.fallback);
    }
}

fn read_word(f: &File) -> Res<i64> {
    let mut word = [0u8; 8];
    // A side file not written yet reads as 0.
    let n = f.read_at(&mut word, 0).map_err(|e| io_error(&e, "cannot read", "the shared file pointer"))?;
    Ok(if n == 8 { i64::from_ne_bytes(word) } else { 0 })
}

fn write_word(f: &File, v: i64) -> Res {
    f.write_all_at(&v.to_ne_bytes(), 0).map_err(|e| io_error(&e, "cannot write", "the shared file pointer"))
}

/// An fcntl write lock on the counter's 8 bytes. Open-file-description locks, so threads of
/// one process exclude each other too (a classic POSIX lock belongs to the whole process).
struct Lock<'a>(&'a File);

impl<'a> Lock<'a> {
    fn take(f: &'a File) -> Res<Lock<'a>> {
        lock(f, libc::F_WRLCK as i16)?;
        Ok(Lock(f))
    }
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        let _ = lock(self.0, libc::F_UNLCK as i16);
    }
}

/// Sets a lock of `kind` on bytes 0..8 of `f`, waiting for it.
pub(crate) fn lock(f: &File, kind: i16) -> Res {
    lock_range(f, kind, 0, 8)
}

/// Sets a lock of `kind` on bytes `start .. start + len` of `f` (len 0: to the end and
/// beyond), waiting for it.
pub(crate) fn lock_range(f: &File, kind: i16, start: u64, len: u64) -> Res {
    // SAFETY: a plain struct of integers; all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as i16;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    loop {
        // SAFETY: fcntl on an open descriptor with a valid flock.
        if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLKW, &fl) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(err(MPI_ERR_IO, format!("cannot lock a file range: {e}")));
        }
    }
}

//! The shared file pointer (MPI 4.0 section 14.4.4): one offset, in etypes of the view, that
//! every rank of the file's communicator moves. It lives where every rank can reach it
//! whatever host it runs on, as ROMIO keeps it: an 8-byte counter in a small hidden side file
//! beside the data file (`.NAME.shfp.PID.CONTEXT`), read and moved under an fcntl lock on
//! those bytes. So it needs what MPI-IO needs anyway, the file's directory shared by the
//! ranks' hosts (with working POSIX locks, as NFS with lockd has). Where that directory is
//! not writable the side file goes in the temporary directory, which then works within one
//! host only.
//!
//! Unlike ROMIO's (made at first use, removed at MPI_File_close, so a file left open at
//! MPI_Finalize or a killed job leaves it behind, as MPICH 4.0.2 does), ours never outlives the
//! open: rank 0 makes it during MPI_File_open, every rank opens it there, and rank 0 unlinks
//! it as soon as all have (`open.rs`); the descriptors keep it alive until the ranks close.
//! The price is a create, an open per rank and an unlink in every MPI_File_open.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::errors::io_error;
use crate::abi::*;
use crate::error::{err, MpiError, Res};

/// Where rank 0 made the side file, as it tells the other ranks (a word of open's agreement).
pub(crate) const SIDE_NONE: i64 = 0;
const SIDE_BESIDE: i64 = 1;
const SIDE_TEMP: i64 = 2;

pub(crate) struct SharedPointer {
    /// The side file, open and (once every rank has it) unlinked; or why this rank has none,
    /// reported when the program first uses the shared pointer.
    file: Result<File, MpiError>,
    /// Its name while it exists (rank 0 unlinks it).
    path: PathBuf,
}

/// The side file's names beside the data file and in the temporary directory, named by what
/// every rank knows alike: rank 0's process id and the file communicator's context.
fn names(data: &Path, owner_pid: u64, context: u32) -> (PathBuf, PathBuf) {
    let base = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    let name = format!(".{base}.shfp.{owner_pid}.{context}");
    let dir = data.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    (dir.join(&name), std::env::temp_dir().join(name))
}

fn open_side(p: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).create(create).truncate(create).mode(0o600).open(p)
}

impl SharedPointer {
    /// Rank 0 makes the side file of data file `data` (at 0); returns it and where it is
    /// ([`SIDE_NONE`] when it could not: the shared pointer then fails when used).
    pub fn create(data: &Path, owner_pid: u64, context: u32) -> (SharedPointer, i64) {
        let (beside, temp) = names(data, owner_pid, context);
        let (file, path, at) = match open_side(&beside, true) {
            Ok(f) => (Ok(f), beside, SIDE_BESIDE),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EROFS | libc::EPERM)) => {
                match open_side(&temp, true) {
                    Ok(f) => (Ok(f), temp, SIDE_TEMP),
                    Err(e) => (Err(io_error(&e, "cannot create", &temp.display().to_string())), temp, SIDE_NONE),
                }
            }
            Err(e) => {
                let e = io_error(&e, "cannot create the shared file pointer", &beside.display().to_string());
                (Err(e), beside, SIDE_NONE)
            }
        };
        (SharedPointer { file, path }, at)
    }

    /// Another rank opens the side file rank 0 made (`at`, from [`SharedPointer::create`]).
    pub fn join(data: &Path, owner_pid: u64, context: u32, at: i64) -> SharedPointer {
        let (beside, temp) = names(data, owner_pid, context);
        let path = if at == SIDE_TEMP { temp } else { beside };
        let file = match at {
            SIDE_NONE => Err(err(MPI_ERR_IO, "rank 0 could not create the shared file pointer's side file")),
            _ => open_side(&path, false)
                .map_err(|e| io_error(&e, "cannot open the shared file pointer", &path.display().to_string())),
        };
        SharedPointer { file, path }
    }

    /// Unlinks the side file (rank 0, once every rank has opened it): nothing is left behind
    /// however the job ends.
    pub fn unlink(&self) {
        if self.file.is_ok() {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    fn open(&self) -> Res<&File> {
        self.file.as_ref().map_err(Clone::clone)
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

    /// Back to 0 (a new view). Nothing to do without a side file (the error waits for a use).
    pub fn reset(&self) -> Res {
        if self.file.is_ok() {
            self.set(0)?;
        }
        Ok(())
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

/// An atomic-mode lock on a range of a data file (MPI 4.0 section 14.6.1): shared for a read,
/// exclusive for a write, released when the access ends.
pub(crate) struct RangeLock<'a>(&'a File, u64, u64);

impl<'a> RangeLock<'a> {
    /// Locks bytes `lo .. hi` of `f` for `what`, waiting for it.
    pub fn take(f: &'a File, what: super::access::Access, lo: u64, hi: u64) -> Res<RangeLock<'a>> {
        let kind = if what == super::access::Access::Write { libc::F_WRLCK } else { libc::F_RDLCK };
        lock_range(f, kind as i16, lo, hi - lo)?;
        Ok(RangeLock(f, lo, hi - lo))
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        let _ = lock_range(self.0, libc::F_UNLCK as i16, self.1, self.2);
    }
}

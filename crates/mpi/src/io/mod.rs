//! MPI-IO (MPI 4.0 chapter 14) on POSIX files: `MPI_File_*` as ROMIO's MPICH exports it.
//!
//! * `mod.rs`: an open file ([`File`]), the table behind `MPI_File` handles, and how a call on
//!   a file runs (its error handler: `MPI_ERRORS_RETURN` unless the program sets another);
//! * `errors.rs`: errno to MPI error class (one place), and the file error handlers;
//! * `open.rs`: open, close, delete, size, preallocate, sync, group, amode, atomicity, hints;
//! * `view.rs`: file views (displacement, etype, filetype, data representation) and the
//!   mapping of a view's data to `(file offset, length)` runs through the datatype engine;
//! * `datarep.rs`: the program's own data representations (MPI_Register_datarep) and the
//!   calls of their conversion functions;
//! * `access.rs`: moving data between a user buffer and the file through a view (pread /
//!   pwrite), and the positions each family starts at (explicit offset, individual pointer,
//!   shared pointer, ordered);
//! * `sieve.rs`: data sieving, independent accesses of many small pieces through a buffer;
//! * `shared.rs`: the shared file pointer, a counter in a small side file under an fcntl lock;
//! * `background.rs`: the I/O thread that moves the data of nonblocking accesses, and their
//!   requests;
//! * `two_phase.rs`: collective buffering, ROMIO's two-phase I/O through aggregator ranks;
//! * `calls.rs`: the exported data-access functions, blocking, nonblocking, collective and
//!   split collective, each with its large-count (`_c`) twin.
//!
//! A file's collectives run on a private duplicate of the communicator it was opened on, so
//! they never match the program's own messages. Nonblocking accesses move their data on an
//! I/O thread while the program goes on (`background.rs`), collective ones each rank's
//! own. Collective reads and writes are each rank's own accesses
//! followed by the collective's synchronisation, or two-phase I/O where the hints or the
//! access pattern call for it (`two_phase.rs` says when).

mod access;
mod background;
mod calls;
mod datarep;
mod errors;
mod open;
mod shared;
mod sieve;
mod two_phase;
mod view;

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use billboard::Communicator;

use crate::abi::*;
use crate::error::{err, guard, not_running, MpiError, Res};
use crate::state;

pub(crate) use background::Pending;
pub(crate) use errors::{io_error, raise_on_file};
use shared::SharedPointer;
use view::FileView;

/// `MPI_File`: a pointer in MPICH (ROMIO's `struct ADIOI_FileD *`). Ours never points
/// anywhere: it is the file's table index plus one (so that 0 stays `MPI_FILE_NULL`), which
/// is also its Fortran handle (`MPI_File_c2f`).
pub type MPI_File = isize;

/// An open file.
pub(crate) struct File {
    /// The private duplicate of the communicator the file was opened on.
    pub comm: Communicator,
    pub fd: std::fs::File,
    /// Whether `fd` can read: also on a file opened MPI_MODE_WRONLY, which is opened for
    /// reading too where it may, so that its writes may sieve (as ROMIO does: `sieve.rs`).
    pub fd_reads: bool,
    /// Whether any rank's descriptor can read, agreed at open: some rank's writes may sieve.
    pub any_fd_reads: bool,
    /// The name the program opened it by (for messages, MPI_MODE_DELETE_ON_CLOSE).
    pub path: PathBuf,
    pub amode: c_int,
    pub shared: SharedPointer,
    pub state: Mutex<FileState>,
    /// Its nonblocking accesses whose data is still moving (`background.rs`).
    pub inflight: background::InFlight,
    /// The list of an access's runs, kept for the next access (`access.rs`).
    pub spare_runs: Mutex<Vec<access::Run>>,
}

/// What changes while a file is open.
pub(crate) struct FileState {
    pub view: FileView,
    /// The individual file pointer, in etypes of the view.
    pub pointer: i64,
    pub atomic: bool,
    /// Whether any rank's view has holes (agreed at MPI_File_set_view): only then can a
    /// rank's access be many pieces, which a write may sieve (`sieve.rs`).
    pub holes_anywhere: bool,
    pub hints: Vec<(String, String)>,
    pub errhandler: MPI_Errhandler,
    /// The status of a split collective begun and not yet ended (MPI allows one at a time).
    pub split: Option<Split>,
}

/// A split collective begun: which one, and its outcome.
pub(crate) struct Split {
    pub function: &'static str,
    pub status: MPI_Status,
}

impl File {
    /// The mutable state (a panic elsewhere cannot leave it half-written: every change is
    /// one assignment).
    pub fn state(&self) -> MutexGuard<'_, FileState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    pub fn readable(&self) -> bool {
        self.amode & MPI_MODE_WRONLY == 0
    }

    pub fn writable(&self) -> bool {
        self.amode & MPI_MODE_RDONLY == 0
    }

    pub fn sequential(&self) -> bool {
        self.amode & MPI_MODE_SEQUENTIAL != 0
    }

    /// The value of a numeric hint, if set.
    pub fn hint_number(&self, key: &str) -> Option<usize> {
        self.state().hints.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.parse().ok())
    }
}

/// The open files by handle, and the error handler of `MPI_FILE_NULL`, which applies to calls
/// that have no file (MPI_File_open, MPI_File_delete) and to invalid file handles.
pub(crate) struct Files {
    table: Vec<Option<Arc<File>>>,
    pub null_errhandler: MPI_Errhandler,
}

impl Default for Files {
    fn default() -> Files {
        // MPI 4.0 section 9.3: the default file error handler is MPI_ERRORS_RETURN.
        Files { table: Vec::new(), null_errhandler: MPI_ERRORS_RETURN }
    }
}

impl Files {
    pub fn get(&self, fh: MPI_File) -> Option<Arc<File>> {
        let i = usize::try_from(fh).ok()?.checked_sub(1)?;
        self.table.get(i)?.clone()
    }

    pub fn add(&mut self, file: File) -> MPI_File {
        let file = Some(Arc::new(file));
        match self.table.iter().position(Option::is_none) {
            Some(i) => {
                self.table[i] = file;
                i as MPI_File + 1
            }
            None => {
                self.table.push(file);
                self.table.len() as MPI_File
            }
        }
    }

    pub fn remove(&mut self, fh: MPI_File) -> Option<Arc<File>> {
        let i = usize::try_from(fh).ok()?.checked_sub(1)?;
        self.table.get_mut(i)?.take()
    }

    /// At MPI_Finalize: closes the files the program left open, each rank its own (no
    /// collective: ranks may number their files differently, and a closing rank waits for no
    /// other). Their side files went at open; a file opened MPI_MODE_DELETE_ON_CLOSE is deleted
    /// by its rank 0 (another rank still using it keeps its descriptor: the data stays
    /// readable to it until it exits).
    pub fn close_all(&mut self) {
        for f in self.table.drain(..).flatten() {
            f.inflight.drain();
            if f.comm.rank() == 0 && f.amode & MPI_MODE_DELETE_ON_CLOSE != 0 {
                if let Err(e) = std::fs::remove_file(&f.path) {
                    eprintln!(
                        "billboard MPI: MPI_Finalize: cannot delete {} (left open, MPI_MODE_DELETE_ON_CLOSE): {e}",
                        f.name()
                    );
                }
            }
        }
    }

    /// The error handler that applies to `fh` (`MPI_FILE_NULL`'s for a handle of no file).
    fn errhandler_of(&self, fh: MPI_File) -> MPI_Errhandler {
        self.get(fh).map_or(self.null_errhandler, |f| f.state().errhandler)
    }
}

/// The file behind `fh`, taken out of the tables so that the call can block without them.
pub(crate) fn file(fh: MPI_File) -> Res<Arc<File>> {
    state::with(|m| m.files.get(fh)).flatten().ok_or_else(|| bad_file(fh))
}

pub(crate) fn bad_file(fh: MPI_File) -> MpiError {
    if fh == MPI_FILE_NULL {
        return err(MPI_ERR_FILE, "MPI_FILE_NULL is not an open file");
    }
    err(MPI_ERR_FILE, format!("invalid file handle {fh:#x}"))
}

/// Runs an MPI call on file `fh` without holding the tables (file calls may block in the
/// file's collectives); an error goes to the file's error handler, or to `MPI_FILE_NULL`'s
/// when `fh` names no file.
/// The file's nonblocking accesses in flight end first, so the call sees them done.
pub(crate) fn call_file(function: &'static str, fh: MPI_File, body: impl FnOnce(&File) -> Res) -> c_int {
    call_no_file(function, fh, || {
        let f = file(fh)?;
        f.inflight.drain();
        body(&f)
    })
}

/// Like [`call_file`] for a body that finds its file itself (or has none: `MPI_File_open`,
/// `MPI_File_delete`, with `MPI_FILE_NULL`).
pub(crate) fn call_no_file(function: &'static str, fh: MPI_File, body: impl FnOnce() -> Res) -> c_int {
    guard(function, || {
        if state::phase() != state::RUNNING {
            return not_running(function);
        }
        match body() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => errors::raise_on_file(function, fh, e),
        }
    })
}

/// Every rank's words `mine` (the same number on each), in rank order: the file
/// communicator's small agreements.
pub(crate) fn allgather_words(comm: &Communicator, mine: &[i64]) -> Res<Vec<i64>> {
    let n = comm.size();
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let mut all = vec![0u8; bytes.len() * n];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (r * bytes.len(), bytes.len())).collect();
    comm.allgatherv_bytes(&bytes, &mut all, &layout)?;
    Ok(all.chunks(8).map(|c| i64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_c2f(fh: MPI_File) -> MPI_Fint {
    guard("MPI_File_c2f", || if state::with(|m| m.files.get(fh).is_some()) == Some(true) { fh as MPI_Fint } else { 0 })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_f2c(fh: MPI_Fint) -> MPI_File {
    guard("MPI_File_f2c", || {
        let fh = fh as MPI_File;
        if state::with(|m| m.files.get(fh).is_some()) == Some(true) {
            fh
        } else {
            MPI_FILE_NULL
        }
    })
}

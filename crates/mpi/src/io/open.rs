//! File manipulation (MPI 4.0 section 14.2): open, close, delete, size, preallocation, sync,
//! group, access mode, atomicity, and hints.
//!
//! Opening is collective: rank 0 creates the file when asked (so MPI_MODE_EXCL means one
//! creator), the others open it after, and every rank learns whether all succeeded, so that
//! all return the same outcome; rank 0 makes the shared pointer's side file there too, and
//! unlinks it once every rank has it open (`shared.rs`). MPI_MODE_DELETE_ON_CLOSE removes the
//! file by rank 0 once every rank has closed, or at MPI_Finalize for a file left open. Size changes are made by rank 0 and
//! agreed the same way. Hints: the ones ROMIO reports for a POSIX file, with the program's
//! values where it set known keys (`cb_nodes`, `cb_buffer_size`, `striping_unit`, ...).

use std::ffi::{c_char, c_int, CStr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Mutex;

use super::shared::{SharedPointer, SIDE_NONE};
use super::view::{release, FileView};
use super::{call_file, call_no_file, io_error, File, FileState, MPI_File};
use crate::abi::*;
use crate::error::{err, out, MpiError, Res};
use crate::state;

/// Checks an access mode as ROMIO does (MPI 4.0 section 14.2.1).
fn check_amode(amode: c_int) -> Res {
    let modes = [MPI_MODE_RDONLY, MPI_MODE_WRONLY, MPI_MODE_RDWR].iter().filter(|&&m| amode & m != 0).count();
    let bad = if modes != 1 {
        Some("exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR")
    } else if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        Some("MPI_MODE_RDONLY without MPI_MODE_CREATE or MPI_MODE_EXCL")
    } else if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        Some("MPI_MODE_RDWR without MPI_MODE_SEQUENTIAL")
    } else {
        None
    };
    match bad {
        Some(rule) => Err(err(MPI_ERR_AMODE, format!("invalid access mode {amode:#x}: it must have {rule}"))),
        None => Ok(()),
    }
}

/// A file name without ROMIO's file-system prefix ("ufs:", "nfs:", ...), which names the
/// driver: every file here is a POSIX file.
fn path_of(name: &str) -> PathBuf {
    match name.split_once(':') {
        Some((fs, rest)) if fs.len() >= 2 && fs.chars().all(|c| c.is_ascii_alphanumeric()) => rest.into(),
        _ => name.into(),
    }
}

unsafe fn name_arg(filename: *const c_char) -> Res<String> {
    if filename.is_null() {
        return Err(err(MPI_ERR_ARG, "null filename pointer"));
    }
    // SAFETY: a NUL-terminated string from the caller, checked non-null.
    Ok(CStr::from_ptr(filename).to_string_lossy().into_owned())
}

/// Opens `path` as `amode` asks; `create` only on the rank that creates it. A file opened
/// MPI_MODE_WRONLY is opened for reading too where the permissions allow, so that its writes
/// may sieve (a read-modify-write: `sieve.rs`), as ROMIO does (`ADIO_Open`: "if write_only,
/// open the file as read_write, but record it as write_only"); else write-only, as asked.
/// Returns the file and whether it can read.
fn open_posix(path: &PathBuf, amode: c_int, create: bool, perm: u32) -> std::io::Result<(std::fs::File, bool)> {
    let open = |read: bool| {
        let mut o = std::fs::OpenOptions::new();
        o.read(read).write(amode & MPI_MODE_RDONLY == 0).mode(perm);
        if create && amode & MPI_MODE_CREATE != 0 {
            if amode & MPI_MODE_EXCL != 0 {
                o.create_new(true);
            } else {
                o.create(true);
            }
        }
        o.open(path)
    };
    if amode & MPI_MODE_WRONLY == 0 {
        return open(true).map(|f| (f, true));
    }
    match open(true) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => open(false).map(|f| (f, false)),
        other => other.map(|f| (f, true)),
    }
}

/// The error of the first rank that failed an agreed step, as every rank reports it.
fn agreed(classes: &[i64], mine: Option<MpiError>, what: &str) -> Res {
    if let Some(e) = mine {
        return Err(e);
    }
    match classes.iter().position(|&c| c != 0) {
        Some(r) => Err(err(classes[r] as c_int, format!("{what} failed on rank {r}"))),
        None => Ok(()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> c_int {
    call_no_file("MPI_File_open", MPI_FILE_NULL, || {
        let fh = out(fh, "fh")?;
        let name = name_arg(filename)?;
        let (c, _) = crate::comm_create::take(comm)?;
        if c.is_inter() {
            return Err(err(MPI_ERR_COMM, "MPI_File_open on an intercommunicator"));
        }
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        check_amode(amode)?;
        let path = path_of(&name);
        let perm = hint(info, "file_perm").and_then(|p| u32::from_str_radix(&p, 8).ok()).unwrap_or(0o666);
        // The file's own communicator: its agreements never meet the program's messages.
        let comm = c.dup()?;
        let me = comm.rank();
        let mut mine = None;
        let mut fd = None;
        let mut reads = false;
        let mut shared = None;
        let mut side = SIDE_NONE;
        if me == 0 {
            match open_posix(&path, amode, true, perm) {
                Ok((f, r)) => {
                    (fd, reads) = (Some(f), r);
                    let (s, at) = SharedPointer::create(&path, std::process::id() as u64, comm.context_id());
                    (shared, side) = (Some(s), at);
                }
                Err(e) => mine = Some(io_error(&e, "cannot open", &name)),
            }
        }
        let first = super::allgather_words(
            &comm,
            &[mine.as_ref().map_or(0, |e| e.class as i64), std::process::id() as i64, side],
        )?;
        if first[0] != 0 && me != 0 {
            return Err(err(first[0] as c_int, format!("cannot open {name} (rank 0 could not)")));
        }
        if let Some(e) = mine {
            return Err(e);
        }
        if me != 0 {
            match open_posix(&path, amode, false, perm) {
                Ok((f, r)) => (fd, reads) = (Some(f), r),
                Err(e) => mine = Some(io_error(&e, "cannot open", &name)),
            }
            shared = Some(SharedPointer::join(&path, first[1] as u64, comm.context_id(), first[2]));
        }
        // Each rank's outcome (its error class, 0 if none) and whether its descriptor reads.
        let words = super::allgather_words(&comm, &[mine.as_ref().map_or(0, |e| e.class as i64), reads as i64])?;
        let all: Vec<i64> = words.chunks(2).map(|w| w[0]).collect();
        let any_fd_reads = words.chunks(2).any(|w| w[1] != 0);
        let shared = shared.expect("made or joined");
        if me == 0 {
            // Every rank has the side file open: its name can go.
            shared.unlink();
        }
        agreed(&all, mine, &format!("opening {name}"))?;
        let fd = fd.expect("opened");
        let file = File {
            comm,
            fd,
            fd_reads: reads,
            any_fd_reads,
            path,
            amode,
            shared,
            state: Mutex::new(FileState {
                view: FileView::default(),
                pointer: 0,
                atomic: false,
                holes_anywhere: false,
                hints: Vec::new(),
                errhandler: state::with(|m| m.files.null_errhandler).unwrap_or(MPI_ERRORS_RETURN),
                split: None,
            }),
            inflight: Default::default(),
            spare_runs: Default::default(),
        };
        file.state().hints = default_hints(&file);
        set_hints(&file, info)?;
        if amode & MPI_MODE_APPEND != 0 {
            // Both pointers start at the end of the file (MPI 4.0 section 14.2.1).
            let end = file.fd.metadata().map_err(|e| io_error(&e, "cannot stat", &name))?.len() as i64;
            file.state().pointer = end;
            if me == 0 {
                file.shared.set(end)?;
            }
            file.comm.barrier()?;
        }
        *fh = state::with(|m| m.files.add(file)).expect("MPI is running");
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_close(fh: *mut MPI_File) -> c_int {
    let handle = fh.as_ref().copied().unwrap_or(MPI_FILE_NULL);
    call_file("MPI_File_close", handle, |f| {
        let fh = out(fh, "fh")?;
        if f.state().split.is_some() {
            return Err(err(MPI_ERR_IO, format!("closing {} during a split collective", f.name())));
        }
        // Every rank is done with the file (and its shared pointer) before it goes.
        f.comm.barrier()?;
        if f.comm.rank() == 0 && f.amode & MPI_MODE_DELETE_ON_CLOSE != 0 {
            std::fs::remove_file(&f.path).map_err(|e| io_error(&e, "cannot delete", &f.name()))?;
        }
        release(&f.state().view);
        state::with(|m| m.files.remove(*fh));
        *fh = MPI_FILE_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_delete(filename: *const c_char, info: MPI_Info) -> c_int {
    call_no_file("MPI_File_delete", MPI_FILE_NULL, || {
        let name = name_arg(filename)?;
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        std::fs::remove_file(path_of(&name)).map_err(|e| io_error(&e, "cannot delete", &name))
    })
}

/// A size argument: not negative.
fn size_arg(size: MPI_Offset) -> Res<u64> {
    u64::try_from(size).map_err(|_| err(MPI_ERR_ARG, format!("negative size {size}")))
}

/// A change of the file made by rank 0 and agreed by all (collective).
fn by_rank_zero(f: &File, function: &str, change: impl FnOnce() -> std::io::Result<()>) -> Res {
    if !f.writable() {
        return Err(err(MPI_ERR_READ_ONLY, format!("{function}: {} was opened MPI_MODE_RDONLY", f.name())));
    }
    if f.sequential() {
        return Err(err(MPI_ERR_UNSUPPORTED_OPERATION, format!("{function}: {} is MPI_MODE_SEQUENTIAL", f.name())));
    }
    // Writes before the call are in the file before the size changes.
    f.comm.barrier()?;
    let mine = if f.comm.rank() == 0 { change().err().map(|e| io_error(&e, "cannot resize", &f.name())) } else { None };
    let all = super::allgather_words(&f.comm, &[mine.as_ref().map_or(0, |e| e.class as i64)])?;
    agreed(&all, mine, function)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> c_int {
    call_file("MPI_File_set_size", fh, |f| {
        let size = size_arg(size)?;
        by_rank_zero(f, "MPI_File_set_size", || f.fd.set_len(size))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    call_file("MPI_File_preallocate", fh, |f| {
        let size = size_arg(size)?;
        by_rank_zero(f, "MPI_File_preallocate", || {
            // Space for the first `size` bytes; the file grows to `size` if smaller, never shrinks.
            let current = f.fd.metadata()?.len();
            if size > current {
                use std::os::fd::AsRawFd;
                // SAFETY: posix_fallocate on an open descriptor.
                let rc = unsafe { libc::posix_fallocate(f.fd.as_raw_fd(), 0, size as libc::off_t) };
                if rc == libc::EOPNOTSUPP || rc == libc::EINVAL {
                    // A file system without it: growing the file is what MPI promises.
                    return f.fd.set_len(size);
                }
                if rc != 0 {
                    return Err(std::io::Error::from_raw_os_error(rc));
                }
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> c_int {
    call_file("MPI_File_get_size", fh, |f| {
        let size = out(size, "size")?;
        *size = f.fd.metadata().map_err(|e| io_error(&e, "cannot stat", &f.name()))?.len() as MPI_Offset;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_sync(fh: MPI_File) -> c_int {
    call_file("MPI_File_sync", fh, |f| {
        let mine = f.fd.sync_all().err().map(|e| io_error(&e, "cannot sync", &f.name()));
        // Collective: what any rank wrote before is in the file for all after.
        let all = super::allgather_words(&f.comm, &[mine.as_ref().map_or(0, |e| e.class as i64)])?;
        agreed(&all, mine, "MPI_File_sync")
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> c_int {
    call_file("MPI_File_get_group", fh, |f| {
        let group = out(group, "group")?;
        let members = crate::group::members_of(&f.comm);
        *group = state::with(|m| m.add_group(members)).expect("MPI is running");
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> c_int {
    call_file("MPI_File_get_amode", fh, |f| {
        *out(amode, "amode")? = f.amode;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    call_file("MPI_File_set_atomicity", fh, |f| {
        let all = super::allgather_words(&f.comm, &[(flag != 0) as i64])?;
        if all.iter().any(|&a| a != all[0]) {
            return Err(err(MPI_ERR_NOT_SAME, "MPI_File_set_atomicity: the ranks gave different flags"));
        }
        f.state().atomic = flag != 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> c_int {
    call_file("MPI_File_get_atomicity", fh, |f| {
        *out(flag, "flag")? = f.state().atomic as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_info(fh: MPI_File, info: MPI_Info) -> c_int {
    call_file("MPI_File_set_info", fh, |f| {
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        set_hints(f, info)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> c_int {
    call_file("MPI_File_get_info", fh, |f| {
        let info_used = out(info_used, "info_used")?;
        let hints = f.state().hints.clone();
        *info_used = state::with(|m| m.add_info(hints)).expect("MPI is running");
        Ok(())
    })
}

/// Hints whose values are sizes or counts: a value that is not a positive number is ignored,
/// as ROMIO ignores it.
const NUMERIC_HINTS: &[&str] =
    &["cb_nodes", "cb_buffer_size", "striping_unit", "striping_factor", "ind_rd_buffer_size", "ind_wr_buffer_size"];

/// Hints the library knows: set ones are reported back; others are ignored (MPI 4.0 section
/// 9.2.8 lets an implementation ignore any hint).
const KNOWN_HINTS: &[&str] = &[
    "cb_nodes",
    "cb_buffer_size",
    "striping_unit",
    "striping_factor",
    "ind_rd_buffer_size",
    "ind_wr_buffer_size",
    "romio_cb_read",
    "romio_cb_write",
    "romio_ds_read",
    "romio_ds_write",
    "romio_no_indep_rw",
    "cb_config_list",
    "collective_buffering",
    "access_style",
    "file_perm",
];

/// What a file reports before the program sets anything: ROMIO's defaults for a POSIX file,
/// with one aggregator per host.
fn default_hints(f: &File) -> Vec<(String, String)> {
    let mut hosts: Vec<usize> = (0..f.comm.size()).filter_map(|r| f.comm.host_of(r).ok()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    [
        ("cb_buffer_size", "16777216".to_string()),
        ("romio_cb_read", "automatic".into()),
        ("romio_cb_write", "automatic".into()),
        ("cb_nodes", hosts.len().max(1).to_string()),
        ("romio_no_indep_rw", "false".into()),
        ("ind_rd_buffer_size", "4194304".into()),
        ("ind_wr_buffer_size", "524288".into()),
        ("romio_ds_read", "automatic".into()),
        ("romio_ds_write", "automatic".into()),
        ("cb_config_list", "*:1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The value of `key` in info `info`, if set.
fn hint(info: MPI_Info, key: &str) -> Option<String> {
    if info == MPI_INFO_NULL {
        return None;
    }
    state::with(|m| m.info(info).ok().and_then(|e| e.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))).flatten()
}

/// Takes the known hints of `info` into the file's hints.
pub(crate) fn set_hints(f: &File, info: MPI_Info) -> Res {
    if info == MPI_INFO_NULL {
        return Ok(());
    }
    let given = state::with(|m| m.info(info)).expect("MPI is running")?;
    let mut st = f.state();
    for (k, v) in given {
        if !KNOWN_HINTS.contains(&k.as_str()) {
            continue;
        }
        if NUMERIC_HINTS.contains(&k.as_str()) && !v.trim().parse::<u64>().is_ok_and(|n| n > 0) {
            continue;
        }
        match st.hints.iter_mut().find(|(key, _)| *key == k) {
            Some(entry) => entry.1 = v.trim().to_string(),
            None => st.hints.push((k, v.trim().to_string())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_modes_are_checked_as_romio_checks_them() {
        assert!(check_amode(MPI_MODE_RDONLY).is_ok());
        assert!(check_amode(MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL).is_ok());
        for bad in
            [0, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL]
        {
            assert_eq!(check_amode(bad).unwrap_err().class, MPI_ERR_AMODE, "{bad:#x}");
        }
    }

    #[test]
    fn a_write_only_file_is_opened_for_reading_too_so_that_writes_may_sieve() {
        use std::os::unix::fs::FileExt;
        let path = std::env::temp_dir().join(format!("bb-open-wronly-{}", std::process::id()));
        let (f, reads) = open_posix(&path, MPI_MODE_WRONLY | MPI_MODE_CREATE, true, 0o600).unwrap();
        f.write_all_at(b"abc", 0).unwrap();
        let mut back = [0u8; 3];
        assert!(reads && f.read_at(&mut back, 0).is_ok() && &back == b"abc", "it reads what it wrote");
        let (_, reads) = open_posix(&path, MPI_MODE_RDONLY, false, 0o600).unwrap();
        assert!(reads);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn romio_prefixes_name_the_driver_not_the_file() {
        assert_eq!(path_of("ufs:/tmp/a"), PathBuf::from("/tmp/a"));
        assert_eq!(path_of("/tmp/a:b"), PathBuf::from("/tmp/a:b"));
        assert_eq!(path_of("data.h5"), PathBuf::from("data.h5"));
    }
}

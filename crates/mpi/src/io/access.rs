//! Data access (MPI 4.0 section 14.4): where an access starts in the view (an explicit
//! offset, the individual pointer, the shared pointer, or rank order on the shared pointer),
//! and the move itself: the user's buffer seen as packed bytes by the datatype engine
//! (`datatype::view`: the memory itself when contiguous), the view's runs read with pread or
//! written with pwrite (many small pieces through a buffer: `sieve.rs`). In atomic mode the
//! runs' whole span is locked (fcntl) for the access.
//! The pointers' own calls (seek, position, byte offset) are here too.

use std::ffi::{c_int, c_void};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::background::{self, Pending};
use super::shared::RangeLock;
use super::{call_file, io_error, sieve, two_phase, File, MPI_File};
use crate::abi::*;
use crate::datatype::{self, layout_in, Dir as MemDir};
use crate::error::{err, out, Res};
use crate::state;

/// Where an access starts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Position {
    /// At this many etypes into the view (`_at` calls).
    At(MPI_Offset),
    /// At the individual file pointer, which moves past the data.
    Individual,
    /// At the shared file pointer, moved past the data atomically.
    Shared,
    /// At the shared file pointer in rank order (collective: `_ordered` calls).
    Ordered,
}

/// A run of an access: `(file offset, data offset, length)`.
pub(crate) type Run = (u64, usize, usize);

/// The most runs whose list a file keeps for its next access (24 MB of them). The list of a
/// strided access is long (a run per piece); made anew for every access it was fresh memory
/// to fault in each time. With the view's copy (`view.rs`, `FileView::tile`) that was 3,000
/// page faults a write (2 ranks x 262,144 pieces of 64 B: 12 MB), three times MPICH's system
/// time; with both gone, none.
const KEPT_RUNS: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Runs an access of `count` elements of `datatype` at `buf`; returns its status (the bytes
/// moved, for MPI_Get_count). A collective access may go through the aggregators
/// (`two_phase.rs`); every rank takes part in the choice, also one whose access failed.
///
/// # Safety
/// `buf` must hold `count` elements of `datatype`, as MPI requires of the program.
pub(crate) unsafe fn access(
    f: &File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
    collective: bool,
) -> Res<MPI_Status> {
    if !collective {
        if let Some(done) = plain(f, pos, buf, count, datatype, what) {
            return done;
        }
    }
    let prepared = prepare(f, pos, buf, count, datatype, what);
    let plan = if collective { two_phase::agree(f, prepared.as_ref().ok().map(|p| &p.runs[..]), what)? } else { None };
    let aggregated = plan.is_some();
    let outcome = prepared.and_then(|p| p.run(f, plan, what));
    if collective && !aggregated && !matches!(pos, Position::Ordered) {
        // The collective's synchronisation: every rank has done its part when any returns.
        // A rank that failed still takes part, so that the others do not wait forever.
        f.comm.barrier()?;
    }
    outcome
}

/// The independent access most programs make (HDF5's metadata, say): a predefined datatype
/// (its data the memory itself) at an explicit offset or the individual pointer, through a
/// view without holes in the native representation, outside atomic mode, on a file whose
/// views have no holes anywhere (so no rank sieves around this write). One look at the file's
/// state, one pread or pwrite: no copy of the view, no list of runs, no datatype lookup, no
/// range lock: a 64-byte MPI_File_write_at took 880 instructions, now 461 (MPICH 4.0.2: 636;
/// bench/peers/mpiio_small_callgrind.sh). `None` for anything else, which takes the general
/// path (also every error, which that path reports).
///
/// # Safety
/// As [`access`].
#[inline]
unsafe fn plain(
    f: &File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
) -> Option<Res<MPI_Status>> {
    let size = datatype::dense_size(datatype)?;
    let allowed = match what {
        Access::Read => f.readable(),
        Access::Write => f.writable(),
    };
    if !allowed || f.sequential() || buf.is_null() || !matches!(pos, Position::At(_) | Position::Individual) {
        return None;
    }
    let len = usize::try_from(count).ok()?.checked_mul(size)?;
    let (at, offset, esize) = {
        let st = f.state();
        let view = &st.view;
        if st.atomic || st.holes_anywhere || !view.plain() || view.mem_esize != view.esize || len % view.esize != 0 {
            return None;
        }
        let offset = match pos {
            Position::At(o) => o,
            _ => st.pointer,
        };
        let mut at = 0;
        view.runs(view.data_bytes(offset).ok()?, len, |file_at, _, _| {
            at = file_at;
            Ok(())
        })
        .ok()?;
        (at, offset, view.esize)
    };
    let moved = match (len, what) {
        (0, _) => Ok(0),
        (_, Access::Write) => {
            // SAFETY: `buf` holds `count` elements of a predefined datatype, `len` bytes.
            let data = std::slice::from_raw_parts(buf as *const u8, len);
            f.fd.write_all_at(data, at).map(|_| len).map_err(|e| io_error(&e, "cannot write", &f.name()))
        }
        (_, Access::Read) => {
            // SAFETY: as above, and MPI lends the buffer to the call to fill.
            let data = std::slice::from_raw_parts_mut(buf as *mut u8, len);
            read_full(&f.fd, data, at).map_err(|e| io_error(&e, "cannot read", &f.name()))
        }
    };
    Some(moved.map(|moved| {
        if let Position::Individual = pos {
            f.state().pointer = offset + (moved / esize) as i64;
        }
        let mut status = MPI_Status::default();
        status.set_byte_count(moved as i64);
        status
    }))
}

/// Starts a nonblocking access of `count` elements of `datatype` at `buf` (each rank its own,
/// collective or not): placed now, its data moved by the I/O thread (`background.rs`). The
/// individual pointer moves past the data asked for at once, as MPI 4.0 section 14.4.3 says
/// of nonblocking calls. An access whose data the program's or external32's conversion turns
/// (those call into the tables or the program) is done now.
///
/// # Safety
/// `buf` must hold `count` elements of `datatype` until the request completes, as MPI
/// requires of the program.
pub(crate) unsafe fn start(
    f: &Arc<File>,
    fh: MPI_File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
) -> Res<Arc<Pending>> {
    let mut p = prepare(f, pos, buf, count, datatype, what)?;
    if p.external.is_some() {
        return Ok(Pending::ended(fh, p.run(f, None, what)));
    }
    if let Position::Individual = p.pos {
        let asked: usize = p.runs.iter().map(|r| r.2).sum();
        f.state().pointer = p.offset + (asked / p.esize) as i64;
        p.pos = Position::At(p.offset);
    }
    let moving = Moving(p);
    background::submit(f.clone(), fh, move |f| {
        // SAFETY: the program lends the buffer to MPI until the request completes.
        unsafe { moving.run(f, what) }
    })
}

/// A prepared access on its way to the I/O thread.
struct Moving(Prepared);

impl Moving {
    /// # Safety
    /// As [`Prepared::run`].
    unsafe fn run(self, f: &File, what: Access) -> Res<MPI_Status> {
        self.0.run(f, None, what)
    }
}

// SAFETY: its raw pointers are the user's buffer, which MPI lends to the library (any of its
// threads) from the call that starts the access until the request completes.
unsafe impl Send for Moving {}

/// An access ready to move its data: where, and the bytes in the file's representation.
struct Prepared {
    pos: Position,
    /// Where it starts, in etypes of the view.
    offset: i64,
    esize: usize,
    datatype: MPI_Datatype,
    count: i64,
    /// The user's data as packed bytes (the memory itself when contiguous).
    mem: datatype::View,
    /// The data in the file's representation, when it is not the memory's.
    external: Option<Vec<u8>>,
    /// What made `external`, and makes the memory's data of it in a read.
    conversion: Conversion,
    /// `(file offset, data offset, length)` in file order.
    runs: Vec<Run>,
}

/// How the data of an access is converted between memory and the file.
enum Conversion {
    /// Not at all: "native", "internal", or a user representation's null function.
    None,
    /// To or from external32, by the datatype engine.
    External32,
    /// By the program's functions (`datarep.rs`), which read or write its buffer at this
    /// address themselves.
    User(super::datarep::Datarep, *mut c_void),
}

unsafe fn prepare(
    f: &File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
) -> Res<Prepared> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    match what {
        Access::Read if !f.readable() => {
            return Err(err(MPI_ERR_ACCESS, format!("cannot read {}: it was opened MPI_MODE_WRONLY", f.name())))
        }
        Access::Write if !f.writable() => {
            return Err(err(MPI_ERR_READ_ONLY, format!("cannot write {}: it was opened MPI_MODE_RDONLY", f.name())))
        }
        _ => {}
    }
    if f.sequential() && matches!(pos, Position::At(_) | Position::Individual) {
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{} was opened MPI_MODE_SEQUENTIAL: only the shared file pointer may be used", f.name()),
        ));
    }
    let view = f.state().view.clone();
    let external = view.external32();
    let user = match &*view.datarep {
        "native" | "internal" | "external32" => None,
        rep => super::datarep::lookup(rep),
    };
    // A read the program's function converts writes the user's buffer itself: the memory's
    // view must not unpack its copy over it at the end.
    let converts_read = what == Access::Read && user.as_ref().is_some_and(|r| r.reads());
    let (layout, file_len) = state::with(|m| -> Res<_> {
        let l = layout_in(m, datatype)?;
        let file_len = if external { datatype::external32_bytes(m, datatype, count)? } else { l.bytes(count)? };
        Ok((l, file_len))
    })
    .expect("MPI is running")?;
    // A user representation that changes the etype's size: the data in the file's sizes.
    let file_len = match view.mem_esize {
        m if m == view.esize || external => file_len,
        m if file_len % m == 0 => file_len / m * view.esize,
        m => {
            return Err(err(
                MPI_ERR_IO,
                format!("{file_len} bytes of data are not a whole number of the view's etypes ({m} bytes)"),
            ))
        }
    };
    if file_len % view.esize != 0 {
        return Err(err(
            MPI_ERR_IO,
            format!("{file_len} bytes of data are not a whole number of the view's etypes ({} bytes)", view.esize),
        ));
    }
    let etypes = (file_len / view.esize) as i64;
    let offset = match pos {
        Position::At(o) => o,
        Position::Individual => f.state().pointer,
        Position::Shared => f.shared.fetch_add(etypes)?,
        Position::Ordered => ordered_offset(f, etypes)?,
    };
    let dir = if what == Access::Read && !converts_read { MemDir::Write } else { MemDir::Read };
    let mem = datatype::view(&layout, buf, count, dir)?;
    let (external, conversion) = match (external, user, what) {
        (true, _, Access::Write) => {
            let mut ext = vec![0u8; file_len];
            datatype::to_external32(datatype, count, mem.bytes(), &mut ext)?;
            (Some(ext), Conversion::External32)
        }
        (true, _, Access::Read) => (Some(vec![0u8; file_len]), Conversion::External32),
        (false, Some(rep), Access::Write) => {
            let mut ext = vec![0u8; file_len];
            match rep.write(buf, datatype, count, &mut ext)? {
                true => (Some(ext), Conversion::User(rep, buf)),
                false => (None, Conversion::None),
            }
        }
        (false, Some(rep), Access::Read) if converts_read => (Some(vec![0u8; file_len]), Conversion::User(rep, buf)),
        _ => (None, Conversion::None),
    };
    let mut runs = std::mem::take(&mut *f.spare_runs.lock().unwrap_or_else(|e| e.into_inner()));
    runs.clear();
    view.runs(view.data_bytes(offset)?, file_len, |at, from, len| {
        runs.push((at, from, len));
        Ok(())
    })?;
    Ok(Prepared { pos, offset, esize: view.esize, datatype, count, mem, external, conversion, runs })
}

impl Prepared {
    /// Moves the data, independently or through the aggregators of `plan`.
    unsafe fn run(mut self, f: &File, plan: Option<(two_phase::Plan, u64)>, what: Access) -> Res<MPI_Status> {
        let bytes = match self.external.as_mut() {
            Some(ext) => &mut ext[..],
            None => self.mem.bytes_mut(),
        };
        let file_len = bytes.len();
        let moved = match (plan, what) {
            (Some((plan, end)), Access::Write) => two_phase::write(f, &plan, end, &self.runs, bytes)?,
            (Some((plan, end)), Access::Read) => two_phase::read(f, &plan, end, &self.runs, bytes)?,
            (None, _) => transfer(f, &self.runs, bytes, what)?,
        };
        // Bytes moved in memory: they differ from the file's only where external32 changes sizes.
        let done = match (&mut self.external, &self.conversion, what) {
            (None, _, _) | (Some(_), Conversion::None, _) => moved,
            (Some(_), _, Access::Write) => self.mem.len(),
            (Some(ext), Conversion::External32, Access::Read) => {
                datatype::from_external32(self.datatype, self.count, ext, self.mem.bytes_mut())?;
                // Whole elements scale exactly from one representation to the other.
                (moved as u128 * self.mem.len() as u128 / file_len.max(1) as u128) as usize
            }
            (Some(ext), Conversion::User(rep, user), Access::Read) => {
                // The items the file held (all, unless it ended first).
                let per_item = file_len / (self.count.max(1) as usize);
                let items = if moved == file_len { self.count } else { (moved / per_item.max(1)) as i64 };
                rep.read(*user, self.datatype, items, ext)?;
                // In memory's sizes: the file's may differ (whole etypes scale exactly).
                (moved as u128 * self.mem.len() as u128 / file_len.max(1) as u128) as usize
            }
        };
        self.mem.finish(done);
        if let Position::Individual = self.pos {
            f.state().pointer = self.offset + (moved / self.esize) as i64;
        }
        if self.runs.capacity() <= KEPT_RUNS {
            *f.spare_runs.lock().unwrap_or_else(|e| e.into_inner()) = std::mem::take(&mut self.runs);
        }
        let mut status = MPI_Status::default();
        status.set_byte_count(done as i64);
        Ok(status)
    }
}

/// The start of this rank's part of an ordered access of `etypes`: the shared pointer plus
/// the parts of the ranks before it (an exclusive scan); the pointer moves past them all.
fn ordered_offset(f: &File, etypes: i64) -> Res<i64> {
    let all = super::allgather_words(&f.comm, &[etypes])?;
    let me = f.comm.rank();
    let mut base = [0u8; 8];
    if me == 0 {
        base = f.shared.fetch_add(all.iter().sum())?.to_ne_bytes();
    }
    f.comm.bcast_bytes(&mut base, 0)?;
    Ok(i64::from_ne_bytes(base) + all[..me].iter().sum::<i64>())
}

/// Moves `data` to or from the file at `runs`, this rank alone; returns the bytes moved (a
/// read stops at the end of the file).
fn transfer(f: &File, runs: &[(u64, usize, usize)], data: &mut [u8], what: Access) -> Res<usize> {
    let atomic = f.state().atomic;
    let _lock = match (atomic, runs.first(), runs.last()) {
        (true, Some(first), Some(last)) => Some(RangeLock::take(&f.fd, what, first.0, last.0 + last.2 as u64)?),
        _ => None,
    };
    let sieving = sieve::choose(f, runs, what);
    if let Some(buffer) = sieving {
        return match what {
            Access::Read => sieve::read(&f.fd, &f.name(), runs, data, buffer),
            Access::Write => sieve::write(&f.fd, &f.name(), runs, data, buffer, !atomic),
        };
    }
    // A plain write holds a shared lock on its span where another rank may sieve: no
    // read-modify-write of a block around it may put stale bytes back over it meanwhile.
    let _shared = match (what, atomic, runs.first(), runs.last()) {
        (Access::Write, false, Some(first), Some(last)) if sieve::may_sieve_writes(f) => {
            Some(RangeLock::take(&f.fd, Access::Read, first.0, last.0 + last.2 as u64)?)
        }
        _ => None,
    };
    let mut done = 0;
    for &(at, from, len) in runs {
        let part = &mut data[from..from + len];
        match what {
            Access::Write => {
                f.fd.write_all_at(part, at).map_err(|e| io_error(&e, "cannot write", &f.name()))?;
                done += len;
            }
            Access::Read => {
                let got = read_full(&f.fd, part, at).map_err(|e| io_error(&e, "cannot read", &f.name()))?;
                done += got;
                if got < len {
                    break;
                }
            }
        }
    }
    Ok(done)
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
pub(crate) fn read_full(fd: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match fd.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The shared pointer back to 0 for a new view (collective, once every rank is done with the
/// old one: the caller agreed on that), before any rank uses the new one.
pub(crate) fn reset_shared(f: &File) -> Res {
    if f.comm.rank() == 0 {
        f.shared.reset()?;
    }
    f.comm.barrier()?;
    Ok(())
}

fn check_whence(whence: c_int) -> Res {
    match whence {
        MPI_SEEK_SET | MPI_SEEK_CUR | MPI_SEEK_END => Ok(()),
        w => Err(err(MPI_ERR_ARG, format!("invalid whence {w}: MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END"))),
    }
}

/// The new position of a pointer at `current` moved by `offset` from `whence`.
fn seek_target(f: &File, current: i64, offset: MPI_Offset, whence: c_int) -> Res<i64> {
    let to = match whence {
        MPI_SEEK_SET => offset,
        MPI_SEEK_CUR => current + offset,
        MPI_SEEK_END => {
            let size = f.fd.metadata().map_err(|e| io_error(&e, "cannot stat", &f.name()))?.len();
            f.state().view.etypes_in(size) + offset
        }
        w => return check_whence(w).map(|_| 0),
    };
    if to < 0 {
        return Err(err(MPI_ERR_ARG, format!("seek to a negative offset ({to} etypes)")));
    }
    Ok(to)
}

fn not_sequential(f: &File, function: &str) -> Res {
    if f.sequential() {
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{function}: {} was opened MPI_MODE_SEQUENTIAL (no individual file pointer)", f.name()),
        ));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    call_file("MPI_File_seek", fh, |f| {
        not_sequential(f, "MPI_File_seek")?;
        let current = f.state().pointer;
        let to = seek_target(f, current, offset, whence)?;
        f.state().pointer = to;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    call_file("MPI_File_get_position", fh, |f| {
        not_sequential(f, "MPI_File_get_position")?;
        *out(offset, "offset")? = f.state().pointer;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) -> c_int {
    call_file("MPI_File_get_byte_offset", fh, |f| {
        not_sequential(f, "MPI_File_get_byte_offset")?;
        let disp = out(disp, "disp")?;
        *disp = f.state().view.byte_offset(offset)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    call_file("MPI_File_seek_shared", fh, |f| {
        // Collective, with the same arguments everywhere: rank 0 moves the pointer.
        f.comm.barrier()?;
        let outcome = if f.comm.rank() == 0 {
            f.shared.get().and_then(|current| seek_target(f, current, offset, whence)).and_then(|to| f.shared.set(to))
        } else {
            check_whence(whence)
        };
        f.comm.barrier()?;
        outcome
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    call_file("MPI_File_get_position_shared", fh, |f| {
        *out(offset, "offset")? = f.shared.get()?;
        Ok(())
    })
}

//! Shared-memory windows: MPI_Win_allocate_shared and MPI_Win_shared_query.
//!
//! Every member's part of the window lies in one `/dev/shm` object that all members map: the
//! parts back to back in rank order (each rounded up to 64 bytes), as MPI's default
//! (`alloc_shared_noncontig` unset) asks. The lowest rank creates the object (`O_EXCL`, mode
//! 0600, its pages reserved so a full `/dev/shm` is an error now, not a SIGBUS later), the
//! others map it by name, and it is unlinked as soon as all have mapped it: nothing is left
//! behind by a crash after that. Loads and stores by the program go straight to the memory;
//! RMA calls on the window go through the target's handler like any window's.

use std::ffi::{c_int, c_void, CString};

use super::{create, win_call};
use crate::abi::*;
use crate::error::{call_unlocked, err, out, Res};

/// Part alignment in the object (a cache line).
const ALIGN: usize = 64;

/// The mapping of a shared window's object; unmapped on drop.
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
    /// Each member's part: (byte offset in the mapping, bytes).
    parts: Vec<(usize, usize)>,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn os_error(what: String) -> crate::error::MpiError {
    err(MPI_ERR_NO_MEM, format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Creates (`create`) or opens the object `name` of `len` bytes and maps it.
fn map(name: &CString, len: usize, create: bool) -> Res<*mut u8> {
    let flags = if create { libc::O_CREAT | libc::O_EXCL | libc::O_RDWR } else { libc::O_RDWR };
    // SAFETY: a NUL-terminated name; the descriptor is closed below.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(os_error(format!("shared window: cannot open /dev/shm{}", name.to_string_lossy())));
    }
    let close_and = |e| {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
        if create {
            // SAFETY: the name we created.
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
        Err(e)
    };
    // SAFETY: plain system calls on our descriptor.
    if create && unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) } != 0 {
        return close_and(err(
            MPI_ERR_NO_MEM,
            format!("shared window: cannot reserve {len} bytes in /dev/shm (too little space there?)"),
        ));
    }
    // SAFETY: a shared mapping of the object; nothing else is at the returned address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return close_and(os_error(format!("shared window: cannot map {len} bytes")));
    }
    // SAFETY: the mapping keeps the object; the descriptor is no longer needed.
    unsafe { libc::close(fd) };
    Ok(p.cast())
}

/// The collective part of MPI_Win_allocate_shared before the window exists: every member's
/// size, and the mapping of the object that holds them all.
fn allocate(size: MPI_Aint, comm: MPI_Comm) -> Res<Mapping> {
    let (parent, _) = crate::comm_create::take(comm)?;
    let (n, me) = (parent.size(), parent.rank());
    let host = parent.host_of(0)?;
    for r in 1..n {
        if parent.host_of(r)? != host {
            return Err(err(
                MPI_ERR_RMA_SHARED,
                format!("MPI_Win_allocate_shared: rank {r} of the communicator is on another host than rank 0"),
            ));
        }
    }
    // Each member's size, and rank 0's object name (64 bytes, NUL-padded), in one exchange.
    let mut mine = [0u8; 72];
    mine[..8].copy_from_slice(&(size as u64).to_ne_bytes());
    if me == 0 {
        let name = format!("/bb-win-{}-{:08x}", std::process::id(), random());
        mine[8..8 + name.len()].copy_from_slice(name.as_bytes());
    }
    let mut all = vec![0u8; 72 * n];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (72 * r, 72)).collect();
    parent.allgatherv_bytes(&mine, &mut all, &layout)?;
    let mut parts = Vec::with_capacity(n);
    let mut at = 0usize;
    for r in 0..n {
        let bytes = u64::from_ne_bytes(all[72 * r..72 * r + 8].try_into().expect("8 bytes")) as usize;
        parts.push((at, bytes));
        at = (at + bytes).div_ceil(ALIGN) * ALIGN;
    }
    let len = at.max(4096);
    let raw = &all[8..72];
    let name = CString::new(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(64)]).expect("no NUL inside");
    let base = if me == 0 { map(&name, len, true) } else { Err(err(MPI_ERR_NO_MEM, "not mapped yet")) };
    // Rank 0 has created it (or failed) before anyone opens it.
    let made = base.is_ok() as u8;
    let mut flags = vec![0u8; n];
    parent.allgatherv_bytes(&[made], &mut flags, &(0..n).map(|r| (r, 1)).collect::<Vec<_>>())?;
    let base = match base {
        Ok(b) => b,
        Err(e) if me == 0 => return Err(e),
        Err(_) if flags[0] == 0 => {
            return Err(err(MPI_ERR_NO_MEM, "rank 0 could not create the shared window's memory"));
        }
        Err(_) => map(&name, len, false)?,
    };
    parent.barrier()?;
    if me == 0 {
        // SAFETY: our object's name; every member has mapped it.
        unsafe { libc::shm_unlink(name.as_ptr()) };
    }
    Ok(Mapping { base, len, parts })
}

fn random() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(16)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate_shared(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    call_unlocked("MPI_Win_allocate_shared", comm, || {
        let win = out(win, "win")?;
        let baseptr = out(baseptr as *mut *mut c_void, "baseptr")?;
        super::check_shape(size, disp_unit)?;
        let mapping = allocate(size, comm)?;
        let me = crate::comm_create::take(comm)?.0.rank();
        let base = if size == 0 { std::ptr::null_mut() } else { mapping.base.add(mapping.parts[me].0) };
        let h = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_SHARED, None, None)?;
        crate::state::with(|m| m.win_mut(h).map(|w| w.shared = Some(mapping))).expect("MPI is running")?;
        *win = h;
        *baseptr = base.cast();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_shared_query(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    win_call("MPI_Win_shared_query", win, |m| {
        let w = m.win(win)?;
        let (size, disp_unit) = (out(size, "size")?, out(disp_unit, "disp_unit")?);
        let baseptr = out(baseptr as *mut *mut c_void, "baseptr")?;
        let mapping = w.shared.as_ref().ok_or_else(|| {
            err(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query on a window not made by MPI_Win_allocate_shared")
        })?;
        let n = w.peers.len();
        let r = if rank == MPI_PROC_NULL {
            // The lowest rank with memory (MPI 4.0 section 12.2.3); rank 0 if none has any.
            (0..n).find(|&r| w.peers[r].0 > 0).unwrap_or(0)
        } else if rank < 0 || rank as usize >= n {
            return Err(err(MPI_ERR_RANK, format!("rank {rank}: the window's group has {n} ranks")));
        } else {
            rank as usize
        };
        let (at, bytes) = mapping.parts[r];
        *size = bytes as MPI_Aint;
        *disp_unit = w.peers[r].1 as c_int;
        *baseptr = if bytes == 0 { std::ptr::null_mut() } else { mapping.base.add(at).cast() };
        Ok(())
    })
}

/// MPI_Win_shared_query_c: MPI_Win_shared_query with the displacement unit as an `MPI_Aint`.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_shared_query_c(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut MPI_Aint,
    baseptr: *mut c_void,
) -> c_int {
    let mut unit: c_int = 0;
    let unit_out = if disp_unit.is_null() { std::ptr::null_mut() } else { &mut unit as *mut c_int };
    let rc = PMPI_Win_shared_query(win, rank, size, unit_out, baseptr);
    if rc == MPI_SUCCESS {
        *disp_unit = unit as MPI_Aint;
    }
    rc
}

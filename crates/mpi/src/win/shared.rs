//! Shared-memory windows: MPI_Win_allocate_shared and MPI_Win_shared_query.
//!
//! Every member's part of the window lies in the node segment (`segment.rs`) that all members
//! map, back to back in rank order, as MPI's default (`alloc_shared_noncontig` unset) asks.
//! Loads and stores by the program go straight to the memory; RMA calls on the window are done
//! by the origin in the segment, as on any window in one (`direct.rs`).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::{create, segment, win_call};
use crate::abi::*;
use crate::error::{call_unlocked, err, out};

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
        let (parent, _) = crate::comm_create::take(comm)?;
        if let Err(r) = segment::one_host(&parent)? {
            return Err(err(
                MPI_ERR_RMA_SHARED,
                format!("MPI_Win_allocate_shared: rank {r} of the communicator is on another host than rank 0"),
            ));
        }
        let mut needed = 0;
        let seg = segment::allocate(size as usize, &parent, &mut needed)?.ok_or_else(|| {
            err(
                MPI_ERR_NO_MEM,
                format!("MPI_Win_allocate_shared: /dev/shm has no room for the window's {needed} bytes"),
            )
        })?;
        let seg = Arc::new(seg);
        let base = if size == 0 { std::ptr::null_mut() } else { seg.part(parent.rank()).0 };
        let h = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_SHARED, None, None, Some(seg))?;
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
        let seg = w.node.as_ref().filter(|_| w.attrs.flavor == MPI_WIN_FLAVOR_SHARED).ok_or_else(|| {
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
        let (at, bytes) = seg.part(r);
        *size = bytes as MPI_Aint;
        *disp_unit = w.peers[r].1 as c_int;
        *baseptr = if bytes == 0 { std::ptr::null_mut() } else { at.cast() };
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

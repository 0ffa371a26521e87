//! Communicators: size, rank, dup, split, free, compare, names.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, copy_out, err, handle_name, out};
use crate::state::{self, comm_index};

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", comm, |m| {
        *out(size, "size")? = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm.size() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", comm, |m| {
        *out(rank, "rank")? = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm.rank() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // Collective: runs without holding the tables, then stores the result.
    call_unlocked("MPI_Comm_dup", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        *newcomm = crate::comm_create::dup(comm)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Comm_split", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, errhandler) = crate::comm_create::take(comm)?;
        let color = match color {
            MPI_UNDEFINED => None,
            c if c >= 0 => Some(c as u32),
            c => return Err(err(MPI_ERR_ARG, format!("invalid color {c}: colors are >= 0 or MPI_UNDEFINED"))),
        };
        *newcomm = crate::comm_create::store_child(errhandler, c.split(color, key)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let handle = comm.as_ref().map_or(MPI_COMM_WORLD, |c| *c);
    call_unlocked("MPI_Comm_free", handle, || {
        let comm = out(comm, "comm")?;
        // A freed communicator that requests still use is in the table, but not the program's.
        let user =
            state::with(|m| comm_index(*comm).is_some_and(|i| i >= 2) && m.comm_local(*comm).is_some_and(|c| !c.freed));
        if user != Some(true) {
            return Err(err(MPI_ERR_COMM, format!("cannot free communicator {}", handle_name(*comm))));
        }
        if state::with(|m| m.comm_local(*comm).is_some_and(|c| c.pending)) == Some(true) {
            let msg =
                format!("communicator {} is still being made: complete its MPI_Comm_idup first", handle_name(*comm));
            return Err(err(MPI_ERR_COMM, msg));
        }
        crate::comm_create::free(*comm)?;
        *comm = MPI_COMM_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_compare(a: MPI_Comm, b: MPI_Comm, result: *mut c_int) -> c_int {
    call("MPI_Comm_compare", a, |m| {
        let ca = &m.comm_local(a).ok_or_else(|| bad_comm(a))?.comm;
        let cb = &m.comm_local(b).ok_or_else(|| bad_comm(b))?.comm;
        let result = out(result, "result")?;
        *result = if a == b {
            MPI_IDENT
        } else if ca.is_inter() != cb.is_inter() {
            MPI_UNEQUAL
        } else {
            // An intercommunicator compares both groups; the result is the weaker of the two.
            let local = compare_groups(&members(ca), &members(cb));
            let remote = compare_groups(&remote_members(ca), &remote_members(cb));
            local.max(remote)
        };
        Ok(())
    })
}

/// World ranks of the (local) group.
fn members(c: &billboard::Communicator) -> Vec<usize> {
    (0..c.size()).map(|r| c.world_rank(r)).collect()
}

/// World ranks of the remote group (none on an intracommunicator).
fn remote_members(c: &billboard::Communicator) -> Vec<usize> {
    (0..c.remote_size().unwrap_or(0)).filter_map(|r| c.remote_world_rank(r).ok()).collect()
}

/// MPI_CONGRUENT for the same ranks in the same order, MPI_SIMILAR in another order,
/// MPI_UNEQUAL otherwise (the constants grow in that order).
fn compare_groups(a: &[usize], b: &[usize]) -> c_int {
    let sorted = |v: &[usize]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    if a == b {
        MPI_CONGRUENT
    } else if sorted(a) == sorted(b) {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", comm, |m| {
        let inter = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm.is_inter();
        *out(flag, "flag")? = inter as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_name(comm: MPI_Comm, name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", comm, |m| {
        if name.is_null() {
            return Err(err(MPI_ERR_ARG, "null name pointer"));
        }
        let text = std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned();
        m.comm_local_mut(comm).ok_or_else(|| bad_comm(comm))?.name = text;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_name(comm: MPI_Comm, name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Comm_get_name", comm, |m| {
        let c = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        copy_out(&c.name, name, resultlen, MPI_MAX_OBJECT_NAME);
        Ok(())
    })
}

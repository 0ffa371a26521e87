//! Datatypes. Predefined types only so far: their size is in MPICH's handle (bits 15..8) or,
//! for the five MINLOC/MAXLOC pair types, in the table below. Derived datatypes come next;
//! until then they are refused with a clear MPI_ERR_TYPE.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{call, err, Res};

/// Derived datatypes by handle (to be written).
#[derive(Default)]
pub(crate) struct Types {}

/// Size (and extent) of the pair types: `struct { T value; int index; }` as x86-64 lays it out.
const PAIR_SIZES: [usize; 5] = [8, 16, 16, 8, 32];

/// Bytes of one element of `t`.
pub(crate) fn size_of(t: MPI_Datatype) -> Res<usize> {
    if is_pair_type(t) {
        return Ok(PAIR_SIZES[(t as u32 - MPI_FLOAT_INT as u32) as usize]);
    }
    match builtin_datatype_size(t) {
        Some(size) if t != MPI_DATATYPE_NULL => Ok(size),
        _ if t == MPI_DATATYPE_NULL => Err(err(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a datatype")),
        _ => Err(err(MPI_ERR_TYPE, format!("datatype {t:#x}: derived datatypes are not supported yet"))),
    }
}

/// Bytes of `count` elements of `t`, with the count checked.
pub(crate) fn bytes(count: c_int, t: MPI_Datatype) -> Res<usize> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    Ok(count as usize * size_of(t)?)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    call("MPI_Type_size", MPI_COMM_WORLD, |_| {
        *size = size_of(datatype)? as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    call("MPI_Type_size_x", MPI_COMM_WORLD, |_| {
        *size = size_of(datatype)? as MPI_Count;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent(
    datatype: MPI_Datatype,
    lb: *mut MPI_Aint,
    extent: *mut MPI_Aint,
) -> c_int {
    call("MPI_Type_get_extent", MPI_COMM_WORLD, |_| {
        *lb = 0;
        *extent = size_of(datatype)? as MPI_Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_commit", MPI_COMM_WORLD, |_| size_of(*datatype).map(drop))
}

/// Elements of `t` in a status's byte count, or MPI_UNDEFINED if not a whole number.
pub(crate) fn count_in(status: &MPI_Status, t: MPI_Datatype) -> Res<c_int> {
    let size = size_of(t)? as i64;
    let bytes = status.byte_count();
    Ok(match size {
        0 if bytes == 0 => 0,
        0 => MPI_UNDEFINED,
        s if bytes % s == 0 => (bytes / s) as c_int,
        _ => MPI_UNDEFINED,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    call("MPI_Get_count", MPI_COMM_WORLD, |_| {
        *count = count_in(&*status, datatype)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut c_int,
) -> c_int {
    PMPI_Get_count(status, datatype, count)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    call("MPI_Get_elements_x", MPI_COMM_WORLD, |_| {
        *count = count_in(&*status, datatype)? as MPI_Count;
        Ok(())
    })
}

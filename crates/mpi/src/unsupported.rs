//! Small calls on statuses: MPI_Status_set_cancelled, MPI_Status_c2f / f2c.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{call, err};

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    call("MPI_Status_set_cancelled", MPI_COMM_WORLD, |_| {
        if status.is_null() {
            return Err(err(MPI_ERR_ARG, "MPI_Status_set_cancelled: NULL status"));
        }
        (*status).set_cancelled(flag != 0);
        Ok(())
    })
}

/// The Fortran status is the same five integers in the same order.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_c2f(c_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int {
    if c_status.is_null() || f_status.is_null() {
        return MPI_ERR_ARG;
    }
    std::ptr::copy_nonoverlapping(c_status as *const MPI_Fint, f_status, 5);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_f2c(f_status: *const MPI_Fint, c_status: *mut MPI_Status) -> c_int {
    if c_status.is_null() || f_status.is_null() {
        return MPI_ERR_ARG;
    }
    std::ptr::copy_nonoverlapping(f_status, c_status as *mut MPI_Fint, 5);
    MPI_SUCCESS
}

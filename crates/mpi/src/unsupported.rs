//! The functions our mpi.h declares that Billboard does not implement yet (one-sided
//! communication is all in `win/`, dynamic processes in `spawn/`): the tools interface's
//! variables (MPI_T_*), which return MPI_ERR_OTHER directly, as MPI_T functions never invoke
//! error handlers. A few small calls live here too: MPI_Status_set_cancelled, MPI_Status_c2f /
//! f2c.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{call, err};

macro_rules! unsupported_tool {
    ($pmpi:ident) => {
        /// MPI_T: no control or performance variables are exposed yet.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi() -> c_int {
            MPI_ERR_OTHER
        }
    };
}

unsupported_tool!(PMPI_T_category_changed);
unsupported_tool!(PMPI_T_category_get_categories);
unsupported_tool!(PMPI_T_category_get_cvars);
unsupported_tool!(PMPI_T_category_get_index);
unsupported_tool!(PMPI_T_category_get_info);
unsupported_tool!(PMPI_T_category_get_pvars);
unsupported_tool!(PMPI_T_cvar_get_index);
unsupported_tool!(PMPI_T_cvar_get_info);
unsupported_tool!(PMPI_T_cvar_handle_alloc);
unsupported_tool!(PMPI_T_cvar_handle_free);
unsupported_tool!(PMPI_T_cvar_read);
unsupported_tool!(PMPI_T_cvar_write);
unsupported_tool!(PMPI_T_enum_get_info);
unsupported_tool!(PMPI_T_enum_get_item);
unsupported_tool!(PMPI_T_pvar_get_index);
unsupported_tool!(PMPI_T_pvar_get_info);
unsupported_tool!(PMPI_T_pvar_handle_alloc);
unsupported_tool!(PMPI_T_pvar_handle_free);
unsupported_tool!(PMPI_T_pvar_read);
unsupported_tool!(PMPI_T_pvar_readreset);
unsupported_tool!(PMPI_T_pvar_reset);
unsupported_tool!(PMPI_T_pvar_session_create);
unsupported_tool!(PMPI_T_pvar_session_free);
unsupported_tool!(PMPI_T_pvar_start);
unsupported_tool!(PMPI_T_pvar_stop);
unsupported_tool!(PMPI_T_pvar_write);

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

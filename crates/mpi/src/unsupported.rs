//! The MPI 3.1 functions our mpi.h declares that Billboard does not implement yet (one-sided
//! communication is all in `win/`): non-blocking and neighbourhood collectives,
//! inter-communicators, dynamic processes, the tools interface (MPI_T_*). Each is exported, so
//! a program built for MPICH that references one still loads and runs; a call reports a clear
//! MPI_ERR_OTHER through the error handler (MPI_T functions, which never invoke handlers,
//! return it directly). A few small ones are real here: MPI_Comm_get_parent (no parent: this
//! library spawns nothing), MPI_Status_set_cancelled, MPI_Status_c2f / f2c.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{bad_comm, call, err};

macro_rules! unsupported {
    ($pmpi:ident, $name:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi() -> c_int {
            call($name, MPI_COMM_WORLD, |_| {
                Err(err(MPI_ERR_OTHER, concat!($name, " is not supported by Billboard yet")))
            })
        }
    };
}

/// An unsupported call that takes a communicator: an invalid one is reported first, as
/// MPI_ERR_COMM (what MPICH says), before the call's own MPI_ERR_OTHER.
macro_rules! unsupported_on_comm {
    ($pmpi:ident, $name:literal, ($($arg:ident: $t:ty),*), $comm:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($arg: $t),*) -> c_int {
            $(let _ = $arg;)*
            let comm: MPI_Comm = $comm;
            call($name, comm, |m| {
                m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
                Err(err(MPI_ERR_OTHER, concat!($name, " is not supported by Billboard yet")))
            })
        }
    };
}

unsupported_on_comm!(
    PMPI_Comm_disconnect,
    "MPI_Comm_disconnect",
    (comm: *mut MPI_Comm),
    // SAFETY: MPI's contract: a pointer to the handle, checked non-null.
    if comm.is_null() { MPI_COMM_NULL } else { *comm }
);

macro_rules! unsupported_tool {
    ($pmpi:ident) => {
        /// MPI_T: no control or performance variables are exposed yet.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi() -> c_int {
            MPI_ERR_OTHER
        }
    };
}

unsupported!(PMPI_Close_port, "MPI_Close_port");
unsupported!(PMPI_Comm_accept, "MPI_Comm_accept");
unsupported!(PMPI_Comm_connect, "MPI_Comm_connect");
unsupported!(PMPI_Comm_join, "MPI_Comm_join");
unsupported!(PMPI_Comm_spawn, "MPI_Comm_spawn");
unsupported!(PMPI_Comm_spawn_multiple, "MPI_Comm_spawn_multiple");
unsupported!(PMPI_Lookup_name, "MPI_Lookup_name");
unsupported!(PMPI_Open_port, "MPI_Open_port");
unsupported!(PMPI_Publish_name, "MPI_Publish_name");
unsupported!(PMPI_Unpublish_name, "MPI_Unpublish_name");

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
pub unsafe extern "C" fn PMPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_get_parent", MPI_COMM_WORLD, |_| {
        if parent.is_null() {
            return Err(err(MPI_ERR_ARG, "MPI_Comm_get_parent: NULL parent pointer"));
        }
        *parent = MPI_COMM_NULL;
        Ok(())
    })
}

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

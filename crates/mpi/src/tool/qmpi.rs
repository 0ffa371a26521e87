//! QMPI, MPICH's interface for tools stacked on every MPI call (a tool registers its name, then
//! its own version of each function, and calls the next tool's through `QMPI_Get_function`).
//!
//! Debian's MPICH 4.0.2 is built without it (`--enable-qmpi` is off): libmpich.so.12 exports
//! these six registration calls, and each only returns MPI_ERR_UNSUPPORTED_OPERATION (read from
//! the library: `mov $0x2c,%eax; ret`), touches no argument and calls no error handler; the
//! per-function `QMPI_Send` ... its header declares are not exported at all. Billboard answers
//! the same, so a tool built for Debian's MPICH learns the same thing here: there is no QMPI.
//! Doing it for real would send every MPI call through the tools' tables, the small-message
//! path included.

use std::ffi::{c_char, c_int, c_void};

use crate::abi::MPI_ERR_UNSUPPORTED_OPERATION;

/// mpi.h's `QMPI_Context`: one pointer to the tools' storage stack, passed by value.
#[repr(C)]
pub struct QmpiContext {
    _storage_stack: *mut *mut c_void,
}

#[no_mangle]
pub extern "C" fn QMPI_Register_tool_name(
    _tool_name: *const c_char,
    _init_function_ptr: Option<unsafe extern "C" fn(c_int)>,
) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

#[no_mangle]
pub extern "C" fn QMPI_Register_tool_storage(_tool_id: c_int, _tool_storage: *mut c_void) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

#[no_mangle]
pub extern "C" fn QMPI_Register_function(
    _calling_tool_id: c_int,
    _function_enum: c_int,
    _function_ptr: Option<unsafe extern "C" fn()>,
) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

#[no_mangle]
pub extern "C" fn QMPI_Get_function(
    _calling_tool_id: c_int,
    _function_enum: c_int,
    _function_ptr: *mut Option<unsafe extern "C" fn()>,
    _next_tool_id: *mut c_int,
) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

#[no_mangle]
pub extern "C" fn QMPI_Get_tool_storage(_context: QmpiContext, _tool_id: c_int, _storage: *mut *mut c_void) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

#[no_mangle]
pub extern "C" fn QMPI_Get_calling_address(_context: QmpiContext, _address: *mut *mut c_void) -> c_int {
    MPI_ERR_UNSUPPORTED_OPERATION
}

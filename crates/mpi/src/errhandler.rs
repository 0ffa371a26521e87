//! User error handlers and user error classes (to be written): MPI_Comm_create_errhandler,
//! MPI_Comm_call_errhandler, MPI_Add_error_class/code/string.

use std::ffi::c_int;

use crate::abi::*;

/// User error handlers by handle, and user error classes and strings.
#[derive(Default)]
pub(crate) struct Errhandlers {}

/// Runs a user error handler `errhandler` for `code` on `comm`; `None` if `errhandler` is not
/// a user handler (then the predefined behaviour applies).
pub(crate) fn invoke(_errhandler: MPI_Errhandler, _comm: MPI_Comm, _code: c_int) -> Option<c_int> {
    None
}

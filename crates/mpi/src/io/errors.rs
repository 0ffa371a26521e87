//! Errors of file calls: the one place an operating-system error becomes an MPI error class
//! (as ROMIO maps errno in `ADIOI_Err_create_code`), and the file error handlers:
//! MPI_File_create_errhandler / set / get / call. A file's handler is MPI_ERRORS_RETURN unless
//! the program sets another (MPI 4.0 section 9.3), on the file or on `MPI_FILE_NULL` (which
//! applies to MPI_File_open, MPI_File_delete and invalid file handles).

use std::ffi::c_int;

use super::{call_file, call_no_file, File, MPI_File};
use crate::abi::*;
use crate::error::{call, err, out, MpiError};
use crate::state;

/// `MPI_File_errhandler_function`: `void f(MPI_File *, int *, ...)`.
pub(crate) type FileErrhandlerFn = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);

/// An operating-system error of `what` (an action) on file `name`, as an MPI error: the
/// class by errno, the message naming the file.
pub(crate) fn io_error(e: &std::io::Error, what: &str, name: &str) -> MpiError {
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EACCES | libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        Some(libc::ENOSPC | libc::EFBIG) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::ENAMETOOLONG | libc::ENOTDIR | libc::EISDIR | libc::ELOOP) => MPI_ERR_BAD_FILE,
        Some(libc::ETXTBSY | libc::EBUSY) => MPI_ERR_FILE_IN_USE,
        _ => MPI_ERR_IO,
    };
    err(class, format!("{what} {name}: {e}"))
}

/// Applies the error handler of file `fh` (or `MPI_FILE_NULL`'s) to `e`.
#[cold]
#[inline(never)]
pub(crate) fn raise_on_file(function: &str, fh: MPI_File, e: MpiError) -> c_int {
    let errhandler = state::with(|m| m.files.errhandler_of(fh)).unwrap_or(MPI_ERRORS_RETURN);
    if let Some(f) = user_handler(errhandler) {
        crate::error::remember(e.class, &e.msg);
        let (mut file, mut code) = (fh, e.class);
        // SAFETY: a function the program registered with MPI_File_create_errhandler, called
        // as MPI specifies, without the MPI tables held (it may call MPI).
        unsafe { f(&mut file, &mut code) };
        return e.class;
    }
    crate::error::raise(function, errhandler, MPI_COMM_WORLD, e)
}

/// The function of a user error handler made for files.
fn user_handler(errhandler: MPI_Errhandler) -> Option<FileErrhandlerFn> {
    let (f, made_for) = state::with(|m| m.errhandlers.user_handler(errhandler)).flatten()?;
    // SAFETY: handlers made for files were stored from a `FileErrhandlerFn` (see
    // PMPI_File_create_errhandler): the same C signature but for the object's type.
    (made_for == object_type::FILE)
        .then(|| unsafe { std::mem::transmute::<crate::errhandler::CommErrhandlerFn, FileErrhandlerFn>(f) })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_create_errhandler(
    function: Option<FileErrhandlerFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call("MPI_File_create_errhandler", MPI_COMM_WORLD, |m| {
        let f = function.ok_or_else(|| err(MPI_ERR_ARG, "null error handler function"))?;
        let out = out(errhandler, "errhandler")?;
        // SAFETY: stored as the table's one function type; `user_handler` turns it back.
        let f = std::mem::transmute::<FileErrhandlerFn, crate::errhandler::CommErrhandlerFn>(f);
        *out = m.add_errhandler(f, object_type::FILE);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_errhandler(fh: MPI_File, errhandler: MPI_Errhandler) -> c_int {
    call_no_file("MPI_File_set_errhandler", fh, || {
        state::with(|m| m.check_errhandler_for(errhandler, object_type::FILE)).unwrap_or(Ok(()))?;
        if fh == MPI_FILE_NULL {
            state::with(|m| m.files.null_errhandler = errhandler);
            return Ok(());
        }
        super::file(fh)?.state().errhandler = errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_errhandler(fh: MPI_File, errhandler: *mut MPI_Errhandler) -> c_int {
    call_no_file("MPI_File_get_errhandler", fh, || {
        let out = out(errhandler, "errhandler")?;
        *out = if fh == MPI_FILE_NULL {
            state::with(|m| m.files.null_errhandler).unwrap_or(MPI_ERRORS_RETURN)
        } else {
            super::file(fh)?.state().errhandler
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int {
    let valid = fh == MPI_FILE_NULL || super::file(fh).is_ok();
    if !valid {
        return call_file("MPI_File_call_errhandler", fh, |_: &File| Ok(()));
    }
    // The handler runs; the call itself succeeds (unless the handler ends the job).
    raise_on_file("MPI_File_call_errhandler", fh, err(errorcode, "called by the program"));
    MPI_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_values_map_to_romios_classes_and_name_the_file() {
        let cases = [
            (libc::ENOENT, MPI_ERR_NO_SUCH_FILE),
            (libc::EACCES, MPI_ERR_ACCESS),
            (libc::EEXIST, MPI_ERR_FILE_EXISTS),
            (libc::EROFS, MPI_ERR_READ_ONLY),
            (libc::ENOSPC, MPI_ERR_NO_SPACE),
            (libc::EDQUOT, MPI_ERR_QUOTA),
            (libc::EISDIR, MPI_ERR_BAD_FILE),
            (libc::EIO, MPI_ERR_IO),
        ];
        for (errno, class) in cases {
            let e = io_error(&std::io::Error::from_raw_os_error(errno), "cannot open", "/data/x.h5");
            assert_eq!(e.class, class, "errno {errno}");
            assert!(e.msg.contains("/data/x.h5"), "{}", e.msg);
        }
    }
}

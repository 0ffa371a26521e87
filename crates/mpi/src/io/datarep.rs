//! User data representations (MPI_Register_datarep, MPI 4.0 section 14.5.3): a name, the
//! program's two conversion functions and the function that gives a predefined type's extent in
//! the file. A view naming one converts every access through them: a write hands the user's
//! buffer (its datatype and count, `position` 0) to `write_conversion_fn`, which fills the
//! contiguous file data; a read reads the file data and hands it to `read_conversion_fn`, which
//! fills the user's buffer. A null function (MPI_CONVERSION_FN_NULL) moves that direction's data
//! as it is in memory, as MPI says.
//!
//! The view's etype must be a predefined type. Where its extent in the file differs from its
//! size in memory, the view is laid out in the file's sizes (`view.rs`) and the conversions
//! fill or read file data of that length; both functions must then be the program's
//! (MPI_CONVERSION_FN_NULL cannot change sizes). `MPI_File_set_view` refuses the others with
//! MPI_ERR_UNSUPPORTED_DATAREP. MPICH 4.0.2 converts none: MPI_Register_datarep
//! with conversion functions fails with MPI_ERR_CONVERSION ("Read and Write datarep conversions
//! are currently not supported by MPI-IO"), and MPI_File_set_view accepts only "native".

use std::ffi::{c_char, c_int, c_void, CStr};

use super::call_no_file;
use crate::abi::*;
use crate::error::{err, Res};

/// C's `MPI_Datarep_conversion_function` and `MPI_Datarep_conversion_function_c`.
type ConversionFn =
    unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
type ConversionFnC =
    unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
/// C's `MPI_Datarep_extent_function`.
type ExtentFn = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;
/// How mpi.h declares the three (either form, told apart by the function registering them).
type AnyFn = Option<unsafe extern "C" fn()>;

/// A registered representation.
#[derive(Clone)]
pub(crate) struct Datarep {
    name: String,
    read: AnyFn,
    write: AnyFn,
    extent: AnyFn,
    /// The program's `extra_state`, kept as a number (it owns it).
    extra: usize,
    /// Registered by MPI_Register_datarep_c: the conversions take an MPI_Count.
    large: bool,
}

impl Datarep {
    /// Whether reads go through the program's function (not MPI_CONVERSION_FN_NULL).
    pub fn reads(&self) -> bool {
        self.read.is_some()
    }

    /// Whether both directions go through the program's functions (neither is
    /// MPI_CONVERSION_FN_NULL), as a representation that changes sizes needs.
    pub fn converts_both(&self) -> bool {
        self.read.is_some() && self.write.is_some()
    }

    /// The extent in the file of predefined type `t`.
    pub fn file_extent(&self, t: MPI_Datatype) -> Res<i64> {
        let Some(f) = self.extent else {
            return Err(err(
                MPI_ERR_CONVERSION,
                format!("data representation \"{}\" has no extent function", self.name),
            ));
        };
        // SAFETY: mpi.h declares the extent function with this type in both forms, and the
        // program registered it as one.
        let f: ExtentFn = unsafe { std::mem::transmute::<unsafe extern "C" fn(), ExtentFn>(f) };
        let mut extent: MPI_Aint = 0;
        // SAFETY: the program's function, called as MPI specifies.
        let rc = unsafe { f(t, &mut extent, self.extra as *mut c_void) };
        self.check(rc, "dtype_file_extent_fn")?;
        Ok(extent as i64)
    }

    /// Converts `count` items of `datatype` at `user` into the file data at `file`; false when
    /// the write function is MPI_CONVERSION_FN_NULL (the data goes as it is in memory).
    ///
    /// # Safety
    /// `user` holds `count` items of `datatype`, and `file` their bytes in the file.
    pub unsafe fn write(&self, user: *mut c_void, datatype: MPI_Datatype, count: i64, file: &mut [u8]) -> Res<bool> {
        self.convert(self.write, "write_conversion_fn", user, datatype, count, file.as_mut_ptr())
    }

    /// Converts the file data at `file` into `count` items of `datatype` at `user`; false when
    /// the read function is MPI_CONVERSION_FN_NULL.
    ///
    /// # Safety
    /// As for [`Datarep::write`].
    pub unsafe fn read(&self, user: *mut c_void, datatype: MPI_Datatype, count: i64, file: &mut [u8]) -> Res<bool> {
        self.convert(self.read, "read_conversion_fn", user, datatype, count, file.as_mut_ptr())
    }

    unsafe fn convert(
        &self,
        f: AnyFn,
        which: &str,
        user: *mut c_void,
        datatype: MPI_Datatype,
        count: i64,
        file: *mut u8,
    ) -> Res<bool> {
        let Some(f) = f else { return Ok(false) };
        let (extra, file) = (self.extra as *mut c_void, file as *mut c_void);
        let rc = if self.large {
            // SAFETY: registered by MPI_Register_datarep_c, whose conversions have this type.
            let f: ConversionFnC = std::mem::transmute::<unsafe extern "C" fn(), ConversionFnC>(f);
            f(user, datatype, count, file, 0, extra)
        } else {
            let count = c_int::try_from(count).map_err(|_| {
                err(MPI_ERR_COUNT, format!("{count} items for the int count of {which} of \"{}\"", self.name))
            })?;
            // SAFETY: registered by MPI_Register_datarep, whose conversions have this type.
            let f: ConversionFn = std::mem::transmute::<unsafe extern "C" fn(), ConversionFn>(f);
            f(user, datatype, count, file, 0, extra)
        };
        self.check(rc, which)?;
        Ok(true)
    }

    fn check(&self, rc: c_int, which: &str) -> Res {
        if rc == MPI_SUCCESS {
            return Ok(());
        }
        Err(err(MPI_ERR_CONVERSION, format!("{which} of data representation \"{}\" returned {rc}", self.name)))
    }
}

fn registry() -> std::sync::MutexGuard<'static, Vec<Datarep>> {
    static REGISTERED: std::sync::Mutex<Vec<Datarep>> = std::sync::Mutex::new(Vec::new());
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The representation registered as `name`.
pub(crate) fn lookup(name: &str) -> Option<Datarep> {
    registry().iter().find(|r| r.name == name).cloned()
}

counted! {
    [PMPI_Register_datarep; Count = c_int] [PMPI_Register_datarep_c; Count = MPI_Count]
    fn(
        datarep: *const c_char,
        read_conversion_fn: AnyFn,
        write_conversion_fn: AnyFn,
        dtype_file_extent_fn: AnyFn,
        extra_state: *mut c_void,
    ) -> c_int {
        call_no_file(FUNCTION, MPI_FILE_NULL, || {
            if datarep.is_null() {
                return Err(err(MPI_ERR_ARG, "null datarep pointer"));
            }
            // SAFETY: a NUL-terminated string from the caller, checked non-null.
            let name = CStr::from_ptr(datarep).to_string_lossy().into_owned();
            if name.len() >= MPI_MAX_DATAREP_STRING as usize {
                return Err(err(MPI_ERR_ARG, format!("data representation name of {} characters", name.len())));
            }
            let mut list = registry();
            if ["native", "internal", "external32"].contains(&name.as_str()) || list.iter().any(|r| r.name == name) {
                return Err(err(MPI_ERR_DUP_DATAREP, format!("data representation \"{name}\" already exists")));
            }
            list.push(Datarep {
                name,
                read: read_conversion_fn,
                write: write_conversion_fn,
                extent: dtype_file_extent_fn,
                extra: extra_state as usize,
                large: std::mem::size_of::<Count>() == std::mem::size_of::<MPI_Count>(),
            });
            Ok(())
        })
    }
}

//! User error handlers and user error classes: MPI_Comm_create_errhandler,
//! MPI_Comm_call_errhandler, MPI_Add_error_class/code/string and MPICH's
//! MPIX_Delete_error_class/code/string (MPI 4.1's MPI_Remove_error_*) (the predefined handlers
//! and classes are in `error.rs`; the window ones in `win/`).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, err, Res};
use crate::state::{self, Mpi};

/// `MPI_Comm_errhandler_function`: `void f(MPI_Comm *, int *, ...)`; also
/// `MPI_Win_errhandler_function` (`MPI_Win` is an `int` too).
pub(crate) type CommErrhandlerFn = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);

/// User error classes and codes are numbered as MPICH 4.0 numbers them, so that they lie above
/// `MPI_ERR_LASTCODE` as MPI asks: the k-th class (k from 1) is `DYNAMIC_CLASS | k`, and the
/// k-th code (counted over all classes) is `k << CODE_SHIFT | class`.
const DYNAMIC_CLASS: c_int = 0x4000_0000;
const CODE_SHIFT: u32 = 8;

/// The value of the MPI_LASTUSEDCODE attribute: `MPI_ERR_LASTCODE` until a class is added, then
/// the last class added (MPICH moves it for classes only, not for codes).
pub(crate) static LAST_USED_CODE: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

/// User error handlers by handle, and user error classes and strings.
#[derive(Default)]
pub(crate) struct Errhandlers {
    /// Handlers by direct-handle index, with the object type they were made for
    /// ([`object_type::COMM`] or [`object_type::WIN`]). A freed handle's entry stays: objects
    /// that have it attached keep using it (MPI frees it when the last one goes).
    handlers: Vec<(CommErrhandlerFn, u32)>,
    /// User codes (and classes, mapped to themselves) to their class.
    classes: HashMap<c_int, c_int>,
    strings: HashMap<c_int, String>,
}

impl Errhandlers {
    /// The function of user error handler `h` and the object type it was made for.
    pub fn user_handler(&self, h: MPI_Errhandler) -> Option<(CommErrhandlerFn, u32)> {
        self.handlers.get(user_index(h)?).copied()
    }

    /// The class of a user error class or code.
    pub fn class_of(&self, code: c_int) -> Option<c_int> {
        self.classes.get(&code).copied()
    }

    /// The string set by MPI_Add_error_string for a user code or class ("" if none).
    pub fn string_of(&self, code: c_int) -> Option<String> {
        self.classes.contains_key(&code).then(|| self.strings.get(&code).cloned().unwrap_or_default())
    }

    /// A new class: the lowest free number, so that a deleted class's number is used again,
    /// as MPICH does.
    fn add_class(&mut self) -> Res<c_int> {
        let k = (1..=MAX_CLASSES)
            .find(|k| !self.classes.contains_key(&(DYNAMIC_CLASS | k)))
            .ok_or_else(|| err(MPI_ERR_OTHER, format!("no more than {MAX_CLASSES} error classes can be added")))?;
        let class = DYNAMIC_CLASS | k;
        self.classes.insert(class, class);
        LAST_USED_CODE.store(class, Ordering::Relaxed);
        Ok(class)
    }

    /// A new code of `class`, numbered by the lowest index no live code has.
    fn add_code(&mut self, class: c_int) -> Res<c_int> {
        let used: std::collections::HashSet<c_int> =
            self.classes.keys().map(|&code| (code & !DYNAMIC_CLASS) >> CODE_SHIFT).collect();
        let k = (1..=MAX_CODES)
            .find(|k| !used.contains(k))
            .ok_or_else(|| err(MPI_ERR_OTHER, format!("no more than {MAX_CODES} error codes can be added")))?;
        let code = k << CODE_SHIFT | class;
        self.classes.insert(code, class);
        Ok(code)
    }

    /// MPIX_Delete_error_class: a class MPI_Add_error_class made, with no code left in it
    /// (MPI 4.1 makes removing a class that still has codes erroneous; MPICH 4.0.2 removes it
    /// and then crashes in MPI_Error_string of its codes). Its string goes with it.
    fn delete_class(&mut self, class: c_int) -> Res {
        if self.classes.get(&class) != Some(&class) {
            return Err(err(MPI_ERR_OTHER, format!("{class:#x} is not an error class added by MPI_Add_error_class")));
        }
        let codes = self.classes.iter().filter(|&(&code, &of)| of == class && code != class).count();
        if codes > 0 {
            return Err(err(
                MPI_ERR_OTHER,
                format!(
                    "error class {class:#x} still has {codes} error codes: delete them first (MPIX_Delete_error_code)"
                ),
            ));
        }
        self.classes.remove(&class);
        self.strings.remove(&class);
        Ok(())
    }

    /// MPIX_Delete_error_code: a code MPI_Add_error_code made; its string goes with it.
    fn delete_code(&mut self, code: c_int) -> Res {
        match self.classes.get(&code) {
            Some(&class) if class != code => {
                self.classes.remove(&code);
                self.strings.remove(&code);
                Ok(())
            }
            _ => Err(err(MPI_ERR_OTHER, format!("{code:#x} is not an error code added by MPI_Add_error_code"))),
        }
    }

    /// MPIX_Delete_error_string: the string of a user class or code (which may have none);
    /// the predefined ones cannot be changed (MPI 4.1).
    fn delete_string(&mut self, code: c_int) -> Res {
        if !self.classes.contains_key(&code) {
            return Err(err(
                MPI_ERR_OTHER,
                format!("{code:#x} is not an error class or code added by MPI_Add_error_class/code"),
            ));
        }
        self.strings.remove(&code);
        Ok(())
    }
}

/// How many classes a program can add (as many as fit the bits below `CODE_SHIFT`), and how
/// many codes (MPICH's limit; the bits between `CODE_SHIFT` and `DYNAMIC_CLASS` hold more).
const MAX_CLASSES: c_int = (1 << CODE_SHIFT) - 1;
const MAX_CODES: c_int = 8192;

fn user_index(h: MPI_Errhandler) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::ERRHANDLER)
        .then_some(handle_index(h) as usize)
}

impl Mpi {
    /// Whether `h` names an error handler (predefined or user).
    pub fn is_errhandler(&self, h: MPI_Errhandler) -> bool {
        matches!(h, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
            || user_index(h).is_some_and(|i| i < self.errhandlers.handlers.len())
    }

    /// Checks that `h` is an error handler that may be attached to an object of type `object`
    /// (the predefined ones fit every object; a user one, the object it was made for).
    pub fn check_errhandler_for(&self, h: MPI_Errhandler, object: u32) -> Res {
        if !self.is_errhandler(h) {
            return Err(err(MPI_ERR_ARG, format!("invalid error handler {}", crate::error::handle_name(h))));
        }
        match user_index(h).map(|i| self.errhandlers.handlers[i].1) {
            Some(made_for) if made_for != object => Err(err(
                MPI_ERR_ARG,
                format!("error handler {h:#x} was made for {}s, not {}s", kind_name(made_for), kind_name(object)),
            )),
            _ => Ok(()),
        }
    }

    /// Registers a user error handler for objects of type `object`.
    pub fn add_errhandler(&mut self, f: CommErrhandlerFn, object: u32) -> MPI_Errhandler {
        self.errhandlers.handlers.push((f, object));
        let i = (self.errhandlers.handlers.len() - 1) as u32;
        make_handle(HandleKind::Direct, object_type::ERRHANDLER, i)
    }
}

fn kind_name(object: u32) -> &'static str {
    if object == object_type::WIN {
        "window"
    } else if object == object_type::FILE {
        "file"
    } else if object == object_type::SESSION {
        "session"
    } else {
        "communicator"
    }
}

/// Runs a user error handler `errhandler` for `code` on `object` (a communicator or window);
/// `None` if `errhandler` is not a user handler (then the predefined behaviour applies).
pub(crate) fn invoke(errhandler: MPI_Errhandler, object: c_int, code: c_int) -> Option<c_int> {
    let i = user_index(errhandler)?;
    let (f, _) = state::with(|m| m.errhandlers.handlers.get(i).copied()).flatten()?;
    let (mut c, mut e) = (object, code);
    // SAFETY: a function the program registered with MPI_Comm_create_errhandler or
    // MPI_Win_create_errhandler, called the way MPI specifies, without the MPI tables held (it
    // may call MPI).
    unsafe { f(&mut c, &mut e) };
    Some(code)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_errhandler(
    function: Option<CommErrhandlerFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call("MPI_Comm_create_errhandler", MPI_COMM_WORLD, |m| {
        let f = function.ok_or_else(|| err(MPI_ERR_ARG, "null error handler function"))?;
        if errhandler.is_null() {
            return Err(err(MPI_ERR_ARG, "null errhandler pointer"));
        }
        *errhandler = m.add_errhandler(f, object_type::COMM);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_create(
    function: Option<CommErrhandlerFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    PMPI_Comm_create_errhandler(function, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    crate::error::PMPI_Comm_set_errhandler(comm, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    crate::error::PMPI_Comm_get_errhandler(comm, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    call_unlocked("MPI_Comm_call_errhandler", comm, || {
        let eh = state::with(|m| m.comm_local(comm).map(|c| c.errhandler)).flatten().ok_or_else(|| bad_comm(comm))?;
        if eh != MPI_ERRORS_RETURN && invoke(eh, comm, errorcode).is_none() {
            // MPI_ERRORS_ARE_FATAL (or ABORT): the predefined handler ends the job.
            crate::error::handle("MPI_Comm_call_errhandler", comm, err(errorcode, "called by the program"));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    call("MPI_Add_error_class", MPI_COMM_WORLD, |m| {
        if errorclass.is_null() {
            return Err(err(MPI_ERR_ARG, "null errorclass pointer"));
        }
        *errorclass = m.errhandlers.add_class()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    call("MPI_Add_error_code", MPI_COMM_WORLD, |m| {
        if m.errhandlers.class_of(errorclass) != Some(errorclass)
            && !(0..=MPI_T_ERR_NOT_SUPPORTED).contains(&errorclass)
        {
            return Err(err(MPI_ERR_ARG, format!("{errorclass} is not an error class")));
        }
        if errorcode.is_null() {
            return Err(err(MPI_ERR_ARG, "null errorcode pointer"));
        }
        *errorcode = m.errhandlers.add_code(errorclass)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    call("MPI_Add_error_string", MPI_COMM_WORLD, |m| add_string(m, errorcode, string))
}

unsafe fn add_string(m: &mut Mpi, code: c_int, string: *const c_char) -> Res {
    if m.errhandlers.class_of(code).is_none() {
        return Err(err(MPI_ERR_ARG, format!("error code {code} was not added by MPI_Add_error_class/code")));
    }
    if string.is_null() {
        return Err(err(MPI_ERR_ARG, "null error string"));
    }
    // SAFETY: a NUL-terminated string from the caller, checked non-null.
    let s = CStr::from_ptr(string).to_string_lossy().into_owned();
    if s.len() >= MPI_MAX_ERROR_STRING as usize {
        return Err(err(
            MPI_ERR_ARG,
            format!("error string of {} characters (MPI_MAX_ERROR_STRING is {MPI_MAX_ERROR_STRING})", s.len()),
        ));
    }
    m.errhandlers.strings.insert(code, s);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_class(errorclass: c_int) -> c_int {
    call("MPIX_Delete_error_class", MPI_COMM_WORLD, |m| m.errhandlers.delete_class(errorclass))
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_code(errorcode: c_int) -> c_int {
    call("MPIX_Delete_error_code", MPI_COMM_WORLD, |m| m.errhandlers.delete_code(errorcode))
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Delete_error_string(errorcode: c_int) -> c_int {
    call("MPIX_Delete_error_string", MPI_COMM_WORLD, |m| m.errhandlers.delete_string(errorcode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_classes_and_codes_are_numbered_as_mpich_numbers_them() {
        let mut e = Errhandlers::default();
        let class = e.add_class().unwrap();
        let code = e.add_code(class).unwrap();
        let other = e.add_code(MPI_ERR_OTHER).unwrap();
        let class2 = e.add_class().unwrap();
        // The values MPICH 4.0.2 gives for the same calls.
        assert_eq!((class, code, other, class2), (0x4000_0001, 0x4000_0101, 0x20f, 0x4000_0002));
        assert!(class > MPI_ERR_LASTCODE && code > MPI_ERR_LASTCODE);
        assert_eq!(e.class_of(class), Some(class));
        assert_eq!(e.class_of(code), Some(class));
        assert_eq!(e.class_of(other), Some(MPI_ERR_OTHER));
        assert_eq!(e.class_of(MPI_ERR_RANK), None);
        assert_eq!(e.string_of(code).as_deref(), Some(""));
        e.strings.insert(code, "mine".into());
        assert_eq!(e.string_of(code).as_deref(), Some("mine"));
        assert_eq!(e.string_of(MPI_ERR_RANK), None);
    }

    #[test]
    fn deleted_classes_codes_and_strings_are_gone_and_their_numbers_come_back() {
        let mut e = Errhandlers::default();
        let (c1, c2) = (e.add_class().unwrap(), e.add_class().unwrap());
        let (k1, k2) = (e.add_code(c1).unwrap(), e.add_code(c1).unwrap());
        e.strings.insert(k1, "k1".into());
        e.strings.insert(c1, "c1".into());
        // A class with codes stays; predefined classes and codes cannot be deleted.
        assert_eq!(e.delete_class(c1).unwrap_err().class, MPI_ERR_OTHER);
        assert!(e.delete_code(MPI_ERR_RANK).is_err() && e.delete_class(MPI_ERR_RANK).is_err());
        assert!(e.delete_string(MPI_ERR_RANK).is_err() && e.delete_code(c1).is_err());
        e.delete_code(k1).unwrap();
        assert_eq!((e.class_of(k1), e.string_of(k1)), (None, None));
        assert!(e.delete_code(k1).is_err() && e.delete_string(k1).is_err());
        e.delete_string(k2).unwrap(); // it had none: still fine
        e.delete_code(k2).unwrap();
        e.delete_class(c1).unwrap();
        assert_eq!(e.class_of(c1), None);
        assert!(e.delete_class(c1).is_err());
        // The lowest numbers come back, as in MPICH 4.0.2.
        assert_eq!(e.add_class().unwrap(), c1);
        assert_eq!(e.add_code(c2).unwrap(), 1 << CODE_SHIFT | c2);
        assert_eq!(e.string_of(c1).as_deref(), Some(""));
    }

    #[test]
    fn user_classes_and_codes_run_out_with_an_error() {
        let mut e = Errhandlers::default();
        for _ in 0..MAX_CLASSES {
            e.add_class().unwrap();
        }
        for _ in 0..MAX_CODES {
            e.add_code(MPI_ERR_OTHER).unwrap();
        }
        assert_eq!(e.add_class().unwrap_err().class, MPI_ERR_OTHER);
        assert_eq!(e.add_code(MPI_ERR_OTHER).unwrap_err().class, MPI_ERR_OTHER);
    }
}

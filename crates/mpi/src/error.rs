//! The one place errors become MPI error classes and error handlers run.
//!
//! Every exported function does its work in a closure returning `Result<(), MpiError>` and
//! hands it to [`call`], which applies the communicator's error handler: with
//! `MPI_ERRORS_RETURN` the class is returned; with `MPI_ERRORS_ARE_FATAL` (the default) the
//! rank, host, function and reason are printed and the whole job is aborted.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::state::{self, Mpi};

/// An MPI error: its class and a message naming the bad value. Boxed, so that a `Res<()>` is
/// one word and every call on the message path returns it in a register.
#[derive(Debug, Clone)]
pub(crate) struct MpiError(Box<ErrorInfo>);

#[derive(Debug, Clone)]
pub(crate) struct ErrorInfo {
    pub class: c_int,
    pub msg: String,
    /// The file whose error handler applies, not the call's communicator's: the error of a
    /// nonblocking file access, raised by the call that completes its request (MPI_Wait,
    /// MPI_Test, ...), as MPI 4.0 section 14.7 ties I/O errors to the file.
    pub file: Option<crate::io::MPI_File>,
}

impl std::ops::Deref for MpiError {
    type Target = ErrorInfo;
    fn deref(&self) -> &ErrorInfo {
        &self.0
    }
}

pub(crate) type Res<T = ()> = Result<T, MpiError>;

#[cold]
pub(crate) fn err(class: c_int, msg: impl Into<String>) -> MpiError {
    MpiError(Box::new(ErrorInfo { class, msg: msg.into(), file: None }))
}

impl MpiError {
    /// This error, raised on file `fh`'s error handler wherever it surfaces.
    pub fn on_file(mut self, fh: crate::io::MPI_File) -> MpiError {
        self.0.file = Some(fh);
        self
    }
}

/// The ranks of a communicator of `size`, as a program would write them.
pub(crate) fn rank_range(size: usize) -> String {
    match size {
        0 => "communicator of size 0: no valid rank".into(),
        1 => "communicator of size 1: the only valid rank is 0".into(),
        n => format!("communicator of size {n}: valid ranks 0 to {}", n - 1),
    }
}

impl From<billboard::Error> for MpiError {
    #[cold]
    fn from(e: billboard::Error) -> MpiError {
        use billboard::Error as E;
        // The engine's messages in MPI's words: ranges as a C programmer writes them.
        match e {
            E::InvalidRank { rank, size } => {
                return err(MPI_ERR_RANK, format!("invalid rank {rank} ({})", rank_range(size)))
            }
            E::InvalidTag { tag } => {
                return err(
                    MPI_ERR_TAG,
                    format!("invalid tag {tag}: valid tags are 0 to MPI_TAG_UB ({})", billboard::TAG_UB),
                )
            }
            _ => {}
        }
        let class = match &e {
            E::InvalidRank { .. } => MPI_ERR_RANK,
            E::InvalidTag { .. } => MPI_ERR_TAG,
            E::Truncated { .. } => MPI_ERR_TRUNCATE,
            E::ElementSize { .. } => MPI_ERR_TYPE,
            E::InvalidArgument(_) => MPI_ERR_ARG,
            E::StaleRequest { .. } => MPI_ERR_REQUEST,
            E::PeerGone { .. } => MPIX_ERR_PROC_FAILED,
            E::Revoked { .. } => MPIX_ERR_REVOKED,
            E::Spawn(_) => MPI_ERR_SPAWN,
            E::Port(_) => MPI_ERR_PORT,
            _ => MPI_ERR_OTHER,
        };
        err(class, e.to_string())
    }
}

/// An error raised on the communicator it belongs to, found by the call (a failed request's),
/// rather than on the one the call was given; a plain [`MpiError`] goes to `MPI_COMM_WORLD`.
pub(crate) struct Raised(pub MpiError, pub MPI_Comm);

impl From<MpiError> for Raised {
    fn from(e: MpiError) -> Raised {
        Raised(e, MPI_COMM_WORLD)
    }
}

/// Runs an MPI call's body with the error handler of `comm` (`MPI_COMM_WORLD` for calls that
/// have no communicator).
#[inline(always)]
pub(crate) fn call(function: &'static str, comm: MPI_Comm, body: impl FnOnce(&mut Mpi) -> Res) -> c_int {
    call_on(function, |m| body(m).and_then(|()| not_revoked_meanwhile(comm)).map_err(|e| Raised(e, comm)))
}

/// A collective whose board wait gave up because `comm` was revoked during the call returns
/// to here as if done (`billboard::coll::revoked_in_wait`): it fails with MPIX_ERR_REVOKED.
#[inline(always)]
fn not_revoked_meanwhile(comm: MPI_Comm) -> Res {
    if billboard::coll::revoked_in_wait() {
        return Err(err(
            MPIX_ERR_REVOKED,
            format!("communicator {} was revoked (MPIX_Comm_revoke) during the collective", handle_name(comm)),
        ));
    }
    Ok(())
}

/// Like [`call`] for bodies that find the communicator whose handler applies themselves.
#[inline(always)]
pub(crate) fn call_on(function: &'static str, body: impl FnOnce(&mut Mpi) -> Result<(), Raised>) -> c_int {
    guard(function, || match state::with(body) {
        Some(Ok(())) => MPI_SUCCESS,
        Some(Err(Raised(e, comm))) => handle(function, comm, e),
        None => not_running(function),
    })
}

/// Like [`call`] for bodies that must not hold the state while they block (they take it
/// themselves, e.g. waits at `MPI_THREAD_MULTIPLE`).
#[inline(always)]
pub(crate) fn call_unlocked(function: &'static str, comm: MPI_Comm, body: impl FnOnce() -> Res) -> c_int {
    call_unlocked_on(function, || body().and_then(|()| not_revoked_meanwhile(comm)).map_err(|e| Raised(e, comm)))
}

/// [`call_unlocked`] for bodies that find the communicator whose handler applies themselves.
#[inline(always)]
pub(crate) fn call_unlocked_on(function: &'static str, body: impl FnOnce() -> Result<(), Raised>) -> c_int {
    guard(function, || {
        if state::phase() != state::RUNNING {
            return not_running(function);
        }
        match body() {
            Ok(()) => MPI_SUCCESS,
            Err(Raised(e, comm)) => handle(function, comm, e),
        }
    })
}

/// Runs an exported function's body so that no Rust panic unwinds into C: a panic (a bug of
/// this library) aborts the job with a message naming the call. Every exported function that
/// does not go through [`call`] and its kin wraps its body in this.
#[inline(always)]
pub(crate) fn guard<R>(function: &'static str, body: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => panicked(function, payload),
    }
}

#[cold]
#[inline(never)]
fn panicked(function: &str, payload: Box<dyn std::any::Any + Send>) -> ! {
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    let msg = format!("internal error in {function}: {why}");
    eprintln!("billboard MPI: rank {} on {}: {msg}", world_rank(), crate::env::host_name());
    // Unwinding released the state (and its lock), so the job can be told; should that panic
    // too, this process ends anyway.
    let _ = std::panic::catch_unwind(|| state::with(|m| m.universe.abort(MPI_ERR_INTERN, &msg)));
    std::process::abort()
}

fn world_rank() -> String {
    std::panic::catch_unwind(|| state::with(|m| m.world_rank.to_string())).ok().flatten().unwrap_or_else(|| "?".into())
}

pub(crate) fn not_running(function: &str) -> c_int {
    let when = if state::phase() == state::FINALIZED { "after MPI_Finalize" } else { "before MPI_Init" };
    eprintln!("billboard MPI: {function} called {when}");
    std::process::abort();
}

/// Applies `comm`'s error handler to `e`.
#[cold]
#[inline(never)]
pub(crate) fn handle(function: &str, comm: MPI_Comm, e: MpiError) -> c_int {
    if let Some(fh) = e.file {
        return crate::io::raise_on_file(function, fh, e);
    }
    // An error on an invalid communicator is raised on MPI_COMM_WORLD (MPI 3.1 section 8.3).
    let errhandler = state::with(|m| m.comm_local(comm).or_else(|| m.comm(MPI_COMM_WORLD)).map(|c| c.errhandler))
        .flatten()
        .unwrap_or(MPI_ERRORS_ARE_FATAL);
    raise(function, errhandler, comm, e)
}

/// Applies `errhandler`, attached to `object` (a communicator or window), to `e`.
pub(crate) fn raise(function: &str, errhandler: MPI_Errhandler, object: c_int, e: MpiError) -> c_int {
    if let Some(code) = crate::errhandler::invoke(errhandler, object, e.class) {
        remember(e.class, &e.msg);
        return code;
    }
    if errhandler == MPI_ERRORS_RETURN {
        remember(e.class, &e.msg);
        return e.class;
    }
    let rank = state::with(|m| m.world_rank.to_string()).unwrap_or_else(|| "?".into());
    eprintln!(
        "billboard MPI: rank {rank} on {}: {function}: {} ({})",
        crate::env::host_name(),
        e.msg,
        class_name(e.class)
    );
    let code = if e.class == 0 { 1 } else { e.class };
    state::with(|m| m.universe.abort(code, &e.msg));
    std::process::exit(code)
}

thread_local! {
    /// The last message of each class returned under MPI_ERRORS_RETURN, for MPI_Error_string.
    static LAST: std::cell::RefCell<Vec<(c_int, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(crate) fn remember(class: c_int, msg: &str) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        l.retain(|(c, _)| *c != class);
        l.push((class, msg.to_string()));
    });
}

fn class_name(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "MPI_SUCCESS: no error",
        MPI_ERR_BUFFER => "MPI_ERR_BUFFER: invalid buffer pointer",
        MPI_ERR_COUNT => "MPI_ERR_COUNT: invalid count argument",
        MPI_ERR_TYPE => "MPI_ERR_TYPE: invalid datatype",
        MPI_ERR_TAG => "MPI_ERR_TAG: invalid tag",
        MPI_ERR_COMM => "MPI_ERR_COMM: invalid communicator",
        MPI_ERR_RANK => "MPI_ERR_RANK: invalid rank",
        MPI_ERR_ROOT => "MPI_ERR_ROOT: invalid root",
        MPI_ERR_GROUP => "MPI_ERR_GROUP: invalid group",
        MPI_ERR_OP => "MPI_ERR_OP: invalid reduce operation",
        MPI_ERR_TOPOLOGY => "MPI_ERR_TOPOLOGY: invalid topology",
        MPI_ERR_DIMS => "MPI_ERR_DIMS: invalid dimension argument",
        MPI_ERR_ARG => "MPI_ERR_ARG: invalid argument",
        MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE: message truncated",
        MPI_ERR_OTHER => "MPI_ERR_OTHER: other error",
        MPIX_ERR_PROC_FAILED => "MPIX_ERR_PROC_FAILED: a process failed or the route to it broke",
        MPIX_ERR_PROC_FAILED_PENDING => "MPIX_ERR_PROC_FAILED_PENDING: a process this request may depend on failed",
        MPIX_ERR_REVOKED => "MPIX_ERR_REVOKED: the communicator was revoked",
        MPI_ERR_INTERN => "MPI_ERR_INTERN: internal error",
        MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS: error code is in status",
        MPI_ERR_PENDING => "MPI_ERR_PENDING: pending request",
        MPI_ERR_REQUEST => "MPI_ERR_REQUEST: invalid request",
        MPI_ERR_UNKNOWN => "MPI_ERR_UNKNOWN: unknown error",
        MPI_ERR_KEYVAL => "MPI_ERR_KEYVAL: invalid attribute key",
        MPI_ERR_INFO => "MPI_ERR_INFO: invalid info object",
        MPI_ERR_INFO_KEY => "MPI_ERR_INFO_KEY: invalid info key",
        MPI_ERR_INFO_VALUE => "MPI_ERR_INFO_VALUE: invalid info value",
        MPI_ERR_INFO_NOKEY => "MPI_ERR_INFO_NOKEY: info key not set",
        MPI_ERR_NO_MEM => "MPI_ERR_NO_MEM: out of memory",
        MPI_ERR_ACCESS => "MPI_ERR_ACCESS: permission denied",
        MPI_ERR_AMODE => "MPI_ERR_AMODE: invalid access mode",
        MPI_ERR_BAD_FILE => "MPI_ERR_BAD_FILE: invalid file name",
        MPI_ERR_CONVERSION => "MPI_ERR_CONVERSION: a data conversion function failed",
        MPI_ERR_DUP_DATAREP => "MPI_ERR_DUP_DATAREP: data representation already registered",
        MPI_ERR_FILE_EXISTS => "MPI_ERR_FILE_EXISTS: file exists",
        MPI_ERR_FILE_IN_USE => "MPI_ERR_FILE_IN_USE: file in use",
        MPI_ERR_FILE => "MPI_ERR_FILE: invalid file handle",
        MPI_ERR_IO => "MPI_ERR_IO: input/output error",
        MPI_ERR_NOT_SAME => "MPI_ERR_NOT_SAME: arguments differ between processes",
        MPI_ERR_NO_SPACE => "MPI_ERR_NO_SPACE: no space left on the file system",
        MPI_ERR_NO_SUCH_FILE => "MPI_ERR_NO_SUCH_FILE: no such file",
        MPI_ERR_QUOTA => "MPI_ERR_QUOTA: quota exceeded",
        MPI_ERR_READ_ONLY => "MPI_ERR_READ_ONLY: read-only file or file system",
        MPI_ERR_UNSUPPORTED_DATAREP => "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
        MPI_ERR_UNSUPPORTED_OPERATION => "MPI_ERR_UNSUPPORTED_OPERATION: unsupported operation",
        MPI_ERR_WIN => "MPI_ERR_WIN: invalid window",
        MPI_ERR_BASE => "MPI_ERR_BASE: invalid base address",
        MPI_ERR_SIZE => "MPI_ERR_SIZE: invalid size",
        MPI_ERR_DISP => "MPI_ERR_DISP: invalid displacement",
        MPI_ERR_ASSERT => "MPI_ERR_ASSERT: invalid assert argument",
        MPI_ERR_LOCKTYPE => "MPI_ERR_LOCKTYPE: invalid lock type",
        MPI_ERR_RMA_CONFLICT => "MPI_ERR_RMA_CONFLICT: conflicting accesses to a window",
        MPI_ERR_RMA_SYNC => "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
        MPI_ERR_RMA_RANGE => "MPI_ERR_RMA_RANGE: target memory is outside the window",
        MPI_ERR_RMA_ATTACH => "MPI_ERR_RMA_ATTACH: memory cannot be attached",
        MPI_ERR_RMA_SHARED => "MPI_ERR_RMA_SHARED: memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "MPI_ERR_RMA_FLAVOR: wrong window flavor",
        MPI_ERR_NAME => "MPI_ERR_NAME: invalid service name (see MPI_Publish_name)",
        MPI_ERR_PORT => "MPI_ERR_PORT: invalid port name",
        MPI_ERR_SERVICE => "MPI_ERR_SERVICE: no such service name published",
        MPI_ERR_SPAWN => "MPI_ERR_SPAWN: the processes could not be spawned",
        MPI_ERR_SESSION => "MPI_ERR_SESSION: invalid session",
        MPI_ERR_PROC_ABORTED => "MPI_ERR_PROC_ABORTED: a process aborted",
        MPI_ERR_VALUE_TOO_LARGE => "MPI_ERR_VALUE_TOO_LARGE: a value is too large for its output argument",
        MPIX_ERR_EAGAIN => "MPIX_ERR_EAGAIN: the operation could not be issued now",
        MPIX_ERR_NOREQ => "MPIX_ERR_NOREQ: no request could be allocated",
        MPI_T_ERR_MEMORY => "MPI_T_ERR_MEMORY: out of memory",
        MPI_T_ERR_NOT_INITIALIZED => "MPI_T_ERR_NOT_INITIALIZED: the tool interface is not initialized",
        MPI_T_ERR_CANNOT_INIT => "MPI_T_ERR_CANNOT_INIT: the tool interface cannot be initialized",
        MPI_T_ERR_INVALID_INDEX => "MPI_T_ERR_INVALID_INDEX: invalid variable or category index",
        MPI_T_ERR_INVALID_ITEM => "MPI_T_ERR_INVALID_ITEM: invalid item index",
        MPI_T_ERR_INVALID_HANDLE => "MPI_T_ERR_INVALID_HANDLE: invalid handle",
        MPI_T_ERR_OUT_OF_HANDLES => "MPI_T_ERR_OUT_OF_HANDLES: no more handles",
        MPI_T_ERR_OUT_OF_SESSIONS => "MPI_T_ERR_OUT_OF_SESSIONS: no more sessions",
        MPI_T_ERR_INVALID_SESSION => "MPI_T_ERR_INVALID_SESSION: invalid performance variable session",
        MPI_T_ERR_CVAR_SET_NOT_NOW => "MPI_T_ERR_CVAR_SET_NOT_NOW: the control variable cannot be set now",
        MPI_T_ERR_CVAR_SET_NEVER => "MPI_T_ERR_CVAR_SET_NEVER: the control variable cannot be set",
        MPI_T_ERR_PVAR_NO_STARTSTOP => {
            "MPI_T_ERR_PVAR_NO_STARTSTOP: the performance variable cannot be started or stopped"
        }
        MPI_T_ERR_PVAR_NO_WRITE => "MPI_T_ERR_PVAR_NO_WRITE: the performance variable cannot be written or reset",
        MPI_T_ERR_PVAR_NO_ATOMIC => {
            "MPI_T_ERR_PVAR_NO_ATOMIC: the performance variable cannot be read and reset atomically"
        }
        MPI_T_ERR_INVALID_NAME => "MPI_T_ERR_INVALID_NAME: no variable or category of that name",
        MPI_T_ERR_INVALID => "MPI_T_ERR_INVALID: invalid use of the tool interface",
        MPI_T_ERR_NOT_SUPPORTED => "MPI_T_ERR_NOT_SUPPORTED: not supported",
        _ => "MPI_ERR_UNKNOWN: unknown error",
    }
}

/// Copies `text` into a C buffer of `max` bytes (NUL-terminated, truncated) and sets `len`.
pub(crate) unsafe fn copy_out(text: &str, buf: *mut c_char, len: *mut c_int, max: c_int) {
    let n = text.len().min(max.max(1) as usize - 1);
    if !buf.is_null() {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), buf, n);
        *buf.add(n) = 0;
    }
    if !len.is_null() {
        *len = n as c_int;
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_string(code: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Error_string", || {
        if let Some(user) = state::with(|m| m.errhandlers.string_of(code)).flatten() {
            copy_out(&user, string, resultlen, MPI_MAX_ERROR_STRING);
            return MPI_SUCCESS;
        }
        let detail = LAST.with(|l| l.borrow().iter().find(|(c, _)| *c == code).map(|(_, m)| m.clone()));
        let text = match detail {
            Some(d) => format!("{}: {d}", class_name(code)),
            None => class_name(code).to_string(),
        };
        copy_out(&text, string, resultlen, MPI_MAX_ERROR_STRING);
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    guard("MPI_Error_class", || {
        if class.is_null() {
            return MPI_ERR_ARG;
        }
        *class = state::with(|m| m.errhandlers.class_of(code)).flatten().unwrap_or(code);
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    call("MPI_Comm_set_errhandler", comm, |m| {
        m.check_errhandler_for(errhandler, object_type::COMM)?;
        let c = m.comm_local_mut(comm).ok_or_else(|| bad_comm(comm))?;
        c.errhandler = errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    call("MPI_Comm_get_errhandler", comm, |m| {
        let c = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        *out(errhandler, "errhandler")? = c.errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    // A user handler stays usable by the communicators it is attached to (see errhandler.rs).
    call("MPI_Errhandler_free", MPI_COMM_WORLD, |m| {
        if errhandler.is_null() || !m.is_errhandler(*errhandler) {
            let what = if errhandler.is_null() { "null pointer".into() } else { handle_name(*errhandler) };
            return Err(err(MPI_ERR_ARG, format!("invalid error handler {what}")));
        }
        *errhandler = MPI_ERRHANDLER_NULL;
        Ok(())
    })
}

/// The error of a call whose argument `name` is a null pointer, through `comm`'s handler: for
/// the message path, which checks the pointer before its body (out of line, so the check is
/// one compare there).
#[cold]
#[inline(never)]
pub(crate) fn null_arg(function: &'static str, comm: MPI_Comm, name: &str) -> c_int {
    call(function, comm, |_| Err(err(MPI_ERR_ARG, format!("null {name} pointer"))))
}

/// An output argument from C: MPI_ERR_ARG, naming it, if it is null.
pub(crate) unsafe fn out<'a, T>(p: *mut T, name: &str) -> Res<&'a mut T> {
    // SAFETY: checked non-null; MPI's contract makes a non-null output argument valid.
    p.as_mut().ok_or_else(|| err(MPI_ERR_ARG, format!("null {name} pointer")))
}

/// The error for a handle that names no communicator.
pub(crate) fn bad_comm(comm: MPI_Comm) -> MpiError {
    if crate::state::was_revoked(comm) {
        return err(MPIX_ERR_REVOKED, format!("communicator {} was revoked (MPIX_Comm_revoke)", handle_name(comm)));
    }
    err(MPI_ERR_COMM, format!("invalid communicator {}", handle_name(comm)))
}

/// A handle as a program writes it: the name of a null or predefined handle
/// (`MPI_COMM_NULL`, `MPI_REQUEST_NULL`, `MPI_COMM_WORLD`...), the number otherwise.
pub(crate) fn handle_name(h: c_int) -> String {
    let name = match h {
        MPI_COMM_NULL => "MPI_COMM_NULL",
        MPI_COMM_WORLD => "MPI_COMM_WORLD",
        MPI_COMM_SELF => "MPI_COMM_SELF",
        MPI_DATATYPE_NULL => "MPI_DATATYPE_NULL",
        MPI_REQUEST_NULL => "MPI_REQUEST_NULL",
        MPI_OP_NULL => "MPI_OP_NULL",
        MPI_GROUP_NULL => "MPI_GROUP_NULL",
        MPI_GROUP_EMPTY => "MPI_GROUP_EMPTY",
        MPI_INFO_NULL => "MPI_INFO_NULL",
        MPI_WIN_NULL => "MPI_WIN_NULL",
        MPI_ERRHANDLER_NULL => "MPI_ERRHANDLER_NULL",
        MPI_MESSAGE_NO_PROC => "MPI_MESSAGE_NO_PROC",
        _ => return format!("{h:#x}"),
    };
    name.to_string()
}

//! The tool information interface's life (MPI_T_init_thread / MPI_T_finalize, counted, callable
//! before MPI_Init) and MPI 4.0's tool events, as MPICH 4.0.2 has them: no event and no event
//! source. So MPI_T_event_get_num and MPI_T_source_get_num say 0, and every call that names an
//! event, a source, a registration or an instance answers as MPICH does for one that does not
//! exist (its error codes, read from the library: MPI_T_ERR_INVALID for an event index or a
//! null output, MPI_T_ERR_INVALID_NAME for an event name, MPI_T_ERR_INVALID_INDEX for a source
//! or category index, MPI_T_ERR_NOT_INITIALIZED outside MPI_T_init_thread/MPI_T_finalize).
//! Where MPICH dereferences a registration or instance that cannot exist (it crashes), these
//! say MPI_T_ERR_INVALID_HANDLE. No category holds an event.
//!
//! The variables: control variables (every `BB_` tunable and collective switch, `cvar.rs`),
//! performance variables (per-peer traffic and the unexpected queue, `pvar.rs`), grouped in
//! categories by layer (`category.rs`), all numbered in `registry.rs`.

mod category;
mod cvar;
pub(crate) mod pvar;
mod qmpi;
mod registry;

pub(crate) use registry::RMA;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::abi::*;

/// How many MPI_T_init_thread calls MPI_T_finalize has not yet matched.
static INITS: AtomicUsize = AtomicUsize::new(0);

/// `MPI_T_ERR_NOT_INITIALIZED` outside MPI_T_init_thread .. MPI_T_finalize, else `ok()`.
fn initialized(ok: impl FnOnce() -> c_int) -> c_int {
    if INITS.load(Ordering::Acquire) == 0 {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    crate::error::guard("MPI_T", ok)
}

/// Copies `src` into the caller's `len`-byte buffer `dst` as MPICH does: a null `dst` or a
/// zero `len` asks only for the length needed (with the terminating null); otherwise at most
/// `len - 1` characters and a null are written and `len` becomes what was written. A null
/// `len` means the caller wants neither.
///
/// # Safety
/// `len`, if not null, is readable and writable; `dst`, if not null, holds `*len` bytes.
unsafe fn copy_string(src: &CStr, dst: *mut c_char, len: *mut c_int) {
    let Some(len) = len.as_mut() else { return };
    let bytes = src.to_bytes();
    if dst.is_null() || *len <= 0 {
        *len = bytes.len() as c_int + 1;
        return;
    }
    let n = bytes.len().min(*len as usize - 1);
    std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), n);
    *dst.add(n) = 0;
    *len = n as c_int + 1;
}

/// Writes `value` where `out` points, if it is not null (every output of the info calls may be).
///
/// # Safety
/// `out`, if not null, is writable.
unsafe fn put<T>(out: *mut T, value: T) {
    if let Some(out) = out.as_mut() {
        *out = value;
    }
}

/// Reads a name the caller passed: `None` for a null pointer.
///
/// # Safety
/// `name`, if not null, is a null-terminated string.
unsafe fn name_arg<'a>(name: *const c_char) -> Option<&'a CStr> {
    (!name.is_null()).then(|| CStr::from_ptr(name))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return MPI_T_ERR_INVALID;
    }
    INITS.fetch_add(1, Ordering::AcqRel);
    *provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_finalize() -> c_int {
    match INITS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
        Ok(_) => MPI_SUCCESS,
        Err(_) => MPI_T_ERR_NOT_INITIALIZED,
    }
}

/// A count the interface reports: 0.
unsafe fn none(out: *mut c_int) -> c_int {
    initialized(|| match out.as_mut() {
        Some(n) => {
            *n = 0;
            MPI_SUCCESS
        }
        None => MPI_T_ERR_INVALID,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    none(num_events)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    none(num_sources)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_info(
    _event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut MPI_Datatype,
    _array_of_displacements: *mut MPI_Aint,
    _num_elements: *mut c_int,
    _enumtype: *mut c_void,
    _info: *mut MPI_Info,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> c_int {
    // No event index is valid (MPICH: MPI_T_ERR_INVALID).
    initialized(|| MPI_T_ERR_INVALID)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) -> c_int {
    initialized(|| if name.is_null() || event_index.is_null() { MPI_T_ERR_INVALID } else { MPI_T_ERR_INVALID_NAME })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_info(
    _source_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _ordering: *mut c_int,
    _ticks_per_second: *mut MPI_Count,
    _max_ticks: *mut MPI_Count,
    _info: *mut MPI_Info,
) -> c_int {
    initialized(|| MPI_T_ERR_INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_timestamp(_source_index: c_int, _timestamp: *mut MPI_Count) -> c_int {
    initialized(|| MPI_T_ERR_INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_handle_alloc(
    _event_index: c_int,
    _obj_handle: *mut c_void,
    _info: MPI_Info,
    _event_registration: *mut *mut c_void,
) -> c_int {
    initialized(|| MPI_T_ERR_INVALID_INDEX)
}

/// The calls on a registration or an instance: none can exist.
macro_rules! no_such_handle {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => { $(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            $(let _ = $arg;)*
            initialized(|| MPI_T_ERR_INVALID_HANDLE)
        }
    )* };
}

no_such_handle! {
    PMPI_T_event_handle_free(registration: *mut c_void, user_data: *mut c_void, free_cb: *mut c_void);
    PMPI_T_event_handle_get_info(registration: *mut c_void, info: *mut MPI_Info);
    PMPI_T_event_handle_set_info(registration: *mut c_void, info: MPI_Info);
    PMPI_T_event_register_callback(registration: *mut c_void, safety: c_int, info: MPI_Info, user_data: *mut c_void, cb: *mut c_void);
    PMPI_T_event_callback_get_info(registration: *mut c_void, safety: c_int, info: *mut MPI_Info);
    PMPI_T_event_callback_set_info(registration: *mut c_void, safety: c_int, info: MPI_Info);
    PMPI_T_event_set_dropped_handler(registration: *mut c_void, dropped_cb: *mut c_void);
    PMPI_T_event_read(instance: *mut c_void, element_index: c_int, buffer: *mut c_void);
    PMPI_T_event_copy(instance: *mut c_void, buffer: *mut c_void);
    PMPI_T_event_get_timestamp(instance: *mut c_void, timestamp: *mut MPI_Count);
    PMPI_T_event_get_source(instance: *mut c_void, source_index: *mut c_int);
}

/// A new handle value for a cvar handle, a pvar session or a pvar handle: never null, never
/// MPI_T_PVAR_ALL_HANDLES (a static's address), never given twice, so a freed or made-up
/// handle is recognised as invalid instead of being followed. The program never dereferences
/// one (they are opaque); the tables of `cvar.rs` and `pvar.rs` map them to their state.
fn new_handle() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) << 4
}

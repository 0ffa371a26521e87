//! MPI_T control variables: every tunable (MPI_UNSIGNED_LONG) and collective switch (MPI_INT
//! with an enumeration of its algorithms) of the library, bound to no object, one element each.
//! Scope says whether a write takes effect: MPI_T_SCOPE_READONLY for what is read once at
//! setup (a write is MPI_T_ERR_CVAR_SET_NEVER), MPI_T_SCOPE_LOCAL for what this process reads
//! at each use, MPI_T_SCOPE_ALL_EQ for what every rank of a collective must hold alike.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_ulong, c_void};
use std::sync::Mutex;

use billboard::tunables::Effect;

use super::registry::{registry, Cvar, Knob};
use super::{copy_string, initialized, name_arg, new_handle, put};
use crate::abi::*;

/// Live cvar handles: handle value -> cvar index.
static HANDLES: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

fn cvar(index: c_int) -> Result<&'static Cvar, c_int> {
    usize::try_from(index).ok().and_then(|i| registry().cvars.get(i)).ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// The cvar behind a handle.
fn handle(h: *mut c_void) -> Result<&'static Cvar, c_int> {
    let table = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    let index = table.as_ref().and_then(|t| t.get(&(h as usize)).copied()).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
    Ok(&registry().cvars[index])
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    initialized(|| match num_cvar.as_mut() {
        Some(n) => {
            *n = registry().cvars.len() as c_int;
            MPI_SUCCESS
        }
        None => MPI_T_ERR_INVALID,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut *const c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    initialized(|| {
        let c = match cvar(cvar_index) {
            Ok(c) => c,
            Err(code) => return code,
        };
        copy_string(&c.name, name, name_len);
        copy_string(&c.desc, desc, desc_len);
        put(verbosity, MPI_T_VERBOSITY_TUNER_BASIC);
        put(bind, MPI_T_BIND_NO_OBJECT);
        let (dt, en, sc) = match c.knob {
            Knob::Tunable(t) => (
                MPI_UNSIGNED_LONG,
                std::ptr::null(),
                match t.effect {
                    Effect::Setup => MPI_T_SCOPE_READONLY,
                    Effect::EachUse => MPI_T_SCOPE_LOCAL,
                    Effect::EachCollective => MPI_T_SCOPE_ALL_EQ,
                },
            ),
            Knob::Switch(_) => (MPI_INT, c as *const Cvar as *const c_void, MPI_T_SCOPE_ALL_EQ),
        };
        put(datatype, dt);
        put(enumtype, en);
        put(scope, sc);
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
    initialized(|| {
        let (Some(name), false) = (name_arg(name), cvar_index.is_null()) else { return MPI_T_ERR_INVALID };
        match registry().cvars.iter().position(|c| c.name.as_c_str() == name) {
            Some(i) => {
                *cvar_index = i as c_int;
                MPI_SUCCESS
            }
            None => MPI_T_ERR_INVALID_NAME,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut *mut c_void,
    count: *mut c_int,
) -> c_int {
    initialized(|| {
        if let Err(code) = cvar(cvar_index) {
            return code;
        }
        if handle.is_null() || count.is_null() {
            return MPI_T_ERR_INVALID;
        }
        let h = new_handle();
        HANDLES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(h, cvar_index as usize);
        *handle = h as *mut c_void;
        *count = 1;
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_handle_free(handle: *mut *mut c_void) -> c_int {
    initialized(|| {
        let Some(h) = handle.as_mut() else { return MPI_T_ERR_INVALID };
        let mut table = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
        match table.as_mut().and_then(|t| t.remove(&(*h as usize))) {
            Some(_) => {
                *h = std::ptr::null_mut();
                MPI_SUCCESS
            }
            None => MPI_T_ERR_INVALID_HANDLE,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_read(handle: *mut c_void, buf: *mut c_void) -> c_int {
    initialized(|| {
        let c = match self::handle(handle) {
            Ok(c) => c,
            Err(code) => return code,
        };
        if buf.is_null() {
            return MPI_T_ERR_INVALID;
        }
        match c.knob {
            Knob::Tunable(t) => *buf.cast::<c_ulong>() = t.get() as c_ulong,
            Knob::Switch(s) => *buf.cast::<c_int>() = s.forced().map_or(0, |i| i as c_int + 1),
        }
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_write(handle: *mut c_void, buf: *const c_void) -> c_int {
    initialized(|| {
        let c = match self::handle(handle) {
            Ok(c) => c,
            Err(code) => return code,
        };
        if buf.is_null() {
            return MPI_T_ERR_INVALID;
        }
        match c.knob {
            Knob::Tunable(t) => match t.set(*buf.cast::<c_ulong>() as usize) {
                Ok(()) => MPI_SUCCESS,
                Err(_) => MPI_T_ERR_CVAR_SET_NEVER,
            },
            Knob::Switch(s) => {
                let v = *buf.cast::<c_int>();
                let forced = usize::try_from(v).ok().map(|v| v.checked_sub(1));
                match forced {
                    Some(forced) if s.set(forced) => MPI_SUCCESS,
                    _ => MPI_T_ERR_INVALID,
                }
            }
        }
    })
}

/// The switch an enumeration handle stands for (its cvar's address in the registry).
fn enumeration(e: *const c_void) -> Result<&'static billboard::tunables::Switch, c_int> {
    registry()
        .cvars
        .iter()
        .find_map(|c| match c.knob {
            Knob::Switch(s) if std::ptr::eq(c, e.cast()) => Some(s),
            _ => None,
        })
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_enum_get_info(
    enumtype: *const c_void,
    num: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    initialized(|| match enumeration(enumtype) {
        Err(code) => code,
        Ok(s) => {
            if num.is_null() {
                return MPI_T_ERR_INVALID;
            }
            *num = s.algorithms.len() as c_int + 1;
            copy_string(&super::registry::c_string(s.env), name, name_len);
            MPI_SUCCESS
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_enum_get_item(
    enumtype: *const c_void,
    index: c_int,
    value: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    initialized(|| {
        let s = match enumeration(enumtype) {
            Ok(s) => s,
            Err(code) => return code,
        };
        // Item 0 is "auto" (the table chooses), item i + 1 the i-th algorithm; value = index.
        let item = match usize::try_from(index) {
            Ok(0) => "auto",
            Ok(i) if i <= s.algorithms.len() => s.algorithms[i - 1],
            _ => return MPI_T_ERR_INVALID_ITEM,
        };
        if value.is_null() {
            return MPI_T_ERR_INVALID;
        }
        *value = index;
        copy_string(&super::registry::c_string(item), name, name_len);
        MPI_SUCCESS
    })
}

//! Attributes and keyvals: the predefined communicator attributes (MPI_TAG_UB ...) and window
//! attributes (MPI_WIN_BASE ..., their values kept by `win/`), user keyvals with copy and
//! delete callbacks on communicators, datatypes and windows, and the MPI-1 names
//! (MPI_Keyval_create, MPI_Attr_put ...).
//!
//! Callbacks are the program's C functions and may call MPI, so they always run with the MPI
//! tables released: a call reads what it needs under `state::with`, runs the callbacks, then
//! stores the outcome.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, err, MpiError, Res};
use crate::state::{self, Mpi};

/// Copy callback (`MPI_Comm_copy_attr_function`, `MPI_Type_copy_attr_function`,
/// `MPI_Copy_function`: the same C signature, with the object's handle first).
pub(crate) type CopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// Delete callback (`MPI_Comm_delete_attr_function` and friends).
pub(crate) type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
struct Keyval {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    /// Freed by the program: no new attributes, existing ones live on (so the entry stays).
    freed: bool,
}

/// Keyvals and the attributes set on communicators and datatypes.
#[derive(Default)]
pub(crate) struct Attrs {
    keyvals: Vec<Keyval>,
    /// Attributes by (object type, object handle): (keyval, value) in MPICH's order, which copy
    /// and delete callbacks follow: on a communicator the most recently added first (so deletes
    /// are last-in-first-out, as MPI asks for on MPI_COMM_SELF at MPI_Finalize, MPI 3.1 section
    /// 8.7.1), on a datatype or window the first added first. A value set again keeps its place.
    values: HashMap<(u32, c_int), Vec<(c_int, usize)>>,
    /// Communicators the program freed while requests still used them, whose attributes'
    /// delete callbacks wait for the last of those requests (see [`reap`]).
    doomed_comms: Vec<MPI_Comm>,
}

/// Set when an object may have been destroyed with its attributes still to delete: a freed
/// communicator's requests, a datatype's last reference (see [`reap`]).
static REAP: AtomicBool = AtomicBool::new(false);

/// Asks the next [`reap`] to look for destroyed objects.
pub(crate) fn schedule_reap() {
    REAP.store(true, Ordering::Relaxed);
}

/// Runs the delete callbacks of objects destroyed since the last call, as MPICH does when it
/// drops an object's last reference: a communicator freed while requests used it once none
/// does (MPI_Comm_free returned long ago), a datatype once no derived type, persistent
/// request or contents handle refers to it. Called, without the tables held, at the end of
/// the calls that end requests or references. A failing callback there has no call to report
/// it to: the object goes all the same.
#[inline(always)]
pub(crate) fn reap(function: &'static str) {
    if REAP.load(Ordering::Relaxed) {
        crate::error::guard(function, reap_now);
    }
}

#[cold]
#[inline(never)]
fn reap_now() {
    loop {
        let found = state::with(|m| {
            REAP.store(false, Ordering::Relaxed);
            m.types.release_dropped(&m.attrs);
            // An ended communicator stays doomed, its entry kept, until its callbacks are done.
            let ended: Vec<MPI_Comm> = m.attrs.doomed_comms.iter().copied().filter(|&c| !m.comm_in_use(c)).collect();
            if ended.len() < m.attrs.doomed_comms.len() {
                schedule_reap();
            }
            (ended, m.types.take_dying())
        });
        let Some((comms, types)) = found else { return };
        if comms.is_empty() && types.is_empty() {
            return;
        }
        for c in comms {
            let _ = delete_all(COMM, c);
            state::with(|m| {
                m.attrs.doomed_comms.retain(|&d| d != c);
                m.release_comm(c);
            });
        }
        for t in types {
            let _ = delete_all(TYPE, t);
            state::with(|m| m.types.destroy(t, &m.attrs));
        }
    }
}

/// Bits of a user keyval's index that number it; bits 25..22 name its object type, as in
/// MPICH's builtin keyvals.
const KEYVAL_NUMBER_MASK: u32 = (1 << KEYVAL_OBJECT_SHIFT) - 1;

fn object_name(object: u32) -> &'static str {
    match object {
        object_type::COMM => "communicator",
        object_type::WIN => "window",
        _ => "datatype",
    }
}

fn bad_keyval(keyval: c_int, object: u32) -> MpiError {
    err(MPI_ERR_KEYVAL, format!("invalid {} keyval {keyval:#x}", object_name(object)))
}

impl Attrs {
    /// Whether object `h` of type `object` has attributes (whose delete callbacks must run when
    /// it goes).
    pub fn has(&self, object: u32, h: c_int) -> bool {
        self.values.get(&(object, h)).is_some_and(|l| !l.is_empty())
    }

    /// Whether communicator `h` waits for its requests to delete its attributes (its table
    /// entry stays until then).
    pub fn is_doomed(&self, h: MPI_Comm) -> bool {
        self.doomed_comms.contains(&h)
    }

    /// Defers the attributes' deletion of freed communicator `h` to its requests' end.
    pub fn doom(&mut self, h: MPI_Comm) {
        self.doomed_comms.push(h);
        schedule_reap();
    }

    fn keyval(&self, keyval: c_int, object: u32) -> Res<Keyval> {
        let user = handle_kind(keyval) == HandleKind::Direct
            && handle_object_type(keyval) == object_type::KEYVAL
            && keyval_object_type(keyval) == object;
        let found = user.then(|| self.keyvals.get((handle_index(keyval) & KEYVAL_NUMBER_MASK) as usize)).flatten();
        found.copied().ok_or_else(|| bad_keyval(keyval, object))
    }

    fn add_keyval(&mut self, object: u32, copy: Option<CopyFn>, delete: Option<DeleteFn>, extra: *mut c_void) -> c_int {
        self.keyvals.push(Keyval { copy, delete, extra: extra as usize, freed: false });
        let index = (object << KEYVAL_OBJECT_SHIFT) | (self.keyvals.len() - 1) as u32;
        make_handle(HandleKind::Direct, object_type::KEYVAL, index)
    }
}

/// Predefined communicator attribute values. The program gets pointers to them, which must
/// stay valid, so they are statics.
static TAG_UB: AtomicI32 = AtomicI32::new(billboard::TAG_UB);
static HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static IO_RANK: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static IO_ANY: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
static APPNUM: AtomicI32 = AtomicI32::new(0);

/// Sets MPI_UNIVERSE_SIZE and MPI_APPNUM, which the launcher tells at MPI_Init.
pub(crate) fn set_universe(universe_size: c_int, appnum: c_int) {
    UNIVERSE_SIZE.store(universe_size, Ordering::Relaxed);
    APPNUM.store(appnum, Ordering::Relaxed);
}

/// The value of predefined attribute `keyval` on `comm`, if it is one.
fn predefined(m: &Mpi, comm: MPI_Comm, keyval: c_int) -> Option<&'static AtomicI32> {
    Some(match keyval {
        MPI_TAG_UB => &TAG_UB,
        MPI_HOST => &HOST,
        MPI_IO => {
            // Every process can do I/O. On a communicator whose ranks are the world's, the
            // process's own rank says so most plainly; elsewhere MPI_ANY_SOURCE does.
            let c = &m.comm_local(comm)?.comm;
            if c.world_rank(c.rank()) == c.rank() {
                IO_RANK.store(c.rank() as c_int, Ordering::Relaxed);
                return Some(&IO_RANK);
            }
            &IO_ANY
        }
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => &UNIVERSE_SIZE,
        MPI_LASTUSEDCODE => &crate::errhandler::LAST_USED_CODE,
        MPI_APPNUM => &APPNUM,
        _ => return None,
    })
}

fn check_object(m: &Mpi, object: u32, h: c_int) -> Res {
    if object == object_type::COMM {
        m.comm_local(h).ok_or_else(|| bad_comm(h))?;
    } else if object == object_type::WIN {
        m.win(h)?;
    } else if !is_datatype_handle(h) {
        return Err(err(MPI_ERR_TYPE, format!("invalid datatype {h:#x}")));
    }
    Ok(())
}

fn callback_failed(what: &str, keyval: c_int, rc: c_int) -> MpiError {
    let class = if rc > 0 { rc } else { MPI_ERR_OTHER };
    err(class, format!("the {what} callback of keyval {keyval:#x} returned {rc}"))
}

/// Runs the delete callback of `keyval` for `value` on object `h` (tables released).
fn run_delete(k: &Keyval, h: c_int, keyval: c_int, value: usize) -> Res {
    if let Some(f) = k.delete {
        // SAFETY: the program's callback, called with the arguments MPI specifies.
        let rc = unsafe { f(h, keyval, value as *mut c_void, k.extra as *mut c_void) };
        if rc != MPI_SUCCESS {
            return Err(callback_failed("delete", keyval, rc));
        }
    }
    Ok(())
}

fn current(m: &Mpi, object: u32, h: c_int, keyval: c_int) -> Option<usize> {
    m.attrs.values.get(&(object, h))?.iter().find(|(k, _)| *k == keyval).map(|&(_, v)| v)
}

fn set(object: u32, h: c_int, keyval: c_int, value: *mut c_void) -> Res {
    let (k, old) = state::with(|m| -> Res<_> {
        // The object first: an invalid one is its class (MPI_ERR_COMM ...), as in MPICH.
        check_object(m, object, h)?;
        if predefined_for(object, keyval) {
            return Err(read_only(keyval));
        }
        let k = m.attrs.keyval(keyval, object)?;
        if k.freed {
            return Err(err(MPI_ERR_KEYVAL, format!("keyval {keyval:#x} was freed")));
        }
        Ok((k, current(m, object, h, keyval)))
    })
    .expect("MPI is running")?;
    if let Some(old) = old {
        run_delete(&k, h, keyval, old)?;
    }
    state::with(|m| {
        let list = m.attrs.values.entry((object, h)).or_default();
        match list.iter_mut().find(|(kv, _)| *kv == keyval) {
            Some(e) => e.1 = value as usize,
            None if object == object_type::COMM => list.insert(0, (keyval, value as usize)),
            None => list.push((keyval, value as usize)),
        }
    });
    Ok(())
}

/// Whether `keyval` is a predefined (read-only) attribute of objects of type `object`.
fn predefined_for(object: u32, keyval: c_int) -> bool {
    match object {
        object_type::COMM => predefined_key(keyval),
        object_type::WIN => crate::win::predefined_key(keyval),
        _ => false,
    }
}

fn predefined_key(keyval: c_int) -> bool {
    matches!(
        keyval,
        MPI_TAG_UB | MPI_HOST | MPI_IO | MPI_WTIME_IS_GLOBAL | MPI_UNIVERSE_SIZE | MPI_LASTUSEDCODE | MPI_APPNUM
    )
}

fn read_only(keyval: c_int) -> MpiError {
    err(MPI_ERR_KEYVAL, format!("predefined attribute {keyval:#x} cannot be set or deleted"))
}

unsafe fn get(m: &Mpi, object: u32, h: c_int, keyval: c_int, out: *mut c_void, flag: *mut c_int) -> Res {
    check_object(m, object, h)?;
    if out.is_null() || flag.is_null() {
        return Err(err(MPI_ERR_ARG, "null attribute_val or flag pointer"));
    }
    let builtin = match object {
        // No application number (Slurm's PMI-2 says -1): MPI_APPNUM is not set, as with MPICH.
        object_type::COMM if keyval == MPI_APPNUM && APPNUM.load(Ordering::Relaxed) < 0 => {
            *flag = 0;
            return Ok(());
        }
        object_type::COMM => predefined(m, h, keyval).map(|v| v.as_ptr() as usize),
        object_type::WIN => crate::win::predefined_attr(m, h, keyval),
        _ => None,
    };
    let value = match builtin {
        Some(v) => Some(v),
        None => {
            m.attrs.keyval(keyval, object)?;
            current(m, object, h, keyval)
        }
    };
    *flag = value.is_some() as c_int;
    if let Some(v) = value {
        // SAFETY: MPI's contract: attribute_val points to a void* to fill.
        *(out as *mut usize) = v;
    }
    Ok(())
}

fn delete(object: u32, h: c_int, keyval: c_int) -> Res {
    let (k, value) = state::with(|m| -> Res<_> {
        check_object(m, object, h)?;
        if predefined_for(object, keyval) {
            return Err(read_only(keyval));
        }
        let k = m.attrs.keyval(keyval, object)?;
        let v = current(m, object, h, keyval)
            .ok_or_else(|| err(MPI_ERR_KEYVAL, format!("no attribute for keyval {keyval:#x} on {h:#x}")))?;
        Ok((k, v))
    })
    .expect("MPI is running")?;
    run_delete(&k, h, keyval, value)?;
    state::with(|m| {
        if let Some(list) = m.attrs.values.get_mut(&(object, h)) {
            list.retain(|(kv, _)| *kv != keyval);
        }
    });
    Ok(())
}

/// The attributes of `h` with their keyvals, for copying or deleting them all.
fn all(object: u32, h: c_int) -> Vec<(c_int, usize, Keyval)> {
    state::with(|m| {
        let list = m.attrs.values.get(&(object, h)).cloned().unwrap_or_default();
        list.into_iter().filter_map(|(kv, v)| Some((kv, v, m.attrs.keyval(kv, object).ok()?))).collect()
    })
    .unwrap_or_default()
}

/// Copies the attributes of `old` to `new` through their copy callbacks (dup).
fn copy_all(object: u32, old: c_int, new: c_int) -> Res {
    let copied = copy_values(object, old)?;
    if !copied.is_empty() {
        state::with(|m| m.attrs.values.insert((object, new), copied));
    }
    Ok(())
}

/// The attributes a copy of `old` gets, through their copy callbacks (which run now): what
/// [`install_comm_attrs`] gives to the copy once it exists.
pub(crate) type Copied = Vec<(c_int, usize)>;

/// Runs the copy callbacks of `old`'s attributes for a copy made later (MPI_Comm_idup).
pub(crate) fn copy_comm_values(old: MPI_Comm) -> Res<Copied> {
    copy_values(object_type::COMM, old)
}

/// Gives communicator `new` the attributes [`copy_comm_values`] produced.
pub(crate) fn install_comm_attrs(m: &mut state::Mpi, new: MPI_Comm, copied: Copied) {
    if !copied.is_empty() {
        m.attrs.values.insert((object_type::COMM, new), copied);
    }
}

/// Drops the attributes of communicator `comm` without their delete callbacks (an idup that
/// failed: the communicator never was).
pub(crate) fn drop_comm_attrs(m: &mut state::Mpi, comm: MPI_Comm) {
    m.attrs.values.remove(&(object_type::COMM, comm));
}

fn copy_values(object: u32, old: c_int) -> Res<Copied> {
    let mut copied = Vec::new();
    for (keyval, value, k) in all(object, old) {
        let Some(f) = k.copy else { continue };
        let (mut out, mut flag) = (0usize, 0);
        // SAFETY: the program's callback (or MPIR_Dup_fn), with the arguments MPI specifies.
        let rc = unsafe {
            f(
                old,
                keyval,
                k.extra as *mut c_void,
                value as *mut c_void,
                &mut out as *mut usize as *mut c_void,
                &mut flag,
            )
        };
        if rc != MPI_SUCCESS {
            return Err(callback_failed("copy", keyval, rc));
        }
        if flag != 0 {
            copied.push((keyval, out));
        }
    }
    Ok(copied)
}

/// Deletes every attribute of `h` through its delete callback (free, finalize).
fn delete_all(object: u32, h: c_int) -> Res {
    for (keyval, value, k) in all(object, h) {
        run_delete(&k, h, keyval, value)?;
        state::with(|m| {
            if let Some(list) = m.attrs.values.get_mut(&(object, h)) {
                list.retain(|(kv, _)| *kv != keyval);
            }
        });
    }
    state::with(|m| m.attrs.values.remove(&(object, h)));
    Ok(())
}

/// Hook for MPI_Comm_dup and friends: copies `old`'s attributes to `new`.
pub(crate) fn copy_comm_attrs(old: MPI_Comm, new: MPI_Comm) -> Res {
    copy_all(object_type::COMM, old, new)
}

/// Hook for MPI_Comm_free and MPI_Finalize: deletes `comm`'s attributes.
pub(crate) fn delete_comm_attrs(comm: MPI_Comm) -> Res {
    delete_all(object_type::COMM, comm)
}

/// Hook for MPI_Win_free: deletes `win`'s attributes.
pub(crate) fn delete_win_attrs(win: MPI_Win) -> Res {
    delete_all(object_type::WIN, win)
}

/// Hook for MPI_Type_dup: copies `old`'s attributes to `new`.
pub(crate) fn copy_type_attrs(old: MPI_Datatype, new: MPI_Datatype) -> Res {
    copy_all(object_type::DATATYPE, old, new)
}

unsafe fn create_keyval(
    function: &'static str,
    object: u32,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    call(function, MPI_COMM_WORLD, |m| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "null keyval pointer"));
        }
        *keyval = m.attrs.add_keyval(object, copy, delete, extra);
        Ok(())
    })
}

unsafe fn free_keyval(function: &'static str, object: u32, keyval: *mut c_int) -> c_int {
    call(function, MPI_COMM_WORLD, |m| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "null keyval pointer"));
        }
        if predefined_for(object, *keyval) {
            return Err(read_only(*keyval));
        }
        m.attrs.keyval(*keyval, object)?;
        let i = (handle_index(*keyval) & KEYVAL_NUMBER_MASK) as usize;
        m.attrs.keyvals[i].freed = true;
        *keyval = MPI_KEYVAL_INVALID;
        Ok(())
    })
}

const COMM: u32 = object_type::COMM;
const TYPE: u32 = object_type::DATATYPE;
const WIN: u32 = object_type::WIN;

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_keyval(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval("MPI_Comm_create_keyval", COMM, copy, delete, keyval, extra)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Keyval_create(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval("MPI_Keyval_create", COMM, copy, delete, keyval, extra)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_keyval(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval("MPI_Type_create_keyval", TYPE, copy, delete, keyval, extra)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_free_keyval(keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Comm_free_keyval", COMM, keyval)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Keyval_free(keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Keyval_free", COMM, keyval)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free_keyval(keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Type_free_keyval", TYPE, keyval)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_attr(comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> c_int {
    call_unlocked("MPI_Comm_set_attr", comm, || set(COMM, comm, keyval, value))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_put(comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> c_int {
    call_unlocked("MPI_Attr_put", comm, || set(COMM, comm, keyval, value))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_attr(t: MPI_Datatype, keyval: c_int, value: *mut c_void) -> c_int {
    call_unlocked("MPI_Type_set_attr", MPI_COMM_WORLD, || set(TYPE, t, keyval, value))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_attr(
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Comm_get_attr", comm, |m| get(m, COMM, comm, keyval, value, flag))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_get(comm: MPI_Comm, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    call("MPI_Attr_get", comm, |m| get(m, COMM, comm, keyval, value, flag))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_attr(
    t: MPI_Datatype,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Type_get_attr", MPI_COMM_WORLD, |m| get(m, TYPE, t, keyval, value, flag))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_delete_attr(comm: MPI_Comm, keyval: c_int) -> c_int {
    call_unlocked("MPI_Comm_delete_attr", comm, || delete(COMM, comm, keyval))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    call_unlocked("MPI_Attr_delete", comm, || delete(COMM, comm, keyval))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_delete_attr(t: MPI_Datatype, keyval: c_int) -> c_int {
    call_unlocked("MPI_Type_delete_attr", MPI_COMM_WORLD, || delete(TYPE, t, keyval))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_keyval(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval("MPI_Win_create_keyval", WIN, copy, delete, keyval, extra)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free_keyval(keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Win_free_keyval", WIN, keyval)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_attr(win: MPI_Win, keyval: c_int, value: *mut c_void) -> c_int {
    crate::win::win_call_unlocked("MPI_Win_set_attr", win, || set(WIN, win, keyval, value))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_attr(win: MPI_Win, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    crate::win::win_call("MPI_Win_get_attr", win, |m| get(m, WIN, win, keyval, value, flag))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_delete_attr(win: MPI_Win, keyval: c_int) -> c_int {
    crate::win::win_call_unlocked("MPI_Win_delete_attr", win, || delete(WIN, win, keyval))
}

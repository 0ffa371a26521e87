//! MPI_T performance variables: what this process exchanged with each peer (messages and bytes,
//! sent and received: counters, one element per peer, indexed by MPI_COMM_WORLD rank, then the
//! peers that joined later), its one-sided operations by single copy and on mapped regions
//! of dynamic windows (counters of the process), and the length of its unexpected-message
//! queue (a level), all bound to no object. The engine keeps the counts
//! (`billboard::engine::traffic`; the RMA counts, `win/`); a handle
//! keeps what its own start, stop, reset and write make of them, as MPI 4.0 §15.3.7 has it: a
//! counter handle starts stopped at 0, counts while started, keeps its value while stopped.
//! The queue length is continuous (always started) and read-only.
//!
//! Before MPI_Init and after MPI_Finalize there is no engine: a handle allocated then has no
//! element, and a handle's counts stop where the engine left them.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

use billboard::engine::traffic::Traffic;

use super::{copy_string, initialized, name_arg, new_handle, put};
use crate::abi::*;

/// The address MPI_T_PVAR_ALL_HANDLES points at (exports.rs): no handle has it.
pub(crate) static ALL_HANDLES: u8 = 0;

/// What a performance variable measures.
#[derive(Clone, Copy)]
enum Measure {
    Counter(fn(&Traffic) -> u64),
    /// A count of the whole process (one element).
    Process(fn() -> u64),
    UnexpectedQueue,
}

pub(super) struct Pvar {
    name: &'static str,
    desc: &'static str,
    measure: Measure,
    /// The category (a layer of `billboard::tunables::layers`) that lists it.
    pub category: &'static str,
}

pub(super) static PVARS: &[Pvar] = &[
    Pvar {
        name: "bb_messages_sent",
        desc: "messages this process sent to each peer (each reader of a multicast post counts), by world rank",
        measure: Measure::Counter(|t| t.sent_messages),
        category: "engine",
    },
    Pvar {
        name: "bb_bytes_sent",
        desc: "payload bytes of the messages this process sent to each peer, by world rank",
        measure: Measure::Counter(|t| t.sent_bytes),
        category: "engine",
    },
    Pvar {
        name: "bb_messages_received",
        desc: "messages that arrived from each peer (matched or unexpected), by world rank",
        measure: Measure::Counter(|t| t.received_messages),
        category: "engine",
    },
    Pvar {
        name: "bb_bytes_received",
        desc: "payload bytes of the messages that arrived from each peer, by world rank",
        measure: Measure::Counter(|t| t.received_bytes),
        category: "engine",
    },
    Pvar {
        name: "bb_rma_single_copies",
        desc: "process_vm_writev/readv calls this process's RMA made (puts and gets on other processes' private window memory)",
        measure: Measure::Process(crate::win::single_copy_count),
        category: "rma",
    },
    Pvar {
        name: "bb_rma_mapped_operations",
        desc: "RMA operations this process did by loads, stores and CPU atomics on regions of dynamic windows it maps (MPI_Alloc_mem memory)",
        measure: Measure::Process(crate::win::mapped_operation_count),
        category: "rma",
    },
    Pvar {
        name: "bb_rma_prepared_atomics",
        desc: "MPI_Fetch_and_op and MPI_Compare_and_swap calls this process did by the path its window prepared (loads, stores and CPU atomics on memory it maps)",
        measure: Measure::Process(crate::win::prepared_atomic_count),
        category: "rma",
    },
    Pvar {
        // MPICH's name for the same level.
        name: "unexpected_recvq_length",
        desc: "messages that arrived before their receive was posted, waiting now",
        measure: Measure::UnexpectedQueue,
        category: "engine",
    },
];

impl Pvar {
    fn class(&self) -> c_int {
        match self.measure {
            Measure::Counter(_) | Measure::Process(_) => MPI_T_PVAR_CLASS_COUNTER,
            Measure::UnexpectedQueue => MPI_T_PVAR_CLASS_LEVEL,
        }
    }

    fn continuous(&self) -> bool {
        matches!(self.measure, Measure::UnexpectedQueue)
    }

    /// The engine's values now, one per element (none without an engine).
    fn now(&self) -> Vec<u64> {
        let Some(engine) = crate::state::with(|m| m.engine.clone()) else { return Vec::new() };
        match self.measure {
            Measure::Counter(field) => engine.traffic().iter().map(field).collect(),
            Measure::Process(count) => vec![count()],
            Measure::UnexpectedQueue => vec![engine.unexpected_messages() as u64],
        }
    }
}

/// One handle: a counter's value is `kept` plus, while started, what the engine counted since
/// `since`.
struct Handle {
    session: usize,
    pvar: &'static Pvar,
    started: bool,
    since: Vec<u64>,
    kept: Vec<u64>,
}

impl Handle {
    fn value(&self, now: &[u64]) -> Vec<u64> {
        match self.pvar.measure {
            Measure::UnexpectedQueue => now.to_vec(),
            Measure::Counter(_) | Measure::Process(_) => (0..self.kept.len())
                .map(|i| {
                    let since = if self.started { self.since[i] } else { now.get(i).copied().unwrap_or(0) };
                    self.kept[i] + now.get(i).copied().unwrap_or(since).saturating_sub(since)
                })
                .collect(),
        }
    }

    /// Sets the value to `to` from now on (reset: zeros; write: the caller's).
    fn set(&mut self, now: &[u64], to: &[u64]) {
        self.kept.copy_from_slice(to);
        for (i, s) in self.since.iter_mut().enumerate() {
            *s = now.get(i).copied().unwrap_or(*s);
        }
    }
}

#[derive(Default)]
struct Tables {
    /// Live sessions, each with its handles.
    sessions: HashMap<usize, Vec<usize>>,
    handles: HashMap<usize, Handle>,
}

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);

fn with_tables<R>(f: impl FnOnce(&mut Tables) -> R) -> R {
    f(TABLES.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Tables::default))
}

fn pvar(index: c_int) -> Result<&'static Pvar, c_int> {
    usize::try_from(index).ok().and_then(|i| PVARS.get(i)).ok_or(MPI_T_ERR_INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    initialized(|| match num_pvar.as_mut() {
        Some(n) => {
            *n = PVARS.len() as c_int;
            MPI_SUCCESS
        }
        None => MPI_T_ERR_INVALID,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut *const c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    initialized(|| {
        let p = match pvar(pvar_index) {
            Ok(p) => p,
            Err(code) => return code,
        };
        copy_string(&super::registry::c_string(p.name), name, name_len);
        copy_string(&super::registry::c_string(p.desc), desc, desc_len);
        put(verbosity, MPI_T_VERBOSITY_USER_BASIC);
        put(var_class, p.class());
        put(datatype, if p.continuous() { MPI_UNSIGNED } else { MPI_UNSIGNED_LONG_LONG });
        put(enumtype, std::ptr::null());
        put(bind, MPI_T_BIND_NO_OBJECT);
        put(readonly, p.continuous() as c_int);
        put(continuous, p.continuous() as c_int);
        // MPI_T_pvar_readreset reads and resets from one look at the engine's counts.
        put(atomic, 1);
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    initialized(|| {
        let (Some(name), false) = (name_arg(name), pvar_index.is_null()) else { return MPI_T_ERR_INVALID };
        match PVARS.iter().position(|p| p.name.as_bytes() == name.to_bytes() && p.class() == var_class) {
            Some(i) => {
                *pvar_index = i as c_int;
                MPI_SUCCESS
            }
            None => MPI_T_ERR_INVALID_NAME,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_session_create(session: *mut *mut c_void) -> c_int {
    initialized(|| {
        let Some(out) = session.as_mut() else { return MPI_T_ERR_INVALID };
        let s = new_handle();
        with_tables(|t| t.sessions.insert(s, Vec::new()));
        *out = s as *mut c_void;
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_session_free(session: *mut *mut c_void) -> c_int {
    initialized(|| {
        let Some(s) = session.as_mut() else { return MPI_T_ERR_INVALID };
        let freed = with_tables(|t| {
            let handles = t.sessions.remove(&(*s as usize))?;
            for h in handles {
                t.handles.remove(&h);
            }
            Some(())
        });
        match freed {
            Some(()) => {
                *s = std::ptr::null_mut();
                MPI_SUCCESS
            }
            None => MPI_T_ERR_INVALID_SESSION,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_handle_alloc(
    session: *mut c_void,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut *mut c_void,
    count: *mut c_int,
) -> c_int {
    initialized(|| {
        let p = match pvar(pvar_index) {
            Ok(p) => p,
            Err(code) => return code,
        };
        if handle.is_null() || count.is_null() {
            return MPI_T_ERR_INVALID;
        }
        let now = p.now();
        let n = match p.measure {
            Measure::Counter(_) => now.len(),
            Measure::Process(_) | Measure::UnexpectedQueue => 1,
        };
        let h = new_handle();
        let added = with_tables(|t| {
            t.sessions.get_mut(&(session as usize))?.push(h);
            let since = if now.len() == n { now } else { vec![0; n] };
            t.handles.insert(h, Handle { session: session as usize, pvar: p, started: false, since, kept: vec![0; n] });
            Some(())
        });
        if added.is_none() {
            return MPI_T_ERR_INVALID_SESSION;
        }
        *handle = h as *mut c_void;
        *count = n as c_int;
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_handle_free(session: *mut c_void, handle: *mut *mut c_void) -> c_int {
    initialized(|| {
        let Some(h) = handle.as_mut() else { return MPI_T_ERR_INVALID };
        let code = with_tables(|t| {
            let Some(list) = t.sessions.get_mut(&(session as usize)) else { return MPI_T_ERR_INVALID_SESSION };
            let Some(pos) = list.iter().position(|&x| x == *h as usize) else { return MPI_T_ERR_INVALID_HANDLE };
            list.swap_remove(pos);
            t.handles.remove(&(*h as usize));
            MPI_SUCCESS
        });
        if code == MPI_SUCCESS {
            *h = std::ptr::null_mut();
        }
        code
    })
}

/// Runs `op` on handle `h` of `session`, or on each of the session's handles for
/// MPI_T_PVAR_ALL_HANDLES (where `all` says whether a handle takes part; `op`'s errors are
/// then not reported).
fn each_handle(
    session: *mut c_void,
    h: *mut c_void,
    all: fn(&Handle) -> bool,
    op: impl Fn(&mut Handle) -> c_int,
) -> c_int {
    with_tables(|t| {
        let Some(list) = t.sessions.get(&(session as usize)) else { return MPI_T_ERR_INVALID_SESSION };
        if std::ptr::eq(h.cast_const(), (&ALL_HANDLES as *const u8).cast()) {
            for id in list.clone() {
                if let Some(handle) = t.handles.get_mut(&id).filter(|x| all(x)) {
                    op(handle);
                }
            }
            return MPI_SUCCESS;
        }
        match t.handles.get_mut(&(h as usize)).filter(|x| x.session == session as usize) {
            Some(handle) => op(handle),
            None => MPI_T_ERR_INVALID_HANDLE,
        }
    })
}

/// Runs `op` on one handle whose value goes to or comes from the caller's buffer (read,
/// readreset, write): those refuse MPI_T_PVAR_ALL_HANDLES, and a null buffer once the session
/// and handle are found good, as MPICH does.
fn with_buffer(session: *mut c_void, h: *mut c_void, buf_is_null: bool, op: impl Fn(&mut Handle) -> c_int) -> c_int {
    if std::ptr::eq(h.cast_const(), (&ALL_HANDLES as *const u8).cast()) {
        return MPI_T_ERR_INVALID_HANDLE;
    }
    each_handle(session, h, |_| false, |handle| if buf_is_null { MPI_T_ERR_INVALID } else { op(handle) })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_start(session: *mut c_void, handle: *mut c_void) -> c_int {
    initialized(|| {
        each_handle(
            session,
            handle,
            |h| !h.pvar.continuous(),
            |h| {
                if h.pvar.continuous() {
                    return MPI_T_ERR_PVAR_NO_STARTSTOP;
                }
                if !h.started {
                    let now = h.pvar.now();
                    h.set(&now, &h.kept.clone());
                    h.started = true;
                }
                MPI_SUCCESS
            },
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_stop(session: *mut c_void, handle: *mut c_void) -> c_int {
    initialized(|| {
        each_handle(
            session,
            handle,
            |h| !h.pvar.continuous(),
            |h| {
                if h.pvar.continuous() {
                    return MPI_T_ERR_PVAR_NO_STARTSTOP;
                }
                if h.started {
                    let now = h.pvar.now();
                    h.kept = h.value(&now);
                    h.started = false;
                }
                MPI_SUCCESS
            },
        )
    })
}

/// Copies a handle's value into the caller's buffer (its datatype: `pvar_get_info`).
unsafe fn write_out(h: &Handle, value: &[u64], buf: *mut c_void) {
    if h.pvar.continuous() {
        *buf.cast::<c_uint>() = value.first().copied().unwrap_or(0) as c_uint;
    } else {
        std::ptr::copy_nonoverlapping(value.as_ptr(), buf.cast::<u64>(), value.len());
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_read(session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    initialized(|| {
        with_buffer(session, handle, buf.is_null(), |h| {
            let now = h.pvar.now();
            // SAFETY: the caller's buffer holds `count` elements of the variable's datatype.
            unsafe { write_out(h, &h.value(&now), buf) };
            MPI_SUCCESS
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_readreset(session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    initialized(|| {
        with_buffer(session, handle, buf.is_null(), |h| {
            if h.pvar.continuous() {
                return MPI_T_ERR_PVAR_NO_WRITE;
            }
            let now = h.pvar.now();
            // SAFETY: the caller's buffer holds `count` elements of the variable's datatype.
            unsafe { write_out(h, &h.value(&now), buf) };
            h.set(&now, &vec![0; h.kept.len()]);
            MPI_SUCCESS
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_reset(session: *mut c_void, handle: *mut c_void) -> c_int {
    initialized(|| {
        each_handle(
            session,
            handle,
            |h| !h.pvar.continuous(),
            |h| {
                if h.pvar.continuous() {
                    return MPI_T_ERR_PVAR_NO_WRITE;
                }
                let now = h.pvar.now();
                h.set(&now, &vec![0; h.kept.len()]);
                MPI_SUCCESS
            },
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_write(session: *mut c_void, handle: *mut c_void, buf: *const c_void) -> c_int {
    initialized(|| {
        with_buffer(session, handle, buf.is_null(), |h| {
            if h.pvar.continuous() {
                return MPI_T_ERR_PVAR_NO_WRITE;
            }
            // SAFETY: the caller's buffer holds `count` elements of the variable's datatype.
            let to = unsafe { std::slice::from_raw_parts(buf.cast::<u64>(), h.kept.len()) }.to_vec();
            let now = h.pvar.now();
            h.set(&now, &to);
            MPI_SUCCESS
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> Handle {
        Handle { session: 1, pvar: &PVARS[1], started: false, since: vec![10, 20], kept: vec![0, 0] }
    }

    /// MPI 4.0 §15.3.7: a counter handle starts stopped at 0, counts only while started, keeps
    /// its value while stopped, and reset or write set it from now on.
    #[test]
    fn a_counter_counts_only_while_started() {
        let mut h = counter();
        assert_eq!(h.value(&[15, 20]), [0, 0], "stopped: what the engine counted does not show");
        h.set(&[15, 20], &h.kept.clone());
        h.started = true;
        assert_eq!(h.value(&[18, 26]), [3, 6]);
        h.kept = h.value(&[18, 26]);
        h.started = false;
        assert_eq!(h.value(&[100, 100]), [3, 6], "stopped again: the value stays");
        h.set(&[100, 100], &h.kept.clone());
        h.started = true;
        assert_eq!(h.value(&[101, 100]), [4, 6], "restarted: it goes on from its value");
        h.set(&[101, 100], &[0, 0]);
        assert_eq!(h.value(&[101, 102]), [0, 2], "reset: from zero, from now on");
        h.set(&[101, 102], &[50, 60]);
        assert_eq!(h.value(&[102, 102]), [51, 60], "write: from the value written");
    }

    /// A handle allocated for more peers than the engine now reports (after MPI_Finalize) keeps
    /// its value instead of failing.
    #[test]
    fn a_counter_without_an_engine_keeps_its_value() {
        let mut h = counter();
        h.started = true;
        h.kept = vec![7, 8];
        assert_eq!(h.value(&[]), [7, 8]);
    }
}

//! Info objects: ordered (key, value) string lists behind `MPI_Info` handles, and the
//! read-only `MPI_INFO_ENV` describing how this process was started.
//!
//! MPI 4.0 lets a program make and fill info objects before MPI_Init or MPI_Session_init (the
//! hints of its first session, such as its thread level), so their table is not part of the
//! library's state: it has a lock of its own, and the info calls work at any time.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Mutex;

use crate::abi::*;
use crate::error::{copy_out, err, guard, handle, out, MpiError, Res};
use crate::state::{self, Mpi};

type Entries = Vec<(String, String)>;

/// Info objects by handle (direct handles indexing `table`).
#[derive(Default)]
pub(crate) struct Infos {
    table: Vec<Option<Entries>>,
    free: Vec<u32>,
    /// MPI_INFO_ENV, built on first use.
    env: Option<Entries>,
}

static INFOS: Mutex<Infos> = Mutex::new(Infos { table: Vec::new(), free: Vec::new(), env: None });

/// The library has started: MPI_INFO_ENV tells the job's size and the thread level.
pub(crate) fn started(world_size: usize, thread_level: c_int) {
    with_infos(|infos| infos.env = Some(env_entries(world_size, thread_level)));
}

/// Runs `f` on the info table.
pub(crate) fn with_infos<R>(f: impl FnOnce(&mut Infos) -> R) -> R {
    f(&mut INFOS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs an info call's body at any time: an error goes through MPI_COMM_WORLD's handler while
/// the library runs, and is returned as its class otherwise (before MPI_Init, or after
/// MPI_Finalize).
fn info_call(function: &'static str, body: impl FnOnce(&mut Infos) -> Res) -> c_int {
    guard(function, || match with_infos(body) {
        Ok(()) => MPI_SUCCESS,
        Err(e) if state::phase() == state::RUNNING => handle(function, MPI_COMM_WORLD, e),
        Err(e) => e.class,
    })
}

/// MPI_INFO_NULL where an info object is needed is MPI_ERR_ARG, as MPICH says; any other
/// handle that names no info object, MPI_ERR_INFO.
fn bad_info(h: MPI_Info) -> MpiError {
    if h == MPI_INFO_NULL {
        return err(MPI_ERR_ARG, "MPI_INFO_NULL is not an info object");
    }
    err(MPI_ERR_INFO, format!("invalid info object {h:#x}"))
}

fn user_index(h: MPI_Info) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::INFO)
        .then_some(handle_index(h) as usize)
}

/// The keys of MPI_INFO_ENV (MPI 3.1 section 9.4.1) this library can tell.
fn env_entries(world_size: usize, thread_level: c_int) -> Entries {
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    let level = ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"];
    let mut e: Entries = Vec::new();
    if let Some(cmd) = args.first() {
        e.push(("command".into(), cmd.clone()));
        e.push(("argv".into(), args[1..].join(" ")));
    }
    e.push(("maxprocs".into(), world_size.to_string()));
    e.push(("host".into(), crate::env::host_name().to_string()));
    if let Ok(dir) = std::env::current_dir() {
        e.push(("wdir".into(), dir.display().to_string()));
    }
    e.push(("thread_level".into(), level[thread_level.clamp(0, 3) as usize].into()));
    e
}

impl Infos {
    /// The entries of info `h` (`MPI_INFO_ENV` included).
    fn get(&mut self, h: MPI_Info) -> Res<&Entries> {
        if h == MPI_INFO_ENV {
            // Before the library starts (which sets it, see `started`): one process, single.
            return Ok(self.env.get_or_insert_with(|| env_entries(1, MPI_THREAD_SINGLE)));
        }
        let i = user_index(h).ok_or_else(|| bad_info(h))?;
        self.table.get(i).and_then(|e| e.as_ref()).ok_or_else(|| bad_info(h))
    }

    /// The entries of a user info object, for changing (`MPI_INFO_ENV` is read-only).
    fn get_mut(&mut self, h: MPI_Info) -> Res<&mut Entries> {
        if h == MPI_INFO_ENV {
            return Err(err(MPI_ERR_INFO, "MPI_INFO_ENV is read-only"));
        }
        let i = user_index(h).ok_or_else(|| bad_info(h))?;
        self.table.get_mut(i).and_then(|e| e.as_mut()).ok_or_else(|| bad_info(h))
    }

    /// The value of `key` in info `h`, if set.
    pub fn value(&mut self, h: MPI_Info, key: &str) -> Res<Option<String>> {
        Ok(self.get(h)?.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
    }

    /// Sets `key` to `value` in user info `h` (a call that reports through its info argument).
    pub fn set(&mut self, h: MPI_Info, key: &str, value: &str) -> Res {
        let entries = self.get_mut(h)?;
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value.to_string(),
            None => entries.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    fn add(&mut self, entries: Entries) -> MPI_Info {
        let i = crate::state::store(&mut self.table, &mut self.free, entries);
        make_handle(HandleKind::Direct, object_type::INFO, i)
    }
}

/// The calls of the other families reach info objects through the state, as they reach every
/// object (the info table's lock is taken inside the state's, never the other way round).
impl Mpi {
    /// The entries of info `h` (`MPI_INFO_ENV` included).
    pub fn info(&mut self, h: MPI_Info) -> Res<Entries> {
        with_infos(|infos| infos.get(h).cloned())
    }

    pub fn add_info(&mut self, entries: Entries) -> MPI_Info {
        with_infos(|infos| infos.add(entries))
    }

    /// Checks an info argument of a constructor (MPI_INFO_NULL allowed).
    pub fn check_info(&mut self, h: MPI_Info) -> Res {
        if h != MPI_INFO_NULL {
            self.info(h)?;
        }
        Ok(())
    }
}

/// A key from C: non-null, non-empty, at most MPI_MAX_INFO_KEY characters.
unsafe fn key_arg(key: *const c_char) -> Res<String> {
    if key.is_null() {
        return Err(err(MPI_ERR_INFO_KEY, "null info key"));
    }
    // SAFETY: a NUL-terminated string from the caller, checked non-null.
    let k = CStr::from_ptr(key).to_string_lossy().into_owned();
    let trimmed = k.trim();
    if trimmed.is_empty() {
        return Err(err(MPI_ERR_INFO_KEY, "empty info key"));
    }
    if k.len() > MPI_MAX_INFO_KEY as usize {
        return Err(err(
            MPI_ERR_INFO_KEY,
            format!("info key of {} characters (MPI_MAX_INFO_KEY is {MPI_MAX_INFO_KEY})", k.len()),
        ));
    }
    Ok(trimmed.to_string())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create(info: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_create", |m| {
        if info.is_null() {
            return Err(err(MPI_ERR_ARG, "null info pointer"));
        }
        *info = m.add(Vec::new());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    info_call("MPI_Info_set", |m| {
        let entries = m.get_mut(info)?;
        let key = key_arg(key)?;
        if value.is_null() {
            return Err(err(MPI_ERR_INFO_VALUE, format!("null value for info key '{key}'")));
        }
        // SAFETY: a NUL-terminated string from the caller, checked non-null.
        let value = CStr::from_ptr(value).to_string_lossy().into_owned();
        if value.len() > MPI_MAX_INFO_VAL as usize {
            let n = value.len();
            return Err(err(
                MPI_ERR_INFO_VALUE,
                format!("value of {n} characters for '{key}' (MPI_MAX_INFO_VAL is {MPI_MAX_INFO_VAL})"),
            ));
        }
        match entries.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = value,
            None => entries.push((key, value)),
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    info_call("MPI_Info_delete", |m| {
        let entries = m.get_mut(info)?;
        let key = key_arg(key)?;
        let i = entries.iter().position(|(k, _)| *k == key);
        let i = i.ok_or_else(|| err(MPI_ERR_INFO_NOKEY, format!("info key '{key}' is not set")))?;
        entries.remove(i);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get", |m| {
        let flag = out(flag, "flag")?;
        let entries = m.get(info)?;
        let key = key_arg(key)?;
        if valuelen < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative valuelen {valuelen}")));
        }
        match entries.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                // MPI 3.1: up to valuelen characters, then a NUL (the buffer holds valuelen + 1).
                copy_out(v, value, std::ptr::null_mut(), valuelen + 1);
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

/// MPI_Info_get_string (MPI 4.0): the value of `key` if set, cut to fit `*buflen` characters
/// with its NUL (nothing is written when `*buflen` is 0); `*buflen` becomes the length the whole
/// value needs, its NUL included.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get_string", |m| {
        let flag = out(flag, "flag")?;
        let buflen = out(buflen, "buflen")?;
        let entries = m.get(info)?;
        let key = key_arg(key)?;
        if *buflen < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative buflen {}", *buflen)));
        }
        if *buflen > 0 && value.is_null() {
            return Err(err(MPI_ERR_ARG, format!("null value buffer with buflen {}", *buflen)));
        }
        match entries.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                if *buflen > 0 {
                    copy_out(v, value, std::ptr::null_mut(), *buflen);
                }
                *buflen = v.len() as c_int + 1;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

/// MPI_Info_create_env (MPI 4.0): a new info object holding what MPI_INFO_ENV holds.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    let _ = (argc, argv);
    info_call("MPI_Info_create_env", |m| {
        let info = out(info, "info")?;
        let entries = m.get(MPI_INFO_ENV)?.clone();
        *info = m.add(entries);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get_valuelen", |m| {
        let flag = out(flag, "flag")?;
        let entries = m.get(info)?;
        let key = key_arg(key)?;
        match entries.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                *out(valuelen, "valuelen")? = v.len() as c_int;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    info_call("MPI_Info_get_nkeys", |m| {
        *out(nkeys, "nkeys")? = m.get(info)?.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    info_call("MPI_Info_get_nthkey", |m| {
        let entries = m.get(info)?;
        let len = entries.len();
        let (k, _) = usize::try_from(n)
            .ok()
            .and_then(|i| entries.get(i))
            .ok_or_else(|| err(MPI_ERR_ARG, format!("key number {n} of an info object with {len} keys")))?;
        copy_out(k, key, std::ptr::null_mut(), MPI_MAX_INFO_KEY + 1);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_dup", |m| {
        let copy = m.get(info)?.clone();
        *out(newinfo, "newinfo")? = m.add(copy);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_free(info: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_free", |m| {
        if info.is_null() {
            return Err(err(MPI_ERR_ARG, "null info pointer"));
        }
        m.get_mut(*info)?;
        let i = handle_index(*info);
        m.table[i as usize] = None;
        m.free.push(i);
        *info = MPI_INFO_NULL;
        Ok(())
    })
}

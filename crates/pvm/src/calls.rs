//! The task calls: enrolling and leaving, spawning and killing, notification, options, and
//! what the virtual machine holds (`pvm_config`, `pvm_tasks`). Sending and receiving are in
//! `sendrecv.rs`.

use std::ffi::{c_char, c_int, CStr, CString};

use crate::error::PvmError;
use crate::place;
use crate::state::{call, lock, put};
use crate::wire::{Frame, SpawnRequest};

/// `struct pvmhostinfo`.
#[repr(C)]
pub struct HostInfo {
    pub hi_tid: c_int,
    pub hi_name: *const c_char,
    pub hi_arch: *const c_char,
    pub hi_speed: c_int,
    pub hi_dsig: c_int,
}

/// `struct pvmtaskinfo`.
#[repr(C)]
pub struct TaskInfo {
    pub ti_tid: c_int,
    pub ti_ptid: c_int,
    pub ti_host: c_int,
    pub ti_flag: c_int,
    pub ti_a_out: *const c_char,
    pub ti_pid: c_int,
}

// SAFETY: the pointers point into CStrings kept beside these arrays in the library's state.
unsafe impl Send for HostInfo {}
// SAFETY: as above.
unsafe impl Send for TaskInfo {}

const NO_PARENT: i32 = -23;

/// Options `pvm_setopt` takes (PVM's numbers).
const OPT_ROUTE: i32 = 1;
const OPT_AUTO_ERR: i32 = 3;
const OPT_SHOW_TIDS: i32 = 18;
/// Where children's output goes (`PvmOutputTid`, `PvmOutputCode`, `PvmOutputContext`), and
/// where this task's own goes (`PvmSelfOutput*`, set by its spawner).
const OPT_OUTPUT: [usize; 3] = [4, 5, 21];
const OPT_SELF_OUTPUT: [usize; 3] = [12, 13, 23];
const ROUTE_DIRECT: i32 = 3;

#[no_mangle]
pub extern "C" fn pvm_mytid() -> c_int {
    call("pvm_mytid", |lib| Ok(lib.task()?.tid))
}

#[no_mangle]
pub extern "C" fn pvm_parent() -> c_int {
    call("pvm_parent", |lib| Ok(lib.task()?.ptid))
}

/// The tids spawned together with this task (itself alone when started from a shell).
#[no_mangle]
pub unsafe extern "C" fn pvm_siblings(tids: *mut *mut c_int) -> c_int {
    call("pvm_siblings", |lib| {
        let t = lib.task()?;
        // SAFETY: C's contract: null or a place for a pointer; the array lives with the task.
        unsafe { put(tids, t.siblings.as_mut_ptr()) };
        Ok(t.siblings.len() as c_int)
    })
}

#[no_mangle]
pub extern "C" fn pvm_exit() -> c_int {
    call("pvm_exit", |lib| {
        // Its entry only, as Debian's library traces it: there is no tracing after.
        crate::trace::event_of(lib, crate::trace::TEV_EXIT, true, &[]);
        crate::trace_summary::flush_summary(lib);
        if let Some(t) = lib.task.take() {
            t.leave();
            crate::compat::pvmmytid.store(-1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(0)
    })
}

#[no_mangle]
pub extern "C" fn pvm_halt() -> c_int {
    call("pvm_halt", |lib| {
        let r = lib.task()?.request_status(&Frame::Halt);
        if let Some(t) = lib.task.take() {
            drop(t);
        }
        r
    })
}

/// Reads a NULL-terminated `char **` (null: none).
///
/// # Safety
/// `argv` is null or a NULL-terminated array of C strings.
unsafe fn strings(argv: *const *const c_char) -> Vec<String> {
    let mut out = Vec::new();
    if argv.is_null() {
        return out;
    }
    for i in 0.. {
        // SAFETY: the caller's contract: entries up to the terminating NULL are readable.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: each entry is a NUL-terminated string.
        out.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
    }
    out
}

/// Where spawned programs are looked for: `$PVM_PATH`, else PVM's default folders.
fn search_path() -> Vec<String> {
    if let Ok(p) = std::env::var("PVM_PATH") {
        return p.split(':').filter(|d| !d.is_empty()).map(String::from).collect();
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let root = std::env::var("PVM_ROOT").unwrap_or_else(|_| "/usr/lib/pvm3".into());
    vec![format!("{home}/pvm3/bin/{}", place::ARCH), format!("{root}/bin/{}", place::ARCH)]
}

/// The variables a spawn passes on: those `$PVM_EXPORT` names, and `PVM_EXPORT` itself.
fn exported_env() -> Vec<String> {
    let Ok(names) = std::env::var("PVM_EXPORT") else { return Vec::new() };
    let mut out = vec![format!("PVM_EXPORT={names}")];
    for n in names.split(':').filter(|n| !n.is_empty()) {
        if let Ok(v) = std::env::var(n) {
            out.push(format!("{n}={v}"));
        }
    }
    out
}

#[no_mangle]
pub unsafe extern "C" fn pvm_spawn(
    file: *mut c_char,
    argv: *mut *mut c_char,
    flags: c_int,
    place: *mut c_char,
    count: c_int,
    tids: *mut c_int,
) -> c_int {
    call("pvm_spawn", |lib| {
        let traced = crate::trace::on(lib);
        if traced {
            // SAFETY: C's contract: file and where are strings, or null.
            let (f, w) = unsafe { (c_bytes(file), c_bytes(place)) };
            crate::trace::spawn_entry(lib, f, w, flags, count);
        }
        let mut got = Vec::new();
        // SAFETY: C's contract, as pvm_spawn's.
        let r = unsafe { spawn(lib, file, argv, flags, place, count, tids, &mut got) };
        if traced {
            crate::trace::spawn_exit(lib, r.unwrap_or_else(|e| e.code()), &got);
        }
        r
    })
}

/// A C string's bytes (null: none).
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn c_bytes<'a>(s: *const c_char) -> &'a [u8] {
    match s.is_null() {
        true => &[],
        // SAFETY: the caller's contract.
        false => unsafe { CStr::from_ptr(s) }.to_bytes(),
    }
}

/// `pvm_spawn`'s work: the tasks started (`got`: their tids, or an error code each).
///
/// # Safety
/// As `pvm_spawn`'s C contract.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn(
    lib: &mut crate::state::Lib,
    file: *mut c_char,
    argv: *mut *mut c_char,
    flags: c_int,
    place: *mut c_char,
    count: c_int,
    tids: *mut c_int,
    got: &mut Vec<i32>,
) -> Result<c_int, PvmError> {
    if file.is_null() || count < 1 {
        return Err(PvmError::BadParam);
    }
    // SAFETY: C's contract: file and where are strings (where may be null), argv null or
    // NULL-terminated.
    let (file, argv, place) = unsafe {
        (
            CStr::from_ptr(file).to_string_lossy().into_owned(),
            strings(argv.cast()),
            if place.is_null() { String::new() } else { CStr::from_ptr(place).to_string_lossy().into_owned() },
        )
    };
    let req = SpawnRequest {
        file,
        argv,
        flags,
        place,
        count,
        path: search_path(),
        env: exported_env().into_iter().chain(crate::trace::child_env(lib)).collect(),
        cwd: std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default(),
        output: OPT_OUTPUT.map(|o| lib.opts[o]),
    };
    let Frame::Spawned { tids: spawned } = lib.task()?.request(&Frame::Spawn(req))? else {
        return Err(PvmError::SysErr);
    };
    *got = spawned;
    if !tids.is_null() {
        for (i, &t) in got.iter().enumerate().take(count as usize) {
            // SAFETY: C's contract: room for count tids.
            unsafe { *tids.add(i) = t };
        }
    }
    Ok(got.iter().filter(|&&t| t > 0).count() as c_int)
}

/// A spawned task's output options, from its spawner (`place::OUTPUT_ENV`): its own output
/// goes there, and so by default does its children's. The variable is dropped, as the tid
/// is: a program this task starts by itself is not its child in PVM's sense.
pub(crate) fn inherit_output(opts: &mut [i32; 32]) {
    let Ok(text) = std::env::var(place::OUTPUT_ENV) else { return };
    std::env::remove_var(place::OUTPUT_ENV);
    let got: Vec<i32> = text.split(',').filter_map(|v| v.parse().ok()).collect();
    if let [tid, tag, ctx] = got[..] {
        // The program may have chosen its children's already, before it enrolled.
        let chosen = opts[OPT_OUTPUT[0]] != 0;
        for (i, v) in [tid, tag, ctx].into_iter().enumerate() {
            opts[OPT_SELF_OUTPUT[i]] = v;
            if !chosen {
                opts[OPT_OUTPUT[i]] = v;
            }
        }
    }
}

#[no_mangle]
pub extern "C" fn pvm_kill(tid: c_int) -> c_int {
    call("pvm_kill", |lib| lib.task()?.request_status(&Frame::Kill { tid, sig: libc::SIGTERM }))
}

#[no_mangle]
pub extern "C" fn pvm_pstat(tid: c_int) -> c_int {
    call("pvm_pstat", |lib| lib.task()?.request_status(&Frame::Lookup { tid }).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn pvm_mstat(host: *mut c_char) -> c_int {
    call("pvm_mstat", |lib| {
        if host.is_null() {
            return Err(PvmError::BadParam);
        }
        // SAFETY: C's contract: a host name.
        let name = unsafe { CStr::from_ptr(host) }.to_string_lossy().into_owned();
        let Frame::ConfigIs { hosts } = lib.task()?.request(&Frame::Config)? else { return Err(PvmError::SysErr) };
        hosts.iter().any(|h| h.name == name || name == "localhost").then_some(0).ok_or(PvmError::NoHost)
    })
}

#[no_mangle]
pub extern "C" fn pvm_tidtohost(tid: c_int) -> c_int {
    call("pvm_tidtohost", |_| {
        if place::is_task_tid(tid) || (tid > 0 && place::host_of(tid) == tid) {
            Ok(place::host_of(tid))
        } else {
            Err(PvmError::BadParam)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_notify(what: c_int, tag: c_int, count: c_int, tids: *mut c_int) -> c_int {
    call("pvm_notify", |lib| {
        // Task exits and host deletions take a list of tids; host additions a count (-1:
        // every time), passed on as the list's one item.
        const HOST_ADD: c_int = 3;
        if what & !256 == HOST_ADD {
            return lib.task()?.request_status(&Frame::Notify { what, tag, tids: vec![count] });
        }
        let listed = matches!(what & !256, 1 | 2);
        let n = if listed { usize::try_from(count).map_err(|_| PvmError::BadParam)? } else { 0 };
        let list = if listed && n > 0 {
            if tids.is_null() {
                return Err(PvmError::BadParam);
            }
            // SAFETY: C's contract: count tids.
            unsafe { std::slice::from_raw_parts(tids, n) }.to_vec()
        } else {
            Vec::new()
        };
        lib.task()?.request_status(&Frame::Notify { what, tag, tids: list })
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_config(nhost: *mut c_int, narch: *mut c_int, hostp: *mut *mut HostInfo) -> c_int {
    call("pvm_config", |lib| {
        let Frame::ConfigIs { hosts } = lib.task()?.request(&Frame::Config)? else { return Err(PvmError::SysErr) };
        let mut strings = Vec::new();
        let mut infos = Vec::new();
        for h in &hosts {
            let name = CString::new(h.name.clone()).unwrap_or_default();
            let arch = CString::new(h.arch.clone()).unwrap_or_default();
            infos.push(HostInfo {
                hi_tid: h.tid,
                hi_name: name.as_ptr(),
                hi_arch: arch.as_ptr(),
                hi_speed: h.speed,
                hi_dsig: h.dsig,
            });
            strings.push(name);
            strings.push(arch);
        }
        lib.hosts = (infos, strings);
        // SAFETY: C's contract: each pointer is null or a place for its value.
        unsafe {
            put(nhost, hosts.len() as c_int);
            put(narch, 1);
            put(hostp, lib.hosts.0.as_mut_ptr());
        }
        Ok(0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_tasks(which: c_int, ntask: *mut c_int, taskp: *mut *mut TaskInfo) -> c_int {
    call("pvm_tasks", |lib| {
        let tasks = match lib.task()?.request(&Frame::Tasks { which })? {
            Frame::TasksAre { tasks } => tasks,
            Frame::Status { code, .. } => return Err(PvmError::from_code(code)),
            _ => return Err(PvmError::SysErr),
        };
        let mut strings = Vec::new();
        let mut infos = Vec::new();
        for t in &tasks {
            let name = CString::new(t.name.clone()).unwrap_or_default();
            infos.push(TaskInfo {
                ti_tid: t.tid,
                ti_ptid: if t.ptid == NO_PARENT { 0 } else { t.ptid },
                ti_host: t.host,
                ti_flag: t.flag,
                ti_a_out: name.as_ptr(),
                ti_pid: t.pid,
            });
            strings.push(name);
        }
        lib.tasks = (infos, strings);
        // SAFETY: C's contract: each pointer is null or a place for its value.
        unsafe {
            put(ntask, tasks.len() as c_int);
            put(taskp, lib.tasks.0.as_mut_ptr());
        }
        Ok(0)
    })
}

/// Children spawned after this call send their output here, each line as `[t<tid>] line`
/// between `[t<tid>] BEGIN` and `[t<tid>] EOF` (as Debian's library prints it; plain lines
/// with `PvmShowTids` 0), printed during whichever call of this task it arrives in; null:
/// back to the agent's log. `pvm_exit` waits for such children to end.
#[no_mangle]
pub unsafe extern "C" fn pvm_catchout(file: *mut libc::FILE) -> c_int {
    call("pvm_catchout", |lib| {
        let t = lib.task()?;
        t.catch = (!file.is_null()).then_some(file as usize);
        t.request_status(&Frame::CatchOut { on: i32::from(!file.is_null()) })
    })
}

#[no_mangle]
pub extern "C" fn pvm_setopt(what: c_int, val: c_int) -> c_int {
    call("pvm_setopt", |lib| {
        let slot = usize::try_from(what).ok().filter(|&w| w > 0 && w < lib.opts.len()).ok_or(PvmError::BadParam)?;
        if let Some(r) = crate::trace_summary::set_own_option(lib, slot, val) {
            return r;
        }
        Ok(match what {
            OPT_AUTO_ERR => std::mem::replace(&mut lib.auto_err, val),
            OPT_SHOW_TIDS => i32::from(crate::task::SHOW_TIDS.swap(val != 0, std::sync::atomic::Ordering::Relaxed)),
            // Routes are accepted and remembered; messages always go directly between tasks.
            _ => std::mem::replace(&mut lib.opts[slot], val),
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_getopt(what: c_int) -> c_int {
    call("pvm_getopt", |lib| {
        let slot = usize::try_from(what).ok().filter(|&w| w > 0 && w < lib.opts.len()).ok_or(PvmError::BadParam)?;
        Ok(match what {
            OPT_AUTO_ERR => lib.auto_err,
            OPT_SHOW_TIDS => i32::from(crate::task::SHOW_TIDS.load(std::sync::atomic::Ordering::Relaxed)),
            OPT_ROUTE if lib.opts[slot] == 0 => ROUTE_DIRECT,
            _ => lib.opts[slot],
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_getcontext() -> c_int {
    call("pvm_getcontext", |lib| Ok(lib.task()?.ctx))
}

#[no_mangle]
pub extern "C" fn pvm_setcontext(ctx: c_int) -> c_int {
    call("pvm_setcontext", |lib| {
        if ctx < 0 {
            return Err(PvmError::BadParam);
        }
        Ok(std::mem::replace(&mut lib.task()?.ctx, ctx))
    })
}

/// A context no other task uses: this task's tid in the high bits, a counter below.
#[no_mangle]
pub extern "C" fn pvm_newcontext() -> c_int {
    static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
    call("pvm_newcontext", |lib| {
        let local = lib.task()?.tid & place::TID_LOCAL_MASK;
        Ok((local << 12) | (NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xfff))
    })
}

#[no_mangle]
pub extern "C" fn pvm_freecontext(ctx: c_int) -> c_int {
    call("pvm_freecontext", |_| if ctx < 0 { Err(PvmError::BadParam) } else { Ok(0) })
}

/// Prints `msg` and the text of the last error, as PVM does.
#[no_mangle]
pub unsafe extern "C" fn pvm_perror(msg: *mut c_char) -> c_int {
    let (tid, code) = {
        let lib = lock();
        (lib.task.as_ref().map(|t| t.tid), lib.last_err)
    };
    let msg = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: C's contract: a string.
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    };
    // No newline: Debian's library writes none (programs end the message with their own).
    let line = format!("{}: {msg}: {}", crate::state::who(tid), crate::error::text_of(code));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    0
}

/// `pvm_version`: PVM's version string.
#[no_mangle]
pub extern "C" fn pvm_version() -> *const c_char {
    c"3.4.6".as_ptr()
}

#[no_mangle]
pub extern "C" fn pvm_archcode(_arch: *mut c_char) -> c_int {
    1
}

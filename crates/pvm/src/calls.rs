//! The task calls: enrolling and leaving, spawning and killing, sending and receiving,
//! notification, and what the virtual machine holds (`pvm_config`, `pvm_tasks`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::time::Duration;

use crate::buffer::Buffer;
use crate::encoding::Encoding;
use crate::error::PvmError;
use crate::place::{self, HOST_TID};
use crate::recvf;
use crate::state::{call, lock, put, Lib};
use crate::task::Arrived;
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
            env: exported_env(),
            cwd: std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default(),
        };
        let Frame::Spawned { tids: got } = lib.task()?.request(&Frame::Spawn(req))? else {
            return Err(PvmError::SysErr);
        };
        if !tids.is_null() {
            for (i, &t) in got.iter().enumerate().take(count as usize) {
                // SAFETY: C's contract: room for count tids.
                unsafe { *tids.add(i) = t };
            }
        }
        Ok(got.iter().filter(|&&t| t > 0).count() as c_int)
    })
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
        if place::is_task_tid(tid) || tid == HOST_TID {
            Ok(HOST_TID)
        } else {
            Err(PvmError::BadParam)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_notify(what: c_int, tag: c_int, count: c_int, tids: *mut c_int) -> c_int {
    call("pvm_notify", |lib| {
        // Host notifies take a count of -1 ("every time"); task exits a list of tids.
        let n = if what & !256 == 1 { usize::try_from(count).map_err(|_| PvmError::BadParam)? } else { 0 };
        let list = if what & !256 == 1 && n > 0 {
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

/// Sends the active send buffer's message.
#[no_mangle]
pub extern "C" fn pvm_send(tid: c_int, tag: c_int) -> c_int {
    call("pvm_send", |lib| send_active(lib, &[tid], tag))
}

#[no_mangle]
pub unsafe extern "C" fn pvm_mcast(tids: *mut c_int, count: c_int, tag: c_int) -> c_int {
    call("pvm_mcast", |lib| {
        let n = usize::try_from(count).map_err(|_| PvmError::BadParam)?;
        if n > 0 && tids.is_null() {
            return Err(PvmError::BadParam);
        }
        // SAFETY: C's contract: count tids.
        let list = if n == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(tids, n) }.to_vec() };
        let me = lib.task()?.tid;
        // PVM's multicast never sends the caller a copy.
        let list: Vec<i32> = list.into_iter().filter(|&t| t != me).collect();
        send_active(lib, &list, tag)
    })
}

/// Sends the active send buffer's message to each of `tids`.
pub(crate) fn send_active(lib: &mut Lib, tids: &[i32], tag: i32) -> Result<c_int, PvmError> {
    if tag < 0 {
        return Err(PvmError::BadParam);
    }
    lib.task()?;
    // The buffer's bytes go out as they are (no copy), beside the task that sends them.
    let Lib { bufs, task, .. } = lib;
    let b = bufs.send_buffer()?;
    let enc = b.enc.on_wire().code();
    let data = b.wire_bytes();
    let task = task.as_mut().expect("enrolled above");
    for &t in tids {
        task.send(t, tag, enc, &data)?;
    }
    Ok(0)
}

/// A wait that ended with nothing for it: `Ok(none)`, unless message handlers cut it short,
/// then an error that makes `state::call` run them and the call again.
fn nothing_or_handlers(lib: &Lib, none: c_int) -> Result<c_int, PvmError> {
    match lib.task.as_ref().is_some_and(|t| t.cut_short) {
        true => Err(PvmError::SysErr),
        false => Ok(none),
    }
}

fn wildcard_ok(tid: i32, tag: i32) -> Result<(), PvmError> {
    if tid < -1 || tag < -1 {
        return Err(PvmError::BadParam);
    }
    Ok(())
}

/// A message received becomes the active receive buffer.
fn deliver(lib: &mut Lib, m: Arrived) -> c_int {
    let enc = Encoding::from_code(m.enc).unwrap_or(Encoding::Raw);
    lib.bufs.deliver(Buffer::received(enc, m.data, m.src, m.tag, m.ctx))
}

#[no_mangle]
pub extern "C" fn pvm_recv(tid: c_int, tag: c_int) -> c_int {
    if let Some(f) = recvf::installed() {
        return recvf::recv("pvm_recv", f, tid, tag, None);
    }
    call("pvm_recv", |lib| {
        wildcard_ok(tid, tag)?;
        let m = lib.task()?.receive(tid, tag, None).ok_or(PvmError::SysErr)?;
        Ok(deliver(lib, m))
    })
}

#[no_mangle]
pub extern "C" fn pvm_nrecv(tid: c_int, tag: c_int) -> c_int {
    if let Some(f) = recvf::installed() {
        return recvf::recv("pvm_nrecv", f, tid, tag, Some(Duration::ZERO));
    }
    call("pvm_nrecv", |lib| {
        wildcard_ok(tid, tag)?;
        match lib.task()?.receive(tid, tag, Some(Duration::ZERO)) {
            Some(m) => Ok(deliver(lib, m)),
            None => nothing_or_handlers(lib, 0),
        }
    })
}

/// A `struct timeval *` as a wait (null: for ever).
///
/// # Safety
/// `tmout` is null or a `struct timeval`.
unsafe fn timeout_of(tmout: *const libc::timeval) -> Result<Option<Duration>, PvmError> {
    if tmout.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    let tv = unsafe { tmout.read() };
    if tv.tv_sec < 0 || tv.tv_usec < 0 {
        return Err(PvmError::BadParam);
    }
    Ok(Some(Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)))
}

#[no_mangle]
pub unsafe extern "C" fn pvm_trecv(tid: c_int, tag: c_int, tmout: *mut libc::timeval) -> c_int {
    // SAFETY: C's contract: null or a struct timeval.
    let timeout = unsafe { timeout_of(tmout) };
    if let (Some(f), Ok(timeout)) = (recvf::installed(), timeout) {
        return recvf::recv("pvm_trecv", f, tid, tag, timeout);
    }
    call("pvm_trecv", |lib| {
        let timeout = timeout?;
        wildcard_ok(tid, tag)?;
        match lib.task()?.receive(tid, tag, timeout) {
            Some(m) => Ok(deliver(lib, m)),
            None => nothing_or_handlers(lib, 0),
        }
    })
}

/// Whether a matching message has arrived: a buffer id describing it (for `pvm_bufinfo`),
/// or 0. The message stays to be received.
#[no_mangle]
pub extern "C" fn pvm_probe(tid: c_int, tag: c_int) -> c_int {
    if let Some(f) = recvf::installed() {
        return recvf::probe(f, tid, tag);
    }
    call("pvm_probe", |lib| {
        wildcard_ok(tid, tag)?;
        let t = lib.task()?;
        let Some(i) = t.wait_for(tid, tag, Some(Duration::ZERO)) else { return nothing_or_handlers(lib, 0) };
        let m = &t.queue[i];
        let b =
            Buffer::received(Encoding::from_code(m.enc).unwrap_or(Encoding::Raw), m.data.clone(), m.src, m.tag, m.ctx);
        Ok(lib.bufs.insert(b))
    })
}

/// Bytes per item of a PVM data type (`PVM_BYTE` ... `PVM_ULONG`).
pub fn type_size(datatype: c_int) -> Result<usize, PvmError> {
    Ok(match datatype {
        1 => 1,
        2 | 9 => 2,
        3 | 4 | 10 => 4,
        6 | 5 | 8 | 11 => 8,
        7 => 16,
        _ => return Err(PvmError::BadParam),
    })
}

/// `pvm_psend`: packs and sends in one call, raw, without touching the active buffers.
#[no_mangle]
pub unsafe extern "C" fn pvm_psend(tid: c_int, tag: c_int, buf: *mut c_void, len: c_int, datatype: c_int) -> c_int {
    call("pvm_psend", |lib| {
        // SAFETY: C's contract: len items of datatype at buf.
        let data = unsafe { items(buf, len, datatype)? };
        if tag < 0 {
            return Err(PvmError::BadParam);
        }
        lib.task()?.send(tid, tag, Encoding::Raw.code(), data)?;
        Ok(0)
    })
}

/// `len` items of `datatype` at `buf` as bytes.
///
/// # Safety
/// `buf` holds `len` items of that type.
pub unsafe fn items<'a>(buf: *const c_void, len: c_int, datatype: c_int) -> Result<&'a [u8], PvmError> {
    let n = usize::try_from(len)
        .map_err(|_| PvmError::BadParam)?
        .checked_mul(type_size(datatype)?)
        .ok_or(PvmError::BadParam)?;
    if n == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(PvmError::BadParam);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast(), n) })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_precv(
    tid: c_int,
    tag: c_int,
    buf: *mut c_void,
    len: c_int,
    datatype: c_int,
    rtid: *mut c_int,
    rtag: *mut c_int,
    rlen: *mut c_int,
) -> c_int {
    // Checks the caller's buffer: its size in bytes, and the bytes per item.
    let room = || -> Result<(usize, usize), PvmError> {
        let size = type_size(datatype)?;
        let room = usize::try_from(len).map_err(|_| PvmError::BadParam)? * size;
        if room > 0 && buf.is_null() {
            return Err(PvmError::BadParam);
        }
        Ok((room, size))
    };
    // Copies a message out: as much as fits, and what it was (too long: `PvmNoMem`).
    let copy_out = |data: &[u8], src: i32, mtag: i32, (room, size): (usize, usize)| {
        let n = data.len().min(room);
        // SAFETY: C's contract: room for len items at buf (room bytes); n <= that; each
        // out-pointer null or an int.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), buf.cast::<u8>(), n);
            put(rtid, src);
            put(rtag, mtag);
            put(rlen, (data.len() / size) as c_int);
        }
        if data.len() > room {
            return Err(PvmError::NoMem);
        }
        Ok(0)
    };
    if let Some(f) = recvf::installed() {
        return crate::state::call_unlocked("pvm_precv", || {
            let room = room()?;
            let id = recvf::receive(f, tid, tag, None, recvf::Pick::Take)?.ok_or(PvmError::SysErr)?;
            let b = lock().bufs.take(id).ok_or(PvmError::NoSuchBuf)?;
            let (src, mtag) = (b.src, b.tag);
            copy_out(&b.into_data(), src, mtag, room)
        });
    }
    call("pvm_precv", |lib| {
        wildcard_ok(tid, tag)?;
        let room = room()?;
        let m = lib.task()?.receive(tid, tag, None).ok_or(PvmError::SysErr)?;
        copy_out(&m.data, m.src, m.tag, room)
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

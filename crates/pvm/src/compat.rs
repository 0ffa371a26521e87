//! The rest of the names Debian's PVM programs import, so that every one of them loads (a
//! program linked with BIND_NOW needs all its names at start): small internals the example
//! programs call (`lpvmerr`, `pvmgetclock`, `pvmsleep`), data symbols, and the calls this
//! library answers with PVM's own "not implemented" (no resource manager or tracer); adding and
//! deleting hosts; also the message box and message handler calls.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::AtomicI32;

use crate::error::PvmError;
use crate::state::{call, lock, put};
use crate::wire::Frame;

/// `pvm_errno`: the last error code (PVM's global).
#[no_mangle]
pub static pvm_errno: AtomicI32 = AtomicI32::new(0);

/// `pvmmytid`: this task's tid, -1 before it enrolls (PVM's global).
#[no_mangle]
pub static pvmmytid: AtomicI32 = AtomicI32::new(-1);

/// `lpvmerr(name, code)`: reports a failed call as the library does, returns the code.
#[no_mangle]
pub unsafe extern "C" fn lpvmerr(name: *const c_char, code: c_int) -> c_int {
    let (auto, tid) = {
        let lib = lock();
        (lib.auto_err, lib.task.as_ref().map(|t| t.tid))
    };
    if auto != 0 && code < 0 {
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: C's contract: a function name.
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        crate::state::say(format_args!("{}: {name}(): {}", crate::state::who(tid), crate::error::text_of(code)));
    }
    code
}

/// `pvmgetclock(tv)`: the time of day.
#[no_mangle]
pub unsafe extern "C" fn pvmgetclock(tv: *mut libc::timeval) -> c_int {
    if tv.is_null() {
        return PvmError::BadParam.code();
    }
    // SAFETY: tv checked non-null; C's contract: a struct timeval.
    unsafe { libc::gettimeofday(tv, std::ptr::null_mut()) }
}

/// `pvmsleep(secs)`.
#[no_mangle]
pub extern "C" fn pvmsleep(secs: c_int) -> c_int {
    std::thread::sleep(std::time::Duration::from_secs(u64::try_from(secs).unwrap_or(0)));
    0
}

/// `pvm_hostsync(host, clk, delta)`: the time of day on `host` (read by its agent) and how
/// far this host's clock is ahead of it, as Debian's library computes it: the middle of the
/// request's round trip here, minus the host's time (a signed timeval whose `tv_usec` is in
/// [0, 1e6): -1 us is {-1, 999999}).
#[no_mangle]
pub unsafe extern "C" fn pvm_hostsync(host: c_int, clk: *mut libc::timeval, delta: *mut libc::timeval) -> c_int {
    call("pvm_hostsync", |lib| {
        let task = lib.task()?;
        let before = crate::agent::now_micros();
        let remote = match task.request(&Frame::HostClock { host, id: 0 })? {
            Frame::ClockIs { micros, .. } => micros,
            Frame::Status { code, .. } if code < 0 => return Err(PvmError::from_code(code)),
            _ => return Err(PvmError::SysErr),
        };
        let after = crate::agent::now_micros();
        let ahead = (before / 2 + after / 2) as i64 - remote as i64;
        let timeval = |us: i64| libc::timeval {
            tv_sec: us.div_euclid(1_000_000) as libc::time_t,
            tv_usec: us.rem_euclid(1_000_000) as libc::suseconds_t,
        };
        // SAFETY: C's contract: each pointer is null or a struct timeval.
        unsafe {
            put(clk, timeval(remote as i64));
            put(delta, timeval(ahead));
        }
        Ok(0)
    })
}

/// `pvm_addhosts`: the first agent starts an agent on each host (`agent_hosts.rs`); `infos`
/// gets each host's tid or error code; the count added is returned.
#[no_mangle]
pub unsafe extern "C" fn pvm_addhosts(names: *mut *mut c_char, count: c_int, infos: *mut c_int) -> c_int {
    // SAFETY: C's contract: count names, room for count results.
    call("pvm_addhosts", |lib| unsafe { hosts_call(lib, names, count, infos, |names| Frame::AddHosts { names }) })
}

/// `pvm_delhosts`: each host's agent leaves, ending its tasks; `infos` gets 0 or an error code.
#[no_mangle]
pub unsafe extern "C" fn pvm_delhosts(names: *mut *mut c_char, count: c_int, infos: *mut c_int) -> c_int {
    // SAFETY: C's contract: count names, room for count results.
    call("pvm_delhosts", |lib| unsafe { hosts_call(lib, names, count, infos, |names| Frame::DelHosts { names }) })
}

/// Asks the agent about `count` hosts named in `names`; each answer goes to `infos` (if not
/// null); the number that succeeded is returned.
unsafe fn hosts_call(
    lib: &mut crate::state::Lib,
    names: *mut *mut c_char,
    count: c_int,
    infos: *mut c_int,
    ask: impl FnOnce(Vec<String>) -> Frame,
) -> Result<c_int, PvmError> {
    let n = usize::try_from(count).map_err(|_| PvmError::BadParam)?;
    if n > 0 && names.is_null() {
        return Err(PvmError::BadParam);
    }
    let mut list = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: C's contract: count names, each null or a string.
        let name = unsafe { *names.add(i) };
        list.push(if name.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        });
    }
    let Frame::Status { list: got, .. } = lib.task()?.request(&ask(list))? else { return Err(PvmError::SysErr) };
    for (i, &r) in got.iter().enumerate().take(n) {
        if !infos.is_null() {
            // SAFETY: C's contract: room for count results.
            unsafe { *infos.add(i) = r };
        }
    }
    Ok(got.iter().filter(|&&r| r >= 0).count() as c_int)
}

/// `pvm_start_pvmd`: starts the host agent if none runs (`PvmDupHost` if one does, as PVM).
#[no_mangle]
pub extern "C" fn pvm_start_pvmd(_argc: c_int, _argv: *mut *mut c_char, _block: c_int) -> c_int {
    call("pvm_start_pvmd", |lib| {
        let running = std::os::unix::net::UnixStream::connect(crate::place::agent_socket(&crate::place::dir())).is_ok();
        lib.task()?;
        if running {
            Err(PvmError::DupHost)
        } else {
            Ok(0)
        }
    })
}

/// `pvm_export(name)` / `pvm_unexport(name)`: adds or removes a name in `PVM_EXPORT`.
fn export(name: *const c_char, add: bool) -> Result<c_int, PvmError> {
    if name.is_null() {
        return Err(PvmError::BadParam);
    }
    // SAFETY: C's contract: a variable name.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
    let now = std::env::var("PVM_EXPORT").unwrap_or_default();
    let mut names: Vec<&str> = now.split(':').filter(|n| !n.is_empty() && *n != name).collect();
    if add {
        names.push(&name);
    }
    std::env::set_var("PVM_EXPORT", names.join(":"));
    Ok(0)
}

#[no_mangle]
pub extern "C" fn pvm_export(name: *mut c_char) -> c_int {
    call("pvm_export", |_| export(name, true))
}

#[no_mangle]
pub extern "C" fn pvm_unexport(name: *mut c_char) -> c_int {
    call("pvm_unexport", |_| export(name, false))
}

/// `pvm_strerror`: PVM 3.4's prototype takes nothing and names the last error.
#[no_mangle]
pub extern "C" fn pvm_strerror() -> *const c_char {
    let code = lock().last_err;
    usize::try_from(-i64::from(code))
        .ok()
        .and_then(|i| crate::error::pvm_errlist.get(i))
        .map_or(c"Unknown error".as_ptr(), |s| s.as_ptr())
}

/// `pvm_setminfo`: sets a buffer's tag, source, context and encoding.
#[no_mangle]
pub unsafe extern "C" fn pvm_setminfo(id: c_int, info: *mut crate::pack::MsgInfo) -> c_int {
    call("pvm_setminfo", |lib| {
        if info.is_null() {
            return Err(PvmError::BadParam);
        }
        // SAFETY: checked non-null; C's contract: a struct pvmminfo.
        let m = unsafe { info.read() };
        lib.bufs.set_info(id, m.tag, m.src, m.ctx)?;
        Ok(0)
    })
}

/// `pvm_getfds`: the descriptors a program may wait on for PVM input (the agent's
/// connection first, as pvmd's).
#[no_mangle]
pub unsafe extern "C" fn pvm_getfds(fds: *mut *mut c_int) -> c_int {
    call("pvm_getfds", |lib| {
        let t = lib.task()?;
        let list = t.wait_fds();
        lib.fds = list;
        // SAFETY: C's contract: null or a place for a pointer, valid until the next call.
        unsafe { put(fds, lib.fds.as_mut_ptr()) };
        Ok(lib.fds.len() as c_int)
    })
}

/// Calls of PVM's resource manager, tracer, tasker and hoster interfaces, which this library
/// does not offer: `PvmNotImpl`.
macro_rules! not_implemented {
    ($($f:ident($($a:ident: $t:ty),*);)*) => {$(
        #[no_mangle]
        pub extern "C" fn $f($($a: $t),*) -> c_int {
            $(let _ = $a;)*
            call(stringify!($f), |_| Err(PvmError::NotImpl))
        }
    )*};
}

not_implemented! {
    pvm_reg_rm(hip: *mut c_void);
    pvm_reg_hoster();
    pvm_reg_tasker();
    pvm_reg_tracer(a: c_int, b: c_int, c: c_int, d: c_int, e: *mut c_char, f: c_int, g: c_int);
    pvm_tickle(n: c_int, a: *mut c_int, b: *mut c_int, c: *mut c_int);
    pvm_getnoresets(t: *mut *mut c_int, n: *mut c_int);
}

/// `pvm_gettmask(who, mask)`: the trace mask of this task (`PvmTaskSelf`) or of the
/// children it spawns (`PvmTaskChild`), `trace.rs`; none traced at first (PVM's empty mask:
/// 35 `@` and a NUL, `TEV_MASK_INIT`).
#[no_mangle]
pub unsafe extern "C" fn pvm_gettmask(who: c_int, mask: *mut c_char) -> c_int {
    call("pvm_gettmask", |lib| {
        let slot = usize::try_from(who).ok().filter(|&w| w < 2).ok_or(PvmError::BadParam)?;
        if mask.is_null() {
            return Err(PvmError::BadParam);
        }
        let m = lib.tracing.masks[slot];
        // SAFETY: C's contract: a Pvmtmask, 36 bytes.
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), mask.cast::<u8>(), m.len()) };
        Ok(0)
    })
}

/// `pvm_settmask(who, mask)`: which events this task (`PvmTaskSelf`) or its children
/// (`PvmTaskChild`) trace.
#[no_mangle]
pub unsafe extern "C" fn pvm_settmask(who: c_int, mask: *mut c_char) -> c_int {
    call("pvm_settmask", |lib| {
        if mask.is_null() {
            return Err(PvmError::BadParam);
        }
        let mut m = [0u8; crate::trace::MASK_BYTES];
        // SAFETY: C's contract: a Pvmtmask, 36 bytes.
        unsafe { std::ptr::copy_nonoverlapping(mask.cast::<u8>(), m.as_mut_ptr(), m.len()) };
        crate::trace::set_mask(lib, who, &m).map(|()| 0)
    })
}

/// `pvm_addmhf(src, tag, ctx, f)`: messages that match (-1: any) go to `f(mid)` whenever
/// they arrive during a PVM call, instead of to a receive; its id.
#[no_mangle]
pub extern "C" fn pvm_addmhf(src: c_int, tag: c_int, ctx: c_int, f: Option<extern "C" fn(c_int) -> c_int>) -> c_int {
    static NEXT: AtomicI32 = AtomicI32::new(0);
    call("pvm_addmhf", |lib| {
        let func = f.ok_or(PvmError::BadParam)? as usize;
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lib.task()?.handlers.push(crate::task::Handler { id, src, tag, ctx, func });
        Ok(id)
    })
}

/// `pvm_delmhf(id)`.
#[no_mangle]
pub extern "C" fn pvm_delmhf(id: c_int) -> c_int {
    call("pvm_delmhf", |lib| {
        let t = lib.task()?;
        let before = t.handlers.len();
        t.handlers.retain(|h| h.id != id);
        if t.handlers.len() == before {
            return Err(if id < 0 { PvmError::BadParam } else { PvmError::NotFound });
        }
        Ok(0)
    })
}

use std::ffi::c_void;

/// `pvmdisplaymhfinfo`: prints the message handlers (there are none).
#[no_mangle]
pub extern "C" fn pvmdisplaymhfinfo(_who: *const c_char) {}

/// `pvm_sendsig(tid, sig)`: a signal to a task.
#[no_mangle]
pub extern "C" fn pvm_sendsig(tid: c_int, sig: c_int) -> c_int {
    call("pvm_sendsig", |lib| lib.task()?.request_status(&crate::wire::Frame::Kill { tid, sig }))
}

/// `pvmtmpnam(buf)`: a temporary file name, as `tmpnam` (PVM's own for the same purpose).
#[no_mangle]
pub unsafe extern "C" fn pvmtmpnam(buf: *mut c_char) -> *mut c_char {
    static mut OWN: [u8; 128] = [0; 128];
    static N: AtomicI32 = AtomicI32::new(0);
    let name =
        format!("/tmp/pvmtmp{:06}.{}\0", std::process::id(), N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let bytes = &name.as_bytes()[..name.len().min(127)];
    let out = if buf.is_null() {
        // PVM's contract: without a buffer the name lives in static storage, as tmpnam's
        // (not thread-safe, like it).
        std::ptr::addr_of_mut!(OWN).cast::<c_char>()
    } else {
        buf
    };
    // SAFETY: out holds PVMTMPNAMLEN (128) bytes by PVM's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len());
        *out.add(bytes.len()) = 0;
    }
    out
}

/// Reads a class name (null: `PvmBadParam`).
///
/// # Safety
/// `name` is null or a C string.
unsafe fn class_name(name: *const c_char) -> Result<String, PvmError> {
    if name.is_null() {
        return Err(PvmError::BadParam);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

/// `pvm_putinfo(name, bufid, flags)`: stores a copy of the buffer's message; its index.
#[no_mangle]
pub unsafe extern "C" fn pvm_putinfo(name: *mut c_char, bufid: c_int, flags: c_int) -> c_int {
    call("pvm_putinfo", |lib| {
        // SAFETY: C's contract: a class name.
        let name = unsafe { class_name(name)? };
        let b = lib.bufs.get(bufid)?;
        let (enc, data) = (b.enc.on_wire().code(), b.wire_bytes().into_owned());
        lib.task()?.request_status(&crate::wire::Frame::MboxPut { name, flags, enc, data })
    })
}

/// `pvm_recvinfo(name, index, flags)`: a new buffer holding the entry's message (not made
/// the active receive buffer: `pvm_setrbuf` does that).
#[no_mangle]
pub unsafe extern "C" fn pvm_recvinfo(name: *mut c_char, index: c_int, flags: c_int) -> c_int {
    call("pvm_recvinfo", |lib| {
        // SAFETY: C's contract: a class name.
        let name = unsafe { class_name(name)? };
        match lib.task()?.request(&crate::wire::Frame::MboxGet { name, index, flags })? {
            crate::wire::Frame::MboxEntry { owner, enc, data } => {
                let enc = crate::encoding::Encoding::from_code(enc).unwrap_or(crate::encoding::Encoding::Raw);
                Ok(lib.bufs.insert(crate::buffer::Buffer::received(enc, data, owner, 0, 0)))
            }
            crate::wire::Frame::Status { code, .. } => Err(PvmError::from_code(code)),
            _ => Err(PvmError::SysErr),
        }
    })
}

/// `pvm_delinfo(name, index, flags)`.
#[no_mangle]
pub unsafe extern "C" fn pvm_delinfo(name: *mut c_char, index: c_int, _flags: c_int) -> c_int {
    call("pvm_delinfo", |lib| {
        // SAFETY: C's contract: a class name.
        let name = unsafe { class_name(name)? };
        lib.task()?.request_status(&crate::wire::Frame::MboxDel { name, index })
    })
}

/// `struct pvmmboxinfo`.
#[repr(C)]
pub struct MboxInfo {
    pub mi_name: *mut c_char,
    pub mi_nentries: c_int,
    pub mi_indices: *mut c_int,
    pub mi_owners: *mut c_int,
    pub mi_flags: *mut c_int,
}

/// What `pvm_getmboxinfo` last returned, kept until its next call (as in PVM).
pub struct MboxListing {
    infos: Vec<MboxInfo>,
    names: Vec<std::ffi::CString>,
    columns: Vec<Vec<c_int>>,
}
// SAFETY: the pointers in `infos` point into `names` and `columns`, owned beside them.
unsafe impl Send for MboxListing {}

static LISTING: std::sync::Mutex<Option<MboxListing>> = std::sync::Mutex::new(None);

/// `pvm_getmboxinfo(pattern, nclasses, classes)`: the classes whose names match the glob.
#[no_mangle]
pub unsafe extern "C" fn pvm_getmboxinfo(
    pattern: *mut c_char,
    nclasses: *mut c_int,
    classes: *mut *mut MboxInfo,
) -> c_int {
    call("pvm_getmboxinfo", |lib| {
        // SAFETY: C's contract: a pattern.
        let pattern = unsafe { class_name(pattern)? };
        let crate::wire::Frame::MboxClasses { classes: list } =
            lib.task()?.request(&crate::wire::Frame::MboxList { pattern })?
        else {
            return Err(PvmError::SysErr);
        };
        let mut l = MboxListing { infos: Vec::new(), names: Vec::new(), columns: Vec::new() };
        for (name, entries) in &list {
            l.names.push(std::ffi::CString::new(name.clone()).unwrap_or_default());
            for k in 0..3 {
                l.columns.push(entries.iter().map(|e| [e.0, e.1, e.2][k]).collect());
            }
        }
        for (i, (_, entries)) in list.iter().enumerate() {
            let base = 3 * i;
            l.infos.push(MboxInfo {
                mi_name: l.names[i].as_ptr() as *mut c_char,
                mi_nentries: entries.len() as c_int,
                mi_indices: l.columns[base].as_mut_ptr(),
                mi_owners: l.columns[base + 1].as_mut_ptr(),
                mi_flags: l.columns[base + 2].as_mut_ptr(),
            });
        }
        let mut slot = LISTING.lock().unwrap_or_else(|e| e.into_inner());
        let l = slot.insert(l);
        // SAFETY: C's contract: each pointer is null or a place for its value.
        unsafe {
            put(nclasses, l.infos.len() as c_int);
            put(classes, l.infos.as_mut_ptr());
        }
        Ok(0)
    })
}

/// Internals Debian's console (`pvm`) imports, so that it runs on this library too.
///
/// `pvmtevinfo` and `pvmtevdidlist`: the trace tables Debian's console reads at start-up,
/// the size and shape Debian's are: 109 events of 56 bytes (a name, then counters) and 123
/// data ids of 16 bytes (a name, a description). The console files every name in a trie
/// that refuses empty and repeated ones, so each gets a distinct placeholder name (`e000`,
/// `d000`, ...): this library traces nothing.
#[repr(C)]
pub struct TraceEvent {
    name: *const c_char,
    counters: [u64; 6],
}

#[repr(C)]
pub struct TraceDataId {
    name: *const c_char,
    desc: *const c_char,
}

// SAFETY: the pointers point into 'static, never-written name tables.
unsafe impl Sync for TraceEvent {}
// SAFETY: as above.
unsafe impl Sync for TraceDataId {}

/// `count` names of 5 bytes each: `letter`, three digits, NUL.
const fn placeholder_names<const BYTES: usize>(letter: u8, count: usize) -> [u8; BYTES] {
    let mut b = [0u8; BYTES];
    let mut i = 0;
    while i < count {
        b[i * 5] = letter;
        b[i * 5 + 1] = b'0' + (i / 100) as u8;
        b[i * 5 + 2] = b'0' + ((i / 10) % 10) as u8;
        b[i * 5 + 3] = b'0' + (i % 10) as u8;
        i += 1;
    }
    b
}

static EVENT_NAMES: [u8; 109 * 5] = placeholder_names(b'e', 109);
static DATA_ID_NAMES: [u8; 123 * 5] = placeholder_names(b'd', 123);

#[no_mangle]
pub static pvmtevinfo: [TraceEvent; 109] = {
    let mut t = [const { TraceEvent { name: std::ptr::null(), counters: [0; 6] } }; 109];
    let mut i = 0;
    while i < 109 {
        // SAFETY: i * 5 is inside EVENT_NAMES (109 names of 5 bytes).
        t[i].name = unsafe { EVENT_NAMES.as_ptr().add(i * 5) }.cast();
        i += 1;
    }
    t
};
const _: () = assert!(std::mem::size_of::<[TraceEvent; 109]>() == 0x17d8);

#[no_mangle]
pub static pvmtevdidlist: [TraceDataId; 123] = {
    let mut t = [const { TraceDataId { name: std::ptr::null(), desc: c"".as_ptr() } }; 123];
    let mut i = 0;
    while i < 123 {
        // SAFETY: i * 5 is inside DATA_ID_NAMES (123 names of 5 bytes).
        t[i].name = unsafe { DATA_ID_NAMES.as_ptr().add(i * 5) }.cast();
        i += 1;
    }
    t
};
const _: () = assert!(std::mem::size_of::<[TraceDataId; 123]>() == 0x7b0);

/// `i_dump(how)`: PVM's memory-allocator dump, for debugging; there is nothing to dump.
#[no_mangle]
pub extern "C" fn i_dump(_how: c_int) -> c_int {
    0
}

/// `pvmendtask()`: leaves PVM, as `pvm_exit`.
#[no_mangle]
pub extern "C" fn pvmendtask() -> c_int {
    crate::calls::pvm_exit()
}

/// `pvmgetrsh()`: the remote shell PVM would start remote agents with.
#[no_mangle]
pub extern "C" fn pvmgetrsh() -> *const c_char {
    c"/usr/bin/ssh".as_ptr()
}

/// `pvmgettmp()`: the folder of the host agent's files.
#[no_mangle]
pub extern "C" fn pvmgettmp() -> *const c_char {
    static DIR: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    DIR.get_or_init(|| std::ffi::CString::new(crate::place::dir().to_string_lossy().into_owned()).unwrap_or_default())
        .as_ptr()
}

/// `pvmputenv(s)`: `putenv`, keeping the string (as putenv requires).
#[no_mangle]
pub unsafe extern "C" fn pvmputenv(s: *const c_char) -> c_int {
    if s.is_null() {
        return -1;
    }
    // SAFETY: C's contract: a NAME=value string; a copy is leaked because putenv keeps it.
    let copy = unsafe { CStr::from_ptr(s) }.to_owned().into_raw();
    // SAFETY: putenv with a string that lives for ever.
    unsafe { libc::putenv(copy) }
}

/// `pvmstrtoi(s)`: an integer in decimal, octal (0...) or hexadecimal (0x...).
#[no_mangle]
pub unsafe extern "C" fn pvmstrtoi(s: *const c_char) -> c_int {
    if s.is_null() {
        return 0;
    }
    // SAFETY: C's contract: a string; strtol reads it up to the first non-digit.
    unsafe { libc::strtol(s, std::ptr::null_mut(), 0) as c_int }
}

/// `pvmreset(mytid, killtasks, class, index)`: the console's `reset`: ends every other task.
#[no_mangle]
pub extern "C" fn pvmreset(_mytid: c_int, killtasks: c_int, _class: *mut c_char, _index: c_int) -> c_int {
    call("pvmreset", |lib| {
        if killtasks == 0 {
            return Ok(0);
        }
        let me = lib.task()?.tid;
        let crate::wire::Frame::TasksAre { tasks } = lib.task()?.request(&crate::wire::Frame::Tasks { which: 0 })?
        else {
            return Err(PvmError::SysErr);
        };
        for t in tasks.iter().filter(|t| t.tid != me) {
            let _ = lib.task()?.request_status(&crate::wire::Frame::Kill { tid: t.tid, sig: libc::SIGTERM });
        }
        Ok(0)
    })
}

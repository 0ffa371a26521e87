//! The process-wide state behind the C calls, and the one wrapper every call goes through:
//! it takes the lock, turns a `PvmError` into PVM's return code, reports it as PVM does
//! (`PvmAutoErr`), and keeps a Rust panic from unwinding into C. The five calls of the
//! small-message path try a direct way first ([`plain`]), which takes the general way
//! whenever anything is unusual.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::buffer::Buffers;
use crate::call_lock::{CallGuard, CallLock};
use crate::error::PvmError;
use crate::task::Task;

/// Everything the library holds for this process.
pub struct Lib {
    pub bufs: Buffers,
    /// This process as a PVM task, once it has enrolled (`pvm_mytid` or any call that needs it).
    pub task: Option<Task>,
    /// `PvmAutoErr`: 1 prints each failing call's error on stderr (PVM's default), 0 does not.
    pub auto_err: i32,
    /// The last error (`pvm_perror` prints it).
    pub last_err: i32,
    /// `pvm_setopt` values of the options that only need remembering, by option number.
    pub opts: [i32; 32],
    /// What `pvm_config` and `pvm_tasks` last returned: the C arrays and the strings they
    /// point into, valid until the next call, as in PVM.
    pub hosts: (Vec<crate::calls::HostInfo>, Vec<std::ffi::CString>),
    pub tasks: (Vec<crate::calls::TaskInfo>, Vec<std::ffi::CString>),
    /// What `pvm_getfds` last returned.
    pub fds: Vec<c_int>,
    /// Trace masks and descriptors sent (`trace.rs`); the destinations are in `opts`.
    pub tracing: crate::trace::Tracing,
    /// Nothing unusual: enrolled, not traced, no message waiting for a handler, the receive
    /// buffer not in its sender's memory. Worked out each time a general call lets the lock
    /// go ([`LibGuard`]); the calls' direct ways ([`plain`]) look at it alone.
    plain: bool,
}

static LIB: CallLock<Lib> = CallLock::new(Lib {
    bufs: Buffers::new(),
    task: None,
    auto_err: 1,
    last_err: 0,
    opts: [0; 32],
    hosts: (Vec::new(), Vec::new()),
    tasks: (Vec::new(), Vec::new()),
    fds: Vec::new(),
    tracing: crate::trace::Tracing::new(),
    plain: false,
});

impl Lib {
    /// This process as a task, enrolling it on first use.
    #[inline]
    pub fn task(&mut self) -> Result<&mut Task, PvmError> {
        // Taken apart so that the enrolled case, every call but the first, is a test and a
        // branch where it is used (it was a call of ~36 instructions on the message path).
        if self.task.is_none() {
            self.enroll()?;
        }
        Ok(self.task.as_mut().expect("enrolled above"))
    }

    /// What [`Lib::plain`] says, worked out from what it sums up.
    fn is_plain(&self) -> bool {
        self.task.is_some()
            && !self.bufs.receive_buffer_is_lazy()
            && !crate::trace::on(self)
            && !HANDLERS_WAITING.load(Ordering::Relaxed)
    }

    #[cold]
    #[inline(never)]
    fn enroll(&mut self) -> Result<(), PvmError> {
        let t = Task::enroll()?;
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        // SAFETY: registers a plain extern "C" function with no arguments.
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(let_senders_go_at_exit);
        });
        crate::compat::pvmmytid.store(t.tid, std::sync::atomic::Ordering::Relaxed);
        crate::calls::inherit_output(&mut self.opts);
        crate::trace::inherit(self);
        self.task = Some(t);
        Ok(())
    }
}

/// A program that ends (`exit`) while the message it received last is still in its sender's
/// memory lets the sender go, as having received it (else the sender would find the
/// connection closed and say `PvmNoTask`).
extern "C" fn let_senders_go_at_exit() {
    // Another thread inside a call: its own end will do.
    if let Some(lib) = LIB.try_lock() {
        LibGuard(lib).bufs.let_sender_go();
    }
}

/// The library's state, locked (`call_lock.rs`). A panic while it was held does not make
/// it unusable.
pub fn lock() -> LibGuard {
    LibGuard(LIB.lock())
}

/// The state locked by a general call: when it lets go, [`Lib::plain`] is worked out again
/// from what the call may have changed (a message for a handler queued, tracing set, a
/// receive buffer left in its sender's memory), so the direct ways never miss a change.
pub struct LibGuard(CallGuard<'static, Lib>);

impl std::ops::Deref for LibGuard {
    type Target = Lib;
    #[inline(always)]
    fn deref(&self) -> &Lib {
        &self.0
    }
}

impl std::ops::DerefMut for LibGuard {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Lib {
        &mut self.0
    }
}

impl Drop for LibGuard {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.plain = self.0.is_plain();
    }
}

/// The direct way of a call on the small-message path (`pvm_initsend`, `pvm_pkbyte`,
/// `pvm_send`, `pvm_recv`, `pvm_upkbyte`): when the thread that calls alone enters the lock
/// alone (`CallLock::enter_alone`) and [`Lib::plain`] says nothing unusual, `f` runs with no
/// handlers to run first, no receive buffer to settle, no trace and no error to report: one
/// look at one word for all of them (each was a look of its own, and the general way's
/// frame, results and checks cost ~40 instructions a call, 2026-11-28). `f` returns `None`
/// having changed nothing, for anything it does not do itself (an error among them): the
/// call then goes the general way ([`call`]), which does it and reports it. `f` must not
/// panic (no `catch_unwind` here): it is a few checks and copies.
#[inline(always)]
pub fn plain<R>(f: impl FnOnce(&mut Lib) -> Option<R>) -> Option<R> {
    let mut lib = LIB.enter_alone()?;
    if !lib.plain {
        return None;
    }
    f(&mut lib)
}

/// The entry of every C call: messages for handlers first (with the lock free), then the
/// lock, then the receive buffer settled for this call.
#[inline(always)]
fn enter(name: &str) -> LibGuard {
    run_handlers();
    let mut lib = lock();
    settle_receive_buffer(&mut lib, name);
    lib
}

/// Runs one C call: its result or its error code. Messages for message handlers that came
/// meanwhile are handed to them with the lock free, and a wait they cut short runs again.
pub fn call(name: &str, mut f: impl FnMut(&mut Lib) -> Result<c_int, PvmError>) -> c_int {
    // The closure returns the bare result, which comes back in a register through
    // `catch_unwind`; an error goes beside it (a `Result` of an error this size came back
    // through memory: ~10 instructions a call, 2026-11-28).
    let mut failed = None;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
        let mut lib = enter(name);
        // A result goes straight out; only an error is noted (and may be a wait that
        // message handlers cut short, to run again).
        match f(&mut lib) {
            Ok(v) => return v,
            Err(e) => {
                if !lib.task.as_mut().is_some_and(|t| std::mem::take(&mut t.cut_short)) {
                    failed = Some(note(&mut lib, e));
                    return 0;
                }
            }
        }
    }));
    report(name, out, failed)
}

/// As [`call`], for a call that never waits for a message (`pvm_initsend`, the pack and
/// unpack routines, `pvm_send`: none reaches `Task::wait_matching`), so that no message
/// handler can cut it short: it runs once, with no loop around it from which the compiler
/// hoists work of its rare branches, and no `black_box` (~14 instructions a call of reading
/// the closure's captures through it, 2026-11-28).
#[inline(always)]
pub fn call_once(name: &str, f: impl FnOnce(&mut Lib) -> Result<c_int, PvmError>) -> c_int {
    let mut failed = None;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut lib = enter(name);
        match f(&mut lib) {
            Ok(v) => v,
            Err(e) => {
                failed = Some(note(&mut lib, e));
                0
            }
        }
    }));
    report(name, out, failed)
}

/// A received message left in its sender's memory waits there only for the unpack calls
/// that follow its receive (`single_copy.rs`), and the look at its header that often comes
/// between (`pvm_bufinfo`, `pvm_getminfo`: `bufid = pvm_recv(-1, -1); pvm_bufinfo(bufid, ...);
/// pvm_upkbyte(...)` is PVM's idiom): any other call copies it in first, so that no sender
/// waits on a receiver that has gone on to other things.
/// A small message left in its ring cell (`held_message.rs`) is copied in likewise, by every
/// call but the unpacks, the looks at its header and the receives.
#[inline(always)]
fn settle_receive_buffer(lib: &mut Lib, name: &str) {
    // The flags first, here in the caller: nearly every call finds none, and `name` is a
    // constant where this is inlined.
    if lib.bufs.receive_buffer_is_lazy() {
        settle_lazy_receive_buffer(lib, name);
    }
    if lib.bufs.held.is_some() && !crate::held_message::keeps_held(name) {
        crate::held_message::settle(lib);
    }
}

#[cold]
#[inline(never)]
fn settle_lazy_receive_buffer(lib: &mut Lib, name: &str) {
    if name.starts_with("pvm_upk") || matches!(name, "pvm_bufinfo" | "pvm_getminfo" | "pvm_unpackf") {
        return;
    }
    if let Err(e) = lib.bufs.settle_receive_buffer() {
        say(format_args!("{}: {name}(): the received message could not be read: {}", who(None), e.text()));
    }
}

/// As [`call`], for a call that runs a function of the program's while it works (a
/// `pvm_recvf` matcher, which calls the library itself): `f` takes the lock in short steps
/// and never holds it while the program's function runs.
pub fn call_unlocked(name: &str, f: impl FnOnce() -> Result<c_int, PvmError>) -> c_int {
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_handlers();
        {
            let mut lib = lock();
            settle_receive_buffer(&mut lib, name);
            // A matcher's receive takes the lock in steps and may wait: nothing stays held
            // in its ring cell across it, whatever the call (`held_message.rs`).
            crate::held_message::settle(&mut lib);
        }
        f().map_err(|e| note(&mut lock(), e))
    }));
    match out {
        Ok(Ok(v)) => v,
        Ok(Err(noted)) => report_failure(name, Ok(noted)),
        Err(panic) => report_failure(name, Err(panic)),
    }
}

/// A failed call's error, remembered for `pvm_perror` and `pvm_errno`, with what its report
/// needs: `PvmAutoErr` and the task's tid.
#[cold]
#[inline(never)]
fn note(lib: &mut Lib, e: PvmError) -> Noted {
    lib.last_err = e.code();
    crate::compat::pvm_errno.store(e.code(), std::sync::atomic::Ordering::Relaxed);
    (e, lib.auto_err, lib.task.as_ref().map(|t| t.tid))
}

/// An error noted: the error, `PvmAutoErr`, the task's tid.
type Noted = (PvmError, i32, Option<i32>);

/// A call's return value (`out`, unless it `failed`); its error printed when `PvmAutoErr`
/// asks for it, a panic as an internal error (never unwound into C).
#[inline]
fn report(name: &str, out: std::thread::Result<c_int>, failed: Option<Noted>) -> c_int {
    match (out, failed) {
        (Ok(v), None) => v,
        (Ok(_), Some(noted)) => report_failure(name, Ok(noted)),
        (Err(panic), _) => report_failure(name, Err(panic)),
    }
}

#[cold]
#[inline(never)]
fn report_failure(name: &str, out: std::thread::Result<Noted>) -> c_int {
    match out {
        Ok((e, auto_err, tid)) => {
            if auto_err != 0 {
                crate::state::say(format_args!("{}: {name}(): {}", who(tid), e.text()));
            }
            e.code()
        }
        Err(_) => {
            crate::state::say(format_args!(
                "{}: {name}(): internal error (a bug in Billboard's PVM library)",
                who(None)
            ));
            PvmError::SysErr.code()
        }
    }
}

/// Whether messages may wait for their handlers (set under the lock where they are queued,
/// cleared under it where the queue is found empty).
pub(crate) static HANDLERS_WAITING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread is inside a message handler (handlers do not nest).
    static IN_HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Hands each waiting message to its handler: the message is the active receive buffer while
/// the handler runs (as in PVM), then it is freed and the receive buffer before it restored.
#[inline]
pub fn run_handlers() {
    // Most calls find no message for a handler: one load here in the caller, no call, no
    // lock and no thread-local.
    if HANDLERS_WAITING.load(Ordering::Relaxed) {
        run_waiting_handlers();
    }
}

#[cold]
#[inline(never)]
fn run_waiting_handlers() {
    if IN_HANDLER.with(|h| h.replace(true)) {
        return;
    }
    loop {
        let next = {
            let mut lib = lock();
            // The handler's calls may receive: a message held in its cell is the program's.
            crate::held_message::settle(&mut lib);
            let Some((func, m)) = lib.task.as_mut().and_then(|t| t.for_handlers.pop_front()) else {
                HANDLERS_WAITING.store(false, Ordering::Relaxed);
                break;
            };
            let enc = crate::encoding::Encoding::from_code(m.enc).unwrap_or(crate::encoding::Encoding::Raw);
            let id = lib.bufs.insert(crate::buffer::Buffer::received(enc, m.data, m.src, m.tag, m.ctx));
            let before = lib.bufs.set_active(id, false).unwrap_or(0);
            (func, id, before)
        };
        let (func, id, before) = next;
        // SAFETY: `func` is the address of the `int (*)(int)` the program gave pvm_addmhf.
        let handler: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(func) };
        handler(id);
        let mut lib = lock();
        let _ = lib.bufs.free(id);
        if lib.bufs.rbuf == 0 {
            let _ = lib.bufs.set_active(before, false);
        }
    }
    IN_HANDLER.with(|h| h.set(false));
}

/// Writes one line on stderr as PVM's messages go; a closed stderr is no panic (this runs
/// inside C calls, where a panic must not unwind).
pub fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// How PVM names the process in its messages: `libpvm [t40001]`, or by pid before enrolling.
pub fn who(tid: Option<i32>) -> String {
    match tid {
        Some(t) => format!("libpvm [t{t:x}]"),
        None => format!("libpvm [pid{}]", std::process::id()),
    }
}

/// Stores `v` through a C out-pointer that may be null.
///
/// # Safety
/// `p` is null or valid for one write of `T`.
pub unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) };
    }
}

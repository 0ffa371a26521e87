//! The calls that send and receive messages: `pvm_send`, `pvm_mcast`, `pvm_psend`, and
//! `pvm_recv`, `pvm_nrecv`, `pvm_trecv`, `pvm_probe`, `pvm_precv`, which match by source and
//! tag in the task's context, or by the program's own function where it installed one
//! (`recvf.rs`).

use std::ffi::{c_int, c_void};
use std::time::Duration;

use crate::buffer::Buffer;
use crate::encoding::Encoding;
use crate::error::PvmError;
use crate::recvf;
use crate::state::{call, call_once, lock, put, Lib};
use crate::task::Arrived;
use crate::task_receive::Received;
use crate::trace;

/// Sends the active send buffer's message.
#[no_mangle]
pub extern "C" fn pvm_send(tid: c_int, tag: c_int) -> c_int {
    // The direct way (`state::plain`): the usual message, its bytes in one piece, into a
    // ring with room now (`Task::post_small`).
    if tag >= 0 {
        let sent = crate::state::plain(|lib| {
            let Lib { bufs, task, .. } = lib;
            let b = bufs.send_buffer().ok()?;
            let enc = b.enc.on_wire().code();
            task.as_mut()?.post_small(tid, tag, enc, b.packed()?)?.ok()
        });
        if sent.is_some() {
            return 0;
        }
    }
    send_general(tid, tag)
}

#[inline(never)]
fn send_general(tid: c_int, tag: c_int) -> c_int {
    call_once("pvm_send", |lib| {
        // `send_active` in one place: it is inlined once.
        let traced = trace::on(lib);
        if traced {
            trace::send_entry(lib, tid, tag);
        }
        let r = send_active(lib, &[tid], tag);
        if traced {
            trace::send_exit(lib, r.unwrap_or_else(|e| e.code()));
        }
        r
    })
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
        let traced = trace::on(lib);
        if traced {
            trace::mcast_entry(lib, &list, tag);
        }
        let r = lib.task().map(|t| t.tid).and_then(|me| {
            // PVM's multicast never sends the caller a copy.
            let list: Vec<i32> = list.into_iter().filter(|&t| t != me).collect();
            send_active(lib, &list, tag)
        });
        if traced {
            trace::result_exit(lib, trace::TEV_MCAST, r.unwrap_or_else(|e| e.code()));
        }
        r
    })
}

/// Sends the active send buffer's message to each of `tids`. Inlined: `pvm_send`'s whole
/// small path is one function (each frame between cost ~15 instructions in pushes and pops).
#[inline(always)]
pub(crate) fn send_active(lib: &mut Lib, tids: &[i32], tag: i32) -> Result<c_int, PvmError> {
    if tag < 0 {
        return Err(PvmError::BadParam);
    }
    lib.task()?;
    // The buffer's bytes go out as they are, in-place stretches read from the caller's
    // memory by the route itself (no gathering copy first).
    let Lib { bufs, task, .. } = lib;
    let b = bufs.send_buffer()?;
    let enc = b.enc.on_wire().code();
    let task = task.as_mut().expect("enrolled above");
    // The usual message goes out without waiting; any other send may wait, so a received
    // message held in its ring cell is copied in first (`held_message.rs`).
    if let [t] = *tids {
        let posted = match b.packed() {
            Some(data) => task.post_small(t, tag, enc, data),
            None => b.with_wire_parts(|parts| task.post_on_ring(t, tag, enc, parts)),
        };
        if let Some(r) = posted {
            return r.map(|()| 0);
        }
    }
    if bufs.held.is_some() {
        crate::held_message::settle(lib);
    }
    let Lib { bufs, task, .. } = lib;
    let b = bufs.send_buffer()?;
    let task = task.as_mut().expect("enrolled above");
    b.with_wire_parts(|parts| task.send_parts(tids, tag, enc, parts))?;
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

/// Runs receive `f`, traced as Debian's library traces `kind` (`trace.rs`): its entry (the
/// source and tag asked for, then `more`) and its exit (what it got).
#[inline(always)]
fn traced_receive(
    lib: &mut Lib,
    kind: i32,
    tid: i32,
    tag: i32,
    more: &[(i32, i32)],
    f: impl FnOnce(&mut Lib) -> Result<c_int, PvmError>,
) -> Result<c_int, PvmError> {
    let traced = receive_entry(lib, kind, tid, tag, more);
    let r = f(lib);
    receive_exit(lib, kind, traced, r)
}

/// A receive's trace entry, when tracing is on: whether it is (for [`receive_exit`]).
#[inline(always)]
fn receive_entry(lib: &mut Lib, kind: i32, tid: i32, tag: i32, more: &[(i32, i32)]) -> bool {
    let traced = trace::on(lib);
    if traced {
        trace::recv_entry(lib, kind, tid, tag, more);
    }
    traced
}

/// A receive's trace exit, when its entry was traced; its result.
#[inline(always)]
fn receive_exit(lib: &mut Lib, kind: i32, traced: bool, r: Result<c_int, PvmError>) -> Result<c_int, PvmError> {
    if traced {
        trace::recv_exit(lib, kind, r.unwrap_or_else(|e| e.code()));
    }
    r
}

/// A message received becomes the active receive buffer (a large one may still be in its
/// sender's memory, for `pvm_upkbyte` to copy once).
fn deliver(lib: &mut Lib, m: Arrived) -> c_int {
    let (id, old) = lib.bufs.deliver(m);
    // The old memory takes the next small message (`Task::spare`), else goes to the pool.
    match lib.task.as_mut() {
        Some(t) if t.spare.capacity() == 0 && old.capacity() <= crate::buffer::REUSE_MAX => t.spare = old,
        _ => crate::buffer::recycle(old),
    }
    id
}

/// The receive calls' work: a small message that waits at the front of a ring stays in its
/// cell as the active receive buffer (`held_message.rs`); else, the message held before
/// copied in first, the general receive, waiting up to `timeout`. The buffer's id, or `None`
/// when nothing came.
#[inline(always)]
fn receive(lib: &mut Lib, tid: c_int, tag: c_int, timeout: Option<Duration>) -> Result<Option<c_int>, PvmError> {
    wildcard_ok(tid, tag)?;
    lib.task()?;
    // Traced, the call sends events, which may wait: nothing is held across it.
    let hold = !trace::on(lib);
    if hold {
        if let Some(id) = crate::held_message::receive(lib, tid, tag) {
            return Ok(Some(id));
        }
    }
    receive_waiting(lib, tid, tag, timeout, hold)
}

/// The receive calls' general way (out of line: the small path above stays small).
#[inline(never)]
fn receive_waiting(
    lib: &mut Lib,
    tid: c_int,
    tag: c_int,
    timeout: Option<Duration>,
    hold: bool,
) -> Result<Option<c_int>, PvmError> {
    // Nothing stays held while the task waits (its senders go on); a small message that
    // comes meanwhile is held in its cell in turn.
    if lib.bufs.held.is_some() {
        crate::held_message::settle(lib);
    }
    Ok(match lib.task()?.receive_in_place(tid, tag, timeout, hold) {
        Some(Received::Front(link, f)) => Some(crate::held_message::hold(lib, link, &f)),
        Some(Received::Whole(m)) => Some(deliver(lib, m)),
        None => None,
    })
}

#[no_mangle]
pub extern "C" fn pvm_recv(tid: c_int, tag: c_int) -> c_int {
    if let Some(f) = recvf::installed() {
        return recvf::recv("pvm_recv", f, tid, tag, None);
    }
    // The direct way (`state::plain`): a matching small message at the front of its ring
    // becomes the receive buffer in its cell (`held_message::receive`).
    if tid >= -1 && tag >= -1 {
        if let Some(id) = crate::state::plain(|lib| crate::held_message::receive(lib, tid, tag)) {
            return id;
        }
    }
    recv_general(tid, tag)
}

#[inline(never)]
fn recv_general(tid: c_int, tag: c_int) -> c_int {
    call("pvm_recv", |lib| {
        // Entry and exit around the receive, not a closure: the small path is one function
        // (the closure was not inlined: a frame, ~25 instructions, 2026-11-28).
        let traced = receive_entry(lib, trace::TEV_RECV, tid, tag, &[]);
        let r = receive(lib, tid, tag, None).and_then(|id| id.ok_or(PvmError::SysErr));
        receive_exit(lib, trace::TEV_RECV, traced, r)
    })
}

#[no_mangle]
pub extern "C" fn pvm_nrecv(tid: c_int, tag: c_int) -> c_int {
    if let Some(f) = recvf::installed() {
        return recvf::recv("pvm_nrecv", f, tid, tag, Some(Duration::ZERO));
    }
    call("pvm_nrecv", |lib| {
        traced_receive(lib, trace::TEV_NRECV, tid, tag, &[], |lib| {
            match receive(lib, tid, tag, Some(Duration::ZERO))? {
                Some(id) => Ok(id),
                None => nothing_or_handlers(lib, 0),
            }
        })
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
    // What the tracer hears: the timeout as given, -1 for none (Debian's library).
    // SAFETY: C's contract: null or a struct timeval.
    let (ts, tu) =
        if tmout.is_null() { (-1, -1) } else { unsafe { ((*tmout).tv_sec as i32, (*tmout).tv_usec as i32) } };
    call("pvm_trecv", |lib| {
        traced_receive(lib, trace::TEV_TRECV, tid, tag, &[(trace::DID_MTS, ts), (trace::DID_MTU, tu)], |lib| {
            match receive(lib, tid, tag, timeout?)? {
                Some(id) => Ok(id),
                None => nothing_or_handlers(lib, 0),
            }
        })
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
        let traced = trace::on(lib);
        if traced {
            trace::psend_entry(lib, tid, tag, buf as usize, len, datatype);
        }
        let r = (|| {
            // SAFETY: C's contract: len items of datatype at buf.
            let data = unsafe { items(buf, len, datatype)? };
            if tag < 0 {
                return Err(PvmError::BadParam);
            }
            lib.task()?.send(tid, tag, Encoding::Raw.code(), data)?;
            Ok(0)
        })();
        if traced {
            trace::result_exit(lib, trace::TEV_PSEND, r.unwrap_or_else(|e| e.code()));
        }
        r
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
    // Checks the caller's buffer: its size in bytes.
    let room = || -> Result<usize, PvmError> {
        let size = type_size(datatype)?;
        let room = usize::try_from(len).map_err(|_| PvmError::BadParam)? * size;
        if room > 0 && buf.is_null() {
            return Err(PvmError::BadParam);
        }
        Ok(room)
    };
    // Copies a message out: as much as fits. As PVM 3.4's lpvm.c does (and Debian's library
    // prints, tests/c/precv_len.c): `rlen` is the message's length in bytes, not items, and a
    // message longer than the buffer is cut to it without an error.
    let copy_out = |data: &[u8], src: i32, mtag: i32, room: usize| {
        let n = data.len().min(room);
        // SAFETY: C's contract: room for len items at buf (room bytes); n <= that; each
        // out-pointer null or an int.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), buf.cast::<u8>(), n);
            put(rtid, src);
            put(rtag, mtag);
            put(rlen, c_int::try_from(data.len()).unwrap_or(c_int::MAX));
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
        let traced = trace::on(lib);
        if traced {
            trace::precv_entry(lib, tid, tag, buf as usize, len, datatype);
        }
        let mut got = None;
        let r = (|| {
            wildcard_ok(tid, tag)?;
            let room = room()?;
            let m = lib.task()?.receive(tid, tag, None).ok_or(PvmError::SysErr)?;
            got = Some((m.data.len(), m.tag, m.src));
            copy_out(&m.data, m.src, m.tag, room)
        })();
        if traced {
            trace::precv_exit(lib, r.unwrap_or_else(|e| e.code()), got);
        }
        r
    })
}

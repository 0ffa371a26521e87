//! The origin's side of every epoch: RMA operations go to their target's handler
//! (`serve.rs`) as soon as they are issued, and each origin remembers, per target, what it
//! still has to wait for: the answers of get-type operations (received straight into the
//! result buffer where it is contiguous) and of flushes and unlocks, and request messages too
//! large to have left at once.
//!
//! Completion is by order: a target answers in the order requests came, so when the answer
//! of a later request has arrived, every earlier operation was applied. A flush therefore
//! costs one round trip, and none when the last operation fetched (its answer is the flush).

use std::ffi::c_void;

use billboard::{Communicator, Request, Source, TagMatch};

use super::serve::{Request as Ask, ANSWER_WHEN_GRANTED, HANDLER, TAG_ANSWER, UNLOCK_SILENTLY};
use super::withdraw::{Outstanding, Pending, Sink};
use crate::abi::*;
use crate::datatype::{view, Dir, Layout, Staging};
use crate::error::Res;

/// Something an origin waits for before an operation (or a flush) completes. Fields drop in
/// order: the request (dropping waits for it) before the bytes it sends.
pub(crate) struct Wait {
    req: Request<'static>,
    staged: Option<Box<Staging>>,
    _bytes: Vec<u8>,
}

impl Wait {
    /// Waits; a staged answer is unpacked into the result buffer.
    pub fn finish(self) -> Res {
        let Wait { req, staged, _bytes } = self;
        let status = req.wait()?;
        if let Some(s) = staged {
            // SAFETY: MPI keeps the result buffer valid until the operation completes.
            unsafe { s.complete(status.bytes()) };
        }
        Ok(())
    }

    /// The answer's receive as an MPI request: (engine request, staging).
    pub fn into_parts(self) -> (Request<'static>, Option<Box<Staging>>) {
        (self.req, self.staged)
    }

    /// Finishes it if it is done (a staged answer unpacked); `None`: not yet.
    pub fn try_finish(&mut self) -> Option<Res> {
        let status = match self.req.test() {
            Ok(None) => return None,
            Ok(Some(status)) => status,
            Err(e) => return Some(Err(e.into())),
        };
        if let Some(s) = self.staged.take() {
            // SAFETY: MPI keeps the result buffer valid until the operation completes.
            unsafe { s.complete(status.bytes()) };
        }
        Some(Ok(()))
    }

    /// The bytes of the request this wait sends.
    pub fn bytes(&self) -> &[u8] {
        &self._bytes
    }

    /// Withdraws the receive of an answer that will never come (its operation was withdrawn,
    /// `withdraw.rs`); nothing lands in the result buffer.
    pub fn cancel(mut self) {
        self.req.cancel();
        drop(self.req.wait());
    }
}

/// Waits for every one of `waits`, all of them even after an error (the first is returned).
pub(crate) fn finish_all(waits: Vec<Wait>) -> Res {
    let mut first = Ok(());
    for w in waits {
        if let Err(e) = w.finish() {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// What this origin has going on with one target.
#[derive(Default)]
pub(crate) struct Target {
    /// The lock this epoch holds on it (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE; 0: none).
    pub lock: i32,
    /// The lock request went out (locks are asked lazily, with the first operation).
    pub lock_sent: bool,
    /// MPI_MODE_NOCHECK: no lock is asked at all, the unlock only flushes.
    pub nocheck: bool,
    /// Operations went out whose application no answer has confirmed yet.
    pub unflushed: bool,
    /// What must finish before a flush of this target returns.
    pub waits: Vec<Wait>,
}

/// Posts the receive of one answer from `target` into `len` bytes at `buf`.
///
/// # Safety
/// `buf..buf+len` stays valid and untouched until the answer has arrived.
unsafe fn expect(comm: &Communicator, target: usize, buf: *mut u8, len: usize) -> Res<Request<'static>> {
    let buf = if buf.is_null() { std::ptr::NonNull::dangling().as_ptr() } else { buf };
    Ok(comm.irecv_raw(buf, len, Source::Rank(target), TagMatch::Tag(TAG_ANSWER))?)
}

/// Sends request `bytes` to `target`'s handler; a send still in flight is kept in `waits`.
pub(crate) fn send(comm: &Communicator, target: usize, bytes: Vec<u8>, waits: &mut Vec<Wait>) -> Res {
    // SAFETY: the bytes are kept with the request until it completes (`Wait` drops it first).
    let req = unsafe { comm.send_active_raw(target, HANDLER, bytes.as_ptr(), bytes.len()) }?;
    if !req.is_finished() {
        waits.push(Wait { req, staged: None, _bytes: bytes });
    }
    Ok(())
}

/// Numbers operation request `msg` (its flags word) as the next of `track`, sends it, and
/// keeps it there with its answer until a flush settles it (`withdraw.rs`).
fn send_tracked(
    comm: &Communicator,
    target: usize,
    mut msg: Vec<u8>,
    track: &mut Outstanding,
    sink: Sink,
    answer: Option<Wait>,
) -> Res {
    let seq = track.sent + 1;
    track.sent = seq;
    msg[8..16].copy_from_slice(&seq.to_ne_bytes());
    let withdrawable = msg.len() <= 16 + 96 + 2 * super::withdraw::WITHDRAW_MAX;
    track.prune();
    // SAFETY: the bytes stay with the request until it completes (`Pending` or `Wait`).
    let req = unsafe { comm.send_active_raw(target, HANDLER, msg.as_ptr(), msg.len()) }?;
    // A send in flight (the target's ring full: it computes, say) is kept with its bytes; a
    // withdrawn one is let go to finish whenever the target reads it (`withdraw.rs`).
    let (msg, sending) = match req.is_finished() {
        true => (Some(msg), None),
        false => (None, Some(Wait { req, staged: None, _bytes: msg })),
    };
    track.ops.push_back(Pending { seq, msg, sending, withdrawable, sink, answer, reply: None });
    Ok(())
}

/// Sends `ask` to `target` with an empty answer expected (a flush, an unlock, a lock whose
/// grant the caller waits for), the answer's receive posted first.
pub(crate) fn ask(comm: &Communicator, target: usize, ask: Ask, flags: u64, waits: &mut Vec<Wait>) -> Res {
    // SAFETY: an empty answer writes nothing.
    let req = unsafe { expect(comm, target, std::ptr::null_mut(), 0) }?;
    waits.push(Wait { req, staged: None, _bytes: Vec::new() });
    send(comm, target, ask.header(flags), waits)
}

/// Sends the lock request of `t` if it has not gone yet (with the first operation).
pub(crate) fn lock_lazily(comm: &Communicator, target: usize, t: &mut Target) -> Res {
    if t.lock != 0 && !t.lock_sent && !t.nocheck {
        let kind = if t.lock == MPI_LOCK_EXCLUSIVE { Ask::LockExclusive } else { Ask::LockShared };
        send(comm, target, kind.header(0), &mut t.waits)?;
        t.lock_sent = true;
    }
    Ok(())
}

/// Asks for `t`'s lock and returns the wait for its grant (a lock of one's own window).
pub(crate) fn lock_now(comm: &Communicator, target: usize, t: &mut Target) -> Res<Vec<Wait>> {
    let kind = if t.lock == MPI_LOCK_EXCLUSIVE { Ask::LockExclusive } else { Ask::LockShared };
    let mut waits = Vec::new();
    ask(comm, target, kind, ANSWER_WHEN_GRANTED, &mut waits)?;
    t.lock_sent = true;
    Ok(waits)
}

/// Where a get-type operation's answer goes: `count` instances of `layout` at `addr`.
pub(crate) struct Landing {
    pub addr: *mut c_void,
    pub count: i64,
    pub layout: Layout,
}

/// Sends operation request `msg` (made by the caller: [`Ask::Op`], the encoded operation and
/// its data) to `target`; a get-type one's answer is received into `landing`.
/// Returns the wait for the answer when `detach` is set (request-based calls hand it to the
/// program), else keeps it in `t`.
/// `track`: a created window's accumulate in a passive epoch, numbered and kept there until
/// a flush settles it (`withdraw.rs`; with `detach` and an answer, the program's request
/// takes the answer: not withdrawable, and a flush asks the handler, as below).
pub(crate) fn operate(
    comm: &Communicator,
    target: usize,
    t: &mut Target,
    msg: Vec<u8>,
    landing: Option<Landing>,
    detach: bool,
    track: Option<&mut Outstanding>,
) -> Res<Option<Wait>> {
    lock_lazily(comm, target, t)?;
    let mut answer = None;
    let mut sink = Sink::None;
    if let Some(l) = landing {
        // SAFETY: MPI keeps the result buffer valid, and untouched, until the operation completes.
        let v = unsafe { view(&l.layout, l.addr, l.count, Dir::Write) }?;
        // SAFETY: the view (user buffer or staging box) stays until the wait finishes.
        let req = unsafe { expect(comm, target, v.ptr(), v.len()) }?;
        answer = Some(Wait { req, staged: v.into_staging(), _bytes: Vec::new() });
        sink = Sink::Landing(l);
    }
    if let Some(track) = track {
        if detach && answer.is_some() {
            send_tracked(comm, target, msg, track, Sink::None, None)?;
            if let Some(p) = track.ops.back_mut() {
                p.withdrawable = false;
                t.waits.extend(p.sending.take());
            }
            t.unflushed = true;
            return Ok(answer);
        }
        send_tracked(comm, target, msg, track, sink, answer)?;
        return Ok(None);
    }
    send(comm, target, msg, &mut t.waits)?;
    // An answer confirms every operation before it (the target answers in order); one that
    // goes to the program's request (MPI_Rget...) is not among the waits a flush takes, so a
    // flush then asks for an answer of its own, which comes after it: MPI_Win_flush completes
    // request-based operations too (BAGEL's distributed FCI reads MPI_Rget's data after a flush).
    t.unflushed = answer.is_none() || detach;
    match answer {
        Some(a) if detach => Ok(Some(a)),
        Some(a) => {
            t.waits.push(a);
            Ok(None)
        }
        None => Ok(None),
    }
}

/// [`operate`] for an answer of `len` contiguous bytes at `result` (null: no answer), with no
/// datatype view: the fast path of `fast.rs`.
///
/// # Safety
/// `result..result+len` stays valid and untouched until the answer has arrived.
pub(crate) unsafe fn operate_contiguous(
    comm: &Communicator,
    target: usize,
    t: &mut Target,
    msg: Vec<u8>,
    result: *mut u8,
    len: usize,
    track: Option<&mut Outstanding>,
) -> Res {
    lock_lazily(comm, target, t)?;
    let answer = match result.is_null() {
        true => None,
        false => Some(Wait { req: expect(comm, target, result, len)?, staged: None, _bytes: Vec::new() }),
    };
    if let Some(track) = track {
        let sink = if result.is_null() { Sink::None } else { Sink::Raw { ptr: result, len } };
        return send_tracked(comm, target, msg, track, sink, answer);
    }
    send(comm, target, msg, &mut t.waits)?;
    t.unflushed = answer.is_none();
    t.waits.extend(answer);
    Ok(())
}

/// Starts a flush of `t`: asks for an answer if operations are unconfirmed (unless only local
/// completion is wanted), and hands over everything to wait for.
pub(crate) fn start_flush(comm: &Communicator, target: usize, t: &mut Target, local: bool) -> Res<Vec<Wait>> {
    if t.unflushed && !local {
        ask(comm, target, Ask::Flush, 0, &mut t.waits)?;
        t.unflushed = false;
    }
    Ok(std::mem::take(&mut t.waits))
}

/// Starts the end of `t`'s lock: the unlock (or, without a lock asked, a flush if needed),
/// and hands over everything to wait for; `t` is left unlocked.
pub(crate) fn start_unlock(comm: &Communicator, target: usize, t: &mut Target) -> Res<Vec<Wait>> {
    if t.lock_sent && !t.unflushed {
        send(comm, target, Ask::Unlock.header(UNLOCK_SILENTLY), &mut t.waits)?;
    } else if t.lock_sent {
        ask(comm, target, Ask::Unlock, 0, &mut t.waits)?;
    } else if t.unflushed {
        ask(comm, target, Ask::Flush, 0, &mut t.waits)?;
    }
    let waits = std::mem::take(&mut t.waits);
    *t = Target::default();
    Ok(waits)
}

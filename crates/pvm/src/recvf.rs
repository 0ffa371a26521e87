//! `pvm_recvf`: receiving by a matching function of the program's own, as PVM 3.4 defines it.
//!
//! While one is installed, `pvm_recv`, `pvm_nrecv`, `pvm_trecv`, `pvm_probe` and `pvm_precv`
//! call it as `f(bufid, tid, tag)` for each waiting message in arrival order, whatever its
//! context, with `tid` and `tag` as the program passed them (unchecked: they are the
//! matcher's to read), and take the message it ranks highest:
//!
//! | `f` returns | the call                                                        |
//! |-------------|-----------------------------------------------------------------|
//! | < 0         | returns that code at once                                       |
//! | 0           | passes over this message                                        |
//! | 1           | takes this message at once                                      |
//! | > 1         | takes the highest so ranked once all are seen (first of equals) |
//!
//! While none is picked the call waits for the next arrival (up to its timeout) and asks
//! about every waiting message again. The matcher reads a message through its buffer id
//! (`pvm_bufinfo`, `pvm_getminfo`, or `pvm_setrbuf` and unpacking): for each look, every
//! waiting message is lent to the buffer table, and those not taken go back to the queue
//! after it, so a waiting message has an id only while the matcher looks. The matcher runs
//! with the library's lock free, since it calls the library.
//!
//! Checked against Debian's PVM 3.4.6 (`tests/c/recvf.c` prints the same under both):
//! `pvm_recvf` returns the matcher before, and while none of the program's is installed a
//! pointer to PVM's default one (not the null its manual promises), which a program may call
//! or install again; null installs the default. `pvm_recv`, `pvm_nrecv` and `pvm_trecv` free
//! the active receive buffer first, whether or not a message comes. The group calls' own
//! receives keep the default matching.

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::buffer::Buffer;
use crate::encoding::Encoding;
use crate::error::PvmError;
use crate::state::{call_unlocked, lock, Lib};
use crate::task::Arrived;

/// A matching function: `int (*)(int bufid, int tid, int tag)`.
pub type MatchFn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;

/// The program's matcher as an address; 0 while PVM's default matches. An atomic beside the
/// library's state, so that a receive learns which way to go without taking the lock.
static MATCHER: AtomicUsize = AtomicUsize::new(0);

/// The program's matcher, if one is installed.
pub fn installed() -> Option<MatchFn> {
    match MATCHER.load(Ordering::Relaxed) {
        0 => None,
        // SAFETY: only `pvm_recvf` stores here, and only the address of a `MatchFn`.
        f => Some(unsafe { std::mem::transmute::<usize, MatchFn>(f) }),
    }
}

/// PVM's default matching as a function: the message is from `tid` with `tag` (-1: any) in
/// the task's current context (1), or not (0); a bad id is its error code.
extern "C" fn default_match(mid: c_int, tid: c_int, tag: c_int) -> c_int {
    let lib = lock();
    let ctx = lib.task.as_ref().map_or(0, |t| t.ctx);
    match lib.bufs.get(mid) {
        Ok(b) => c_int::from((tid == -1 || tid == b.src) && (tag == -1 || tag == b.tag) && b.ctx == ctx),
        Err(_) => PvmError::NoSuchBuf.code(),
    }
}

/// `pvm_recvf(f)`: installs `f` (null, or the default returned earlier: PVM's matching) and
/// returns the matcher before. No error is possible.
#[no_mangle]
pub extern "C" fn pvm_recvf(new: Option<MatchFn>) -> MatchFn {
    let default = default_match as MatchFn as usize;
    let new = new.map_or(0, |f| f as usize);
    let new = if new == default { 0 } else { new };
    match MATCHER.swap(new, Ordering::Relaxed) {
        0 => default_match,
        // SAFETY: only this function stores here, and only the address of a `MatchFn`.
        old => unsafe { std::mem::transmute::<usize, MatchFn>(old) },
    }
}

/// What a receive does with the message the matcher picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Takes it out of the queue; its id is the lent buffer's.
    Take,
    /// Leaves it waiting; the id returned is a copy's (`pvm_probe`).
    Look,
}

/// `pvm_recv`, `pvm_nrecv`, `pvm_trecv` by the matcher `f`: the message it picks becomes the
/// active receive buffer; 0 when `timeout` ran out first.
pub fn recv(name: &str, f: MatchFn, tid: c_int, tag: c_int, timeout: Option<Duration>) -> c_int {
    call_unlocked(name, || {
        {
            let mut lib = lock();
            let old = lib.bufs.rbuf;
            if old != 0 {
                lib.bufs.free(old)?;
            }
        }
        Ok(match receive(f, tid, tag, timeout, Pick::Take)? {
            Some(id) => {
                lock().bufs.deliver_id(id);
                id
            }
            None => 0,
        })
    })
}

/// `pvm_probe` by the matcher `f`: a buffer id describing the message it picks (which stays
/// to be received), or 0.
pub fn probe(f: MatchFn, tid: c_int, tag: c_int) -> c_int {
    call_unlocked("pvm_probe", || Ok(receive(f, tid, tag, Some(Duration::ZERO), Pick::Look)?.unwrap_or(0)))
}

/// Waits up to `timeout` (`None`: for ever) for a message `f` picks: the id of a buffer
/// holding it (not made active), `None` when the time ran out, or `f`'s own error code.
pub fn receive(
    f: MatchFn,
    tid: c_int,
    tag: c_int,
    timeout: Option<Duration>,
    pick: Pick,
) -> Result<Option<i32>, PvmError> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        crate::state::run_handlers();
        let lent = lend(&mut lock())?;
        let chosen = choose(f, tid, tag, &lent);
        let id = give_back(&mut lock(), lent, chosen.unwrap_or(None), pick);
        match (chosen, id) {
            (Err(code), _) => return Err(PvmError::exactly(code)),
            (_, Some(id)) => return Ok(Some(id)),
            _ => {}
        }
        // Asks again once a message has come (as PVM, not when the wait merely ends).
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Ok(None);
            }
            let mut lib = lock();
            let t = lib.task()?;
            let before = t.queue.len();
            t.take_in(left);
            if t.queue.len() > before || !t.for_handlers.is_empty() {
                break;
            }
        }
    }
}

/// Lends every waiting message to the buffer table (taking in what has arrived first): its
/// id, and the message without its bytes (the buffer holds them).
fn lend(lib: &mut Lib) -> Result<Vec<(i32, Arrived)>, PvmError> {
    lib.task()?.take_in(Some(Duration::ZERO));
    let Lib { bufs, task, .. } = lib;
    let Some(t) = task.as_mut() else { return Ok(Vec::new()) };
    Ok(t.queue
        .drain(..)
        .map(|mut m| {
            let data = std::mem::take(&mut m.data);
            let enc = Encoding::from_code(m.enc).unwrap_or(Encoding::Raw);
            (bufs.insert(Buffer::received(enc, data, m.src, m.tag, m.ctx)), m)
        })
        .collect())
}

/// Asks `f` about each lent message in turn: the index of the one it picks, or its error.
fn choose(f: MatchFn, tid: c_int, tag: c_int, lent: &[(i32, Arrived)]) -> Result<Option<usize>, c_int> {
    let mut best: Option<(usize, c_int)> = None;
    for (i, &(id, _)) in lent.iter().enumerate() {
        // SAFETY: `f` is the program's `int (*)(int, int, int)`, given to pvm_recvf.
        let rank = unsafe { f(id, tid, tag) };
        match rank {
            r if r < 0 => return Err(r),
            1 => return Ok(Some(i)),
            r if r > best.map_or(0, |b| b.1) => best = Some((i, r)),
            _ => {}
        }
    }
    Ok(best.map(|b| b.0))
}

/// Puts the lent messages back at the head of the queue in their order, save a taken one;
/// the picked message's id: its lent buffer (taken, read from its start again), or a copy's
/// (looked at). A buffer the matcher freed takes its message with it, as in PVM.
fn give_back(lib: &mut Lib, lent: Vec<(i32, Arrived)>, picked: Option<usize>, pick: Pick) -> Option<i32> {
    let Lib { bufs, task, .. } = lib;
    let mut out = None;
    let mut back = Vec::with_capacity(lent.len());
    for (i, (id, mut m)) in lent.into_iter().enumerate() {
        if picked == Some(i) && pick == Pick::Take {
            if let Ok(b) = bufs.get_mut(id) {
                b.rewind();
                out = Some(id);
            }
            continue;
        }
        let Some(b) = bufs.take(id) else { continue };
        m.data = b.into_data();
        if picked == Some(i) {
            let enc = Encoding::from_code(m.enc).unwrap_or(Encoding::Raw);
            out = Some(bufs.insert(Buffer::received(enc, m.data.clone(), m.src, m.tag, m.ctx)));
        }
        back.push(m);
    }
    // A matcher that left PVM (pvm_exit) took the queue with it.
    if let Some(t) = task.as_mut() {
        for m in back.into_iter().rev() {
            t.queue.push_front(m);
        }
    }
    out
}

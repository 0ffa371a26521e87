//! Accumulates on a created window on one host (`single_copy.rs`) in a passive-target epoch:
//! sent to the target's handler, and withdrawn by the origin when the handler is slow to take
//! them, so a target computing outside MPI stalls no flush or unlock (issue 18, item 4),
//! while an attentive target still answers in one round trip.
//!
//! # The protocol
//!
//! Each such operation carries a number (its request's flags word, `serve.rs`), 1, 2, 3, ...
//! per (origin, target), and the node segment holds one *settled* word per pair (`segment.rs`):
//! the last of the origin's operations that is settled. Both sides change it only under the
//! target part's accumulate lock, the one every accumulate on a created window takes:
//!
//! - the handler, with the lock held, applies operation `s` only if `settled < s`, and then
//!   stores `settled = s` (Release) before it lets the lock go; otherwise it drops the request
//!   unanswered;
//! - the origin's flush (and unlock, and an operation on its own rank) waits until `settled`
//!   reaches its last operation and every answer of those has landed; once `BB_RMA_WITHDRAW_US`
//!   has passed, it takes the lock, applies every operation past `settled` itself, in order, by
//!   single copies of the target's memory (read, combine, write back), writes what a get-type
//!   one fetched to its result buffer, cancels the receive of the answer that will never come,
//!   and stores `settled` = its last.
//!
//! So each operation is applied exactly once, whole, under the lock (atomic with respect to
//! every other accumulate on the part, whoever applies it), and one origin's operations in
//! the order issued (the handler takes them in order; the origin withdraws only a suffix).
//! A flush needs no message of its own: the settled word says what the handler has applied.
//! Operations that cannot be withdrawn (a request message still in flight, an answer owned by
//! the program's request, single copies the kernel refuses) stop the withdrawal: what follows
//! them waits for the handler.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use billboard::tunables::Tunable;
use billboard::Communicator;

use super::origin::{Landing, Wait};
use super::segment::Segment;
use super::shm_sync::{self, AccumulateGuard};
use super::single_copy::{accumulate_remote, Failure};
use super::target::{op_name, Access};
use crate::abi::MPI_ERR_OP;
use crate::datatype::{view, Dir};
use crate::error::{err, Res};

/// How long a flush waits for the handler before the origin applies the rest itself.
pub(crate) static PATIENCE_US: Tunable = Tunable::new(
    "BB_RMA_WITHDRAW_US",
    10,
    "MPI_Win_create on one host: a flush or unlock waits this long (us) for the target's handler, then applies the accumulates not yet taken itself; an attentive target answers in ~1 us, a sleeping one in 30-40",
);

/// Where a withdrawn operation's fetched bytes go.
pub(crate) enum Sink {
    None,
    /// `len` contiguous bytes (the fast path of `fast.rs`).
    Raw {
        ptr: *mut u8,
        len: usize,
    },
    Landing(Landing),
}

/// One operation sent to the handler and not yet known settled.
pub(crate) struct Pending {
    pub seq: u64,
    /// The request as sent (`None`: its send is in flight, `sending` holds it).
    pub msg: Option<Vec<u8>>,
    pub sending: Option<Wait>,
    /// False: only the handler may apply it (the program's request awaits the answer, or it
    /// is too large to be worth a second application here: [`WITHDRAW_MAX`]).
    pub withdrawable: bool,
    pub sink: Sink,
    /// The receive of its answer (a get-type operation's).
    pub answer: Option<Wait>,
    /// What it fetched, once withdrawn and applied here.
    pub reply: Option<Vec<u8>>,
}

impl Pending {
    fn request(&self) -> Option<&[u8]> {
        self.msg.as_deref().or_else(|| self.sending.as_ref().map(Wait::bytes))
    }
}

/// What an origin's settlings of one target share with its window: where to wait and lock,
/// and what a settling tells the window (one reference count per flush, not three).
pub(crate) struct Shared {
    comm: Communicator,
    seg: Arc<Segment>,
    /// Sends of withdrawn requests still in flight: they end when the target next reads its
    /// routes (then its handler drops them); MPI_Win_free finishes them before its barrier.
    limbo: Mutex<Vec<Wait>>,
    /// Whether `limbo` may hold any (looked at without the mutex on every send).
    in_limbo: AtomicBool,
    /// Requests were withdrawn: some may still wait in the target's routes, to be read (and
    /// dropped) by its handler before MPI_Win_free lets the handler go, or a window that
    /// reuses the communicator's context would get them.
    stale: AtomicBool,
    /// Operations still to apply at once, without the handler: a settling had to withdraw
    /// (the target was not in MPI), so the next ones would only wait for it too.
    direct: AtomicU32,
}

// SAFETY: what is not Send and Sync in it are the sends in limbo (requests over bytes they
// own, reached only under the mutex), as in the window's other waits; the rest is atomics.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// An origin's numbered operations to one target.
pub(crate) struct Outstanding {
    /// The number of the last one sent (or applied here).
    pub sent: u64,
    pub ops: VecDeque<Pending>,
    shared: Arc<Shared>,
}

impl Outstanding {
    /// For a window of communicator `comm` synchronised in `seg`.
    pub fn new(comm: &Communicator, seg: &Arc<Segment>) -> Outstanding {
        let shared = Shared {
            comm: comm.clone(),
            seg: seg.clone(),
            limbo: Mutex::default(),
            in_limbo: AtomicBool::new(false),
            stale: AtomicBool::new(false),
            direct: AtomicU32::new(0),
        };
        Outstanding { sent: 0, ops: VecDeque::new(), shared: Arc::new(shared) }
    }

    /// Lets go of the sends in limbo that have ended.
    pub fn prune(&mut self) {
        if !self.shared.in_limbo.load(Ordering::Relaxed) {
            return;
        }
        let mut limbo = self.shared.limbo.lock().unwrap_or_else(|e| e.into_inner());
        limbo.retain_mut(|w| w.try_finish().is_none());
        self.shared.in_limbo.store(!limbo.is_empty(), Ordering::Relaxed);
    }

    /// The sends in limbo, to finish (MPI_Win_free).
    pub fn take_limbo(&mut self) -> Vec<Wait> {
        std::mem::take(&mut *self.shared.limbo.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether withdrawn requests may still be on their way to the target's handler.
    pub fn stale(&self) -> bool {
        self.shared.stale.load(Ordering::Relaxed)
    }

    /// Whether the next operation is applied at once ([`Outstanding::apply_now`]).
    #[inline]
    pub fn direct(&self) -> bool {
        self.ops.is_empty() && self.shared.direct.load(Ordering::Relaxed) > 0
    }

    /// Applies accumulate-type `a` (packed origin data, then compare data, in `data`) at once
    /// by single copies, under the accumulate lock, numbered as if sent, if a recent settling
    /// found the target away and nothing is outstanding (`None`: send it to the handler).
    /// Returns what it fetched.
    ///
    /// # Safety
    /// `a.target` lies inside the target's window (the origin checked it).
    pub unsafe fn apply_now(
        &mut self,
        seg: &Segment,
        target: usize,
        (pid, base): (libc::pid_t, usize),
        a: &Access,
        data: &[u8],
    ) -> Option<Result<Vec<u8>, Failure>> {
        if !self.direct() || a.target.bytes() > WITHDRAW_MAX {
            return None;
        }
        self.shared.direct.fetch_sub(1, Ordering::Relaxed);
        let _held = AccumulateGuard::of(seg, target);
        // Nothing is outstanding: every operation numbered so far is settled, and this one
        // takes the next number, which the handler will never see.
        shm_sync::before_load();
        let reply = accumulate_remote(pid, base, a, data).map_err(|f| f.named(target, a.op));
        if reply.is_ok() {
            self.sent += 1;
            seg.settled(target, seg.me()).store(self.sent, Ordering::Release);
            shm_sync::stored();
        }
        Some(reply)
    }
}

/// The largest operation (target bytes) an origin withdraws or applies at once: beyond it the
/// handler's single pass beats reading, combining and writing back by single copies (1 MiB
/// accumulates took 10x longer withdrawn), and its request is a rendezvous the handler is
/// busy receiving anyway.
pub(crate) const WITHDRAW_MAX: usize = 64 << 10;

/// Operations applied at once after a settling had to withdraw, before the handler is tried
/// again (a target back in MPI answers faster than two single copies; one that is not costs
/// a flush `BB_RMA_WITHDRAW_US` more once per this many operations).
const DIRECT_OPS: u32 = 256;

/// The settling of one target's outstanding operations, taken out of the window so that it
/// runs without the tables.
pub(crate) struct Settle {
    shared: Arc<Shared>,
    target: usize,
    me: usize,
    /// The target's process and window base, for single copies.
    pid: libc::pid_t,
    base: usize,
    ops: VecDeque<Pending>,
}

impl Settle {
    pub fn new(target: usize, (pid, base): (libc::pid_t, usize), o: &mut Outstanding) -> Option<Settle> {
        if o.ops.is_empty() {
            return None;
        }
        let ops = std::mem::take(&mut o.ops);
        let shared = o.shared.clone();
        Some(Settle { me: shared.seg.me(), shared, target, pid, base, ops })
    }

    /// Waits until every operation is settled and its answer landed, withdrawing those the
    /// handler has not taken after the patience (module comment).
    pub fn run(mut self) -> Res {
        let mut first = Ok(());
        // The patience is a plain spin: each look tests the front answer, which makes a round
        // of progress aimed at the target (as a blocking wait does, with no ladder to climb
        // in a few microseconds).
        let patience = Duration::from_micros(PATIENCE_US.get() as u64);
        let mut start = None;
        for look in 0u32.. {
            if !self.retire(&mut first) {
                // No answer was tested (which makes progress): a round of it, for the sends
                // and this rank's own handler.
                self.shared.comm.progress();
            }
            if self.ops.is_empty() {
                return first;
            }
            // The clock from the 16th look (~1 us): an attentive target has answered by then.
            if look % 16 == 15 && start.get_or_insert_with(Instant::now).elapsed() >= patience {
                break;
            }
        }
        self.withdraw(&mut first);
        // What is left: answers of operations the handler took, on their way; or operations
        // that could not be withdrawn, which wait for the target down the ladder.
        let shared = self.shared.clone();
        shared.comm.wait_for(|| {
            self.retire(&mut first);
            self.ops.is_empty()
        });
        first
    }

    /// Drops the settled operations from the front whose answers have landed. Returns
    /// whether it tested an answer (a round of progress).
    fn retire(&mut self, first: &mut Res) -> bool {
        // Read only when an operation without an answer needs it: its line is the handler's
        // to write, and a get-type operation's answer says it applied everything before.
        let mut settled = None;
        let mut tested = false;
        while let Some(op) = self.ops.front_mut() {
            match op.answer.as_mut() {
                // Answered only once applied (the handler stores the settled word first).
                Some(a) => {
                    tested = true;
                    match a.try_finish() {
                        None => return true,
                        Some(Err(e)) if first.is_ok() => *first = Err(e),
                        Some(_) => {}
                    }
                }
                None => {
                    let word = self.shared.seg.settled(self.target, self.me);
                    if op.seq > *settled.get_or_insert_with(|| word.load(Ordering::Acquire)) {
                        return tested;
                    }
                }
            }
            let Some(op) = self.ops.pop_front() else { return tested };
            if let Some(reply) = op.reply {
                if let Err(e) = deliver(&op.sink, &reply) {
                    if first.is_ok() {
                        *first = Err(e);
                    }
                }
            }
            if let Some(mut sending) = op.sending {
                if sending.try_finish().is_none() {
                    self.shared.limbo.lock().unwrap_or_else(|e| e.into_inner()).push(sending);
                    self.shared.in_limbo.store(true, Ordering::Relaxed);
                }
            }
        }
        tested
    }

    /// Applies the operations past the settled word here, under the accumulate lock.
    fn withdraw(&mut self, first: &mut Res) {
        let shared = self.shared.clone();
        let seg = &shared.seg;
        let word = seg.settled(self.target, self.me);
        let held = AccumulateGuard::of(seg, self.target);
        let settled = word.load(Ordering::Relaxed);
        // Receives of answers that will never come, cancelled with the lock let go (a wait
        // may run progress, and this process's handler takes the lock of its own part).
        let mut dead = Vec::new();
        let mut last = settled;
        shm_sync::before_load();
        for op in self.ops.iter_mut().filter(|op| op.seq > settled) {
            let Some(msg) = op.request().filter(|_| op.withdrawable) else { break };
            let applied = Access::decode_one(&msg[16..]).map_err(Failure::Op).and_then(|(a, data)| {
                // SAFETY: the origin checked the operation against the target's window size.
                unsafe { accumulate_remote(self.pid, self.base, &a, data) }.map_err(|f| f.named(self.target, a.op))
            });
            let reply = match applied {
                Ok(reply) => reply,
                Err(Failure::Refused(e)) => {
                    super::single_copy::report(self.me, &format!("{e} (rank {})", self.target));
                    break;
                }
                Err(Failure::Op(e)) => {
                    if first.is_ok() {
                        *first = Err(err(MPI_ERR_OP, e));
                    }
                    break;
                }
            };
            dead.extend(op.answer.take());
            // Delivered when it retires, after the answers of the operations before it: the
            // program sees results land in the order it issued the operations.
            op.reply = Some(reply);
            last = op.seq;
        }
        if last > settled {
            shm_sync::stored();
            word.store(last, Ordering::Release);
            self.shared.direct.store(DIRECT_OPS, Ordering::Relaxed);
            self.shared.stale.store(true, Ordering::Relaxed);
        }
        drop(held);
        dead.into_iter().for_each(Wait::cancel);
    }
}

/// Writes a withdrawn get-type operation's fetched bytes where its answer would have landed.
pub(crate) fn deliver(sink: &Sink, reply: &[u8]) -> Res {
    match sink {
        Sink::None => {}
        Sink::Raw { ptr, len } => {
            // SAFETY: the result buffer, which MPI keeps valid until the operation completes.
            unsafe { std::ptr::copy_nonoverlapping(reply.as_ptr(), *ptr, (*len).min(reply.len())) };
        }
        Sink::Landing(l) => {
            // SAFETY: as above.
            let mut out = unsafe { view(&l.layout, l.addr, l.count, Dir::Write) }?;
            let n = out.len().min(reply.len());
            out.bytes_mut()[..n].copy_from_slice(&reply[..n]);
            let len = out.len();
            // SAFETY: the result buffer is still the program's.
            unsafe { out.finish(len) };
        }
    }
    Ok(())
}

impl Failure {
    /// The failure with the operation named, as an MPI error would say it.
    fn named(self, target: usize, op: crate::abi::MPI_Op) -> Failure {
        match self {
            Failure::Op(e) => Failure::Op(format!("{} on target rank {target}: {e}", op_name(op))),
            refused => refused,
        }
    }
}

//! The target's side of passive-target and post/start/complete/wait synchronisation: an
//! active-message handler (billboard's `Communicator::register_handler`) that runs inside this process's
//! progress, whatever MPI call it is in (a wait, a receive, a barrier, a test), and applies
//! the requests origins send it to the window memory. So a lock, a put or a flush needs the
//! target only to be inside MPI, not to call a matching function.
//!
//! # Messages (active messages to handler [`HANDLER`] on the window's private communicator)
//!
//! Native-endian 8-byte words (the ranks of a job share a byte order): word 0 the
//! [`Request`] kind, word 1 its flags (an operation's: its number among the origin's that it
//! may withdraw, 0 if none: `withdraw.rs`); an operation ([`Request::Op`]) then carries one
//! encoded [`Access`] (the format of `target.rs`). The target answers on [`TAG_ANSWER`], in
//! the order the requests came: the data a get-type operation read, an empty message for
//! an unlock, a flush, and a lock asked with [`ANSWER_WHEN_GRANTED`]. An origin posts the
//! receive of each answer before it sends the request, so answers land in order.
//!
//! # Locks
//!
//! Each origin's requests are handled in the order it sent them. A lock that cannot be
//! granted yet (an exclusive one while any is held, a shared one while an exclusive one is)
//! stops that origin's queue: what it sends behind the lock waits here, and a lock request
//! joins a first-come first-served line, so a stream of shared locks cannot starve an
//! exclusive one. An unlock hands the lock on down the line. An origin therefore never waits
//! for a grant before it sends its operations: a lock, a put and an unlock travel together.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use billboard::{ActiveHandler, ActiveMessage, Outbox};

use super::segment::Segment;
use super::shm_sync::AccumulateGuard;
use super::target::{apply_data, Access, Kind};
use crate::abi::*;
use crate::ops::Combiner;

/// The target's handler, on the window's own communicator.
pub(crate) const HANDLER: u16 = 1;
/// Answers from it, in request order.
pub(crate) const TAG_ANSWER: i32 = 4;
/// MPI_Win_post's word to each origin of its group.
pub(crate) const TAG_POST: i32 = 5;

/// Lock flag: the origin waits for the grant (a lock of its own window, whose memory it may
/// touch as soon as MPI_Win_lock returns).
pub(crate) const ANSWER_WHEN_GRANTED: u64 = 1;

/// Unlock flag: no answer. An answer already confirmed every operation of the epoch (its last
/// fetched, or a flush), and the origin's next request comes behind the unlock on the same
/// route: nothing is left for the answer to tell, and a lock/fetch-and-op/unlock costs one
/// round trip, not two.
pub(crate) const UNLOCK_SILENTLY: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    LockShared = 1,
    LockExclusive = 2,
    Unlock = 3,
    Flush = 4,
    Op = 5,
    /// The end of the origin's epoch (MPI_Win_complete, MPI_Win_fence), after its operations.
    Complete = 6,
}

impl Request {
    fn from_word(w: u64) -> Option<Request> {
        Some(match w {
            1 => Request::LockShared,
            2 => Request::LockExclusive,
            3 => Request::Unlock,
            4 => Request::Flush,
            5 => Request::Op,
            6 => Request::Complete,
            _ => return None,
        })
    }

    /// The request's two header words.
    pub fn header(self, flags: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&(self as u64).to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v
    }
}

/// An attached region of a dynamic window: (address, bytes).
pub(crate) type Regions = Arc<Mutex<Vec<(usize, usize)>>>;

/// Where the window's memory is.
pub(crate) enum Memory {
    /// `size` bytes at `base`, displacements relative to it.
    Fixed { base: usize, size: usize },
    /// MPI_Win_create_dynamic: displacements are addresses in the attached regions.
    Dynamic(Regions),
}

/// What the handler shares with the window's own calls.
pub(crate) struct Counters {
    /// Per origin: the ends of its epochs received (MPI_Win_complete, MPI_Win_fence), each
    /// after every operation it sent before. MPI_Win_wait, MPI_Win_test and MPI_Win_fence
    /// compare them with the ends they have consumed.
    pub completes: Box<[AtomicUsize]>,
}

impl Counters {
    pub fn new(ranks: usize) -> Counters {
        Counters { completes: (0..ranks).map(|_| AtomicUsize::new(0)).collect() }
    }

    /// Ends of epochs received from `origin`.
    pub fn ends(&self, origin: usize) -> usize {
        self.completes[origin].load(Ordering::Acquire)
    }
}

/// Which lock an origin holds here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    None,
    Shared,
    Exclusive,
}

/// The handler: one per window and process.
pub(crate) struct Exposure {
    memory: Memory,
    counters: Arc<Counters>,
    held: Vec<Held>,
    shared_holders: usize,
    exclusive: bool,
    /// Per origin: requests behind a lock not granted yet (the lock first).
    blocked: Vec<VecDeque<Vec<u8>>>,
    /// Origins whose first blocked request is a lock, in the order they asked.
    line: VecDeque<usize>,
    /// This process's rank in the window, for messages.
    me: usize,
    /// The window's node segment, where its members all run on one host: accumulates here
    /// hold this part's accumulate lock, as origins that apply them themselves do
    /// (`single_copy.rs`).
    node: Option<Arc<Segment>>,
}

// SAFETY: the window memory is the program's, reached by address only inside progress, with
// the engine held (one thread at a time); the regions are behind a mutex.
unsafe impl Send for Exposure {}

impl Exposure {
    pub fn new(
        memory: Memory,
        counters: Arc<Counters>,
        ranks: usize,
        me: usize,
        node: Option<Arc<Segment>>,
    ) -> Exposure {
        Exposure {
            memory,
            counters,
            held: vec![Held::None; ranks],
            shared_holders: 0,
            exclusive: false,
            blocked: vec![VecDeque::new(); ranks],
            line: VecDeque::new(),
            me,
            node,
        }
    }

    fn grantable(&self, kind: Request) -> bool {
        match kind {
            Request::LockShared => !self.exclusive,
            _ => !self.exclusive && self.shared_holders == 0,
        }
    }

    /// Handles one request; false if it is a lock that must wait (nothing done then).
    fn process(&mut self, origin: usize, msg: &[u8], out: &mut Outbox<'_>) -> bool {
        let word = |i: usize| msg.get(8 * i..8 * i + 8).map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")));
        let (Some(kind), Some(flags)) = (word(0).and_then(Request::from_word), word(1)) else {
            self.complain(origin, "a malformed RMA request");
            return true;
        };
        match kind {
            Request::LockShared | Request::LockExclusive => {
                if !self.grantable(kind) {
                    return false;
                }
                if kind == Request::LockShared {
                    self.shared_holders += 1;
                    self.held[origin] = Held::Shared;
                } else {
                    self.exclusive = true;
                    self.held[origin] = Held::Exclusive;
                }
                if flags & ANSWER_WHEN_GRANTED != 0 {
                    self.answer(origin, Vec::new(), out);
                }
            }
            Request::Unlock => {
                match self.held[origin] {
                    Held::Shared => self.shared_holders -= 1,
                    Held::Exclusive => self.exclusive = false,
                    Held::None => {}
                }
                self.held[origin] = Held::None;
                if flags & UNLOCK_SILENTLY == 0 {
                    self.answer(origin, Vec::new(), out);
                }
                self.grant_waiting(out);
            }
            Request::Flush => self.answer(origin, Vec::new(), out),
            Request::Complete => {
                self.counters.completes[origin].fetch_add(1, Ordering::Release);
            }
            Request::Op => self.operate(origin, flags, &msg[16..], out),
        }
        true
    }

    /// Grants the locks at the head of the line while they can be, and handles what their
    /// origins sent behind them.
    fn grant_waiting(&mut self, out: &mut Outbox<'_>) {
        while let Some(&origin) = self.line.front() {
            let head = self.blocked[origin].front().expect("an origin in line has a blocked lock");
            if !self.process(origin, &head.clone(), out) {
                return;
            }
            self.line.pop_front();
            self.blocked[origin].pop_front();
            while let Some(next) = self.blocked[origin].pop_front() {
                if !self.process(origin, &next, out) {
                    self.blocked[origin].push_front(next);
                    self.line.push_back(origin);
                    break;
                }
            }
        }
    }

    /// Applies one operation to the window memory, answering a get-type one with its data.
    /// `seq`: its number among `origin`'s operations that it may withdraw (0: none, it may not).
    fn operate(&mut self, origin: usize, seq: u64, bytes: &[u8], out: &mut Outbox<'_>) {
        if self.operate_contiguous(origin, seq, bytes, out) {
            return;
        }
        let (access, data) = match Access::decode_one(bytes) {
            Ok(a) => a,
            Err(e) => return self.complain(origin, &e),
        };
        let mut reply = Vec::with_capacity(access.reply_bytes());
        let outcome = match combiner(&access) {
            Ok(mut combine) => {
                let _held = match (&self.node, access.kind) {
                    (Some(seg), Kind::Accumulate | Kind::GetAccumulate | Kind::CompareAndSwap) => {
                        Some(AccumulateGuard::of(seg, self.me))
                    }
                    _ => None,
                };
                if !self.claim(origin, seq) {
                    return;
                }
                let done = self.apply(&access, data, &mut *combine, &mut reply);
                self.settle(origin, seq);
                done
            }
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            reply.resize(access.reply_bytes(), 0);
            self.complain(origin, &e);
        }
        if access.kind.fetches() {
            self.answer(origin, reply, out);
        }
    }

    /// The common accumulate-family operation (what `fast.rs` sends: one block of elements of
    /// 1, 2, 4 or 8 bytes, inside a window of fixed size) applied straight to the window,
    /// with no decoding into an [`Access`] and no packed copy of the target bytes. False: not
    /// such an operation (nothing done): the general path applies it, or says what is wrong.
    fn operate_contiguous(&mut self, origin: usize, seq: u64, bytes: &[u8], out: &mut Outbox<'_>) -> bool {
        let Memory::Fixed { base, size } = self.memory else { return false };
        let word = |i: usize| bytes.get(8 * i..8 * i + 8).map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")));
        let (Some(kind), Some(op), Some(elem), Some(offset), Some(1), Some(len), Some(1), Some(data_len), Some(0)) = (
            word(0).and_then(Kind::from_word),
            word(1).map(|w| w as u32 as MPI_Op),
            word(2).map(|w| w as u32 as MPI_Datatype),
            word(3).map(|w| w as usize),
            word(4),
            word(5).map(|w| w as usize),
            word(6),
            word(7).map(|w| w as usize),
            word(8),
        ) else {
            return false;
        };
        let width = builtin_datatype_size(elem).filter(|w| matches!(w, 1 | 2 | 4 | 8));
        let fits = match kind {
            Kind::Accumulate => op != MPI_NO_OP && data_len == len,
            Kind::GetAccumulate => data_len == if op == MPI_NO_OP { 0 } else { len },
            Kind::CompareAndSwap => data_len == 2 * len,
            Kind::Put | Kind::Get => false,
        };
        if !fits
            || is_pair_type(elem)
            || width.is_none_or(|w| len == 0 || !len.is_multiple_of(w))
            || word(9) != Some(len as u64)
            || offset.checked_add(len).is_none_or(|end| end > size)
            || bytes.len() != 8 * 10 + data_len
        {
            return false;
        }
        let Ok(mut combine) = combiner_for(kind, op, elem) else { return false };
        let data = &bytes[80..];
        let mut reply = Vec::new();
        {
            let _held = self.node.as_ref().map(|seg| AccumulateGuard::of(seg, self.me));
            if !self.claim(origin, seq) {
                return true;
            }
            // SAFETY: inside the window's memory (checked above), valid until MPI_Win_free
            // (which stops this handler first); other origins' accumulates wait for the lock.
            let here = unsafe { std::slice::from_raw_parts_mut((base as *mut u8).add(offset), len) };
            if kind.fetches() {
                reply.extend_from_slice(here);
            }
            match kind {
                Kind::CompareAndSwap if here == &data[len..] => here.copy_from_slice(&data[..len]),
                Kind::CompareAndSwap => {}
                _ if !data.is_empty() => combine(data, here),
                _ => {}
            }
            self.settle(origin, seq);
        }
        if kind.fetches() {
            self.answer(origin, reply, out);
        }
        true
    }

    /// Whether operation `seq` of `origin` is still this handler's to apply: false if the
    /// origin withdrew it (`withdraw.rs`), then it is neither applied nor answered. Called
    /// holding this part's accumulate lock, as the origin withdraws under it.
    fn claim(&self, origin: usize, seq: u64) -> bool {
        match &self.node {
            Some(seg) if seq != 0 => seg.settled(self.me, origin).load(Ordering::Relaxed) < seq,
            _ => true,
        }
    }

    /// Says that operation `seq` of `origin` is applied (still under the accumulate lock; the
    /// origin's flush reads the word without it, hence Release).
    fn settle(&self, origin: usize, seq: u64) {
        if let (Some(seg), true) = (&self.node, seq != 0) {
            seg.settled(self.me, origin).store(seq, Ordering::Release);
        }
    }

    fn apply(
        &self,
        a: &Access,
        data: &[u8],
        combine: &mut dyn FnMut(&[u8], &mut [u8]),
        reply: &mut Vec<u8>,
    ) -> Result<(), String> {
        match &self.memory {
            Memory::Fixed { base, size } => {
                let window: &mut [u8] = if *size == 0 {
                    &mut []
                } else {
                    // SAFETY: the window's memory, valid until MPI_Win_free (which stops this
                    // handler first); MPI forbids the program conflicting accesses meanwhile.
                    unsafe { std::slice::from_raw_parts_mut(*base as *mut u8, *size) }
                };
                apply_data(window, a, data, combine, reply)
            }
            Memory::Dynamic(regions) => {
                let (lo, hi) = a.target.span().unwrap_or((0, 0));
                let regions = regions.lock().unwrap_or_else(|e| e.into_inner());
                let Some(&(at, len)) = regions.iter().find(|&&(at, len)| lo >= at as i64 && hi <= (at + len) as i64)
                else {
                    return Err(format!(
                        "addresses [{lo:#x}, {hi:#x}) are in no region attached to the dynamic window"
                    ));
                };
                // SAFETY: an attached region stays valid until detached, which takes this lock.
                let window = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len) };
                let mut local = a.clone();
                local.target.offset -= at as i64;
                apply_data(window, &local, data, combine, reply)
            }
        }
    }

    /// Answers `origin` (whose receive of it is posted).
    fn answer(&self, origin: usize, bytes: Vec<u8>, out: &mut Outbox<'_>) {
        if let Err(e) = out.send_message(origin, TAG_ANSWER, bytes) {
            self.complain(origin, &e.to_string());
        }
    }

    /// A request that cannot be carried out: the origin checked it, so only a bug gets here.
    fn complain(&self, origin: usize, what: &str) {
        eprintln!("billboard MPI (rank {}): RMA request from rank {origin} on a window refused: {what}", self.me);
    }
}

impl ActiveHandler for Exposure {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        let (origin, payload) = (msg.source, msg.payload);
        if origin >= self.blocked.len() {
            return self.complain(origin, "no such rank in the window's group");
        }
        if !self.blocked[origin].is_empty() {
            self.blocked[origin].push_back(payload.to_vec());
        } else if !self.process(origin, payload, out) {
            self.blocked[origin].push_back(payload.to_vec());
            self.line.push_back(origin);
        }
    }
}

/// Packed size and extent of MPICH's { value, int } pair types, as MINLOC and MAXLOC read
/// them (fixed by the ABI: the handler cannot look types up, it runs inside progress).
fn pair_shape(t: MPI_Datatype) -> Option<(usize, usize)> {
    Some(match t {
        MPI_FLOAT_INT => (8, 8),
        MPI_DOUBLE_INT | MPI_LONG_INT => (12, 16),
        MPI_SHORT_INT => (6, 8),
        MPI_LONG_DOUBLE_INT => (20, 32),
        _ => return None,
    })
}

/// The element-wise operation of an accumulate on packed elements of `a.elem` (a predefined
/// type: the origin resolved it).
pub(crate) fn combiner(a: &Access) -> Result<Combiner, String> {
    combiner_for(a.kind, a.op, a.elem)
}

/// [`combiner`] of an operation of `kind` with `op` on elements of `elem`.
pub(crate) fn combiner_for(kind: Kind, op: MPI_Op, elem: MPI_Datatype) -> Result<Combiner, String> {
    if !matches!(kind, Kind::Accumulate | Kind::GetAccumulate) || op == MPI_NO_OP {
        return Ok(Box::new(|_: &[u8], _: &mut [u8]| {}));
    }
    if op == MPI_REPLACE {
        return Ok(Box::new(|i: &[u8], io: &mut [u8]| io.copy_from_slice(i)));
    }
    let mut f = crate::ops::predefined(op, elem)
        .ok_or_else(|| format!("operator {op:#x} is not defined on datatype {elem:#x}"))?;
    let Some((size, extent)) = pair_shape(elem) else { return Ok(f) };
    // Packed, a pair is the value's bytes then the int's; the operator reads them laid out as
    // in memory, `extent` bytes apart with the int at max(value size, 4).
    let value = size - 4;
    let at = value.max(4);
    let spread = move |packed: &[u8]| -> Vec<u8> {
        let mut v = vec![0u8; packed.len() / size * extent];
        for (p, s) in packed.chunks_exact(size).zip(v.chunks_exact_mut(extent)) {
            s[..value].copy_from_slice(&p[..value]);
            s[at..at + 4].copy_from_slice(&p[value..]);
        }
        v
    };
    Ok(Box::new(move |i: &[u8], io: &mut [u8]| {
        let (a, mut b) = (spread(i), spread(io));
        f(&a, &mut b);
        for (p, s) in io.chunks_exact_mut(size).zip(b.chunks_exact(extent)) {
            p[..value].copy_from_slice(&s[..value]);
            p[value..].copy_from_slice(&s[at..at + 4]);
        }
    }))
}

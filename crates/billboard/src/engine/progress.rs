//! The progress engine: sends, receives, protocol state machines, and the one poll loop.
//!
//! Everything is non-blocking underneath; a blocking call is start + [`Engine::wait`]. Records
//! from the channel are handled as they are polled: an EAGER record is copied straight into a
//! posted buffer (or kept as unexpected), an RTS starts a single copy from the sender's memory.
//! Sends go straight to the channel when nothing is queued before them for that peer, so the
//! small-message path allocates nothing and makes no system call.
//!
//! Files, by concern: this one holds the engine, its calls and the poll loop; `records.rs` what
//! each arriving record does; each large-message protocol has its own machine without I/O:
//! `single_copy.rs`, `pipeline.rs`, `shared_copy.rs` and the sender's `rendezvous.rs`, driven
//! by `large.rs`; `failure.rs` fails a peer; `revoke.rs` revokes a communicator
//! (MPIX_Comm_revoke).

use std::collections::VecDeque;

use super::claims::{self, End};
use super::matching::{Arrival, Envelope, Matcher, Pattern};
use super::protocol::{Protocol, Rts, Share, Thresholds, CTS, DATA, EAGER, FIN, PUSHED, REVOKE, RTS, SHARE};
use super::protocol::{CMA_SEGMENT, SHARED_CHUNK, SHARED_COPY, SINGLE_COPY};
use super::rendezvous::{answer, Answer, Phase, Step};
use super::request::{Completion, ReqId, Slab, State};
use super::scatter::{copy_into, iovecs, Block, Cursor, Pieces};
use super::traffic::{Traffic, WaitCalls};
use std::sync::Arc;

use crate::transport::routes::Routes;
use crate::transport::{Channel, Header};
use crate::{verbose, Error, Result};

#[path = "active.rs"]
pub(crate) mod active;
#[cfg(all(test, not(loom)))]
#[path = "closed_pair_tests.rs"]
mod closed_pair_tests;
#[path = "failure.rs"]
mod failure;
#[path = "large.rs"]
mod large;
#[path = "records.rs"]
mod records;
#[path = "revoke.rs"]
pub(crate) mod revoke;
#[cfg(all(test, not(loom)))]
#[path = "sim_tests.rs"]
mod sim_tests;
#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;

pub use active::{ActiveHandler, ActiveMessage, Outbox, HANDLER_MAX, HEADER_MAX};

/// An unexpected message, kept until a receive matches it.
pub(crate) enum Pending {
    /// The whole message, copied out of the channel so the sender's ring and slots move on.
    Eager(Vec<u8>),
    /// A rendezvous offer: the data stays in the sender's memory until matched (`blocks` > 0:
    /// `addr` is the sender's block list, see [`Rts`]).
    Rts { peer: usize, addr: u64, len: usize, send_req: u32, blocks: u32 },
}

impl Pending {
    pub fn bytes(&self) -> usize {
        match self {
            Pending::Eager(v) => v.len(),
            Pending::Rts { len, .. } => *len,
        }
    }
}

/// A blocking receive waiting outside the matcher (see [`Engine::recv_direct`]): the one
/// receive of its context, so the first record that matches it is its message.
struct Direct {
    pattern: Pattern,
    hint: Option<usize>,
    buf: *mut u8,
    cap: usize,
    outcome: Option<Outcome>,
}

/// What became of a direct receive.
enum Outcome {
    /// An eager message landed in the buffer (or the receive failed).
    Done(Result<Completion>),
    /// A rendezvous matched: the receive goes on as request `.0`.
    Rendezvous(ReqId),
}

/// How a blocking receive goes on: directly (no request, no matcher entry) or as a request.
pub(crate) enum Started {
    Direct,
    Request(ReqId),
}

/// A control record waiting for room: (peer, header, payload, payload bytes used).
type Control = (usize, Header, [u8; Share::BYTES], usize);

/// Everything but the channel, so the poll callback can borrow it while the channel is polled.
struct Core {
    matcher: Matcher<Pending>,
    reqs: Slab,
    /// Per peer, sends waiting for ring room behind earlier ones (no overtaking).
    queued: Vec<VecDeque<ReqId>>,
    queued_total: usize,
    /// Control records (FIN, CTS) waiting for ring room.
    control: VecDeque<Control>,
    /// Requests that move data outside the poll: single copies and pipelined sends.
    active: Vec<ReqId>,
    /// Per peer: large messages are read straight from its memory (else pipelined through the channel).
    single_copy: Vec<bool>,
    cma_segment: usize,
    /// Smallest message copied by both ends at once (0: never), and the bytes each end claims.
    shared_min: usize,
    shared_chunk: usize,
    /// Per peer: claim words its route has for shared copies (0: none; at most 16), and those
    /// in use by our shared copies of its messages (bit k: word k).
    claim_words: Vec<u32>,
    claims_busy: Vec<u16>,
    /// Per peer: the kernel refused our writes into its memory; we no longer help it copy.
    push_refused: Vec<bool>,
    /// Per peer: a copy from or into its memory has worked, so the pid it published is right,
    /// and a copy that then finds no such process (ESRCH) means it is gone. Before one has
    /// worked, ESRCH may be a peer in another pid namespace: a refusal (`failure.rs`).
    copied: Vec<bool>,
    /// Per peer: why its route broke; requests that depend on it fail with that.
    failed: Vec<Option<String>>,
    any_failed: bool,
    /// Peers from this number on joined after start (another job's): their leaving is normal
    /// (disconnect, finalize), so it fails only requests that name them, not wildcard receives.
    joined_from: usize,
    /// Peers failed for what they sent, whose routes are to be closed after this poll.
    to_close: Vec<usize>,
    /// The blocking receive waiting directly, if any (one at a time).
    direct: Option<Direct>,
    /// Per peer: messages and bytes exchanged (MPI_T's counters).
    pub(super) traffic: Vec<Traffic>,
    /// Active-message handlers and what they have kept or in flight (`active.rs`).
    am: active::ActiveMessages,
    /// Revoked communicators' contexts (`revoke.rs`), and whether there is any.
    revoked: Arc<revoke::Revoked>,
    any_revoked: bool,
    /// Who holds each communicator's context pair here (`revoke.rs`: a late notice's check).
    holders: revoke::Holders,
}

/// The engine over channel `C`: the process's routes, or an in-memory channel in tests.
pub struct Engine<C: Channel = Routes> {
    chan: C,
    /// Per peer: protocol thresholds of the route that reaches it.
    thresholds: Vec<Thresholds>,
    oversubscribed: bool,
    core: Core,
    /// The slices of a gathered send, reused.
    pieces: Pieces,
    /// Nonblocking collectives in flight.
    pub(super) scheds: super::sched::Scheds,
    /// The last scope number handed out ([`Engine::open_scope`]).
    scopes: u32,
    /// Times a wait gave up the core (`sched_yield`), counted by `wait.rs`.
    pub(super) yields: u64,
    /// Rounds of progress (polls of the routes), for [`Engine::wait_calls`].
    polls: u64,
}

// SAFETY: the engine's raw pointers point into the shared-memory segment it owns, which is
// mapped for its whole life and has no thread affinity; `Shared` serializes all access.
unsafe impl Send for Engine<Routes> {}

impl<C: Channel> Engine<C> {
    pub(crate) fn new(chan: C) -> Engine<C> {
        let n = chan.nranks();
        let thresholds = (0..n).map(|p| Thresholds::from_caps(&chan.caps_for(p))).collect();
        let oversubscribed = chan.oversubscribed();
        let cma = SINGLE_COPY.get() != 0;
        if !cma {
            verbose(format_args!("BB_SHM_SINGLE_COPY=0: large messages use the pipelined copy through shared memory"));
        }
        let single_copy = (0..n).map(|p| cma && chan.caps_for(p).single_copy).collect();
        let claim_words = (0..n).map(|p| chan.caps_for(p).claim_words.min(16) as u32).collect();
        Engine {
            chan,
            thresholds,
            oversubscribed,
            core: Core {
                matcher: Matcher::new(),
                reqs: Slab::default(),
                queued: (0..n).map(|_| VecDeque::new()).collect(),
                queued_total: 0,
                control: VecDeque::new(),
                active: Vec::new(),
                single_copy,
                cma_segment: CMA_SEGMENT.get().max(4096),
                shared_min: SHARED_COPY.get(),
                shared_chunk: SHARED_CHUNK.get().max(claims::PAGE) / claims::PAGE * claims::PAGE,
                claim_words,
                claims_busy: vec![0; n],
                push_refused: vec![false; n],
                copied: vec![false; n],
                failed: vec![None; n],
                any_failed: false,
                joined_from: n,
                to_close: Vec::new(),
                direct: None,
                traffic: vec![Traffic::default(); n],
                am: Default::default(),
                revoked: Arc::default(),
                any_revoked: false,
                holders: Default::default(),
            },
            pieces: Pieces::default(),
            scheds: Default::default(),
            scopes: 0,
            yields: 0,
            polls: 0,
        }
    }

    /// Whether a receive is posted on `context` (a freed communicator's id is reused only once
    /// none is).
    pub(crate) fn receives_posted_on(&self, context: u32) -> bool {
        self.core.matcher.posted_in(context) > 0
    }

    /// The oldest unexpected message matching `pattern`, without progress.
    pub(crate) fn peek(&self, pattern: &Pattern) -> Option<(Envelope, usize)> {
        self.core.matcher.probe(pattern).map(|(env, msg)| (*env, msg.bytes()))
    }

    /// Starts a send of `len` bytes at `buf` to world rank `peer`. `None`: already complete
    /// (the data is in the channel and `buf` may be reused); `Some(id)`: wait on `id`. A
    /// `synchronous` send always goes by rendezvous, so it completes only once matched.
    ///
    /// # Safety
    /// `buf..buf+len` stays valid and unchanged until the request completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn isend(
        &mut self,
        peer: usize,
        ctx: u32,
        src: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        synchronous: bool,
    ) -> Option<ReqId> {
        self.start_send(peer, ctx, src, tag, buf, len, None, synchronous)
    }

    /// Starts a send of the concatenation of `blocks` (a non-contiguous datatype's pieces, in
    /// order), as [`Engine::isend`] does one buffer, without packing it: eager records are
    /// gathered from the blocks, a rendezvous offers the block list itself (the receiver reads
    /// the list, then the data, with `process_vm_readv`), the pipeline gathers each chunk.
    ///
    /// # Safety
    /// Every block stays valid and unchanged until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn isend_blocks(
        &mut self,
        peer: usize,
        ctx: u32,
        src: u32,
        tag: i32,
        blocks: Box<[Block]>,
        synchronous: bool,
    ) -> Option<ReqId> {
        let len: usize = blocks.iter().map(|b| b.1).sum();
        let blocks = if blocks.iter().any(|b| b.1 == 0) {
            // Only blocks that hold bytes are listed: a receiver refuses more blocks than bytes.
            blocks.into_vec().into_iter().filter(|b| b.1 > 0).collect()
        } else {
            blocks
        };
        if blocks.len() <= 1 {
            let buf = blocks.first().map_or(std::ptr::NonNull::dangling().as_ptr(), |b| b.0);
            return self.isend(peer, ctx, src, tag, buf, len, synchronous);
        }
        assert!(u32::try_from(blocks.len()).is_ok(), "{} blocks: the RTS counts them in 32 bits", blocks.len());
        let buf = blocks[0].0 as *const u8;
        self.start_send(peer, ctx, src, tag, buf, len, Some(blocks), synchronous)
    }

    /// Both sends: `len` bytes at `buf`, or gathered from `gather` (then `buf` is its first
    /// block). Inlined, so the contiguous send carries no trace of the gathered one.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn start_send(
        &mut self,
        peer: usize,
        ctx: u32,
        src: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mut gather: Option<Box<[Block]>>,
        synchronous: bool,
    ) -> Option<ReqId> {
        if self.core.any_failed && self.core.failed[peer].is_some() {
            return Some(self.core.failed_request(peer));
        }
        if self.core.revoked_context(ctx, Some(tag)) {
            return Some(self.core.revoked_request(ctx));
        }
        self.core.traffic[peer].sent(len);
        let eager = !synchronous && self.thresholds[peer].protocol(len) == Protocol::Eager;
        let header = Header { kind: if eager { EAGER } else { RTS }, context: ctx, source: src, tag, aux: 0 };
        if self.core.queued[peer].is_empty() {
            if eager {
                let sent = match gather.as_deref() {
                    None => self.chan.try_send(peer, &header, std::slice::from_raw_parts(buf, len)),
                    Some(all) => {
                        let chan = &mut self.chan;
                        // The caller vouches for the blocks (isend_blocks' contract).
                        self.pieces.with(all, 0, len, |p| chan.try_send_gather(peer, &header, p))
                    }
                };
                if sent.is_ok() {
                    return None;
                }
            } else {
                let id = self.core.reqs.insert(State::SendRendezvous { buf, len }, Some(peer));
                self.core.reqs.get_mut(id).gather = gather.take();
                if self.send_rts(peer, id, &header, buf, len) {
                    return Some(id);
                }
                gather = self.core.reqs.get_mut(id).gather.take();
                self.core.reqs.remove(id);
            }
        }
        let id = self.core.reqs.insert(State::SendQueued { header, buf, len }, Some(peer));
        self.core.reqs.get_mut(id).gather = gather;
        self.core.queued[peer].push_back(id);
        self.core.queued_total += 1;
        Some(id)
    }

    /// Sends one eager message to every rank of `peers` as a single post they all read (a
    /// billboard slot, or inline cells), where the routes allow it: true if it went, and then
    /// every send is complete. False (nothing sent) when a peer is off the billboard, has
    /// sends queued before this one, or failed, when the message is not eager, or when there
    /// is no room now: the caller sends to each instead.
    ///
    /// # Safety
    /// `buf..buf+len` is readable for the call.
    pub(crate) unsafe fn multicast(
        &mut self,
        peers: &[usize],
        ctx: u32,
        src: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> bool {
        let fits = |p: usize| {
            let t = &self.thresholds[p];
            t.multicast && len <= t.eager_max && self.core.queued[p].is_empty()
        };
        if self.core.any_failed || !peers.iter().all(|&p| fits(p)) {
            return false;
        }
        let header = Header { kind: EAGER, context: ctx, source: src, tag, aux: 0 };
        let sent = self.chan.try_multicast(peers, &header, std::slice::from_raw_parts(buf, len)).is_ok();
        if sent {
            for &p in peers {
                self.core.traffic[p].sent(len);
            }
        }
        sent
    }

    /// Offers a rendezvous: `matching` carries the envelope. A gathered send offers its block
    /// list (kept in the request until it completes) instead of `buf`.
    fn send_rts(&mut self, peer: usize, id: ReqId, matching: &Header, buf: *const u8, len: usize) -> bool {
        let header = Header { kind: RTS, aux: len as u64, ..*matching };
        let mut rts = match &self.core.reqs.get(id).gather {
            Some(blocks) => Rts { addr: blocks.as_ptr() as u64, send_req: id, blocks: blocks.len() as u32 },
            None => Rts { addr: buf as u64, send_req: id, blocks: 0 },
        };
        if !self.chan.caps_for(peer).single_copy {
            // A peer that cannot read our memory (another host) answers CTS: the address would
            // mean nothing there, and would only tell another host where our buffers lie.
            rts.addr = 0;
        }
        let (payload, n) = rts.encode();
        self.chan.try_send(peer, &header, &payload[..n]).is_ok()
    }

    /// Posts a receive into `buf` (capacity `cap`) for `pattern`; `hint` is the world rank of
    /// the source when it is known.
    ///
    /// # Safety
    /// `buf..buf+cap` stays valid and untouched by others until the request completes.
    pub(crate) unsafe fn irecv(&mut self, pattern: Pattern, hint: Option<usize>, buf: *mut u8, cap: usize) -> ReqId {
        self.irecv_into(pattern, hint, buf, cap, None)
    }

    /// Posts a receive into `blocks` (their lengths add up to the capacity), filled in order.
    ///
    /// # Safety
    /// Every block stays valid and untouched by others until the request completes.
    pub(crate) unsafe fn irecv_blocks(&mut self, pattern: Pattern, hint: Option<usize>, blocks: Box<[Block]>) -> ReqId {
        let cap = blocks.iter().map(|b| b.1).sum();
        let first = blocks.first().map_or(std::ptr::NonNull::dangling().as_ptr(), |b| b.0);
        self.irecv_into(pattern, hint, first, cap, Some(blocks))
    }

    unsafe fn irecv_into(
        &mut self,
        pattern: Pattern,
        hint: Option<usize>,
        buf: *mut u8,
        cap: usize,
        blocks: Option<Box<[Block]>>,
    ) -> ReqId {
        if self.core.any_failed {
            if let Some(peer) = hint.filter(|&p| self.core.failed[p].is_some()) {
                return self.core.failed_request(peer);
            }
        }
        if self.core.revoked_context(pattern.context, pattern.tag) {
            return self.core.revoked_request(pattern.context);
        }
        let id = self.core.reqs.insert(State::RecvPosted { buf, cap }, hint);
        self.core.reqs.get_mut(id).scatter = blocks;
        if let Some((env, msg)) = self.core.matcher.post(pattern, id) {
            self.core.deliver(id, env, msg);
        }
        id
    }

    /// Starts a blocking receive. When nothing could match it sooner (no unexpected message
    /// matches, no receive is posted in its context, no other direct receive waits) it waits
    /// outside the matcher and the request table: the first arriving record that matches is
    /// its message, copied straight into `buf` (the small-message path's shortest way).
    /// Otherwise it is an ordinary posted receive. Finish with [`Engine::direct_finish`] or
    /// [`Engine::finish`].
    ///
    /// # Safety
    /// As for [`Engine::irecv`], until the receive is finished.
    pub(crate) unsafe fn recv_direct(
        &mut self,
        pattern: Pattern,
        hint: Option<usize>,
        buf: *mut u8,
        cap: usize,
    ) -> Started {
        let core = &mut self.core;
        if core.direct.is_some()
            || core.any_failed
            || core.any_revoked
            || core.matcher.unexpected_len() > 0
            || core.matcher.posted_in(pattern.context) > 0
        {
            return Started::Request(self.irecv(pattern, hint, buf, cap));
        }
        core.direct = Some(Direct { pattern, hint, buf, cap, outcome: None });
        Started::Direct
    }

    /// Whether the direct receive has completed.
    #[inline]
    pub(crate) fn direct_done(&self) -> bool {
        match &self.core.direct {
            Some(Direct { outcome: Some(Outcome::Done(_)), .. }) => true,
            Some(Direct { outcome: Some(Outcome::Rendezvous(id)), .. }) => self.core.reqs.is_done(*id),
            _ => false,
        }
    }

    /// Whether the direct receive has completed, taking its message first if it waits at the
    /// head of the awaited peer's ring: the short cut of a blocking receive past a whole
    /// progress round (any other record there is left to the next one).
    #[inline]
    pub(crate) fn direct_taken(&mut self) -> bool {
        let (core, chan) = (&mut self.core, &mut self.chan);
        match &core.direct {
            Some(Direct { outcome: None, hint: Some(peer), .. }) => chan.take_head(*peer, |h, payload| {
                h.kind == EAGER
                    && core.land_direct(Envelope { context: h.context, source: h.source, tag: h.tag }, payload)
            }),
            _ => self.direct_done(),
        }
    }

    /// Ends the completed direct receive and hands over its outcome.
    #[inline]
    pub(crate) fn direct_finish(&mut self) -> Result<Completion> {
        match self.core.direct.take().and_then(|d| d.outcome) {
            Some(Outcome::Done(outcome)) => outcome,
            Some(Outcome::Rendezvous(id)) => self.finish(id),
            None => unreachable!("direct receive finished before it completed"),
        }
    }

    /// Receives the message a matched probe took out of the matcher (MPI_Mrecv).
    ///
    /// # Safety
    /// As for [`Engine::irecv`].
    pub(crate) unsafe fn irecv_taken(&mut self, env: Envelope, msg: Pending, buf: *mut u8, cap: usize) -> ReqId {
        let id = self.core.reqs.insert(State::RecvPosted { buf, cap }, None);
        self.core.deliver(id, env, msg);
        id
    }

    /// The oldest unexpected message matching `pattern`: its envelope and size. Every probe
    /// makes progress, a match already queued or not: a program that computes between probes
    /// (NWChem's targets, between DGEMMs) must still serve the handlers and rendezvous others
    /// wait on, and the oldest match stays the oldest (a source's messages keep their order).
    pub(crate) fn iprobe(&mut self, pattern: &Pattern) -> Option<(Envelope, usize)> {
        self.progress(None);
        self.core.matcher.probe(pattern).map(|(env, msg)| (*env, msg.bytes()))
    }

    /// Removes and returns the oldest unexpected message matching `pattern` (MPI_Improbe),
    /// after a progress round as [`Engine::iprobe`].
    pub(crate) fn take(&mut self, pattern: &Pattern) -> Option<(Envelope, Pending)> {
        self.progress(None);
        self.core.matcher.take(pattern)
    }

    /// Cancels a receive that has not matched yet. True if it was cancelled.
    pub(crate) fn cancel(&mut self, id: ReqId) -> bool {
        if self.core.matcher.cancel(id) {
            let req = self.core.reqs.get_mut(id);
            req.completion.cancelled = true;
            self.core.reqs.complete(id);
            return true;
        }
        false
    }

    pub(crate) fn is_done(&self, id: ReqId) -> bool {
        self.core.reqs.is_done(id)
    }

    /// Whether `id` is an operation in flight, or done and not yet finished.
    #[inline]
    pub(crate) fn in_flight(&self, id: ReqId) -> bool {
        self.core.reqs.in_use(id)
    }

    /// Whether `id` has nothing left to wait for: done, or not in flight at all.
    #[inline]
    pub(crate) fn settled(&self, id: ReqId) -> bool {
        self.core.reqs.settled(id)
    }

    /// A number for a new scope of the native API, never 0 (wrapping after 2^32 - 1 scopes:
    /// one still open by then is a program of its own kind).
    pub(crate) fn open_scope(&mut self) -> u32 {
        self.scopes = self.scopes.wrapping_add(1).max(1);
        self.scopes
    }

    /// Marks request `id` as started by scope `scope`.
    pub(crate) fn set_scope(&mut self, id: ReqId, scope: u32) {
        self.core.reqs.get_mut(id).scope = scope;
    }

    /// The requests scope `scope` started that are still in use: at its end, the ones whose
    /// handles the program leaked.
    pub(crate) fn scope_orphans(&self, scope: u32) -> Vec<ReqId> {
        self.core.reqs.in_scope(scope)
    }

    /// Every request still in use at finalize (let go by `Request::into_raw` and never taken
    /// back), its receive cancelled if it has not matched: what is left to wait for.
    pub(crate) fn cancel_orphans(&mut self) -> Vec<ReqId> {
        let ids: Vec<ReqId> = self.core.reqs.in_use_ids().collect();
        for &id in &ids {
            self.cancel(id);
        }
        ids
    }

    /// Completes `id` if it is done, freeing it; `None` if still in flight.
    pub(crate) fn test(&mut self, id: ReqId) -> Option<Result<Completion>> {
        if !self.core.reqs.is_done(id) {
            self.progress(self.core.reqs.get(id).hint);
            if !self.core.reqs.is_done(id) {
                return None;
            }
        }
        Some(self.finish(id))
    }

    /// Frees a completed request and hands over its outcome.
    pub(crate) fn finish(&mut self, id: ReqId) -> Result<Completion> {
        let req = self.core.reqs.get_mut(id);
        let outcome = match req.error.take() {
            Some(e) => Err(e),
            None => Ok(req.completion),
        };
        self.core.reqs.remove(id);
        outcome
    }

    /// The world rank request `id` waits on, to poll first.
    pub(crate) fn hint(&self, id: ReqId) -> Option<usize> {
        self.core.reqs.get(id).hint
    }

    pub(crate) fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    /// Per peer: what this process exchanged with it so far.
    pub(crate) fn traffic(&self) -> &[Traffic] {
        &self.core.traffic
    }

    /// Messages waiting in the unexpected queue.
    pub(crate) fn unexpected_messages(&self) -> usize {
        self.core.matcher.unexpected_len()
    }

    /// One round of progress: poll the channel, then push what waits for room or copies.
    /// Returns whether anything happened.
    pub(crate) fn progress(&mut self, hint: Option<usize>) -> bool {
        self.polls += 1;
        let core = &mut self.core;
        let records = self.chan.poll(hint, |peer, h, payload| core.on_record(peer, h, payload));
        self.after_poll(hint, records)
    }

    /// [`progress`](Self::progress) for a waiter whose `peer` must run on this core to answer:
    /// the channel's receive waits in the kernel ([`Channel::poll_blocking`]). `None` where it
    /// cannot wait so (this rank has something to push, or the channel says no): the caller
    /// yields instead.
    pub(crate) fn progress_blocking(&mut self, peer: usize) -> Option<bool> {
        if !self.core.nothing_to_push() || self.core.am.has_work() {
            return None;
        }
        let core = &mut self.core;
        let records = self.chan.poll_blocking(peer, |peer, h, payload| core.on_record(peer, h, payload))?;
        self.polls += 1;
        Some(self.after_poll(Some(peer), records))
    }

    /// What the system calls of this rank's waits came to: the yields of its waits and the
    /// receive calls of its socket routes; and the polls of its routes.
    pub(crate) fn wait_calls(&self) -> WaitCalls {
        WaitCalls { yields: self.yields, polls: self.polls, receives: self.chan.receive_calls() }
    }

    /// The rest of a round of progress, after a poll that handed `records` over.
    #[inline(always)]
    fn after_poll(&mut self, hint: Option<usize>, records: usize) -> bool {
        let mut busy = records > 0;
        if self.chan.has_failure() {
            self.take_failures();
            busy = true;
        }
        if !self.core.active.is_empty() {
            busy |= self.advance_active();
        }
        busy |= self.advance_scheds();
        // Before the sends below: what a handler sends goes out in this round.
        if self.core.am.has_work() {
            // A poll of no one in particular that found nothing has looked at every peer.
            busy |= self.advance_active_messages(hint.is_some() || records > 0);
        }
        // A peer failed for what it sent (a record, a copy's block list, an active message)
        // did so in a round that did something: its route and claim words close before the
        // round returns the requests that failed (`to_close` is looked at only then).
        if busy && !self.core.to_close.is_empty() {
            self.take_failures();
        }
        // After the copies and schedules: the FIN of a copy that just ended goes out in this
        // round, not when this rank next calls in (its sender waits for it).
        if !self.core.control.is_empty() {
            busy |= self.flush_control();
        }
        if self.core.queued_total > 0 {
            busy |= self.flush_queued();
        }
        busy
    }

    /// Before a wait sleeps: asks the channel for peers whose end closed unseen (a
    /// shared-memory receiver that failed this rank, or died) and fails them, so a send that
    /// waits only for such a receiver's FIN ends naming it. True if one failed (the wait looks
    /// at its condition again rather than sleep).
    #[cold]
    pub(crate) fn look_for_closed(&mut self) -> bool {
        self.chan.look_for_closed();
        if !self.chan.has_failure() {
            return false;
        }
        self.take_failures();
        true
    }

    /// Fails the peers whose routes the channel found broken, and closes the routes of those
    /// failed for what they sent.
    #[cold]
    #[inline(never)]
    fn take_failures(&mut self) {
        while let Some((peer, why)) = self.chan.take_failure() {
            self.core.fail_peer(peer, why);
        }
        for peer in std::mem::take(&mut self.core.to_close) {
            self.close_peer(peer);
        }
    }

    /// Stops taking `peer`'s records (it failed for what it sent, or closed our shared copy),
    /// and closes the claim words of its shared copies into this rank (`claims::close`), so a
    /// peer that lives takes no more pages of the buffers its failed receives gave back, and
    /// learns that it failed here. Called before the round returns the failed requests.
    pub(super) fn close_peer(&mut self, peer: usize) {
        for k in 0..self.core.claim_words[peer] as usize {
            claims::close(self.chan.claim_word(peer, true, k));
        }
        let why = self.core.failed[peer].as_deref().unwrap_or_default();
        self.chan.close(peer, why);
    }

    fn flush_control(&mut self) -> bool {
        let mut sent = false;
        while let Some(&(peer, header, payload, len)) = self.core.control.front() {
            if self.chan.try_send(peer, &header, &payload[..len]).is_err() {
                break;
            }
            self.core.control.pop_front();
            sent = true;
        }
        sent
    }

    fn flush_queued(&mut self) -> bool {
        let mut sent = false;
        for peer in 0..self.core.queued.len() {
            while let Some(&id) = self.core.queued[peer].front() {
                let State::SendQueued { header, buf, len } = self.core.reqs.get(id).state else {
                    unreachable!("queued request {id} is not a queued send")
                };
                let ok = match header.kind {
                    EAGER => {
                        let ok = match &self.core.reqs.get(id).gather {
                            Some(blocks) => {
                                let chan = &mut self.chan;
                                // SAFETY: the request keeps its blocks alive until it completes.
                                let sent = unsafe {
                                    self.pieces.with(blocks, 0, len, |p| chan.try_send_gather(peer, &header, p))
                                };
                                sent.is_ok()
                            }
                            None => {
                                // SAFETY: the request keeps `buf` alive until it completes.
                                let data = unsafe { std::slice::from_raw_parts(buf, len) };
                                self.chan.try_send(peer, &header, data).is_ok()
                            }
                        };
                        if ok {
                            self.core.reqs.complete(id);
                        }
                        ok
                    }
                    _ => {
                        // The machine's first step (`rendezvous.rs`): room for the RTS posts it.
                        let post = answer(Phase::Queued, Answer::Room) == Step::PostRts;
                        let ok = post && self.send_rts(peer, id, &header, buf, len);
                        if ok {
                            self.core.reqs.get_mut(id).state = State::SendRendezvous { buf, len };
                        }
                        ok
                    }
                };
                if !ok {
                    break;
                }
                self.core.queued[peer].pop_front();
                self.core.queued_total -= 1;
                sent = true;
            }
        }
        sent
    }

    fn advance_active(&mut self) -> bool {
        let mut busy = false;
        let mut i = 0;
        while i < self.core.active.len() {
            let id = self.core.active[i];
            busy |= match self.core.reqs.get(id).state {
                State::RecvSingleCopy { .. } => self.advance_single_copy(id),
                State::RecvShared { .. } => self.advance_shared_recv(id),
                State::SendShared { .. } => self.advance_shared_send(id),
                State::SendPipeline { .. } => self.advance_pipeline(id),
                _ => false,
            };
            if matches!(
                self.core.reqs.get(id).state,
                State::RecvSingleCopy { .. }
                    | State::RecvShared { .. }
                    | State::SendShared { .. }
                    | State::SendPipeline { .. }
            ) {
                i += 1;
            } else {
                self.core.active.swap_remove(i);
            }
        }
        busy
    }

    /// Waits for an arrival from `peer` with a tight spin of at most `spins` pauses, when
    /// nothing but an arrival can move this engine on (nothing queued, no control record, no
    /// data movement); otherwise pauses once. Returns the pauses spent.
    #[inline]
    pub(crate) fn spin_for(&self, peer: usize, spins: u32) -> u32 {
        if self.core.nothing_to_push() {
            self.chan.spin_for(peer, spins)
        } else {
            std::hint::spin_loop();
            1
        }
    }

    /// Nothing left to push: no queued sends, control records or data movement (finalize).
    pub(crate) fn idle(&self) -> bool {
        self.core.nothing_to_push() && self.chan.flushed()
    }
}

#[cfg(test)]
impl<C: Channel> Engine<C> {
    /// Treats peers from `first` on as joined after start (what `add_tcp_peers` does).
    pub(super) fn joined_from(&mut self, first: usize) {
        self.core.joined_from = first;
    }
}

impl Engine<Routes> {
    /// Joins peers of another job over TCP (`Routes::add_tcp_peers`), with the per-peer state
    /// every rank has, fresh where a number of a released peer is taken again; returns the
    /// new peers' numbers.
    pub(crate) fn add_tcp_peers(
        &mut self,
        hosts: Vec<String>,
        node: Vec<usize>,
        established: Vec<(usize, std::os::fd::OwnedFd, Vec<u8>)>,
    ) -> Result<Vec<usize>> {
        let numbers = self.chan.add_tcp_peers(hosts, node, established)?;
        let core = &mut self.core;
        for &p in &numbers {
            let caps = self.chan.caps_for(p);
            let fresh = (Thresholds::from_caps(&caps), caps.claim_words.min(16) as u32);
            if p < self.thresholds.len() {
                // A released peer's number: its sends failed and its route closed (release_peers).
                debug_assert!(core.queued[p].is_empty() && core.claims_busy[p] == 0, "rank {p} reused while busy");
                (self.thresholds[p], core.claim_words[p]) = fresh;
                // Its traffic counts on: MPI_T's counters only ever grow.
                (core.single_copy[p], core.push_refused[p], core.failed[p]) = (false, false, None);
                core.copied[p] = false;
            } else {
                debug_assert_eq!(p, self.thresholds.len(), "new peers are numbered in order");
                self.thresholds.push(fresh.0);
                core.queued.push(VecDeque::new());
                core.single_copy.push(false);
                core.claim_words.push(fresh.1);
                core.claims_busy.push(0);
                core.push_refused.push(false);
                core.copied.push(false);
                core.failed.push(None);
                core.traffic.push(Traffic::default());
            }
        }
        Ok(numbers)
    }

    /// Lets go of `peers`, processes of another job that no communicator uses any more: they
    /// count as failed ("disconnected"), so nothing is sent to them again and a late record of
    /// theirs is dropped, and their connections close; then their numbers are free for peers
    /// that join later (`add_tcp_peers`).
    pub(crate) fn release_peers(&mut self, peers: &[usize]) {
        for &p in peers {
            if self.core.failed.get(p).is_some_and(Option::is_none) {
                self.core.fail_peer(p, format!("world rank {p} (another job's) was disconnected"));
            }
            self.chan.release(p);
        }
    }

    pub(crate) fn sleeper(&mut self) -> crate::transport::routes::Sleeper {
        self.chan.sleeper()
    }

    /// How this rank reaches each rank, and which share a host.
    pub(crate) fn routes(&self) -> &Routes {
        &self.chan
    }
}

impl Core {
    /// Lands an eager message in the direct receive if it is waiting for one that matches.
    #[inline(always)]
    fn land_direct(&mut self, env: Envelope, payload: &[u8]) -> bool {
        let Some(d) = self.direct.as_mut().filter(|d| d.outcome.is_none() && d.pattern.matches(&env)) else {
            return false;
        };
        // SAFETY: the direct receive's buffer holds `cap` bytes until it finishes.
        let (done, error) = unsafe { land(env, payload, d.buf, d.cap, None) };
        d.outcome = Some(Outcome::Done(error.map_or(Ok(done), Err)));
        true
    }

    /// No queued send, control record or data movement: only an arrival can make progress.
    #[inline]
    fn nothing_to_push(&self) -> bool {
        self.queued_total == 0 && self.control.is_empty() && self.active.is_empty()
    }
}

/// Copies an eager message into a receive's `cap` bytes at `buf` (or its `blocks`): what the
/// receive then reports, and the truncation error if the message was longer.
///
/// # Safety
/// `buf..buf+cap` (or the blocks, whose lengths add up to `cap`) is valid for writes.
#[inline(always)]
unsafe fn land(
    env: Envelope,
    data: &[u8],
    buf: *mut u8,
    cap: usize,
    blocks: Option<&[Block]>,
) -> (Completion, Option<Error>) {
    let n = data.len().min(cap);
    match blocks {
        Some(blocks) => copy_into(blocks, 0, &data[..n]),
        None => crate::copy::copy(data.as_ptr(), buf, n),
    }
    let done = Completion { source: env.source, tag: env.tag, bytes: n, cancelled: false };
    (done, (data.len() > cap).then(|| truncated(env, data.len(), cap)))
}

fn truncated(env: Envelope, message_bytes: usize, buffer_bytes: usize) -> Error {
    Error::Truncated { source: env.source as usize, tag: env.tag, message_bytes, buffer_bytes }
}

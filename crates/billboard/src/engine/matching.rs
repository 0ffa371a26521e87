//! MPI message matching: the posted-receive queue and the unexpected-message queue.
//!
//! Sans-IO, like quinn's protocol crate: a plain data structure that the progress code drives with
//! "a receive was posted" ([`Matcher::post`]) and "a message arrived" ([`Matcher::arrive`]). It
//! holds no sockets, no shared memory and no clock, so it is tested alone, including property
//! tests against a deliberately naive model (see the tests at the end of this file).
//!
//! # Rules (MPI 3.1 §3.5)
//!
//! - A message matches a receive when the contexts are equal and the receive's source and tag are
//!   equal to the message's or wildcards (`MPI_ANY_SOURCE`, `MPI_ANY_TAG`).
//! - An arriving message goes to the *earliest posted* matching receive.
//! - A posted receive (and a probe) takes the *oldest* matching unexpected message.
//! - Non-overtaking: the caller calls [`Matcher::arrive`] in the order in which one sender's
//!   messages arrive, and both rules above are FIFO, so two messages from one sender that both
//!   match a receive are received in the order they were sent.
//!
//! # Layout, and why
//!
//! A naive matcher is two lists scanned from the front (MPICH's ch3 does that). It is O(queue
//! length) per call, which hurts when many receives are preposted from many peers (alltoall with
//! preposted `MPI_Irecv`s) or many eager messages wait unexpected. Like Open MPI's ob1 and UCX's
//! tag matching, this matcher bins queues by communicator (context) and then by source:
//!
//! - posted receives naming a source sit in that source's bin; `MPI_ANY_SOURCE` receives in one
//!   wildcard bin per context. Every posted receive carries a sequence number from one counter,
//!   so an arrival compares the first match of its source's bin with the first match of the
//!   wildcard bin and takes the earlier posted one;
//! - unexpected messages sit in their source's bin, each with an arrival sequence number, so an
//!   `MPI_ANY_SOURCE` receive takes the first match of each bin with the smallest number.
//!
//! Inside a bin the order is posting (or arrival) order, so "first match in the bin" is "earliest
//! (oldest) match from that source", which is why comparing only the bins' first matches is exact.
//!
//! # Cost
//!
//! With `s` = matching bin length scanned until the first tag match (1 when tags agree, which is
//! the common case):
//! - [`Matcher::post`]: O(1) when the context has no unexpected message (a receive posted before
//!   its message arrives); else O(s) for a named source, O(sources with unexpected messages + s)
//!   for `MPI_ANY_SOURCE`. [`Matcher::probe`] and [`Matcher::take`] cost the same.
//! - [`Matcher::arrive`]: O(1) when the context has no posted receive, or one posted receive;
//!   else O(s) over the source's bin plus the wildcard receives posted before that match.
//! - [`Matcher::cancel`]: O(all posted receives + sources ever named by a receive); cancelling
//!   a receive is rare.
//! - [`Matcher::clear_context`]: O(u log u) for the context's `u` unexpected messages.
//!
//! No call allocates in steady state: bins keep their capacity, unexpected bins that empty go to a
//! spare pool (so `MPI_ANY_SOURCE` scans only non-empty bins) and are reused for the next source.
//! Allocation happens only when a context, a source or a queue depth is seen for the first time.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// What a message carries for matching. `source` is the sender's rank in the communicator;
/// `context` identifies the communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub context: u32,
    pub source: u32,
    pub tag: i32,
}

/// What a receive (or probe) accepts. `None` = wildcard (`MPI_ANY_SOURCE` / `MPI_ANY_TAG`).
///
/// Tags are not restricted: negative tags are legal for internal traffic. A wildcard tag matches
/// them too, so internal traffic must use its own context (as MPICH's collective context offset
/// does) to stay invisible to a user's `MPI_ANY_TAG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub context: u32,
    pub source: Option<u32>,
    pub tag: Option<i32>,
}

impl Pattern {
    /// Whether a message with this envelope may be received by this pattern.
    pub fn matches(&self, env: &Envelope) -> bool {
        self.context == env.context
            && (self.source.is_none() || self.source == Some(env.source))
            && accepts_tag(self.tag, env.tag)
    }
}

/// The tag half of [`Pattern::matches`], for bins where context and source already agree.
fn accepts_tag(pattern: Option<i32>, tag: i32) -> bool {
    pattern.is_none() || pattern == Some(tag)
}

/// Identifies a posted receive (the engine's request id).
pub type RecvId = u32;

/// Contexts a message may arrive on: `0..MAX_CONTEXTS`. The communicator layer hands out fewer
/// (its pool is checked against this at compile time); a peer naming one past it is refused
/// instead of growing the context table to its number.
pub const MAX_CONTEXTS: u32 = 1 << 14;

/// What became of an arriving message ([`Matcher::arrive_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The earliest posted receive that matches takes it: deliver it there.
    Matched(RecvId),
    /// No receive matches: it waits as unexpected.
    Queued,
    /// Its context is past [`MAX_CONTEXTS`]: no communicator can receive it; it was dropped.
    Refused,
}

/// A queued receive. Context and source are implied by the bin it sits in.
#[derive(Clone, Copy, Debug)]
struct PostedRecv {
    /// Posting order across all bins (the matcher's one counter).
    seq: u64,
    id: RecvId,
    tag: Option<i32>,
}

/// A queued unexpected message.
#[derive(Debug)]
struct UnexpectedMsg<M> {
    /// Arrival order across all bins (the matcher's one counter).
    seq: u64,
    env: Envelope,
    msg: M,
}

type UnexpectedBin<M> = VecDeque<UnexpectedMsg<M>>;

/// Both queues of one context (communicator).
#[derive(Debug)]
struct ContextQueues<M> {
    /// Receives that name a source, by source. Bins stay when empty: an arrival only looks its
    /// own source up, and keeping the bin keeps its capacity for the next receive.
    posted_from: DenseMap<VecDeque<PostedRecv>>,
    /// `MPI_ANY_SOURCE` receives, in posting order.
    posted_any_source: VecDeque<PostedRecv>,
    posted_len: usize,
    /// Unexpected messages by source; only non-empty bins, so `MPI_ANY_SOURCE` scans no more
    /// bins than there are senders with waiting messages.
    unexpected_from: IntMap<u32, UnexpectedBin<M>>,
    unexpected_len: usize,
}

impl<M> ContextQueues<M> {
    fn new() -> Self {
        Self {
            posted_from: DenseMap::default(),
            posted_any_source: VecDeque::new(),
            posted_len: 0,
            unexpected_from: IntMap::default(),
            unexpected_len: 0,
        }
    }

    /// Removes the earliest-posted receive that accepts `env` (of this context) and returns its id.
    fn take_posted(&mut self, env: &Envelope) -> Option<RecvId> {
        let mut bin = self.posted_from.get_mut(env.source);
        // The common case, receives posted in the order their messages come: the first receive
        // of the source's bin matches and no wildcard receive is posted.
        if self.posted_any_source.is_empty() {
            if let Some(bin) = bin.as_deref_mut() {
                if bin.front().is_some_and(|r| accepts_tag(r.tag, env.tag)) {
                    self.posted_len -= 1;
                    return bin.pop_front().map(|r| r.id);
                }
            }
        }
        let named = bin.as_deref().and_then(|bin| {
            let pos = bin.iter().position(|r| accepts_tag(r.tag, env.tag))?;
            Some((pos, bin[pos].seq))
        });
        // Only wildcard receives posted before the named match can win, so stop there.
        let bound = named.map_or(u64::MAX, |(_, seq)| seq);
        let wildcard =
            self.posted_any_source.iter().take_while(|r| r.seq < bound).position(|r| accepts_tag(r.tag, env.tag));
        // The match is nearly always the first in its bin: pop it without VecDeque::remove's
        // general shuffle.
        let take =
            |bin: &mut VecDeque<PostedRecv>, pos: usize| if pos == 0 { bin.pop_front() } else { bin.remove(pos) };
        let recv = match (wildcard, named) {
            (Some(pos), _) => take(&mut self.posted_any_source, pos),
            (None, Some((pos, _))) => bin.as_mut().and_then(|bin| take(bin, pos)),
            (None, None) => None,
        }?;
        self.posted_len -= 1;
        Some(recv.id)
    }

    /// The oldest unexpected message matching `pattern` (of this context), as (source, position).
    fn find_unexpected(&self, pattern: &Pattern) -> Option<(u32, usize)> {
        if let Some(source) = pattern.source {
            let bin = self.unexpected_from.get(&source)?;
            let pos = bin.iter().position(|u| accepts_tag(pattern.tag, u.env.tag))?;
            return Some((source, pos));
        }
        // Each bin is in arrival order, so the oldest match overall is the oldest of the bins'
        // first matches; a bin's scan stops at messages newer than the best found so far.
        let mut best: Option<(u64, u32, usize)> = None;
        for (&source, bin) in &self.unexpected_from {
            let bound = best.map_or(u64::MAX, |(seq, _, _)| seq);
            let pos = bin.iter().take_while(|u| u.seq < bound).position(|u| accepts_tag(pattern.tag, u.env.tag));
            if let Some(pos) = pos {
                best = Some((bin[pos].seq, source, pos));
            }
        }
        best.map(|(_, source, pos)| (source, pos))
    }

    /// Removes a message found by [`Self::find_unexpected`]; an emptied bin goes to `spare`.
    fn remove_unexpected(&mut self, source: u32, pos: usize, spare: &mut Vec<UnexpectedBin<M>>) -> UnexpectedMsg<M> {
        let bin = self.unexpected_from.get_mut(&source).expect("bin of a found message");
        let found = bin.remove(pos).expect("position of a found message");
        if bin.is_empty() {
            spare.extend(self.unexpected_from.remove(&source));
        }
        self.unexpected_len -= 1;
        found
    }
}

/// The posted-receive queue and the unexpected-message queue of one process, for all its
/// communicators. `M` is what an unexpected message carries (eager data, a rendezvous handle...).
#[derive(Debug)]
pub struct Matcher<M> {
    contexts: DenseMap<ContextQueues<M>>,
    /// Emptied unexpected bins, kept for their capacity (see the module's "no allocation").
    spare_bins: Vec<UnexpectedBin<M>>,
    /// Source of posting and arrival order. Never wraps: 2^64 events at 10^9 a second take
    /// over 500 years.
    next_seq: u64,
    posted_len: usize,
    unexpected_len: usize,
}

impl<M> Default for Matcher<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> Matcher<M> {
    pub fn new() -> Self {
        Self { contexts: DenseMap::default(), spare_bins: Vec::new(), next_seq: 0, posted_len: 0, unexpected_len: 0 }
    }

    fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// A receive is posted: if an unexpected message matches (the OLDEST matching one), removes
    /// and returns it; else queues the receive.
    pub fn post(&mut self, pattern: Pattern, id: RecvId) -> Option<(Envelope, M)> {
        if self.unexpected_len > 0 {
            if let Some(found) = self.take(&pattern) {
                return Some(found);
            }
        }
        let recv = PostedRecv { seq: self.next_seq(), id, tag: pattern.tag };
        let queues = self.contexts.get_or_insert_with(pattern.context, ContextQueues::new);
        match pattern.source {
            Some(source) => queues.posted_from.get_or_insert_with(source, VecDeque::new).push_back(recv),
            None => queues.posted_any_source.push_back(recv),
        }
        queues.posted_len += 1;
        self.posted_len += 1;
        None
    }

    /// A message arrives: if a posted receive matches (the EARLIEST posted that matches), removes
    /// it and returns its id with the message, for the caller to deliver; else queues the message
    /// as unexpected and returns `None`.
    ///
    /// Call this in the order one sender's messages arrive: that order is the non-overtaking order.
    #[cfg(test)]
    pub fn arrive(&mut self, env: Envelope, msg: M) -> Option<(RecvId, M)> {
        let mut msg = Some(msg);
        match self.arrive_with(env, || msg.take().expect("taken once")) {
            Arrival::Matched(id) => Some((id, msg.take().expect("not taken when matched"))),
            Arrival::Queued | Arrival::Refused => None,
        }
    }

    /// [`Matcher::arrive`] for a message that is only built (copied out of the channel) when
    /// no posted receive matches, so a matched message is delivered without an allocation.
    pub fn arrive_with(&mut self, env: Envelope, make: impl FnOnce() -> M) -> Arrival {
        let seq = self.next_seq();
        let Some(queues) = self.contexts.get_or_insert_below(env.context, MAX_CONTEXTS, ContextQueues::new) else {
            return Arrival::Refused;
        };
        if queues.posted_len > 0 {
            if let Some(id) = queues.take_posted(&env) {
                self.posted_len -= 1;
                return Arrival::Matched(id);
            }
        }
        let spare = &mut self.spare_bins;
        let bin = queues.unexpected_from.entry(env.source).or_insert_with(|| spare.pop().unwrap_or_default());
        bin.push_back(UnexpectedMsg { seq, env, msg: make() });
        queues.unexpected_len += 1;
        self.unexpected_len += 1;
        Arrival::Queued
    }

    /// Probe (`MPI_Iprobe`): the oldest unexpected message matching, without removing it.
    pub fn probe(&self, pattern: &Pattern) -> Option<(&Envelope, &M)> {
        let queues = self.contexts.get(pattern.context)?;
        let (source, pos) = queues.find_unexpected(pattern)?;
        let found = &queues.unexpected_from[&source][pos];
        Some((&found.env, &found.msg))
    }

    /// Matched probe (`MPI_Mprobe`): removes and returns the oldest matching unexpected message.
    pub fn take(&mut self, pattern: &Pattern) -> Option<(Envelope, M)> {
        let queues = self.contexts.get_mut(pattern.context)?;
        if queues.unexpected_len == 0 {
            return None;
        }
        let (source, pos) = queues.find_unexpected(pattern)?;
        let found = queues.remove_unexpected(source, pos, &mut self.spare_bins);
        self.unexpected_len -= 1;
        Some((found.env, found.msg))
    }

    /// Cancels a posted receive that has not matched yet: true if it was still queued (now
    /// removed). Ids are meant to be unique among posted receives; if one is not, the earliest
    /// posted receive with that id is cancelled.
    pub fn cancel(&mut self, id: RecvId) -> bool {
        // (seq, context, source bin or None for the wildcard bin, position)
        let mut found: Option<(u64, u32, Option<u32>, usize)> = None;
        let mut consider = |bin: &VecDeque<PostedRecv>, context: u32, source: Option<u32>| {
            if let Some(pos) = bin.iter().position(|r| r.id == id) {
                let seq = bin[pos].seq;
                if !matches!(found, Some((best, ..)) if best < seq) {
                    found = Some((seq, context, source, pos));
                }
            }
        };
        for (context, queues) in self.contexts.iter() {
            for (source, bin) in queues.posted_from.iter() {
                consider(bin, context, Some(source));
            }
            consider(&queues.posted_any_source, context, None);
        }
        let Some((_, context, source, pos)) = found else {
            return false;
        };
        let queues = self.contexts.get_mut(context).expect("context of a found receive");
        let bin = match source {
            Some(source) => queues.posted_from.get_mut(source).expect("bin of a found receive"),
            None => &mut queues.posted_any_source,
        };
        bin.remove(pos);
        queues.posted_len -= 1;
        self.posted_len -= 1;
        true
    }

    /// Mutable access to unexpected messages (the engine appends data to a partially arrived
    /// message in place). Order: arrival order among one sender's messages in one context;
    /// unspecified across senders and contexts.
    pub fn unexpected_mut(&mut self) -> impl Iterator<Item = (&Envelope, &mut M)> {
        self.contexts
            .values_mut()
            .flat_map(|queues| queues.unexpected_from.values_mut())
            .flat_map(|bin| bin.iter_mut())
            .map(|u| (&u.env, &mut u.msg))
    }

    /// Number of posted receives waiting for a message.
    pub fn posted_len(&self) -> usize {
        self.posted_len
    }

    /// Number of posted receives waiting in `context`.
    #[inline]
    pub fn posted_in(&self, context: u32) -> usize {
        self.contexts.get(context).map_or(0, |queues| queues.posted_len)
    }

    /// Number of unexpected messages waiting for a receive.
    pub fn unexpected_len(&self) -> usize {
        self.unexpected_len
    }

    /// Asserts the layout's invariants; the property tests call it after every step.
    #[cfg(test)]
    fn check_invariants(&self) {
        let (mut posted, mut unexpected) = (0, 0);
        for (context, queues) in self.contexts.iter() {
            let mut posted_here = queues.posted_any_source.len();
            let wildcard = queues.posted_any_source.iter();
            for r in queues.posted_from.values().flatten().chain(wildcard) {
                assert!(r.seq < self.next_seq);
            }
            for bin in queues.posted_from.values().chain([&queues.posted_any_source]) {
                assert!(bin.iter().zip(bin.iter().skip(1)).all(|(a, b)| a.seq < b.seq));
            }
            posted_here += queues.posted_from.values().map(VecDeque::len).sum::<usize>();
            assert_eq!(posted_here, queues.posted_len);
            let mut unexpected_here = 0;
            for (&source, bin) in &queues.unexpected_from {
                assert!(!bin.is_empty(), "empty unexpected bins go to the spare pool");
                assert!(bin.iter().all(|u| u.env.context == context && u.env.source == source));
                assert!(bin.iter().zip(bin.iter().skip(1)).all(|(a, b)| a.seq < b.seq));
                assert!(bin.iter().all(|u| u.seq < self.next_seq));
                unexpected_here += bin.len();
            }
            assert_eq!(unexpected_here, queues.unexpected_len);
            posted += posted_here;
            unexpected += unexpected_here;
        }
        assert_eq!(posted, self.posted_len);
        assert_eq!(unexpected, self.unexpected_len);
        assert!(self.spare_bins.iter().all(VecDeque::is_empty));
    }

    /// Empties a context (its communicator was revoked): the posted receives' ids in posting
    /// order (their requests are the caller's to fail), then as [`Matcher::clear_context`].
    pub fn drain_context(&mut self, context: u32) -> (Vec<RecvId>, Vec<(Envelope, M)>) {
        self.drain_context_keeping(context, |_| false)
    }

    /// [`Matcher::drain_context`], but the posted receives for a tag `keep` accepts (not
    /// MPI_ANY_TAG), and the unexpected messages of such tags, stay, in their order.
    pub fn drain_context_keeping(
        &mut self,
        context: u32,
        keep: impl Fn(i32) -> bool,
    ) -> (Vec<RecvId>, Vec<(Envelope, M)>) {
        let mut posted: Vec<(Option<u32>, PostedRecv)> = match self.contexts.get(context) {
            Some(q) => q
                .posted_from
                .iter()
                .flat_map(|(source, bin)| bin.iter().map(move |&r| (Some(source), r)))
                .chain(q.posted_any_source.iter().map(|&r| (None, r)))
                .collect(),
            None => Vec::new(),
        };
        posted.sort_unstable_by_key(|(_, r)| r.seq);
        let kept = |tag: Option<i32>| tag.is_some_and(&keep);
        let mut dropped = Vec::new();
        let unexpected = self.clear_context(context);
        for (source, r) in posted {
            match kept(r.tag) {
                // Nothing unexpected is queued now: the receive goes back unmatched.
                true => {
                    let taken = self.post(Pattern { context, source, tag: r.tag }, r.id);
                    debug_assert!(taken.is_none());
                }
                false => dropped.push(r.id),
            }
        }
        let mut gone = Vec::new();
        for (env, msg) in unexpected {
            match kept(Some(env.tag)) {
                // It matched no kept receive before, and matches none now.
                true => {
                    let arrival = self.arrive_with(env, || msg);
                    debug_assert!(matches!(arrival, Arrival::Queued));
                }
                false => gone.push((env, msg)),
            }
        }
        (dropped, gone)
    }

    /// Drops everything of a context (communicator freed): the posted receives are forgotten
    /// (their requests are the caller's), the unexpected messages are returned in arrival order.
    pub fn clear_context(&mut self, context: u32) -> Vec<(Envelope, M)> {
        let Some(mut queues) = self.contexts.remove(context) else {
            return Vec::new();
        };
        self.posted_len -= queues.posted_len;
        self.unexpected_len -= queues.unexpected_len;
        let mut removed = Vec::with_capacity(queues.unexpected_len);
        for (_, mut bin) in queues.unexpected_from.drain() {
            removed.extend(bin.drain(..));
            self.spare_bins.push(bin);
        }
        removed.sort_unstable_by_key(|u| u.seq);
        removed.into_iter().map(|u| (u.env, u.msg)).collect()
    }
}

/// A hash map keyed by context ids and ranks.
type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// A map from small dense integers (context ids, ranks: both handed out from 0 upwards) to
/// values: a vector lookup instead of a hash on the message path.
#[derive(Debug)]
struct DenseMap<V> {
    slots: Vec<Option<V>>,
}

impl<V> Default for DenseMap<V> {
    fn default() -> Self {
        DenseMap { slots: Vec::new() }
    }
}

impl<V> DenseMap<V> {
    #[inline]
    fn get(&self, k: u32) -> Option<&V> {
        self.slots.get(k as usize)?.as_ref()
    }

    #[inline]
    fn get_mut(&mut self, k: u32) -> Option<&mut V> {
        self.slots.get_mut(k as usize)?.as_mut()
    }

    #[inline]
    fn get_or_insert_with(&mut self, k: u32, f: impl FnOnce() -> V) -> &mut V {
        let i = k as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i].get_or_insert_with(f)
    }

    /// [`DenseMap::get_or_insert_with`] for a key below `limit` only (`None` above: the table
    /// never grows to a key a peer chose).
    #[inline]
    fn get_or_insert_below(&mut self, k: u32, limit: u32, f: impl FnOnce() -> V) -> Option<&mut V> {
        if k as usize >= self.slots.len() && k >= limit {
            return None;
        }
        Some(self.get_or_insert_with(k, f))
    }

    fn remove(&mut self, k: u32) -> Option<V> {
        self.slots.get_mut(k as usize)?.take()
    }

    fn iter(&self) -> impl Iterator<Item = (u32, &V)> {
        self.slots.iter().enumerate().filter_map(|(k, v)| Some((k as u32, v.as_ref()?)))
    }

    #[cfg(test)]
    fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten()
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots.iter_mut().flatten()
    }
}

/// FxHash's multiply-rotate (as in rustc): a few cycles per key instead of SipHash's tens.
/// SipHash defends against keys chosen by an attacker; ours are context ids and ranks handed
/// out by our own runtime, and the lookup sits on the small-message path.
#[derive(Default, Clone, Copy)]
struct IntHasher(u64);

impl IntHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.add(u64::from(b)));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(context: u32, source: u32, tag: i32) -> Envelope {
        Envelope { context, source, tag }
    }

    fn pat(context: u32, source: Option<u32>, tag: Option<i32>) -> Pattern {
        Pattern { context, source, tag }
    }

    #[test]
    fn pattern_matches_exact_and_wildcards() {
        let e = env(1, 2, 3);
        assert!(pat(1, Some(2), Some(3)).matches(&e));
        assert!(pat(1, None, Some(3)).matches(&e));
        assert!(pat(1, Some(2), None).matches(&e));
        assert!(pat(1, None, None).matches(&e));
        assert!(!pat(0, None, None).matches(&e), "context is never a wildcard");
        assert!(!pat(1, Some(3), None).matches(&e));
        assert!(!pat(1, None, Some(4)).matches(&e));
        assert!(pat(1, None, None).matches(&env(1, 0, -5)), "negative (internal) tags are legal");
        assert!(pat(1, Some(0), Some(-5)).matches(&env(1, 0, -5)));
    }

    #[test]
    fn receive_posted_first_is_matched_by_arrival() {
        let mut m = Matcher::new();
        assert_eq!(m.post(pat(0, Some(1), Some(7)), 10), None);
        assert_eq!(m.posted_len(), 1);
        assert_eq!(m.arrive(env(0, 1, 8), "other tag"), None);
        assert_eq!(m.arrive(env(0, 1, 7), "hit"), Some((10, "hit")));
        assert_eq!((m.posted_len(), m.unexpected_len()), (0, 1));
    }

    #[test]
    fn message_arrived_first_is_matched_by_post() {
        let mut m = Matcher::new();
        assert_eq!(m.arrive(env(0, 1, 7), "a"), None);
        assert_eq!(m.post(pat(0, Some(1), Some(7)), 10), Some((env(0, 1, 7), "a")));
        assert_eq!((m.posted_len(), m.unexpected_len()), (0, 0));
    }

    #[test]
    fn context_must_match_exactly() {
        let mut m = Matcher::new();
        m.post(pat(1, None, None), 10);
        assert_eq!(m.arrive(env(2, 0, 0), "ctx 2"), None);
        assert_eq!(m.post(pat(3, None, None), 11), None);
        assert_eq!(m.arrive(env(1, 0, 0), "ctx 1"), Some((10, "ctx 1")));
        assert_eq!(m.post(pat(2, None, None), 12), Some((env(2, 0, 0), "ctx 2")));
    }

    #[test]
    fn wildcards_on_both_sides() {
        let mut m = Matcher::new();
        m.post(pat(0, None, Some(5)), 1);
        m.post(pat(0, Some(3), None), 2);
        m.post(pat(0, None, None), 3);
        assert_eq!(m.arrive(env(0, 9, 5), 'a'), Some((1, 'a')), "any source, tag 5");
        assert_eq!(m.arrive(env(0, 3, 6), 'b'), Some((2, 'b')), "source 3, any tag");
        assert_eq!(m.arrive(env(0, 4, -1), 'c'), Some((3, 'c')), "any source, any tag");
        m.arrive(env(0, 2, 1), 'd');
        m.arrive(env(0, 3, 2), 'e');
        assert_eq!(m.post(pat(0, None, Some(2)), 4), Some((env(0, 3, 2), 'e')));
        assert_eq!(m.post(pat(0, Some(2), None), 5), Some((env(0, 2, 1), 'd')));
    }

    #[test]
    fn post_takes_oldest_matching_unexpected() {
        let mut m = Matcher::new();
        m.arrive(env(0, 1, 7), 1);
        m.arrive(env(0, 2, 7), 2);
        m.arrive(env(0, 1, 8), 3);
        m.arrive(env(0, 1, 7), 4);
        // FIFO among matches from one sender: non-overtaking.
        assert_eq!(m.post(pat(0, Some(1), Some(7)), 0), Some((env(0, 1, 7), 1)));
        // A tag-specific receive passes over older messages with other tags.
        assert_eq!(m.post(pat(0, Some(1), Some(7)), 0), Some((env(0, 1, 7), 4)));
        // Any source takes the oldest across senders.
        assert_eq!(m.post(pat(0, None, None), 0), Some((env(0, 2, 7), 2)));
        assert_eq!(m.post(pat(0, None, None), 0), Some((env(0, 1, 8), 3)));
        assert_eq!(m.unexpected_len(), 0);
    }

    #[test]
    fn arrival_matches_earliest_posted_receive() {
        let mut m = Matcher::new();
        m.post(pat(0, None, None), 1);
        m.post(pat(0, Some(4), Some(2)), 2);
        m.post(pat(0, Some(4), None), 3);
        m.post(pat(0, None, Some(2)), 4);
        // The wildcard receive was posted before the named ones: it wins.
        assert_eq!(m.arrive(env(0, 4, 2), 'a'), Some((1, 'a')));
        // Then the named receive posted before the later wildcard one.
        assert_eq!(m.arrive(env(0, 4, 2), 'b'), Some((2, 'b')));
        assert_eq!(m.arrive(env(0, 4, 2), 'c'), Some((3, 'c')));
        assert_eq!(m.arrive(env(0, 4, 2), 'd'), Some((4, 'd')));
        assert_eq!(m.arrive(env(0, 4, 2), 'e'), None);
    }

    #[test]
    fn cancel_removes_only_a_queued_receive() {
        let mut m = Matcher::new();
        m.post(pat(0, Some(1), None), 1);
        m.post(pat(0, None, None), 2);
        m.post(pat(0, Some(1), None), 3);
        assert!(m.cancel(1));
        assert!(!m.cancel(1), "already cancelled");
        assert!(!m.cancel(99), "never posted");
        assert!(m.cancel(2));
        assert_eq!(m.posted_len(), 1);
        assert_eq!(m.arrive(env(0, 1, 0), 'a'), Some((3, 'a')));
        assert!(!m.cancel(3), "already matched");
        assert_eq!(m.arrive(env(0, 1, 0), 'b'), None, "nothing left to match");
    }

    #[test]
    fn probe_does_not_remove_and_take_does() {
        let mut m = Matcher::new();
        assert_eq!(m.probe(&pat(0, None, None)), None);
        m.arrive(env(0, 1, 7), 'a');
        m.arrive(env(0, 2, 7), 'b');
        assert_eq!(m.probe(&pat(0, None, Some(7))), Some((&env(0, 1, 7), &'a')));
        assert_eq!(m.probe(&pat(0, None, Some(7))), Some((&env(0, 1, 7), &'a')));
        assert_eq!(m.probe(&pat(0, Some(2), None)), Some((&env(0, 2, 7), &'b')));
        assert_eq!(m.probe(&pat(1, None, None)), None);
        assert_eq!(m.unexpected_len(), 2);
        assert_eq!(m.take(&pat(0, None, Some(7))), Some((env(0, 1, 7), 'a')));
        assert_eq!(m.probe(&pat(0, None, None)), Some((&env(0, 2, 7), &'b')));
        assert_eq!(m.take(&pat(0, Some(1), None)), None);
        assert_eq!(m.take(&pat(0, None, None)), Some((env(0, 2, 7), 'b')));
        assert_eq!(m.unexpected_len(), 0);
        // A take never queues a receive.
        assert_eq!(m.posted_len(), 0);
    }

    #[test]
    fn clear_context_returns_its_unexpected_in_arrival_order() {
        let mut m = Matcher::new();
        m.arrive(env(1, 2, 0), 'a');
        m.arrive(env(2, 2, 0), 'x');
        m.arrive(env(1, 0, 0), 'b');
        m.arrive(env(1, 2, 1), 'c');
        m.post(pat(1, Some(5), None), 1);
        m.post(pat(1, None, Some(9)), 2);
        m.post(pat(2, Some(5), None), 3);
        let removed = m.clear_context(1);
        assert_eq!(removed, vec![(env(1, 2, 0), 'a'), (env(1, 0, 0), 'b'), (env(1, 2, 1), 'c')]);
        assert_eq!((m.posted_len(), m.unexpected_len()), (1, 1));
        assert!(!m.cancel(1), "posted receives of the context are gone");
        assert_eq!(m.arrive(env(1, 5, 0), 'd'), None);
        assert_eq!(m.arrive(env(2, 5, 0), 'e'), Some((3, 'e')));
        assert_eq!(m.clear_context(7), vec![]);
    }

    #[test]
    fn drain_context_returns_its_posted_receives_in_posting_order() {
        let mut m = Matcher::new();
        m.post(pat(1, Some(5), None), 1);
        m.post(pat(1, None, Some(9)), 2);
        m.post(pat(2, Some(5), None), 3);
        m.post(pat(1, Some(4), Some(0)), 4);
        m.arrive(env(1, 7, 0), 'a');
        let (posted, unexpected) = m.drain_context(1);
        assert_eq!((posted, unexpected), (vec![1, 2, 4], vec![(env(1, 7, 0), 'a')]));
        assert_eq!((m.posted_len(), m.unexpected_len()), (1, 0));
        assert_eq!(m.arrive(env(2, 5, 0), 'e'), Some((3, 'e')));
        assert_eq!(m.drain_context(7), (vec![], vec![]));
    }

    #[test]
    fn drain_context_keeping_leaves_the_kept_tags_in_order() {
        let mut m = Matcher::new();
        m.post(pat(1, Some(5), Some(8)), 1);
        m.post(pat(1, Some(5), Some(3)), 2);
        m.post(pat(1, None, Some(8)), 3);
        m.post(pat(1, Some(6), None), 4);
        m.arrive(env(1, 7, 10), 'a');
        m.arrive(env(1, 7, 3), 'b');
        m.arrive(env(1, 7, 10), 'c');
        let (posted, unexpected) = m.drain_context_keeping(1, |t| t >= 8);
        assert_eq!((posted, unexpected), (vec![2, 4], vec![(env(1, 7, 3), 'b')]));
        assert_eq!((m.posted_len(), m.unexpected_len()), (2, 2));
        assert_eq!(m.arrive(env(1, 5, 8), 'd'), Some((1, 'd')), "the kept receives in posting order");
        assert_eq!(m.arrive(env(1, 9, 8), 'e'), Some((3, 'e')));
        assert_eq!(m.take(&pat(1, Some(7), Some(10))), Some((env(1, 7, 10), 'a')), "the kept messages in order");
        assert_eq!(m.take(&pat(1, Some(7), Some(10))), Some((env(1, 7, 10), 'c')));
    }

    #[test]
    fn unexpected_mut_edits_in_place() {
        let mut m = Matcher::new();
        m.arrive(env(0, 1, 0), vec![1u8]);
        m.arrive(env(0, 2, 0), vec![2u8]);
        for (e, data) in m.unexpected_mut() {
            if e.source == 1 {
                data.push(10);
            }
        }
        assert_eq!(m.post(pat(0, Some(1), None), 0), Some((env(0, 1, 0), vec![1, 10])));
        assert_eq!(m.unexpected_mut().count(), 1);
    }

    #[test]
    fn emptied_bins_are_reused() {
        let mut m = Matcher::new();
        for round in 0..100 {
            let source = round % 7;
            m.arrive(env(0, source, 0), round);
            assert_eq!(m.post(pat(0, None, None), round).map(|(_, msg)| msg), Some(round));
            m.post(pat(0, Some(source), None), round);
            assert_eq!(m.arrive(env(0, source, 0), round), Some((round, round)));
        }
        assert_eq!(m.spare_bins.len(), 1, "one bin serves every source in turn");
        m.check_invariants();
    }

    /// The reference: two lists in order, scanned from the front. Obviously right, and slow.
    #[derive(Default)]
    struct Model {
        posted: Vec<(Pattern, RecvId)>,
        unexpected: Vec<(Envelope, u64)>,
    }

    impl Model {
        fn post(&mut self, p: Pattern, id: RecvId) -> Option<(Envelope, u64)> {
            let found = self.take(&p);
            if found.is_none() {
                self.posted.push((p, id));
            }
            found
        }
        fn arrive(&mut self, e: Envelope, msg: u64) -> Option<(RecvId, u64)> {
            match self.posted.iter().position(|(p, _)| p.matches(&e)) {
                Some(i) => Some((self.posted.remove(i).1, msg)),
                None => {
                    self.unexpected.push((e, msg));
                    None
                }
            }
        }
        fn probe(&self, p: &Pattern) -> Option<(Envelope, u64)> {
            self.unexpected.iter().find(|(e, _)| p.matches(e)).copied()
        }
        fn take(&mut self, p: &Pattern) -> Option<(Envelope, u64)> {
            let i = self.unexpected.iter().position(|(e, _)| p.matches(e))?;
            Some(self.unexpected.remove(i))
        }
        fn cancel(&mut self, id: RecvId) -> bool {
            let found = self.posted.iter().position(|&(_, posted)| posted == id);
            found.map(|i| self.posted.remove(i)).is_some()
        }
        fn clear_context(&mut self, context: u32) -> Vec<(Envelope, u64)> {
            self.posted.retain(|(p, _)| p.context != context);
            let (removed, kept) = self.unexpected.iter().partition(|(e, _)| e.context == context);
            self.unexpected = kept;
            removed
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum Op {
        Post(Pattern),
        Arrive(Envelope),
        Probe(Pattern),
        Take(Pattern),
        /// Cancels a receive by id.
        Cancel(RecvId),
        /// Edits, through `unexpected_mut`, every unexpected message the pattern matches.
        Touch(Pattern),
        Clear(u32),
    }

    // Few contexts, sources and tags, so that matches, near misses and wildcards are frequent.
    const CONTEXTS: u32 = 3;
    const SOURCES: u32 = 4;
    const TAGS: std::ops::Range<i32> = -1..3;

    fn envelope() -> impl Strategy<Value = Envelope> {
        (0..CONTEXTS, 0..SOURCES, TAGS).prop_map(|(c, s, t)| env(c, s, t))
    }

    fn pattern() -> impl Strategy<Value = Pattern> {
        let source = prop::option::weighted(0.7, 0..SOURCES);
        let tag = prop::option::weighted(0.7, TAGS);
        (0..CONTEXTS, source, tag).prop_map(|(c, s, t)| pat(c, s, t))
    }

    /// `clear_weight` 0 lets queues grow deep; a small one exercises freeing communicators.
    /// Receive ids are the step number modulo `ids` (see [`run`]).
    fn ops(len: std::ops::Range<usize>, ids: RecvId, clear_weight: u32) -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            8 => pattern().prop_map(Op::Post),
            8 => envelope().prop_map(Op::Arrive),
            2 => pattern().prop_map(Op::Probe),
            2 => pattern().prop_map(Op::Take),
            2 => (0..ids).prop_map(Op::Cancel),
            1 => pattern().prop_map(Op::Touch),
            clear_weight => (0..CONTEXTS).prop_map(Op::Clear),
        ];
        prop::collection::vec(op, len)
    }

    /// Everything unexpected, grouped by (context, source), each group in the order given.
    fn grouped(mut all: Vec<(Envelope, u64)>) -> Vec<(Envelope, u64)> {
        all.sort_by_key(|(e, _)| (e.context, e.source)); // stable: keeps each sender's order
        all
    }

    /// Drives the matcher and the model with the same steps; every answer must be identical.
    /// A receive's id is its step modulo `ids`: with few ids, several queued receives share one
    /// and `cancel` must pick the earliest posted, as the model does.
    fn run(ops: &[Op], ids: RecvId) -> Result<(), TestCaseError> {
        let mut m = Matcher::<u64>::new();
        let mut model = Model::default();
        for (step, &op) in ops.iter().enumerate() {
            // The step number is the message, so every message is distinct.
            let tick = step as u32;
            match op {
                Op::Post(p) => {
                    let id = tick % ids;
                    prop_assert_eq!(m.post(p, id), model.post(p, id), "{}", step)
                }
                Op::Arrive(e) => {
                    let msg = u64::from(tick);
                    prop_assert_eq!(m.arrive(e, msg), model.arrive(e, msg), "{}", step)
                }
                Op::Probe(p) => {
                    let got = m.probe(&p).map(|(e, msg)| (*e, *msg));
                    prop_assert_eq!(got, model.probe(&p), "{}", step)
                }
                Op::Take(p) => prop_assert_eq!(m.take(&p), model.take(&p), "{}", step),
                Op::Cancel(id) => prop_assert_eq!(m.cancel(id), model.cancel(id), "{}", step),
                Op::Touch(p) => {
                    let edit = |e: &Envelope, msg: &mut u64| {
                        if p.matches(e) {
                            *msg += 1 << 32;
                        }
                    };
                    m.unexpected_mut().for_each(|(e, msg)| edit(e, msg));
                    model.unexpected.iter_mut().for_each(|(e, msg)| edit(e, msg));
                }
                Op::Clear(c) => {
                    prop_assert_eq!(m.clear_context(c), model.clear_context(c), "{}", step)
                }
            }
            prop_assert_eq!(m.posted_len(), model.posted.len());
            prop_assert_eq!(m.unexpected_len(), model.unexpected.len());
            let seen: Vec<_> = m.unexpected_mut().map(|(e, msg)| (*e, *msg)).collect();
            prop_assert_eq!(grouped(seen), grouped(model.unexpected.clone()));
            m.check_invariants();
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        #[test]
        fn matches_model(ops in ops(0..120, 120, 1)) {
            run(&ops, 120)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Long runs without frees: deep queues, many bins, long wildcard scans.
        #[test]
        fn matches_model_deep_queues(ops in ops(300..1000, 40, 0)) {
            run(&ops, 40)?;
        }
    }
}

//! Context ids: how the members of a new communicator agree on one that none of them uses, safely
//! when several threads of a process create communicators at once (MPI_THREAD_MULTIPLE), and how
//! a freed communicator's id comes back.
//!
//! The algorithm is MPICH's mask algorithm (`MPIR_Get_contextid_sparse_group` in MPICH's
//! `src/mpi/comm/contextid.c`), with Lamport-clock tickets for fairness. Each process keeps a bit
//! mask of its free id slots, in two segments: a small *eager* one and the *main* one. Creating a
//! communicator is a sequence of *rounds*, each an allreduce over the new communicator's members
//! of what each contributes:
//!
//! - Round 1 (arrival) offers the eager segment (AND) and the process's clock (MAX). A process
//!   lends its eager segment to one creation at a time; any other creation contributes an empty
//!   segment. The round ends only once every member has called the creation, which is what the
//!   later rounds rely on. The maximum of the clocks is the creation's *ticket*; each member then
//!   moves its clock past the ticket, so a creation that starts anywhere after this round gets a
//!   higher ticket.
//! - Later rounds offer the main segment (AND), plus a word saying whether the member contributed
//!   its real mask. A process lends it to one creation at a time, and only to the creation with
//!   the lowest key (ticket, parent context, tag) among those past their arrival round there.
//! - A round whose AND is non-empty had every member's real segment: each member takes the lowest
//!   common bit out of its own mask (it still holds the loan, so no other creation in that
//!   process can have taken that bit since). All members see the same AND, so they all choose
//!   the same id, or all retry, or (real main masks everywhere, nothing in common) all fail.
//!
//! Why it is correct: an id is handed out only by a round that held every member's loan of the
//! segment holding that id, and each member clears the bit under that loan; a bit is set again
//! only when the process frees the communicator that held it. So no two live communicators
//! sharing a process share an id.
//!
//! Why it cannot deadlock or livelock: no round waits for a loan (without one, a creation
//! contributes an empty segment), so a round waits only for its members to reach it. A round
//! after the first has every member past the arrival round, so every member is in its loop and
//! reaches it: main-segment rounds always complete, and a main loan is never held by a round
//! that waits for a member busy elsewhere (which is why the arrival round must not use it: a
//! member may first have to finish another collective, say a `subset` that needs this very
//! process's mask). Keys are the same in every member of a creation and differ between two
//! creations that share a process (their parent context or tag differs there). Take the creation
//! with the lowest key among those in their main rounds: in each of its members it is the lowest
//! such key, so once the current main loan there (if any) is returned, no other creation can
//! borrow it there; from then on it borrows it in every round, and some round has it in all
//! members at once and succeeds. Then the next lowest goes, and so on. A creation that arrives
//! later gets a higher ticket, so a waiting creation is overtaken only by those that arrived
//! while it did (plain MPICH orders by parent context alone, and a thread creating communicators
//! in a loop from a low-context parent can starve one on a higher-context parent). The eager
//! loan delays nobody: without it, round 1 just goes on to the main rounds.
//!
//! Freeing: dropping the last handle of a communicator *retires* its id. The id is free again
//! once no receive is posted on its contexts any more (MPI lets a program free a communicator
//! with receives still pending; they complete normally and must not match a newer
//! communicator's messages), checked before each round.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

use super::comm::{Communicator, SendMode, Source, TagMatch, FIRST_FREE_CONTEXT};
use crate::coll::schedule::{binomial_children, binomial_parent};
use crate::engine::EngineRef;
use crate::{Error, Result};

/// Communicators (beyond the world and self) that one process can hold at once. Each takes two
/// contexts (point-to-point and collective). MPICH allows 2048. Not a tunable: every process of
/// a job must use the same value.
pub(crate) const SLOTS: usize = 4096;
const WORDS: usize = SLOTS / 64;
const _: () = assert!(
    FIRST_FREE_CONTEXT as usize + 2 * SLOTS <= crate::engine::matching::MAX_CONTEXTS as usize,
    "every context a communicator can have must be one a message may arrive on"
);
/// Words of the eager segment (the first 128 slots; MPICH's default is 64): a creation that
/// finds one of them free in all members takes one round, of 24-byte messages.
const EAGER: Range<usize> = 0..2;
/// Words of the main segment (the rest): a round of them carries 504 bytes and a flag.
const MAIN: Range<usize> = 2..WORDS;

/// The order of concurrent creations: ticket, parent's collective context, and the tag that
/// tells apart creations from one parent (`Communicator::subset`).
type Key = (u64, u32, i32);

/// This process's free context ids and the creations in progress.
pub(crate) struct ContextPool {
    state: Mutex<PoolState>,
}

struct PoolState {
    /// Bit `s` set: slot `s` (contexts `FIRST_FREE_CONTEXT + 2s` and `+ 1`) is free here.
    free: [u64; WORDS],
    /// The eager segment is lent to some creation's arrival round.
    eager_lent: bool,
    /// The main segment is lent to a round of some creation.
    main_lent: bool,
    /// Lamport clock: above the ticket of every creation that arrived here.
    clock: u64,
    /// Creations past their arrival round here, by key (a count, should a program misuse a key).
    waiting: BTreeMap<Key, usize>,
    /// Contexts of dropped communicators, not yet free (receives may still be posted on them).
    retiring: Vec<u32>,
}

/// What a round found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Agreed(u32),
    Retry,
    Exhausted,
}

impl ContextPool {
    pub(crate) fn new() -> ContextPool {
        let state = PoolState {
            free: [u64::MAX; WORDS],
            eager_lent: false,
            main_lent: false,
            clock: 0,
            waiting: BTreeMap::new(),
            retiring: Vec::new(),
        };
        ContextPool { state: Mutex::new(state) }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // The state is updated in single statements that cannot panic half-way.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A communicator with `context` was dropped: its id comes back once nothing is posted on it.
    pub(crate) fn retire(&self, context: u32) {
        self.lock().retiring.push(context);
    }

    /// Makes the slot of `context` free at once (it was agreed but no communicator took it).
    fn release(&self, context: u32) {
        let slot = slot_of(context);
        let mut s = self.lock();
        debug_assert!(s.free[slot / 64] & (1 << (slot % 64)) == 0, "context {context} released twice");
        s.free[slot / 64] |= 1 << (slot % 64);
    }

    /// Frees the retiring contexts on which no receive is posted any more. Locks the engine,
    /// never while holding the pool.
    fn reclaim(&self, engine: &EngineRef) {
        if engine.any_revoked() {
            // A free id that a (late) revoke notice named is never used again
            // (`engine/revoke.rs`): a communicator made with it would be born revoked.
            let mut s = self.lock();
            for slot in 0..SLOTS {
                if s.free[slot / 64] & (1 << (slot % 64)) != 0 && engine.is_revoked(context_of(slot)) {
                    s.free[slot / 64] &= !(1 << (slot % 64));
                }
            }
        }
        let retiring = std::mem::take(&mut self.lock().retiring);
        if retiring.is_empty() {
            return;
        }
        let (done, busy): (Vec<u32>, Vec<u32>) = {
            let mut e = engine.lock();
            let (done, busy): (Vec<u32>, Vec<u32>) =
                retiring.into_iter().partition(|&c| !e.receives_posted_on(c) && !e.receives_posted_on(c + 1));
            for &c in &done {
                e.reopen_active(c);
            }
            (done, busy)
        };
        let mut s = self.lock();
        s.retiring.extend(busy);
        for c in done {
            let slot = slot_of(c);
            s.free[slot / 64] |= 1 << (slot % 64);
        }
    }

    /// Starts a creation from the parent with collective context `parent` and `tag`; the
    /// returned turn contributes to and settles its rounds.
    fn enter(&self, parent: u32, tag: i32) -> Turn<'_> {
        Turn { pool: self, key: (0, parent, tag), round: 0, waiting: false, owns: false }
    }
}

/// One creation in progress in this process. Dropping it (success, error or panic) returns a
/// loan and leaves the waiting list.
struct Turn<'a> {
    pool: &'a ContextPool,
    /// The ticket is known after the arrival round.
    key: Key,
    /// Rounds settled so far: round 0 is the arrival round (eager segment).
    round: usize,
    /// In the pool's waiting list (after the arrival round).
    waiting: bool,
    /// Holds the loan of this round's segment.
    owns: bool,
}

impl Turn<'_> {
    /// The words this round reduces: the eager segment and the clock in the arrival round,
    /// else the main segment and a word that is 1 if the real main mask was contributed. The
    /// last word is combined with MAX in the arrival round, the others with AND.
    fn words(&self) -> usize {
        if self.round == 0 {
            EAGER.len() + 1
        } else {
            MAIN.len() + 1
        }
    }

    /// This round's contribution (see [`Turn::words`]): the real segment if this creation may
    /// borrow it now, else zeros. Frees what retired first.
    fn contribution(&mut self, engine: &EngineRef) -> Vec<u64> {
        self.pool.reclaim(engine);
        self.borrow()
    }

    /// [`Turn::contribution`] without reclaiming retired contexts first.
    fn borrow(&mut self) -> Vec<u64> {
        let mut s = self.pool.lock();
        let mut words = vec![0; self.words()];
        if self.round == 0 {
            if !s.eager_lent {
                s.eager_lent = true;
                self.owns = true;
                words[..EAGER.len()].copy_from_slice(&s.free[EAGER]);
            }
            words[EAGER.len()] = s.clock;
            return words;
        }
        if !s.main_lent && s.waiting.keys().next() == Some(&self.key) {
            s.main_lent = true;
            self.owns = true;
            words[..MAIN.len()].copy_from_slice(&s.free[MAIN]);
            words[MAIN.len()] = 1;
        }
        words
    }

    /// Takes the id the round agreed on (if any), returns the loan, and moves to the next round.
    fn settle(&mut self, agreed: &[u64]) -> Outcome {
        let segment = if self.round == 0 { EAGER } else { MAIN };
        let found = agreed[..segment.len()].iter().enumerate().find(|(_, w)| **w != 0);
        let outcome = match found {
            Some((i, w)) => Outcome::Agreed(((segment.start + i) * 64) as u32 + w.trailing_zeros()),
            None if self.round > 0 && agreed[MAIN.len()] == 1 => Outcome::Exhausted,
            None => Outcome::Retry,
        };
        let mut s = self.pool.lock();
        if self.owns {
            if let Outcome::Agreed(slot) = outcome {
                let (word, bit) = (slot as usize / 64, slot % 64);
                debug_assert!(s.free[word] & (1 << bit) != 0, "an agreed slot is free under the loan");
                s.free[word] &= !(1 << bit);
            }
            if self.round == 0 {
                s.eager_lent = false;
            } else {
                s.main_lent = false;
            }
            self.owns = false;
        }
        if self.round == 0 {
            let ticket = agreed[EAGER.len()];
            self.key.0 = ticket;
            s.clock = s.clock.max(ticket + 1);
            if outcome == Outcome::Retry {
                *s.waiting.entry(self.key).or_insert(0) += 1;
                self.waiting = true;
            }
        }
        self.round += 1;
        match outcome {
            Outcome::Agreed(slot) => Outcome::Agreed(FIRST_FREE_CONTEXT + 2 * slot),
            other => other,
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut s = self.pool.lock();
        if self.owns {
            if self.round == 0 {
                s.eager_lent = false;
            } else {
                s.main_lent = false;
            }
        }
        if self.waiting {
            if let Some(n) = s.waiting.get_mut(&self.key) {
                *n -= 1;
                if *n == 0 {
                    s.waiting.remove(&self.key);
                }
            }
        }
    }
}

fn context_of(slot: usize) -> u32 {
    FIRST_FREE_CONTEXT + 2 * slot as u32
}

fn slot_of(context: u32) -> usize {
    debug_assert!(context >= FIRST_FREE_CONTEXT && (context - FIRST_FREE_CONTEXT).is_multiple_of(2));
    ((context - FIRST_FREE_CONTEXT) / 2) as usize
}

/// Agrees on a context id for a new communicator made by the parent ranks `group` of `parent`
/// (this rank is `group[me]`), over the parent's collective context with `tag`. Collective
/// over `group`.
pub(crate) fn agree(parent: &Communicator, group: &[usize], me: usize, tag: i32) -> Result<u32> {
    let mut turn = parent.pool().enter(parent.coll_context(), tag);
    loop {
        let mut words = turn.contribution(parent.engine());
        let (owned, arrival) = (turn.owns, turn.round == 0);
        allreduce(parent, group, me, tag, &mut words, usize::from(arrival))?;
        match turn.settle(&words) {
            Outcome::Agreed(context) => return Ok(context),
            Outcome::Exhausted => {
                return Err(Error::InvalidArgument(format!(
                    "out of communicator context ids: every member already holds {SLOTS} communicators \
                     or none is free in all of them (free communicators you no longer use)"
                )))
            }
            // Another creation holds a loan somewhere; let it finish its round.
            Outcome::Retry if !owned && !arrival => std::thread::yield_now(),
            Outcome::Retry => {}
        }
    }
}

/// Gives back a context agreed on for a communicator this process does not join.
pub(crate) fn release(parent: &Communicator, context: u32) {
    parent.pool().release(context);
}

/// AND of every member's `words` (MAX for the last `maxed` words), left in each member's
/// `words`: a binomial reduce to `group[0]` and a binomial broadcast back, on the same tree
/// (2 log n steps of one message each).
pub(crate) fn allreduce(
    parent: &Communicator,
    group: &[usize],
    me: usize,
    tag: i32,
    words: &mut [u64],
    maxed: usize,
) -> Result<()> {
    let n = group.len();
    let ctx = parent.coll_context();
    let mut buf = vec![0u8; 8 * words.len()];
    let max_from = words.len() - maxed;
    let combine = |words: &mut [u64], buf: &[u8]| {
        for (i, (w, b)) in words.iter_mut().zip(buf.chunks_exact(8)).enumerate() {
            let v = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
            *w = if i >= max_from { (*w).max(v) } else { *w & v };
        }
    };
    let pack = |buf: &mut [u8], words: &[u64]| {
        for (b, w) in buf.chunks_exact_mut(8).zip(words) {
            b.copy_from_slice(&w.to_ne_bytes());
        }
    };
    // The binomial tree rooted at position 0 (coll/schedule.rs): AND up, the result back down.
    let children = || binomial_children(me, 0, n);
    for child in children() {
        parent.recv_on(ctx, &mut buf, Source::Rank(group[child]), TagMatch::Tag(tag))?;
        combine(words, &buf);
    }
    if let Some(up) = binomial_parent(me, 0, n) {
        pack(&mut buf, words);
        parent.send_on(ctx, &buf, group[up], tag, SendMode::Standard)?;
        parent.recv_on(ctx, &mut buf, Source::Rank(group[up]), TagMatch::Tag(tag))?;
        for (w, b) in words.iter_mut().zip(buf.chunks_exact(8)) {
            *w = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
        }
    }
    pack(&mut buf, words);
    for child in children() {
        parent.send_on(ctx, &buf, group[child], tag, SendMode::Standard)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One round among `turns` (one per process), the allreduce done by hand.
    fn round(turns: &mut [&mut Turn<'_>]) -> Vec<Outcome> {
        let n = turns[0].words();
        let mut all = vec![u64::MAX; n];
        all[n - 1] = if turns[0].round == 0 { 0 } else { u64::MAX };
        for t in turns.iter_mut() {
            let arrival = t.round == 0;
            for (i, (a, w)) in all.iter_mut().zip(t.borrow()).enumerate() {
                *a = if arrival && i == n - 1 { (*a).max(w) } else { *a & w };
            }
        }
        turns.iter_mut().map(|t| t.settle(&all)).collect()
    }

    fn context(slot: u32) -> Outcome {
        Outcome::Agreed(FIRST_FREE_CONTEXT + 2 * slot)
    }

    /// A pool whose eager segment is full, so creations go to the main rounds.
    fn eager_full() -> ContextPool {
        let p = ContextPool::new();
        p.lock().free[EAGER].fill(0);
        p
    }

    const FIRST_MAIN: u32 = MAIN.start as u32 * 64;

    #[test]
    fn two_processes_agree_on_the_lowest_common_free_slot_in_one_round() {
        let (a, b) = (ContextPool::new(), ContextPool::new());
        a.lock().free[0] = 0b1100;
        b.lock().free[0] = 0b1010;
        let (mut ta, mut tb) = (a.enter(0, 1), b.enter(0, 1));
        assert_eq!(round(&mut [&mut ta, &mut tb]), vec![context(3); 2]);
        assert_eq!((a.lock().free[0], b.lock().free[0]), (0b0100, 0b0010), "slot 3 taken in both");
        assert!(!a.lock().eager_lent && !b.lock().eager_lent, "loans returned");
    }

    #[test]
    fn without_a_common_eager_slot_the_main_rounds_agree() {
        let (a, b) = (ContextPool::new(), ContextPool::new());
        a.lock().free[EAGER].fill(0);
        let (mut ta, mut tb) = (a.enter(0, 1), b.enter(0, 1));
        assert_eq!(round(&mut [&mut ta, &mut tb]), vec![Outcome::Retry; 2]);
        assert_eq!(round(&mut [&mut ta, &mut tb]), vec![context(FIRST_MAIN); 2]);
        assert_eq!(b.lock().free[EAGER], [u64::MAX; 2], "b's eager slots are untouched");
    }

    #[test]
    fn a_lent_eager_segment_sends_others_to_the_main_rounds() {
        let p = ContextPool::new();
        let mut blocked = p.enter(2, 0);
        assert_eq!(blocked.borrow(), vec![u64::MAX, u64::MAX, 0], "the first arrival borrows the eager segment");
        let mut other = p.enter(4, 0);
        assert_eq!(round(&mut [&mut other]), vec![Outcome::Retry], "no eager loan: an empty contribution");
        assert_eq!(round(&mut [&mut other]), vec![context(FIRST_MAIN)]);
        drop(blocked);
        assert!(!p.lock().eager_lent, "a dropped turn returns its loan");
    }

    #[test]
    fn tickets_follow_arrival_and_order_the_main_rounds() {
        // Process P runs creations on parents 6 and 8 at once; Q runs only the one on parent 8.
        let (p, q) = (eager_full(), eager_full());
        let (mut p8, mut q8) = (p.enter(8, 0), q.enter(8, 0));
        assert_eq!(round(&mut [&mut p8, &mut q8]), vec![Outcome::Retry; 2], "arrival round, eager full");
        assert_eq!((p8.key.0, p.lock().clock, q.lock().clock), (0, 1, 1));
        // Parent 6 arrives (P alone) after 8 did: a later ticket, despite its lower context.
        let mut p6 = p.enter(6, 0);
        assert_eq!(round(&mut [&mut p6]), vec![Outcome::Retry]);
        assert_eq!(p6.key.0, 1);
        // 6's main round overlaps 8's in P: 8, the lower key, holds the loan, so 6 retries.
        let eight = (p8.borrow(), q8.borrow());
        assert_eq!(round(&mut [&mut p6]), vec![Outcome::Retry], "P gave 6 an empty mask");
        let and: Vec<u64> = eight.0.iter().zip(&eight.1).map(|(a, b)| a & b).collect();
        assert_eq!((p8.settle(&and), q8.settle(&and)), (context(FIRST_MAIN), context(FIRST_MAIN)));
        drop((p8, q8));
        assert_eq!(round(&mut [&mut p6]), vec![context(FIRST_MAIN + 1)]);
    }

    #[test]
    fn only_the_lowest_key_past_arrival_borrows_the_main_segment() {
        let p = eager_full();
        let (mut a, mut b) = (p.enter(10, 0), p.enter(4, 0));
        // Both arrive together (same ticket): the lower parent context goes first.
        let (wa, wb) = (a.borrow(), b.borrow());
        assert_eq!((a.settle(&wa), b.settle(&wb)), (Outcome::Retry, Outcome::Retry));
        assert_eq!(a.borrow()[MAIN.len()], 0, "10 gets no loan while 4 waits");
        assert_eq!(round(&mut [&mut b]), vec![context(FIRST_MAIN)]);
        drop(b);
        a.settle(&vec![0; MAIN.len() + 1]);
        assert_eq!(round(&mut [&mut a]), vec![context(FIRST_MAIN + 1)]);
    }

    #[test]
    fn a_full_mask_everywhere_is_exhaustion_and_a_release_ends_it() {
        let p = ContextPool::new();
        p.lock().free = [0; WORDS];
        let mut t = p.enter(0, 0);
        assert_eq!(round(&mut [&mut t]), vec![Outcome::Retry], "the arrival round never gives up");
        assert_eq!(round(&mut [&mut t]), vec![Outcome::Exhausted]);
        p.release(FIRST_FREE_CONTEXT + 2 * 200);
        assert_eq!(round(&mut [&mut t]), vec![context(200)]);
    }
}

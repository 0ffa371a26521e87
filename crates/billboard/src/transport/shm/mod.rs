//! The shared-memory billboard channel (seed 004's BBP on a node-wide segment).
//!
//! Every rank owns one partition of the segment (see `segment.rs` for the byte layout); every
//! word has exactly one writer. Small payloads travel inline in per-pair fast-box rings
//! (`ring.rs`); larger ones are written once into the sender's data part and announced by a
//! slot descriptor, which can go to several receivers at once (multicast); each receiver counts
//! the descriptors it has finished in the sender's partition (ACKs), and the sender reuses a
//! slot once every addressed receiver has counted past it. For very large messages the channel
//! offers what the engine's large-transfer protocols need: remote reads and writes of a peer's
//! memory (`process_vm_readv/writev`) and claim words in the segment, on which both ends of a
//! shared copy divide its pages (`engine/claims.rs`).
//!
//! Files: `segment.rs` sets up and tears down, `ring.rs` sends and receives records,
//! `slots.rs` manages the data part, `wait.rs` waits,
//! `bell.rs` wakes a rank that sleeps in `epoll_wait` (one that also has TCP peers),
//! `cross_memory.rs` copies straight between two processes' memories.

use std::io;

use crate::sync::Ordering;
use crate::transport::{Caps, Channel, Header, WouldBlock};
use crate::tunables::Tunable;

mod bell;
pub mod cross_memory;
mod ring;
mod segment;
mod slots;
pub mod wait;

use cross_memory::Direction;
use ring::{RingMemory, RingRx, RingTx, CELL, FORM_INLINE, FORM_MALFORMED, FORM_SLOT};
pub(crate) use segment::{segment_name, Layout, Segment, BOARD_LANE_BYTES, BOARD_SLOTS, BOARD_SLOT_BYTES, CLAIM_WORDS};
use slots::SlotPool;

pub static RING_BYTES: Tunable = Tunable::new(
    "BB_SHM_RING_BYTES",
    32 << 10,
    "bytes of fast-box ring per (sender, receiver) pair, rounded up to a power of two; 32 KiB holds four 8 KiB inline messages",
);
pub static SLOT_BYTES: Tunable = Tunable::new(
    "BB_SHM_SLOT_BYTES",
    64 << 10,
    "bytes of one data-part slot (medium messages, pipelined chunks); L2-resident on this VM",
);
pub static EAGER_INLINE: Tunable = Tunable::new(
    "BB_EAGER_INLINE",
    8 << 10,
    "largest payload carried inline in the fast-box ring (bytes); capped at a quarter ring",
);
pub static SLOTS: Tunable = Tunable::new("BB_SHM_SLOTS", 16, "data-part slots per rank");

/// A receiver's `closed` word in the sender's partition once it closed the pair.
const CLOSED: u64 = 1;

/// Records drained from one peer per poll before others get a turn.
const DRAIN_BUDGET: usize = 32;

/// While waiting on one peer, the other peers' doorbells are read on every this many polls
/// (they may need our ACKs or credits to go on, so they are never starved).
const DOORBELL_EVERY: u32 = 16;

/// One ring of the segment, as the ring code sees it.
#[derive(Clone, Copy)]
struct ShmRing {
    cells: *mut u8,
    ncells: usize,
    consumed: *const crate::sync::AtomicU64,
}

impl RingMemory for ShmRing {
    fn ncells(&self) -> usize {
        self.ncells
    }
    fn seq(&self, i: usize) -> &crate::sync::AtomicU64 {
        debug_assert!(i < self.ncells);
        // SAFETY: cell i lies inside the ring; its first 8 bytes are the publish word, aligned.
        unsafe { &*(self.cells.add(i * CELL) as *const crate::sync::AtomicU64) }
    }
    fn consumed(&self) -> &crate::sync::AtomicU64 {
        // SAFETY: points into the segment, mapped for as long as the channel that made it.
        unsafe { &*self.consumed }
    }
    #[inline]
    unsafe fn write(&self, offset: usize, src: &[u8]) {
        debug_assert!(offset + src.len() <= self.ncells * CELL);
        crate::copy::copy(src.as_ptr(), self.cells.add(offset), src.len());
    }
    unsafe fn read(&self, offset: usize, len: usize) -> &[u8] {
        debug_assert!(offset + len <= self.ncells * CELL);
        std::slice::from_raw_parts(self.cells.add(offset), len)
    }
}

/// The ring `sender` writes into `receiver`'s partition. Worked out once, at setup.
fn ring(seg: &Segment, sender: usize, receiver: usize) -> ShmRing {
    ShmRing {
        cells: seg.ring(receiver, sender),
        ncells: seg.layout.ring_bytes / CELL,
        consumed: &seg.returns(sender, receiver).consumed,
    }
}

/// Sleeps on this rank's futex word without a borrow of the channel.
///
/// It points into the mapped segment, which stays mapped until the engine is dropped at
/// finalize, after every thread has left its waits.
pub(crate) struct Sleeper {
    word: *const std::sync::atomic::AtomicU32,
    doorbells: *const crate::sync::AtomicU64,
    seen: Vec<u64>,
}

impl Sleeper {
    pub fn sleep(&self, timeout: std::time::Duration) {
        wait::sleep(self.word(), timeout, || self.pending());
    }

    /// Sleeps in `block` (an `epoll_wait` whose set holds this rank's doorbell `bell`),
    /// telling senders to ring the doorbell; returns at once if something is pending.
    pub fn sleep_on_bell(&self, bell: &std::os::fd::OwnedFd, block: impl FnOnce()) {
        wait::sleep_on_bell(self.word(), || self.pending(), block);
        bell::Bell::quiet(std::os::fd::AsFd::as_fd(bell));
    }

    fn word(&self) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: points into the segment, mapped for as long as the engine lives (above).
        unsafe { &*self.word }
    }

    /// Whether a sender has rung since the sleeper was made.
    pub fn pending(&self) -> bool {
        // SAFETY: points into the segment, mapped for as long as the engine lives (above).
        let doorbells = unsafe { std::slice::from_raw_parts(self.doorbells, self.seen.len()) };
        doorbells.iter().zip(&self.seen).any(|(d, &c)| d.load(Ordering::Acquire) != c)
    }
}

/// This rank's end of the billboard.
pub struct ShmChannel {
    seg: Segment,
    me: usize,
    /// Rings this rank writes, one per receiver: where they are, and our state in each.
    tx_rings: Vec<ShmRing>,
    tx: Vec<RingTx>,
    /// Records posted to each receiver (the doorbell value).
    posted: Vec<u64>,
    /// Rings this rank reads, one per sender: where they are, and our state in each.
    rx_rings: Vec<ShmRing>,
    rx: Vec<RingRx>,
    /// Records consumed from each sender (compared against its doorbell).
    consumed: Vec<u64>,
    /// Slot descriptors of each sender this rank has finished (its ACK count there).
    acked: Vec<u64>,
    slots: SlotPool,
    /// The sender heard from last: polled first, before the doorbells.
    hot: usize,
    /// Polls so far (wrapping), to space out doorbell scans.
    polls: u32,
    /// Largest inline payload, fixed at setup.
    max_inline: usize,
    /// Ranks outnumber cores: a sender must not miss a sleeping receiver (see `wake`).
    oversubscribed: bool,
    /// Senders no longer read ([`ShmChannel::close`]).
    closed: Vec<bool>,
    /// Peers to report through [`ShmChannel::take_failure`]: (index, what happened).
    failures: Vec<(usize, String)>,
    /// Peers reported as having closed their end toward us ([`ShmChannel::find_closed`]).
    told_closed: Vec<bool>,
    /// Peers whose process this one has seen alive (`kill(pid, 0)`), so that "no such
    /// process" later means it is gone, not that it lives in a pid namespace we cannot see.
    seen_alive: Vec<bool>,
    /// The never-published cell (and credit word) closed rings point at.
    dead: Option<Box<[crate::sync::AtomicU64; CELL / 8 + 1]>>,
    /// This rank's doorbell, when it sleeps in `epoll_wait` ([`ShmChannel::install_bell`]).
    bell: Option<bell::Bell>,
}

impl ShmChannel {
    /// Takes over a mapped segment as rank `me`; publishes this process's id for single-copy.
    pub(crate) fn new(seg: Segment, me: usize, oversubscribed: bool) -> ShmChannel {
        let n = seg.layout.nranks;
        seg.control(me).pid.store(std::process::id() as u64, Ordering::Release);
        let slots = SlotPool::new(seg.layout.slots, n);
        let max_inline = ring::max_inline(seg.layout.ring_bytes).min(EAGER_INLINE.get());
        ShmChannel {
            tx_rings: (0..n).map(|r| ring(&seg, me, r)).collect(),
            rx_rings: (0..n).map(|s| ring(&seg, s, me)).collect(),
            seg,
            me,
            tx: (0..n).map(|_| RingTx::default()).collect(),
            posted: vec![0; n],
            rx: (0..n).map(|_| RingRx::default()).collect(),
            consumed: vec![0; n],
            acked: vec![0; n],
            slots,
            hot: me,
            polls: 0,
            max_inline,
            oversubscribed,
            closed: vec![false; n],
            failures: Vec::new(),
            told_closed: vec![false; n],
            seen_alive: vec![false; n],
            dead: None,
            bell: None,
        }
    }

    /// Unlinks the segment's name (once every local rank has mapped it).
    pub(crate) fn unlink(&mut self) {
        self.seg.unlink();
    }

    /// This rank's index on the billboard.
    pub fn me(&self) -> usize {
        self.me
    }

    /// Rings `peer`'s doorbell for the record just posted, and wakes it if it sleeps.
    fn rang(&mut self, peer: usize) {
        self.posted[peer] += 1;
        self.seg.doorbell(peer, self.me).store(self.posted[peer], Ordering::Release);
        self.wake(peer);
    }

    /// Hands up to [`DRAIN_BUDGET`] records of sender `s` to `f`. A record that cannot be
    /// read (see [`RingRx::next`], and a slot descriptor naming no slot of the data part or
    /// more bytes than a slot holds) closes `s`'s ring and leaves a failure to report.
    fn drain<F: FnMut(usize, &Header, &[u8])>(&mut self, s: usize, f: &mut F) -> usize {
        let ring = self.rx_rings[s];
        let mut handled = 0;
        while handled < DRAIN_BUDGET {
            let Some(rec) = self.rx[s].next(&ring) else { break };
            let slot_acked = rec.form != FORM_INLINE;
            if !slot_acked {
                f(s, &rec.header, rec.payload);
            } else if let Some(data) = self.slot_payload(s, &rec) {
                f(s, &rec.header, data);
                self.acked[s] += 1;
                self.seg.returns(s, self.me).acked.store(self.acked[s], Ordering::Release);
            } else {
                let why = match rec.form {
                    FORM_MALFORMED => rec.malformation(),
                    _ => format!(
                        "a slot descriptor of slot {:?} with {} bytes (slots are 0..{}, of {} bytes)",
                        rec.payload, rec.len, self.seg.layout.slots, self.seg.layout.slot_bytes
                    ),
                };
                self.close_sender(s, Some(why));
                break;
            }
            let credited = self.rx[s].release(&ring, rec);
            handled += 1;
            if credited || slot_acked {
                // The sender may be waiting for ring room or a slot.
                self.wake(s);
            }
        }
        self.consumed[s] += handled as u64;
        handled
    }

    /// The bytes a slot descriptor from `s` names, if it names a slot of `s`'s data part and no
    /// more bytes than the slot holds.
    fn slot_payload(&self, s: usize, rec: &ring::Record<'_>) -> Option<&[u8]> {
        if rec.form != FORM_SLOT {
            return None;
        }
        let slot = u32::from_ne_bytes(rec.payload.try_into().ok()?) as usize;
        let len = rec.len as usize;
        if slot >= self.seg.layout.slots || len > self.seg.layout.slot_bytes {
            return None;
        }
        // SAFETY: the sender wrote the slot before posting the descriptor we acquired, and
        // reuses it only after our ACK; slot and length lie inside its data part (checked).
        Some(unsafe { std::slice::from_raw_parts(self.seg.slot(s, slot), len) })
    }

    /// Stops reading sender `s` (it failed, or sent what cannot be read): its ring reads as
    /// empty from now on, at no cost to the others, and the slots we sent it are ours again.
    /// `s` is told through its `closed` word (after every record we posted it), which it
    /// looks at before it sleeps ([`ShmChannel::find_closed`]): a send of its that waits
    /// for our answer fails rather than waits for ever. `why`: the channel found the fault
    /// itself and reports it through [`ShmChannel::take_failure`]; `None`: the engine did and
    /// knows.
    pub(crate) fn close_sender(&mut self, s: usize, why: Option<String>) {
        if self.closed[s] {
            return;
        }
        self.closed[s] = true;
        self.seg.returns(s, self.me).closed.store(CLOSED, Ordering::Release);
        self.wake(s);
        let dead = self.dead.get_or_insert_with(|| Box::new(std::array::from_fn(|_| crate::sync::AtomicU64::new(0))));
        // One cell whose publish word stays 0 (a reader waits for 1): never a record.
        self.rx_rings[s] = ShmRing { cells: dead.as_ptr() as *mut u8, ncells: 1, consumed: &dead[CELL / 8] };
        self.rx[s] = RingRx::default();
        self.slots.drop_receiver(s);
        if let Some(why) = why {
            self.failures.push((s, format!("it sent what the billboard cannot hold: {why}")));
        }
    }

    /// Looks for peers whose end of the pair is gone without a record saying so: one that
    /// closed ours (its `closed` word: it failed this rank, or our records broke its
    /// protocol), or whose process is gone (exited or killed). Each is reported once through
    /// [`ShmChannel::take_failure`], and only when its ring to us holds nothing more: what it
    /// posted before it closed (a FIN, say) is read first. A look at every peer (and a
    /// `kill(pid, 0)` each): the engine's wait makes it before it sleeps, not on every poll.
    pub(crate) fn find_closed(&mut self) {
        for r in 0..self.nranks() {
            if r == self.me || self.told_closed[r] {
                continue;
            }
            // The word (or the death) first, then the ring: whatever the peer posted before
            // is visible by then.
            let why = if self.seg.returns(self.me, r).closed.load(Ordering::Acquire) != 0 {
                "it closed its end of the shared-memory pair (it failed this rank)"
            } else if self.seen_alive[r] && self.process_gone(r) {
                "its process is gone (it exited or was killed)"
            } else {
                continue;
            };
            if self.rx[r].ready(&self.rx_rings[r]) {
                continue; // the next poll reads it; the next look reports
            }
            self.told_closed[r] = true;
            self.failures.push((r, why.to_string()));
        }
    }

    /// Whether no process has `peer`'s published id any more (ESRCH); it counts only for a
    /// peer seen alive before ([`ShmChannel::note_alive`]).
    fn process_gone(&self, peer: usize) -> bool {
        let pid = rustix::process::Pid::from_raw(self.pid(peer));
        pid.is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
    }

    /// Notes which peers' processes this one can see now (every peer has published its id):
    /// only their deaths are looked for, since a peer in another pid namespace is never seen.
    /// True if it saw every peer.
    pub(crate) fn note_alive(&mut self) -> bool {
        for r in 0..self.nranks() {
            let pid = rustix::process::Pid::from_raw(self.pid(r));
            self.seen_alive[r] = r != self.me && pid.is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        }
        (0..self.nranks()).all(|r| r == self.me || self.seen_alive[r])
    }

    /// Writes `pieces` (`total` bytes) once into a slot and posts its descriptor to every peer
    /// in `peers`: every peer gets it, or none does and the call says `WouldBlock`.
    fn post_in_slot(
        &mut self,
        peers: &[usize],
        header: &Header,
        pieces: &[&[u8]],
        total: usize,
    ) -> Result<(), WouldBlock> {
        assert!(total <= self.seg.layout.slot_bytes, "record larger than a slot");
        for &p in peers {
            let ring = self.tx_rings[p];
            if !self.tx[p].has_room(&ring, 4) {
                return Err(WouldBlock);
            }
        }
        let slot = self.slots.alloc(&self.seg, self.me);
        if let Some((r, why)) = self.slots.overcounted.take() {
            self.close_sender(r, Some(why));
        }
        let Some(slot) = slot else { return Err(WouldBlock) };
        let mut at = self.seg.slot(self.me, slot);
        for piece in pieces {
            // SAFETY: a free slot of our own data part and `total` fits it: no receiver reads
            // it until posted below.
            unsafe {
                crate::copy::copy_bulk(piece.as_ptr(), at, piece.len());
                at = at.add(piece.len());
            }
        }
        for &p in peers {
            let ring = self.tx_rings[p];
            let posted = self.tx[p].try_push(&ring, FORM_SLOT, total as u32, header, &(slot as u32).to_ne_bytes());
            debug_assert!(posted, "room was checked above");
            self.slots.posted(slot, p);
            self.rang(p);
        }
        Ok(())
    }

    /// The process id `peer` published for cross-memory copies.
    fn pid(&self, peer: usize) -> libc::pid_t {
        self.seg.control(peer).pid.load(Ordering::Acquire) as libc::pid_t
    }

    /// Whether anything has arrived that `poll` would hand out.
    pub fn pending(&self) -> bool {
        (0..self.nranks())
            .any(|s| !self.closed[s] && self.seg.doorbell(self.me, s).load(Ordering::Acquire) != self.consumed[s])
    }

    /// What a waiter needs to sleep without holding the channel (so other threads of this
    /// process may use it meanwhile): our sleep word, our doorbells, and what we have seen.
    pub(crate) fn sleeper(&self) -> Sleeper {
        // A closed sender's doorbell counts records never consumed: what it says now is seen.
        let seen = (0..self.consumed.len())
            .map(|s| match self.closed[s] {
                true => self.seg.doorbell(self.me, s).load(Ordering::Acquire),
                false => self.consumed[s],
            })
            .collect();
        Sleeper { word: &self.seg.control(self.me).sleep, doorbells: self.seg.doorbell(self.me, 0), seen }
    }

    /// Wakes `peer` if it has said it sleeps.
    #[inline]
    pub fn wake(&self, peer: usize) {
        wait::wake(&self.seg.control(peer).sleep, self.oversubscribed, || {
            if let Some(bell) = &self.bell {
                bell.ring(peer);
            }
        });
    }

    /// Gives this rank a doorbell (and rings the peers' when they sleep on theirs): for a rank
    /// that sleeps in `epoll_wait` because it also has peers over TCP. Every rank of a segment
    /// whose ranks have TCP peers calls this, after the segment is named.
    pub(crate) fn install_bell(&mut self) -> io::Result<()> {
        self.bell = Some(bell::Bell::bind(self.seg.name(), self.me, self.seg.layout.nranks)?);
        Ok(())
    }

    /// The first byte of board slot `slot` of billboard rank `p` (coll/board.rs).
    pub(crate) fn board_slot(&self, p: usize, slot: usize) -> *mut u8 {
        self.seg.board(p, slot)
    }

    /// This rank's doorbell socket, for the epoll set it sleeps in.
    pub(crate) fn bell(&self) -> Option<std::sync::Arc<std::os::fd::OwnedFd>> {
        self.bell.as_ref().map(bell::Bell::socket)
    }
}

impl Channel for ShmChannel {
    fn nranks(&self) -> usize {
        self.seg.layout.nranks
    }

    fn caps(&self) -> Caps {
        Caps {
            max_inline: self.max_inline,
            max_record: self.seg.layout.slot_bytes,
            single_copy: true,
            claim_words: CLAIM_WORDS,
            multicast: true,
            eager_max: None,
        }
    }

    /// Sends one record to `peer`: inline if it fits, else through a slot of the data part.
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if payload.len() <= self.max_inline {
            let ring = self.tx_rings[peer];
            if !self.tx[peer].try_push(&ring, FORM_INLINE, payload.len() as u32, header, payload) {
                return Err(WouldBlock);
            }
            self.rang(peer);
            Ok(())
        } else {
            self.try_multicast(&[peer], header, payload)
        }
    }

    /// Sends one record made of `pieces`, copied straight into the ring's cells (inline) or
    /// into a slot of the data part: no intermediate buffer.
    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total > self.max_inline {
            return self.post_in_slot(&[peer], header, pieces, total);
        }
        let ring = self.tx_rings[peer];
        if !self.tx[peer].try_push_gather(&ring, header, pieces, total) {
            return Err(WouldBlock);
        }
        self.rang(peer);
        Ok(())
    }

    /// Writes `payload` once into a slot and posts its descriptor to every peer in `peers`;
    /// a payload that fits a ring cell goes inline to each instead (as cheap as a descriptor,
    /// and no slot held until the last reader). Either every peer gets it, or none does and
    /// the call says `WouldBlock`.
    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if payload.len() > self.max_inline {
            return self.post_in_slot(peers, header, &[payload], payload.len());
        }
        for &p in peers {
            let ring = self.tx_rings[p];
            if !self.tx[p].has_room(&ring, payload.len()) {
                return Err(WouldBlock);
            }
        }
        for &p in peers {
            let ring = self.tx_rings[p];
            let posted = self.tx[p].try_push(&ring, FORM_INLINE, payload.len() as u32, header, payload);
            debug_assert!(posted, "room was checked above");
            self.rang(p);
        }
        Ok(())
    }

    /// Hands records that have arrived to `f(sender, header, payload)`. The sender in `hint`
    /// (or the one heard from last) is drained first; the doorbells of the others are read
    /// when that found nothing, and, while a `hint` is given, only every [`DOORBELL_EVERY`]th
    /// poll, so a rank waiting on one peer does not pull lines others write on each spin.
    /// `payload` lies in shared memory and is valid only during the call. Returns the number
    /// of records handled.
    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        let first = hint.unwrap_or(self.hot);
        // The awaited ring is looked at here, and drained only if a record waits: the empty
        // round of a crowded wait pays a look, not a drain's call (callgrind, a 4-rank ring on
        // 2 cores: 152.6 -> 106.8 instructions a round with poll_hosts, bench/README.md).
        let mut handled = match self.rx[first].ready(&self.rx_rings[first]) {
            true => self.drain(first, &mut f),
            false => 0,
        };
        self.polls = self.polls.wrapping_add(1);
        if handled == 0 && (hint.is_none() || self.polls.is_multiple_of(DOORBELL_EVERY)) {
            for s in 0..self.nranks() {
                if s != first && self.seg.doorbell(self.me, s).load(Ordering::Acquire) != self.consumed[s] {
                    let k = self.drain(s, &mut f);
                    if k > 0 {
                        self.hot = s;
                        handled += k;
                    }
                }
            }
        }
        handled
    }

    /// Whether a fault found by the channel waits in [`ShmChannel::take_failure`].
    #[inline]
    fn has_failure(&self) -> bool {
        !self.failures.is_empty()
    }

    /// The next sender the channel closed on its own: its index and what it sent.
    fn take_failure(&mut self) -> Option<(usize, String)> {
        self.failures.pop()
    }

    /// Hands the record waiting at the head of `s`'s ring to `take(header, payload)` if it
    /// carries its payload inline, and consumes it if `take` returns true. False when nothing
    /// waits, the record is of another form, or `take` declined it (a poll handles it later).
    #[inline]
    fn take_head(&mut self, s: usize, take: impl FnOnce(&Header, &[u8]) -> bool) -> bool {
        let ring = self.rx_rings[s];
        let Some(rec) = self.rx[s].next(&ring) else { return false };
        if rec.form != FORM_INLINE || !take(&rec.header, rec.payload) {
            return false;
        }
        if self.rx[s].release(&ring, rec) {
            self.wake(s);
        }
        self.consumed[s] += 1;
        true
    }

    /// Spins until a record from `s` waits, for at most `spins` pauses; returns the pauses
    /// spent. The tight loop of a call blocked on one peer: a load and a pause per turn, as
    /// in the floor, so an arrival is seen within a pause instead of a whole progress round.
    #[inline]
    fn spin_for(&self, s: usize, spins: u32) -> u32 {
        let ring = &self.rx_rings[s];
        for spent in 0..spins {
            if self.rx[s].ready(ring) {
                return spent;
            }
            std::hint::spin_loop();
        }
        spins
    }

    /// Copies `src` to address `addr` of `peer`'s memory (`process_vm_writev`): the sender's
    /// half of a shared copy.
    fn write_remote(&self, peer: usize, addr: u64, src: &[u8]) -> io::Result<()> {
        // SAFETY: `src` is readable for its length, and a write only reads the local side.
        unsafe { cross_memory::copy(self.pid(peer), src.as_ptr().cast_mut(), addr, src.len(), Direction::Write) }
    }

    /// Copies from several pieces of `peer`'s memory (`remote`) into several local pieces
    /// (`local`), both consumed as it goes, in `process_vm_readv` calls of at most IOV_MAX
    /// vectors a side. The two lists must cover the same number of bytes.
    fn read_remote_iov(&self, peer: usize, local: &mut [libc::iovec], remote: &mut [libc::iovec]) -> io::Result<()> {
        // SAFETY: the local iovecs cover memory the caller owns mutably; the kernel checks
        // the remote ones.
        unsafe { cross_memory::copy_iov(self.pid(peer), local, remote, Direction::Read) }
    }

    /// Claim word `k` of the copies shared with `peer`, in the receiver's partition.
    fn claim_word(&self, peer: usize, from_peer: bool, k: usize) -> &crate::sync::AtomicU64 {
        match from_peer {
            true => self.seg.claim(self.me, peer, k),
            false => self.seg.claim(peer, self.me, k),
        }
    }

    fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    fn close(&mut self, peer: usize, _why: &str) {
        self.close_sender(peer, None);
    }

    fn look_for_closed(&mut self) {
        self.find_closed();
    }

    /// Copies `dst.len()` bytes at address `addr` of `peer`'s memory straight into `dst`
    /// (`process_vm_readv`).
    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> io::Result<()> {
        // SAFETY: `dst` is ours to write for its length.
        unsafe { cross_memory::copy(self.pid(peer), dst.as_mut_ptr(), addr, dst.len(), Direction::Read) }
    }

    /// Sleeps until a sender rings, or `timeout` passes. Returns at once if something is
    /// pending. The sleep word is the one place a sender writes into our control part.
    fn sleep(&self, timeout: std::time::Duration) {
        wait::sleep(&self.seg.control(self.me).sleep, timeout, || self.pending());
    }
}

/// Sets up the billboard among `ranks` (world ranks on this host, ascending, this one among
/// them); `oversubscribed`: the ranks on this host, whatever their routes, outnumber its cores. The lowest creates the segment and publishes its name under `key`, the others map it,
/// and once all have, the creator unlinks the name so nothing is left in `/dev/shm` whatever
/// happens later. Every rank of the job calls this (it holds two job-wide barriers).
pub(crate) fn connect(
    job: &mut crate::bootstrap::Job,
    ranks: &[usize],
    key: &str,
    oversubscribed: bool,
) -> crate::Result<ShmChannel> {
    let me = ranks.iter().position(|&r| r == job.rank).expect("this rank is on its own billboard");
    let layout = Layout::new(ranks.len(), RING_BYTES.get(), SLOT_BYTES.get(), SLOTS.get());
    // Let peers read our buffers with process_vm_readv where Yama restricts ptrace.
    let _ = rustix::process::set_ptracer(rustix::process::PTracer::Any);
    let kvs_key = format!("bb-shm-segment-{key}");
    let seg = if me == 0 {
        let name = segment_name(&job.id);
        let seg = Segment::create(&name, layout, oversubscribed)?;
        if ranks.len() > 1 {
            job.put(&kvs_key, &name)?;
        }
        job.barrier()?;
        seg
    } else {
        job.barrier()?;
        let name = job.get(&kvs_key)?;
        Segment::open(&name, layout)?
    };
    // The creator's flag, so that every rank of the host chooses from the same tables.
    let crowded = seg.crowded();
    let mut chan = ShmChannel::new(seg, me, crowded);
    job.barrier()?;
    let _ = chan.note_alive();
    if me == 0 {
        chan.unlink();
    }
    Ok(chan)
}

#[cfg(test)]
impl ShmChannel {
    /// Posts a record to `peer` with the `form` and `len` fields given, whatever they say
    /// (what a faulty sender could post), for tests of the receiving end.
    pub(crate) fn push_raw(&mut self, peer: usize, form: u32, len: u32, header: &Header, payload: &[u8]) {
        let ring = self.tx_rings[peer];
        assert!(self.tx[peer].try_push(&ring, form, len, header, payload), "room in the ring");
        self.rang(peer);
    }

    /// Publishes `count` as the slot descriptors this rank has finished of `sender`'s (its ACK
    /// count in `sender`'s partition), whatever it really finished.
    pub(crate) fn forge_acks(&self, sender: usize, count: u64) {
        self.seg.returns(sender, self.me).acked.store(count, Ordering::Release);
    }
}

/// `n` connected endpoints in this process (each maps the segment itself), for the
/// conformance suite.
#[cfg(test)]
pub(crate) fn endpoints(n: usize, ring_bytes: usize, slot_bytes: usize, slots: usize) -> Vec<ShmChannel> {
    let layout = Layout::new(n, ring_bytes, slot_bytes, slots);
    let name = segment_name("conformance");
    let mut first = Some(Segment::create(&name, layout, false).expect("create segment"));
    let eps: Vec<ShmChannel> = (0..n)
        .map(|me| {
            let seg = first.take().unwrap_or_else(|| Segment::open(&name, layout).expect("map segment"));
            ShmChannel::new(seg, me, false)
        })
        .collect();
    let _ = rustix::shm::unlink(name.as_str());
    eps
}

#[cfg(test)]
#[path = "faults_tests.rs"]
mod faults_tests;

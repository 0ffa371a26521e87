//! The bare shared-memory channel between a process and its forked peer, and ping-pong and
//! exchange over it (see the module above for what each measures).

use std::cell::Cell;
use std::hint::black_box;
use std::io;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::copy::{read_remote, write_remote};
use super::{CHILD_BYTE, PARENT_BYTE};
use crate::peer::{parent_gone, wait_at_least, PaddedSeq, Peer, SharedRegion};
use crate::plan::{latency_iters, Trials};
use crate::stats::{trimmed, Summary};

/// Control words at the start of the shared region, one writer each.
#[repr(C)]
pub(super) struct Control {
    /// Written by the parent only: fragments published by the copy channel, or the last
    /// sequence number in the single-copy and `process_vm_readv` measurements.
    pub(super) parent_seq: PaddedSeq,
    /// Written by the child only; the same for the other direction.
    pub(super) child_seq: PaddedSeq,
}

/// Payload areas start on a page after the control words.
const PAYLOAD_OFFSET: usize = 4096;
const _: () = assert!(std::mem::size_of::<Control>() <= PAYLOAD_OFFSET);

/// The shared channel: control words, then two payload slots per direction (parent-to-child
/// slots 0 and 1, then child-to-parent slots 0 and 1), each `slot_len` bytes, page-aligned.
/// Two slots alternate by sequence parity so that in an exchange a sender never overwrites a
/// slot the receiver may still be copying (see [`Side::send`]).
pub(super) struct Channel {
    region: SharedRegion,
    slot_len: usize,
}

impl Channel {
    pub(super) fn new(max_size: usize) -> io::Result<Channel> {
        let slot_len = max_size.max(1).next_multiple_of(4096);
        Ok(Channel { region: SharedRegion::new(PAYLOAD_OFFSET + 4 * slot_len)?, slot_len })
    }

    pub(super) fn control(&self) -> &Control {
        // SAFETY: the region is page-aligned, zero-initialised (valid AtomicU64s) and at least
        // PAYLOAD_OFFSET bytes; Control is only accessed through atomics.
        unsafe { &*self.region.base().cast::<Control>() }
    }

    fn slot(&self, from_parent: bool, slot: usize) -> *mut u8 {
        let index = if from_parent { 0 } else { 2 } + slot;
        // SAFETY: index < 4, so the offset stays inside the region mapped in `new`.
        unsafe { self.region.base().add(PAYLOAD_OFFSET + index * self.slot_len) }
    }

    /// One side of the channel: the parent's (`is_parent`) or the child's view.
    fn side(&self, is_parent: bool) -> Side<'_> {
        let c = self.control();
        let (mine, theirs) = if is_parent { (&c.parent_seq, &c.child_seq) } else { (&c.child_seq, &c.parent_seq) };
        Side { channel: self, is_parent, mine: &mine.0, theirs: &theirs.0, sent: Cell::new(0), received: Cell::new(0) }
    }
}

struct Side<'a> {
    channel: &'a Channel,
    is_parent: bool,
    /// Count of fragments we have published (our control word; we are its only writer).
    mine: &'a AtomicU64,
    /// Count of fragments the peer has published.
    theirs: &'a AtomicU64,
    sent: Cell<u64>,
    received: Cell<u64>,
}

/// Messages are copied in fragments of this size, each published as soon as it is in, so the
/// receiver copies fragment i out while the sender copies fragment i+1 in: on two cores a
/// large message then costs about one copy, not two in a row, which is what a pipelined
/// copy-through transport achieves and what MPICH and Open MPI beat an unpipelined floor with
/// from 512 KiB on (4 MiB one-way: 580 us unpipelined, 370 us pipelined). 16 KiB was the best
/// of 8 KiB..128 KiB measured at 64 KiB..4 MiB on the 2-vCPU machine: at 8 KiB the
/// per-fragment flag traffic shows, from 64 KiB on the pipeline fills too late.
const FRAGMENT: usize = 16 << 10;

/// Fragments of a message of `len` bytes: at least one, so an empty message is still a signal.
fn fragments(len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let count = len.div_ceil(FRAGMENT).max(1);
    (0..count).map(move |i| i * FRAGMENT..((i + 1) * FRAGMENT).min(len))
}

impl Side<'_> {
    /// Copies `len` bytes of `src` into slot `seq % 2` of our direction, publishing each
    /// fragment as it lands (plain stores, then the fragment count with a Release store).
    /// Slot reuse is safe without an extra ACK word: we send message `seq` only after receiving
    /// all of `seq - 1`, which the peer sent only after copying out all of our `seq - 2`, the
    /// last user of the same slot.
    fn send(&self, seq: u64, src: &[u8], len: usize) {
        let slot = self.channel.slot(self.is_parent, (seq % 2) as usize);
        for range in fragments(len) {
            // SAFETY: range.end <= len <= src.len() and len <= slot_len (sizes come from the
            // plan the channel was sized for); the slot is not being read (see above).
            unsafe { ptr::copy_nonoverlapping(src.as_ptr().add(range.start), slot.add(range.start), range.len()) };
            self.sent.set(self.sent.get() + 1);
            self.mine.store(self.sent.get(), Ordering::Release);
        }
    }

    /// Copies message `seq` out, each fragment once the peer has published it.
    fn recv(&self, seq: u64, dst: &mut [u8], len: usize, mut peer_gone: impl FnMut() -> bool) -> io::Result<()> {
        let slot = self.channel.slot(!self.is_parent, (seq % 2) as usize);
        for range in fragments(len) {
            self.received.set(self.received.get() + 1);
            wait_at_least(self.theirs, self.received.get(), &mut peer_gone)
                .map_err(|_| io::Error::other("floor peer died"))?;
            // SAFETY: the Acquire load in wait_at_least ordered the peer's stores of this
            // fragment before us; the peer does not rewrite this slot until we have sent our
            // next message. range.end <= len <= dst.len().
            unsafe { ptr::copy_nonoverlapping(slot.add(range.start), dst.as_mut_ptr().add(range.start), range.len()) };
        }
        black_box(dst.as_ptr()); // the copy out is part of the cost; keep it
        Ok(())
    }
}

/// Whether both sides send at once (exchange) or take turns (ping-pong).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pattern {
    PingPong,
    Exchange,
}

pub(super) fn run(sizes: &[usize], trials: Trials, pattern: Pattern) -> io::Result<Vec<Summary>> {
    let max = sizes.iter().copied().max().unwrap_or(0);
    let channel = Channel::new(max)?;
    // Everything the child touches is allocated before the fork.
    let parent_src = vec![PARENT_BYTE; max];
    let mut parent_dst = vec![0u8; max];
    let child_src = vec![CHILD_BYTE; max];
    let mut child_dst = vec![0u8; max];
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut peer = Peer::spawn(|| child_loop(&channel, sizes, trials, pattern, &child_src, &mut child_dst, parent))?;

    let side = channel.side(true);
    let mut seq = 0;
    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let iters = latency_iters(size);
        let mut samples = Vec::with_capacity(trials.timed);
        parent_dst[..size].fill(0);
        for trial in 0..trials.total() {
            let start = Instant::now();
            for _ in 0..iters {
                seq += 1;
                side.send(seq, &parent_src, size);
                side.recv(seq, &mut parent_dst, size, || !peer.alive())?;
            }
            let elapsed = start.elapsed().as_secs_f64();
            if trial >= trials.warmup {
                samples.push(elapsed / iters as f64 / 2.0 * 1e6);
            }
        }
        if parent_dst[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("floor channel corrupted the payload at {size} B")));
        }
        results.push(trimmed(&samples).unwrap_or(Summary::MISSING));
    }
    peer.join()?;
    Ok(results)
}

/// The child's half: the same sequence of sizes and iterations as the parent. In a ping-pong
/// it replies after receiving; in an exchange it sends first, like the parent. The payload is
/// checked once per size, after the last iteration, so the check costs no timed work.
fn child_loop(
    channel: &Channel,
    sizes: &[usize],
    trials: Trials,
    pattern: Pattern,
    src: &[u8],
    dst: &mut [u8],
    parent: libc::pid_t,
) {
    let side = channel.side(false);
    let mut seq = 0;
    for &size in sizes {
        let rounds = trials.total() * latency_iters(size);
        for round in 0..rounds {
            seq += 1;
            if pattern == Pattern::Exchange {
                side.send(seq, src, size);
            }
            let received = side.recv(seq, dst, size, parent_gone(parent));
            let last = round + 1 == rounds;
            if received.is_err() || (last && dst[..size].iter().any(|&b| b != PARENT_BYTE)) {
                // SAFETY: async-signal-safe exit of the forked child.
                unsafe { libc::_exit(2) };
            }
            if pattern == Pattern::PingPong {
                side.send(seq, src, size);
            }
        }
    }
}

/// Single-copy ping-pong: each side publishes a sequence number while its payload stays in its
/// own private buffer; the other side waits for it and reads the payload with
/// `process_vm_readv`, then replies the same way. One copy per direction, plus a system call.
/// With `shared`, the two ends copy each message at once, as the engine's shared copies do:
/// the receiver reads the front half while the sender writes the back half straight into the
/// receiver's buffer with `process_vm_writev`, then publishes a second number. The buffers were
/// allocated before the fork, so they sit at the same address in both processes. Returns
/// one-way microseconds per size.
pub(super) fn single_copy_pingpong(sizes: &[usize], trials: Trials, shared: bool) -> io::Result<Vec<Summary>> {
    let max = sizes.iter().copied().max().unwrap_or(0);
    let channel = Channel::new(0)?;
    let parent_src = vec![PARENT_BYTE; max];
    let mut parent_dst = vec![0u8; max];
    let child_src = vec![CHILD_BYTE; max];
    let mut child_dst = vec![0u8; max];
    let (parent_addr, child_addr) = (parent_src.as_ptr() as usize, child_src.as_ptr() as usize);
    let (parent_dst_addr, child_dst_addr) = (parent_dst.as_ptr() as usize, child_dst.as_ptr() as usize);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    if shared {
        // The child writes into us: allow it where Yama restricts ptrace to ancestors.
        // SAFETY: prctl(PR_SET_PTRACER) only changes who may attach to this process.
        unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    }
    // Bytes the receiver reads; the sender writes the rest (none without `shared`).
    let front = |size: usize| if shared { (size / 2).next_multiple_of(4096).min(size) } else { size };
    // Sequence numbers per message: published, and (shared) the sender's half written.
    let step = if shared { 2 } else { 1 };
    let control = channel.control();

    let mut peer = Peer::spawn(|| {
        let mut seq = 0;
        for &size in sizes {
            let (to, rounds) = (front(size), trials.total() * latency_iters(size));
            for round in 0..rounds {
                seq += step;
                let mut ok = wait_at_least(&control.parent_seq.0, seq + 1 - step, parent_gone(parent)).is_ok()
                    && read_remote(parent, parent_addr, &mut child_dst[..to]).is_ok()
                    && wait_at_least(&control.parent_seq.0, seq, parent_gone(parent)).is_ok();
                let last = round + 1 == rounds;
                ok &= !(last && child_dst[..size].iter().any(|&b| b != PARENT_BYTE));
                if shared && ok {
                    control.child_seq.0.store(seq - 1, Ordering::Release);
                    ok = write_remote(parent, &child_src[to..size], parent_dst_addr + to).is_ok();
                }
                if !ok {
                    // SAFETY: async-signal-safe exit of the forked child.
                    unsafe { libc::_exit(2) };
                }
                control.child_seq.0.store(seq, Ordering::Release);
            }
        }
        // The parent reads our last reply out of `child_src` after we publish it: stay alive
        // (and keep the buffer) until it says it is done by publishing one more sequence number.
        let done = wait_at_least(&control.parent_seq.0, seq + 1, parent_gone(parent));
        black_box(&child_src);
        if done.is_err() {
            // SAFETY: async-signal-safe exit of the forked child.
            unsafe { libc::_exit(2) };
        }
    })?;

    let gone = |_| io::Error::other("single-copy floor peer died");
    let mut seq = 0;
    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (to, iters) = (front(size), latency_iters(size));
        let mut samples = Vec::with_capacity(trials.timed);
        parent_dst[..size].fill(0);
        for trial in 0..trials.total() {
            let start = Instant::now();
            for _ in 0..iters {
                seq += step;
                if shared {
                    control.parent_seq.0.store(seq - 1, Ordering::Release);
                    write_remote(peer.pid(), &parent_src[to..size], child_dst_addr + to)?;
                }
                control.parent_seq.0.store(seq, Ordering::Release);
                wait_at_least(&control.child_seq.0, seq + 1 - step, || !peer.alive()).map_err(gone)?;
                read_remote(peer.pid(), child_addr, &mut parent_dst[..to])?;
                wait_at_least(&control.child_seq.0, seq, || !peer.alive()).map_err(gone)?;
            }
            let elapsed = start.elapsed().as_secs_f64();
            if trial >= trials.warmup {
                samples.push(elapsed / iters as f64 / 2.0 * 1e6);
            }
        }
        if parent_dst[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("single-copy floor read wrong bytes at {size} B")));
        }
        results.push(trimmed(&samples).unwrap_or(Summary::MISSING));
    }
    black_box(&parent_src); // read by the child through process_vm_readv
    control.parent_seq.0.store(seq + 1, Ordering::Release); // done: the child may exit
    peer.join()?;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_cover_the_message_once() {
        assert_eq!(fragments(0).collect::<Vec<_>>(), vec![0..0]);
        assert_eq!(fragments(5).collect::<Vec<_>>(), vec![0..5]);
        assert_eq!(fragments(FRAGMENT).collect::<Vec<_>>(), vec![0..FRAGMENT]);
        let two = fragments(FRAGMENT + 1).collect::<Vec<_>>();
        assert_eq!(two, vec![0..FRAGMENT, FRAGMENT..FRAGMENT + 1]);
    }

    #[test]
    fn pingpong_and_exchange_deliver_every_size() {
        // Small trial counts: this checks the protocol (both sides verify the bytes), not speed.
        let trials = Trials { timed: 3, warmup: 1 };
        let sizes = [0, 1, FRAGMENT - 1, FRAGMENT, 3 * FRAGMENT + 7];
        for pattern in [Pattern::PingPong, Pattern::Exchange] {
            let results = run(&sizes, trials, pattern).unwrap();
            assert_eq!(results.len(), sizes.len());
            assert!(results.iter().all(|s| s.median > 0.0));
        }
        for shared in [false, true] {
            let single = single_copy_pingpong(&sizes, trials, shared).unwrap();
            assert!(single.iter().all(|s| s.median > 0.0));
        }
    }
}

//! The bare shared-memory channel between a process and its forked peer, and ping-pong and
//! exchange over it (see the module above for what each measures).

use std::hint::black_box;
use std::io;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::copy::read_remote;
use super::{CHILD_BYTE, PARENT_BYTE};
use crate::peer::{parent_gone, wait_at_least, PaddedSeq, Peer, SharedRegion};
use crate::plan::{latency_iters, Trials};
use crate::stats::{trimmed, Summary};

/// Control words at the start of the shared region, one writer each.
#[repr(C)]
pub(super) struct Control {
    /// Last sequence number the parent published (written by the parent only).
    pub(super) parent_seq: PaddedSeq,
    /// Last sequence number the child published (written by the child only).
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
        Ok(Channel {
            region: SharedRegion::new(PAYLOAD_OFFSET + 4 * slot_len)?,
            slot_len,
        })
    }

    pub(super) fn control(&self) -> &Control {
        // SAFETY: the region is page-aligned, zero-initialised (valid AtomicU64s) and at least
        // PAYLOAD_OFFSET bytes; Control is only accessed through atomics.
        unsafe { &*self.region.base().cast::<Control>() }
    }

    fn slot(&self, from_parent: bool, slot: usize) -> *mut u8 {
        let index = if from_parent { 0 } else { 2 } + slot;
        // SAFETY: index < 4, so the offset stays inside the region mapped in `new`.
        unsafe {
            self.region
                .base()
                .add(PAYLOAD_OFFSET + index * self.slot_len)
        }
    }

    /// One side of the channel: the parent's (`is_parent`) or the child's view.
    fn side(&self, is_parent: bool) -> Side<'_> {
        let c = self.control();
        let (mine, theirs) = if is_parent {
            (&c.parent_seq, &c.child_seq)
        } else {
            (&c.child_seq, &c.parent_seq)
        };
        Side {
            channel: self,
            is_parent,
            mine: &mine.0,
            theirs: &theirs.0,
        }
    }
}

struct Side<'a> {
    channel: &'a Channel,
    is_parent: bool,
    mine: &'a AtomicU64,
    theirs: &'a AtomicU64,
}

impl Side<'_> {
    /// Copies `len` bytes of `src` into slot `seq % 2` of our direction, then publishes `seq`.
    /// Slot reuse is safe without an extra ACK word: we publish `seq` only after receiving
    /// `seq - 1`, which the peer published only after copying out our `seq - 2`, the last user
    /// of the same slot.
    fn send(&self, seq: u64, src: &[u8], len: usize) {
        let dst = self.channel.slot(self.is_parent, (seq % 2) as usize);
        // SAFETY: len <= src.len() and len <= slot_len (sizes come from the plan the channel was
        // sized for); the slot is not being read by the peer (see above).
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, len) };
        self.mine.store(seq, Ordering::Release);
    }

    /// Waits until the peer has published `seq` (or later), then copies its payload out.
    fn recv(
        &self,
        seq: u64,
        dst: &mut [u8],
        len: usize,
        peer_gone: impl FnMut() -> bool,
    ) -> io::Result<()> {
        wait_at_least(self.theirs, seq, peer_gone)
            .map_err(|_| io::Error::other("floor peer died"))?;
        let src = self.channel.slot(!self.is_parent, (seq % 2) as usize);
        // SAFETY: the Acquire load in wait_at_least ordered the peer's payload stores before us;
        // the peer does not rewrite this slot until we publish `seq + 1`.
        unsafe { ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), len) };
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
    let mut peer = Peer::spawn(|| {
        child_loop(
            &channel,
            sizes,
            trials,
            pattern,
            &child_src,
            &mut child_dst,
            parent,
        )
    })?;

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
            return Err(io::Error::other(format!(
                "floor channel corrupted the payload at {size} B"
            )));
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
/// The buffers were allocated before the fork, so they sit at the same address in both
/// processes. Returns one-way microseconds per size.
pub(super) fn single_copy_pingpong(sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    let max = sizes.iter().copied().max().unwrap_or(0);
    let channel = Channel::new(0)?;
    let parent_src = vec![PARENT_BYTE; max];
    let mut parent_dst = vec![0u8; max];
    let child_src = vec![CHILD_BYTE; max];
    let mut child_dst = vec![0u8; max];
    let (parent_addr, child_addr) = (parent_src.as_ptr() as usize, child_src.as_ptr() as usize);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let control = channel.control();

    let mut peer = Peer::spawn(|| {
        let mut seq = 0;
        for &size in sizes {
            let rounds = trials.total() * latency_iters(size);
            for round in 0..rounds {
                seq += 1;
                let waited = wait_at_least(&control.parent_seq.0, seq, parent_gone(parent));
                let read = waited.is_ok()
                    && read_remote(parent, parent_addr, &mut child_dst[..size]).is_ok();
                let last = round + 1 == rounds;
                if !read || (last && child_dst[..size].iter().any(|&b| b != PARENT_BYTE)) {
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
                control.parent_seq.0.store(seq, Ordering::Release);
                wait_at_least(&control.child_seq.0, seq, || !peer.alive())
                    .map_err(|_| io::Error::other("single-copy floor peer died"))?;
                read_remote(peer.pid(), child_addr, &mut parent_dst[..size])?;
            }
            let elapsed = start.elapsed().as_secs_f64();
            if trial >= trials.warmup {
                samples.push(elapsed / iters as f64 / 2.0 * 1e6);
            }
        }
        if parent_dst[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!(
                "single-copy floor read wrong bytes at {size} B"
            )));
        }
        results.push(trimmed(&samples).unwrap_or(Summary::MISSING));
    }
    black_box(&parent_src); // read by the child through process_vm_readv
    control.parent_seq.0.store(seq + 1, Ordering::Release); // done: the child may exit
    peer.join()?;
    Ok(results)
}

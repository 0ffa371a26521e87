//! The floor: the bare channel every engine figure is compared against, measured in the same run.
//!
//! - Latency floor ([`pingpong`]): two processes (a `fork`ed pair) ping-pong through a shared
//!   mapping, one sequence word per direction on its own 128-byte line and one payload area per
//!   direction. A send copies the payload in with plain stores and publishes the sequence number
//!   with a Release store; the receiver spins on an Acquire load, then copies the payload out.
//!   This is exactly the billboard's fast-box protocol with nothing else: no matching, no
//!   envelope, no progress engine, so no message layer over shared memory can beat it.
//! - Exchange floor ([`exchange`]): the same channel with both sides sending at once.
//! - Bandwidth floor ([`copy_bandwidth`]): `memcpy` within one process (the cost of one copy,
//!   cache-resident and not) and `process_vm_readv` from the forked peer's memory (the
//!   single-copy cross-memory-attach path of large messages).
//!
//! Every function here forks its own peer and reaps it before returning.

use std::hint::black_box;
use std::io;
use std::ptr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::peer::{parent_gone, wait_at_least, PaddedSeq, Peer, SharedRegion};
use crate::plan::{latency_iters, Trials};
use crate::stats::{rate_gbps, trimmed, Summary};

/// Byte the parent's payloads are filled with; the child's are [`CHILD_BYTE`]. Each side checks
/// it received the other's bytes, so a broken floor cannot report a flattering figure.
const PARENT_BYTE: u8 = 0x5a;
const CHILD_BYTE: u8 = 0xc5;

/// Control words at the start of the shared region, one writer each.
#[repr(C)]
struct Control {
    /// Last sequence number the parent published (written by the parent only).
    parent_seq: PaddedSeq,
    /// Last sequence number the child published (written by the child only).
    child_seq: PaddedSeq,
}

/// Payload areas start on a page after the control words.
const PAYLOAD_OFFSET: usize = 4096;
const _: () = assert!(std::mem::size_of::<Control>() <= PAYLOAD_OFFSET);

/// The shared channel: control words, then two payload slots per direction (parent-to-child
/// slots 0 and 1, then child-to-parent slots 0 and 1), each `slot_len` bytes, page-aligned.
/// Two slots alternate by sequence parity so that in an exchange a sender never overwrites a
/// slot the receiver may still be copying (see [`Side::send`]).
struct Channel {
    region: SharedRegion,
    slot_len: usize,
}

impl Channel {
    fn new(max_size: usize) -> io::Result<Channel> {
        let slot_len = max_size.max(1).next_multiple_of(4096);
        Ok(Channel {
            region: SharedRegion::new(PAYLOAD_OFFSET + 4 * slot_len)?,
            slot_len,
        })
    }

    fn control(&self) -> &Control {
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
    mine: &'a std::sync::atomic::AtomicU64,
    theirs: &'a std::sync::atomic::AtomicU64,
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
enum Pattern {
    PingPong,
    Exchange,
}

/// Latency floor: one-way time of the bare shared-memory ping-pong per size, in microseconds
/// (round trip / 2, trimmed statistics over `trials.timed` trials).
pub fn pingpong(sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    run_channel(sizes, trials, Pattern::PingPong)
}

/// Exchange floor: both sides send and receive through the bare channel at once; time per
/// iteration / 2 in microseconds, as the pairwise exchange table of seed 001 reports it.
pub fn exchange(sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    run_channel(sizes, trials, Pattern::Exchange)
}

fn run_channel(sizes: &[usize], trials: Trials, pattern: Pattern) -> io::Result<Vec<Summary>> {
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

/// Bandwidth floor at one size, in GB/s (1e9 bytes/s). For rates the `min` field of a
/// [`Summary`] holds the best trial (computed from the shortest time).
#[derive(Clone, Copy, Debug)]
pub struct CopyFloor {
    /// `memcpy` of one buffer to another, both reused: cache-resident up to the cache size.
    pub memcpy: Summary,
    /// `memcpy` walking through buffers far larger than the last-level cache: never resident.
    pub memcpy_cold: Summary,
    /// `process_vm_readv` from the forked peer's buffer (looping on partial reads).
    pub vm_readv: Summary,
}

impl CopyFloor {
    /// Not measured (on ranks other than 0, or when the floor failed).
    pub const MISSING: CopyFloor = CopyFloor {
        memcpy: Summary::MISSING,
        memcpy_cold: Summary::MISSING,
        vm_readv: Summary::MISSING,
    };

    /// The floor figure of the bandwidth tables: the faster of one `memcpy` and one
    /// `process_vm_readv`. A transport moves each byte at least once, so neither a copy-through
    /// nor a single-copy protocol can sustain more than this.
    pub fn best_median(&self) -> f64 {
        self.memcpy.median.max(self.vm_readv.median)
    }
}

/// Bytes moved per bandwidth-floor trial: enough for small copies to take microseconds.
const COPY_TRIAL_BYTES: usize = 64 << 10;
/// Caps on copies per trial: small `memcpy`s cost nanoseconds each, small `process_vm_readv`s a
/// system call each, so the latter needs fewer to fill a trial.
const MEMCPY_MAX_COPIES: usize = 1024;
const VM_READV_MAX_COPIES: usize = 64;

fn copies_per_trial(size: usize, cap: usize) -> usize {
    (COPY_TRIAL_BYTES / size.max(1)).clamp(1, cap)
}

/// Size of each of the two pools the cold `memcpy` walks: twice the last-level cache (so a
/// line is evicted before it is reused), at least 64 MiB, at most 512 MiB (a VM may report its
/// host's whole L3; 1 GiB in all is as much as a shared machine should be asked for).
fn cold_pool_bytes() -> usize {
    // SAFETY: sysconf has no preconditions.
    let l3 = unsafe { libc::sysconf(libc::_SC_LEVEL3_CACHE_SIZE) };
    let l3 = usize::try_from(l3).unwrap_or(0);
    (2 * l3).clamp(64 << 20, 512 << 20)
}

/// Bandwidth floor for each size (size 0 gives NaNs: no bytes, no rate).
pub fn copy_bandwidth(sizes: &[usize], trials: Trials) -> io::Result<Vec<CopyFloor>> {
    let max = sizes.iter().copied().max().unwrap_or(0).max(1);
    let memcpy: Vec<Summary> = sizes.iter().map(|&s| memcpy_hot(s, max, trials)).collect();
    let memcpy_cold = memcpy_cold(sizes, trials);
    let vm_readv = vm_readv(sizes, max, trials)?;
    Ok((0..sizes.len())
        .map(|i| CopyFloor {
            memcpy: memcpy[i],
            memcpy_cold: memcpy_cold[i],
            vm_readv: vm_readv[i],
        })
        .collect())
}

/// Times `trials` batches of `copies` operations of `size` bytes each and returns GB/s.
fn time_rate(
    size: usize,
    copies: usize,
    trials: Trials,
    mut op: impl FnMut(usize) -> io::Result<()>,
) -> io::Result<Summary> {
    if size == 0 {
        return Ok(Summary::MISSING);
    }
    let mut times = Vec::with_capacity(trials.timed);
    let mut n = 0;
    for trial in 0..trials.total() {
        let start = Instant::now();
        for _ in 0..copies {
            op(n)?;
            n += 1;
        }
        if trial >= trials.warmup {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    let bytes = (size * copies) as f64;
    Ok(trimmed(&times).map_or(Summary::MISSING, |t| rate_gbps(t, bytes)))
}

fn memcpy_hot(size: usize, max: usize, trials: Trials) -> Summary {
    let src = vec![PARENT_BYTE; max];
    let mut dst = vec![0u8; max];
    let copies = copies_per_trial(size, MEMCPY_MAX_COPIES);
    let rate = time_rate(size, copies, trials, |_| {
        // black_box hides that every copy is the same, so none is hoisted or merged away.
        let (s, d) = (black_box(src.as_ptr()), black_box(dst.as_mut_ptr()));
        // SAFETY: both buffers hold `max >= size` bytes and do not overlap.
        unsafe { ptr::copy_nonoverlapping(s, d, size) };
        black_box(d);
        Ok(())
    });
    rate.unwrap_or(Summary::MISSING)
}

fn memcpy_cold(sizes: &[usize], trials: Trials) -> Vec<Summary> {
    let pool = cold_pool_bytes().max(sizes.iter().copied().max().unwrap_or(0) * 4);
    // Both pools are written now, so no page is first touched (faulted in) while timed.
    let src = vec![PARENT_BYTE; pool];
    let mut dst = vec![CHILD_BYTE; pool];
    sizes
        .iter()
        .map(|&size| {
            // Successive copies start a page-rounded stride apart (plus one line, so small
            // copies do not all map to the same cache set) and wrap around the pool.
            let stride = size.next_multiple_of(4096) + 64;
            let positions = (pool - size) / stride;
            let copies = copies_per_trial(size, MEMCPY_MAX_COPIES);
            let rate = time_rate(size, copies, trials, |n| {
                let offset = (n % positions) * stride;
                let (s, d) = (black_box(src.as_ptr()), black_box(dst.as_mut_ptr()));
                // SAFETY: offset + size <= pool for both buffers, which do not overlap.
                unsafe { ptr::copy_nonoverlapping(s.add(offset), d.add(offset), size) };
                black_box(d);
                Ok(())
            });
            rate.unwrap_or(Summary::MISSING)
        })
        .collect()
}

/// `process_vm_readv` from a forked child: the child owns its copy of `remote` (it rewrites it
/// after the fork, so the pages are its own, not shared copy-on-write with ours), signals ready
/// and sleeps until we are done. Its buffer has the same address in both processes.
fn vm_readv(sizes: &[usize], max: usize, trials: Trials) -> io::Result<Vec<Summary>> {
    let channel = Channel::new(0)?;
    let mut remote = vec![0u8; max];
    let mut local = vec![0u8; max];
    let remote_addr = remote.as_ptr() as usize;
    let mut child = Peer::spawn(|| {
        remote.fill(CHILD_BYTE);
        let c = channel.control();
        c.child_seq.0.store(1, Ordering::Release);
        // Sleep, not spin: the child must not compete with the reader for the two CPUs.
        while c.parent_seq.0.load(Ordering::Acquire) == 0 {
            // SAFETY: nanosleep with a valid timespec is async-signal-safe.
            unsafe {
                libc::nanosleep(
                    &libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 1_000_000,
                    },
                    ptr::null_mut(),
                )
            };
        }
    })?;
    let control = channel.control();
    wait_at_least(&control.child_seq.0, 1, || !child.alive())
        .map_err(|_| io::Error::other("vm_readv peer died"))?;
    let pid = child.pid();

    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let copies = copies_per_trial(size, VM_READV_MAX_COPIES);
        let rate = time_rate(size, copies, trials, |_| {
            read_remote(pid, remote_addr, &mut local[..size])
        });
        match rate {
            Ok(summary) => results.push(summary),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!(
                    "bb-bench: process_vm_readv refused (EPERM); vm_readv floor not measured"
                );
                results.resize(sizes.len(), Summary::MISSING);
                break;
            }
            Err(e) => return Err(e),
        }
        if size > 0 && local[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!(
                "process_vm_readv read wrong bytes at {size} B"
            )));
        }
    }
    control.parent_seq.0.store(1, Ordering::Release);
    child.join()?;
    Ok(results)
}

/// Reads `local.len()` bytes at `remote_addr` in process `pid`, looping on partial reads (the
/// kernel may stop at a page it cannot pin, or split very large requests).
fn read_remote(pid: libc::pid_t, remote_addr: usize, local: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < local.len() {
        let rest = local.len() - done;
        let local_iov = libc::iovec {
            iov_base: local[done..].as_mut_ptr().cast(),
            iov_len: rest,
        };
        let remote_iov = libc::iovec {
            iov_base: (remote_addr + done) as *mut libc::c_void,
            iov_len: rest,
        };
        // SAFETY: the local iovec covers memory we own mutably; the kernel checks the remote one.
        let n = unsafe { libc::process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0) };
        match n {
            -1 => return Err(io::Error::last_os_error()),
            0 => return Err(io::Error::other("process_vm_readv made no progress")),
            n => done += n as usize,
        }
    }
    black_box(local.as_ptr());
    Ok(())
}

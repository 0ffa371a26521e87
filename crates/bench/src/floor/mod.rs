//! The floor: the bare channel every engine figure is compared against, measured in the same run.
//!
//! - Latency floor ([`pingpong`]), the faster at each size of two bare ping-pongs between a
//!   `fork`ed pair of processes:
//!   - *copy*: through a shared mapping, one counter word per direction on its own 128-byte
//!     line and one payload area per direction. A send copies the payload in with plain stores
//!     and publishes it with a Release store of the counter; the receiver spins on an Acquire
//!     load, then copies the payload out. This is the billboard's fast-box protocol with nothing
//!     else: no matching, no envelope, no progress engine. Messages above 16 KiB go in 16 KiB
//!     fragments, each published as it lands, so copy-in and copy-out overlap (pipelining).
//!   - *single copy*: the same sequence words, but the receiver copies the payload straight out
//!     of the sender's private buffer with `process_vm_readv` (cross-memory attach), as the
//!     rendezvous path of large messages does and as MPICH and Open MPI do above their eager
//!     limits. One copy instead of two wins from a few KiB on.
//!   - *pipe*: two processes blocked in `read` on a pipe each, woken by the other's `write`:
//!     the kernel's hand-over, the floor where spinning loses (two processes on one core).
//!   - *TCP*, *UDP* (shown beside, not part of the fastest): the same blocking ping-pong over a
//!     loopback TCP connection and a pair of connected UDP sockets, the one-core floors of the
//!     TCP and UDP routes (each socket's protocol stack on top of the hand-over).
//! - Exchange floor ([`exchange`]): the copy channel with both sides sending at once.
//! - Bandwidth floor ([`copy_bandwidth`]): `memcpy` within one process (the cost of one copy,
//!   cache-resident and not), `process_vm_readv` from the forked peer's memory, and both
//!   processes copying halves of each message at once (the engine's shared copy, bare).
//!
//! - TCP floor ([`tcp`]): raw TCP ping-pong and streaming between two processes that may be on
//!   two hosts, the floor of the TCP route (`bb-bench tcp-floor`, started on both ends).
//! - UDP floor ([`udp`]): raw UDP ping-pong and streaming, polled, per datagram size, the floor
//!   of the UDP route (`bb-bench udp-floor`, started on both ends).
//!
//! Every function here but the TCP and UDP floors' forks its own peer and reaps it before returning; see [`crate::peer`].
//! The figures assume two otherwise idle CPUs: [`warn_if_busy`] says when they are not.

mod blocking;
mod channel;
mod copy;
pub mod tcp;
pub mod udp;

use std::io;

use crate::plan::Trials;
use crate::stats::Summary;

/// Byte the parent's payloads are filled with; the child's are [`CHILD_BYTE`]. Each side checks
/// it received the other's bytes, so a broken floor cannot report a flattering figure.
const PARENT_BYTE: u8 = 0x5a;
const CHILD_BYTE: u8 = 0xc5;

/// Prints a warning on stderr when other runnable tasks would share the two CPUs the floor's
/// spinning pair needs: the floor is then inflated (beside one busy process a 0 B one-way time
/// went from 0.14 us to 24 us on the 2-vCPU development machine). Looks at the instantaneous
/// count of runnable tasks (`/proc/loadavg`, field 4), the least of a few samples so that a
/// momentary burst does not warn.
pub fn warn_if_busy() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runnable = (0..5)
        .filter_map(|i| {
            if i > 0 {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let text = std::fs::read_to_string("/proc/loadavg").ok()?;
            let field = text.split_whitespace().nth(3)?;
            field.split('/').next()?.parse::<usize>().ok()
        })
        .min();
    // `runnable` counts this process too; the floor adds one more spinning process.
    if let Some(runnable) = runnable {
        let others = runnable.saturating_sub(1);
        if others + 2 > cpus {
            eprintln!(
                "bb-bench: warning: {others} other runnable task(s) on {cpus} CPU(s); the floor's two \
                 spinning processes will be descheduled and its figures inflated"
            );
        }
    }
}

/// Latency floor at one size: one-way microseconds (round trip / 2).
#[derive(Clone, Copy, Debug)]
pub struct LatencyFloor {
    /// Ping-pong copying through shared memory (copy in, copy out).
    pub copy: Summary,
    /// Ping-pong where the receiver reads the sender's buffer with `process_vm_readv`.
    pub single_copy: Summary,
    /// The same, with the sender writing the back half into the receiver's buffer
    /// (`process_vm_writev`) while the receiver reads the front half: two cores per message.
    pub shared_copy: Summary,
    /// Blocking ping-pong through pipes (one byte at 0 B).
    pub pipe: Summary,
    /// Blocking ping-pong over loopback TCP (one byte at 0 B), and over connected UDP sockets
    /// (one datagram, up to 65,507 B): not in [`LatencyFloor::best_median`], never below the pipe.
    pub tcp: Summary,
    pub udp: Summary,
}

impl LatencyFloor {
    /// Not measured (on ranks other than 0, or when the floor failed).
    pub const MISSING: LatencyFloor = LatencyFloor {
        copy: Summary::MISSING,
        single_copy: Summary::MISSING,
        shared_copy: Summary::MISSING,
        pipe: Summary::MISSING,
        tcp: Summary::MISSING,
        udp: Summary::MISSING,
    };

    /// The floor figure of the latency tables: the fastest of the bare protocols (a message
    /// layer may choose any at each size, so it can beat none).
    pub fn best_median(&self) -> f64 {
        self.copy.median.min(self.single_copy.median).min(self.shared_copy.median).min(self.pipe.median)
    }
}

/// Latency floor per size: the bare ping-pongs (trimmed statistics over `trials.timed` trials).
pub fn pingpong(sizes: &[usize], trials: Trials) -> io::Result<Vec<LatencyFloor>> {
    let copy = channel::run(sizes, trials, channel::Pattern::PingPong)?;
    let single_copy = channel::single_copy_pingpong(sizes, trials, false)?;
    let shared_copy = channel::single_copy_pingpong(sizes, trials, true)?;
    let pipe = blocking::pingpong(blocking::Kind::Pipe, sizes, trials)?;
    let tcp = blocking::pingpong(blocking::Kind::Tcp, sizes, trials)?;
    let udp = blocking::pingpong(blocking::Kind::Udp, sizes, trials)?;
    Ok((0..sizes.len())
        .map(|i| LatencyFloor {
            copy: copy[i],
            single_copy: single_copy[i],
            shared_copy: shared_copy[i],
            pipe: pipe[i],
            tcp: tcp[i],
            udp: udp[i],
        })
        .collect())
}

/// Exchange floor: both sides send and receive through the copy channel at once; time per
/// iteration / 2 in microseconds, as the pairwise exchange table of seed 001 reports it.
pub fn exchange(sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    channel::run(sizes, trials, channel::Pattern::Exchange)
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
    /// We read the front half with `process_vm_readv` while the peer writes the back half with
    /// `process_vm_writev`: two cores on one message.
    pub vm_shared: Summary,
}

impl CopyFloor {
    /// Not measured (on ranks other than 0, or when the floor failed).
    pub const MISSING: CopyFloor = CopyFloor {
        memcpy: Summary::MISSING,
        memcpy_cold: Summary::MISSING,
        vm_readv: Summary::MISSING,
        vm_shared: Summary::MISSING,
    };

    /// The floor figure of the bandwidth tables: the fastest of one `memcpy`, one
    /// `process_vm_readv`, and the two halves copied at once. A transport moves each byte at
    /// least once, with at most two cores, so no protocol can sustain more than this.
    pub fn best_median(&self) -> f64 {
        self.memcpy.median.max(self.vm_readv.median).max(self.vm_shared.median)
    }
}

/// Bandwidth floor for each size (size 0 gives NaNs: no bytes, no rate).
pub fn copy_bandwidth(sizes: &[usize], trials: Trials) -> io::Result<Vec<CopyFloor>> {
    let max = sizes.iter().copied().max().unwrap_or(0).max(1);
    let memcpy: Vec<Summary> = sizes.iter().map(|&s| copy::memcpy_hot(s, max, trials)).collect();
    let memcpy_cold = copy::memcpy_cold(sizes, trials);
    let vm_readv = copy::vm_readv(sizes, max, trials)?;
    let vm_shared = copy::vm_shared(sizes, max, trials)?;
    Ok((0..sizes.len())
        .map(|i| CopyFloor {
            memcpy: memcpy[i],
            memcpy_cold: memcpy_cold[i],
            vm_readv: vm_readv[i],
            vm_shared: vm_shared[i],
        })
        .collect())
}

//! Copy bandwidth: `memcpy` in one process, `process_vm_readv` from a forked peer, and both
//! processes copying halves at once (`process_vm_readv` here, `process_vm_writev` there).

use std::hint::black_box;
use std::io;
use std::ptr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::channel::Channel;
use super::{CHILD_BYTE, PARENT_BYTE};
use crate::peer::{parent_gone, wait_at_least, Peer};
use crate::plan::Trials;
use crate::stats::{rate_gbps, trimmed, Summary};

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

pub(super) fn memcpy_hot(size: usize, max: usize, trials: Trials) -> Summary {
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

pub(super) fn memcpy_cold(sizes: &[usize], trials: Trials) -> Vec<Summary> {
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
pub(super) fn vm_readv(sizes: &[usize], max: usize, trials: Trials) -> io::Result<Vec<Summary>> {
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
            unsafe { libc::nanosleep(&libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 }, ptr::null_mut()) };
        }
    })?;
    let control = channel.control();
    wait_at_least(&control.child_seq.0, 1, || !child.alive()).map_err(|_| io::Error::other("vm_readv peer died"))?;
    let pid = child.pid();

    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let copies = copies_per_trial(size, VM_READV_MAX_COPIES);
        let rate = time_rate(size, copies, trials, |_| read_remote(pid, remote_addr, &mut local[..size]));
        match rate {
            Ok(summary) => results.push(summary),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!("bb-bench: process_vm_readv refused (EPERM); vm_readv floor not measured");
                results.resize(sizes.len(), Summary::MISSING);
                break;
            }
            Err(e) => return Err(e),
        }
        if size > 0 && local[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("process_vm_readv read wrong bytes at {size} B")));
        }
    }
    control.parent_seq.0.store(1, Ordering::Release);
    child.join()?;
    Ok(results)
}

/// Both ends copy at once, as the engine's shared copies do. For each copy we read the front
/// half of the forked child's buffer with `process_vm_readv` while the child writes the back
/// half into ours with `process_vm_writev`; a copy ends when both halves are in. The go word
/// carries the copy's number and size (`n << 40 | size`), the child answers with `n`.
pub(super) fn vm_shared(sizes: &[usize], max: usize, trials: Trials) -> io::Result<Vec<Summary>> {
    const SIZE_BITS: u32 = 40;
    const STOP: u64 = u64::MAX;
    let channel = Channel::new(0)?;
    let mut remote = vec![0u8; max];
    let mut local = vec![0u8; max];
    let (remote_addr, local_addr) = (remote.as_ptr() as usize, local.as_mut_ptr() as usize);
    // The child writes into us: allow it where Yama restricts ptrace to ancestors.
    // SAFETY: prctl(PR_SET_PTRACER) only changes who may attach to this process.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    let parent = std::process::id() as libc::pid_t;
    let half = |size: usize| (size / 2).next_multiple_of(4096).min(size);
    let mut child = Peer::spawn(|| {
        remote.fill(CHILD_BYTE);
        let c = channel.control();
        c.child_seq.0.store(1, Ordering::Release);
        let mut done = 1;
        loop {
            if wait_at_least(&c.parent_seq.0, (done + 1) << SIZE_BITS, parent_gone(parent)).is_err() {
                return;
            }
            let go = c.parent_seq.0.load(Ordering::Acquire);
            if go == STOP {
                return;
            }
            let size = (go & ((1 << SIZE_BITS) - 1)) as usize;
            let from = half(size);
            if write_remote(parent, &remote[from..size], local_addr + from).is_err() {
                return;
            }
            done = go >> SIZE_BITS;
            c.child_seq.0.store(done, Ordering::Release);
        }
    })?;
    let control = channel.control();
    wait_at_least(&control.child_seq.0, 1, || !child.alive()).map_err(|_| io::Error::other("vm_shared peer died"))?;
    let pid = child.pid();

    let mut n: u64 = 1;
    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let copies = copies_per_trial(size, VM_READV_MAX_COPIES);
        let to = half(size);
        let rate = time_rate(size, copies, trials, |_| {
            n += 1;
            control.parent_seq.0.store(n << SIZE_BITS | size as u64, Ordering::Release);
            read_remote(pid, remote_addr, &mut local[..to])?;
            wait_at_least(&control.child_seq.0, n, || !child.alive())
                .map_err(|_| io::Error::other("vm_shared peer died (its process_vm_writev refused?)"))
        });
        match rate {
            Ok(summary) => results.push(summary),
            Err(e) => {
                eprintln!("bb-bench: shared copy floor not measured ({e})");
                results.resize(sizes.len(), Summary::MISSING);
                break;
            }
        }
        if size > 0 && local[..size].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("shared copy moved wrong bytes at {size} B")));
        }
        local[..size].fill(0);
    }
    control.parent_seq.0.store(STOP, Ordering::Release);
    child.join()?;
    Ok(results)
}

/// Writes `local` to `remote_addr` in process `pid` (`process_vm_writev`).
pub(super) fn write_remote(pid: libc::pid_t, local: &[u8], remote_addr: usize) -> io::Result<()> {
    // SAFETY: `local` is readable for its length, and a write only reads the local side.
    unsafe { cross_copy(pid, local.as_ptr().cast_mut(), remote_addr, local.len(), true) }
}

/// Reads `local.len()` bytes at `remote_addr` in process `pid` (`process_vm_readv`).
pub(super) fn read_remote(pid: libc::pid_t, remote_addr: usize, local: &mut [u8]) -> io::Result<()> {
    // SAFETY: `local` is ours to write for its length.
    unsafe { cross_copy(pid, local.as_mut_ptr(), remote_addr, local.len(), false)? };
    black_box(local.as_ptr());
    Ok(())
}

/// Moves `len` bytes between `local` and `remote_addr` in process `pid`, with
/// `process_vm_writev` (`write`) or `process_vm_readv`, looping on partial transfers (the
/// kernel may stop at a page it cannot pin, or split very large requests).
///
/// # Safety
/// `local..local+len` is readable (`write`) or writable; the kernel checks the remote range.
unsafe fn cross_copy(pid: libc::pid_t, local: *mut u8, remote_addr: usize, len: usize, write: bool) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let rest = len - done;
        let local_iov = libc::iovec { iov_base: local.wrapping_add(done).cast(), iov_len: rest };
        let remote_iov = libc::iovec { iov_base: (remote_addr + done) as *mut libc::c_void, iov_len: rest };
        let n = if write {
            libc::process_vm_writev(pid, &local_iov, 1, &remote_iov, 1, 0)
        } else {
            libc::process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0)
        };
        match n {
            -1 => return Err(io::Error::last_os_error()),
            0 => return Err(io::Error::other("process_vm_readv/writev made no progress")),
            n => done += n as usize,
        }
    }
    Ok(())
}

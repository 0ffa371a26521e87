//! The blocking floor: a ping-pong through two pipes between a process and its forked peer,
//! each side blocked in `read` until the other writes. Where the spinning floors lose (two
//! processes on one core, a spinner keeping the core its peer needs), this is what the kernel's
//! own hand-over costs: a write that wakes the reader, a read that sleeps.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;
use std::time::Instant;

use super::{CHILD_BYTE, PARENT_BYTE};
use crate::peer::Peer;
use crate::plan::{latency_iters, Trials};
use crate::stats::{trimmed, Summary};

/// One-way microseconds (round trip / 2) per size; 0 B moves one byte (a pipe has no empty
/// message).
pub(super) fn pingpong(sizes: &[usize], trials: Trials) -> io::Result<Vec<Summary>> {
    let max = sizes.iter().copied().max().unwrap_or(0).max(1);
    let (mut down_r, mut down_w) = pipe()?;
    let (mut up_r, mut up_w) = pipe()?;
    let mut inbox = vec![0u8; max];
    let mut child_box = vec![0u8; max];
    let (parent_msg, child_msg) = (vec![PARENT_BYTE; max], vec![CHILD_BYTE; max]);
    let peer = Peer::spawn(|| {
        for &size in sizes {
            let len = size.max(1);
            for _ in 0..trials.total() * latency_iters(size) {
                let ok = down_r.read_exact(&mut child_box[..len]).is_ok()
                    && child_box[..len].iter().all(|&b| b == PARENT_BYTE)
                    && up_w.write_all(&child_msg[..len]).is_ok();
                if !ok {
                    // SAFETY: async-signal-safe exit of the forked child.
                    unsafe { libc::_exit(2) };
                }
            }
        }
    })?;
    let mut results = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (len, iters) = (size.max(1), latency_iters(size));
        let mut samples = Vec::with_capacity(trials.timed);
        for trial in 0..trials.total() {
            let start = Instant::now();
            for _ in 0..iters {
                down_w.write_all(&parent_msg[..len])?;
                up_r.read_exact(&mut inbox[..len])?;
            }
            if trial >= trials.warmup {
                samples.push(start.elapsed().as_secs_f64() / iters as f64 / 2.0 * 1e6);
            }
        }
        if inbox[..len].iter().any(|&b| b != CHILD_BYTE) {
            return Err(io::Error::other(format!("pipe floor read wrong bytes at {size} B")));
        }
        results.push(trimmed(&samples).unwrap_or(Summary::MISSING));
    }
    peer.join()?;
    Ok(results)
}

/// A pipe's (read end, write end).
fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pingpong_delivers_every_size() {
        let sizes = [0, 1, 100_000];
        let got = pingpong(&sizes, Trials { timed: 3, warmup: 1 }).unwrap();
        assert_eq!(got.len(), sizes.len());
        assert!(got.iter().all(|s| s.median > 0.0));
    }
}

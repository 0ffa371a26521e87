//! A forked peer process and the shared memory it talks through: the raw material of the floor.
//!
//! The floor must be the bare channel with nothing of Billboard in it, so it uses its own
//! anonymous shared mapping (`MAP_SHARED | MAP_ANONYMOUS`, inherited across `fork`, gone when both
//! processes unmap or exit: nothing can be left in `/dev/shm`) and a child forked from the
//! measuring process. The child is killed and reaped when its [`Peer`] handle drops, panics
//! included, and dies with its parent (`PR_SET_PDEATHSIG`) if the parent is killed outright.
//!
//! The parent may be multi-threaded (the engine may run threads), so the child only touches
//! memory allocated before the fork, atomics, and async-signal-safe calls, then `_exit`s.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

/// A sequence word alone on its 128-byte line: Intel's adjacent-line prefetcher pulls 64-byte
/// lines in pairs, so 64-byte padding would still share a line pair with the other side's word.
#[repr(C, align(128))]
pub struct PaddedSeq(pub AtomicU64);

const _: () = assert!(std::mem::size_of::<PaddedSeq>() == 128);

/// An anonymous shared mapping, inherited by a forked child at the same address.
pub struct SharedRegion {
    base: *mut u8,
    len: usize,
}

impl SharedRegion {
    /// Maps `len` zeroed bytes (page-aligned, so any `#[repr(C)]` header fits at offset 0).
    pub fn new(len: usize) -> io::Result<SharedRegion> {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses aliases nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedRegion { base: ptr.cast(), len })
    }

    /// Start of the mapping; valid for `len()` bytes while `self` lives.
    pub fn base(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; no reference into it outlives `self`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A forked child running a closure. Dropping the handle kills and reaps the child.
pub struct Peer {
    pid: libc::pid_t,
    /// Wait status once the child has been reaped (by `alive` or `join`).
    reaped: Option<libc::c_int>,
}

impl Peer {
    /// Forks; the child runs `body` and exits with 0 (101 if `body` panicked) without returning
    /// into the caller, running no destructors and flushing no stdio buffers of the parent's.
    ///
    /// `body` must only touch memory allocated before this call, atomics and async-signal-safe
    /// system calls (the parent may have other threads, whose locks the child inherits held).
    pub fn spawn(body: impl FnOnce()) -> io::Result<Peer> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child branch below only runs `body` (restricted as documented) and `_exit`s.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // SAFETY: prctl and getppid are async-signal-safe; dying with the parent keeps a
                // spinning child from outliving a parent killed by SIGKILL.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(1); // the parent died before prctl took effect
                    }
                }
                let code = if catch_unwind(AssertUnwindSafe(body)).is_ok() { 0 } else { 101 };
                // SAFETY: leaves the child without unwinding into the parent's stack frames.
                unsafe { libc::_exit(code) }
            }
            pid => Ok(Peer { pid, reaped: None }),
        }
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Whether the child is still running (reaps it if it has ended).
    pub fn alive(&mut self) -> bool {
        if self.reaped.is_some() {
            return false;
        }
        let mut status = 0;
        // SAFETY: waits on our own child only, without blocking.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if r == self.pid {
            self.reaped = Some(status);
        } else if r == -1 {
            self.reaped = Some(-1); // not our child any more: nothing left to reap
        }
        self.reaped.is_none()
    }

    /// Waits for the child to exit; an error if it did not exit with status 0.
    pub fn join(mut self) -> io::Result<()> {
        let status = match self.reaped {
            Some(status) => status,
            None => {
                let mut status = 0;
                // SAFETY: waits on our own child only.
                let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
                if r == -1 {
                    return Err(io::Error::last_os_error());
                }
                self.reaped = Some(status);
                status
            }
        };
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            Ok(())
        } else {
            Err(io::Error::other(format!("floor peer {} ended abnormally (wait status {status:#x})", self.pid)))
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            // SAFETY: signals and reaps our own child; its pid cannot have been reused while it
            // is unreaped.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// The peer was found dead while we waited for it.
#[derive(Debug)]
pub struct PeerGone;

/// Spins until `word >= target` (Acquire, so everything written before the matching Release
/// store is visible). Pure spinning first: that is what the floor measures. After
/// [`SPIN_BEFORE_YIELD`] polls the wait yields the CPU, as a two-vCPU machine shared with other
/// work may have descheduled the peer; every [`POLLS_PER_CHECK`] polls after that it asks
/// `peer_gone`, so a dead peer ends the wait instead of hanging it.
pub fn wait_at_least(word: &AtomicU64, target: u64, mut peer_gone: impl FnMut() -> bool) -> Result<(), PeerGone> {
    let mut polls: u64 = 0;
    while word.load(Ordering::Acquire) < target {
        polls += 1;
        if polls < SPIN_BEFORE_YIELD {
            std::hint::spin_loop();
            continue;
        }
        // SAFETY: sched_yield has no preconditions and is async-signal-safe.
        unsafe { libc::sched_yield() };
        if polls % POLLS_PER_CHECK == 0 && peer_gone() {
            // The peer may have stored its last word and then exited while we were yielding:
            // its store precedes its exit, which we just observed, so one more load decides.
            return if word.load(Ordering::Acquire) >= target { Ok(()) } else { Err(PeerGone) };
        }
    }
    Ok(())
}

/// Polls spent spinning before yielding: some tens of microseconds (a `pause` costs ~10-140
/// cycles depending on the CPU), far above a small-message round trip, so the floor of small
/// messages never yields when the two CPUs are free. When they are not (another job on the
/// machine), yielding early lets a peer queued on our CPU run instead of us burning our slice:
/// with 65536 polls a full `floor` run took 80 s beside one busy process instead of 4 s.
const SPIN_BEFORE_YIELD: u64 = 1 << 11;
/// Yielding polls between two liveness checks of the peer (each check is a system call).
const POLLS_PER_CHECK: u64 = 1 << 10;

/// A `peer_gone` check for the child: the parent is gone when we have been re-parented.
pub fn parent_gone(parent: libc::pid_t) -> impl FnMut() -> bool {
    // SAFETY: getppid has no preconditions and is async-signal-safe.
    move || unsafe { libc::getppid() } != parent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_sees_the_shared_region_and_exits_cleanly() {
        let region = SharedRegion::new(4096).unwrap();
        let word = region.base().cast::<PaddedSeq>();
        // SAFETY: the region is page-aligned, zeroed and outlives both uses.
        let word = unsafe { &*word };
        let peer = Peer::spawn(|| word.0.store(42, Ordering::Release)).unwrap();
        wait_at_least(&word.0, 42, || false).unwrap();
        peer.join().unwrap();
    }

    #[test]
    fn dropping_a_peer_kills_and_reaps_it() {
        let peer = Peer::spawn(|| loop {
            std::hint::spin_loop();
        })
        .unwrap();
        let pid = peer.pid();
        drop(peer);
        // SAFETY: signal 0 only probes; the pid was our reaped child, so ESRCH is expected.
        let r = unsafe { libc::kill(pid, 0) };
        assert_eq!(r, -1);
    }

    #[test]
    fn join_after_alive_reaped_the_child() {
        let mut peer = Peer::spawn(|| ()).unwrap();
        while peer.alive() {
            std::thread::yield_now();
        }
        peer.join().unwrap();
    }

    #[test]
    fn a_panicking_child_is_reported() {
        let peer = Peer::spawn(|| panic!("expected in test")).unwrap();
        assert!(peer.join().is_err());
    }

    #[test]
    fn a_peer_that_stored_then_exited_is_not_an_error() {
        let word = AtomicU64::new(0);
        let mut gone = false;
        // Simulates the race: the word is stored by the time the peer is found gone.
        let result = wait_at_least(&word, 1, || {
            word.store(1, Ordering::Release);
            gone = true;
            true
        });
        assert!(result.is_ok() && gone);
    }

    #[test]
    fn a_dead_peer_ends_the_wait() {
        let mut peer = Peer::spawn(|| ()).unwrap();
        let never = AtomicU64::new(0);
        assert!(wait_at_least(&never, 1, || !peer.alive()).is_err());
    }
}

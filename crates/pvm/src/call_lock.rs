//! The lock every C call of the library takes (`state.rs`), biased to the thread that calls
//! alone, as nearly every PVM program does (Debian's library takes no lock at all).
//!
//! - **Alone.** The first thread that calls becomes the lock's *resident*. While no other
//!   thread has called, it enters with a plain store to `inside` and a look at `shared`,
//!   and leaves with a plain store: no locked instruction. A locked compare-exchange is
//!   dear on the message path, five calls a side: it waits for every store before it, such
//!   as the ring record the other core is polling (PVM's 1 B one way: 0.244 us with it on
//!   every call, 0.219 us without, 2026-11-27).
//! - **Shared.** The first other thread that calls sets `shared` for good, then makes the
//!   kernel run a full memory barrier on every thread of the process (`membarrier`,
//!   private expedited): after it, the resident either sees `shared` at its next look or
//!   its `inside` is visible. It waits for the resident to leave the call it may be in, says
//!   `settled`, and from then on every call, the resident's too, takes `held` with a
//!   compare-exchange and gives it back with a plain store. This is Dekker's handshake with
//!   the expensive fence on the rare side only (the asymmetric barrier of liburcu and
//!   folly's `asymmetricHeavyBarrier`). Where the kernel refuses `membarrier`, the lock
//!   starts shared.
//!
//! A thread that finds `held` taken spins a little, then yields, then naps (up to a
//! millisecond): waiting is rare, and a nap costs nothing to the thread that holds it. The
//! lock is never poisoned: a call that panics gives it back while unwinding.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub struct CallLock<T> {
    held: AtomicBool,
    /// The resident thread's token (`token()`), 0 before the first call.
    resident: AtomicUsize,
    /// Written by the resident only: it is inside a call it entered alone.
    inside: AtomicBool,
    /// Another thread has called (or there can be no resident): every call takes `held`.
    shared: AtomicBool,
    /// The resident has left its last call entered alone: `held` alone guards the state.
    settled: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is reached only through a `CallGuard`. One exists either on the resident
// while `shared` is unset (and any other thread waits in `settle` until the resident's
// `inside` is clear, made visible by membarrier), or while its thread holds `held` (taken
// with Acquire, given back with Release) after `settled`: one thread at a time.
unsafe impl<T: Send> Sync for CallLock<T> {}

/// The lock, held: the state while it lives.
pub struct CallGuard<'a, T> {
    lock: &'a CallLock<T>,
    /// Entered alone (by the resident, `inside` set) rather than by taking `held`.
    alone: bool,
}

/// This thread's token, distinct among live threads: its thread pointer. On x86-64 it is
/// read in one instruction with no call: the ELF TLS ABI keeps it in the first word at
/// `%fs:0` (`pthread_self()`, the token before, reads the same TCB behind a call through the
/// PLT: ~5 instructions a call, 2026-11-28; the address of a thread-local, before that,
/// called `__tls_get_addr` in a shared library).
#[inline]
fn token() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: a load of the TCB's first word, which the x86-64 TLS ABI defines as the
        // thread pointer of the calling thread; it touches no other memory.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: pthread_self takes nothing and cannot fail.
    unsafe {
        libc::pthread_self() as usize
    }
}

/// `membarrier` commands (linux/membarrier.h).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

fn membarrier(cmd: libc::c_long) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_long, 0 as libc::c_long) == 0 }
}

/// Waits a little longer at each `looks`: spin, then yield, then nap (up to 1 ms).
fn back_off(looks: u32) {
    match looks {
        0..100 => std::hint::spin_loop(),
        100..200 => std::thread::yield_now(),
        n => std::thread::sleep(Duration::from_micros(u64::from(n - 199).min(1000))),
    }
}

impl<T> CallLock<T> {
    pub const fn new(value: T) -> CallLock<T> {
        CallLock {
            held: AtomicBool::new(false),
            resident: AtomicUsize::new(0),
            inside: AtomicBool::new(false),
            shared: AtomicBool::new(false),
            settled: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The resident's way in while no other thread has called.
    #[inline(always)]
    pub(crate) fn enter_alone(&self) -> Option<CallGuard<'_, T>> {
        let me = token();
        // `shared` is looked at once, after `inside` is set (below); before, only where this
        // thread is not the resident yet (a look less a call, 2026-11-28).
        if self.resident.load(Ordering::Relaxed) != me && (self.shared.load(Ordering::Relaxed) || !self.claim(me)) {
            return None;
        }
        // Inside already (a call made from inside one): not a second time, as `held` would
        // not be taken twice. Only this thread writes `inside`.
        if self.inside.load(Ordering::Relaxed) {
            return None;
        }
        self.inside.store(true, Ordering::Relaxed);
        // The store above stays before the load below in the program; the hardware may still
        // let the load pass it, which the other side's membarrier settles (see the top).
        compiler_fence(Ordering::SeqCst);
        if self.shared.load(Ordering::Relaxed) {
            self.inside.store(false, Ordering::Release);
            return None;
        }
        Some(CallGuard { lock: self, alone: true })
    }

    /// The first thread that calls becomes the resident, where the kernel can make the others
    /// wait for it; whether this one did.
    #[cold]
    #[inline(never)]
    fn claim(&self, me: usize) -> bool {
        if self.resident.load(Ordering::Relaxed) != 0 {
            return false;
        }
        if !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
            self.settle();
            return false;
        }
        self.resident.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Makes the lock shared for good (once), and waits until the resident has left any call
    /// it entered alone.
    #[cold]
    #[inline(never)]
    fn settle(&self) {
        if self.settled.load(Ordering::Acquire) {
            return;
        }
        if self.shared.swap(true, Ordering::Relaxed) {
            // Another thread settles: wait for it.
            let mut looks = 0;
            while !self.settled.load(Ordering::Acquire) {
                looks += 1;
                back_off(looks);
            }
            return;
        }
        // After this, the resident either sees `shared` or its `inside` is visible here. A
        // registered process's membarrier does not fail; were it to, the resident's store
        // would still drain within microseconds: look again after a nap.
        let fenced = self.resident.load(Ordering::Relaxed) == 0 || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
        if !fenced {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut looks = 0;
        while self.inside.load(Ordering::Acquire) {
            looks += 1;
            back_off(looks);
        }
        self.settled.store(true, Ordering::Release);
    }

    /// `held`, if no one holds it now (the lock shared).
    fn take_held(&self) -> Option<CallGuard<'_, T>> {
        self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok()?;
        Some(CallGuard { lock: self, alone: false })
    }

    /// The lock if no one holds it now.
    pub fn try_lock(&self) -> Option<CallGuard<'_, T>> {
        if let Some(g) = self.enter_alone() {
            return Some(g);
        }
        if !self.settled.load(Ordering::Acquire) {
            // Not waiting for a resident that may be inside: only a look now.
            if self.resident.load(Ordering::Relaxed) != 0 && self.inside.load(Ordering::Acquire) {
                return None;
            }
            self.settle();
        }
        self.take_held()
    }

    /// The lock, waiting for it.
    #[inline]
    pub fn lock(&self) -> CallGuard<'_, T> {
        match self.enter_alone() {
            Some(g) => g,
            None => self.lock_shared(),
        }
    }

    #[inline(never)]
    fn lock_shared(&self) -> CallGuard<'_, T> {
        self.settle();
        if let Some(g) = self.take_held() {
            return g;
        }
        let mut looks = 0u32;
        loop {
            // Looked at before the compare-exchange: waiting costs the holder no line.
            if !self.held.load(Ordering::Relaxed) {
                if let Some(g) = self.take_held() {
                    return g;
                }
            }
            looks += 1;
            back_off(looks);
        }
    }
}

impl<T> Deref for CallGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard's thread holds the lock (see `Sync` above).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for CallGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard's thread holds the lock, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for CallGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        match self.alone {
            true => self.lock.inside.store(false, Ordering::Release),
            false => self.lock.held.store(false, Ordering::Release),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_turns_and_none_sees_another_inside() {
        static L: CallLock<(u64, bool)> = CallLock::new((0, false));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..20_000 {
                        let mut g = L.lock();
                        assert!(!g.1, "two threads inside");
                        g.1 = true;
                        g.0 += 1;
                        g.1 = false;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(L.lock().0, 80_000);
    }

    #[test]
    fn a_second_thread_waits_for_the_resident_then_both_share_the_lock() {
        static L: CallLock<(u64, bool)> = CallLock::new((0, false));
        // This thread calls alone first: the resident, entering without `held`.
        let g = L.lock();
        assert!(g.alone, "the first caller enters alone");
        drop(g);
        let mut g = L.lock();
        assert!(g.alone && !L.held.load(Ordering::Relaxed));
        g.1 = true;
        // Another thread comes while the resident is inside: it waits for it to leave.
        let other = std::thread::spawn(|| {
            for _ in 0..20_000 {
                let mut g = L.lock();
                assert!(!g.alone, "a second thread takes `held`");
                assert!(!g.1, "two threads inside");
                g.1 = true;
                g.0 += 1;
                g.1 = false;
            }
        });
        while !L.shared.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        g.1 = false;
        g.0 += 1;
        drop(g);
        for _ in 0..20_000 {
            let mut g = L.lock();
            assert!(!g.alone, "once shared, the resident takes `held` too");
            assert!(!g.1, "two threads inside");
            g.1 = true;
            g.0 += 1;
            g.1 = false;
        }
        other.join().unwrap();
        assert_eq!(L.lock().0, 40_001);
    }

    #[test]
    fn a_held_lock_is_not_taken_and_a_panic_gives_it_back() {
        let l = CallLock::new(1);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = l.lock();
            panic!("inside a call");
        }));
        assert!(r.is_err());
        assert_eq!(*l.try_lock().expect("given back while unwinding"), 1);
    }
}

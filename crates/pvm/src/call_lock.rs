//! The lock every C call of the library takes (`state.rs`): one compare-exchange to take it,
//! one plain store to give it back. std's `Mutex` gives it back with a swap too (to learn
//! whether a sleeper needs waking), and a locked instruction is dear: a small message takes
//! five calls a side, and on the machine this was measured on (20 M uncontended lock and
//! unlock pairs, pinned) std's cost 29-33 ns a pair, this one 21 ns; PVM's 1 B one-way time
//! went from 0.334 to 0.307 us.
//!
//! A thread that finds it held spins a little, then yields, then naps (up to a millisecond):
//! a PVM program calls the library from one thread nearly always (Debian's library takes no
//! lock at all), so waiting is rare, and a nap costs nothing to the thread that holds it.
//! Unlike std's, the lock is never poisoned: a call that panics gives it back while
//! unwinding, and the state stays usable.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct CallLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is reached only through a `CallGuard`, and a guard exists only while its
// thread holds `held` (taken with Acquire, given back with Release), one thread at a time.
unsafe impl<T: Send> Sync for CallLock<T> {}

/// The lock, held: the state while it lives.
pub struct CallGuard<'a, T> {
    lock: &'a CallLock<T>,
}

impl<T> CallLock<T> {
    pub const fn new(value: T) -> CallLock<T> {
        CallLock { held: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// The lock if no one holds it now.
    pub fn try_lock(&self) -> Option<CallGuard<'_, T>> {
        self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok()?;
        Some(CallGuard { lock: self })
    }

    /// The lock, waiting for it.
    pub fn lock(&self) -> CallGuard<'_, T> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        let mut looks = 0u32;
        loop {
            // Looked at before the compare-exchange: waiting costs the holder no line.
            if !self.held.load(Ordering::Relaxed) {
                if let Some(g) = self.try_lock() {
                    return g;
                }
            }
            looks += 1;
            match looks {
                0..100 => std::hint::spin_loop(),
                100..200 => std::thread::yield_now(),
                n => std::thread::sleep(Duration::from_micros(u64::from(n - 199).min(1000))),
            }
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
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
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

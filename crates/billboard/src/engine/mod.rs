//! Messages: envelopes, matching, protocols, requests, progress.

pub mod matching;
mod progress;
pub mod protocol;
pub mod request;
pub mod scatter;

pub(crate) use progress::{Engine, Pending};

use std::sync::{Arc, Mutex, MutexGuard};

use crate::transport::shm::wait::{Backoff, Step};
use crate::Result;

/// The engine of this process, shared by its communicators and requests (and threads).
///
/// One lock serializes the engine (MPI_THREAD_MULTIPLE); a waiting thread holds it only
/// while it polls, never while it spins, yields or sleeps, so other threads' operations go on.
pub(crate) struct Shared {
    engine: Mutex<Engine>,
}

pub(crate) type EngineRef = Arc<Shared>;

/// Empty polls a spinning waiter makes per lock hold (other threads wait that long at most,
/// about a microsecond).
const POLLS_PER_LOCK: usize = 16;

impl Shared {
    pub fn new(engine: Engine) -> EngineRef {
        Arc::new(Shared { engine: Mutex::new(engine) })
    }

    /// The engine, for one short step. A thread that panicked inside leaves it usable: the
    /// engine's own state is never left half-updated by a panic in user code.
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drives progress until `done(engine)` holds, backing off from spinning to sleeping;
    /// returns the engine still locked, so the caller finishes without locking again. While
    /// spinning, the lock is released every [`POLLS_PER_LOCK`] polls only: taking it costs
    /// two atomic operations, which a single-threaded waiter should not pay on every poll.
    pub fn wait_until(&self, hint: Option<usize>, mut done: impl FnMut(&mut Engine) -> bool) -> MutexGuard<'_, Engine> {
        let mut backoff: Option<Backoff> = None;
        loop {
            let mut engine = self.lock();
            for _ in 0..POLLS_PER_LOCK {
                if done(&mut engine) {
                    return engine;
                }
                if engine.progress(hint) {
                    if let Some(b) = backoff.as_mut() {
                        b.reset();
                    }
                    continue;
                }
                let b = backoff.get_or_insert_with(|| Backoff::new(engine.oversubscribed()));
                match b.step() {
                    Step::Spin => std::hint::spin_loop(),
                    Step::Yield => {
                        drop(engine);
                        rustix::thread::sched_yield();
                        break;
                    }
                    Step::Sleep(t) => {
                        let sleeper = engine.sleeper();
                        drop(engine);
                        sleeper.sleep(t);
                        break;
                    }
                }
            }
        }
    }

    /// Waits until request `id` completes, then frees it.
    pub fn wait(&self, id: request::ReqId) -> Result<request::Completion> {
        let hint = self.lock().hint(id);
        self.wait_until(hint, |e| e.is_done(id)).finish(id)
    }
}

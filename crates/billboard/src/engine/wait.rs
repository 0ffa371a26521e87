//! The one waiting loop: every blocking call of the library (a receive, a send's completion,
//! a schedule, a probe, MPI_Waitany's sweep) waits here, polling the engine and stepping down
//! the ladder spin → yield → sleep when polls find nothing (`ladder.rs`).
//!
//! Threads (MPI_THREAD_MULTIPLE): several threads may wait on one engine at once. Only one of
//! them polls, the one holding the *baton*; the others sleep on a private futex word
//! ([`Waiters::event`]) that the poller bumps after every round that moved something, and when
//! it leaves (so another takes over). Without the baton, three waiting threads on two cores
//! spun against each other for the cores and for the engine's lock, and a message took a
//! scheduler tick (1 to 2 ms) where one wake-up costs microseconds.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rustix::thread::futex;

use super::ladder::{Backoff, Step};
use super::{Engine, EngineGuard, Shared};

/// Empty polls a spinning waiter makes per lock hold (other threads wait that long at most,
/// about a microsecond).
const POLLS_PER_LOCK: usize = 16;

/// Longest tight spin on the awaited peer's ring between two progress rounds (pauses, ~11 ns
/// each here): an arrival is seen one pause after it lands rather than one round after.
const SPIN_BURST: u32 = 16;

/// The threads of this process waiting on the engine.
#[derive(Default)]
pub(crate) struct Waiters {
    /// Some thread polls for everyone.
    baton: AtomicBool,
    /// Threads asleep on `event` (the poller wakes them only if there are any).
    sleeping: AtomicU32,
    /// Bumped after a poll that moved something and when the baton comes free.
    event: AtomicU32,
    /// What each sleeper waits for, so the poller wakes them only when one's condition holds
    /// (a record for its own request, say a rendezvous step, is no reason to hand over).
    watches: Mutex<Vec<Watch>>,
}

/// A sleeping thread's condition: its `done`, callable only with the engine locked (the
/// sleeper registers and withdraws it under the lock, and the poller calls it under the lock),
/// or `None` where the condition is not the engine's alone (`wait_for`): any progress may do.
struct Watch {
    thread: u64,
    done: Option<*mut (dyn FnMut(&mut Engine) -> bool + 'static)>,
}

// SAFETY: a watch's pointer is only dereferenced under the engine lock, while its thread sleeps
// in `sleep_for_event` with the closure alive on its stack (it withdraws the watch, under the
// lock, before that frame ends).
unsafe impl Send for Watch {}

impl Waiters {
    fn take_baton(&self) -> Option<Baton<'_>> {
        self.baton.compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed).ok().map(|_| Baton(self))
    }

    /// Tells the sleepers to look again. Without sleepers it costs one load, not a locked
    /// instruction: a thread goes to sleep only under the engine lock, after looking at what
    /// the poller's last round (also under the lock) delivered, so it cannot miss that round.
    fn announce(&self) {
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            self.event.fetch_add(1, Ordering::SeqCst);
            let _ = futex::wake(&self.event, futex::Flags::PRIVATE, u32::MAX);
        }
    }

    /// Whether a sleeper's condition holds now (the engine is locked: `engine`).
    fn someone_ready(&self, engine: &mut Engine) -> bool {
        let watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.iter().any(|w| match w.done {
            None => true,
            // SAFETY: see `Watch`: the engine is locked and the sleeper's closure alive.
            Some(done) => unsafe { (*done)(engine) },
        })
    }
}

/// The right to poll for every waiting thread; returned on drop. The sleepers are not woken
/// then: the thread that leaves usually comes back in a moment (a reply, the next receive) and
/// takes it again, and a wake-up would have a sleeper compete with it for its core; a sleeper
/// finds the baton free at the end of its nap and takes over.
struct Baton<'a>(&'a Waiters);

impl Drop for Baton<'_> {
    fn drop(&mut self) {
        self.0.baton.store(false, Ordering::SeqCst);
    }
}

/// Where one wait is on the ladder, and whether it holds the baton.
pub(crate) struct Waiting<'a> {
    backoff: Option<Backoff>,
    baton: Option<Baton<'a>>,
    /// The next sleep without the baton: it starts short, so a baton let go is picked up soon,
    /// and doubles up to [`LONGEST_NAP`] while another thread polls.
    nap: Duration,
    /// Whether the wait's `done` is its whole condition (not `wait_for`'s round marker), so the
    /// poller may call it to decide whether to wake this thread.
    watched: bool,
    /// The progress thread's wait ([`Shared::serve_until`]): it gives way to every program
    /// thread that waits, and no program thread gives the baton to it.
    helper: bool,
}

/// Names the watches of sleeping threads.
static WATCH_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The first and the longest nap of a thread that waits without the baton: short, because a
/// poller that leaves wakes nobody, and a sleeper takes over at the end of its nap; a sleeper
/// that wakes every 200 µs to look costs well under 1% of a core.
const FIRST_NAP: Duration = Duration::from_micros(50);
const LONGEST_NAP: Duration = Duration::from_micros(200);

impl Default for Waiting<'_> {
    fn default() -> Self {
        Waiting { backoff: None, baton: None, nap: FIRST_NAP, watched: true, helper: false }
    }
}

impl Shared {
    /// Drives progress until `done(engine)` holds, backing off from spinning to sleeping;
    /// returns the engine still locked, so the caller finishes without locking again. While
    /// spinning, the lock is released every [`POLLS_PER_LOCK`] polls only: taking it costs
    /// two atomic operations, which a single-threaded waiter should not pay on every poll.
    pub fn wait_until(&self, hint: Option<usize>, done: impl FnMut(&mut Engine) -> bool) -> EngineGuard<'_> {
        self.wait_locked(self.lock(), hint, done)
    }

    /// [`Shared::wait_until`] starting with the engine already locked.
    pub(super) fn wait_locked<'a>(
        &'a self,
        engine: EngineGuard<'a>,
        hint: Option<usize>,
        done: impl FnMut(&mut Engine) -> bool,
    ) -> EngineGuard<'a> {
        self.wait_with(&mut Waiting::default(), engine, hint, done)
    }

    /// Waits until `ready()` holds, looking between rounds of progress and ladder steps. For
    /// conditions that are not the engine's alone (MPI_Waitany over requests of every kind):
    /// `ready` runs without the engine held and may call the library.
    pub fn wait_for(&self, mut ready: impl FnMut() -> bool) {
        let mut waiting = Waiting { watched: false, ..Waiting::default() };
        while !ready() {
            let mut looked = false;
            // One round: a poll, and a ladder step if it found nothing.
            drop(self.wait_with(&mut waiting, self.lock(), None, |_| std::mem::replace(&mut looked, true)));
        }
    }

    /// The progress thread's loop (`progress_thread.rs`), until `stop`: rounds of progress
    /// down a ladder that barely spins (its process computes on the other cores) and sleeps on
    /// the route. A program thread that comes to wait has priority: the baton is handed to it
    /// at the next look (one wake-up per arrival for it, not two), and the progress thread
    /// naps aside, not counted among the sleepers, until the baton is free again.
    pub(crate) fn serve_until(&self, stop: &AtomicBool) {
        let mut waiting = Waiting {
            backoff: Some(Backoff::for_progress_thread()),
            watched: false,
            helper: true,
            ..Waiting::default()
        };
        while !stop.load(Ordering::Acquire) {
            if waiting.baton.is_some() && self.waiters.sleeping.load(Ordering::SeqCst) > 0 {
                waiting.baton = None;
                self.waiters.announce();
            }
            let mut looked = false;
            drop(self.wait_with(&mut waiting, self.lock(), None, |_| std::mem::replace(&mut looked, true)));
        }
    }

    /// The sleep step of a wait that climbs its own ladder (the board's, a window's lock
    /// word): one round of progress, and if it moved nothing, a sleep that the next record for
    /// this rank ends (an active message a handler must answer, say), or `timeout`. Only the
    /// baton's holder sleeps on the route's sleeper (one sleep word per rank: a second sleeper
    /// there would miss its wake-up); without it, a plain nap. Returns whether progress moved.
    pub fn nap(&self, timeout: Duration) -> bool {
        let mut engine = self.lock();
        if engine.progress(None) || engine.look_for_closed() {
            return true;
        }
        match self.waiters.take_baton() {
            Some(_baton) => {
                let sleeper = engine.sleeper();
                drop(engine);
                sleeper.sleep(timeout);
            }
            None => {
                drop(engine);
                std::thread::sleep(timeout.min(FIRST_NAP));
            }
        }
        false
    }

    /// The loop behind every wait, resuming `waiting`'s place on the ladder.
    fn wait_with<'a>(
        &'a self,
        waiting: &mut Waiting<'a>,
        mut engine: EngineGuard<'a>,
        hint: Option<usize>,
        mut done: impl FnMut(&mut Engine) -> bool,
    ) -> EngineGuard<'a> {
        'rounds: loop {
            for _ in 0..POLLS_PER_LOCK {
                if done(&mut engine) {
                    return engine;
                }
                if waiting.baton.is_none() && !self.serialized() {
                    match self.waiters.take_baton() {
                        Some(baton) => {
                            waiting.baton = Some(baton);
                            waiting.nap = FIRST_NAP;
                        }
                        None => {
                            engine = self.sleep_for_event(engine, waiting, false, &mut done);
                            continue 'rounds;
                        }
                    }
                }
                if waiting.backoff.is_none()
                    && engine.oversubscribed()
                    && hint.is_some_and(|peer| engine.spin_for(peer, 0) == u32::MAX)
                {
                    // The first look of a wait on a socket peer with the cores crowded (see
                    // `Routes::spin_for`): what we wait for needs the peer to run, most likely
                    // on this core, so hand it over before a poll that would find nothing.
                    let mut b = Backoff::new(true);
                    b.spent(u32::MAX);
                    waiting.backoff = Some(b);
                    engine = self.hand_over(engine, hint);
                    continue 'rounds;
                }
                if engine.progress(hint) {
                    if let Some(b) = waiting.backoff.as_mut() {
                        b.reset();
                    }
                    // Progress may have ended a sleeper's wait: an arrival, or a copy finished.
                    if self.waiters.sleeping.load(Ordering::SeqCst) > 0 {
                        if done(&mut engine) {
                            return engine; // the baton goes back (and the sleepers look) on drop
                        }
                        if self.waiters.someone_ready(&mut engine) {
                            // Another thread's wait is over: hand it the baton and this core,
                            // rather than make it wait for a core while this thread spins.
                            waiting.baton = None;
                            self.waiters.announce();
                            engine = self.sleep_for_event(engine, waiting, true, &mut done);
                            continue 'rounds;
                        }
                    }
                    continue;
                }
                let b = waiting.backoff.get_or_insert_with(|| Backoff::new(engine.oversubscribed()));
                let step = match b.step() {
                    Step::Spin => match hint {
                        Some(peer) => {
                            b.spent(engine.spin_for(peer, SPIN_BURST));
                            // A look that spent the rest of the spin (a socket poll with the
                            // cores crowded) yields now, not after one more poll.
                            if b.spin_over() {
                                Step::Yield
                            } else {
                                Step::Spin
                            }
                        }
                        None => {
                            std::hint::spin_loop();
                            Step::Spin
                        }
                    },
                    other => other,
                };
                match step {
                    Step::Spin => {}
                    Step::Yield => {
                        engine = self.hand_over(engine, hint);
                        continue 'rounds;
                    }
                    Step::Sleep(t) => {
                        if engine.look_for_closed() {
                            continue 'rounds;
                        }
                        let (sleeper, t) = (engine.sleeper(), engine.sched_nap(t));
                        drop(engine);
                        sleeper.sleep(t);
                        engine = self.lock();
                        continue 'rounds;
                    }
                }
            }
            // Let other threads in between rounds of polls.
            drop(engine);
            engine = self.lock();
        }
    }

    /// Gives the core to the peer this wait needs. With the cores crowded and one thread in the
    /// library (the engine stays locked meanwhile), a receive from the awaited peer that waits
    /// in the kernel where its route does (`Engine::progress_blocking`, `BB_WAIT_BLOCK`): the
    /// kernel switches straight to the peer and back when its record comes, one system call
    /// where a yield and a receive made two. Else (the default) a yield.
    fn hand_over<'a>(&'a self, mut engine: EngineGuard<'a>, hint: Option<usize>) -> EngineGuard<'a> {
        if let Some(peer) = hint.filter(|_| engine.oversubscribed() && self.serialized()) {
            if engine.progress_blocking(peer).is_some() {
                return engine;
            }
        }
        engine.yields += 1;
        drop(engine);
        rustix::thread::sched_yield();
        self.lock()
    }

    /// Another thread polls: sleep until it moves something, or for `nap` (which then doubles,
    /// up to [`LONGEST_NAP`]), then look again. `handing_over`: this thread just
    /// gave the baton to the sleepers, so it sleeps even though none of them holds it yet (else
    /// it would take the baton straight back and keep the core they need).
    fn sleep_for_event<'a, 'd>(
        &'a self,
        engine: EngineGuard<'a>,
        waiting: &mut Waiting<'a>,
        handing_over: bool,
        done: &'d mut (dyn FnMut(&mut Engine) -> bool + 'd),
    ) -> EngineGuard<'a> {
        let w = &self.waiters;
        if waiting.helper {
            // Aside while a program thread polls: woken by nobody, it looks again after a nap.
            let seen = w.event.load(Ordering::SeqCst);
            drop(engine);
            if w.baton.load(Ordering::SeqCst) {
                let ts = rustix::time::Timespec { tv_sec: 0, tv_nsec: waiting.nap.as_nanos() as i64 };
                waiting.nap = (waiting.nap * 2).min(LONGEST_NAP);
                let _ = futex::wait(&w.event, futex::Flags::PRIVATE, seen, Some(&ts));
            }
            return self.lock();
        }
        let seen = w.event.load(Ordering::SeqCst);
        w.sleeping.fetch_add(1, Ordering::SeqCst);
        let thread = WATCH_IDS.fetch_add(1, Ordering::Relaxed);
        let done: *mut (dyn FnMut(&mut Engine) -> bool + 'd) = done;
        // SAFETY: only the lifetime is erased; the watch is withdrawn below, under the engine
        // lock, before `done`'s borrow ends (see `Watch`).
        let done: *mut (dyn FnMut(&mut Engine) -> bool + 'static) = unsafe { std::mem::transmute(done) };
        let watch = Watch { thread, done: waiting.watched.then_some(done) };
        w.watches.lock().unwrap_or_else(|e| e.into_inner()).push(watch);
        drop(engine);
        if handing_over || w.baton.load(Ordering::SeqCst) {
            let ts = rustix::time::Timespec { tv_sec: 0, tv_nsec: waiting.nap.as_nanos() as i64 };
            waiting.nap = (waiting.nap * 2).min(LONGEST_NAP);
            // EAGAIN (it moved already), EINTR and ETIMEDOUT all mean: look again.
            let _ = futex::wait(&w.event, futex::Flags::PRIVATE, seen, Some(&ts));
        }
        let engine = self.lock();
        w.watches.lock().unwrap_or_else(|e| e.into_inner()).retain(|x| x.thread != thread);
        w.sleeping.fetch_sub(1, Ordering::SeqCst);
        engine
    }
}

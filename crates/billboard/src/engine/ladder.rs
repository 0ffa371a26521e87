//! The waiting ladder: spin, then yield, then sleep, whatever the route (the engine's waiting
//! loop, `wait.rs`, climbs it; each route sleeps its own way, `transport::routes::Sleeper`).
//!
//! On this kind of VM a sleep/wake through the kernel costs 30–40 µs while a polled cache line
//! answers in ~55 ns, so sleeping is the last resort. When the ranks of this machine outnumber
//! its cores a spinning rank steals the core its peer needs, so the spin phase is cut short and
//! the rank yields early.

use std::time::Duration;

use crate::tunables::Tunable;

pub static SPIN: Tunable =
    Tunable::new("BB_SPIN", 20000, "empty polls before yielding the core (~1 ms here; a socket poll counts 16)")
        .read_at(crate::tunables::Effect::EachUse);
pub static YIELD: Tunable =
    Tunable::new("BB_YIELD", 2000, "sched_yield rounds before sleeping; ranks that outnumber the cores start here")
        .read_at(crate::tunables::Effect::EachUse);
pub static SLEEP_US: Tunable =
    Tunable::new("BB_SLEEP_US", 2000, "longest sleep (µs); bounds a missed wake-up and the delay of dead-peer checks")
        .read_at(crate::tunables::Effect::EachUse);

/// Where a waiting rank is in spin → yield → sleep.
pub struct Backoff {
    rounds: usize,
    spin: usize,
    yields: usize,
}

/// What the waiter should do next.
pub enum Step {
    Spin,
    Yield,
    Sleep(Duration),
}

impl Backoff {
    pub fn new(oversubscribed: bool) -> Backoff {
        let spin = if oversubscribed { 50 } else { SPIN.get() };
        Backoff { rounds: 0, spin, yields: YIELD.get() }
    }

    /// A progress thread's ladder (`progress_thread.rs`): a short spin, then sleep at once.
    /// Its process computes on the cores; yielding them in a loop would only take them away.
    pub fn for_progress_thread() -> Backoff {
        Backoff { rounds: 0, spin: 50, yields: 0 }
    }

    /// Called after a poll that found nothing.
    #[inline]
    pub fn step(&mut self) -> Step {
        self.rounds += 1;
        if self.rounds <= self.spin {
            Step::Spin
        } else if self.rounds <= self.spin + self.yields {
            Step::Yield
        } else {
            Step::Sleep(Duration::from_micros(SLEEP_US.get() as u64))
        }
    }

    /// Counts `pauses` more spins than the one [`Backoff::step`] counted (a burst).
    #[inline]
    pub fn spent(&mut self, pauses: u32) {
        self.rounds += (pauses as usize).saturating_sub(1);
    }

    /// Goes straight to yielding (a waiter whose peer needs this core to go on).
    #[inline]
    pub fn skip_spin(&mut self) {
        self.rounds = self.rounds.max(self.spin);
    }

    /// Called after a poll that made progress.
    #[inline]
    pub fn reset(&mut self) {
        self.rounds = 0;
    }
}

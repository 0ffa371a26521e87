//! The waiting ladder: spin, then yield, then sleep, whatever the route (the engine's waiting
//! loop, `wait.rs`, climbs it; each route sleeps its own way, `transport::routes::Sleeper`).
//!
//! On this kind of VM a sleep/wake through the kernel costs 30–40 µs while a polled cache line
//! answers in ~55 ns, so sleeping is the last resort. When the ranks of this machine outnumber
//! its cores a spinning rank steals the core its peer needs, so the rank yields at the first
//! poll that finds nothing (`BB_SPIN_CROWDED`, 0), as the bare token ring that yields at once
//! (bench/peers/ring_floor.c) does: a 4-rank ring on 2 cores passes its token through each
//! core's other rank, and a waiter that spun first (50 polls, as before) kept that core from the
//! rank the token had just reached (bench/README.md, "The ring's hand-over").
//!
//! The spin is short even with a core for every rank (`BB_SPIN`, 1,000 polls: ~50 µs), because
//! other programs may share the cores: a rank the kernel put on the core of the rank it waits
//! for (a wake-up places the woken beside its waker), or behind a stranger, gets the core only
//! when the spinner lets go, so every message cost the whole spin. With 20,000 polls (~1 ms):
//! 2 ranks on this 2-vCPU VM among compiler jobs 1.8 ms a message (5,000: 470 µs, 500: 20 µs);
//! 16 ranks beside 4 busy loops on 16 cores allreduce 8 B 1,200-1,360 µs, with 1,000 polls
//! 48-92 µs (barrier 940-1,260 -> 34-72 µs, 1 MiB collectives 1.3-3.7x faster; MPICH 5,500,
//! Open MPI 6,700). On an idle machine the two do not differ (16 ranks, every collective at
//! 8 B, 8 KiB, 1 MiB, within noise), and below ~200 polls a rank beside a busy loop on every
//! core gave its core away for a time slice (allreduce 4,250 µs against 1.1).
//! (bench/device/wait.sh; bench/results/device-2026-11-27-h200.)

use std::time::Duration;

use crate::tunables::Tunable;

pub static SPIN: Tunable =
    Tunable::new("BB_SPIN", 1000, "empty polls before yielding the core (~50 µs; a socket poll counts 16)")
        .read_at(crate::tunables::Effect::EachUse);
pub static YIELD: Tunable =
    Tunable::new("BB_YIELD", 2000, "sched_yield rounds before sleeping; ranks that outnumber the cores start here")
        .read_at(crate::tunables::Effect::EachUse);
pub static SPIN_CROWDED: Tunable = Tunable::new(
    "BB_SPIN_CROWDED",
    0,
    "empty polls before yielding where ranks outnumber cores: 0, the peer awaited most likely needs this core (2 ranks on one core, 8 B one-way: 3.6-5.0 -> 1.9-2.8 us; 4 ranks on 2 cores, coll.c barrier 8 B: 4.9-5.2 -> 2.3-2.7 us)",
)
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
        let spin = if oversubscribed { SPIN_CROWDED.get() } else { SPIN.get() };
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

    /// Counts `pauses` more spins than the one [`Backoff::step`] counted (a burst), against the
    /// spin phase only: spinning never stands in for yields, so a channel that says a look cost
    /// it the whole spin (`u32::MAX`: a socket poll while ranks crowd the cores) sends the
    /// waiter to yield next, not to sleep.
    #[inline]
    pub fn spent(&mut self, pauses: u32) {
        let spun = self.rounds.saturating_add((pauses as usize).saturating_sub(1));
        self.rounds = spun.min(self.spin.max(self.rounds));
    }

    /// Whether the spin phase is used up (the next step yields, or sleeps).
    #[inline]
    pub fn spin_over(&self) -> bool {
        self.rounds >= self.spin
    }

    /// Called after a poll that made progress.
    #[inline]
    pub fn reset(&mut self) {
        self.rounds = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yields(step: Step) -> bool {
        matches!(step, Step::Yield)
    }

    #[test]
    fn a_crowded_wait_yields_after_its_first_empty_poll() {
        // Ranks outnumber cores: the awaited peer most likely needs this core, so the first
        // poll that finds nothing hands it over; no spin comes first.
        let mut b = Backoff::new(true);
        assert!(b.spin_over(), "nothing to spin");
        assert!(yields(b.step()), "the first empty poll yields");
        assert!(yields(b.step()), "and so does every one after it");
        b.reset();
        assert!(yields(b.step()), "a wait that moved something still yields at its next empty poll");
        // With a core for every rank, the spin comes first.
        let mut b = Backoff::new(false);
        assert!(matches!(b.step(), Step::Spin));
    }

    #[test]
    fn a_look_that_spends_the_whole_spin_yields_next_and_never_sleeps_early() {
        // A ladder that spins first (as a crowded one with BB_SPIN_CROWDED=50), waiting on a
        // peer behind a socket: one empty poll says it spent everything (u32::MAX); the
        // waiter must yield now, not sleep.
        let spinning = || Backoff { rounds: 0, spin: 50, yields: YIELD.get() };
        let mut b = spinning();
        assert!(matches!(b.step(), Step::Spin));
        assert!(!b.spin_over());
        b.spent(u32::MAX);
        assert!(b.spin_over());
        assert!(yields(b.step()), "the next step hands the core over");
        // Bursts counted within the spin phase still add up as before.
        let mut b = spinning();
        let _ = b.step();
        b.spent(16);
        assert_eq!(b.rounds, 16);
        assert!(!b.spin_over());
        // A burst past the end of the spin phase stops at its end: yields come next.
        b.spent(1000);
        assert_eq!(b.rounds, b.spin);
        assert!(yields(b.step()));
        b.reset();
        assert!(matches!(b.step(), Step::Spin));
    }
}

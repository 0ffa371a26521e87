//! How long a receive polls its rings before it sleeps, adapted to what its sleeps found.
//!
//! A fixed spin fails two tasks ping-ponging on a loaded host: a peer preempted for longer
//! than the spin makes the receiver sleep, its wake-up (a socket byte, a scheduler wake) takes
//! about as long as the spin, so the peer's next receive also spins out and sleeps, and the pair
//! settles into waking each other, ~40 us a message (issue 21). So a wait that slept and was
//! woken soon after (within the longest spin) doubles the next spin, up to `BB_PVM_SPIN_MAX_US`;
//! a sleep longer than that (a task waiting for work, not for a partner) starts again from
//! `BB_PVM_SPIN_US`, so an idle task spins at most the longest spin once, then sleeps.
//! Where more tasks poll on the host than it has cores, the look yields the core at once
//! (a partner sharing this core can only answer when it runs).
//! Pure state, tested without processes.

use std::time::Duration;

use billboard::tunables::Tunable;

pub static SPIN_US: Tunable = Tunable::new(
    "BB_PVM_SPIN_US",
    50,
    "PVM: us a receive polls the rings (yielding) before it sleeps, at first and after a long sleep; 50 cut 1-byte NPpvm from ~40 to ~5-8 us on separate cores",
);
pub static SPIN_MAX_US: Tunable = Tunable::new(
    "BB_PVM_SPIN_MAX_US",
    1000,
    "PVM: us a receive polls at most, after sleeps that were woken soon (the spin doubles each time); 1000: beyond a CFS slice of a loaded 2-vCPU host's neighbours, and an idle task burns at most 1 ms per wait",
);

/// The receive wait's spin: its length now, and the bounds it moves between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spin {
    base: Duration,
    max: Duration,
    now: Duration,
}

impl Spin {
    pub fn new(base: Duration, max: Duration) -> Spin {
        let max = max.max(base);
        Spin { base, max, now: base }
    }

    /// From `BB_PVM_SPIN_US` and `BB_PVM_SPIN_MAX_US`.
    pub fn from_tunables() -> Spin {
        Spin::new(Duration::from_micros(SPIN_US.get() as u64), Duration::from_micros(SPIN_MAX_US.get() as u64))
    }

    /// How long the next wait polls before it sleeps.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// After a wait spun out and slept for `slept`: woken within the longest spin, a longer
    /// spin would have caught the message without the wake-up; woken later, the task was idle.
    pub fn slept(&mut self, slept: Duration) {
        self.now = if slept <= self.max { (self.now * 2).min(self.max) } else { self.base };
    }
}

/// Whether more tasks poll rings on this host than it has cores: then a look yields the core
/// instead of spinning. `tasks`: this task and the peers it has rings from.
pub fn oversubscribed(tasks: usize) -> bool {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    tasks > *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn a_wait_woken_soon_after_it_slept_spins_twice_as_long_next_time_up_to_the_bound() {
        let mut s = Spin::new(50 * US, 1000 * US);
        assert_eq!(s.now(), 50 * US);
        s.slept(40 * US);
        assert_eq!(s.now(), 100 * US);
        for _ in 0..10 {
            s.slept(40 * US);
        }
        assert_eq!(s.now(), 1000 * US);
    }

    #[test]
    fn a_long_sleep_starts_again_from_the_short_spin() {
        let mut s = Spin::new(50 * US, 1000 * US);
        s.slept(40 * US);
        s.slept(40 * US);
        assert_eq!(s.now(), 200 * US);
        s.slept(Duration::from_millis(5));
        assert_eq!(s.now(), 50 * US);
    }

    #[test]
    fn a_bound_below_the_start_is_the_start() {
        let mut s = Spin::new(50 * US, 10 * US);
        s.slept(US);
        assert_eq!(s.now(), 50 * US);
    }
}

//! Adaptive waiting: spin, then yield, then sleep on a futex.

use crate::tunables::Tunable;

pub static SPIN: Tunable = Tunable::new("BB_SPIN", 4000, "empty polls before yielding the core");
pub static YIELD: Tunable = Tunable::new("BB_YIELD", 200, "sched_yield rounds before sleeping on the futex");
pub static SLEEP_US: Tunable =
    Tunable::new("BB_SLEEP_US", 2000, "longest futex sleep (µs); bounds a missed wake-up and dead-peer checks");

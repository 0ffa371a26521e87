//! The active-message path's cost in instructions, free of waiting: a 1-rank job sends an
//! active message to itself, whose handler answers to a second handler of its own, N times.
//! Run under callgrind with N and 2N and divide the difference by N (see bench/README.md):
//! `valgrind --tool=callgrind target/release/examples/am_cost 100000 8`.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use billboard::{ActiveHandler, ActiveMessage, Outbox};

/// Answers with the bytes it got.
struct Null;

impl ActiveHandler for Null {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        out.send(msg.source, 2, &[], msg.payload).expect("rank 0");
    }
}

/// Counts answers.
struct Count(Arc<AtomicUsize>);

impl ActiveHandler for Count {
    fn on_message(&mut self, _: ActiveMessage<'_>, _: &mut Outbox<'_>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() -> billboard::Result<()> {
    let mut args = std::env::args().skip(1);
    let iterations = args.next().map_or(100_000, |a| a.parse::<usize>().expect("a number"));
    let bytes = args.next().map_or(8, |a| a.parse::<usize>().expect("a number"));
    let universe = billboard::init()?;
    let world = universe.world();
    // SAFETY: one thread.
    unsafe { world.assume_serialized() };
    let answers = Arc::new(AtomicUsize::new(0));
    world.register_handler(1, Null)?;
    world.register_handler(2, Count(answers.clone()))?;
    let out = vec![7u8; bytes];
    for k in 1..=iterations {
        world.send_active(0, 1, &[], &out[..])?.wait()?;
        while answers.load(Ordering::Relaxed) < k {
            world.progress();
        }
    }
    universe.finalize()
}

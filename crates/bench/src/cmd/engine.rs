//! What the engine subcommands share: the floor run on rank 0 before the engine is measured,
//! and timing trials of a repeated operation.

use std::time::Instant;

use billboard::Communicator;

use crate::plan::{select_sizes, Trials};
use crate::stats::{trimmed, Summary};
use crate::Options;

/// Tag of measured messages; acknowledgements use [`ACK_TAG`] so they can never match one.
pub const DATA_TAG: i32 = 1;
pub const ACK_TAG: i32 = 2;

/// Byte pattern of sent payloads (receive buffers start zeroed, so a last-message check can
/// tell a delivered payload from an untouched buffer).
pub const PAYLOAD_BYTE: u8 = 0xa5;

/// Runs `measure` on rank 0 while the other ranks wait in a barrier, then lets everyone go on
/// to the engine measurement. The floor forks a peer of rank 0 and spins on two CPUs, so it
/// must not overlap the engine's own traffic. A floor that fails is reported and left empty
/// (NaN) rather than aborting rank 0 while the others wait in the barrier.
pub fn floor_on_rank0<T>(
    world: &Communicator,
    skip: bool,
    missing: impl FnOnce() -> T,
    measure: impl FnOnce() -> std::io::Result<T>,
) -> billboard::Result<T> {
    let floor = if world.rank() == 0 && !skip {
        crate::floor::warn_if_busy();
        measure().unwrap_or_else(|e| {
            eprintln!("bb-bench: floor measurement failed, floor columns left empty: {e}");
            missing()
        })
    } else {
        missing()
    };
    world.barrier()?;
    Ok(floor)
}

/// Times `trials.total()` trials of `op` (warm-up first, untimed) and summarises the timed
/// ones as `per_trial(seconds)` (for example seconds per trial to one-way microseconds).
/// `op` returns an error to stop early; every rank runs the same number of trials, so only
/// rank 0's clock matters but all ranks call this.
pub fn time_trials<E>(
    trials: Trials,
    mut op: impl FnMut() -> Result<(), E>,
    per_trial: impl Fn(f64) -> f64,
) -> Result<Summary, E> {
    let mut samples = Vec::with_capacity(trials.timed);
    for trial in 0..trials.total() {
        let start = Instant::now();
        op()?;
        let elapsed = start.elapsed().as_secs_f64();
        if trial >= trials.warmup {
            samples.push(per_trial(elapsed));
        }
    }
    Ok(trimmed(&samples).unwrap_or(Summary::MISSING))
}

/// Fails unless a received message has the expected size: a benchmark that silently measured
/// truncated or empty messages would report flattering figures.
pub fn check_bytes(status: &billboard::Status, expected: usize) -> Result<(), Box<dyn std::error::Error>> {
    if status.bytes() == expected {
        Ok(())
    } else {
        Err(format!("received {} bytes from rank {}, expected {expected}", status.bytes(), status.source()).into())
    }
}

/// The usage error of a subcommand started with too few ranks.
pub fn need_ranks(name: &str, needed: usize, got: usize) -> Box<dyn std::error::Error> {
    format!("`{name}` needs at least {needed} ranks (got {got}); start it as `bbrun -n {needed} bb-bench {name}`")
        .into()
}

/// What every engine benchmark starts with: the library, the world (at least two ranks), the
/// sizes selected from `all_sizes` by the options, and the trial plan.
pub struct Session {
    pub universe: billboard::Universe,
    pub world: Communicator,
    pub rank: usize,
    pub ranks: usize,
    pub sizes: Vec<usize>,
    pub trials: Trials,
}

pub fn start(name: &str, options: &Options, all_sizes: Vec<usize>) -> Result<Session, Box<dyn std::error::Error>> {
    let universe = billboard::init()?;
    let world = universe.world();
    // SAFETY: the benchmarks call the library from their main thread only.
    unsafe { world.assume_serialized() };
    let (rank, ranks) = (world.rank(), world.size());
    if ranks < 2 {
        return Err(need_ranks(name, 2, ranks));
    }
    let sizes = select_sizes(all_sizes, options.sizes.as_deref(), options.max_size);
    Ok(Session { universe, world, rank, ranks, sizes, trials: Trials::new(options.trials) })
}

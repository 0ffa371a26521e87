//! Billboard: message passing over the fastest route between each pair of processes.
//!
//! Layers, bottom up (each uses only the one below it):
//! - [`transport`]: channels that move bytes between processes (the shared-memory billboard);
//! - [`engine`]: tagged messages in contexts, matching, eager/rendezvous protocols, requests;
//! - the native API at the crate root: [`init`], [`Communicator`], typed buffers, [`Request`].
//!
//! ```no_run
//! let universe = billboard::init()?;
//! let world = universe.world();
//! if world.rank() == 0 {
//!     world.send(&[1.0f64, 2.0], 1, 7)?;
//! } else if world.rank() == 1 {
//!     let mut buf = [0.0f64; 2];
//!     let status = world.recv(&mut buf[..], 0, 7)?;
//!     assert_eq!(status.count::<f64>()?, 2);
//! }
//! # Ok::<(), billboard::Error>(())
//! ```

pub mod bootstrap;
pub mod coll;
mod copy;
pub mod engine;
mod error;
pub(crate) mod sync;
pub mod transport;
pub mod tunables;

mod api;

pub use api::*;
pub use coll::{Collective, InterRoot, ReduceFn, Reduction};
pub use error::{Error, Result};

/// Largest tag a send may use (MPI's `MPI_TAG_UB`, at least 32767 by the standard).
pub const TAG_UB: i32 = (1 << 30) - 1;

/// `BB_VERBOSE=1` prints protocol decisions (e.g. the single-copy fallback) once each on stderr.
pub static VERBOSE: tunables::Tunable =
    tunables::Tunable::new("BB_VERBOSE", 0, "1 prints one line per notable protocol decision on stderr")
        .read_at(tunables::Effect::EachUse);

/// Prints a verbose line when `BB_VERBOSE` is set.
pub(crate) fn verbose(msg: std::fmt::Arguments<'_>) {
    if VERBOSE.get() != 0 {
        eprintln!("billboard[{}]: {msg}", std::process::id());
    }
}

//! One file per subcommand. `floor` always works; the engine subcommands need the `engine`
//! feature (billboard's native API) and otherwise say so and fail.

pub mod floor;

#[cfg(feature = "engine")]
mod bandwidth;
#[cfg(feature = "engine")]
mod engine;
#[cfg(feature = "engine")]
mod exchange;
#[cfg(feature = "engine")]
mod latency;
#[cfg(feature = "engine")]
mod ring;

#[cfg(feature = "engine")]
pub use self::{
    bandwidth::run as bandwidth, exchange::run as exchange, latency::run as latency,
    ring::run as ring,
};

use crate::table::{series_aligned, series_csv, Extra, Metric, Point};
use crate::Options;

/// Error type of the subcommands: anything printable (I/O, billboard, argument errors).
pub type CmdResult = Result<(), Box<dyn std::error::Error>>;

/// Sends in flight per bandwidth window: 64, as OSU's `osu_bw` uses.
pub const DEFAULT_WINDOW: usize = 64;

/// Prints a series as an aligned table under `title`, or as CSV.
pub fn print_series(
    options: &Options,
    title: &str,
    metric: Metric,
    points: &[Point],
    extras: &[Extra],
) {
    if options.csv {
        print!("{}", series_csv(metric, points, extras).render_csv());
    } else {
        println!("# {title}");
        print!(
            "{}",
            series_aligned(metric, "floor", points, extras).render_aligned()
        );
    }
}

#[cfg(not(feature = "engine"))]
mod without_engine {
    use super::CmdResult;
    use crate::Options;

    fn unavailable(name: &str) -> CmdResult {
        Err(format!("`{name}` needs billboard's native API: this bb-bench was built without the `engine` feature").into())
    }

    pub fn latency(_: &Options) -> CmdResult {
        unavailable("latency")
    }

    pub fn bandwidth(_: &Options, _window: usize) -> CmdResult {
        unavailable("bandwidth")
    }

    pub fn exchange(_: &Options) -> CmdResult {
        unavailable("exchange")
    }

    pub fn ring(_: &Options) -> CmdResult {
        unavailable("ring")
    }
}

#[cfg(not(feature = "engine"))]
pub use without_engine::{bandwidth, exchange, latency, ring};

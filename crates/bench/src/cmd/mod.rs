//! One file per subcommand; `engine.rs` holds what the engine subcommands share.

pub mod floor;
pub mod plot;
pub mod tcp_floor;
pub mod udp_floor;

mod am;
mod bandwidth;
mod engine;
mod exchange;
mod latency;
mod ring;

pub use self::{
    am::run as am, bandwidth::run as bandwidth, exchange::run as exchange, latency::run as latency, ring::run as ring,
};

use crate::table::{series_aligned, series_csv, Extra, Metric, Point};
use crate::Options;

/// Error type of the subcommands: anything printable (I/O, billboard, argument errors).
pub type CmdResult = Result<(), Box<dyn std::error::Error>>;

/// Sends in flight per bandwidth window: 64, as OSU's `osu_bw` uses.
pub const DEFAULT_WINDOW: usize = 64;

/// Prints a series as an aligned table under `title`, or as CSV.
pub fn print_series(options: &Options, title: &str, metric: Metric, points: &[Point], extras: &[Extra]) {
    if options.csv {
        print!("{}", series_csv(metric, points, extras).render_csv());
    } else {
        println!("# {title}");
        print!("{}", series_aligned(metric, "floor", points, extras).render_aligned());
    }
}

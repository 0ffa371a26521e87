//! `bb-bench`: Billboard's point-to-point benchmarks, each shown beside the floor of the bare
//! channel measured in the same run (ARCHITECTURE.md, "How we measure").
//!
//! ```text
//! bb-bench floor                       # no engine needed: shm ping-pong, memcpy, process_vm_readv
//! bbrun -n 2 bb-bench latency          # one-way latency = round trip / 2
//! bbrun -n 2 bb-bench bandwidth        # window of 64 sends, then one ack
//! bbrun -n 2 bb-bench exchange         # both ranks send and receive at once
//! bbrun -n 4 bb-bench ring             # per-hop latency = round time / ranks
//! bbrun -n 2 bb-bench am               # active-message round trip vs the ping-pong
//! bb-bench tcp-floor --listen A:P      # raw TCP floor, one end; on the other end:
//! bb-bench tcp-floor --connect A:P     #   ping-pong and streaming, polled and blocking sockets
//! bb-bench udp-floor --listen A:P      # raw UDP floor, one end; on the other end:
//! bb-bench udp-floor --connect A:P     #   polled ping-pong and streaming per datagram size
//! bb-bench plot all.csv DIR            # SVGs of bench/peers/coll.sh's table, one per collective
//! ```

mod cmd;
mod floor;
mod peer;
mod plan;
mod stats;
mod table;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::plan::{parse_size, DEFAULT_MAX_SIZE, DEFAULT_TRIALS, MIN_TRIALS};

#[derive(Parser)]
#[command(name = "bb-bench", version, about = "Billboard benchmarks, each against the floor of the bare channel")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The bare channel alone: shared-memory ping-pong and exchange, memcpy, process_vm_readv.
    Floor(Options),
    /// One-way latency (round trip / 2) between ranks 0 and 1, sizes 0 B and 1 B..4 MiB.
    Latency(Options),
    /// Streaming bandwidth from rank 0 to rank 1: a window of non-blocking sends, then one ack.
    Bandwidth {
        #[command(flatten)]
        options: Options,
        /// Sends in flight per window (one trial is one window).
        #[arg(long, default_value_t = cmd::DEFAULT_WINDOW)]
        window: usize,
    },
    /// Pairwise exchange: ranks 0 and 1 send and receive at once; time per iteration / 2.
    Exchange(Options),
    /// Ring: rank r sends to r+1 and receives from r-1; per-hop latency = round time / ranks.
    Ring(Options),
    /// Active messages: round trip to a null handler at rank 1, beside the send/recv ping-pong.
    Am(Options),
    /// Raw TCP between two processes (no engine): ping-pong and streaming, polled and blocking.
    TcpFloor(cmd::tcp_floor::TcpFloorArgs),
    /// Raw UDP between two processes (no engine): polled ping-pong and streaming per datagram size.
    UdpFloor(cmd::udp_floor::UdpFloorArgs),
    /// SVGs of `bench/peers/coll.sh`'s CSV: time against size per collective, a line per implementation.
    Plot(cmd::plot::PlotArgs),
}

/// Options every subcommand takes.
#[derive(Args, Clone, Debug)]
pub struct Options {
    /// Timed trials per size (after warm-up); the top and bottom 10% are dropped.
    #[arg(long, default_value_t = DEFAULT_TRIALS, value_parser = parse_trials)]
    pub trials: usize,
    /// Only these sizes, comma-separated (`0,8,8K,1M`).
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Option<Vec<usize>>,
    /// Largest size to run (`4M`, `65536`).
    #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_MAX_SIZE)]
    pub max_size: usize,
    /// CSV instead of an aligned table.
    #[arg(long)]
    pub csv: bool,
    /// Skip the floor measurement (its columns stay empty); for quick runs.
    #[arg(long)]
    pub no_floor: bool,
}

pub(crate) fn parse_trials(text: &str) -> Result<usize, String> {
    let n: usize = text.parse().map_err(|_| format!("not a number: {text:?}"))?;
    if n < MIN_TRIALS {
        return Err(format!("at least {MIN_TRIALS} trials (the 10% trim needs them)"));
    }
    Ok(n)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Floor(o) => cmd::floor::run(o),
        Command::Latency(o) => cmd::latency(o),
        Command::Bandwidth { options, window } => cmd::bandwidth(options, *window),
        Command::Exchange(o) => cmd::exchange(o),
        Command::Ring(o) => cmd::ring(o),
        Command::Am(o) => cmd::am(o),
        Command::TcpFloor(args) => cmd::tcp_floor::run(args),
        Command::UdpFloor(args) => cmd::udp_floor::run(args),
        Command::Plot(args) => cmd::plot::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bb-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

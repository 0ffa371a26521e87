//! `bb-bench tcp-floor`: the raw TCP floor between two processes, possibly on two hosts or in two
//! network namespaces (see [`crate::floor::tcp`]): ping-pong latency and one-way streaming
//! bandwidth, each with polled and with blocking sockets.
//!
//! ```text
//! bb-bench tcp-floor --listen 10.232.0.1:7000      # one end: answers, prints nothing
//! bb-bench tcp-floor --connect 10.232.0.1:7000     # the other: drives, prints the tables
//! ```

use std::net::{SocketAddr, TcpListener};

use clap::{ArgGroup, Args, ValueEnum};

use super::engine::time_trials;
use super::CmdResult;
use crate::floor::tcp::{check_payload, serve, wire_len, Link, Segment, Wait, DRIVER_BYTE, SERVER_BYTE};
use crate::plan::{latency_iters, parse_size, Trials, DEFAULT_TRIALS};
use crate::stats::{rate_gbps, Summary};
use crate::table::{Cell, Table};

/// Bytes one streaming trial moves: 8 MiB keeps the closing ack's round trip (tens of us) under
/// 1% of a trial at a few GB/s, and 100+ trials per size within a couple of seconds.
const STREAM_TRIAL_BYTES: usize = 8 << 20;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("role").required(true).args(["listen", "connect"])))]
pub struct TcpFloorArgs {
    /// Answer: accept one connection on ADDR:PORT and do what the connecting side asks.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Measure: connect to `tcp-floor --listen` at ADDR:PORT (retrying for 10 s) and print tables.
    #[arg(long, value_name = "ADDR:PORT")]
    connect: Option<SocketAddr>,
    /// Timed trials per size (after warm-up); the top and bottom 10% are dropped.
    #[arg(long, default_value_t = DEFAULT_TRIALS, value_parser = crate::parse_trials)]
    trials: usize,
    /// Ping-pong message sizes (0 B moves one byte: TCP has no empty message).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "0,1,8,64,512,4K,64K")]
    sizes: Vec<usize>,
    /// Streaming message sizes (one `send` each).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64K,1M,4M")]
    stream_sizes: Vec<usize>,
    /// How the sockets wait: busy-polling non-blocking sockets, sleeping blocking ones, or both.
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    wait: Modes,
    /// Which measurements: ping-pong latency, streaming bandwidth, or both.
    #[arg(long, value_enum, default_value_t = Tests::Both)]
    test: Tests,
    /// CSV instead of aligned tables (with `--test both`, two CSV blocks separated by an empty line).
    #[arg(long)]
    csv: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Modes {
    Polled,
    Blocking,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Tests {
    Latency,
    Bandwidth,
    Both,
}

impl Modes {
    fn has(self, wait: Wait) -> bool {
        match self {
            Modes::Both => true,
            Modes::Polled => wait == Wait::Polled,
            Modes::Blocking => wait == Wait::Blocking,
        }
    }
}

pub fn run(args: &TcpFloorArgs) -> CmdResult {
    if let Some(addr) = args.listen {
        let listener = TcpListener::bind(addr)?;
        eprintln!("bb-bench tcp-floor: listening on {}", listener.local_addr()?);
        serve(Link::accept(&listener)?)?;
        return Ok(());
    }
    let addr = args.connect.expect("clap requires --listen or --connect");
    let mut link = Link::connect(addr)?;
    crate::floor::warn_if_busy();
    let trials = Trials::new(args.trials);
    let waits: Vec<Wait> = [Wait::Polled, Wait::Blocking].into_iter().filter(|&w| args.wait.has(w)).collect();
    let mut blocks = Vec::new();
    if args.test != Tests::Bandwidth {
        let rows = args.sizes.iter().map(|&size| per_wait(&waits, |w| pingpong(&mut link, w, size, trials)));
        let rows = rows.collect::<Result<Vec<_>, _>>()?;
        let title = format!(
            "tcp-floor latency: raw TCP ping-pong with {addr}, one-way us = round trip / 2 (polled: non-blocking \
             sockets busy-polling recv(MSG_DONTWAIT); blocking: sleeping in recv); TCP_NODELAY"
        );
        blocks.push((title, table(&args.sizes, &rows, LATENCY, args.csv)));
    }
    if args.test != Tests::Latency {
        let rows = args.stream_sizes.iter().map(|&size| per_wait(&waits, |w| stream(&mut link, w, size, trials)));
        let rows = rows.collect::<Result<Vec<_>, _>>()?;
        let title = format!(
            "tcp-floor bandwidth: one-way stream to {addr}, {} MiB per trial then a 1-byte ack, GB/s (1e9 B/s)",
            STREAM_TRIAL_BYTES >> 20
        );
        blocks.push((title, table(&args.stream_sizes, &rows, BANDWIDTH, args.csv)));
    }
    link.announce(Segment::End)?;
    for (i, (title, table)) in blocks.iter().enumerate() {
        if args.csv {
            print!("{}{}", if i > 0 { "\n" } else { "" }, table.render_csv());
        } else {
            println!("{}# {title}", if i > 0 { "\n" } else { "" });
            print!("{}", table.render_aligned());
        }
    }
    Ok(())
}

/// The polled and blocking summaries of one size (missing where not measured).
fn per_wait(
    waits: &[Wait],
    mut measure: impl FnMut(Wait) -> std::io::Result<Summary>,
) -> std::io::Result<[Summary; 2]> {
    let mut row = [Summary::MISSING; 2];
    for &wait in waits {
        row[wait as usize] = measure(wait)?;
    }
    Ok(row)
}

/// One-way microseconds at `size`: `latency_iters(size)` round trips per trial, as `latency` does.
fn pingpong(link: &mut Link, wait: Wait, size: usize, trials: Trials) -> std::io::Result<Summary> {
    let iters = latency_iters(size);
    link.announce(Segment::PingPong { wait, size, round_trips: trials.total() * iters })?;
    let out = vec![DRIVER_BYTE; wire_len(size)];
    let mut inbox = vec![0u8; wire_len(size)];
    let summary = time_trials(
        trials,
        || -> std::io::Result<()> {
            for _ in 0..iters {
                link.send_all(&out)?;
                link.recv_exact(&mut inbox)?;
            }
            Ok(())
        },
        |secs| secs / iters as f64 / 2.0 * 1e6,
    )?;
    check_payload(&inbox, SERVER_BYTE)?;
    Ok(summary)
}

/// GB/s streaming messages of `size`: a trial sends [`STREAM_TRIAL_BYTES`] and waits for the ack.
fn stream(link: &mut Link, wait: Wait, size: usize, trials: Trials) -> std::io::Result<Summary> {
    let per_trial = (STREAM_TRIAL_BYTES / size.max(1)).max(1);
    link.announce(Segment::Stream { wait, size, per_trial, trials: trials.total() })?;
    let out = vec![DRIVER_BYTE; wire_len(size)];
    let mut ack = [0u8];
    let times = time_trials(
        trials,
        || {
            for _ in 0..per_trial {
                link.send_all(&out)?;
            }
            link.recv_exact(&mut ack)
        },
        |secs| secs,
    )?;
    check_payload(&ack, SERVER_BYTE)?;
    Ok(rate_gbps(times, (per_trial * wire_len(size)) as f64))
}

/// Column names of one table: (human, CSV) for median, min/best, mean of each wait mode. The CSV
/// starts with `size_bytes,<metric>_median` of the polled floor, like every other bb-bench CSV.
type Columns = [(&'static str, &'static str); 6];

const LATENCY: Columns = [
    ("polled us", "oneway_us_median"),
    ("polled min", "polled_oneway_us_min"),
    ("polled mean", "polled_oneway_us_mean"),
    ("blocking us", "blocking_oneway_us_median"),
    ("blocking min", "blocking_oneway_us_min"),
    ("blocking mean", "blocking_oneway_us_mean"),
];

const BANDWIDTH: Columns = [
    ("polled GB/s", "gbps_median"),
    ("polled best", "polled_gbps_best"),
    ("polled mean", "polled_gbps_mean"),
    ("blocking GB/s", "blocking_gbps_median"),
    ("blocking best", "blocking_gbps_best"),
    ("blocking mean", "blocking_gbps_mean"),
];

fn table(sizes: &[usize], rows: &[[Summary; 2]], columns: Columns, csv: bool) -> Table {
    let size = if csv { "size_bytes" } else { "size" };
    let headers: Vec<&str> = std::iter::once(size).chain(columns.iter().map(|c| if csv { c.1 } else { c.0 })).collect();
    let mut table = Table::new(&headers);
    for (&size, [polled, blocking]) in sizes.iter().zip(rows) {
        let values = [polled.median, polled.min, polled.mean, blocking.median, blocking.min, blocking.mean];
        table.push(std::iter::once(Cell::Bytes(size)).chain(values.map(Cell::Num)).collect());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_leads_with_size_and_the_polled_median() {
        let s = |m: f64| Summary { median: m, min: m, mean: m, kept: 1 };
        let csv = table(&[0], &[[s(5.0), Summary::MISSING]], LATENCY, true).render_csv();
        let mut lines = csv.lines();
        assert!(lines.next().unwrap().starts_with("size_bytes,oneway_us_median,"));
        assert_eq!(lines.next().unwrap(), "0,5.000,5.000,5.000,,,");
    }
}

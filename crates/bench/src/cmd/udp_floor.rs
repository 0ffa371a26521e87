//! `bb-bench udp-floor`: the raw UDP floor between two processes, possibly on two hosts or in
//! two network namespaces (see [`crate::floor::udp`]): polled ping-pong latency and one-way
//! streaming bandwidth, at each datagram size asked for.
//!
//! ```text
//! bb-bench udp-floor --listen 10.232.0.1:7000      # one end: answers, prints nothing
//! bb-bench udp-floor --connect 10.232.0.1:7000     # the other: drives, prints the tables
//! ```
//!
//! `--datagram` is the UDP payload of one datagram; the UDP route's `BB_UDP_MTU` counts the same
//! bytes (its header and MAC included), so `--datagram 1472` is the floor of `BB_UDP_MTU=1472`.

use std::net::{SocketAddr, TcpListener};

use clap::{ArgGroup, Args};

use super::engine::time_trials;
use super::CmdResult;
use crate::floor::tcp::{DRIVER_BYTE, SERVER_BYTE};
use crate::floor::udp::{check_payload, serve, Command, Link, MAX_DATAGRAM};
use crate::plan::{latency_iters, parse_size, Trials, DEFAULT_TRIALS};
use crate::stats::{rate_gbps, Summary};
use crate::table::{Cell, Table};

/// Bytes one streaming trial sends, as the TCP floor's.
const STREAM_TRIAL_BYTES: usize = 8 << 20;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("role").required(true).args(["listen", "connect"])))]
pub struct UdpFloorArgs {
    /// Answer: accept the driver's control connection on ADDR:PORT (TCP) and take its datagrams
    /// on the same address and port (UDP).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Measure: connect to `udp-floor --listen` at ADDR:PORT (retrying for 10 s), print tables.
    #[arg(long, value_name = "ADDR:PORT")]
    connect: Option<SocketAddr>,
    /// Timed trials per size (after warm-up); the top and bottom 10% are dropped.
    #[arg(long, default_value_t = DEFAULT_TRIALS, value_parser = crate::parse_trials)]
    trials: usize,
    /// Ping-pong message sizes (0 B: one empty datagram).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "0,1,8,64,512,4K,64K")]
    sizes: Vec<usize>,
    /// Streaming message sizes.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64K,1M,4M")]
    stream_sizes: Vec<usize>,
    /// UDP payload bytes per datagram; each size is measured at each of these.
    #[arg(long, value_delimiter = ',', value_parser = parse_datagram, default_value = "1472,65507")]
    datagram: Vec<usize>,
    /// CSV instead of aligned tables (two CSV blocks separated by an empty line).
    #[arg(long)]
    csv: bool,
}

fn parse_datagram(text: &str) -> Result<usize, String> {
    let n = parse_size(text)?;
    if !(64..=MAX_DATAGRAM).contains(&n) {
        return Err(format!("a datagram carries 64 to {MAX_DATAGRAM} bytes, not {n}"));
    }
    Ok(n)
}

pub fn run(args: &UdpFloorArgs) -> CmdResult {
    if let Some(addr) = args.listen {
        let listener = TcpListener::bind(addr)?;
        eprintln!("bb-bench udp-floor: listening on {}", listener.local_addr()?);
        serve(Link::accept(&listener)?)?;
        return Ok(());
    }
    let addr = args.connect.expect("clap requires --listen or --connect");
    let mut link = Link::connect(addr)?;
    crate::floor::warn_if_busy();
    let trials = Trials::new(args.trials);
    let mut latency = Table::new(&header(args.csv, ["oneway_us_median", "oneway_us_min", "oneway_us_mean"]));
    for &datagram in &args.datagram {
        for &size in &args.sizes {
            let s = pingpong(&mut link, size, datagram, trials)?;
            latency.push(row(size, datagram, [s.median, s.min, s.mean]));
        }
    }
    let mut bandwidth =
        Table::new(&header(args.csv, ["gbps_median", "gbps_best", "gbps_mean", "delivered_pct_median"]));
    for &datagram in &args.datagram {
        for &size in &args.stream_sizes {
            let (s, delivered) = stream(&mut link, size, datagram, trials)?;
            bandwidth.push(row(size, datagram, [s.median, s.min, s.mean, delivered]));
        }
    }
    link.announce(Command::End)?;
    let blocks = [
        (format!("udp-floor latency: raw UDP ping-pong with {addr}, polled non-blocking sockets, one-way us = round trip / 2"), latency),
        (
            format!(
                "udp-floor bandwidth: one-way stream to {addr}, {} MiB per trial, GB/s (1e9 B/s) of bytes delivered",
                STREAM_TRIAL_BYTES >> 20
            ),
            bandwidth,
        ),
    ];
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

fn header<const N: usize>(csv: bool, columns: [&'static str; N]) -> Vec<&'static str> {
    let lead = if csv { ["size_bytes", "datagram_bytes"] } else { ["size", "datagram"] };
    lead.into_iter().chain(columns).collect()
}

fn row<const N: usize>(size: usize, datagram: usize, values: [f64; N]) -> Vec<Cell> {
    [Cell::Bytes(size), Cell::Num(datagram as f64)].into_iter().chain(values.map(Cell::Num)).collect()
}

/// One-way microseconds at `size`: `latency_iters(size)` round trips per trial.
fn pingpong(link: &mut Link, size: usize, datagram: usize, trials: Trials) -> std::io::Result<Summary> {
    let iters = latency_iters(size);
    link.announce(Command::PingPong { size, datagram, round_trips: trials.total() * iters })?;
    let out = vec![DRIVER_BYTE; size];
    let mut inbox = vec![0u8; size];
    let summary = time_trials(
        trials,
        || -> std::io::Result<()> {
            for _ in 0..iters {
                link.send_message(&out, datagram)?;
                link.recv_message(&mut inbox)?;
            }
            Ok(())
        },
        |secs| secs / iters as f64 / 2.0 * 1e6,
    )?;
    check_payload(&inbox, SERVER_BYTE)?;
    Ok(summary)
}

/// GB/s delivered streaming messages of `size`, and the median percentage of bytes delivered.
fn stream(link: &mut Link, size: usize, datagram: usize, trials: Trials) -> std::io::Result<(Summary, f64)> {
    let per_trial = (STREAM_TRIAL_BYTES / size.max(1)).max(1);
    link.announce(Command::Stream { trials: trials.total() })?;
    let (mut trial, mut delivered) = (0u64, Vec::with_capacity(trials.total()));
    let sent = (per_trial * size) as f64;
    let rates = time_trials(
        trials,
        || -> std::io::Result<()> {
            trial += 1;
            delivered.push(link.stream_trial(trial, size, datagram, per_trial)? as f64 / sent);
            Ok(())
        },
        // A trial's time; its bytes are known only after it: turned into a rate below.
        |secs| secs,
    )?;
    delivered.sort_by(f64::total_cmp);
    let share = delivered[delivered.len() / 2];
    Ok((rate_gbps(rates, sent * share), share * 100.0))
}

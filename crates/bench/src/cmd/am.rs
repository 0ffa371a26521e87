//! `bbrun -n 2 bb-bench am`: round trip of an active message to a null handler (it only
//! answers, with the bytes it got, to a handler at rank 0 that counts), beside the blocking
//! send/recv ping-pong of the same sizes and the bare shared-memory ping-pong, all in the same
//! run, size by size (ping-pong trials, then active-message trials).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use billboard::{ActiveHandler, ActiveMessage, Communicator, Outbox};

use super::engine::{check_bytes, floor_on_rank0, start, time_trials, Session, DATA_TAG, PAYLOAD_BYTE};
use super::{print_series, CmdResult};
use crate::floor::{self, LatencyFloor};
use crate::plan::{latency_iters, latency_sizes};
use crate::stats::Summary;
use crate::table::{Extra, Metric, Point};
use crate::Options;

/// Round-trip microseconds (the floor column is twice the bare one-way figure).
const ROUNDTRIP_US: Metric = Metric { csv: "roundtrip_us", unit: "us", best: "min" };

/// Largest default size: active messages are for small requests; `--sizes` goes further.
const MAX_DEFAULT: usize = 64 << 10;

/// Handler ids: the null handler at rank 1, the answer counter at rank 0.
const NULL: u16 = 1;
const ANSWER: u16 = 2;

/// Answers every message with its own bytes, the least a handler that replies does; counts
/// them, so rank 1 knows when a trial is over.
struct Null(Count);

impl ActiveHandler for Null {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        out.send(msg.source, ANSWER, &[], msg.payload).expect("rank 0 is a rank");
        self.0.on_message(msg, out);
    }
}

/// Counts messages (and checks their size).
struct Count(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl ActiveHandler for Count {
    fn on_message(&mut self, msg: ActiveMessage<'_>, _: &mut Outbox<'_>) {
        self.1.store(msg.payload.len(), Ordering::Relaxed);
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Progress until `count` reaches `n`.
fn until(world: &Communicator, count: &AtomicUsize, n: usize) {
    while count.load(Ordering::Relaxed) < n {
        world.progress();
    }
}

pub fn run(options: &Options) -> CmdResult {
    let Session { universe, world, rank, sizes, trials, .. } = start("am", options, latency_sizes(MAX_DEFAULT))?;
    let missing = || vec![LatencyFloor::MISSING; sizes.len()];
    let floor = floor_on_rank0(&world, options.no_floor, missing, || floor::pingpong(&sizes, trials))?;

    let (count, last_len) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    match rank {
        0 => world.register_handler(ANSWER, Count(count.clone(), last_len.clone()))?,
        1 => world.register_handler(NULL, Null(Count(count.clone(), last_len.clone())))?,
        _ => {}
    }
    world.barrier()?;

    let max = sizes.iter().copied().max().unwrap_or(0);
    let send_buf = vec![PAYLOAD_BYTE; max];
    let mut recv_buf = vec![0u8; max];
    let (mut points, mut pingpong) = (Vec::new(), Vec::new());
    let mut seen = 0;
    for (i, &size) in sizes.iter().enumerate() {
        let iters = latency_iters(size);
        let round_trip_us = |secs: f64| secs / iters as f64 * 1e6;
        let pp = time_trials(
            trials,
            || -> CmdResult {
                for _ in 0..iters {
                    match rank {
                        0 => {
                            world.send(&send_buf[..size], 1, DATA_TAG)?;
                            check_bytes(&world.recv(&mut recv_buf[..size], 1, DATA_TAG)?, size)?;
                        }
                        1 => {
                            check_bytes(&world.recv(&mut recv_buf[..size], 0, DATA_TAG)?, size)?;
                            world.send(&send_buf[..size], 0, DATA_TAG)?;
                        }
                        _ => {}
                    }
                }
                Ok(())
            },
            round_trip_us,
        )?;
        let am = time_trials(
            trials,
            || -> CmdResult {
                match rank {
                    0 => {
                        for _ in 0..iters {
                            world.send_active(1, NULL, &[], &send_buf[..size])?.wait()?;
                            seen += 1;
                            until(&world, &count, seen);
                        }
                    }
                    1 => {
                        seen += iters;
                        until(&world, &count, seen);
                    }
                    _ => {}
                }
                Ok(())
            },
            round_trip_us,
        )?;
        if rank < 2 && last_len.load(Ordering::Relaxed) != size {
            return Err(format!("rank {rank}: an active message of {size} B arrived with another size").into());
        }
        let (value, pp) = if rank == 0 { (am, pp.median) } else { (Summary::MISSING, f64::NAN) };
        points.push(Point { size, value, floor: 2.0 * floor[i].best_median() });
        pingpong.push(pp);
    }
    world.barrier()?;
    if rank == 0 {
        let title = "am: active-message round trip to a null handler (it answers with the bytes), ranks 0<->1, \
                     vs send/recv ping-pong round trip and bare shm ping-pong round trip (floor = 2 x one-way)";
        let ratio: Vec<f64> = points.iter().zip(&pingpong).map(|(p, pp)| p.value.median / pp).collect();
        let extras = [
            Extra { human: "ping-pong us", csv: "pingpong_roundtrip_us_median", values: pingpong },
            Extra { human: "x ping-pong", csv: "ratio_to_pingpong", values: ratio },
        ];
        print_series(options, title, ROUNDTRIP_US, &points, &extras);
    }
    universe.finalize()?;
    Ok(())
}

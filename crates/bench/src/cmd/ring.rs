//! `bbrun -n N bb-bench ring`: a token goes round all ranks: rank r receives from r-1 and sends
//! to r+1 (rank 0 starts and ends the round). Per-hop latency = round time / N, beside the
//! one-way time of the bare shared-memory ping-pong of the same run.

use super::engine::{check_bytes, floor_on_rank0, start, time_trials, Session, DATA_TAG, PAYLOAD_BYTE};
use super::latency::floor_extras;
use super::{print_series, CmdResult};
use crate::floor::{self, LatencyFloor};
use crate::plan::{latency_iters, latency_sizes};
use crate::stats::Summary;
use crate::table::{Point, ONEWAY_US};
use crate::Options;

pub fn run(options: &Options) -> CmdResult {
    let Session { universe, world, rank, ranks, sizes, trials } =
        start("ring", options, latency_sizes(options.max_size))?;
    let missing = || vec![LatencyFloor::MISSING; sizes.len()];
    let floor = floor_on_rank0(&world, options.no_floor, missing, || floor::pingpong(&sizes, trials))?;

    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    let max = sizes.iter().copied().max().unwrap_or(0);
    let send_buf = vec![PAYLOAD_BYTE; max];
    let mut recv_buf = vec![0u8; max];
    let mut points = Vec::with_capacity(sizes.len());
    for (i, &size) in sizes.iter().enumerate() {
        let iters = latency_iters(size);
        let round_op = || -> CmdResult {
            for _ in 0..iters {
                if rank == 0 {
                    world.send(&send_buf[..size], next, DATA_TAG)?;
                    check_bytes(&world.recv(&mut recv_buf[..size], prev, DATA_TAG)?, size)?;
                } else {
                    check_bytes(&world.recv(&mut recv_buf[..size], prev, DATA_TAG)?, size)?;
                    world.send(&send_buf[..size], next, DATA_TAG)?;
                }
            }
            Ok(())
        };
        let per_hop_us = |secs: f64| secs / iters as f64 / ranks as f64 * 1e6;
        let value = time_trials(trials, round_op, per_hop_us)?;
        if recv_buf[..size].iter().any(|&b| b != PAYLOAD_BYTE) {
            return Err(format!("rank {rank}: payload of {size} B arrived corrupted").into());
        }
        let value = if rank == 0 { value } else { Summary::MISSING };
        points.push(Point { size, value, floor: floor[i].best_median() });
    }
    world.barrier()?;
    if rank == 0 {
        let title =
            format!("ring: billboard per-hop latency (round time / {ranks}) over {ranks} ranks, vs bare shm one-way");
        print_series(options, &title, ONEWAY_US, &points, &floor_extras(&floor));
    }
    universe.finalize()?;
    Ok(())
}

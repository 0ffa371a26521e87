//! `bbrun -n 2 bb-bench exchange`: the pairwise exchange of seed 001 (PSPVM): ranks 0 and 1
//! both post a receive and a send to each other and wait for both, every iteration. Reported
//! as time per iteration / 2, comparable with one-way latency, beside the bare channel doing
//! the same exchange.

use super::engine::{check_bytes, floor_on_rank0, start, time_trials, Session, DATA_TAG, PAYLOAD_BYTE};
use super::{print_series, CmdResult};
use crate::floor;
use crate::plan::{latency_iters, latency_sizes};
use crate::stats::Summary;
use crate::table::{Extra, Point, ONEWAY_US};
use crate::Options;

pub fn run(options: &Options) -> CmdResult {
    let Session { universe, world, rank, sizes, trials, .. } =
        start("exchange", options, latency_sizes(options.max_size))?;
    let missing = || vec![Summary::MISSING; sizes.len()];
    let floor = floor_on_rank0(&world, options.no_floor, missing, || floor::exchange(&sizes, trials))?;

    let max = sizes.iter().copied().max().unwrap_or(0);
    let send_buf = vec![PAYLOAD_BYTE; max];
    let mut recv_buf = vec![0u8; max];
    let mut points = Vec::with_capacity(sizes.len());
    for (i, &size) in sizes.iter().enumerate() {
        let iters = latency_iters(size);
        let value = if rank < 2 {
            let peer = 1 - rank;
            let exchange_op = || -> CmdResult {
                for _ in 0..iters {
                    // SAFETY: both requests are waited for right below (neither is leaked); the
                    // unsafe forms rather than a scope per iteration keep the timing the engine's.
                    let recv = unsafe { world.irecv(&mut recv_buf[..size], peer, DATA_TAG) }?;
                    // SAFETY: as above.
                    let send = unsafe { world.isend(&send_buf[..size], peer, DATA_TAG) }?;
                    let statuses = billboard::wait_all(vec![recv, send])?;
                    check_bytes(&statuses[0], size)?;
                }
                Ok(())
            };
            let half_iteration_us = |secs: f64| secs / iters as f64 / 2.0 * 1e6;
            let summary = time_trials(trials, exchange_op, half_iteration_us)?;
            if recv_buf[..size].iter().any(|&b| b != PAYLOAD_BYTE) {
                return Err(format!("rank {rank}: payload of {size} B arrived corrupted").into());
            }
            summary
        } else {
            Summary::MISSING
        };
        points.push(Point { size, value, floor: floor[i].median });
    }
    world.barrier()?;
    if rank == 0 {
        // Bytes moved per iteration (both directions) over the iteration time, as seed 001's
        // throughput column relates to its latency column.
        let gbps = points.iter().map(|p| 2.0 * p.size as f64 / (2.0 * p.value.median * 1e-6) / 1e9).collect();
        let extras = [Extra { human: "both ways GB/s", csv: "both_ways_gbps_median", values: gbps }];
        let title =
            "exchange: billboard ranks 0<->1 isend+irecv+wait both, time per iteration / 2, vs bare shm exchange";
        print_series(options, title, ONEWAY_US, &points, &extras);
    }
    universe.finalize()?;
    Ok(())
}

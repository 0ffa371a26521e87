//! `bbrun -n 2 bb-bench latency`: ping-pong between ranks 0 and 1 with blocking send and recv;
//! one-way latency = round trip / 2, beside the bare shared-memory ping-pong of the same run.

use super::engine::{check_bytes, floor_on_rank0, start, time_trials, Session, DATA_TAG, PAYLOAD_BYTE};
use super::{print_series, CmdResult};
use crate::floor::{self, LatencyFloor};
use crate::plan::{latency_iters, latency_sizes};
use crate::stats::Summary;
use crate::table::{Extra, Point, ONEWAY_US};
use crate::Options;

pub fn run(options: &Options) -> CmdResult {
    let Session { universe, world, rank, sizes, trials, .. } =
        start("latency", options, latency_sizes(options.max_size))?;
    let missing = || vec![LatencyFloor::MISSING; sizes.len()];
    let floor = floor_on_rank0(&world, options.no_floor, missing, || floor::pingpong(&sizes, trials))?;

    let max = sizes.iter().copied().max().unwrap_or(0);
    let send_buf = vec![PAYLOAD_BYTE; max];
    let mut recv_buf = vec![0u8; max];
    let mut points = Vec::with_capacity(sizes.len());
    for (i, &size) in sizes.iter().enumerate() {
        let iters = latency_iters(size);
        let one_way_us = |secs: f64| secs / iters as f64 / 2.0 * 1e6;
        let value = match rank {
            0 => time_trials(
                trials,
                || -> CmdResult {
                    for _ in 0..iters {
                        world.send(&send_buf[..size], 1, DATA_TAG)?;
                        check_bytes(&world.recv(&mut recv_buf[..size], 1, DATA_TAG)?, size)?;
                    }
                    Ok(())
                },
                one_way_us,
            )?,
            1 => {
                // Rank 1 echoes; its own clock is not reported.
                time_trials(
                    trials,
                    || -> CmdResult {
                        for _ in 0..iters {
                            check_bytes(&world.recv(&mut recv_buf[..size], 0, DATA_TAG)?, size)?;
                            world.send(&send_buf[..size], 0, DATA_TAG)?;
                        }
                        Ok(())
                    },
                    one_way_us,
                )?;
                Summary::MISSING
            }
            _ => Summary::MISSING,
        };
        if size > 0 && rank < 2 && recv_buf[..size].iter().any(|&b| b != PAYLOAD_BYTE) {
            return Err(format!("rank {rank}: payload of {size} B arrived corrupted").into());
        }
        points.push(Point { size, value, floor: floor[i].best_median() });
    }
    world.barrier()?;
    if rank == 0 {
        let title = "latency: billboard one-way (round trip / 2), ranks 0<->1, vs bare shm ping-pong";
        print_series(options, title, ONEWAY_US, &points, &floor_extras(&floor));
    }
    universe.finalize()?;
    Ok(())
}

/// The bare ping-pongs the latency floor is the fastest of, shown beside it.
pub fn floor_extras(floor: &[LatencyFloor]) -> [Extra; 6] {
    [
        Extra {
            human: "copy floor us",
            csv: "copy_floor_oneway_us_median",
            values: floor.iter().map(|f| f.copy.median).collect(),
        },
        Extra {
            human: "1-copy floor us",
            csv: "single_copy_floor_oneway_us_median",
            values: floor.iter().map(|f| f.single_copy.median).collect(),
        },
        Extra {
            human: "shared floor us",
            csv: "shared_copy_floor_oneway_us_median",
            values: floor.iter().map(|f| f.shared_copy.median).collect(),
        },
        Extra {
            human: "pipe floor us",
            csv: "pipe_floor_oneway_us_median",
            values: floor.iter().map(|f| f.pipe.median).collect(),
        },
        Extra {
            human: "tcp blocking floor us",
            csv: "tcp_blocking_floor_oneway_us_median",
            values: floor.iter().map(|f| f.tcp.median).collect(),
        },
        Extra {
            human: "udp blocking floor us",
            csv: "udp_blocking_floor_oneway_us_median",
            values: floor.iter().map(|f| f.udp.median).collect(),
        },
    ]
}

//! `bbrun -n 2 bb-bench bandwidth`: one-way streaming from rank 0 to rank 1. A trial is one
//! window: rank 0 starts `window` non-blocking sends and waits for them, rank 1 has posted as
//! many non-blocking receives and answers with one empty ack once all have arrived; the trial
//! ends when the ack is in. GB/s = window x size bytes / trial time / 1e9.
//!
//! Rank 1 receives into `window` distinct buffers (OSU's `osu_bw` reuses one; Rust forbids
//! aliasing mutable buffers, and distinct buffers are what an application would have), so at
//! large sizes the receive side is not cache-resident. bench/peers/pingpong.c does the same.

use super::engine::{check_bytes, floor_on_rank0, start, time_trials, Session, ACK_TAG, DATA_TAG, PAYLOAD_BYTE};
use super::{print_series, CmdResult};
use crate::floor::{self, CopyFloor};
use crate::plan::bandwidth_sizes;
use crate::stats::{rate_gbps, Summary};
use crate::table::{Extra, Point, GBPS};
use crate::Options;

pub fn run(options: &Options, window: usize) -> CmdResult {
    if window == 0 {
        return Err("--window must be at least 1".into());
    }
    let Session { universe, world, rank, sizes, trials, .. } =
        start("bandwidth", options, bandwidth_sizes(options.max_size))?;
    let missing = || vec![CopyFloor::MISSING; sizes.len()];
    let floor = floor_on_rank0(&world, options.no_floor, missing, || floor::copy_bandwidth(&sizes, trials))?;

    let max = sizes.iter().copied().max().unwrap_or(0);
    let send_buf = if rank == 0 { vec![PAYLOAD_BYTE; max] } else { Vec::new() };
    let mut recv_bufs = if rank == 1 { vec![0u8; window * max.max(1)] } else { Vec::new() };
    let mut ack = [0u8; 0];
    let mut points = Vec::with_capacity(sizes.len());
    for (i, &size) in sizes.iter().enumerate() {
        let value = match rank {
            0 => {
                let window_op = || -> CmdResult {
                    let sends = (0..window)
                        // SAFETY: every request is waited for right below (none is leaked).
                        .map(|_| unsafe { world.isend(&send_buf[..size], 1, DATA_TAG) })
                        .collect::<Result<Vec<_>, _>>()?;
                    billboard::wait_all(sends)?;
                    check_bytes(&world.recv(&mut ack[..], 1, ACK_TAG)?, 0)?;
                    Ok(())
                };
                let times = time_trials(trials, window_op, |secs| secs)?;
                rate_gbps(times, (window * size) as f64)
            }
            1 => {
                let window_op = || -> CmdResult {
                    // Slots of `size` bytes, `size.max(1)` apart so a zero size still yields
                    // `window` (empty) slots.
                    let recvs = recv_bufs
                        .chunks_mut(size.max(1))
                        .take(window)
                        // SAFETY: every request is waited for right below (none is leaked).
                        .map(|slot| unsafe { world.irecv(&mut slot[..size], 0, DATA_TAG) })
                        .collect::<Result<Vec<_>, _>>()?;
                    for status in billboard::wait_all(recvs)? {
                        check_bytes(&status, size)?;
                    }
                    world.send(&ack[..], 0, ACK_TAG)?;
                    Ok(())
                };
                time_trials(trials, window_op, |secs| secs)?;
                if recv_bufs[..size].iter().any(|&b| b != PAYLOAD_BYTE) {
                    return Err(format!("rank 1: payload of {size} B arrived corrupted").into());
                }
                Summary::MISSING
            }
            _ => Summary::MISSING,
        };
        points.push(Point { size, value, floor: floor[i].best_median() });
    }
    world.barrier()?;
    if rank == 0 {
        let column =
            |human, csv, pick: fn(&CopyFloor) -> f64| Extra { human, csv, values: floor.iter().map(pick).collect() };
        let extras = [
            column("memcpy GB/s", "memcpy_gbps_median", |f| f.memcpy.median),
            column("memcpy cold GB/s", "memcpy_cold_gbps_median", |f| f.memcpy_cold.median),
            column("vm_readv GB/s", "vm_readv_gbps_median", |f| f.vm_readv.median),
            column("shared GB/s", "vm_shared_gbps_median", |f| f.vm_shared.median),
        ];
        let title = format!(
            "bandwidth: billboard rank 0 -> 1, windows of {window} isends + 1 ack (GB/s = 1e9 B/s); \
             floor = max(memcpy, process_vm_readv, shared copy)"
        );
        print_series(options, &title, GBPS, &points, &extras);
    }
    universe.finalize()?;
    Ok(())
}

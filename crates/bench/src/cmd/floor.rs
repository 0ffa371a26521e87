//! `bb-bench floor`: the bare channel alone, one row per size (0 B and 1 B..4 MiB by default).

use super::CmdResult;
use crate::floor::{self, CopyFloor, LatencyFloor};
use crate::plan::{latency_sizes, select_sizes, Trials};
use crate::stats::Summary;
use crate::table::{Cell, Table};
use crate::Options;

/// Columns: (human header, CSV header). The CSV starts with `size_bytes,oneway_us_median` (the
/// latency floor: the faster bare ping-pong) like the `latency` CSV, so scripts read both alike.
const COLUMNS: [(&str, &str); 16] = [
    ("size", "size_bytes"),
    ("floor us", "oneway_us_median"),
    ("copy us", "copy_oneway_us_median"),
    ("copy min", "copy_oneway_us_min"),
    ("copy mean", "copy_oneway_us_mean"),
    ("1-copy us", "single_copy_oneway_us_median"),
    ("shared us", "shared_copy_oneway_us_median"),
    ("pipe us", "pipe_oneway_us_median"),
    ("tcp blocking us", "tcp_blocking_oneway_us_median"),
    ("udp blocking us", "udp_blocking_oneway_us_median"),
    ("exchange us", "exchange_us_median"),
    ("memcpy GB/s", "memcpy_gbps_median"),
    ("cold GB/s", "memcpy_cold_gbps_median"),
    ("vm_readv GB/s", "vm_readv_gbps_median"),
    ("shared GB/s", "vm_shared_gbps_median"),
    ("floor GB/s", "floor_gbps_median"),
];

pub fn run(options: &Options) -> CmdResult {
    let sizes = select_sizes(latency_sizes(options.max_size), options.sizes.as_deref(), options.max_size);
    let trials = Trials::new(options.trials);
    floor::warn_if_busy();
    let pingpong = floor::pingpong(&sizes, trials)?;
    let exchange = floor::exchange(&sizes, trials)?;
    let copies = floor::copy_bandwidth(&sizes, trials)?;
    let table = floor_table(&sizes, &pingpong, &exchange, &copies, options.csv);
    if options.csv {
        print!("{}", table.render_csv());
    } else {
        println!(
            "# floor: bare shared-memory ping-pong, one-way us = round trip / 2 (copy: through shared \
             memory; 1-copy: process_vm_readv; shared: readv of the front half while the sender writes the back; pipe: blocking reads on two pipes; tcp, udp blocking: the same over loopback sockets), exchange us = iteration / 2, copy bandwidth in GB/s (1e9 B/s)"
        );
        print!("{}", table.render_aligned());
    }
    Ok(())
}

fn floor_table(
    sizes: &[usize],
    pingpong: &[LatencyFloor],
    exchange: &[Summary],
    copies: &[CopyFloor],
    csv: bool,
) -> Table {
    let headers: Vec<&str> = COLUMNS.iter().map(|(human, csv_name)| if csv { *csv_name } else { *human }).collect();
    let mut table = Table::new(&headers);
    for (i, &size) in sizes.iter().enumerate() {
        let (p, c) = (&pingpong[i], &copies[i]);
        let values = [
            p.best_median(),
            p.copy.median,
            p.copy.min,
            p.copy.mean,
            p.single_copy.median,
            p.shared_copy.median,
            p.pipe.median,
            p.tcp.median,
            p.udp.median,
            exchange[i].median,
            c.memcpy.median,
            c.memcpy_cold.median,
            c.vm_readv.median,
            c.vm_shared.median,
            c.best_median(),
        ];
        table.push(std::iter::once(Cell::Bytes(size)).chain(values.map(Cell::Num)).collect());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64) -> Summary {
        Summary { median, min: median, mean: median, kept: 1 }
    }

    #[test]
    fn csv_leads_with_size_and_oneway_median_and_picks_the_best_copy() {
        let copy = CopyFloor { memcpy: s(10.0), memcpy_cold: s(4.0), vm_readv: s(12.0), vm_shared: s(20.0) };
        let latency = LatencyFloor {
            copy: s(0.25),
            single_copy: s(0.75),
            shared_copy: s(0.5),
            pipe: s(3.0),
            tcp: s(4.0),
            udp: s(3.5),
        };
        let csv = floor_table(&[8], &[latency], &[s(0.5)], &[copy], true).render_csv();
        let mut lines = csv.lines();
        assert!(lines.next().unwrap().starts_with("size_bytes,oneway_us_median,"));
        assert_eq!(
            lines.next().unwrap(),
            "8,0.2500,0.2500,0.2500,0.2500,0.7500,0.5000,3.000,4.000,3.500,0.5000,10.00,4.000,12.00,20.00,20.00"
        );
    }
}

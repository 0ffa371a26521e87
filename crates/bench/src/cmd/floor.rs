//! `bb-bench floor`: the bare channel alone, one row per size (0 B and 1 B..4 MiB by default).

use super::CmdResult;
use crate::floor::{self, CopyFloor};
use crate::plan::{latency_sizes, select_sizes, Trials};
use crate::stats::Summary;
use crate::table::{Cell, Table};
use crate::Options;

/// Columns: (human header, CSV header). The CSV starts with `size_bytes,oneway_us_median` like
/// the `latency` CSV, so scripts read both the same way.
const COLUMNS: [(&str, &str); 9] = [
    ("size", "size_bytes"),
    ("pingpong us", "oneway_us_median"),
    ("min us", "oneway_us_min"),
    ("mean us", "oneway_us_mean"),
    ("exchange us", "exchange_us_median"),
    ("memcpy GB/s", "memcpy_gbps_median"),
    ("memcpy cold GB/s", "memcpy_cold_gbps_median"),
    ("vm_readv GB/s", "vm_readv_gbps_median"),
    ("floor GB/s", "floor_gbps_median"),
];

pub fn run(options: &Options) -> CmdResult {
    let sizes = select_sizes(
        latency_sizes(options.max_size),
        options.sizes.as_deref(),
        options.max_size,
    );
    let trials = Trials::new(options.trials);
    let pingpong = floor::pingpong(&sizes, trials)?;
    let exchange = floor::exchange(&sizes, trials)?;
    let copies = floor::copy_bandwidth(&sizes, trials)?;
    let table = floor_table(&sizes, &pingpong, &exchange, &copies, options.csv);
    if options.csv {
        print!("{}", table.render_csv());
    } else {
        println!("# floor: bare shared-memory channel (one-way us = round trip / 2) and copy bandwidth (GB/s = 1e9 B/s)");
        print!("{}", table.render_aligned());
    }
    Ok(())
}

fn floor_table(
    sizes: &[usize],
    pingpong: &[Summary],
    exchange: &[Summary],
    copies: &[CopyFloor],
    csv: bool,
) -> Table {
    let headers: Vec<&str> = COLUMNS
        .iter()
        .map(|(human, csv_name)| if csv { *csv_name } else { *human })
        .collect();
    let mut table = Table::new(&headers);
    for (i, &size) in sizes.iter().enumerate() {
        table.push(vec![
            Cell::Bytes(size),
            Cell::Num(pingpong[i].median),
            Cell::Num(pingpong[i].min),
            Cell::Num(pingpong[i].mean),
            Cell::Num(exchange[i].median),
            Cell::Num(copies[i].memcpy.median),
            Cell::Num(copies[i].memcpy_cold.median),
            Cell::Num(copies[i].vm_readv.median),
            Cell::Num(copies[i].best_median()),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64) -> Summary {
        Summary {
            median,
            min: median,
            mean: median,
            kept: 1,
        }
    }

    #[test]
    fn csv_leads_with_size_and_oneway_median_and_picks_the_best_copy() {
        let copy = CopyFloor {
            memcpy: s(10.0),
            memcpy_cold: s(4.0),
            vm_readv: s(12.0),
        };
        let csv = floor_table(&[8], &[s(0.25)], &[s(0.5)], &[copy], true).render_csv();
        let mut lines = csv.lines();
        assert!(lines
            .next()
            .unwrap()
            .starts_with("size_bytes,oneway_us_median,"));
        assert_eq!(
            lines.next().unwrap(),
            "8,0.2500,0.2500,0.2500,0.5000,10.00,4.000,12.00,12.00"
        );
    }
}

//! Output: aligned human tables and CSV, from the same rows.
//!
//! Every engine subcommand reports a [`Series`]: one [`Point`] per message size with the trimmed
//! statistics of the engine and the floor figure measured in the same run. The CSV shape is fixed
//! so scripts (bench/peers/run.sh) can merge runs by position: `size_bytes`, the median, the floor,
//! the ratio to the floor, then min and mean.

use crate::stats::Summary;

/// One table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A message size: `4 KiB` in human tables, `4096` in CSV.
    Bytes(usize),
    /// A measured number, printed with 4 significant digits; NaN means "not measured".
    Num(f64),
}

/// A table: named columns and rows of cells, rendered aligned or as CSV.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new<S: AsRef<str>>(headers: &[S]) -> Table {
        Table { headers: headers.iter().map(|h| h.as_ref().to_string()).collect(), rows: Vec::new() }
    }

    /// Adds a row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<Cell>) {
        assert_eq!(row.len(), self.headers.len(), "row width must match the header");
        self.rows.push(row);
    }

    /// Columns right-aligned (numbers compare by eye that way), two spaces apart, with a rule
    /// under the header.
    pub fn render_aligned(&self) -> String {
        let cells: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().map(human_cell).collect()).collect();
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| cells.iter().map(|r| r[c].len()).chain([self.headers[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |fields: &[String]| {
            let padded: Vec<String> = fields.iter().zip(&widths).map(|(f, w)| format!("{f:>w$}")).collect();
            padded.join("  ") + "\n"
        };
        let mut out = line(&self.headers);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out += &line(&rule);
        for row in &cells {
            out += &line(row);
        }
        out
    }

    /// Header line, then one line per row; missing numbers are empty fields.
    pub fn render_csv(&self) -> String {
        let mut out = self.headers.join(",") + "\n";
        for row in &self.rows {
            let fields: Vec<String> = row.iter().map(csv_cell).collect();
            out += &(fields.join(",") + "\n");
        }
        out
    }
}

fn human_cell(cell: &Cell) -> String {
    match cell {
        Cell::Bytes(n) => human_bytes(*n),
        Cell::Num(x) if x.is_nan() => "-".to_string(),
        Cell::Num(x) => significant(*x, 4),
    }
}

fn csv_cell(cell: &Cell) -> String {
    match cell {
        Cell::Bytes(n) => n.to_string(),
        Cell::Num(x) if x.is_nan() => String::new(),
        Cell::Num(x) => significant(*x, 4),
    }
}

/// `1536` -> `1536 B`, `4096` -> `4 KiB`, `4194304` -> `4 MiB` (exact multiples only, so a size
/// is never rounded in a table).
pub fn human_bytes(n: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, unit) in UNITS {
        if n >= scale && n % scale == 0 {
            return format!("{} {unit}", n / scale);
        }
    }
    format!("{n} B")
}

/// `x` with `digits` significant digits, without exponent notation (readable next to other rows,
/// and parseable by any CSV reader).
pub fn significant(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// What a series measures: names for the CSV header and the human table.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// CSV stem, e.g. `oneway_us` or `gbps`.
    pub csv: &'static str,
    /// Human column label, e.g. `us` or `GB/s`.
    pub unit: &'static str,
    /// Human label of the `min` column: for times it is the minimum; for rates (computed from the
    /// minimum time) it is the best.
    pub best: &'static str,
}

pub const ONEWAY_US: Metric = Metric { csv: "oneway_us", unit: "us", best: "min" };
pub const GBPS: Metric = Metric { csv: "gbps", unit: "GB/s", best: "best" };

/// One message size of an engine measurement with its floor from the same run.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub size: usize,
    pub value: Summary,
    /// Median of the floor at this size (NaN if the floor could not be measured).
    pub floor: f64,
}

impl Point {
    /// Engine over floor: above 1 is slower for latencies, below 1 is slower for bandwidths.
    pub fn ratio(&self) -> f64 {
        self.value.median / self.floor
    }
}

/// A further column after the standard ones (e.g. the parts of a composite floor).
#[derive(Clone, Debug)]
pub struct Extra {
    pub human: &'static str,
    pub csv: &'static str,
    /// One value per point.
    pub values: Vec<f64>,
}

/// The human table of a series: size, median, min (or best), mean, floor, ratio, extras.
pub fn series_aligned(metric: Metric, floor_label: &str, points: &[Point], extras: &[Extra]) -> Table {
    let unit = metric.unit;
    let headers = [
        "size".to_string(),
        format!("median {unit}"),
        format!("{} {unit}", metric.best),
        format!("mean {unit}"),
        format!("{floor_label} {unit}"),
        "x floor".to_string(),
    ];
    let headers: Vec<String> = headers.into_iter().chain(extras.iter().map(|e| e.human.to_string())).collect();
    let mut table = Table::new(&headers);
    for (i, p) in points.iter().enumerate() {
        let cells = [p.value.median, p.value.min, p.value.mean, p.floor, p.ratio()];
        table.push(row(p.size, &cells, extras, i));
    }
    table
}

fn row(size: usize, values: &[f64], extras: &[Extra], index: usize) -> Vec<Cell> {
    let values = values.iter().copied().chain(extras.iter().map(|e| e.values[index]));
    std::iter::once(Cell::Bytes(size)).chain(values.map(Cell::Num)).collect()
}

/// The CSV of a series: `size_bytes,<m>_median,floor_<m>_median,ratio_to_floor,<m>_min,<m>_mean`
/// (`<m>_best` instead of `<m>_min` for rates) and the extras. The first two columns are what every script reads; the rest follow.
pub fn series_csv(metric: Metric, points: &[Point], extras: &[Extra]) -> Table {
    let m = metric.csv;
    let headers = [
        "size_bytes".to_string(),
        format!("{m}_median"),
        format!("floor_{m}_median"),
        "ratio_to_floor".to_string(),
        format!("{m}_{}", metric.best),
        format!("{m}_mean"),
    ];
    let headers: Vec<String> = headers.into_iter().chain(extras.iter().map(|e| e.csv.to_string())).collect();
    let mut table = Table::new(&headers);
    for (i, p) in points.iter().enumerate() {
        let cells = [p.value.median, p.floor, p.ratio(), p.value.min, p.value.mean];
        table.push(row(p.size, &cells, extras, i));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(size: usize, median: f64, floor: f64) -> Point {
        Point { size, value: Summary { median, min: median / 2.0, mean: median, kept: 160 }, floor }
    }

    #[test]
    fn human_bytes_uses_exact_units_only() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1000), "1000 B");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(1536), "1536 B");
        assert_eq!(human_bytes(4 << 20), "4 MiB");
        assert_eq!(human_bytes(3 << 30), "3 GiB");
    }

    #[test]
    fn significant_digits_without_exponents() {
        assert_eq!(significant(0.0, 4), "0");
        assert_eq!(significant(1234.5678, 4), "1235");
        assert_eq!(significant(123456.0, 4), "123456");
        assert_eq!(significant(12.34567, 4), "12.35");
        assert_eq!(significant(0.3, 4), "0.3000");
        assert_eq!(significant(0.0031234, 4), "0.003123");
        assert_eq!(significant(-2.5, 2), "-2.5");
    }

    #[test]
    fn aligned_columns_line_up() {
        let mut t = Table::new(&["size", "us"]);
        t.push(vec![Cell::Bytes(8), Cell::Num(0.25)]);
        t.push(vec![Cell::Bytes(4096), Cell::Num(f64::NAN)]);
        let out = t.render_aligned();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, [" size      us", "-----  ------", "  8 B  0.2500", "4 KiB       -"]);
    }

    #[test]
    fn csv_has_header_raw_sizes_and_empty_missing_values() {
        let mut t = Table::new(&["size_bytes", "x", "y"]);
        t.push(vec![Cell::Bytes(4096), Cell::Num(f64::NAN), Cell::Num(1.5)]);
        assert_eq!(t.render_csv(), "size_bytes,x,y\n4096,,1.500\n");
    }

    #[test]
    #[should_panic(expected = "row width")]
    fn rows_must_match_the_header() {
        Table::new(&["a", "b"]).push(vec![Cell::Num(1.0)]);
    }

    #[test]
    fn series_csv_starts_with_size_and_median() {
        let csv = series_csv(ONEWAY_US, &[point(0, 0.5, 0.25), point(8, 1.0, f64::NAN)], &[]).render_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "size_bytes,oneway_us_median,floor_oneway_us_median,ratio_to_floor,oneway_us_min,oneway_us_mean"
        );
        assert_eq!(lines[1], "0,0.5000,0.2500,2.000,0.2500,0.5000");
        assert_eq!(lines[2], "8,1.000,,,0.5000,1.000");
    }

    #[test]
    fn series_aligned_labels_units_and_ratio() {
        let out = series_aligned(GBPS, "memcpy", &[point(1 << 20, 5.0, 10.0)], &[]).render_aligned();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains("median GB/s") && lines[0].contains("best GB/s"));
        assert!(lines[0].contains("memcpy GB/s") && lines[0].ends_with("x floor"));
        assert!(lines[2].trim_start().starts_with("1 MiB"));
        assert!(lines[2].ends_with("0.5000"));
    }

    #[test]
    fn extras_follow_the_standard_columns() {
        let extras = [Extra { human: "vm_readv GB/s", csv: "vm_readv_gbps_median", values: vec![7.0] }];
        let csv = series_csv(GBPS, &[point(64, 1.0, 2.0)], &extras).render_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("size_bytes,gbps_median,floor_gbps_median,ratio_to_floor,"));
        assert!(lines[0].ends_with(",gbps_best,gbps_mean,vm_readv_gbps_median"));
        assert_eq!(lines[1], "64,1.000,2.000,0.5000,0.5000,1.000,7.000");
        let human = series_aligned(GBPS, "floor", &[point(64, 1.0, 2.0)], &extras).render_aligned();
        assert!(human.lines().next().unwrap().ends_with("vm_readv GB/s"));
    }
}

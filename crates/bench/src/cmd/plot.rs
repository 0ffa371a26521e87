//! `bb-bench plot ALL_CSV OUT_DIR`: the collective tables of `bench/peers/coll.sh` as pictures,
//! one SVG per collective and rank count (`OUT_DIR/<op>-<ranks>.svg`): completion time against
//! size, log-log, one line per implementation. A point is the median over rounds of each run's
//! median, the figure `coll.sh`'s summary prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use plotters::prelude::*;

use super::CmdResult;

#[derive(Args, Clone, Debug)]
pub struct PlotArgs {
    /// The CSV `coll.sh` writes (`all.csv`: implementation,op,ranks,size_bytes,us_median,...).
    pub csv: PathBuf,
    /// Where the SVGs go (created if missing).
    pub out: PathBuf,
}

/// The implementations `coll.sh` names, in legend order, with their colours.
const LINES: &[(&str, &str, RGBColor)] = &[
    ("billboard", "Billboard", RGBColor(0xd6, 0x27, 0x28)),
    ("before", "Billboard before", RGBColor(0xff, 0x98, 0x96)),
    ("mpich", "MPICH", RGBColor(0x1f, 0x77, 0xb4)),
    ("openmpi", "Open MPI", RGBColor(0x2c, 0xa0, 0x2c)),
    ("floor", "floor (bare shared memory)", RGBColor(0x7f, 0x7f, 0x7f)),
];

/// One implementation's line: its label, colour and (size, median us) points.
type Line<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// (op, ranks) -> implementation -> size -> the runs' medians.
type Runs = BTreeMap<(String, u32), BTreeMap<String, BTreeMap<u64, Vec<f64>>>>;

pub fn run(args: &PlotArgs) -> CmdResult {
    let text = std::fs::read_to_string(&args.csv).map_err(|e| format!("{}: {e}", args.csv.display()))?;
    let runs = parse(&text)?;
    if runs.is_empty() {
        return Err(format!("{}: no rows of the form impl,op,ranks,size,us,...", args.csv.display()).into());
    }
    std::fs::create_dir_all(&args.out)?;
    for ((op, ranks), by_impl) in &runs {
        let path = args.out.join(format!("{op}-{ranks}.svg"));
        draw(&path, op, *ranks, by_impl)?;
        println!("{}", path.display());
    }
    Ok(())
}

fn parse(text: &str) -> Result<Runs, String> {
    let mut runs = Runs::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 5 || f[2].parse::<u32>().is_err() {
            continue; // a header or a line a failed run left
        }
        let bad = |what: &str| format!("line {}: bad {what} in {line:?}", i + 1);
        let size: u64 = f[3].parse().map_err(|_| bad("size"))?;
        let us: f64 = f[4].parse().map_err(|_| bad("time"))?;
        let ranks = f[2].parse().map_err(|_| bad("rank count"))?;
        let sizes = runs.entry((f[1].to_string(), ranks)).or_default().entry(f[0].to_string()).or_default();
        sizes.entry(size).or_default().push(us);
    }
    Ok(runs)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn draw(path: &Path, op: &str, ranks: u32, by_impl: &BTreeMap<String, BTreeMap<u64, Vec<f64>>>) -> CmdResult {
    let series: Vec<Line> = LINES
        .iter()
        .filter_map(|&(key, label, colour)| {
            let sizes = by_impl.get(key)?;
            // A log axis has no 0: a 0-byte row is drawn at 1 B.
            Some((label, colour, sizes.iter().map(|(&s, v)| ((s.max(1)) as f64, median(v))).collect()))
        })
        .collect();
    let points = series.iter().flat_map(|s| s.2.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    let y0 = (y0 * 0.8).max(1e-3);
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{op}, {ranks} ranks: completion time"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d((x0 / 1.5..x1 * 1.5).log_scale(), (y0..y1 * 1.25).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("bytes (a rank's part for gather, scatter, allgather, alltoall)")
        .y_desc("us (median)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    for (label, colour, line) in series {
        chart
            .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, colour.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_group_by_collective_and_ranks_and_take_the_median_of_rounds() {
        let csv = "billboard,bcast,2,8,0.5,0.4,0.5\nmpich,bcast,2,8,0.9,0.8,0.9\nbillboard,bcast,2,8,0.7,0.4,0.5\n\
                   billboard,bcast,2,8,0.6,0.4,0.5\nbillboard,bcast,4,8,2.0,1,1\nop,ranks,size_bytes,us_median\n";
        let runs = parse(csv).unwrap();
        assert_eq!(runs.len(), 2);
        let two = &runs[&("bcast".to_string(), 2)];
        assert_eq!(median(&two["billboard"][&8]), 0.6);
        assert_eq!(median(&two["mpich"][&8]), 0.9);
    }

    #[test]
    fn an_svg_is_drawn_per_collective_with_a_line_per_implementation() {
        let dir = std::env::temp_dir().join(format!("bb-plot-{}", std::process::id()));
        let csv = dir.join("all.csv");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&csv, "billboard,reduce,2,8,1.5,1,1\nbillboard,reduce,2,1048576,90,1,1\nopenmpi,reduce,2,8,1.0,1,1\nopenmpi,reduce,2,1048576,92,1,1\n").unwrap();
        run(&PlotArgs { csv, out: dir.clone() }).unwrap();
        let svg = std::fs::read_to_string(dir.join("reduce-2.svg")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(svg.contains("Billboard") && svg.contains("Open MPI") && !svg.contains("MPICH"));
        // Each implementation's line (and its legend mark) in its colour; none for MPICH.
        let stroke =
            |rgb: &str| svg.matches(&format!("<polyline fill=\"none\" opacity=\"1\" stroke=\"#{rgb}\"")).count();
        assert_eq!((stroke("D62728"), stroke("2CA02C"), stroke("1F77B4")), (2, 2, 0), "{svg}");
    }
}

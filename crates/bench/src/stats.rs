//! Trimmed statistics over timed trials, as ARCHITECTURE.md "How we measure" asks: sort the
//! trials, drop the top and bottom 10% (descheduling, interrupts and page faults land in the
//! tails on a shared machine), then report median, minimum and mean of what is left.

/// Fraction of trials dropped at each end before summarising.
pub const TRIM_FRACTION: f64 = 0.10;

/// Summary of the trimmed trials. Units are whatever the samples were (seconds per unit of work).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub mean: f64,
    /// Trials left after trimming.
    pub kept: usize,
}

impl Summary {
    /// A summary with no data (a measurement that could not run), rendered as "-".
    pub const MISSING: Summary = Summary { median: f64::NAN, min: f64::NAN, mean: f64::NAN, kept: 0 };

    /// Applies `f` to each statistic (e.g. seconds per round trip to one-way microseconds).
    /// `f` must be monotonic non-decreasing for `min` to stay the minimum.
    pub fn map(self, f: impl Fn(f64) -> f64) -> Summary {
        Summary { median: f(self.median), min: f(self.min), mean: f(self.mean), kept: self.kept }
    }
}

/// Converts a summary of trial times (seconds) for `bytes` bytes per trial into GB/s
/// (1e9 bytes per second). The shortest time is the best rate, so `min` then holds the *best*
/// rate, the one the human tables label "best"; `mean` is the rate of the mean time.
pub fn rate_gbps(times: Summary, bytes: f64) -> Summary {
    times.map(|secs| bytes / secs / 1e9)
}

/// Number of samples dropped at each end of `n` sorted samples.
pub fn trim_count(n: usize) -> usize {
    (n as f64 * TRIM_FRACTION).floor() as usize
}

/// Sorts `samples` (NaNs are rejected by the caller: timings are never NaN), drops
/// [`trim_count`] samples at each end and summarises the rest. `None` when there are no samples.
pub fn trimmed(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let cut = trim_count(sorted.len());
    let kept = &sorted[cut..sorted.len() - cut];
    let mid = kept.len() / 2;
    let median = if kept.len() % 2 == 1 { kept[mid] } else { (kept[mid - 1] + kept[mid]) / 2.0 };
    let mean = kept.iter().sum::<f64>() / kept.len() as f64;
    Some(Summary { median, min: kept[0], mean, kept: kept.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_count_is_ten_percent_rounded_down() {
        assert_eq!(trim_count(0), 0);
        assert_eq!(trim_count(9), 0);
        assert_eq!(trim_count(10), 1);
        assert_eq!(trim_count(200), 20);
        assert_eq!(trim_count(199), 19);
    }

    #[test]
    fn empty_has_no_summary() {
        assert_eq!(trimmed(&[]), None);
    }

    #[test]
    fn single_sample() {
        let s = trimmed(&[3.0]).unwrap();
        assert_eq!((s.median, s.min, s.mean, s.kept), (3.0, 3.0, 3.0, 1));
    }

    #[test]
    fn outliers_are_dropped_before_min_and_mean() {
        // 1..=10 shuffled plus nothing: trim drops 1 and 10.
        let samples = [7.0, 1.0, 10.0, 3.0, 5.0, 2.0, 9.0, 4.0, 8.0, 6.0];
        let s = trimmed(&samples).unwrap();
        assert_eq!(s.kept, 8);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.median, 5.5);
        assert_eq!(s.mean, 5.5);
    }

    #[test]
    fn a_huge_outlier_does_not_move_the_mean() {
        let mut samples = vec![1.0; 18];
        samples.push(1e9); // a descheduled trial
        samples.push(0.0); // a clock glitch
        let s = trimmed(&samples).unwrap();
        assert_eq!((s.median, s.min, s.mean, s.kept), (1.0, 1.0, 1.0, 16));
    }

    #[test]
    fn odd_kept_count_takes_the_middle() {
        // 11 samples: trim 1 each end, 9 kept: 2..=10, median 6.
        let samples: Vec<f64> = (1..=11).rev().map(f64::from).collect();
        let s = trimmed(&samples).unwrap();
        assert_eq!((s.median, s.min, s.kept), (6.0, 2.0, 9));
    }

    #[test]
    fn rates_come_from_times_and_min_becomes_best() {
        let times = Summary { median: 2.0, min: 1.0, mean: 4.0, kept: 3 };
        let r = rate_gbps(times, 8e9);
        assert_eq!((r.median, r.min, r.mean), (4.0, 8.0, 2.0));
    }

    #[test]
    fn map_converts_every_statistic() {
        let s = Summary { median: 2.0, min: 1.0, mean: 3.0, kept: 5 }.map(|x| x * 10.0);
        assert_eq!((s.median, s.min, s.mean, s.kept), (20.0, 10.0, 30.0, 5));
    }
}

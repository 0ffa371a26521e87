//! What to measure: message sizes, trials, warm-up, and how many operations one timed trial
//! holds. Every rank computes the same plan from the same command line, so ranks agree on the
//! number of messages without exchanging it.

/// Largest size of the default size lists (4 MiB, as in the OSU and IMB suites).
pub const DEFAULT_MAX_SIZE: usize = 4 << 20;

/// Default number of timed trials per size (ARCHITECTURE.md asks for at least 100).
pub const DEFAULT_TRIALS: usize = 200;

/// Fewest trials accepted: with fewer the 10% trim leaves too little for a stable median.
pub const MIN_TRIALS: usize = 100;

/// Round trips a latency trial aims to fill, in bytes moved one way. 64 KiB keeps a trial of
/// small messages at 16 round trips (~5-20 us, well above `Instant`'s ~25 ns cost and
/// resolution) while a trial at 64 KiB and above is a single round trip; it also keeps the
/// whole `latency` run near a second per implementation on this machine.
const LATENCY_TRIAL_BYTES: usize = 64 << 10;
/// Cap on round trips per latency trial, so a trial stays short enough that descheduling lands
/// in a few trials (which the trim drops) rather than in all of them.
const LATENCY_MAX_ITERS: usize = 16;

/// Message sizes of `latency`, `exchange` and `ring`: 0 B and every power of two up to `max`.
pub fn latency_sizes(max: usize) -> Vec<usize> {
    std::iter::once(0).chain(powers_of_two(max)).collect()
}

/// Message sizes of `bandwidth`: every power of two from 1 B up to `max`.
pub fn bandwidth_sizes(max: usize) -> Vec<usize> {
    powers_of_two(max).collect()
}

fn powers_of_two(max: usize) -> impl Iterator<Item = usize> {
    (0..usize::BITS).map(|i| 1usize << i).take_while(move |&s| s <= max)
}

/// The sizes to run: the explicit `--sizes` list if given, else `defaults`; either way only
/// those up to `max_size`.
pub fn select_sizes(defaults: Vec<usize>, explicit: Option<&[usize]>, max_size: usize) -> Vec<usize> {
    let chosen = explicit.map_or(defaults, <[usize]>::to_vec);
    chosen.into_iter().filter(|&s| s <= max_size).collect()
}

/// Parses a size: `4096`, `4K`/`4KiB`, `1M`/`1MiB` (binary units, as message sizes usually are).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: usize = digits.parse().map_err(|_| format!("not a size: {text:?}"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("unknown unit in size {text:?} (use K or M)")),
    };
    n.checked_mul(scale).ok_or_else(|| format!("size too large: {text:?}"))
}

/// Round trips per timed latency trial at `size` (see [`LATENCY_TRIAL_BYTES`]).
pub fn latency_iters(size: usize) -> usize {
    (LATENCY_TRIAL_BYTES / size.max(1)).clamp(1, LATENCY_MAX_ITERS)
}

/// Untimed warm-up trials before the timed ones at each size: a tenth of the trials, at least
/// 10. Warm-up faults in the buffers, fills caches and TLBs and lets the CPU clock settle.
pub fn warmup_trials(trials: usize) -> usize {
    (trials / 10).max(10)
}

/// Trials and warm-up for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trials {
    pub timed: usize,
    pub warmup: usize,
}

impl Trials {
    pub fn new(timed: usize) -> Trials {
        Trials { timed, warmup: warmup_trials(timed) }
    }

    /// Warm-up plus timed trials.
    pub fn total(&self) -> usize {
        self.timed + self.warmup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_size_lists() {
        let lat = latency_sizes(DEFAULT_MAX_SIZE);
        assert_eq!(lat.len(), 24);
        assert_eq!(&lat[..4], &[0, 1, 2, 4]);
        assert_eq!(*lat.last().unwrap(), 4 << 20);
        let bw = bandwidth_sizes(DEFAULT_MAX_SIZE);
        assert_eq!(bw.len(), 23);
        assert_eq!(bw[0], 1);
        assert_eq!(latency_sizes(0), vec![0]);
        assert_eq!(bandwidth_sizes(100), vec![1, 2, 4, 8, 16, 32, 64]);
    }

    #[test]
    fn explicit_sizes_win_but_max_still_applies() {
        assert_eq!(select_sizes(vec![1, 2], Some(&[0, 8, 8192]), 4096), vec![0, 8]);
        assert_eq!(select_sizes(vec![1, 2, 4], None, 2), vec![1, 2]);
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("8192"), Ok(8192));
        assert_eq!(parse_size("8K"), Ok(8192));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert!(parse_size("x").is_err());
        assert!(parse_size("3Q").is_err());
    }

    #[test]
    fn iterations_shrink_with_size() {
        assert_eq!(latency_iters(0), 16);
        assert_eq!(latency_iters(4096), 16);
        assert_eq!(latency_iters(8192), 8);
        assert_eq!(latency_iters(64 << 10), 1);
        assert_eq!(latency_iters(4 << 20), 1);
    }

    #[test]
    fn warmup_is_a_tenth_but_at_least_ten() {
        assert_eq!(Trials::new(200), Trials { timed: 200, warmup: 20 });
        assert_eq!(Trials::new(100).warmup, 10);
        assert_eq!(Trials::new(50).total(), 60);
    }
}

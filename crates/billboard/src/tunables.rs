//! Every knob of the library in one list.
//!
//! A tunable is declared once, beside the code that uses it, as a `static Tunable` with its
//! default, its environment variable and one line on how the default was chosen. [`ALL`] names
//! them all so that `bbrun --info` can print each with its value and where the value came from.

use std::sync::OnceLock;

/// A numeric setting read once from the environment (`BB_...`), else its default.
pub struct Tunable {
    /// Environment variable that overrides the default, e.g. `BB_EAGER_INLINE`.
    pub env: &'static str,
    /// Value used when the environment does not set one.
    pub default: usize,
    /// What it controls and how the default was chosen, in one line.
    pub doc: &'static str,
    value: OnceLock<(usize, Origin)>,
}

/// Where a tunable's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    Environment,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Default => "default",
            Origin::Environment => "environment",
        })
    }
}

impl Tunable {
    pub const fn new(env: &'static str, default: usize, doc: &'static str) -> Self {
        Tunable { env, default, doc, value: OnceLock::new() }
    }

    /// The value in force for this process (read from the environment on first use).
    pub fn get(&self) -> usize {
        self.get_with_origin().0
    }

    /// The value and where it came from. An unparsable environment value is reported once on
    /// stderr and the default is used, so a typo never silently changes behaviour unnoticed.
    pub fn get_with_origin(&self) -> (usize, Origin) {
        *self.value.get_or_init(|| match std::env::var(self.env) {
            Ok(text) => match parse_size(&text) {
                Some(v) => (v, Origin::Environment),
                None => {
                    eprintln!(
                        "billboard: ignoring {}={text:?}: expected a number (suffixes k, m, g allowed); using {}",
                        self.env, self.default
                    );
                    (self.default, Origin::Default)
                }
            },
            Err(_) => (self.default, Origin::Default),
        })
    }
}

/// A choice among named algorithms read once from the environment (`BB_COLL_<NAME>=<algorithm>`):
/// unset, the library chooses by its own table; set, every choice it governs takes that one.
pub struct Switch {
    /// Environment variable that forces an algorithm, e.g. `BB_COLL_ALLREDUCE`.
    pub env: &'static str,
    /// The algorithms it may name.
    pub algorithms: &'static [&'static str],
    /// What it chooses and how the table chooses when it is unset, in one line.
    pub doc: &'static str,
    value: OnceLock<Option<usize>>,
}

impl Switch {
    pub const fn new(env: &'static str, algorithms: &'static [&'static str], doc: &'static str) -> Self {
        Switch { env, algorithms, doc, value: OnceLock::new() }
    }

    /// The algorithm forced for this process (its index in `algorithms`), if any. A name that
    /// is not one of them is reported once on stderr and ignored.
    pub fn forced(&self) -> Option<usize> {
        *self.value.get_or_init(|| {
            let text = std::env::var(self.env).ok()?;
            let found = self.algorithms.iter().position(|a| a.eq_ignore_ascii_case(text.trim()));
            if found.is_none() {
                eprintln!(
                    "billboard: ignoring {}={text:?}: expected one of {}; the library chooses",
                    self.env,
                    self.algorithms.join(", ")
                );
            }
            found
        })
    }

    /// What `bbrun --info` shows as its value: the forced algorithm, or "auto".
    pub fn shown(&self) -> &'static str {
        self.forced().map_or("auto", |i| self.algorithms[i])
    }
}

/// Parses `123`, `64k`, `4m`, `1g` (binary multiples), `0x40`.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x") {
        return usize::from_str_radix(hex, 16).ok();
    }
    let (digits, mult) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 1usize << 10),
        (i, 'm' | 'M') => (&t[..i], 1 << 20),
        (i, 'g' | 'G') => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(mult)
}

/// Every tunable of the library, for `bbrun --info`.
pub fn all() -> &'static [&'static Tunable] {
    use crate::{engine, transport};
    static ALL: &[&Tunable] = &[
        &transport::shm::RING_BYTES,
        &transport::shm::SLOT_BYTES,
        &transport::shm::SLOTS,
        &engine::protocol::SINGLE_COPY,
        &engine::protocol::CMA_SEGMENT,
        &engine::protocol::SHARED_COPY,
        &engine::protocol::SHARED_CHUNK,
        &engine::ladder::SPIN,
        &engine::ladder::YIELD,
        &engine::ladder::SLEEP_US,
        &transport::shm::EAGER_INLINE,
        &engine::protocol::EAGER_MAX,
        &crate::coll::select::BARRIER_POST_MIN,
        &crate::coll::select::BOARD,
        &transport::tcp::EAGER_MAX,
        &transport::tcp::CHUNK,
        &transport::tcp::setup::CONNECT_TIMEOUT_MS,
        &crate::bootstrap::port::CONNECT_WAIT_MS,
        &crate::api::SPAWN_WAIT_MS,
        &transport::tcp::setup::TIMEOUT_MS,
        &transport::udp::MTU,
        &transport::udp::WINDOW,
        &transport::udp::DEADLINE_MS,
        &transport::udp::EAGER_MAX,
        &crate::coll::select::REDUCE_SPLIT_MIN,
        &crate::coll::select::REDUCE_SPLIT_MIN_MANY,
        &crate::coll::select::REDUCE_SEGMENT,
        &crate::coll::select::ALLREDUCE_POST_MAX,
        &crate::coll::select::ALLREDUCE_POST_RANKS,
        &crate::coll::select::BCAST_SCATTER_MIN,
        &crate::coll::select::ALLREDUCE_RING_MIN,
        &crate::coll::select::ALLGATHER_RING_MIN,
        &crate::coll::select::ALLTOALL_PAIRWISE_MIN,
        &crate::coll::select::GATHER_HIER_MAX,
        &crate::coll::select::BCAST_TREE_MAX,
        &crate::coll::select::ALLGATHER_BRUCK_MAX,
        &crate::coll::select::GATHER_BINOMIAL_RANKS,
        &crate::coll::select::GATHER_BINOMIAL_MAX,
        &crate::VERBOSE,
    ];
    ALL
}

/// Every algorithm switch of the collectives, for `bbrun --info`.
pub fn switches() -> &'static [&'static Switch] {
    crate::coll::select::SWITCHES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("4M"), Some(4 << 20));
        assert_eq!(parse_size("0x40"), Some(64));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn every_tunable_is_named_once_and_prefixed() {
        let mut names: Vec<_> = all().iter().map(|t| t.env).collect();
        assert!(names.iter().all(|n| n.starts_with("BB_")));
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "a tunable is listed twice");
    }
}

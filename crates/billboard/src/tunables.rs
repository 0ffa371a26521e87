//! Every knob of the library in one list.
//!
//! A tunable is declared once, beside the code that uses it, as a `static Tunable` with its
//! default, its environment variable and one line on how the default was chosen. [`layers`]
//! names them all, grouped by the layer that reads them, so that `bbrun --info` can print each
//! with its value and where the value came from, and MPI_T can offer each as a control variable.
//!
//! A value is read from the environment on first use. A tool may set a new one later
//! ([`Tunable::set`], MPI_T_cvar_write), but only a tunable whose code reads it at each use
//! ([`Effect`]) takes a new value into account: one read once at setup says so, and refuses.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// How many times a tool has set a tunable or a switch in this process: a choice cached from
/// them (a communicator's board algorithms, `coll/board.rs`) holds while this has not moved.
static SETTINGS: AtomicU64 = AtomicU64::new(0);

/// The current count of [`SETTINGS`] changes.
#[inline]
pub(crate) fn settings_generation() -> u64 {
    SETTINGS.load(Ordering::Relaxed)
}

/// A numeric setting read from the environment (`BB_...`), else its default.
pub struct Tunable {
    /// Environment variable that overrides the default, e.g. `BB_EAGER_INLINE`.
    pub env: &'static str,
    /// Value used when the environment does not set one.
    pub default: usize,
    /// What it controls and how the default was chosen, in one line.
    pub doc: &'static str,
    /// When its code reads it, and so whether a value set later takes effect.
    pub effect: Effect,
    read: Once,
    value: AtomicUsize,
    origin: AtomicU8,
}

/// When the code reads a tunable, and so whether a new value set while the process runs
/// ([`Tunable::set`]) takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Read once, at setup (sizes of rings, routes, protocol thresholds cached per peer): a new
    /// value would change nothing, so none is accepted.
    Setup,
    /// Read at each use by this process alone (waiting, timeouts, verbose output).
    EachUse,
    /// Read at each collective call, where every rank of the communicator must choose alike:
    /// a new value must be set on every rank, between the same two calls.
    EachCollective,
}

/// Where a tunable's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    Environment,
    /// Set while the process runs, by a tool (MPI_T_cvar_write).
    Tool,
}

impl Origin {
    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn from_code(code: u8) -> Origin {
        [Origin::Default, Origin::Environment, Origin::Tool][code as usize - 1]
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Default => "default",
            Origin::Environment => "environment",
            Origin::Tool => "MPI_T",
        })
    }
}

impl Tunable {
    /// A tunable read once, at setup ([`Effect::Setup`]).
    pub const fn new(env: &'static str, default: usize, doc: &'static str) -> Self {
        Tunable {
            env,
            default,
            doc,
            effect: Effect::Setup,
            read: Once::new(),
            value: AtomicUsize::new(0),
            origin: AtomicU8::new(0),
        }
    }

    /// The same tunable, read at each use instead (see [`Effect`]).
    pub const fn read_at(self, effect: Effect) -> Self {
        Tunable { effect, ..self }
    }

    /// The value in force for this process (read from the environment on first use).
    #[inline]
    pub fn get(&self) -> usize {
        self.read_once();
        self.value.load(Ordering::Relaxed)
    }

    /// The value and where it came from.
    pub fn get_with_origin(&self) -> (usize, Origin) {
        self.read_once();
        (self.value.load(Ordering::Relaxed), Origin::from_code(self.origin.load(Ordering::Relaxed)))
    }

    /// Reads the environment on first use. `call_once` orders these stores before every later
    /// load; `set` stores only after it.
    #[inline]
    fn read_once(&self) {
        self.read.call_once(|| {
            let (v, origin) = self.read_environment();
            self.value.store(v, Ordering::Relaxed);
            self.origin.store(origin.code(), Ordering::Relaxed);
        });
    }

    /// Sets a new value for this process (MPI_T_cvar_write). Refused for a tunable read only
    /// at setup: there it would report a value the library does not use.
    pub fn set(&self, value: usize) -> Result<(), Effect> {
        if self.effect == Effect::Setup {
            return Err(Effect::Setup);
        }
        self.read_once();
        self.value.store(value, Ordering::Relaxed);
        self.origin.store(Origin::Tool.code(), Ordering::Relaxed);
        SETTINGS.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The environment's value, else the default. An unparsable environment value is reported
    /// once on stderr and the default is used, so a typo never silently changes behaviour unnoticed.
    fn read_environment(&self) -> (usize, Origin) {
        match std::env::var(self.env) {
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
        }
    }
}

/// A choice among named algorithms read from the environment (`BB_COLL_<NAME>=<algorithm>`):
/// unset, the library chooses by its own table; set, every choice it governs takes that one.
/// Read at each collective call ([`Effect::EachCollective`]), so a tool may force one later.
pub struct Switch {
    /// Environment variable that forces an algorithm, e.g. `BB_COLL_ALLREDUCE`.
    pub env: &'static str,
    /// The algorithms it may name.
    pub algorithms: &'static [&'static str],
    /// What it chooses and how the table chooses when it is unset, in one line.
    pub doc: &'static str,
    read: Once,
    /// 0: the table chooses; i + 1: algorithm i is forced.
    value: AtomicUsize,
}

impl Switch {
    pub const fn new(env: &'static str, algorithms: &'static [&'static str], doc: &'static str) -> Self {
        Switch { env, algorithms, doc, read: Once::new(), value: AtomicUsize::new(0) }
    }

    /// The algorithm forced for this process (its index in `algorithms`), if any. A name that
    /// is not one of them is reported once on stderr and ignored.
    #[inline]
    pub fn forced(&self) -> Option<usize> {
        self.read.call_once(|| {
            let Ok(text) = std::env::var(self.env) else { return };
            match self.algorithms.iter().position(|a| a.eq_ignore_ascii_case(text.trim())) {
                Some(i) => self.value.store(i + 1, Ordering::Relaxed),
                None => eprintln!(
                    "billboard: ignoring {}={text:?}: expected one of {}; the library chooses",
                    self.env,
                    self.algorithms.join(", ")
                ),
            }
        });
        self.value.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Forces algorithm `i` of `algorithms` from now on, or (`None`) lets the table choose
    /// (MPI_T_cvar_write). False if there is no algorithm `i`.
    pub fn set(&self, forced: Option<usize>) -> bool {
        if forced.is_some_and(|i| i >= self.algorithms.len()) {
            return false;
        }
        self.forced();
        self.value.store(forced.map_or(0, |i| i + 1), Ordering::Relaxed);
        SETTINGS.fetch_add(1, Ordering::Relaxed);
        true
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

/// The tunables and switches of one layer of the library (a category of MPI_T).
pub struct Layer {
    pub name: &'static str,
    pub doc: &'static str,
    pub tunables: &'static [&'static Tunable],
    pub switches: &'static [&'static Switch],
}

/// Every tunable and switch of the library, by the layer whose code reads it.
pub fn layers() -> &'static [Layer] {
    use crate::coll::select as coll;
    use crate::{engine, transport};
    static LAYERS: &[Layer] = &[
        Layer {
            name: "transport",
            doc: "channels: the shared-memory billboard, TCP and UDP routes",
            tunables: &[
                &transport::shm::RING_BYTES,
                &transport::shm::SLOT_BYTES,
                &transport::shm::SLOTS,
                &transport::shm::EAGER_INLINE,
                &transport::tcp::EAGER_MAX,
                &transport::tcp::CHUNK,
                &transport::tcp::setup::CONNECT_TIMEOUT_MS,
                &transport::tcp::setup::TIMEOUT_MS,
                &transport::udp::MTU,
                &transport::udp::WINDOW,
                &transport::udp::DEADLINE_MS,
                &transport::udp::EAGER_MAX,
                &transport::WAIT_BLOCK,
                &crate::bootstrap::pmi::VERSION,
            ],
            switches: &[],
        },
        Layer {
            name: "engine",
            doc: "messages: protocols (eager, rendezvous, single and shared copies), waiting, diagnostics",
            tunables: &[
                &engine::protocol::EAGER_MAX,
                &engine::protocol::SINGLE_COPY,
                &engine::protocol::CMA_SEGMENT,
                &engine::protocol::SHARED_COPY,
                &engine::protocol::SHARED_CHUNK,
                &engine::ladder::SPIN,
                &engine::ladder::SPIN_CROWDED,
                &engine::ladder::YIELD,
                &engine::ladder::SLEEP_US,
                &crate::VERBOSE,
            ],
            switches: &[],
        },
        Layer {
            name: "collectives",
            doc: "the algorithm table of coll/select.rs: switch points and forced algorithms",
            tunables: &[
                &coll::BOARD,
                &coll::BARRIER_POST_MIN,
                &coll::BCAST_TREE_MAX,
                &coll::BCAST_CELLS_MAX,
                &coll::BCAST_CELLS_MIN,
                &coll::REDUCE_CELLS_MIN,
                &coll::HIER_BOARD_MAX,
                &coll::HIER_BCAST_MAX,
                &coll::HIER_PARTS_MAX,
                &coll::HIER_ALLTOALL_MAX,
                &coll::GATHERV_HIER_WIDEST,
                &coll::SCAN_CROWDED_MAX,
                &coll::RENDEZVOUS_MIN,
                &coll::BCAST_SCATTER_MIN,
                &coll::REDUCE_SPLIT_MIN,
                &coll::REDUCE_SPLIT_MIN_MANY,
                &coll::REDUCE_ROOTED_SPLIT_MIN,
                &coll::REDUCE_HALVES_MIN,
                &coll::REDUCE_HALVES_CHUNK,
                &coll::REDUCE_HALVES_ROOT_SHARE,
                &coll::ALLREDUCE_HALVES_MIN,
                &coll::REDUCE_SEGMENT,
                &coll::ALLREDUCE_POST_MAX,
                &coll::ALLREDUCE_POST_RANKS,
                &coll::ALLREDUCE_RING_MIN,
                &coll::ALLGATHER_RING_MIN,
                &coll::ALLGATHER_BRUCK_MAX,
                &coll::ALLTOALL_PAIRWISE_MIN,
                &coll::GATHER_HIER_MAX,
                &coll::GATHER_BINOMIAL_RANKS,
                &coll::GATHER_BINOMIAL_MAX,
            ],
            switches: coll::SWITCHES,
        },
        Layer {
            name: "processes",
            doc: "dynamic processes: spawn, connect and accept",
            tunables: &[&crate::bootstrap::port::CONNECT_WAIT_MS, &crate::api::SPAWN_WAIT_MS],
            switches: &[],
        },
    ];
    LAYERS
}

/// Every tunable of the library, for `bbrun --info`.
pub fn all() -> impl Iterator<Item = &'static Tunable> {
    layers().iter().flat_map(|layer| layer.tunables.iter().copied())
}

/// Every algorithm switch of the collectives, for `bbrun --info`.
pub fn switches() -> impl Iterator<Item = &'static Switch> {
    layers().iter().flat_map(|layer| layer.switches.iter().copied())
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
        let mut names: Vec<_> = all().map(|t| t.env).chain(switches().map(|s| s.env)).collect();
        assert!(names.iter().all(|n| n.starts_with("BB_")));
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "a tunable is listed twice");
    }
}

#[cfg(test)]
mod set_tests {
    use super::*;

    #[test]
    fn a_tunable_read_at_each_use_takes_a_new_value_and_one_read_at_setup_refuses() {
        static LIVE: Tunable = Tunable::new("BB_TEST_LIVE_UNSET", 5, "doc").read_at(Effect::EachUse);
        static FIXED: Tunable = Tunable::new("BB_TEST_FIXED_UNSET", 7, "doc");
        assert_eq!(LIVE.get_with_origin(), (5, Origin::Default));
        assert_eq!(LIVE.set(9), Ok(()));
        assert_eq!(LIVE.get_with_origin(), (9, Origin::Tool));
        assert_eq!(FIXED.set(1), Err(Effect::Setup));
        assert_eq!(FIXED.get(), 7);
    }

    #[test]
    fn a_switch_is_forced_and_released() {
        static S: Switch = Switch::new("BB_TEST_SWITCH_UNSET", &["a", "b"], "doc");
        assert_eq!(S.forced(), None);
        assert!(S.set(Some(1)));
        assert_eq!(S.shown(), "b");
        assert!(!S.set(Some(2)));
        assert!(S.set(None));
        assert_eq!(S.forced(), None);
    }
}

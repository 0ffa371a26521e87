//! Protocol selection.

use crate::tunables::Tunable;

pub static EAGER_INLINE: Tunable = Tunable::new(
    "BB_EAGER_INLINE",
    1024,
    "largest payload carried inline in the fast-box ring (bytes)",
);
pub static EAGER_MAX: Tunable = Tunable::new(
    "BB_EAGER_MAX",
    64 << 10,
    "largest payload sent eagerly through the sender's data part; above it, rendezvous",
);

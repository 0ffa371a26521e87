//! Which algorithm a collective uses, chosen from the message size (the thresholds are
//! tunables, listed by `bbrun --info`).

use crate::tunables::Tunable;

pub static REDUCE_SPLIT_MIN: Tunable = Tunable::new(
    "BB_REDUCE_SPLIT_MIN",
    8 << 10,
    "reductions of this many bytes and more go by reduce-scatter + gather (every rank reduces a block) \
     instead of a binomial tree; measured with bench/peers/coll.sh at 2 and 4 ranks",
);

pub static REDUCE_SEGMENT: Tunable = Tunable::new(
    "BB_REDUCE_SEGMENT",
    64 << 10,
    "largest message of a split reduction (bytes): the eager limit, so blocks go through data-part slots, \
     pipelined, instead of a single-copy rendezvous each (2 ranks, 1 MiB allreduce: see reduce_split.rs)",
);

/// Whether a reduction of `len` bytes over `n` ranks cuts the vector into blocks
/// (`reduce_split.rs`) rather than sending it whole up a binomial tree.
pub(crate) fn reduce_splits(len: usize, n: usize) -> bool {
    n > 1 && len >= REDUCE_SPLIT_MIN.get()
}

impl crate::Communicator {
    /// Whether a reduction of `len` bytes on this communicator cuts the vector into blocks
    /// (then its schedule is the better blocking form too: start + wait).
    pub fn reduction_splits(&self, len: usize) -> bool {
        reduce_splits(len, self.size())
    }
}

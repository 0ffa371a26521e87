//! Which algorithm a collective uses, chosen from the message size (the thresholds are
//! tunables, listed by `bbrun --info`).

use crate::tunables::Tunable;

pub static REDUCE_SPLIT_MIN: Tunable = Tunable::new(
    "BB_REDUCE_SPLIT_MIN",
    8 << 10,
    "reductions of this many bytes and more on 2 ranks go by reduce-scatter + gather (each rank reduces a half) \
     instead of a binomial tree; bench/peers/coll.sh on 2 ranks: tree faster below 8 KiB, even at 8, split from 16",
);

pub static REDUCE_SPLIT_MIN_MANY: Tunable = Tunable::new(
    "BB_REDUCE_SPLIT_MIN_MANY",
    64 << 10,
    "BB_REDUCE_SPLIT_MIN on more than 2 ranks: each rank of a split waits on every other (a context switch each \
     where ranks outnumber cores); 4 ranks on 2 cores, the tree was faster up to 32 KiB, the split from 64 KiB",
);

pub static REDUCE_SEGMENT: Tunable = Tunable::new(
    "BB_REDUCE_SEGMENT",
    64 << 10,
    "largest message of a split reduction (bytes): the eager limit, so blocks go through data-part slots, \
     pipelined, instead of a single-copy rendezvous each (2 ranks, 1 MiB allreduce: see reduce_split.rs)",
);

/// Whether a reduction of `len` bytes over `n` ranks cuts the vector into blocks
/// (`reduce_split.rs`) rather than sending it whole up a binomial tree. Every rank must choose
/// alike, so this depends only on what all know: the size and the rank count.
pub(crate) fn reduce_splits(len: usize, n: usize) -> bool {
    match n {
        0 | 1 => false,
        2 => len >= REDUCE_SPLIT_MIN.get(),
        _ => len >= REDUCE_SPLIT_MIN_MANY.get(),
    }
}

impl crate::Communicator {
    /// Whether a reduction of `len` bytes on this communicator cuts the vector into blocks
    /// (then its schedule is the better blocking form too: start + wait).
    pub fn reduction_splits(&self, len: usize) -> bool {
        reduce_splits(len, self.size())
    }
}

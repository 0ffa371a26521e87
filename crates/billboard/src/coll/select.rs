//! Which algorithm a collective uses. Every member must choose alike, so a choice depends only
//! on what all know: the sizes, the rank count, and where the members run.

use crate::tunables::Tunable;
use crate::Communicator;

pub static BCAST: Tunable = Tunable::new(
    "BB_COLL_BCAST",
    1,
    "broadcasts on one host of at most BB_EAGER_MAX bytes: 1 the root posts once and every rank reads it \
     (seed 004's multicast), 0 a binomial tree of messages",
);

/// Whether a broadcast of `len` bytes on `comm` goes as the root's one post read by every
/// member (all on this host's billboard, eager-sized, more than two members) rather than down
/// a binomial tree.
pub(crate) fn bcast_posts_once(comm: &Communicator, len: usize) -> bool {
    let posted =
        BCAST.get() != 0 && comm.size() > 2 && len <= crate::engine::protocol::EAGER_MAX.get() && comm.on_one_host();
    report(comm, Choice::Bcast(posted), len);
    posted
}

pub static BARRIER: Tunable = Tunable::new(
    "BB_COLL_BARRIER",
    5,
    "smallest barrier on one host where every rank tells rank 0, which releases all with one post (seed 004's \
     barrier by multicast), instead of dissemination rounds; 0: never. bench/peers barrier, 2 cores, loaded: \
     3 ranks 4.7-7.8 vs 6.8-7.0 us, 4 ranks 8.1-10.5 vs 4.0-9.5, 5 ranks 11.1-12.2 vs 14.0-14.1",
);

/// Whether a barrier on `comm` gathers arrivals at rank 0 and releases every member with one
/// post (all on this host, at least `BB_COLL_BARRIER` members) rather than by dissemination.
pub(crate) fn barrier_posts_once(comm: &Communicator) -> bool {
    let min = BARRIER.get();
    let posted = min != 0 && comm.size() >= min.max(3) && comm.on_one_host();
    report(comm, Choice::Barrier(posted), 0);
    posted
}

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

impl Communicator {
    /// Whether a reduction of `len` bytes on this communicator cuts the vector into blocks
    /// (then its schedule is the better blocking form too: start + wait).
    pub fn reduction_splits(&self, len: usize) -> bool {
        let splits = reduce_splits(len, self.size());
        report(self, Choice::Reduce(splits), len);
        splits
    }
}

/// An algorithm chosen for a collective.
#[derive(Clone, Copy)]
enum Choice {
    /// Posted once (true), or a binomial tree.
    Bcast(bool),
    /// Posted once (true), or dissemination.
    Barrier(bool),
    /// Split into blocks (true), or a binomial tree.
    Reduce(bool),
}

/// Reports under `BB_VERBOSE` the first time `comm` makes `choice` (for a message of `len`
/// bytes): which algorithm, and why it applies.
fn report(comm: &Communicator, choice: Choice, len: usize) {
    if crate::VERBOSE.get() == 0 {
        return;
    }
    let (bit, what, algorithm) = match choice {
        Choice::Bcast(true) => (0, "bcast", "the root posts once, every rank reads it (BB_COLL_BCAST)"),
        Choice::Bcast(false) => {
            (1, "bcast", "binomial tree (2 ranks, past BB_EAGER_MAX, several hosts, or BB_COLL_BCAST=0)")
        }
        Choice::Barrier(true) => (2, "barrier", "arrivals to rank 0, released by one post (BB_COLL_BARRIER)"),
        Choice::Barrier(false) => (3, "barrier", "dissemination (fewer ranks than BB_COLL_BARRIER, or several hosts)"),
        Choice::Reduce(true) => (4, "reduce/allreduce", "blocks reduced by every rank (BB_REDUCE_SPLIT_MIN(_MANY))"),
        Choice::Reduce(false) => (5, "reduce/allreduce", "binomial tree (BB_REDUCE_SPLIT_MIN(_MANY))"),
    };
    if comm.first_report(bit) {
        let host = if comm.on_one_host() { "one host" } else { "several hosts" };
        crate::verbose(format_args!(
            "{what} on a communicator of {} ranks ({host}, context {}), first at {len} bytes: {algorithm}",
            comm.size(),
            comm.coll_context()
        ));
    }
}

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
    BCAST.get() != 0 && comm.size() > 2 && len <= crate::engine::protocol::EAGER_MAX.get() && comm.on_one_host()
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
    min != 0 && comm.size() >= min.max(3) && comm.on_one_host()
}

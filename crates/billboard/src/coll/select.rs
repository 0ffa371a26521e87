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

//! Which algorithm a collective uses: the one table. Every member must choose alike, so a
//! choice depends only on what all know: the sizes, the rank count, and where the members run
//! (and the `BB_COLL_<NAME>` switches, which `bbrun` passes to every rank alike).
//!
//! | collective | algorithms (`BB_COLL_<NAME>=`) | the table, unforced |
//! |---|---|---|
//! | bcast | `post`, `tree` | post: one host, more than 2 ranks, up to `BB_EAGER_MAX` bytes; else tree |
//! | barrier | `post`, `dissemination` | post: one host, at least `BB_COLL_BARRIER_POST_MIN` ranks |
//! | reduce | `tree`, `post`, `split` | split from `BB_REDUCE_SPLIT_MIN(_MANY)`, else tree |
//! | allreduce | `tree`, `post`, `split` | split from `BB_REDUCE_SPLIT_MIN(_MANY)`; post on one host up to `BB_ALLREDUCE_POST_MAX` bytes and `BB_ALLREDUCE_POST_RANKS` ranks; else tree |
//! | allgather(v) | `post`, `gather-bcast` | post |
//!
//! Gather, scatter and all-to-all have one algorithm each, already a post per part: each rank
//! posts its part to the root (gather), the root posts each part to its reader (scatter), each
//! rank posts each of its parts to its reader (all-to-all), all in one round (`nonblocking.rs`).

use crate::tunables::{Switch, Tunable};
use crate::Communicator;

pub static BCAST: Switch = Switch::new(
    "BB_COLL_BCAST",
    &["post", "tree"],
    "broadcast: post = the root posts once and every rank reads it (seed 004's multicast), tree = binomial tree of \
     messages; unset: post on one host for more than 2 ranks up to BB_EAGER_MAX bytes, else tree",
);

/// Whether a broadcast of `len` bytes on `comm` goes as the root's one post read by every
/// member (all on this host's billboard, eager-sized, more than two members) rather than down
/// a binomial tree.
pub(crate) fn bcast_posts_once(comm: &Communicator, len: usize) -> bool {
    let posted = match BCAST.forced() {
        Some(i) => i == 0 && comm.size() > 1,
        None => comm.size() > 2 && len <= crate::engine::protocol::EAGER_MAX.get() && comm.on_one_host(),
    };
    report(comm, Collective::Bcast, if posted { "post" } else { "tree" }, len);
    posted
}

pub static BARRIER: Switch = Switch::new(
    "BB_COLL_BARRIER",
    &["post", "dissemination"],
    "barrier: post = every rank tells rank 0, which releases all with one post (seed 004's barrier by multicast), \
     dissemination = log2(n) rounds of messages; unset: see BB_COLL_BARRIER_POST_MIN",
);

pub static BARRIER_POST_MIN: Tunable = Tunable::new(
    "BB_COLL_BARRIER_POST_MIN",
    5,
    "smallest barrier on one host released by one post instead of dissemination; bench/peers/coll.c barrier, 2 \
     cores, post vs dissemination, us: load 6-11: 3 ranks 4.7-7.8 vs 6.8-7.0, 4 ranks 8.1-10.5 vs 4.0-9.5, 5 ranks \
     11.1-12.2 vs 14.0-14.1; again at load 10 (BB_COLL_BARRIER forced, 3 rounds): 2 ranks >= 1600 vs 0.25-900, \
     3 ranks 7.7-9.3 vs 6.9-7.6, 4 ranks 10.6-15.9 vs 4.3-11.6, 5 ranks 15.6-25.0 vs 23.1-25.9",
);

/// Whether a barrier on `comm` gathers arrivals at rank 0 and releases every member with one
/// post (all on this host, at least `BB_COLL_BARRIER_POST_MIN` members) rather than by
/// dissemination.
pub(crate) fn barrier_posts_once(comm: &Communicator) -> bool {
    let n = comm.size();
    let posted = match BARRIER.forced() {
        Some(i) => i == 0 && n > 1,
        None => n >= BARRIER_POST_MIN.get().max(3) && comm.on_one_host(),
    };
    report(comm, Collective::Barrier, if posted { "post" } else { "dissemination" }, 0);
    posted
}

pub static REDUCE: Switch = Switch::new(
    "BB_COLL_REDUCE",
    REDUCTIONS,
    "reduce: tree = binomial tree into rank 0 (then to the root), post = every rank posts its vector to the root, \
     which folds them in rank order, split = blocks reduced by every rank (reduce_split.rs); unset: split from \
     BB_REDUCE_SPLIT_MIN(_MANY), else tree",
);

pub static ALLREDUCE: Switch = Switch::new(
    "BB_COLL_ALLREDUCE",
    REDUCTIONS,
    "allreduce: tree = binomial reduce then broadcast, post = every rank posts its vector once to all and each \
     folds them in rank order, split = blocks reduced by every rank and exchanged; unset: split from \
     BB_REDUCE_SPLIT_MIN(_MANY), post within BB_ALLREDUCE_POST_MAX/_RANKS on one host, else tree",
);

/// The names of [`ReduceBy`]'s algorithms, in its order.
const REDUCTIONS: &[&str] = &["tree", "post", "split"];

/// How a reduction goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ReduceBy {
    /// Binomial tree (`nonblocking.rs`, `reduce.rs`).
    Tree,
    /// Every rank's vector posted to whoever folds it (`reduce_post.rs`).
    Post,
    /// One block per rank (`reduce_split.rs`).
    Split,
}

pub static ALLREDUCE_POST_MAX: Tunable = Tunable::new(
    "BB_ALLREDUCE_POST_MAX",
    16 << 10,
    "largest allreduce (bytes) on one host of at most BB_ALLREDUCE_POST_RANKS ranks by posts (every rank posts its \
     vector to all, each folds) instead of a binomial tree + broadcast; coll.sh-style runs, 2 cores, load 3.5, us, \
     post vs tree: 4 ranks 8 B 4.4-4.6 vs 8.2-17, 16 KiB 17.3-18.5 vs 17.2-21, 32 KiB 30-31 vs 28-33 (even)",
);

pub static ALLREDUCE_POST_RANKS: Tunable = Tunable::new(
    "BB_ALLREDUCE_POST_RANKS",
    4,
    "most ranks of an allreduce by posts (each rank reads every other's post: n-1 reads and folds); same runs: 3 \
     ranks 4 KiB 6.6 vs 7.9-8.8 us; 5 ranks 4 KiB 16.1 vs 13.0-13.7 and 6 ranks 19.0 vs 17.0-20.0 (tree ahead from \
     5 ranks but at 8 B); 8 ranks 8 B 23-26 vs 13-23",
);

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

/// How a reduction of `len` bytes on `comm` goes: to one root (`rooted`) or to all. Every
/// rank must choose alike, so this depends only on what all know.
pub(crate) fn reduce_by(comm: &Communicator, len: usize, rooted: bool) -> ReduceBy {
    let n = comm.size();
    let switch = if rooted { &REDUCE } else { &ALLREDUCE };
    let by = match switch.forced() {
        _ if n < 2 => ReduceBy::Tree,
        Some(i) => [ReduceBy::Tree, ReduceBy::Post, ReduceBy::Split][i],
        None if len >= if n == 2 { REDUCE_SPLIT_MIN.get() } else { REDUCE_SPLIT_MIN_MANY.get() } => ReduceBy::Split,
        // A reduce's root would read n-1 posts alone where the tree shares the folding out:
        // the tree measured faster (8 B, us, tree vs post: 4 ranks 0.2-0.8 vs 1.1-1.6, 8 ranks
        // 1.6-2.3 vs 3.9-4.8), at 2 ranks too (0.17-0.28 vs 0.37-0.49: the same message; the
        // tree's direct form costs less than a schedule).
        None if rooted => ReduceBy::Tree,
        None if n <= ALLREDUCE_POST_RANKS.get() && len <= ALLREDUCE_POST_MAX.get() && comm.on_one_host() => {
            ReduceBy::Post
        }
        None => ReduceBy::Tree,
    };
    let what = if rooted { Collective::Reduce } else { Collective::Allreduce };
    report(comm, what, REDUCTIONS[by as usize], len);
    by
}

impl Communicator {
    /// Whether a reduction of `len` bytes on this communicator (to a root, or to all) runs as
    /// its schedule (then the blocking form is start + wait) rather than the direct binomial
    /// tree of [`Communicator::reduce_bytes`].
    pub fn reduction_scheduled(&self, len: usize, rooted: bool) -> bool {
        reduce_by(self, len, rooted) != ReduceBy::Tree
    }
}

pub static ALLGATHER: Switch = Switch::new(
    "BB_COLL_ALLGATHER",
    &["post", "gather-bcast"],
    "allgather(v): post = every rank posts its part once to all (seed 000's partitioned cache; a send each where \
     routes cannot multicast), gather-bcast = gather to rank 0 then broadcast; unset: post",
);

/// Whether an allgather on `comm` goes by every rank's one post to all (`allgather_post.rs`)
/// rather than a gather to rank 0 and a broadcast.
pub(crate) fn allgather_posts(comm: &Communicator, len: usize) -> bool {
    let posted = ALLGATHER.forced().is_none_or(|i| i == 0);
    report(comm, Collective::Allgather, if posted { "post" } else { "gather-bcast" }, len);
    posted
}

/// Every switch, for `bbrun --info`.
pub(crate) static SWITCHES: &[&Switch] = &[&BCAST, &BARRIER, &REDUCE, &ALLREDUCE, &ALLGATHER];

/// The collectives whose choices are reported, each with 4 bits of a communicator's report
/// word (one per algorithm).
#[derive(Clone, Copy)]
enum Collective {
    Bcast,
    Barrier,
    Reduce,
    Allreduce,
    Allgather,
}

/// Reports under `BB_VERBOSE` the first time `comm` chooses `algorithm` for `what` (for a
/// message of `len` bytes): which algorithm, and why it applies.
fn report(comm: &Communicator, what: Collective, algorithm: &str, len: usize) {
    if crate::VERBOSE.get() == 0 {
        return;
    }
    let (name, switch, algorithms, why): (_, _, &[&str], _) = match what {
        Collective::Bcast => ("bcast", &BCAST, &["post", "tree"], "the root posts once, every rank reads it|binomial tree"),
        Collective::Barrier => (
            "barrier",
            &BARRIER,
            &["post", "dissemination"],
            "arrivals to rank 0, released by one post|dissemination",
        ),
        Collective::Reduce => (
            "reduce",
            &REDUCE,
            REDUCTIONS,
            "binomial tree|every rank posts to the root, folded in rank order|blocks reduced by every rank",
        ),
        Collective::Allreduce => (
            "allreduce",
            &ALLREDUCE,
            REDUCTIONS,
            "binomial tree and broadcast|every rank posts to all, each folds in rank order|blocks reduced by every rank",
        ),
        Collective::Allgather => {
            ("allgather", &ALLGATHER, &["post", "gather-bcast"], "every rank posts its part to all|gather and broadcast")
        }
    };
    let index = algorithms.iter().position(|&a| a == algorithm).unwrap_or(0);
    let bit = what as u32 * 4 + index as u32;
    if comm.first_report(bit) {
        let host = if comm.on_one_host() { "one host" } else { "several hosts" };
        let how = why.split('|').nth(index).unwrap_or(algorithm);
        let origin = if switch.forced().is_some() { "forced by" } else { "table; force with" };
        crate::verbose(format_args!(
            "{name} on a communicator of {} ranks ({host}, context {}), first at {len} bytes: {how} \
             ({algorithm}; {origin} {})",
            comm.size(),
            comm.coll_context(),
            switch.env
        ));
    }
}

//! Which algorithm a collective uses: the one table. Every member must choose alike, so a
//! choice depends only on what all know: the sizes, the rank count, where the members run
//! (ranks per host, hosts), whether the operator commutes, and the `BB_COLL_<NAME>` switches,
//! which `bbrun` passes to every rank alike.
//!
//! | collective | algorithms (`BB_COLL_<NAME>=`) | the table, unforced |
//! |---|---|---|
//! | bcast | `post`, `tree`, `scatter-allgather`, `hier`, `board`, `board-cells` | one host: where ranks outnumber cores the board in cells up to `BB_BCAST_CELLS_MAX` and from `BB_BCAST_CELLS_MIN` (`select_board.rs`); post for more than 2 ranks up to `BB_EAGER_MAX` bytes, else tree; several hosts: hier |
//! | barrier | `post`, `dissemination`, `hier`, `board`, `board-leader` | one host: post from `BB_COLL_BARRIER_POST_MIN` ranks, else dissemination; several hosts: hier |
//! | reduce | `tree`, `post`, `split`, `hier`, `board`, `halves`, `board-cells` | one host: blocking forms of elements the interface names, where ranks outnumber cores, from `BB_REDUCE_CELLS_MIN` on the board in cells (`select_board.rs`); split on more than 2 ranks from `BB_REDUCE_ROOTED_SPLIT_MIN`, halves on 2 ranks with a core each from `BB_REDUCE_HALVES_MIN` (128 KiB; blocking forms), else tree; several hosts: hier if the operator commutes or every host's ranks are consecutive, else tree |
//! | allreduce | `tree`, `post`, `split`, `doubling`, `ring`, `hier`, `board`, `halves` | one host: halves on 2 ranks with a core each from `BB_ALLREDUCE_HALVES_MIN` (256 KiB; blocking forms; schedules and reduce-scatter split), split from `BB_REDUCE_SPLIT_MIN(_MANY)`, post up to `BB_ALLREDUCE_POST_MAX`/`_RANKS`, else tree; several hosts: hier as for reduce, else doubling |
//! | allgather(v) | `post`, `gather-bcast`, `ring`, `doubling`, `bruck`, `hier`, `board` | one host: post; several hosts: hier |
//! | alltoall(v) | `linear`, `pairwise`, `hier`, `board` | several hosts, blocking: hier (host phases on the board, one message per pair of hosts' leaders) for parts within `BB_HIER_ALLTOALL_MAX` a host; else linear (every part in one round); pairwise on several hosts from `BB_ALLTOALL_PAIRWISE_MIN` bytes a rank sends |
//! | gather, scatter (parts of one length) | `linear`, `hier`, `binomial`, `board` | several hosts: hier (one message per host between its leader and the root) for parts up to `BB_GATHER_HIER_MAX`, and blocking forms whose widest host's parts fit `BB_HIER_PARTS_MAX` (host phases on the board in cells); else linear |
//! | reduce_scatter(_block) | `allreduce`, `board`, `board-cells` | the allreduce's row, each rank keeping its block (blocking forms on one host: the board, `select_board.rs`) |
//! | scan, exscan | `chain`, `board`, `hier` | a chain of messages in rank order (blocking forms on one host: the board; where ranks outnumber cores only up to `BB_SCAN_CROWDED_MAX` bytes; hier forced on several hosts of consecutive ranks up to 2 KiB, `hier_board_scan.rs`) |
//!
//! The board (`board.rs`) comes first: a blocking form on one host whose posts fit a rank's
//! board data area (2 KiB) runs there, and a broadcast of a few KiB where ranks outnumber
//! cores in cells of it, a barrier where ranks outnumber cores by `board-leader`
//! (`select_board.rs`; `BB_BOARD=0` leaves it to forcing); the rows above
//! choose the rest, and `board` forced where it cannot apply leaves it to them. On one host
//! with a core for every rank the messages of the data-moving collectives go by rendezvous
//! from `BB_COLL_RENDEZVOUS_MIN` bytes (the receiver's single copy), below the eager limit too.
//!
//! Hierarchical (`hier`, `hier.rs`): the members of each host on their billboard by the
//! one-host table, one leader per host (the root on its own host) between hosts, then the
//! host again. Blocking barrier, bcast, reduce, allreduce, reduce_scatter, allgather(v),
//! gather and scatter (a host's parts in one post, or in cells of the board up to
//! `BB_HIER_PARTS_MAX`: a scatter's past the inline bytes as a scatterv's), and scan/exscan on hosts of
//! consecutive ranks (forced: `BB_COLL_SCAN=hier`), whose posts fit the board's data area
//! (bcast up to `BB_HIER_BCAST_MAX`, the reductions up to `BB_HIER_BOARD_MAX` in cells of it) run their host phases on each host's board instead,
//! the leaders (each host's lowest
//! member) on a communicator of their own (`hier_board.rs`; `BB_BOARD=0` leaves them to
//! `hier.rs`). Between the leaders (`BB_COLL_*` does not reach them; the table does): bcast
//! binomial, or scatter + ring all-gather for at least 3 leaders from `BB_BCAST_SCATTER_MIN`
//! bytes; reduce binomial; allreduce recursive doubling, or a ring (reduce-scatter +
//! all-gather) for commutative operators from `BB_ALLREDUCE_RING_MIN` bytes; all-gather
//! recursive doubling (a power of two of leaders) or Bruck up to `BB_ALLGATHER_RING_MIN`
//! bytes in all, else a ring; barrier by dissemination. Forced network algorithms
//! (`doubling`, `ring`, `bruck`, `pairwise`, `scatter-allgather`) run flat over the whole
//! communicator, on one host too. Where one cannot apply it says so in the verbose report and
//! runs one that can: a ring for a non-commutative allreduce runs recursive doubling,
//! recursive doubling of an all-gather on a rank count not a power of two runs Bruck, a
//! hierarchical reduction of a non-commutative operator whose hosts' ranks are not consecutive
//! runs flat (tree for reduce, doubling for allreduce), all keeping rank order.
//!
//! Gatherv and scatterv have one algorithm of messages each, already a post per part: each
//! rank posts its part to the root (gather), the root posts each part to its reader (scatter),
//! all in one round (`nonblocking.rs`); their blocking forms, and alltoallv's, run on the board
//! where `BB_COLL_GATHER`, `_SCATTER` or `_ALLTOALL` gives it and every rank has a core, or
//! where forced (`board_parts.rs`). On several hosts their blocking forms go through the
//! hosts' leaders, the host phases on the board (`hier_board_parts.rs`: each member posts its
//! part with its length; one message between the root and each other host's leader; a part
//! past one data area by its own message), unless `BB_COLL_GATHER` or `_SCATTER` forces a
//! flat algorithm; a gatherv unforced only where some host holds `BB_GATHERV_HIER_WIDEST`
//! members (on 2 a host the leader's extra hop costs more than the message it saves);
//! MPI_Gather and MPI_Scatter (every part of one length) go through the
//! leaders by the table above. Blocking all-to-all(v) on several hosts goes through the
//! leaders too (`hier_board_alltoall.rs`: every member's parts on its board, one message
//! between each pair of hosts' leaders, a part past `BB_HIER_ALLTOALL_MAX`'s share by its own
//! message); the nonblocking forms stay flat (pairwise when large).

pub use super::reduce_halves::{REDUCE_HALVES_CHUNK, REDUCE_HALVES_ROOT_SHARE};
pub(crate) use super::select_board::{board_by, rendezvous_min};
pub use super::select_board::{
    BCAST_CELLS_MAX, BCAST_CELLS_MIN, BOARD, GATHERV_HIER_WIDEST, HIER_ALLTOALL_MAX, HIER_BCAST_MAX, HIER_BOARD_MAX,
    HIER_PARTS_MAX, REDUCE_CELLS_MIN, REDUCE_SCATTER, RENDEZVOUS_MIN, SCAN, SCAN_CROWDED_MAX,
};
pub(super) use super::select_report::report;
use crate::tunables::{Effect, Switch, Tunable};
use crate::{Communicator, Result};

pub static BCAST: Switch = Switch::new(
    "BB_COLL_BCAST",
    &["post", "tree", "scatter-allgather", "hier", "board", "board-cells"],
    "broadcast: post = the root posts once and every rank reads it (seed 004's multicast), tree = binomial tree of \
     messages, scatter-allgather = the root's blocks scattered then a ring all-gather (van de Geijn), hier = the \
     leaders of the hosts, then each host, board-cells = the board in cells of 2 KiB, of 16 KiB from 64 KiB (blocking, one host); unset: one host \
     whose ranks outnumber its cores board-cells up to BB_BCAST_CELLS_MAX and from BB_BCAST_CELLS_MIN, with cores for every rank tree up to \
     BB_BCAST_TREE_MAX bytes, else post for more than 2 ranks up to BB_EAGER_MAX bytes, else tree; several hosts \
     hier",
);

/// How a broadcast goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BcastBy {
    Post,
    Tree,
    ScatterAllgather,
    Hier,
}

/// How a broadcast of `len` bytes on `comm` goes.
pub(crate) fn bcast_by(comm: &Communicator, len: usize) -> BcastBy {
    use BcastBy::*;
    let n = comm.size();
    let by = match forced(&BCAST) {
        _ if n < 2 => Tree,
        Some(i) => [Post, Tree, ScatterAllgather, Hier][i],
        None if !comm.on_one_host() => Hier,
        None => bcast_on_one_host(n, len, comm.crowded()),
    };
    report(comm, Collective::Bcast, BCAST.algorithms[by as usize], "", len);
    by
}

pub static BCAST_TREE_MAX: Tunable = Tunable::new(
    "BB_BCAST_TREE_MAX",
    4 << 10,
    "largest broadcast on one host with a core for every rank that goes down a binomial tree rather than as one \
     post: the post's reader count of fast-box writes lands on the root alone; bench/device/tune.sh, 16-core VM, \
     us, tree vs post: 8 ranks 8 B 0.53 vs 1.20, 512 B 1.16 vs 2.71, 8 KiB 5.04 vs 3.00; 16 ranks 8 B 0.62 vs \
     2.06, 512 B 1.30 vs 5.46, 8 KiB 5.95 vs 3.61 (Open MPI 0.67-1.06, 2.95-3.00, 10.3-11.9)",
)
.read_at(Effect::EachCollective);

/// The one-host table of broadcasts (a communicator on one host, a host's phase of a
/// hierarchical one): with a core for every rank a tree for small messages; else one post
/// for more than 2 ranks up to the eager size (where ranks take turns on cores, each of the
/// tree's hops may wait for one), else a tree.
pub(crate) fn bcast_on_one_host(n: usize, len: usize, crowded: bool) -> BcastBy {
    match () {
        _ if !crowded && len <= BCAST_TREE_MAX.get() => BcastBy::Tree,
        _ if n > 2 && len <= crate::engine::protocol::EAGER_MAX.get() => BcastBy::Post,
        _ => BcastBy::Tree,
    }
}

pub static BCAST_SCATTER_MIN: Tunable = Tunable::new(
    "BB_BCAST_SCATTER_MIN",
    4 << 20,
    "smallest broadcast between at least 3 hosts' leaders that goes as scatter + ring all-gather instead of a \
     binomial tree; 3 namespace hosts x 1 rank, forced, 2 alternating runs, load 6-7, us, tree vs scatter-allgather: \
     8 KiB 12-13 vs 56-92, 64 KiB 58-67 vs 95-101, 256 KiB 205 vs 312-327, 1 MiB 719-1051 vs 1102-2699: the tree \
     was ahead at every size measured, so the switch lies above them (MPICH's is 512 KiB on real networks)",
)
.read_at(Effect::EachCollective);

/// How the leaders of `leaders` hosts broadcast `len` bytes among themselves.
pub(crate) fn bcast_between_hosts(leaders: usize, len: usize) -> BcastBy {
    match leaders >= 3 && len >= BCAST_SCATTER_MIN.get() {
        true => BcastBy::ScatterAllgather,
        false => BcastBy::Tree,
    }
}

pub static BARRIER: Switch = Switch::new(
    "BB_COLL_BARRIER",
    &["post", "dissemination", "hier", "board", "board-leader"],
    "barrier: post = every rank tells rank 0, which releases all with one post (seed 004's barrier by multicast), \
     dissemination = log2(n) rounds of messages, hier = arrivals at each host's leader, dissemination among the \
     leaders, one post releases each host; unset: one host with a core for every rank dissemination, else see \
     BB_COLL_BARRIER_POST_MIN; several hosts hier",
);

pub static BARRIER_POST_MIN: Tunable = Tunable::new(
    "BB_COLL_BARRIER_POST_MIN",
    5,
    "smallest barrier on one host released by one post instead of dissemination; bench/peers/coll.c barrier, 2 \
     cores, post vs dissemination, us: load 6-11: 3 ranks 4.7-7.8 vs 6.8-7.0, 4 ranks 8.1-10.5 vs 4.0-9.5, 5 ranks \
     11.1-12.2 vs 14.0-14.1; again at load 10 (BB_COLL_BARRIER forced, 3 rounds): 2 ranks >= 1600 vs 0.25-900, \
     3 ranks 7.7-9.3 vs 6.9-7.6, 4 ranks 10.6-15.9 vs 4.3-11.6, 5 ranks 15.6-25.0 vs 23.1-25.9",
)
.read_at(Effect::EachCollective);

/// How a barrier goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BarrierBy {
    Post,
    Dissemination,
    Hier,
}

/// How a barrier on `comm` goes.
pub(crate) fn barrier_by(comm: &Communicator) -> BarrierBy {
    use BarrierBy::*;
    let n = comm.size();
    let by = match forced(&BARRIER) {
        _ if n < 2 => Dissemination,
        Some(i) => [Post, Dissemination, Hier][i],
        None if !comm.on_one_host() => Hier,
        // Rank 0's n - 1 arrivals are the post's whole cost where every rank has a core
        // (bench/device/tune.sh, 16-core VM, us, post vs dissemination: 8 ranks 3.74 vs 1.13,
        // 16 ranks 6.66 vs 1.52; Open MPI 1.76, 2.38).
        None if !comm.crowded() => Dissemination,
        None if n >= BARRIER_POST_MIN.get().max(3) => Post,
        None => Dissemination,
    };
    report(comm, Collective::Barrier, BARRIER.algorithms[by as usize], "", 0);
    by
}

pub static REDUCE: Switch = Switch::new(
    "BB_COLL_REDUCE",
    &["tree", "post", "split", "hier", "board", "halves", "board-cells"],
    "reduce: tree = binomial tree into rank 0 (then to the root), post = every rank posts its vector to the root, \
     which folds them in rank order, split = blocks reduced by every rank (reduce_split.rs), hier = each host into \
     its leader, then a tree of the leaders, halves = 2 ranks of one host fold a part each by single copy, the \
     other's landing in the root's result (reduce_halves.rs; blocking forms, else tree), board-cells = every rank \
     but the root posts its vector on the board in cells of 16 KiB, the root folds each as it comes \
     (board_reduce_cells.rs; blocking forms of typed elements, else the table); unset: one host board-cells where \
     ranks outnumber cores from BB_REDUCE_CELLS_MIN, split on more than 2 ranks from BB_REDUCE_ROOTED_SPLIT_MIN, halves on 2 ranks with a core each from \
     BB_REDUCE_HALVES_MIN, else tree; \
     several hosts hier (tree for a non-commutative operator on hosts whose ranks are not consecutive)",
);

pub static ALLREDUCE: Switch = Switch::new(
    "BB_COLL_ALLREDUCE",
    &["tree", "post", "split", "doubling", "ring", "hier", "board", "halves"],
    "allreduce: tree = binomial reduce then broadcast, post = every rank posts its vector once to all and each \
     folds them in rank order, split = blocks reduced by every rank and exchanged, doubling = recursive doubling, \
     ring = ring reduce-scatter + all-gather (commutative operators), hier = each host into its leader, the \
     leaders by doubling or ring, each host's leader posts the result, halves = 2 ranks of one host fold a half \
     each by single copy and write it into the other's result (reduce_halves.rs; blocking forms, else split); \
     unset: one host halves on 2 ranks with a core each from BB_ALLREDUCE_HALVES_MIN, split from \
     BB_REDUCE_SPLIT_MIN(_MANY), doubling for more than 2 ranks with a core each, post within \
     BB_ALLREDUCE_POST_MAX/_RANKS, else tree; several hosts hier (doubling for a non-commutative operator on hosts \
     whose ranks are not consecutive)",
);

/// How a reduction goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ReduceBy {
    /// Binomial tree (`nonblocking.rs`, `reduce.rs`).
    Tree,
    /// Every rank's vector posted to whoever folds it (`reduce_post.rs`).
    Post,
    /// One block per rank (`reduce_split.rs`).
    Split,
    /// Recursive doubling (`allreduce_doubling.rs`).
    Doubling,
    /// Ring reduce-scatter + all-gather (`allreduce_ring.rs`).
    Ring,
    /// Hosts, then their leaders, then hosts (`hier.rs`).
    Hier,
    /// 2 ranks of one host folding a part each by single copy (`reduce_halves.rs`); blocking
    /// forms only (elsewhere, and schedules, the tree for a reduce, the split for an allreduce).
    Halves,
}

/// The names of [`ReduceBy`]'s algorithms, in its order.
const REDUCTIONS: &[&str] = &["tree", "post", "split", "doubling", "ring", "hier", "halves"];

pub static ALLREDUCE_POST_MAX: Tunable = Tunable::new(
    "BB_ALLREDUCE_POST_MAX",
    16 << 10,
    "largest allreduce (bytes) on one host of at most BB_ALLREDUCE_POST_RANKS ranks by posts (every rank posts its \
     vector to all, each folds) instead of a binomial tree + broadcast; coll.sh-style runs, 2 cores, load 3.5, us, \
     post vs tree: 4 ranks 8 B 4.4-4.6 vs 8.2-17, 16 KiB 17.3-18.5 vs 17.2-21, 32 KiB 30-31 vs 28-33 (even)",
)
.read_at(Effect::EachCollective);

pub static ALLREDUCE_POST_RANKS: Tunable = Tunable::new(
    "BB_ALLREDUCE_POST_RANKS",
    4,
    "most ranks of an allreduce by posts (each rank reads every other's post: n-1 reads and folds); same runs: 3 \
     ranks 4 KiB 6.6 vs 7.9-8.8 us; 5 ranks 4 KiB 16.1 vs 13.0-13.7 and 6 ranks 19.0 vs 17.0-20.0 (tree ahead from \
     5 ranks but at 8 B); 8 ranks 8 B 23-26 vs 13-23",
)
.read_at(Effect::EachCollective);

pub static REDUCE_SPLIT_MIN: Tunable = Tunable::new(
    "BB_REDUCE_SPLIT_MIN",
    8 << 10,
    "allreductions of this many bytes and more on 2 ranks go by reduce-scatter + all-gather (each rank reduces a \
     half) instead of a binomial tree (a reduce to one root: BB_REDUCE_ROOTED_SPLIT_MIN); bench/peers/coll.sh on 2 ranks: tree faster below 8 KiB, even at 8, split from 16",
)
.read_at(Effect::EachCollective);

pub static REDUCE_SPLIT_MIN_MANY: Tunable = Tunable::new(
    "BB_REDUCE_SPLIT_MIN_MANY",
    64 << 10,
    "BB_REDUCE_SPLIT_MIN on more than 2 ranks: each rank of a split waits on every other (a context switch each \
     where ranks outnumber cores); 4 ranks on 2 cores, the tree was faster up to 32 KiB, the split from 64 KiB",
)
.read_at(Effect::EachCollective);

pub static REDUCE_ROOTED_SPLIT_MIN: Tunable = Tunable::new(
    "BB_REDUCE_ROOTED_SPLIT_MIN",
    512 << 10,
    "a reduce to one root on more than 2 ranks goes by split from this many bytes, else (and always on 2 ranks) by \
     the binomial tree, whose working vectors are kept between calls; coll.c, us, tree vs split: 2 ranks (chrt) 8 \
     KiB 1.44 vs 2.93, 32 KiB 4.41 vs 7.08, 256 KiB 20.9 vs 28.5, 1 MiB 91.9 vs 125.6; 4 ranks on 2 cores 64 KiB \
     22-23 vs 23-36, 256 KiB 72 vs 71, 1 MiB 421-476 vs 348-354",
)
.read_at(Effect::EachCollective);

pub static REDUCE_HALVES_MIN: Tunable = Tunable::new(
    "BB_REDUCE_HALVES_MIN",
    128 << 10,
    "a blocking reduce to one root on 2 ranks of one host, each with a core, goes by halves (reduce_halves.rs) from \
     this many bytes (0: never, the tree); coll.c, 2 ranks, chrt, 5 interleaved rounds, load 19-22, us, tree vs \
     halves in 256 KiB chunks vs Open MPI: 64 KiB 8.6-20.8 vs 12.0-14.4 vs 10.5-15.4 (the tree two-level, even), \
     128 KiB 19.4-28.9 vs 15.4-20.3 vs 18.1-23.3, 256 KiB 36.6-54.7 vs 33.3-35.8 vs 37.1-47.2, 1 MiB 145-182 vs \
     112-128 vs 155-170 (within-round halves/Open MPI 0.72-0.82), 4 MiB 702-806 vs 479-556 vs 687-869. In 64 KiB \
     chunks (its old default) the halves matched the tree (1 MiB 145-157): the chunk, not the method, held it back",
)
.read_at(Effect::EachCollective);

pub static ALLREDUCE_HALVES_MIN: Tunable = Tunable::new(
    "BB_ALLREDUCE_HALVES_MIN",
    256 << 10,
    "a blocking allreduce on 2 ranks of one host, each with a core, goes by halves (reduce_halves.rs: each folds a \
     half by single copy and writes it into the other's result) from this many bytes (0: never, the split); coll.c, \
     2 ranks, chrt, forced, alternated, us, split vs halves: load 20 (the split's slow level): 16 KiB 8.8-9.1 vs \
     11.3-12.0, 32 KiB 14.3-15.5 vs 12.5-13.5, 64 KiB 24.9-26.9 vs 17.4-18.9, 256 KiB 104-110 vs 44-45, 1 MiB \
     410-429 vs 160-169; load 5, 4 rounds, the split fast in 3: 64 KiB 8.3-9.4 vs 14.7-18.8, 256 KiB 26-34 vs \
     31-53, 1 MiB 105-114 vs 123-164, slow in 1: 27, 118, 425 vs 18, 48, 156 (Open MPI 17, 137, 515). From 256 KiB \
     the halves stay far below the peers in both levels; below it the split's fast level is worth its slow one",
)
.read_at(Effect::EachCollective);

pub static REDUCE_SEGMENT: Tunable = Tunable::new(
    "BB_REDUCE_SEGMENT",
    64 << 10,
    "largest message of a split reduction (bytes): the eager limit, so blocks go through data-part slots, \
     pipelined, instead of a single-copy rendezvous each (2 ranks, 1 MiB allreduce: see reduce_split.rs)",
)
.read_at(Effect::EachCollective);

pub static ALLREDUCE_RING_MIN: Tunable = Tunable::new(
    "BB_ALLREDUCE_RING_MIN",
    256 << 10,
    "smallest allreduce between hosts' leaders (commutative operators) by ring reduce-scatter + all-gather instead \
     of recursive doubling (each link carries 2(p-1)/p of the vector, not log2(p) whole ones); 3 namespace hosts x \
     1 rank, forced, 2 alternating runs, load 6-7, us, doubling vs ring: 64 KiB 105-127 vs 97-133 (even), 256 KiB \
     404-533 vs 398-460, 1 MiB 4576-11722 vs 4140-7873",
)
.read_at(Effect::EachCollective);

/// How a reduction of `len` bytes on `comm` goes: to one root (`rooted`) or to all, with an
/// operator that commutes or not. Every rank must choose alike, so this depends only on what
/// all know.
pub(crate) fn reduce_by(comm: &Communicator, len: usize, rooted: bool, commutative: bool) -> ReduceBy {
    use ReduceBy::*;
    let n = comm.size();
    let switch = if rooted { &REDUCE } else { &ALLREDUCE };
    let hosts = (!comm.on_one_host()).then(|| comm.hosts());
    // A hierarchy keeps rank order only where each host's ranks follow one another.
    let ordered_hier = commutative || hosts.as_ref().is_none_or(|h| h.consecutive());
    let flat = if rooted { Tree } else { Doubling };
    let forced = forced(switch).map(|i| by_name(switch.algorithms[i]));
    let (by, why) = match forced {
        _ if n < 2 => (Tree, ""),
        Some(Hier) if !ordered_hier => {
            (flat, " (hier asked: a non-commutative operator on hosts whose ranks are not consecutive)")
        }
        Some(Ring) if !commutative => (Doubling, " (ring asked: the operator does not commute)"),
        Some(Halves) if n != 2 || hosts.is_some() || !halves_copy() => {
            (flat, " (halves asked: it takes 2 ranks of one host that may copy by single copy)")
        }
        Some(by) => (by, ""),
        None if hosts.is_some() && ordered_hier => (Hier, ""),
        None if hosts.is_some() => (flat, " (a non-commutative operator on hosts whose ranks are not consecutive)"),
        None => (reduce_on_one_host(n, len, rooted, comm.crowded()), ""),
    };
    let what = if rooted { Collective::Reduce } else { Collective::Allreduce };
    report(comm, what, REDUCTIONS[by as usize], why, len);
    by
}

/// The name's algorithm.
fn by_name(name: &str) -> ReduceBy {
    let at = REDUCTIONS.iter().position(|&a| a == name).unwrap_or(0);
    use ReduceBy::*;
    [Tree, Post, Split, Doubling, Ring, Hier, Halves][at]
}

/// The one-host table of reductions (a communicator on one host, a host's phase of a
/// hierarchical one): tree, split or post.
pub(crate) fn reduce_on_one_host(n: usize, len: usize, rooted: bool, crowded: bool) -> ReduceBy {
    match () {
        _ if n < 2 => ReduceBy::Tree,
        // A reduce's root would read n-1 posts alone where the tree shares the folding out:
        // the tree measured faster (8 B, us, tree vs post: 4 ranks 0.2-0.8 vs 1.1-1.6, 8 ranks
        // 1.6-2.3 vs 3.9-4.8), at 2 ranks too (0.17-0.28 vs 0.37-0.49: the same message; the
        // tree's direct form costs less than a schedule); the split only for large vectors
        // on more ranks (BB_REDUCE_ROOTED_SPLIT_MIN).
        // Two ranks folding at once on one core only add the halves' messages (unmeasured
        // there): the tree.
        _ if rooted && n == 2 && !crowded && at_least(len, &REDUCE_HALVES_MIN) && halves_copy() => ReduceBy::Halves,
        _ if !rooted && n == 2 && !crowded && at_least(len, &ALLREDUCE_HALVES_MIN) && halves_copy() => ReduceBy::Halves,
        _ if rooted => match n > 2 && len >= REDUCE_ROOTED_SPLIT_MIN.get() {
            true => ReduceBy::Split,
            false => ReduceBy::Tree,
        },
        _ if len >= if n == 2 { REDUCE_SPLIT_MIN.get() } else { REDUCE_SPLIT_MIN_MANY.get() } => ReduceBy::Split,
        // With a core for every rank, log2(n) exchanges beat a tree up and down (2 log2(n)
        // hops): bench/device/tune.sh, 16-core VM, us, doubling vs tree vs post: 8 ranks 8 B
        // 2.78 vs 2.62 vs 3.89, 512 B 3.69 vs 5.34 vs 6.05, 8 KiB 11.7 vs 14.4 vs 13.5; 16 ranks
        // 8 B 3.49 vs 3.72 vs 7.05, 512 B 5.19 vs 8.36 vs 12.8, 8 KiB 15.5 vs 16.6 vs 29.5.
        _ if !rooted && !crowded && n > 2 => ReduceBy::Doubling,
        _ if n <= ALLREDUCE_POST_RANKS.get() && len <= ALLREDUCE_POST_MAX.get() => ReduceBy::Post,
        _ => ReduceBy::Tree,
    }
}

/// Whether a 2-rank reduction of `len` bytes goes by halves unforced: from `min`
/// (`BB_REDUCE_HALVES_MIN`, `BB_ALLREDUCE_HALVES_MIN`), 0 being never.
fn at_least(len: usize, min: &Tunable) -> bool {
    let min = min.get();
    min != 0 && len >= min
}

/// Whether the halves reduce may copy between the ranks' memories (`BB_SHM_SINGLE_COPY`).
fn halves_copy() -> bool {
    crate::engine::protocol::SINGLE_COPY.get() != 0
}

/// How the leaders of `leaders` hosts allreduce `len` bytes among themselves.
pub(crate) fn allreduce_between_hosts(leaders: usize, len: usize, commutative: bool) -> ReduceBy {
    match commutative && leaders > 1 && len >= ALLREDUCE_RING_MIN.get() {
        true => ReduceBy::Ring,
        false => ReduceBy::Doubling,
    }
}

impl Communicator {
    /// Whether a reduction of `len` bytes on this communicator (to a root, or to all) runs as
    /// its schedule (then the blocking form is start + wait) rather than the direct binomial
    /// tree of [`Communicator::reduce_bytes`]: always on several hosts, where the schedule's
    /// own choice also weighs whether the operator commutes.
    pub fn reduction_scheduled(&self, len: usize, rooted: bool) -> Result<bool> {
        let what = if rooted { Collective::Reduce } else { Collective::Allreduce };
        if self.board_for(what, len, true)?.is_some() {
            return Ok(false);
        }
        Ok(!self.on_one_host() || !matches!(reduce_by(self, len, rooted, false), ReduceBy::Tree | ReduceBy::Halves))
    }
}

pub static ALLGATHER: Switch = Switch::new(
    "BB_COLL_ALLGATHER",
    &["post", "gather-bcast", "ring", "doubling", "bruck", "hier", "board"],
    "allgather(v): post = every rank posts its part once to all (seed 000's partitioned cache; a send each where \
     routes cannot multicast), gather-bcast = gather to rank 0 then broadcast, ring = n-1 steps around a ring, \
     doubling = recursive doubling (a power of two of ranks; else bruck), bruck = log2(n) rounds of Bruck's, hier = \
     each host's parts to its leader, the leaders by doubling, bruck or ring, each leader posts the others' parts \
     on its host; unset: one host bruck for small parts (BB_ALLGATHER_BRUCK_MAX) from 8 ranks with a core each, \
     else post; several hosts hier",
);

/// How an all-gather goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AllgatherBy {
    Post,
    GatherBcast,
    Ring,
    Doubling,
    Bruck,
    Hier,
}

pub static ALLGATHER_RING_MIN: Tunable = Tunable::new(
    "BB_ALLGATHER_RING_MIN",
    512 << 10,
    "smallest all-gather between hosts' leaders (bytes gathered in all) by a ring instead of recursive doubling or \
     Bruck; 3 namespace hosts x 1 rank, forced, 2 alternating runs, load 6-7, us, bruck vs ring by bytes in all: \
     24 KiB 53-55 vs 45-46, 192 KiB 101-139 vs 160-172, 768 KiB 702-3836 vs 687-749, 3 MiB 5186-8819 vs 4749-4842",
)
.read_at(Effect::EachCollective);

pub static ALLGATHER_BRUCK_MAX: Tunable = Tunable::new(
    "BB_ALLGATHER_BRUCK_MAX",
    64,
    "largest part (bytes a rank, on average) of an all-gather on one host of at least 8 ranks with a core each that \
     goes by Bruck's log2(n) rounds instead of every rank's post (n - 1 reads each); bench/device/tune.sh, 16-core \
     VM, us, bruck vs post: 8 ranks 8 B 3.86 vs 4.32, 512 B 6.59 vs 5.91; 16 ranks 8 B 6.61 vs 9.63, 512 B 12.99 vs \
     13.74, 8 KiB 42.3 vs 27.8",
)
.read_at(Effect::EachCollective);

/// How an all-gather on `comm` of `len` bytes in all goes.
pub(crate) fn allgather_by(comm: &Communicator, len: usize) -> AllgatherBy {
    use AllgatherBy::*;
    let n = comm.size();
    let names = ALLGATHER.algorithms;
    let (by, why) = match forced(&ALLGATHER) {
        Some(3) if !n.is_power_of_two() => (Bruck, " (doubling asked: the rank count is not a power of two)"),
        Some(i) => ([Post, GatherBcast, Ring, Doubling, Bruck, Hier][i], ""),
        None if !comm.on_one_host() => (Hier, ""),
        None if !comm.crowded() && n >= 8 && len <= n * ALLGATHER_BRUCK_MAX.get() => (Bruck, ""),
        None => (Post, ""),
    };
    report(comm, Collective::Allgather, names[by as usize], why, len);
    by
}

/// How the leaders of `leaders` hosts all-gather `len` bytes in all among themselves.
pub(crate) fn allgather_between_hosts(leaders: usize, len: usize) -> AllgatherBy {
    match () {
        _ if len >= ALLGATHER_RING_MIN.get() => AllgatherBy::Ring,
        _ if leaders.is_power_of_two() => AllgatherBy::Doubling,
        _ => AllgatherBy::Bruck,
    }
}

pub static ALLTOALL: Switch = Switch::new(
    "BB_COLL_ALLTOALL",
    &["linear", "pairwise", "hier", "board"],
    "alltoall(v): linear = every part sent and received in one round, pairwise = n-1 rounds, in round k a rank \
     sends to rank + k and receives from rank - k (one peer at a time: no burst of n-1 rendezvous on one link), \
     hier = each host's parts on its board, one message between the leaders of each pair of hosts (blocking); \
     unset: hier on several hosts (blocking) while parts fit BB_HIER_ALLTOALL_MAX, else pairwise on several hosts \
     from BB_ALLTOALL_PAIRWISE_MIN bytes sent by a rank, else linear",
);

pub static ALLTOALL_PAIRWISE_MIN: Tunable = Tunable::new(
    "BB_ALLTOALL_PAIRWISE_MIN",
    256 << 10,
    "smallest all-to-all (bytes this rank sends) on several hosts that goes pairwise; MPICH's medium/long switch is \
     32 KiB a part with many processes; each rank decides alone (one message per pair either way, so ranks that \
     choose differently still match)",
)
.read_at(Effect::EachCollective);

/// Whether this rank's part of an all-to-all on `comm`, sending `len` bytes in all, goes
/// pairwise rather than in one round. Unlike the other choices this one may differ between
/// ranks (an alltoallv's sizes do): both send one message to each peer with the same tag, so
/// they match whichever round each rank posts it in.
pub(crate) fn alltoall_pairwise(comm: &Communicator, len: usize) -> bool {
    let pairwise = match forced(&ALLTOALL) {
        Some(i) => i == 1,
        None => !comm.on_one_host() && len >= ALLTOALL_PAIRWISE_MIN.get(),
    };
    report(comm, Collective::Alltoall, ALLTOALL.algorithms[pairwise as usize], "", len);
    pairwise
}

pub static GATHER: Switch = Switch::new(
    "BB_COLL_GATHER",
    &["linear", "hier", "binomial", "board"],
    "gather with parts of one length (MPI_Gather): linear = every part straight to the root in one round, hier = \
     each host's parts to its leader, one message per host to the root, binomial = each rank's subtree's parts to \
     its parent, log2(n) rounds; unset: hier on several hosts up to BB_GATHER_HIER_MAX bytes a part (blocking: \
     while a host's parts fit BB_HIER_PARTS_MAX), on one host \
     binomial from BB_GATHER_BINOMIAL_RANKS ranks up to BB_GATHER_BINOMIAL_MAX bytes a part, else linear; gatherv \
     on several hosts (blocking) through the hosts' leaders unless linear or binomial is forced, else linear",
);

pub static SCATTER: Switch = Switch::new(
    "BB_COLL_SCATTER",
    &["linear", "hier", "binomial", "board"],
    "scatter with parts of one length (MPI_Scatter): linear = every part straight from the root in one round, hier \
     = one message per host to its leader, which hands its members theirs, binomial = each rank's subtree's parts \
     from its parent, log2(n) rounds; unset: as BB_COLL_GATHER (scatterv too)",
);

pub static GATHER_HIER_MAX: Tunable = Tunable::new(
    "BB_GATHER_HIER_MAX",
    1 << 10,
    "largest part (bytes) of a gather or scatter on several hosts that goes through the hosts' leaders: above it \
     the leader's extra hop costs more than the messages it saves; bench/peers/coll.c, 2 namespace hosts x 2 ranks, \
     median of 5 alternating runs, load 7, us, linear vs hier: gather 8 B 5.7 vs 6.0, 64 KiB 39 vs 89, 1 MiB 3200 \
     vs 3747; scatter 8 B 10.1 vs 6.5, 64 KiB 73 vs 78, 1 MiB 1038 vs 4043",
)
.read_at(Effect::EachCollective);

pub static GATHER_BINOMIAL_RANKS: Tunable = Tunable::new(
    "BB_GATHER_BINOMIAL_RANKS",
    12,
    "fewest ranks on one host, with a core each, whose gather or scatter of small parts goes down a binomial tree; \
     bench/device/tune.sh, 16-core VM, us, binomial vs linear: gather 8 ranks 8 B 1.59 vs 1.84, 512 B 2.42 vs \
     2.22; 16 ranks 8 B 2.05-2.18 vs 3.47-4.00, 512 B 3.41-3.75 vs 4.24-4.81 (Open MPI 0.93-0.96, 4.2-4.4)",
)
.read_at(Effect::EachCollective);

pub static GATHER_BINOMIAL_MAX: Tunable = Tunable::new(
    "BB_GATHER_BINOMIAL_MAX",
    2 << 10,
    "largest part (bytes) of a gather or scatter on one host that goes down a binomial tree (each hop carries a \
     subtree's parts); bench/device/tune.sh, 16 ranks on a 16-core VM, us, binomial vs linear: gather 2 KiB \
     10.9-12.4 vs 13.7-14.5, 8 KiB 60-66 vs 61-64; scatter 2 KiB 6.0-6.7 vs 7.2-8.4, 64 KiB 210-224 vs 76-79",
)
.read_at(Effect::EachCollective);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum GatherBy {
    Linear,
    Hier,
    Binomial,
}

/// How a gather (or, not `gathers`, a scatter) of parts of `part` bytes each, every rank's
/// alike, goes: straight to or from the root, through the hosts' leaders, or down a tree.
/// Where ranks outnumber cores the tree's extra hops each wait for a core, so it stays linear.
pub(crate) fn gather_by(comm: &Communicator, gathers: bool, part: usize) -> GatherBy {
    use GatherBy::*;
    let (switch, what) = if gathers { (&GATHER, Collective::Gather) } else { (&SCATTER, Collective::Scatter) };
    let n = comm.size();
    let by = match forced(switch) {
        _ if n < 2 => Linear,
        Some(i) => [Linear, Hier, Binomial][i],
        None if !comm.on_one_host() => [Linear, Hier][(part <= GATHER_HIER_MAX.get() || in_cells(comm, part)) as usize],
        None if !comm.crowded() && n >= GATHER_BINOMIAL_RANKS.get() && part <= GATHER_BINOMIAL_MAX.get() => Binomial,
        None => Linear,
    };
    report(comm, what, switch.algorithms[by as usize], "", part);
    by
}

/// Whether a blocking gather or scatter of `part`-byte parts on several hosts, not forced, has
/// its hosts' phases on the board in cells of one data area (`hier_board.rs`), so goes
/// through the leaders whatever the part: the board on, and the widest host's parts (with a
/// scatter's table of where each starts) within `BB_HIER_PARTS_MAX`.
/// (A scatter's of at most `BB_GATHER_HIER_MAX` keeps its host phases by messages,
/// `gather.rs`: the cells were no faster there.)
fn in_cells(comm: &Communicator, part: usize) -> bool {
    super::board::in_blocking_call() && BOARD.get() != 0 && host_parts_fit(comm.hosts().widest(), part)
}

/// Whether the `part`-byte parts of a host of `members` (and a table of where each starts, as
/// a scatterv's post) fit `BB_HIER_PARTS_MAX`: the host phases of a blocking gather or scatter
/// across hosts then go on the board in cells (`gather.rs`). Alike in every rank.
pub(crate) fn host_parts_fit(members: usize, part: usize) -> bool {
    members.saturating_mul(part).saturating_add(super::board_parts::table_bytes(members)) <= HIER_PARTS_MAX.get()
}

/// The algorithm a switch forces, unless it is the board's: a board algorithm applies only
/// to blocking forms whose posts fit (`board_by`); elsewhere the table chooses.
pub(super) fn forced(switch: &Switch) -> Option<usize> {
    switch.forced().filter(|&i| !switch.algorithms[i].starts_with("board"))
}

/// Every switch, for `bbrun --info`.
pub static SWITCHES: &[&Switch] =
    &[&BCAST, &BARRIER, &REDUCE, &ALLREDUCE, &ALLGATHER, &ALLTOALL, &GATHER, &SCATTER, &REDUCE_SCATTER, &SCAN];

/// The collectives whose choices are reported, each with 8 bits of a communicator's report
/// words (one per algorithm of its switch).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collective {
    Bcast,
    Barrier,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
    Gather,
    Scatter,
    ReduceScatter,
    Scan,
}

impl Collective {
    /// The algorithms of its switch (`BB_COLL_<NAME>`).
    pub(crate) fn algorithms(self) -> &'static [&'static str] {
        self.name_and_switch().1.algorithms
    }

    pub(super) fn name_and_switch(self) -> (&'static str, &'static Switch) {
        match self {
            Collective::Bcast => ("bcast", &BCAST),
            Collective::Barrier => ("barrier", &BARRIER),
            Collective::Reduce => ("reduce", &REDUCE),
            Collective::Allreduce => ("allreduce", &ALLREDUCE),
            Collective::Allgather => ("allgather", &ALLGATHER),
            Collective::Alltoall => ("alltoall", &ALLTOALL),
            Collective::Gather => ("gather", &GATHER),
            Collective::Scatter => ("scatter", &SCATTER),
            Collective::ReduceScatter => ("reduce_scatter", &REDUCE_SCATTER),
            Collective::Scan => ("scan", &SCAN),
        }
    }
}

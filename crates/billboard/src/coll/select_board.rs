//! The table's board rows (`board.rs`): which blocking collectives on one host run on the
//! board, and by which of its algorithms. Every member decides alike: the sizes, the rank
//! count, the switches are the same in all.
//!
//! | algorithm | where, unforced |
//! |---|---|
//! | `board` | a rank posts at most one data area (2 KiB), `BB_BOARD=1`; a scan where ranks outnumber cores up to `BB_SCAN_CROWDED_MAX` bytes (`scan.rs`) |
//! | `board-leader` | barrier, forced only |
//! | `board-cells` | bcast past one data area up to `BB_BCAST_CELLS_MAX` bytes, and again from `BB_BCAST_CELLS_MIN`, where ranks outnumber cores: cells of one data area, one epoch each (`board_bcast_cells.rs`); reduce (blocking, typed elements) where ranks outnumber cores from `BB_REDUCE_CELLS_MIN` bytes: cells of 8 data areas, the root folding each out of the others' posts (`board_reduce_cells.rs`); reduce_scatter forced only (`board_reduce_scatter.rs`) |
//!
//! Reduce-scatter and the scans have no message algorithm of their own worth a table row:
//! their switches ([`REDUCE_SCATTER`], [`SCAN`]) choose between the board and the message
//! forms (the allreduce's table, the chain).
//!
//! And one protocol switch for the messages of the collectives' schedules on one host:
//! `BB_COLL_RENDEZVOUS_MIN` ([`rendezvous_min`]).

use super::board::DATA;
use super::select::Collective;
use crate::tunables::{Effect, Origin, Switch, Tunable};
use crate::Communicator;

pub static BOARD: Tunable = Tunable::new(
    "BB_BOARD",
    1,
    "1: the one-host table gives blocking collectives to the board (coll/board.rs: each rank posts once in its own \
     lines of the node segment, readers copy straight out) where a rank posts at most the board's 2 KiB data area, \
     0: only where BB_COLL_<NAME>=board forces it; figures in bench/README.md, \"The board\"",
)
.read_at(Effect::EachCollective);

pub static REDUCE_SCATTER: Switch = Switch::new(
    "BB_COLL_REDUCE_SCATTER",
    &["allreduce", "board", "board-cells"],
    "reduce_scatter(_block): allreduce = the allreduce the table chooses, each rank keeping its block, board = \
     each rank posts its vector once on the board and folds its own block out of every rank's post, all ranks at \
     once (blocking, one host, a vector of at most one data area, 2 KiB), board-cells = the same in cells of one \
     data area, one epoch each (any length); unset: board within one data area (BB_BOARD=1), else allreduce",
);

pub static SCAN: Switch = Switch::new(
    "BB_COLL_SCAN",
    &["chain", "board", "hier"],
    "scan and exscan: chain = each rank receives the prefix from the rank below, folds and sends it on, board = \
     each rank posts its vector once on the board and folds the posts of the ranks below it in rank order \
     (blocking, one host, a vector of at most one data area, 2 KiB), hier = each host's total to its leader on \
     its board, the leaders' chain, the host's scan on the board from the hosts' prefix (blocking, several hosts \
     of consecutive ranks, at most one data area; forced only: back to back it trails the chain, \
     hier_board_scan.rs); unset: board within one data area (BB_BOARD=1), else chain",
);

pub static SCAN_CROWDED_MAX: Tunable = Tunable::new(
    "BB_SCAN_CROWDED_MAX",
    112,
    "largest scan or exscan (bytes) on one host whose ranks outnumber its cores that runs on the board, unforced \
     (else the chain): past the header line's inline bytes a post takes a data area, of which a writer runs only 8 \
     ahead; coll.c scan, 4 ranks on 2 cores, 3 rounds, us, chain vs board: 8 B 0.10-0.81 vs 0.51-0.56, 256 B \
     0.13-0.89 vs 1.15-1.27, 1 KiB 0.16-0.98 vs 0.97-1.42 (with a core each the board wins at every size: 2 ranks, \
     chrt, 1 KiB 0.39 vs 0.25)",
)
.read_at(Effect::EachCollective);

pub static BCAST_CELLS_MAX: Tunable = Tunable::new(
    "BB_BCAST_CELLS_MAX",
    6 << 10,
    "largest broadcast on one host whose ranks outnumber its cores that goes through the board in cells of one data \
     area (2 KiB), one epoch each, the root up to 8 cells ahead of its slowest reader (board_bcast_cells.rs), \
     rather than by messages; coll.c bcast, 4 ranks on 2 cores, 3 rounds, us, messages vs cells: 3 KiB 2.36 vs \
     1.30, 4 KiB 3.23 vs 1.33, 6 KiB 4.75 vs 1.80, 8 KiB 2.68 vs 3.00, 16 KiB 4.2 vs 5.7, 64 KiB 12.1 vs 22.2 \
     (Open MPI 4 KiB 6.1). With a core for every rank messages win (2 ranks, chrt: 4 KiB 0.62 vs 0.68, 32 KiB \
     4.1 vs 6.0), so only forcing gives the cells there",
)
.read_at(Effect::EachCollective);

pub static BCAST_CELLS_MIN: Tunable = Tunable::new(
    "BB_BCAST_CELLS_MIN",
    256 << 10,
    "smallest broadcast past BB_BCAST_CELLS_MAX on one host whose ranks outnumber its cores that goes through the \
     board in cells again (0: never): a reader that gets a core copies the cells posted so far, where each hop of \
     the tree's rendezvous waits for both its ranks to have one; coll.c bcast, 4 ranks on 2 cores, nice -20, 5 \
     interleaved rounds, load 18-21, us, tree vs cells vs Open MPI (medians; every column has ms outliers): 64 KiB \
     7.1 vs 21.4 vs 52.0 (tree 4-31), 256 KiB 183 vs 88.7 vs 130 (tree 127-39,979, cells 67-93), 1 MiB 872 vs 606 \
     vs 951 (cells 335-1,871, tree 740-22,453), 4 MiB 12.5 vs 10.3 vs 15.1 ms",
)
.read_at(Effect::EachCollective);

pub static REDUCE_CELLS_MIN: Tunable = Tunable::new(
    "BB_REDUCE_CELLS_MIN",
    64 << 10,
    "smallest blocking reduce (bytes) on one host whose ranks outnumber its cores that goes through the board in \
     cells of 16 KiB, the root folding each cell out of the others' posts as they come (board_reduce_cells.rs; \
     0: never, unless forced by BB_COLL_REDUCE=board-cells); bench/peers/coll.sh, 4 ranks on 2 cores, nice -20, \
     5 interleaved rounds at load 21-25 (absolute times noise), median within-round ratio cells/before (split or \
     tree) and cells/Open MPI: 64 KiB 0.68 and 0.51, 256 KiB 0.56 and 0.77, 1 MiB 0.56 and 0.65, 4 MiB 0.69 \
     and 0.58; pinned placements, best of 30 calls at 1 MiB: split 815-1178 us, cells 364-670. With a core for \
     every rank the tree stays ahead (2 ranks, chrt, 1 MiB: 180 vs 208-291 us), so not there",
)
.read_at(Effect::EachCollective);

pub static HIER_BOARD_MAX: Tunable = Tunable::new(
    "BB_HIER_BOARD_MAX",
    256 << 10,
    "largest vector of a blocking reduce, allreduce or reduce_scatter on several hosts whose host phases run on \
     each host's board (coll/hier_board.rs) past one data area (2 KiB), in cells of one data area, one epoch \
     each (above it by messages); bench/hosts/coll.sh, 2 hosts x 2 ranks, load 12-16, us, board vs messages: \
     allreduce 64 KiB 66.8 vs 77.3, 256 KiB 328 vs 377, 1 MiB 6713 vs 4349; reduce 64 KiB 58.3 vs 62.8, 256 KiB \
     259 vs 288, 1 MiB 3302 vs 3506",
)
.read_at(Effect::EachCollective);

pub static HIER_BCAST_MAX: Tunable = Tunable::new(
    "BB_HIER_BCAST_MAX",
    4 << 10,
    "largest blocking broadcast on several hosts whose host phases run on each host's board past one data area, \
     in cells of it (above it by messages, whose single copies win); bench/hosts/coll.sh, 2 hosts x 2 ranks, load \
     12-16, us, board vs messages: 2 KiB 1.91 vs 3.44, 4 KiB 2.86 vs 6.35, 8 KiB 3.61 vs 2.00, 16 KiB 5.54 vs \
     2.51, 64 KiB 19.8 vs 7.2",
)
.read_at(Effect::EachCollective);

pub static HIER_PARTS_MAX: Tunable = Tunable::new(
    "BB_HIER_PARTS_MAX",
    16 << 10,
    "largest post of a host's parts of a blocking scatterv on several hosts (a table of where each member's part \
     starts, then the parts) that goes on its board in cells of one data area (2 KiB), one epoch each \
     (coll/hier_board_parts.rs); the parts past it go by their own messages. A blocking gather or scatter of parts \
     of one length goes through the hosts' leaders with its host phases so while the widest host's parts (and such \
     a table) fit it, else by the table's BB_GATHER_HIER_MAX; bench/hosts/coll.sh scatterv, 2 hosts x \
     3 ranks, 5 alternating rounds, load 17-20, medians, us, messages vs one data area (2048: two of three 1 KiB \
     parts by message) vs cells: 1 KiB 27.2 vs 32.9 vs 17.4, 2 KiB 61.0 vs 47.0 vs 22.0, 4 KiB 108 vs 87 vs 29.7 \
     (not measured past 4 KiB)",
)
.read_at(Effect::EachCollective);

pub static HIER_ALLTOALL_MAX: Tunable = Tunable::new(
    "BB_HIER_ALLTOALL_MAX",
    24 << 10,
    "most bytes one host's members send the other hosts' in a blocking all-to-all(v) through the hosts' leaders, \
     host phases on the board in cells of one data area (coll/hier_board_alltoall.rs): a part goes so up to this \
     over (members x ranks outside the host) of the host where that is largest, past it by its own message (an \
     all-to-all of such parts by the messages' algorithms); bench/hosts/coll.sh alltoall, 5 interleaved rounds, \
     load 14-25, medians, leaders/before by a host's share: 2 x 2 8 B 0.34, 1 KiB 0.48, 4 KiB (16 KiB) 0.48, 8 KiB \
     (32 KiB) 0.83, 16 KiB (64 KiB) 2.15; 2 x 3 8 B 0.34, 2 KiB (18 KiB) 0.43, 4 KiB (36 KiB) 0.64, 8 KiB 1.18; 1 + 2 \
     8 B 0.20, 8 KiB (16 KiB) 0.69, 16 KiB (32 KiB) 1.41: the switch lies below 32 KiB",
)
.read_at(Effect::EachCollective);

pub static GATHERV_HIER_WIDEST: Tunable = Tunable::new(
    "BB_GATHERV_HIER_WIDEST",
    3,
    "fewest members of the widest host for which a blocking gatherv on several hosts goes through the hosts' \
     leaders (coll/hier_board_parts.rs; scatterv always does), unforced: below it each rank's part straight to the \
     root; coll.c gatherv, BB_COLL_GATHER=linear vs hier alternating (same barrier), load 14-20, us, the quiet \
     round: 2 hosts x 2 ranks 8 B 15.6 vs 16.6, 1 KiB 18.2 vs 20.8 (the others' medians 556-742 vs 18-757: noise); \
     bench/hosts/coll.sh flat vs leaders, 3 rounds, load 18-24, medians: 2 x 3 8 B 665 vs 21.0, 1 KiB 330 vs 28.0",
)
.read_at(Effect::EachCollective);

pub static RENDEZVOUS_MIN: Tunable = Tunable::new(
    "BB_COLL_RENDEZVOUS_MIN",
    16 << 10,
    "smallest message of a data-moving collective's schedule (and of a broadcast's tree) on one host with a core \
     for every rank that goes by rendezvous, so the receiver copies it once straight from the sender's buffer, \
     below the eager limit too (0: only past it); reductions stay eager; coll.c, 2 ranks, chrt, 2 rounds, us, eager \
     vs from 16 KiB: bcast 16 KiB 2.22 vs 1.49, 64 KiB 7.63 vs 3.08; gather 32 KiB 4.35 vs 2.93; scatter 64 KiB \
     9.52 vs 4.69; allgather 16 KiB 3.52 vs 2.40; alltoall 32 KiB 4.97 vs 3.44; at 8 KiB even (from 8 KiB: \
     bcast 16 KiB 1.68)",
)
.read_at(Effect::EachCollective);

/// The smallest message of a collective on `comm` that goes by rendezvous whatever the eager
/// limit (`usize::MAX`: by the eager limit alone).
pub(crate) fn rendezvous_min(comm: &Communicator) -> usize {
    let (min, origin) = RENDEZVOUS_MIN.get_with_origin();
    match min {
        0 => usize::MAX,
        _ if !comm.on_one_host() => usize::MAX,
        // Where ranks take turns on cores a sender would wait for its reader to get one
        // (coll.c, 4 ranks on 2 cores, us, eager vs rendezvous from 16 KiB: bcast 32 KiB 7.3
        // vs 20.4, gather 16 KiB 5.4 vs 22.1, allgather 64 KiB 91 vs 187); a value set on
        // purpose applies there too.
        _ if comm.crowded() && origin == Origin::Default => usize::MAX,
        min => min,
    }
}

/// Whether a post of `post` bytes (past one data area) of `what` on `comm` goes through the
/// board in cells, unforced.
fn in_cells(comm: &Communicator, what: Collective, post: usize) -> bool {
    match what {
        Collective::Bcast => comm.crowded() && (post <= BCAST_CELLS_MAX.get() || bcast_cells_from(post)),
        Collective::Reduce => comm.crowded() && reduce_cells_from(post),
        _ => false,
    }
}

/// Whether a blocking broadcast of `len` bytes (past `BB_BCAST_CELLS_MAX`) on one host whose
/// ranks outnumber its cores goes through the board in cells (`BB_BCAST_CELLS_MIN`), unforced.
fn bcast_cells_from(len: usize) -> bool {
    let min = BCAST_CELLS_MIN.get();
    min != 0 && len >= min
}

/// Whether a blocking reduce of `len` bytes on one host whose ranks outnumber its cores goes
/// through the board in cells (`BB_REDUCE_CELLS_MIN`), unforced.
fn reduce_cells_from(len: usize) -> bool {
    let min = REDUCE_CELLS_MIN.get();
    min != 0 && len >= min
}

/// Whether blocking collective `what` on `comm`, where a rank posts at most `post` bytes, runs
/// on the board, and by which of its algorithms ("board"; "board-leader" for barriers;
/// "board-cells" past one data area).
pub(crate) fn board_by(comm: &Communicator, what: Collective, post: usize) -> Option<&'static str> {
    let (_, switch) = what.name_and_switch();
    let n = comm.size();
    if n < 2 || comm.is_inter() || !comm.on_one_host() {
        return None;
    }
    let forced = switch.forced().map(|i| switch.algorithms[i]);
    if post > DATA {
        // Past one data area only the cells run on the board.
        let cells = match forced {
            Some(by) => by == "board-cells",
            None => BOARD.get() != 0 && in_cells(comm, what, post),
        };
        return cells.then_some("board-cells");
    }
    match forced {
        // Within one data area the cells are one post: the board's own.
        Some("board-cells") => Some("board"),
        Some(by) => Some(by).filter(|by| by.starts_with("board")),
        None if BOARD.get() == 0 => None,
        // Where ranks outnumber cores (a fact of the host, so alike in every member), a barrier
        // by the leader's release: rank 0 leaves it first, and a rooted collective after it
        // finds its root already posting, where after the all-read barrier the first to leave
        // is whichever arrived last and its readers wait for the root's turn on a core
        // (coll.c, us, board vs board-leader, 8 B: 4 ranks on 2 cores barrier 2.18-2.37 vs
        // 2.79-2.94 (Open MPI 2.89), scatter 0.33-0.38 vs 0.04-0.05 (0.10-0.15), bcast 0.28
        // vs 0.03, the others alike; 8 ranks barrier 8.5 vs 9.4, scatter 1.09 vs 0.06, bcast
        // 0.99 vs 0.04).
        None if what == Collective::Barrier && comm.crowded() => Some("board-leader"),
        // Every rank reading the n - 1 arrivals beats a leader's release (coll.c barrier, us,
        // board vs board-leader: 2 ranks 0.18 vs 0.29). Where ranks outnumber cores the
        // waiters yield at once (`board.rs`); 4 ranks on 2 cores, us, table of messages vs
        // board, 8 B: bcast 1.09-1.26 vs 0.53-0.79, reduce 1.04-1.17 vs 0.73-0.87, gather
        // 0.96-1.08 vs 0.93-1.13, scatter 1.25-1.54 vs 0.94-1.15.
        None => Some("board"),
    }
}

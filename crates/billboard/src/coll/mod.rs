//! Collectives over a communicator, on its collective context (so they never match the
//! user's point-to-point traffic), one file per algorithm, each written once as a schedule
//! (`nonblocking.rs`): on one host the billboard's posts (`*_post.rs`), binomial trees, linear
//! gather/scatter, all-to-all in one round, a chain for scans, large reductions cut into one
//! block per rank (`reduce_split.rs`); between hosts recursive doubling, rings, Bruck's
//! rounds, pairwise exchange, scatter + all-gather; on several hosts the hierarchy of
//! `hier.rs` over the placement of `hosts.rs`. `select.rs` is the one table that chooses.
//! Index arithmetic of the schedules lives in `schedule.rs`, apart from the code that moves
//! data.
//!
//! They work on bytes; a reduction is a callback with MPI's user-function contract:
//! `op(invec, inoutvec)` leaves `invec ⊕ inoutvec` in `inoutvec`, for operators that may be
//! non-commutative (the result is always `v0 ⊕ v1 ⊕ … ⊕ v(n-1)` in rank order).

mod agree;
mod allgather_bruck;
mod allgather_doubling;
mod allgather_post;
mod allgather_ring;
mod allreduce_doubling;
mod allreduce_ring;
mod alltoall_pairwise;
mod barrier;
mod bcast;
mod bcast_scatter_allgather;
mod blocks;
pub(crate) mod board;
mod board_allgather;
mod board_alltoall;
mod board_barrier;
mod board_bcast;
mod board_bcast_cells;
mod board_gather;
mod board_marks;
mod board_parts;
mod board_reduce;
mod board_reduce_cells;
mod board_reduce_scatter;
mod board_scan;
mod board_scatter;
mod board_steps;
mod gather;
mod gather_binomial;
mod hier;
pub(crate) mod hier_board;
mod hier_board_alltoall;
mod hier_board_parts;
mod hier_board_scan;
pub(crate) mod hosts;
mod inter;
mod neighbor;
mod nonblocking;
mod reduce;
mod reduce_halves;
mod reduce_post;
mod reduce_scatter;
mod reduce_scatter_direct;
mod reduce_split;
mod rooted;
mod scan;
pub(crate) mod schedule;
pub mod select;
mod select_board;
mod select_report;

pub use crate::engine::sched::ReduceFn;
pub use board::{blocking, revoked_in_wait};
pub use inter::InterRoot;
pub use nonblocking::Collective;

/// A reduction: `op(invec, inoutvec)` sets `inoutvec = invec ⊕ inoutvec`.
pub type ReduceOp<'a> = &'a mut dyn FnMut(&[u8], &mut [u8]);

/// A reduction as a schedule applies it: the operator, the size of the elements it works on
/// (a vector is only ever cut between elements), and whether its operands may be swapped.
pub struct Reduction {
    pub op: ReduceFn,
    pub elem: usize,
    pub commutative: bool,
}

/// Tags of the collectives on the collective context; one family each, so that a rank that
/// runs ahead into the next collective can never match the current one's messages.
pub(crate) const TAG_BCAST: i32 = 10;
pub(crate) const TAG_REDUCE: i32 = 11;
/// The agreement of a communicator's board slot (`board.rs`).
pub(crate) const TAG_BOARD: i32 = 12;
pub(crate) const TAG_SCAN: i32 = 15;
/// Parts of the board's v-forms too large for a data area (`board_parts.rs`).
pub(crate) const TAG_PARTS: i32 = 16;
/// A host's parts between the root and the host's leader (`hier_board_parts.rs`), and between
/// two hosts' leaders (`hier_board_alltoall.rs`).
pub(crate) const TAG_HOSTS: i32 = 17;

//! The verbose report of the table's choices (`BB_VERBOSE=1`): each collective's algorithm,
//! once per communicator, with why it applies and how to force another.

use super::select::Collective;
use crate::Communicator;

/// What each algorithm does, in a few words, for the verbose report.
fn what_it_does(what: Collective, algorithm: &str) -> &'static str {
    use Collective::*;
    match (what, algorithm) {
        (Bcast, "post") => "the root posts once, every rank reads it",
        (Barrier, "post") => "arrivals to rank 0, released by one post",
        (Reduce, "post") => "every rank posts to the root, folded in the tree's order",
        (Allreduce, "post") => "every rank posts to all, each folds in the tree's order",
        (Allgather, "post") => "every rank posts its part to all",
        (Allreduce, "tree") => "binomial tree and broadcast",
        (Allreduce, "halves") => "each of the 2 ranks folds a half by single copy into both results",
        (Barrier, "board-leader") => "arrival lines read by rank 0, which posts the release line",
        (ReduceScatter, "board") => {
            "on the board: each rank posts its vector once, folds its own block out of every post"
        }
        (Scan, "board") => "on the board: each rank posts its vector once, folds the posts of the ranks up to it",
        (ReduceScatter, "board-cells") => {
            "on the board in cells of one data area, each rank folding its block's part of each"
        }
        (Reduce, "board-cells") => "on the board in cells of 16 KiB, the root folding each as the others post them",
        (_, "board") => "on the board: each rank posts once in its own lines, readers copy straight out",
        (_, "board-cells") => "on the board in cells of one data area, the readers a few cells behind the poster",
        (_, "tree") => "binomial tree",
        (_, algorithm) => match algorithm {
            "scatter-allgather" => "scatter then ring all-gather",
            "hier" => "each host on its billboard, the hosts' leaders between hosts",
            "dissemination" => "dissemination",
            "split" => "blocks reduced by every rank",
            "halves" => "each of the 2 ranks folds a part by single copy into the root's result",
            "doubling" => "recursive doubling",
            "ring" => "ring",
            "gather-bcast" => "gather and broadcast",
            "bruck" => "Bruck's rounds",
            "linear" => "every part in one round",
            "pairwise" => "pairwise exchange",
            "allreduce" => "the allreduce of the table, each rank keeping its block",
            "chain" => "a chain of messages in rank order",
            "binomial" => "subtrees' parts down a binomial tree",
            _ => "",
        },
    }
}

/// Reports under `BB_VERBOSE` the first time `comm` chooses `algorithm` for `what` (for a
/// message of `len` bytes): which algorithm, why it applies, and `note` (what was asked
/// instead, if the switch asked for one that cannot apply).
pub(crate) fn report(comm: &Communicator, what: Collective, algorithm: &str, note: &str, len: usize) {
    if crate::VERBOSE.get() == 0 {
        return;
    }
    let (name, switch) = what.name_and_switch();
    let index = switch.algorithms.iter().position(|&a| a == algorithm).unwrap_or(0);
    let bit = what as u32 * 8 + index as u32;
    if comm.first_report(bit) {
        let host = if comm.on_one_host() { "one host" } else { "several hosts" };
        let forced = switch.forced().is_some_and(|i| switch.algorithms[i] == algorithm);
        let origin = if forced { "forced by" } else { "table; force with" };
        crate::verbose(format_args!(
            "{name} on a communicator of {} ranks ({host}, context {}), first at {len} bytes: {} \
             ({algorithm}{note}; {origin} {})",
            comm.size(),
            comm.coll_context(),
            what_it_does(what, algorithm),
            switch.env
        ));
    }
}

//! Scans across hosts with their host phases on the board (blocking MPI_Scan and MPI_Exscan,
//! as `hier_board.rs` runs the other collectives): each host's vectors folded into its leader
//! on its board, an exclusive scan of the hosts' totals among the leaders (the chain, in host
//! order), then one scan on each host's board in which the leader posts the hosts' prefix
//! folded into its own vector, so every member's fold starts from everything below its host.
//! Two board epochs and one chain of hosts, where the chain of messages takes n - 1 hops.
//!
//! Needs every host's members to be consecutive ranks (a scan is in rank order: the hosts'
//! prefix must be a run of ranks) and a vector of one data area at most; elsewhere the chain.
//! Runs where `BB_COLL_SCAN=hier` forces it: scans back to back measured slower than the chain
//! on 2 and 3 ranks a host (see [`Communicator::scan_on_host_boards`]).

use super::board::DATA;
use super::hier_board::HostComms;
use super::select::{report, Collective, SCAN};
use super::ReduceOp;
use crate::{Communicator, Result};

impl Communicator {
    /// [`Communicator::scan_bytes`] by the hierarchy, where it applies (several hosts of
    /// consecutive ranks, a vector within one data area, the board on, `BB_COLL_SCAN=hier`);
    /// false: it did not run. Alike in every member: the sizes, the placement and the
    /// settings are.
    pub(super) fn scan_on_host_boards(
        &self,
        send: &[u8],
        recv: &mut [u8],
        op: ReduceOp<'_>,
        exclusive: bool,
    ) -> Result<bool> {
        // Forced only: coll.c's scans back to back on 2 hosts x 2 ranks (load 12-16, us, chain vs
        // hier): 8 B 1.69 vs 7.75, 1 KiB 1.80 vs 8.29, 2 KiB 2.62 vs 8.88. The chain lets each
        // rank run ahead of those above it; here a leader waits for its host's posts each call.
        let forced = SCAN.forced().map(|i| SCAN.algorithms[i]);
        if self.on_one_host() || send.len() > DATA || forced != Some("hier") {
            return Ok(false);
        }
        let Some(hosts) = self.hier_board(send.len())?.filter(|h| h.consecutive()) else { return Ok(false) };
        report(self, Collective::Scan, "hier", "", send.len());
        hosts.scan(self.rank(), send, recv, op, exclusive)?;
        Ok(true)
    }
}

impl HostComms {
    /// `recv` at rank r becomes v0 ⊕ … ⊕ vr, or v0 ⊕ … ⊕ v(r-1) when `exclusive` (rank 0's
    /// left as it is); every host's members consecutive ranks (the caller checked).
    pub(super) fn scan(
        &self,
        me: usize,
        send: &[u8],
        recv: &mut [u8],
        op: ReduceOp<'_>,
        exclusive: bool,
    ) -> Result<()> {
        let len = send.len();
        let (leads, below) = (self.leads(me), self.host_of(me) > 0);
        let mut total = vec![0u8; if leads { len } else { 0 }];
        self.node_reduce(send, leads.then_some(&mut total[..]), &mut *op, 1)?;
        let mut prefix = vec![0u8; if leads { len } else { 0 }];
        let mut mine = None;
        if let Some(leaders) = self.leaders() {
            // The leaders rank as their hosts do: leader h's prefix is hosts 0..h's.
            leaders.scan_bytes(&total, &mut prefix, &mut *op, true)?;
            if below {
                let mut folded = send.to_vec();
                if len > 0 {
                    op(&prefix, &mut folded);
                }
                mine = Some(folded);
            }
        }
        self.node_scan(mine.as_deref().unwrap_or(send), recv, op, exclusive)?;
        if exclusive && leads && below {
            recv.copy_from_slice(&prefix);
        }
        Ok(())
    }
}

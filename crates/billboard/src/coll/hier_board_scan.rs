//! Scans across hosts with their host phases on the board (blocking MPI_Scan and MPI_Exscan,
//! as `hier_board.rs` runs the other collectives): each host's vectors folded into its leader
//! on its board, an exclusive scan of the hosts' totals among the leaders (the chain, in host
//! order), then one scan on each host's board in which the leader posts the hosts' prefix
//! folded into its own vector, so every member's fold starts from everything below its host.
//! Two board epochs and one chain of hosts, where the chain of messages takes n - 1 hops.
//!
//! Needs every host's members to be consecutive ranks (a scan is in rank order: the hosts'
//! prefix must be a run of ranks) and a vector of one data area at most; elsewhere the chain.

use super::board::DATA;
use super::hier_board::HostComms;
use super::select::{report, Collective, SCAN};
use super::ReduceOp;
use crate::{Communicator, Result};

impl Communicator {
    /// [`Communicator::scan_bytes`] by the hierarchy, where it applies (several hosts of
    /// consecutive ranks, a vector within one data area, the board on, `BB_COLL_SCAN` unset or
    /// `hier`); false: it did not run. Alike in every member: the sizes, the placement and the
    /// settings are.
    pub(super) fn scan_on_host_boards(
        &self,
        send: &[u8],
        recv: &mut [u8],
        op: ReduceOp<'_>,
        exclusive: bool,
    ) -> Result<bool> {
        let forced = SCAN.forced().map(|i| SCAN.algorithms[i]);
        if self.on_one_host() || send.len() > DATA || forced.is_some_and(|by| by != "hier") {
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

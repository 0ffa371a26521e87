//! Gather, scatter, allgather and all-to-all, with per-rank byte counts and displacements
//! (the `v` forms; the plain forms are equal counts). Linear at the root, pairwise for
//! all-to-all: correct, simple, and the reference for the billboard algorithms.

use super::{TAG_ALLTOALL, TAG_GATHER, TAG_SCATTER};
use crate::{wait_all, Communicator, Error, Result, SendMode, Source, TagMatch};

/// Where each rank's part lies in a root's buffer: `(displacement, length)` in bytes.
pub type Layout<'a> = &'a [(usize, usize)];

fn check_layout(what: &str, buf_len: usize, layout: Layout<'_>, n: usize) -> Result<()> {
    if layout.len() != n {
        return Err(Error::InvalidArgument(format!("{what}: {} parts given for {n} ranks", layout.len())));
    }
    if let Some((r, &(d, l))) = layout.iter().enumerate().find(|(_, &(d, l))| d + l > buf_len) {
        return Err(Error::InvalidArgument(format!(
            "{what}: rank {r}'s part [{d}, {}) lies beyond the {buf_len}-byte buffer",
            d + l
        )));
    }
    Ok(())
}

impl Communicator {
    /// Gathers every rank's `send` into the root's `recv`, rank r's at `layout[r]`.
    pub fn gatherv_bytes(&self, send: &[u8], recv: Option<(&mut [u8], Layout<'_>)>, root: usize) -> Result<()> {
        let (n, me) = (self.size(), self.rank());
        if root >= n {
            return Err(Error::InvalidRank { rank: root, size: n });
        }
        let ctx = self.coll_context();
        if me != root {
            return self.send_on(ctx, send, root, TAG_GATHER, SendMode::Standard);
        }
        let (buf, layout) = recv.ok_or(Error::InvalidArgument("gather: the root must pass a receive buffer".into()))?;
        check_layout("gather", buf.len(), layout, n)?;
        let base = buf.as_mut_ptr();
        let mut reqs = Vec::with_capacity(n);
        for (r, &(d, l)) in layout.iter().enumerate() {
            if r == me {
                buf[d..d + send.len().min(l)].copy_from_slice(&send[..send.len().min(l)]);
                continue;
            }
            // SAFETY: parts lie inside `buf` (checked); each request completes before return.
            reqs.push(unsafe { self.irecv_on(ctx, base.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_GATHER))? });
        }
        wait_all(reqs).map(drop)
    }

    /// Scatters the root's `send` parts (`layout[r]` to rank r) into each rank's `recv`.
    pub fn scatterv_bytes(&self, send: Option<(&[u8], Layout<'_>)>, recv: &mut [u8], root: usize) -> Result<()> {
        let (n, me) = (self.size(), self.rank());
        if root >= n {
            return Err(Error::InvalidRank { rank: root, size: n });
        }
        let ctx = self.coll_context();
        if me != root {
            return self.recv_on(ctx, recv, Source::Rank(root), TagMatch::Tag(TAG_SCATTER)).map(drop);
        }
        let (buf, layout) = send.ok_or(Error::InvalidArgument("scatter: the root must pass a send buffer".into()))?;
        check_layout("scatter", buf.len(), layout, n)?;
        let mut reqs = Vec::with_capacity(n);
        for (r, &(d, l)) in layout.iter().enumerate() {
            if r == me {
                let k = l.min(recv.len());
                recv[..k].copy_from_slice(&buf[d..d + k]);
                continue;
            }
            // SAFETY: the part lies inside `buf`, borrowed until the requests complete below.
            reqs.push(unsafe { self.isend_on(ctx, buf.as_ptr().add(d), l, r, TAG_SCATTER, SendMode::Standard)? });
        }
        wait_all(reqs).map(drop)
    }

    /// Every rank's `send` into every rank's `recv` at `layout[r]`: gather to 0, then bcast.
    pub fn allgatherv_bytes(&self, send: &[u8], recv: &mut [u8], layout: Layout<'_>) -> Result<()> {
        check_layout("allgather", recv.len(), layout, self.size())?;
        let mine = (self.rank() == 0).then_some((&mut *recv, layout));
        self.gatherv_bytes(send, mine, 0)?;
        self.bcast_bytes(recv, 0)
    }

    /// Rank r's `send[send_layout[s]]` goes to rank s's `recv[recv_layout[r]]`, for all r, s.
    pub fn alltoallv_bytes(
        &self,
        send: &[u8],
        send_layout: Layout<'_>,
        recv: &mut [u8],
        recv_layout: Layout<'_>,
    ) -> Result<()> {
        let (n, me) = (self.size(), self.rank());
        check_layout("alltoall (send)", send.len(), send_layout, n)?;
        check_layout("alltoall (recv)", recv.len(), recv_layout, n)?;
        let ctx = self.coll_context();
        let base = recv.as_mut_ptr();
        let mut reqs = Vec::with_capacity(2 * n);
        for (r, &(d, l)) in recv_layout.iter().enumerate().filter(|&(r, _)| r != me) {
            // SAFETY: parts lie inside `recv` (checked), borrowed until the requests complete.
            reqs.push(unsafe { self.irecv_on(ctx, base.add(d), l, Source::Rank(r), TagMatch::Tag(TAG_ALLTOALL))? });
        }
        for k in 1..n {
            // Staggered partners spread the load instead of all ranks hitting rank 0 first.
            let s = (me + k) % n;
            let (d, l) = send_layout[s];
            // SAFETY: the part lies inside `send`, borrowed until the requests complete below.
            reqs.push(unsafe { self.isend_on(ctx, send.as_ptr().add(d), l, s, TAG_ALLTOALL, SendMode::Standard)? });
        }
        let ((sd, sl), (rd, rl)) = (send_layout[me], recv_layout[me]);
        let k = sl.min(rl);
        recv[rd..rd + k].copy_from_slice(&send[sd..sd + k]);
        wait_all(reqs).map(drop)
    }
}

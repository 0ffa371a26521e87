//! Collectives on an intercommunicator (MPI 4.0 section 6.2.2): one group gives, the other
//! takes, or each group gets what the other gave. Written as schedules like the intracommunicator
//! forms (`nonblocking.rs`), so the blocking forms start one and wait, and the nonblocking forms
//! need no thread. Simple algorithms: the groups' leaders (local rank 0) swap what their group
//! reduced or gathered, and a local phase (a binomial tree on the group's hidden intracommunicator,
//! see `api/intercomm.rs`) spreads or collects it; data that goes rank to rank goes directly.
//!
//! Each operation's messages, remote and local, carry a tag of its own (its turn among the
//! intercommunicator's collectives, see `TAG_INTER`), so it never takes another's.

use super::gather::{check_layout, Layout};
use super::nonblocking::Plan;
use super::{ReduceFn, Reduction};
use crate::engine::sched::Local;
use crate::{Collective, Communicator, Error, Result};

/// A rooted collective's root as each process of an intercommunicator names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterRoot {
    /// This process is the root (MPI_ROOT).
    Here,
    /// Another process of this group is the root: this one takes no part (MPI_PROC_NULL).
    Elsewhere,
    /// The root is this rank of the remote group.
    Remote(usize),
}

/// A pointer for zero-byte messages.
fn nothing() -> *mut u8 {
    std::ptr::NonNull::<u8>::dangling().as_ptr()
}

impl Communicator {
    /// Writes and starts an intercommunicator collective's schedule.
    fn inter_schedule(&self, op: Option<ReduceFn>, write: impl FnOnce(&mut Plan) -> Result<()>) -> Result<Collective> {
        if !self.is_inter() {
            return Err(Error::InvalidArgument("an intercommunicator collective on an intracommunicator".into()));
        }
        self.schedule(self.next_inter_tag(), op, write)
    }

    /// Checks `root` against the remote group.
    fn check_inter_root(&self, root: InterRoot) -> Result<()> {
        if let InterRoot::Remote(r) = root {
            self.remote_world_rank(r)?;
        }
        Ok(())
    }

    /// A rooted collective on an intercommunicator for a process of the root's group that is
    /// not the root (MPI_PROC_NULL): it takes part in nothing, but takes its turn.
    pub fn inter_idle(&self) -> Result<Collective> {
        self.inter_schedule(None, |_| Ok(()))
    }

    /// MPI_Ibarrier on an intercommunicator: every local member reports to the leader, the
    /// leaders swap a word, and each leader releases its group.
    pub(crate) fn inter_ibarrier(&self) -> Result<Collective> {
        self.inter_schedule(None, |plan| {
            plan.local();
            plan.gather_zero()?;
            plan.remote();
            if self.rank() == 0 {
                plan.recv(0, nothing(), 0)?;
                plan.send(0, nothing(), 0)?;
                plan.end_round();
            }
            plan.local();
            plan.bcast(nothing(), 0, 0)
        })
    }

    /// The leaders swap `send_len` bytes for the remote leader's `recv_len`, which every local
    /// member then gets in `recv` (a building block of creations).
    ///
    /// # Safety
    /// `send` is readable during the call; `recv` stays valid until the operation ends.
    pub(crate) unsafe fn inter_exchange_raw(
        &self,
        send: *const u8,
        send_len: usize,
        recv: *mut u8,
        recv_len: usize,
    ) -> Result<Collective> {
        self.inter_schedule(None, |plan| {
            if self.rank() == 0 {
                let copy = plan.scratch(send_len, Some(send));
                plan.recv(0, recv, recv_len)?;
                plan.send(0, copy, send_len)?;
                plan.end_round();
            }
            plan.local();
            plan.bcast(recv, recv_len, 0)
        })
    }

    /// Starts MPI_Ibcast on an intercommunicator: the root's `len` bytes into every remote
    /// member's `buf`.
    ///
    /// # Safety
    /// `buf..buf+len` stays valid, and untouched by the caller, until the operation ends.
    pub unsafe fn inter_ibcast_raw(&self, buf: *mut u8, len: usize, root: InterRoot) -> Result<Collective> {
        self.check_inter_root(root)?;
        self.inter_schedule(None, |plan| match root {
            InterRoot::Here => {
                plan.send(0, buf, len)?;
                plan.end_round();
                Ok(())
            }
            InterRoot::Elsewhere => Ok(()),
            InterRoot::Remote(r) => {
                if self.rank() == 0 {
                    plan.recv(r, buf, len)?;
                    plan.end_round();
                }
                plan.local();
                plan.bcast(buf, len, 0)
            }
        })
    }

    /// Starts MPI_Igatherv on an intercommunicator: every remote member's `send` into the
    /// root's `recv` (buffer, length, layout by remote rank).
    ///
    /// # Safety
    /// The buffers stay valid, and untouched by the caller, until the operation ends.
    pub unsafe fn inter_igatherv_raw(
        &self,
        send: *const u8,
        send_len: usize,
        recv: Option<(*mut u8, usize, Layout<'_>)>,
        root: InterRoot,
    ) -> Result<Collective> {
        self.check_inter_root(root)?;
        if let (InterRoot::Here, Some((_, len, layout))) = (root, recv) {
            check_layout("gather", len, layout, self.peers())?;
        }
        self.inter_schedule(None, |plan| {
            match root {
                InterRoot::Here => {
                    let (buf, _, layout) = recv
                        .ok_or_else(|| Error::InvalidArgument("gather: the root must pass a receive buffer".into()))?;
                    for (r, &(d, l)) in layout.iter().enumerate() {
                        // SAFETY: parts lie inside the lent buffer (checked above).
                        plan.recv(r, unsafe { buf.add(d) }, l)?;
                    }
                }
                InterRoot::Elsewhere => return Ok(()),
                InterRoot::Remote(r) => plan.send(r, send.cast_mut(), send_len)?,
            }
            plan.end_round();
            Ok(())
        })
    }

    /// Starts MPI_Iscatterv on an intercommunicator: the root's `send` parts (by remote rank)
    /// into every remote member's `recv`.
    ///
    /// # Safety
    /// As for [`Communicator::inter_igatherv_raw`].
    pub unsafe fn inter_iscatterv_raw(
        &self,
        send: Option<(*const u8, usize, Layout<'_>)>,
        recv: *mut u8,
        recv_len: usize,
        root: InterRoot,
    ) -> Result<Collective> {
        self.check_inter_root(root)?;
        if let (InterRoot::Here, Some((_, len, layout))) = (root, send) {
            check_layout("scatter", len, layout, self.peers())?;
        }
        self.inter_schedule(None, |plan| {
            match root {
                InterRoot::Here => {
                    let (buf, _, layout) =
                        send.ok_or_else(|| Error::InvalidArgument("scatter: the root must pass a send buffer".into()))?;
                    for (r, &(d, l)) in layout.iter().enumerate() {
                        // SAFETY: parts lie inside the lent buffer (checked above).
                        plan.send(r, unsafe { buf.add(d) }.cast_mut(), l)?;
                    }
                }
                InterRoot::Elsewhere => return Ok(()),
                InterRoot::Remote(r) => plan.recv(r, recv, recv_len)?,
            }
            plan.end_round();
            Ok(())
        })
    }

    /// Starts MPI_Iallgatherv on an intercommunicator: every remote member's `send` into
    /// every local member's `recv` at `layout[remote rank]` (each member sends to each).
    ///
    /// # Safety
    /// As for [`Communicator::inter_igatherv_raw`].
    pub unsafe fn inter_iallgatherv_raw(
        &self,
        send: *const u8,
        send_len: usize,
        recv: *mut u8,
        recv_len: usize,
        layout: Layout<'_>,
    ) -> Result<Collective> {
        check_layout("allgather", recv_len, layout, self.peers())?;
        self.inter_schedule(None, |plan| {
            for (r, &(d, l)) in layout.iter().enumerate() {
                // SAFETY: parts lie inside the lent buffer (checked above).
                plan.recv(r, unsafe { recv.add(d) }, l)?;
            }
            for r in 0..self.peers() {
                plan.send(r, send.cast_mut(), send_len)?;
            }
            plan.end_round();
            Ok(())
        })
    }

    /// Starts MPI_Ialltoallv on an intercommunicator: part s of `send` goes to remote rank s,
    /// part r of `recv` comes from remote rank r.
    ///
    /// # Safety
    /// As for [`Communicator::inter_igatherv_raw`].
    pub unsafe fn inter_ialltoallv_raw(
        &self,
        (send, send_len, out): (*const u8, usize, Layout<'_>),
        (recv, recv_len, into): (*mut u8, usize, Layout<'_>),
    ) -> Result<Collective> {
        let n = self.peers();
        check_layout("alltoall (send)", send_len, out, n)?;
        check_layout("alltoall (recv)", recv_len, into, n)?;
        self.inter_schedule(None, |plan| {
            for (r, &(d, l)) in into.iter().enumerate() {
                // SAFETY: parts lie inside the lent buffers (checked above).
                plan.recv(r, unsafe { recv.add(d) }, l)?;
            }
            for k in 0..n {
                // Staggered partners spread the load.
                let s = (self.rank() + k) % n;
                let (d, l) = out[s];
                // SAFETY: as above.
                plan.send(s, unsafe { send.add(d) }.cast_mut(), l)?;
            }
            plan.end_round();
            Ok(())
        })
    }

    /// Starts MPI_Ireduce on an intercommunicator: the remote group's `len`-byte values
    /// reduced with `op` (in remote rank order) into the root's `recv`. `send` is read during
    /// the call only.
    ///
    /// # Safety
    /// `send..send+len` is readable; at the root `recv..recv+len` stays valid, and untouched
    /// by the caller, until the operation ends.
    pub unsafe fn inter_ireduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: InterRoot,
        op: ReduceFn,
    ) -> Result<Collective> {
        self.check_inter_root(root)?;
        self.inter_schedule(Some(op), |plan| match root {
            InterRoot::Here => {
                plan.recv(0, recv, len)?;
                plan.end_round();
                Ok(())
            }
            InterRoot::Elsewhere => Ok(()),
            InterRoot::Remote(r) => {
                let acc = plan.scratch(len, None);
                plan.local();
                plan.reduce(send, acc, len, 0)?;
                plan.remote();
                if self.rank() == 0 {
                    plan.send(r, acc, len)?;
                    plan.end_round();
                }
                Ok(())
            }
        })
    }

    /// Starts MPI_Iallreduce on an intercommunicator: each group gets in `recv` the other
    /// group's values reduced with `op`. `send` is read during the call only.
    ///
    /// # Safety
    /// As for [`Communicator::inter_ireduce_raw`], with `recv` lent on every rank.
    pub unsafe fn inter_iallreduce_raw(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        op: ReduceFn,
    ) -> Result<Collective> {
        self.inter_schedule(Some(op), |plan| plan.inter_allreduce(send, recv, len))
    }

    /// Starts MPI_Ireduce_scatter on an intercommunicator: the other group's `len`-byte
    /// values reduced with `op`, and this rank's `part` (offset, length) of the result into
    /// `recv`. Both groups reduce the same length. `send` is read during the call only.
    ///
    /// # Safety
    /// As for [`Communicator::inter_ireduce_raw`], with `part.1` bytes at `recv`.
    pub unsafe fn inter_ireduce_scatter_raw(
        &self,
        send: *const u8,
        len: usize,
        recv: *mut u8,
        (at, part): (usize, usize),
        op: ReduceFn,
    ) -> Result<Collective> {
        if at + part > len {
            return Err(Error::InvalidArgument(format!(
                "reduce_scatter: this rank's part [{at}, {}) lies beyond the {len}-byte result",
                at + part
            )));
        }
        self.inter_schedule(Some(op), |plan| {
            let all = plan.scratch(len, None);
            plan.inter_allreduce(send, all, len)?;
            // SAFETY: `at + part <= len`, checked above.
            let from = unsafe { all.add(at) };
            plan.then(Local::Copy { from, to: recv, len: part });
            plan.end_round();
            Ok(())
        })
    }
}

/// The rooted collectives with the root as [`InterRoot`], on either kind of communicator (on
/// an intracommunicator the root is `Here` or a rank, `Remote(rank)`, never `Elsewhere`).
impl Communicator {
    /// The root's rank on an intracommunicator.
    fn intra_root(&self, root: InterRoot) -> Result<usize> {
        match root {
            InterRoot::Here => Ok(self.rank()),
            InterRoot::Remote(r) => Ok(r),
            InterRoot::Elsewhere => {
                Err(Error::InvalidArgument("MPI_PROC_NULL as a root is for intercommunicators".into()))
            }
        }
    }

    /// [`Communicator::ibcast_raw`] or [`Communicator::inter_ibcast_raw`].
    ///
    /// # Safety
    /// As for those.
    pub unsafe fn ibcast_at(&self, buf: *mut u8, len: usize, root: InterRoot) -> Result<Collective> {
        match self.is_inter() {
            true => self.inter_ibcast_raw(buf, len, root),
            false => self.ibcast_raw(buf, len, self.intra_root(root)?),
        }
    }

    /// [`Communicator::ireduce_raw`] or [`Communicator::inter_ireduce_raw`].
    ///
    /// # Safety
    /// As for those.
    pub unsafe fn ireduce_at(
        &self,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        root: InterRoot,
        how: Reduction,
    ) -> Result<Collective> {
        match self.is_inter() {
            true => self.inter_ireduce_raw(send, recv, len, root, how.op),
            false => self.ireduce_raw(send, recv, len, self.intra_root(root)?, how),
        }
    }

    /// [`Communicator::igatherv_raw`] (or, `uniform`: every part of one length,
    /// [`Communicator::igather_raw`]) or [`Communicator::inter_igatherv_raw`].
    ///
    /// # Safety
    /// As for those.
    pub unsafe fn igatherv_at(
        &self,
        send: *const u8,
        send_len: usize,
        recv: Option<(*mut u8, usize, Layout<'_>)>,
        root: InterRoot,
        uniform: bool,
    ) -> Result<Collective> {
        match self.is_inter() {
            true => self.inter_igatherv_raw(send, send_len, recv, root),
            false if uniform => self.igather_raw(send, send_len, recv, self.intra_root(root)?),
            false => self.igatherv_raw(send, send_len, recv, self.intra_root(root)?),
        }
    }

    /// [`Communicator::iscatterv_raw`] (or, `uniform`: every part of one length,
    /// [`Communicator::iscatter_raw`]) or [`Communicator::inter_iscatterv_raw`].
    ///
    /// # Safety
    /// As for those.
    pub unsafe fn iscatterv_at(
        &self,
        send: Option<(*const u8, usize, Layout<'_>)>,
        recv: *mut u8,
        recv_len: usize,
        root: InterRoot,
        uniform: bool,
    ) -> Result<Collective> {
        match self.is_inter() {
            true => self.inter_iscatterv_raw(send, recv, recv_len, root),
            false if uniform => self.iscatter_raw(send, recv, recv_len, self.intra_root(root)?),
            false => self.iscatterv_raw(send, recv, recv_len, self.intra_root(root)?),
        }
    }
}

impl Plan<'_, '_> {
    /// Every local member tells the local leader it has arrived (zero-byte messages).
    fn gather_zero(&mut self) -> Result<()> {
        let (me, n) = (self.rank(), self.size());
        if me == 0 {
            for r in 1..n {
                self.recv(r, nothing(), 0)?;
            }
        } else {
            self.send(0, nothing(), 0)?;
        }
        self.end_round();
        Ok(())
    }

    /// The local reduction to the leader, the leaders' swap into `recv`, and the leader's
    /// broadcast of it (as [`Communicator::inter_iallreduce_raw`]). Leaves the plan local.
    fn inter_allreduce(&mut self, send: *const u8, recv: *mut u8, len: usize) -> Result<()> {
        let mine = self.scratch(len, None);
        self.local();
        self.reduce(send, mine, len, 0)?;
        if self.rank() == 0 {
            self.remote();
            self.recv(0, recv, len)?;
            self.send(0, mine, len)?;
            self.end_round();
            self.local();
        }
        self.bcast(recv, len, 0)
    }
}

//! Hierarchical collectives for communicators that span several hosts: the members of each
//! host on their billboard (the one-host algorithms of `select.rs`), one leader per host
//! between hosts over the network (the root leads its own host, so a rooted collective needs
//! no extra hop), then each host again. Written once as one schedule: each phase addresses a
//! group of the communicator (`Plan::within`), and a phase takes what the one before left
//! only once its rounds have ended (`Plan::copy`, and network algorithms that read their
//! input when their first round starts). Any placement works: a host's members need not be
//! consecutive ranks, hosts may hold different numbers of them. Blocking forms whose posts
//! fit the board run their host phases on each host's board instead (`hier_board.rs`).
//!
//! Reductions keep rank order only where every host's members are consecutive ranks (then a
//! host's fold is a run of ranks and the leaders fold the runs in host order); `select.rs`
//! runs a flat algorithm for non-commutative operators otherwise.

use super::gather::Layout;
use super::hosts::{Hosts, Standing};
use super::nonblocking::Plan;
use super::select::{self, BcastBy, ReduceBy};
use crate::engine::sched::Local;
use crate::Result;

impl Plan<'_, '_> {
    /// Barrier: every member tells its host's leader it has arrived, the leaders meet by
    /// dissemination, each leader releases its host with one post.
    pub(super) fn hier_barrier(&mut self, hosts: &Hosts) -> Result<()> {
        let me = self.rank();
        let members = hosts.members(hosts.of(me));
        let leaders = hosts.leaders(None);
        self.within(members);
        if me != members[0] {
            let none = std::ptr::NonNull::<u8>::dangling().as_ptr();
            self.send(0, none, 0)?;
            self.recv(0, none, 0)?;
            self.end_round();
            self.whole();
            return Ok(());
        }
        self.barrier_post_arrivals()?;
        self.within(&leaders);
        self.dissemination()?;
        self.within(members);
        self.barrier_post_release();
        self.whole();
        Ok(())
    }

    /// Broadcast of `len` bytes at `buf` from `root`: among the leaders (binomial, or scatter +
    /// ring all-gather when large), then from each leader on its host.
    pub(super) fn hier_bcast(&mut self, hosts: &Hosts, buf: *mut u8, len: usize, root: usize) -> Result<()> {
        let me = self.rank();
        let leaders = hosts.leaders(Some(root));
        let leader = leaders[hosts.of(me)];
        if me == leader {
            let from = Hosts::index_in(&leaders, root).expect("the root leads its host");
            self.within(&leaders);
            match select::bcast_between_hosts(leaders.len(), len) {
                BcastBy::ScatterAllgather => self.bcast_scatter_allgather(buf, len, from)?,
                _ => {
                    self.bcast_binomial(buf, len, from)?;
                    // The leader has the message once its tree's last round starts (that
                    // round only sends it on): its host's members get it at the same time.
                    self.join_last_round();
                }
            }
        }
        let members = hosts.members(hosts.of(me));
        self.within(members);
        let from = Hosts::index_in(members, leader).expect("a leader is a member");
        self.bcast_on_one_host(buf, len, from)?;
        self.whole();
        Ok(())
    }

    /// Reduction of `len` bytes at every rank's `send` into `recv` at `root`, or everywhere
    /// when `root` is `None`: each host into its leader (the one-host table), the leaders'
    /// results into the root by a binomial tree, or among all leaders by recursive doubling or
    /// a ring, then each leader's result to its host. `send` may be `recv`.
    pub(super) fn hier_reduce(
        &mut self,
        hosts: &Hosts,
        (send, recv, len): (*const u8, *mut u8, usize),
        root: Option<usize>,
        (elem, commutative): (usize, bool),
    ) -> Result<()> {
        let me = self.rank();
        let Standing { leaders, members, leader, at } = hosts.standing(me, root);
        // The host's result lands in scratch at the leader (in place, `recv` is still `send`).
        let host_result = if me == leader { self.scratch(len, None) } else { recv };
        self.within(members);
        match select::reduce_on_one_host(members.len(), len, true, self.crowded) {
            ReduceBy::Split => self.reduce_split(send, host_result, len, Some(at), (elem, commutative))?,
            _ => self.reduce(send, host_result, len, at)?,
        }
        if me == leader {
            self.within(&leaders);
            match root {
                Some(r) => {
                    let to = Hosts::index_in(&leaders, r).expect("the root leads its host");
                    self.reduce(host_result, recv, len, to)?;
                }
                None => match select::allreduce_between_hosts(leaders.len(), len, commutative) {
                    ReduceBy::Ring => self.allreduce_ring(host_result, recv, len, elem)?,
                    _ => self.allreduce_doubling(host_result, recv, len)?,
                },
            }
        }
        if root.is_none() {
            self.within(members);
            self.bcast_on_one_host(recv, len, at)?;
        }
        self.whole();
        Ok(())
    }

    /// All-gather of every rank's `send_len` bytes at `send` into `recv`, rank r's part at
    /// `layout[r]` (checked by the caller): each host's parts to its leader, the hosts' blocks
    /// among the leaders (recursive doubling, Bruck or a ring), then each leader posts every
    /// part its members lack once, read by all of them. This rank's part is copied at once, so
    /// `send` may be that very part (in place).
    pub(super) fn hier_allgather(
        &mut self,
        hosts: &Hosts,
        (send, send_len): (*const u8, usize),
        (recv, recv_len): (*mut u8, usize),
        layout: Layout,
    ) -> Result<()> {
        let me = self.rank();
        let (d, l) = layout[me];
        // SAFETY: the part lies inside the lent buffer (checked by the caller) and `send` holds
        // `send_len` bytes; in place they are the same bytes.
        unsafe { crate::copy::copy_own(send, recv.add(d), send_len.min(l)) };
        let leaders = hosts.leaders(None);
        let members = hosts.members(hosts.of(me));
        let leader = members[0];
        let own: Vec<(usize, usize)> = members.iter().map(|&r| layout[r]).collect();
        self.within(members);
        // Inside the lent buffer (checked by the caller); only the engine dereferences it.
        let part = recv.wrapping_add(d);
        self.gather(part, l, (me == leader).then_some((recv, recv_len, &own[..])), 0)?;
        if me == leader {
            let blocks: Vec<Vec<(usize, usize)>> =
                (0..hosts.count()).map(|h| hosts.members(h).iter().map(|&r| layout[r]).collect()).collect();
            let total = layout.iter().map(|p| p.1).sum();
            self.within(&leaders);
            let by = select::allgather_between_hosts(leaders.len(), total);
            self.allgather_blocks(by, recv, &blocks)?;
            self.within(members);
        }
        // Every part to each member that lacks it, from the leader: one post for all of them.
        let parts = (0..layout.len()).filter(|&r| layout[r].1 > 0);
        if me == leader && members.len() > 1 {
            for r in parts {
                let (d, l) = layout[r];
                let readers = (1..members.len()).filter(|&k| members[k] != r);
                // As above.
                self.multicast(readers, recv.wrapping_add(d), l);
            }
        } else if me != leader {
            for r in parts.filter(|&r| r != me) {
                let (d, l) = layout[r];
                // As above.
                self.recv(0, recv.wrapping_add(d), l)?;
            }
        }
        self.end_round();
        self.whole();
        Ok(())
    }
}

impl Plan<'_, '_> {
    /// Gather of every rank's `part` bytes at `send` (every rank's part has that length, as in
    /// MPI_Gather) into the root's `recv` (buffer, length, layout; checked by the caller): each
    /// host's parts to its leader, each leader's host in one message to the root, which takes
    /// them with its own host's parts in one round and copies them into place.
    pub(super) fn hier_gather(
        &mut self,
        hosts: &Hosts,
        (send, part): (*const u8, usize),
        recv: Option<(*mut u8, usize, Layout)>,
        root: usize,
    ) -> Result<()> {
        let me = self.rank();
        let Standing { leaders, members, leader, at } = hosts.standing(me, Some(root));
        self.within(members);
        if me != leader {
            self.send(at, send, part)?;
            self.end_round();
        } else if me != root {
            let pack = self.scratch(members.len() * part, None);
            let packed: Vec<(usize, usize)> = (0..members.len()).map(|i| (i * part, part)).collect();
            self.gather(send, part, Some((pack, members.len() * part, &packed)), at)?;
            self.within(&leaders);
            let to = Hosts::index_in(&leaders, root).expect("the root leads its host");
            self.send(to, pack, members.len() * part)?;
            self.end_round();
        } else {
            let (buf, len, layout) = recv
                .ok_or_else(|| crate::Error::InvalidArgument("gather: the root must pass a receive buffer".into()))?;
            let own: Vec<(usize, usize)> = members.iter().map(|&r| layout[r]).collect();
            self.gather(send, part, Some((buf, len, &own)), at)?;
            // The other hosts' parts come in the same round as this host's.
            self.join_last_round();
            self.within(&leaders);
            for (k, &other) in leaders.iter().enumerate().filter(|&(_, &l)| l != root) {
                let theirs = hosts.members(hosts.of(other));
                let pack = self.scratch(theirs.len() * part, None);
                self.recv(k, pack, theirs.len() * part)?;
                for (i, &r) in theirs.iter().enumerate() {
                    let (d, l) = layout[r];
                    // Inside the scratch block and the lent buffer (checked by the caller).
                    let (from, to) = (pack.wrapping_add(i * part), buf.wrapping_add(d));
                    self.then(Local::Copy { from, to, len: l.min(part) });
                }
            }
            self.end_round();
        }
        self.whole();
        Ok(())
    }

    /// Scatter of the root's `send` parts (buffer, length, layout; checked by the caller), every
    /// part `part` bytes (as in MPI_Scatter), into each rank's `recv`: the root sends each
    /// other host's parts to its leader in one message, in the round it sends its own host's,
    /// and each leader hands its members theirs.
    pub(super) fn hier_scatter(
        &mut self,
        hosts: &Hosts,
        send: Option<(*const u8, usize, Layout)>,
        (recv, recv_len): (*mut u8, usize),
        part: usize,
        root: usize,
    ) -> Result<()> {
        let me = self.rank();
        let Standing { leaders, members, leader, at } = hosts.standing(me, Some(root));
        if me == root {
            let (buf, len, layout) =
                send.ok_or_else(|| crate::Error::InvalidArgument("scatter: the root must pass a send buffer".into()))?;
            self.within(&leaders);
            for (k, &other) in leaders.iter().enumerate().filter(|&(_, &l)| l != root) {
                let theirs = hosts.members(hosts.of(other));
                let pack = self.scratch(theirs.len() * part, None);
                for (i, &r) in theirs.iter().enumerate() {
                    let (d, l) = layout[r];
                    // SAFETY: the part lies inside the lent buffer (checked by the caller), the
                    // scratch block holds `part` bytes for each of these members; the root's
                    // buffer is the caller's, readable now (this is the schedule's first phase).
                    unsafe { std::ptr::copy_nonoverlapping(buf.add(d), pack.add(i * part), l.min(part)) };
                }
                self.send(k, pack, theirs.len() * part)?;
            }
            // This host's parts go out in the same round (the scatter below ends it).
            self.within(members);
            let own: Vec<(usize, usize)> = members.iter().map(|&r| layout[r]).collect();
            self.scatter(Some((buf, len, &own)), recv, recv_len, at)?;
        } else if me == leader {
            let pack = self.scratch(members.len() * part, None);
            self.within(&leaders);
            let from = Hosts::index_in(&leaders, root).expect("the root leads its host");
            self.recv(from, pack, members.len() * part)?;
            self.end_round();
            self.within(members);
            for k in (0..members.len()).filter(|&k| k != at) {
                // Inside the scratch block; only the engine dereferences it.
                self.send(k, pack.wrapping_add(k * part), part)?;
            }
            self.then(Local::Copy { from: pack.wrapping_add(at * part), to: recv, len: part.min(recv_len) });
            self.end_round();
        } else {
            self.within(members);
            self.recv(at, recv, part.min(recv_len))?;
            self.end_round();
        }
        self.whole();
        Ok(())
    }
}

//! Making communicators from a communicator: dup (blocking, and in the background), split,
//! subset (MPI_Comm_create_group), the views agreements run on, and the tags that keep
//! concurrent creations and background operations apart.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Background, Communicator, SendMode, Source, TagMatch};
use super::{
    BACKGROUND_SPAN, DUPS, FIRST_FREE_CONTEXT, NONBLOCKING, TAG_AGREE, TAG_CONTEXT, TAG_IDUP, TAG_INTER,
    TAG_NONBLOCKING, TAG_SUBSET,
};
use crate::api::context;
use crate::{Error, Result, TAG_UB};

impl Communicator {
    /// Every rank's two words, in rank order (for `split`; small n).
    pub(in crate::api) fn allgather_words(&self, mine: [u64; 2]) -> Result<Vec<[u64; 2]>> {
        let ctx = self.inner.context + 1;
        let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_ne_bytes()).collect();
        for r in (0..self.inner.size).filter(|&r| r != self.inner.rank) {
            self.send_on(ctx, &bytes, r, TAG_AGREE, SendMode::Standard)?;
        }
        let mut all = vec![[0u64; 2]; self.inner.size];
        all[self.inner.rank] = mine;
        for r in (0..self.inner.size).filter(|&r| r != self.inner.rank) {
            let mut buf = [0u8; 16];
            self.recv_on(ctx, &mut buf, Source::Rank(r), TagMatch::Tag(TAG_AGREE))?;
            for (i, w) in all[r].iter_mut().enumerate() {
                *w = u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
            }
        }
        Ok(all)
    }

    /// A context id free in every member (collective; see `context.rs`).
    fn new_context(&self) -> Result<u32> {
        let everyone: Vec<usize> = (0..self.inner.size).collect();
        context::agree(self, &everyone, self.inner.rank, TAG_CONTEXT)
    }

    /// A communicator of this process's engine and pool.
    pub(in crate::api) fn child(&self, context: u32, rank: usize, members: Option<Vec<usize>>) -> Communicator {
        self.inter_child(context, rank, members, None)
    }

    /// [`Communicator::child`] with a remote group: an intercommunicator.
    pub(in crate::api) fn inter_child(
        &self,
        context: u32,
        rank: usize,
        members: Option<Vec<usize>>,
        remote: Option<crate::api::intercomm::Remote>,
    ) -> Communicator {
        let size = members.as_ref().map_or(self.inner.size, Vec::len);
        let inner = self.inner.derived(context, rank, size, members, remote, self.inner.joined.clone());
        let comm = Communicator { inner: Arc::new(inner) };
        if context >= FIRST_FREE_CONTEXT {
            // Who may revoke it (`engine/revoke.rs`): its members, both groups of an
            // intercommunicator, whose hidden local communicator is revoked with it.
            let mut members = comm.member_list();
            let remote = comm.remote();
            members.extend(remote.iter().flat_map(|r| r.members.iter().copied()));
            let linked = remote.map(|r| r.local().context_id());
            let key = Arc::as_ptr(&comm.inner) as u64;
            self.inner.engine.lock().hold(context, members, linked, key);
        }
        comm
    }

    /// The world ranks of the members, in rank order.
    pub(in crate::api) fn member_list(&self) -> Vec<usize> {
        (0..self.inner.size).map(|r| self.world_rank(r)).collect()
    }

    /// A communicator with the same members and a context of its own (collective).
    pub fn dup(&self) -> Result<Communicator> {
        if self.is_inter() {
            return self.inter_dup(self.next_creation_turn());
        }
        let context = self.new_context()?;
        Ok(self.child(context, self.inner.rank, self.inner.members.clone()))
    }

    /// Starts a [`Communicator::dup`] that goes on in the background (MPI_Comm_idup): the
    /// caller may communicate meanwhile, even with members that have not started theirs yet.
    /// Collective: every member starts its `idup`s of this communicator in the same order.
    /// The agreement runs on a thread of the library's own; while it runs, the engine takes
    /// its lock on every call (see [`Communicator::assume_serialized`]).
    pub fn idup(&self) -> Result<Background<Communicator>> {
        self.with_background_dup("billboard-idup", |c| c)
    }

    /// Runs `work` in the background on a duplicate of this communicator made there too (see
    /// [`Communicator::idup`]): a nonblocking collective built from blocking steps, which then
    /// can take no message of a blocking collective, or of another such operation, running on
    /// this communicator at the same time. Collective, in the same order in every member.
    pub fn with_background_dup<T: Send + 'static>(
        &self,
        name: &str,
        work: impl FnOnce(Communicator) -> T + Send + 'static,
    ) -> Result<Background<T>> {
        self.background(DUPS, TAG_IDUP, name, |parent, tag| {
            if parent.is_inter() {
                return Ok(work(parent.inter_dup(tag)?));
            }
            let everyone: Vec<usize> = (0..parent.inner.size).collect();
            let context = context::agree(parent, &everyone, parent.inner.rank, tag)?;
            Ok(work(parent.child(context, parent.inner.rank, parent.inner.members.clone())))
        })
    }

    /// Runs `work(self, tag)` on a library thread, with the tag of its turn among the
    /// background operations of `kind` on this communicator.
    fn background<T: Send + 'static>(
        &self,
        kind: usize,
        base: i32,
        name: &str,
        work: impl FnOnce(&Communicator, i32) -> Result<T> + Send + 'static,
    ) -> Result<Background<T>> {
        let tag = self.next_tag(kind, base);
        let c = self.clone();
        Ok(Background(self.inner.engine.spawn_helper(name, move || work(&c, tag))?))
    }

    /// The tag of the next operation of `kind` on this communicator (see [`TAG_IDUP`]).
    pub(in crate::api) fn next_tag(&self, kind: usize, base: i32) -> i32 {
        let counter = &self.inner.started[kind];
        let n = if self.inner.engine.serialized() {
            // Calls never overlap: a plain increment, not a locked one (which would wait for
            // the stores of messages just posted).
            let n = counter.load(Ordering::Relaxed);
            counter.store(n.wrapping_add(1), Ordering::Relaxed);
            n
        } else {
            counter.fetch_add(1, Ordering::Relaxed)
        };
        base + (n % BACKGROUND_SPAN) as i32
    }

    /// The turn of the next creation from this communicator (dup, split, merge of an
    /// intercommunicator), the same in every member.
    pub(in crate::api) fn next_creation_turn(&self) -> i32 {
        self.next_tag(DUPS, 0)
    }

    /// This process's view of the whole job (MPI_COMM_WORLD's contexts), for agreements among
    /// any of its processes.
    pub(in crate::api) fn world_view(&self) -> Communicator {
        let size = self.inner.engine.lock().routes().nodes().len();
        let inner =
            self.inner.derived(0, self.world_rank(self.inner.rank), size, None, None, self.inner.joined.clone());
        Communicator { inner: Arc::new(inner) }
    }

    /// This new communicator (no other handle yet) also holds `peers` (see [`Inner::joined`]).
    pub(in crate::api) fn holding(mut self, peers: Arc<crate::api::dynamic::JoinedPeers>) -> Communicator {
        Arc::get_mut(&mut self.inner).expect("a communicator just made has one handle").joined.push(peers);
        self
    }

    /// A view of the processes `union` (peer numbers of this process; this one is
    /// `union[me]`) on MPI_COMM_WORLD's contexts, ranked by position: for agreements among
    /// processes of several jobs, whose peer numbers differ from process to process while
    /// their positions in `union` are the same everywhere.
    pub(in crate::api) fn union_view(&self, union: Vec<usize>, me: usize) -> Communicator {
        self.inter_child(0, me, Some(union), None)
    }

    /// Whether every member of `union` belongs to this process's own job.
    pub(in crate::api) fn all_in_world(&self, union: &[usize]) -> bool {
        let world = self.inner.engine.world_size();
        union.iter().all(|&p| p < world)
    }

    /// The tag of the next nonblocking collective written as a schedule.
    pub(crate) fn next_nonblocking_tag(&self) -> i32 {
        self.next_tag(NONBLOCKING, TAG_NONBLOCKING)
    }

    /// The tag of the next intercommunicator collective (see [`TAG_INTER`]).
    pub(crate) fn next_inter_tag(&self) -> i32 {
        self.next_tag(NONBLOCKING, TAG_INTER)
    }

    /// Splits into one communicator per `color`, ranked by `key` then by old rank
    /// (collective). `None` as color: this rank joins none and gets `None`.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        if self.is_inter() {
            return self.inter_split(color, key, self.next_creation_turn());
        }
        let encoded_color = color.map_or(u64::MAX, u64::from);
        let agreed = self.allgather_words([encoded_color, key as i64 as u64])?;
        // One id for all colors: the new communicators are disjoint, so they may share it.
        let context = self.new_context()?;
        let Some(color) = color else {
            context::release(self, context);
            return Ok(None);
        };
        let mut members: Vec<(i64, usize)> = (0..self.inner.size)
            .filter(|&r| agreed[r][0] == u64::from(color))
            .map(|r| (agreed[r][1] as i64, r))
            .collect();
        members.sort();
        let rank = members.iter().position(|&(_, r)| r == self.inner.rank).expect("this rank has the color");
        let world: Vec<usize> = members.iter().map(|&(_, r)| self.world_rank(r)).collect();
        Ok(Some(self.child(context, rank, Some(world))))
    }

    /// A communicator of the ranks `ranks` (in that order), made by those ranks alone: only
    /// they call it (MPI_Comm_create_group). `tag` tells apart concurrent creations by
    /// overlapping groups. Returns `None` on a rank not in `ranks`.
    pub fn subset(&self, ranks: &[usize], tag: i32) -> Result<Option<Communicator>> {
        self.intra_only("creating a communicator from a subset")?;
        for (i, &r) in ranks.iter().enumerate() {
            self.checked_world_rank(r)?;
            if ranks[..i].contains(&r) {
                return Err(Error::InvalidArgument(format!("rank {r} appears twice in the subset")));
            }
        }
        let Some(rank) = ranks.iter().position(|&r| r == self.inner.rank) else { return Ok(None) };
        let tag = TAG_SUBSET.checked_add(tag.max(0)).filter(|t| *t <= TAG_UB).ok_or(Error::InvalidTag { tag })?;
        let context = context::agree(self, ranks, rank, tag)?;
        let world: Vec<usize> = ranks.iter().map(|&r| self.world_rank(r)).collect();
        Ok(Some(self.child(context, rank, Some(world))))
    }
}

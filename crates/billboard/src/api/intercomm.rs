//! Intercommunicators: two disjoint groups, where point-to-point ranks name the other (remote)
//! group. Made by [`Communicator::intercomm_create`] from two intracommunicators whose leaders
//! can reach each other over a peer communicator; duplicated, split and merged (MPI 4.0
//! sections 7.6 and 7.6.2).
//!
//! An intercommunicator has one context id, free in every member of both groups: both groups
//! send and receive on it, and a message's source rank is the sender's rank in its own group,
//! which is what the receiver calls a remote rank. The id is agreed over the union of the two
//! groups by the usual agreement (`context.rs`) with the world as parent: every process can reach
//! every other there. Each side also keeps a hidden intracommunicator of its own group
//! (`Remote::local`), on which the intercommunicator's collectives run their local phases
//! (`coll/inter.rs`) and its creations gather what they need.

use super::comm::{Communicator, SendMode, Source, TagMatch, BACKGROUND_SPAN, TAG_INTER};
use super::context;
use crate::{Error, Result};

/// The other group of an intercommunicator, as this side sees it.
pub(crate) struct Remote {
    /// World rank of each remote member, by remote rank.
    pub(super) members: Vec<usize>,
    /// An intracommunicator of the local group, for the library's own use.
    pub(super) local: Communicator,
    /// Whether the local group comes first in the union (its leader has the lower world rank):
    /// the order of [`Communicator::merge`] when both groups pass the same `high`.
    pub(super) low: bool,
}

impl Remote {
    #[inline]
    pub(crate) fn world_rank(&self, rank: usize) -> Result<usize> {
        self.members.get(rank).copied().ok_or(Error::InvalidRank { rank, size: self.members.len() })
    }

    /// The hidden intracommunicator of the local group.
    pub(crate) fn local(&self) -> &Communicator {
        &self.local
    }
}

/// Tag of the leaders' exchange over the peer communicator in [`Communicator::intercomm_create`]
/// (on its collective context, so the program's own messages with that tag are never taken).
fn create_tag(user_tag: i32) -> i32 {
    TAG_INTER + (user_tag.rem_euclid(BACKGROUND_SPAN as i32))
}

fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

fn bytes_to_words(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))).collect()
}

impl Communicator {
    /// Whether this is an intercommunicator.
    #[inline]
    pub fn is_inter(&self) -> bool {
        self.remote().is_some()
    }

    /// The size of the remote group of an intercommunicator (`None` on an intracommunicator).
    pub fn remote_size(&self) -> Option<usize> {
        self.remote().map(|r| r.members.len())
    }

    /// The number of ranks point-to-point names: the remote group's size on an
    /// intercommunicator, the size otherwise.
    pub fn peers(&self) -> usize {
        self.remote_size().unwrap_or_else(|| self.size())
    }

    /// The world rank of remote member `rank` of an intercommunicator.
    pub fn remote_world_rank(&self, rank: usize) -> Result<usize> {
        self.remote().ok_or_else(|| Error::InvalidArgument("not an intercommunicator".into()))?.world_rank(rank)
    }

    /// An error for `what` on an intercommunicator.
    pub(crate) fn intra_only(&self, what: &str) -> Result<()> {
        if self.is_inter() {
            return Err(Error::InvalidArgument(format!("{what} is not defined on an intercommunicator")));
        }
        Ok(())
    }

    /// A context id free in every process of `union` (world ranks; this one is `union[me]`),
    /// agreed on the world's collective context with `tag` (below [`BACKGROUND_SPAN`], with
    /// `TAG_SURVIVES_REVOKE` besides for MPIX_Comm_shrink: `recover.rs`).
    ///
    /// With processes of another job among them (spawned or connected), the world ranks mean
    /// nothing to those: the agreement runs on the union's positions instead (`union_view`).
    pub(super) fn agree_union(&self, union: &[usize], me: usize, tag: i32) -> Result<u32> {
        if self.all_in_world(union) {
            return context::agree(&self.world_view(), union, me, TAG_INTER + tag);
        }
        let view = self.union_view(union.to_vec(), me);
        let everyone: Vec<usize> = (0..union.len()).collect();
        context::agree(&view, &everyone, me, TAG_INTER + tag)
    }

    /// An intercommunicator of this communicator's group and another one (MPI_Intercomm_create;
    /// collective over this communicator and the other group's). `local_leader` is a rank of
    /// this communicator; on the leader, `peer` is a communicator that holds it and the other
    /// group's leader, `remote_leader` its rank there (elsewhere both are ignored). `tag` tells
    /// apart concurrent creations between the same leaders.
    pub fn intercomm_create(
        &self,
        local_leader: usize,
        peer: Option<&Communicator>,
        remote_leader: usize,
        tag: i32,
    ) -> Result<Communicator> {
        self.intra_only("MPI_Intercomm_create's local communicator")?;
        self.checked_world_rank(local_leader)?;
        let local = self.dup()?;
        // The leader learns the remote group from the other leader: [count, world ranks...].
        let mut remote = Vec::new();
        if self.rank() == local_leader {
            let peer =
                peer.ok_or_else(|| Error::InvalidArgument("the local leader needs a peer communicator".into()))?;
            let other = peer.checked_world_rank(remote_leader)?;
            if other == self.world_rank(local_leader) {
                return Err(Error::InvalidArgument(format!(
                    "the remote leader (rank {remote_leader} of the peer communicator) is the local leader itself"
                )));
            }
            let mine: Vec<u64> = self.member_list().iter().map(|&w| w as u64).collect();
            let tag = create_tag(tag);
            let theirs = peer.swap_with(remote_leader, tag, &[mine.len() as u64], 1)?;
            remote = peer.swap_with(remote_leader, tag, &mine, theirs[0] as usize)?;
        }
        let mut count = [remote.len() as u64];
        let mut bytes = words_to_bytes(&count);
        local.bcast_bytes(&mut bytes, local_leader)?;
        count[0] = bytes_to_words(&bytes)[0];
        let mut bytes = vec![0u8; 8 * count[0] as usize];
        if self.rank() == local_leader {
            bytes = words_to_bytes(&remote);
        }
        local.bcast_bytes(&mut bytes, local_leader)?;
        let remote: Vec<usize> = bytes_to_words(&bytes).iter().map(|&w| w as usize).collect();
        let mine = self.member_list();
        if remote.iter().any(|w| mine.contains(w)) {
            return Err(Error::InvalidArgument("the local and remote groups of an intercommunicator overlap".into()));
        }
        let low =
            mine[local_leader] < *remote.first().ok_or_else(|| Error::InvalidArgument("empty remote group".into()))?;
        let (union, me) = union_of(&mine, &remote, low, self.rank());
        let context = self.agree_union(&union, me, tag.rem_euclid(BACKGROUND_SPAN as i32))?;
        let remote = Remote { members: remote, local, low };
        Ok(self.inter_child(context, self.rank(), Some(mine), Some(remote)))
    }

    /// Sends `words` to rank `to` on the collective context with `tag` while receiving the
    /// `expect` words it sends, without deadlock.
    pub(super) fn swap_with(&self, to: usize, tag: i32, words: &[u64], expect: usize) -> Result<Vec<u64>> {
        let ctx = self.coll_context();
        let mut buf = vec![0u8; 8 * expect];
        let send = words_to_bytes(words);
        // SAFETY: `buf` outlives the request, which is waited for below.
        let r = unsafe { self.irecv_on(ctx, buf.as_mut_ptr(), buf.len(), Source::Rank(to), TagMatch::Tag(tag), 0) }?;
        let sent = self.send_on(ctx, &send, to, tag, SendMode::Standard);
        let received = r.wait();
        sent?;
        received?;
        Ok(bytes_to_words(&buf))
    }

    /// MPI_Comm_dup of an intercommunicator: the same groups, a new context and hidden local
    /// communicator. `tag` is this creation's turn on the intercommunicator.
    pub(crate) fn inter_dup(&self, tag: i32) -> Result<Communicator> {
        let remote = self.remote().expect("an intercommunicator");
        let local = remote.local.dup()?;
        let mine = self.member_list();
        let (union, me) = union_of(&mine, &remote.members, remote.low, self.rank());
        let context = self.agree_union(&union, me, self.union_tag(tag))?;
        let new = Remote { members: remote.members.clone(), local, low: remote.low };
        Ok(self.inter_child(context, self.rank(), Some(mine), Some(new)))
    }

    /// The tag of a creation's context agreement: the same in both groups, and apart from
    /// other intercommunicators' creations.
    pub(super) fn union_tag(&self, turn: i32) -> i32 {
        ((self.context_id() / 2) as i32).wrapping_add(turn).rem_euclid(BACKGROUND_SPAN as i32)
    }

    /// MPI_Comm_split of an intercommunicator: for each color, an intercommunicator of the
    /// local members with it and the remote members with it (ordered by key, then rank), or
    /// `None` where either side has none.
    pub(crate) fn inter_split(&self, color: Option<u32>, key: i32, tag: i32) -> Result<Option<Communicator>> {
        let remote = self.remote().expect("an intercommunicator");
        let local = remote.local.split(color, key)?;
        let encoded = color.map_or(u64::MAX, u64::from);
        let mine = remote.local.allgather_words([encoded, key as i64 as u64])?;
        let mine_bytes: Vec<u8> = mine.iter().flat_map(|w| words_to_bytes(w)).collect();
        let mut theirs_bytes = vec![0u8; 16 * remote.members.len()];
        self.leaders_swap(&mine_bytes, &mut theirs_bytes)?;
        let theirs = bytes_to_words(&theirs_bytes);
        let (Some(color), Some(local)) = (color, local) else { return Ok(None) };
        let mut chosen: Vec<(i64, usize)> = (0..remote.members.len())
            .filter(|&r| theirs[2 * r] == u64::from(color))
            .map(|r| (theirs[2 * r + 1] as i64, r))
            .collect();
        if chosen.is_empty() {
            return Ok(None);
        }
        chosen.sort();
        let members: Vec<usize> = chosen.iter().map(|&(_, r)| remote.members[r]).collect();
        let new_mine = local.member_list();
        let low = new_mine[0] < members[0];
        let (union, me) = union_of(&new_mine, &members, low, local.rank());
        let context = self.agree_union(&union, me, self.union_tag(tag))?;
        let rank = local.rank();
        let new = Remote { members, local, low };
        Ok(Some(self.inter_child(context, rank, Some(new_mine), Some(new))))
    }

    /// MPI_Intercomm_merge: an intracommunicator of both groups, the one that passed
    /// `high = false` first; when both passed the same, the group whose leader has the lower
    /// world rank first. Every member of a group passes the same `high`.
    pub fn merge(&self, high: bool) -> Result<Communicator> {
        let remote = self.remote().ok_or_else(|| Error::InvalidArgument("merge of an intracommunicator".into()))?;
        let tag = self.next_creation_turn();
        let mut theirs = [0u8];
        self.leaders_swap(&[high as u8], &mut theirs)?;
        let remote_high = theirs[0] != 0;
        let first = if high == remote_high { remote.low } else { !high };
        let mine = self.member_list();
        let (union, me) = union_of(&mine, &remote.members, first, self.rank());
        let context = self.agree_union(&union, me, self.union_tag(tag))?;
        Ok(self.child(context, me, Some(union)))
    }

    /// Blocking: the local leaders swap `mine` (the same in every local member) for the remote
    /// group's, which every local member gets in `theirs`.
    fn leaders_swap(&self, mine: &[u8], theirs: &mut [u8]) -> Result<()> {
        // SAFETY: the buffers are borrowed until the wait returns.
        unsafe { self.inter_exchange_raw(mine.as_ptr(), mine.len(), theirs.as_mut_ptr(), theirs.len()) }?.wait()
    }
}

/// The two groups one after the other (this one first if `mine_first`), and this process's
/// position there (it is `mine[rank]`).
pub(super) fn union_of(mine: &[usize], theirs: &[usize], mine_first: bool, rank: usize) -> (Vec<usize>, usize) {
    if mine_first {
        ([mine, theirs].concat(), rank)
    } else {
        ([theirs, mine].concat(), theirs.len() + rank)
    }
}

//! Where a communicator's members run, as hierarchical collectives see it: the members of
//! each host, and one leader per host that speaks for it between hosts. Pure arithmetic on
//! the host index of every member (which every member knows alike, learned at start), so all
//! members derive the same groups with no message.

/// The members of a communicator grouped by host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hosts {
    /// The members of each host, ascending; hosts ordered by their lowest member.
    members: Vec<Vec<usize>>,
    /// The host of each member (an index into `members`).
    host: Vec<usize>,
}

impl Hosts {
    /// Groups members by `node[r]`, the host index of member r (equal: same host).
    pub(crate) fn new(node: impl IntoIterator<Item = usize>) -> Hosts {
        let mut ids: Vec<usize> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut host = Vec::new();
        for (r, id) in node.into_iter().enumerate() {
            let h = match ids.iter().position(|&x| x == id) {
                Some(h) => h,
                None => {
                    ids.push(id);
                    members.push(Vec::new());
                    ids.len() - 1
                }
            };
            members[h].push(r);
            host.push(h);
        }
        Hosts { members, host }
    }

    /// How many hosts.
    pub(crate) fn count(&self) -> usize {
        self.members.len()
    }

    /// The host of member `rank`.
    pub(crate) fn of(&self, rank: usize) -> usize {
        self.host[rank]
    }

    /// The members of host `h`, ascending.
    pub(crate) fn members(&self, h: usize) -> &[usize] {
        &self.members[h]
    }

    /// The most members a host holds.
    pub(crate) fn widest(&self) -> usize {
        self.members.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The leader of host `h`: `root` where it runs there (so a rooted collective needs no
    /// extra hop to or from it), else the host's lowest member.
    pub(crate) fn leader(&self, h: usize, root: Option<usize>) -> usize {
        match root {
            Some(r) if self.host[r] == h => r,
            _ => self.members[h][0],
        }
    }

    /// Every host's leader, in host order (see [`Hosts::leader`]).
    pub(crate) fn leaders(&self, root: Option<usize>) -> Vec<usize> {
        (0..self.count()).map(|h| self.leader(h, root)).collect()
    }

    /// Where `rank` stands in a hierarchical collective rooted at `root` (if any).
    pub(crate) fn standing(&self, rank: usize, root: Option<usize>) -> Standing<'_> {
        let leaders = self.leaders(root);
        let members = self.members(self.of(rank));
        let leader = leaders[self.of(rank)];
        let at = Hosts::index_in(members, leader).expect("a leader is a member");
        Standing { leaders, members, leader, at }
    }

    /// Whether every host's members are consecutive ranks, so that reducing within each host,
    /// then across hosts in host order, keeps rank order (what a non-commutative operator
    /// needs from a hierarchical reduction).
    pub(crate) fn consecutive(&self) -> bool {
        self.members.iter().all(|m| m.windows(2).all(|w| w[1] == w[0] + 1))
    }

    /// Where `rank` stands in `group` (a list of members).
    pub(crate) fn index_in(group: &[usize], rank: usize) -> Option<usize> {
        group.iter().position(|&r| r == rank)
    }
}

/// Where a rank stands in a hierarchical collective (see [`Hosts::standing`]).
pub(crate) struct Standing<'h> {
    /// Every host's leader, in host order.
    pub(crate) leaders: Vec<usize>,
    /// The members of the rank's host, ascending.
    pub(crate) members: &'h [usize],
    /// Its host's leader, and where the leader stands among `members`.
    pub(crate) leader: usize,
    pub(crate) at: usize,
}

impl crate::Communicator {
    /// Where this communicator's members run (no communication: see [`Hosts`]).
    pub(crate) fn hosts(&self) -> Hosts {
        Hosts::new((0..self.size()).map(|r| self.host_of(r).unwrap_or(usize::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_grouped_by_host_in_order_of_their_lowest_rank() {
        // Ranks 0, 3, 4 on host 7; 1, 5 on host 2; 2 on host 9: not consecutive, uneven.
        let h = Hosts::new([7, 2, 9, 7, 7, 2]);
        assert_eq!(h.count(), 3);
        assert_eq!(h.members(0), [0, 3, 4]);
        assert_eq!(h.members(1), [1, 5]);
        assert_eq!(h.members(2), [2]);
        assert_eq!((h.of(4), h.of(5)), (0, 1));
        assert!(!h.consecutive());
        assert!(Hosts::new([4, 4, 1, 1, 1, 6]).consecutive());
    }

    #[test]
    fn the_root_leads_its_own_host() {
        let h = Hosts::new([7, 2, 9, 7, 7, 2]);
        assert_eq!(h.leaders(None), [0, 1, 2]);
        assert_eq!(h.leaders(Some(4)), [4, 1, 2]);
        assert_eq!(h.leaders(Some(5)), [0, 5, 2]);
        assert_eq!(Hosts::index_in(&h.leaders(Some(5)), 5), Some(1));
    }
}

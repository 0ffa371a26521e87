//! PVM's dynamic groups, kept by the host agent (pvmd's group server's role): names,
//! instance numbers, barriers. The data-moving group calls (`pvm_bcast`, `pvm_reduce`,
//! `pvm_gather`, `pvm_scatter`) ask for the members once and then move messages between the
//! tasks directly (`crate::group_calls`).

use std::collections::BTreeMap;

use crate::error::PvmError;
use crate::wire::Frame;

/// The group requests (`Frame::Group`'s `op`).
pub mod op {
    pub const JOIN: i32 = 1;
    pub const LEAVE: i32 = 2;
    /// `arg`: an instance; answers its tid.
    pub const TID: i32 = 3;
    /// `arg`: a tid; answers its instance.
    pub const INST: i32 = 4;
    pub const SIZE: i32 = 5;
    /// `arg`: how many must arrive (-1: every member); the answer comes when they have.
    pub const BARRIER: i32 = 6;
    /// `arg`: the size (-1: the present one); the answer comes when that many have joined,
    /// and from then on no task joins.
    pub const FREEZE: i32 = 7;
    /// Answers every member's tid by instance (0 where an instance is free).
    pub const MEMBERS: i32 = 8;
}

#[derive(Default)]
struct Group {
    /// Tid by instance; `None`: an instance left free by a task that left.
    members: Vec<Option<i32>>,
    frozen: bool,
    /// Tasks waiting in the barrier, and how many it waits for.
    waiting: Vec<i32>,
    wanted: usize,
    /// Tasks waiting in `pvm_freezegroup` for the group to reach `freeze_at` members.
    freezing: Vec<i32>,
    freeze_at: usize,
}

impl Group {
    fn size(&self) -> usize {
        self.members.iter().flatten().count()
    }
    fn inst_of(&self, tid: i32) -> Option<usize> {
        self.members.iter().position(|&m| m == Some(tid))
    }
}

#[derive(Default)]
pub struct Groups {
    by_name: BTreeMap<String, Group>,
}

fn status(r: Result<i32, PvmError>) -> Frame {
    Frame::Status { code: r.unwrap_or_else(|e| e.code()), list: vec![] }
}

impl Groups {
    /// Answers one group request of task `from`; `None` when the answer comes later.
    pub fn request(&mut self, from: i32, op: i32, name: &str, arg: i32) -> Option<Frame> {
        if name.is_empty() {
            return Some(status(Err(PvmError::NullGroup)));
        }
        if op == op::JOIN {
            let g = self.by_name.entry(name.to_string()).or_default();
            if g.inst_of(from).is_some() {
                return Some(status(Err(PvmError::DupGroup)));
            }
            if g.frozen {
                return Some(status(Err(PvmError::Denied)));
            }
            let inst = match g.members.iter().position(Option::is_none) {
                Some(i) => {
                    g.members[i] = Some(from);
                    i
                }
                None => {
                    g.members.push(Some(from));
                    g.members.len() - 1
                }
            };
            return Some(status(Ok(inst as i32)));
        }
        let Some(g) = self.by_name.get_mut(name) else { return Some(status(Err(PvmError::NoGroup))) };
        Some(match op {
            op::LEAVE => {
                let r = g.inst_of(from).map(|i| g.members[i] = None).ok_or(PvmError::NotInGroup);
                if g.size() == 0 && g.waiting.is_empty() && g.freezing.is_empty() {
                    self.by_name.remove(name);
                }
                status(r.map(|()| 0))
            }
            op::TID => status(
                usize::try_from(arg).ok().and_then(|i| g.members.get(i).copied().flatten()).ok_or(PvmError::NoInst),
            ),
            op::INST => status(g.inst_of(arg).map(|i| i as i32).ok_or(PvmError::NotInGroup)),
            op::SIZE => status(Ok(g.size() as i32)),
            op::FREEZE => {
                let at = if arg < 0 { g.size() } else { arg as usize };
                if g.size() >= at && g.freezing.is_empty() {
                    g.frozen = true;
                    return Some(status(Ok(0)));
                }
                g.freeze_at = at;
                g.freezing.push(from);
                return None;
            }
            op::MEMBERS => {
                Frame::Status { code: g.size() as i32, list: g.members.iter().map(|m| m.unwrap_or(0)).collect() }
            }
            op::BARRIER => {
                if g.inst_of(from).is_none() {
                    return Some(status(Err(PvmError::NotInGroup)));
                }
                let wanted = if arg < 0 { g.size() } else { arg as usize };
                if !g.waiting.is_empty() && wanted != g.wanted {
                    return Some(status(Err(PvmError::Mismatch)));
                }
                g.wanted = wanted;
                g.waiting.push(from);
                return None;
            }
            _ => status(Err(PvmError::BadParam)),
        })
    }

    /// Barriers that have all they wait for: their waiters and the code each gets.
    pub fn take_ready_barriers(&mut self) -> Vec<(Vec<i32>, i32)> {
        let mut out = Vec::new();
        for g in self.by_name.values_mut() {
            if !g.waiting.is_empty() && g.waiting.len() >= g.wanted {
                out.push((std::mem::take(&mut g.waiting), 0));
            }
            if !g.freezing.is_empty() && g.size() >= g.freeze_at {
                g.frozen = true;
                out.push((std::mem::take(&mut g.freezing), 0));
            }
        }
        self.by_name.retain(|_, g| g.size() > 0 || !g.waiting.is_empty() || !g.freezing.is_empty());
        out
    }

    /// A task ended: it leaves every group (and stops waiting in barriers).
    pub fn task_gone(&mut self, tid: i32) {
        for g in self.by_name.values_mut() {
            if let Some(i) = g.inst_of(tid) {
                g.members[i] = None;
            }
            g.waiting.retain(|&t| t != tid);
            g.freezing.retain(|&t| t != tid);
        }
        self.by_name.retain(|_, g| g.size() > 0 || !g.waiting.is_empty() || !g.freezing.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(f: Option<Frame>) -> i32 {
        match f {
            Some(Frame::Status { code, .. }) => code,
            other => panic!("expected a status, got {other:?}"),
        }
    }

    #[test]
    fn instances_are_the_lowest_free_ones_and_errors_are_pvms() {
        let mut g = Groups::default();
        assert_eq!(code(g.request(10, op::JOIN, "g", 0)), 0);
        assert_eq!(code(g.request(11, op::JOIN, "g", 0)), 1);
        assert_eq!(code(g.request(11, op::JOIN, "g", 0)), PvmError::DupGroup.code());
        assert_eq!(code(g.request(10, op::LEAVE, "g", 0)), 0);
        assert_eq!(code(g.request(12, op::JOIN, "g", 0)), 0, "the freed instance is reused");
        assert_eq!(code(g.request(12, op::TID, "g", 1)), 11);
        assert_eq!(code(g.request(12, op::TID, "g", 5)), PvmError::NoInst.code());
        assert_eq!(code(g.request(12, op::INST, "g", 99)), PvmError::NotInGroup.code());
        assert_eq!(code(g.request(12, op::SIZE, "nope", 0)), PvmError::NoGroup.code());
        assert_eq!(code(g.request(12, op::SIZE, "", 0)), PvmError::NullGroup.code());
        g.task_gone(11);
        g.task_gone(12);
        assert_eq!(code(g.request(1, op::SIZE, "g", 0)), PvmError::NoGroup.code(), "an empty group is gone");
    }

    #[test]
    fn a_barrier_releases_when_its_count_arrives() {
        let mut g = Groups::default();
        for t in 1..=3 {
            g.request(t, op::JOIN, "b", 0);
        }
        assert!(g.request(1, op::BARRIER, "b", -1).is_none());
        assert!(g.request(2, op::BARRIER, "b", -1).is_none());
        assert!(g.take_ready_barriers().is_empty());
        assert!(g.request(3, op::BARRIER, "b", -1).is_none());
        assert_eq!(g.take_ready_barriers(), vec![(vec![1, 2, 3], 0)]);
        assert!(g.request(1, op::BARRIER, "b", 2).is_none());
        assert_eq!(code(g.request(2, op::BARRIER, "b", 3)), PvmError::Mismatch.code());
    }

    #[test]
    fn freezing_waits_for_the_size_then_closes_the_group() {
        let mut g = Groups::default();
        g.request(1, op::JOIN, "f", 0);
        assert!(g.request(1, op::FREEZE, "f", 2).is_none());
        assert!(g.take_ready_barriers().is_empty());
        g.request(2, op::JOIN, "f", 0);
        assert_eq!(g.take_ready_barriers(), vec![(vec![1], 0)]);
        assert_eq!(code(g.request(3, op::JOIN, "f", 0)), PvmError::Denied.code());
        assert_eq!(code(g.request(2, op::FREEZE, "f", -1)), 0);
    }
}

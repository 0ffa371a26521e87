//! The sender's data part: fixed slots, each written once and read by one or more receivers.
//!
//! Every receiver finishes the slot descriptors it gets from us in the order we posted them
//! (its ring is FIFO and it copies a payload out as soon as it reads the descriptor), so its
//! ACK is a plain count in our partition: we pair that count with our own per-receiver queue of
//! posted slots and free a slot when its last addressed receiver has counted past it.

use std::collections::VecDeque;

use super::Segment;
use crate::sync::Ordering;

pub(crate) struct SlotPool {
    free: Vec<u32>,
    /// Receivers that have yet to ACK each slot.
    refs: Vec<u32>,
    /// Per receiver, the slots posted to it and not yet ACKed, oldest first.
    inflight: Vec<VecDeque<u32>>,
    /// Per receiver, the ACK count already applied.
    acks_seen: Vec<u64>,
    /// Receivers no longer counted (failed): their slots were given back.
    dropped: Vec<bool>,
    /// A receiver whose ACK count passed what it was sent, found by the last reclaim.
    pub overcounted: Option<(usize, String)>,
}

impl SlotPool {
    pub fn new(slots: usize, nranks: usize) -> SlotPool {
        SlotPool {
            free: (0..slots as u32).rev().collect(),
            refs: vec![0; slots],
            inflight: (0..nranks).map(|_| VecDeque::with_capacity(slots)).collect(),
            acks_seen: vec![0; nranks],
            dropped: vec![false; nranks],
            overcounted: None,
        }
    }

    /// A free slot of `me`'s data part, reclaiming ACKed ones if none is free.
    pub fn alloc(&mut self, seg: &Segment, me: usize) -> Option<usize> {
        if self.free.is_empty() {
            self.reclaim(seg, me);
        }
        self.free.pop().map(|s| s as usize)
    }

    /// Records that `slot`'s descriptor went to `receiver`.
    pub fn posted(&mut self, slot: usize, receiver: usize) {
        self.refs[slot] += 1;
        self.inflight[receiver].push_back(slot as u32);
    }

    /// Frees the slots every addressed receiver has ACKed. A receiver whose count says it
    /// finished more than it was sent is left in [`SlotPool::overcounted`] for the channel to
    /// fail, and counted no more.
    fn reclaim(&mut self, seg: &Segment, me: usize) {
        for r in 0..self.inflight.len() {
            if self.dropped[r] {
                // Slots posted since it failed (none, from the engine) go back too.
                self.drop_receiver(r);
                continue;
            }
            if self.inflight[r].is_empty() {
                continue;
            }
            let acked = seg.returns(me, r).acked.load(Ordering::Acquire);
            while self.acks_seen[r] < acked {
                let Some(slot) = self.inflight[r].pop_front() else {
                    let why =
                        format!("its ACK count {acked} passed the {} slot descriptors it was sent", self.acks_seen[r]);
                    self.overcounted = Some((r, why));
                    self.drop_receiver(r);
                    break;
                };
                self.acks_seen[r] += 1;
                self.unref(slot as usize);
            }
        }
    }

    /// Stops counting `receiver`'s ACKs (it failed): the slots it was sent are free once no
    /// other receiver needs them.
    pub fn drop_receiver(&mut self, receiver: usize) {
        self.dropped[receiver] = true;
        while let Some(slot) = self.inflight[receiver].pop_front() {
            self.unref(slot as usize);
        }
    }

    fn unref(&mut self, slot: usize) {
        self.refs[slot] -= 1;
        if self.refs[slot] == 0 {
            self.free.push(slot as u32);
        }
    }
}

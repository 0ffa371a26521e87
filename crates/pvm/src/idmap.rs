//! Tables keyed by PVM's small integer ids (buffer ids, tids): a multiplicative hash instead
//! of std's SipHash, whose ~20 ns a lookup showed in the small-message path (several lookups
//! a call). Keys come from this process or its agent, so flooding is not a concern.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing (Knuth): the high bits, which hashbrown uses first, mix every key bit.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i32(&mut self, v: i32) {
        self.0 = (self.0 ^ u64::from(v as u32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub type IdMap<V> = HashMap<i32, V, BuildHasherDefault<IdHasher>>;

/// An id table whose entry used last is found again with one comparison, no hash: a task's
/// routes (`Task::outbound`), where a ping-pong or a stream sends to the same task call after
/// call. Values stay in their slots while they live (a switch of destination moves nothing,
/// only the remembered slot changes); a removed id forgets its slot and, if it was the last
/// used, the remembered one.
pub struct LastUsed<V> {
    slots: Vec<Option<V>>,
    index: IdMap<usize>,
    /// The id used last and its slot; id 0 (no task's, `place::is_task_tid`): none.
    last: (i32, usize),
}

impl<V> Default for LastUsed<V> {
    fn default() -> Self {
        LastUsed { slots: Vec::new(), index: IdMap::default(), last: (0, 0) }
    }
}

impl<V> LastUsed<V> {
    #[inline]
    pub fn get_mut(&mut self, id: i32) -> Option<&mut V> {
        if self.last.0 == id && id != 0 {
            return self.slots.get_mut(self.last.1).and_then(Option::as_mut);
        }
        self.get_mut_by_hash(id)
    }

    #[inline(never)]
    fn get_mut_by_hash(&mut self, id: i32) -> Option<&mut V> {
        let i = *self.index.get(&id)?;
        self.last = (id, i);
        self.slots[i].as_mut()
    }

    pub fn contains_key(&self, id: i32) -> bool {
        self.index.contains_key(&id)
    }

    /// Puts `v` under `id` (in place of what was there).
    pub fn insert(&mut self, id: i32, v: V) {
        if let Some(&i) = self.index.get(&id) {
            self.slots[i] = Some(v);
            return;
        }
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.slots[i] = Some(v);
        self.index.insert(id, i);
    }

    pub fn remove(&mut self, id: i32) -> Option<V> {
        let i = self.index.remove(&id)?;
        if self.last.0 == id {
            self.last = (0, 0);
        }
        self.slots[i].take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_spread_over_the_high_bits() {
        let top = |id: i32| {
            let mut h = IdHasher::default();
            h.write_i32(id);
            h.finish() >> 57
        };
        let distinct: std::collections::HashSet<u64> = (1..=64).map(top).collect();
        assert!(distinct.len() > 32, "{} distinct top-7-bit values of 64 ids", distinct.len());
        let mut m: IdMap<i32> = IdMap::default();
        for i in 0..1000 {
            m.insert(i, -i);
        }
        assert!((0..1000).all(|i| m[&i] == -i));
    }

    #[test]
    fn the_last_used_entry_is_the_one_asked_for_through_removals_and_reuse() {
        let mut m: LastUsed<String> = LastUsed::default();
        assert!(m.get_mut(0).is_none() && m.get_mut(5).is_none());
        m.insert(5, "five".into());
        m.insert(6, "six".into());
        assert_eq!(m.get_mut(5).map(|v| v.as_str()), Some("five"));
        assert_eq!(m.get_mut(5).map(|v| v.as_str()), Some("five"), "remembered");
        // The remembered id removed, its slot taken by another id: not found under the old id.
        assert_eq!(m.remove(5).as_deref(), Some("five"));
        m.insert(7, "seven".into());
        assert!(m.get_mut(5).is_none(), "a removed id is forgotten");
        assert_eq!(m.get_mut(7).map(|v| v.as_str()), Some("seven"));
        // The same id again (a tid reused), a new value: the new one, not the one before.
        assert_eq!(m.remove(7).as_deref(), Some("seven"));
        m.insert(7, "seven again".into());
        assert_eq!(m.get_mut(7).map(|v| v.as_str()), Some("seven again"));
        m.insert(7, "replaced".into());
        assert_eq!(m.get_mut(7).map(|v| v.as_str()), Some("replaced"));
        assert_eq!(m.get_mut(6).map(|v| v.as_str()), Some("six"));
        assert!(m.contains_key(6) && !m.contains_key(5));
    }
}

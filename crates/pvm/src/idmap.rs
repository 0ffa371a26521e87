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
}

//! The regions attached to a dynamic window (MPI_Win_create_dynamic) whose members all run on
//! one host, published in the window's node segment so an origin can reach them itself: each
//! member's part of the segment holds a table of its attached regions that only it writes
//! (MPI_Win_attach, MPI_Win_detach), and every origin keeps a copy of each target's table,
//! read again when the table's generation word moved. An operation whose target bytes lie in
//! a region of the copy is done by the origin as on a created window whose pages stay private
//! (`single_copy.rs`: put and get by single copy, accumulates through the handler or withdrawn);
//! any other goes to the target's handler, which checks it against the regions themselves and
//! reports what is not attached (so a full table only costs speed).
//!
//! # Layout of a member's part (native-endian)
//!
//! ```text
//! 0    generation (AtomicU64): even when the table is whole, odd while its owner rewrites it
//! 8    count (AtomicU64): entries in use, at most SLOTS
//! 16   SLOTS entries: start address (AtomicU64), length in bytes (AtomicU64)
//! ```
//!
//! A sequence lock (as Linux's seqcount): the owner makes the generation odd, rewrites the
//! entries, and makes it even again with Release; a reader that sees the same even generation
//! before and after copying the entries has a whole table. MPI forbids an origin to reach a
//! region while its owner detaches it (MPI 3.1 section 11.2.4), so a copy that still lists a
//! region being detached is the program's race, not ours.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::segment::Segment;

/// Regions a member publishes; more attached ones stay reachable through its handler.
pub(super) const SLOTS: usize = 62;
/// Bytes of a member's part of a dynamic window's node segment.
pub(super) const TABLE_BYTES: usize = 16 + 16 * SLOTS;

/// The words of member `rank`'s table in `seg`.
fn words(seg: &Segment, rank: usize) -> &[AtomicU64] {
    let (at, bytes) = seg.part(rank);
    debug_assert!(bytes >= TABLE_BYTES);
    // SAFETY: the part is TABLE_BYTES of the shared mapping, 64-byte aligned, used only
    // atomically (module comment), alive as long as `seg`.
    unsafe { std::slice::from_raw_parts(at as *const AtomicU64, TABLE_BYTES / 8) }
}

/// Rewrites this member's table with `regions` (start, length): the first SLOTS of them.
pub(super) fn publish(seg: &Segment, regions: &[(usize, usize)]) {
    write(words(seg, seg.me()), regions)
}

/// Rewrites the table in `w` (module comment).
fn write(w: &[AtomicU64], regions: &[(usize, usize)]) {
    let generation = w[0].load(Ordering::Relaxed);
    w[0].store(generation + 1, Ordering::Relaxed);
    // The odd generation is visible before any entry changes.
    fence(Ordering::Release);
    let shown = regions.len().min(SLOTS);
    for (i, &(at, len)) in regions[..shown].iter().enumerate() {
        w[2 + 2 * i].store(at as u64, Ordering::Relaxed);
        w[3 + 2 * i].store(len as u64, Ordering::Relaxed);
    }
    w[1].store(shown as u64, Ordering::Relaxed);
    w[0].store(generation + 2, Ordering::Release);
}

/// An origin's copy of every target's table.
pub(super) struct Seen {
    /// Per target: the generation copied (odd: none yet), and its regions.
    tables: Vec<(u64, Vec<(usize, usize)>)>,
}

impl Seen {
    pub fn new(ranks: usize) -> Seen {
        Seen { tables: (0..ranks).map(|_| (1, Vec::new())).collect() }
    }

    /// Whether bytes `[lo, hi)` (addresses in `target`) lie inside one region `target` has
    /// attached, as its table says now.
    #[inline]
    pub fn covers(&mut self, seg: &Segment, target: usize, lo: i64, hi: i64) -> bool {
        self.covers_in(words(seg, target), target, lo, hi)
    }

    #[inline]
    fn covers_in(&mut self, w: &[AtomicU64], target: usize, lo: i64, hi: i64) -> bool {
        let (Ok(lo), Ok(hi)) = (usize::try_from(lo), usize::try_from(hi)) else { return false };
        let (seen, regions) = &mut self.tables[target];
        if w[0].load(Ordering::Acquire) != *seen {
            reread(w, seen, regions);
        }
        regions.iter().any(|&(at, len)| lo >= at && hi <= at + len)
    }
}

/// Copies the table in `w` into `regions`, `seen` its generation. Its owner rewrites it in a
/// few stores and never waits meanwhile, so a reader that meets a rewrite tries again (yielding
/// after a while: the owner may have lost its core); falling back to the handler instead would
/// let this operation overtake earlier ones on the same bytes that the origin did itself.
#[cold]
fn reread(w: &[AtomicU64], seen: &mut u64, regions: &mut Vec<(usize, usize)>) {
    let mut tries = 0u32;
    loop {
        let generation = w[0].load(Ordering::Acquire);
        if generation.is_multiple_of(2) {
            let count = (w[1].load(Ordering::Relaxed) as usize).min(SLOTS);
            regions.clear();
            regions.extend((0..count).map(|i| {
                (w[2 + 2 * i].load(Ordering::Relaxed) as usize, w[3 + 2 * i].load(Ordering::Relaxed) as usize)
            }));
            // The entries are read before the generation is checked again.
            fence(Ordering::Acquire);
            if w[0].load(Ordering::Relaxed) == generation {
                *seen = generation;
                return;
            }
        }
        tries += 1;
        if tries.is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<AtomicU64> {
        (0..TABLE_BYTES / 8).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn an_origin_sees_attaches_and_detaches_through_the_generation() {
        let w = table();
        let mut seen = Seen::new(1);
        assert!(!seen.covers_in(&w, 0, 0x1000, 0x1008), "an empty table covers nothing");
        write(&w, &[(0x1000, 64), (0x9000, 8)]);
        assert!(seen.covers_in(&w, 0, 0x1000, 0x1040));
        assert!(seen.covers_in(&w, 0, 0x9000, 0x9008));
        assert!(!seen.covers_in(&w, 0, 0x1038, 0x1048), "bytes past a region's end");
        assert!(!seen.covers_in(&w, 0, -8, 0), "negative addresses");
        write(&w, &[(0x9000, 8)]);
        assert!(!seen.covers_in(&w, 0, 0x1000, 0x1008), "a detached region, after the copy was made");
        assert!(seen.covers_in(&w, 0, 0x9000, 0x9008));
    }

    #[test]
    fn regions_beyond_the_slots_are_not_published() {
        let w = table();
        let many: Vec<(usize, usize)> = (0..SLOTS + 3).map(|i| (0x10000 * (i + 1), 16)).collect();
        write(&w, &many);
        let mut seen = Seen::new(1);
        assert!(seen.covers_in(&w, 0, 0x10000 * SLOTS as i64, 0x10000 * SLOTS as i64 + 16));
        assert!(!seen.covers_in(&w, 0, 0x10000 * (SLOTS as i64 + 1), 0x10000 * (SLOTS as i64 + 1) + 8));
    }

    /// A writer rewrites the table as fast as it can, each version j listing regions
    /// (j * 0x1000 + i * 0x10, 0x10) for i < 1 + j % 5; a reader checking the copy it got
    /// must never see a mix of two versions.
    #[test]
    fn a_reader_never_copies_a_table_being_rewritten() {
        let w: &'static [AtomicU64] = Box::leak(table().into_boxed_slice());
        let writer = std::thread::spawn(move || {
            for j in 1..20_000usize {
                let regions: Vec<(usize, usize)> = (0..1 + j % 5).map(|i| (j * 0x1000 + i * 0x10, 0x10)).collect();
                write(w, &regions);
            }
        });
        let mut seen = Seen::new(1);
        while !writer.is_finished() {
            seen.covers_in(w, 0, 0, 1);
            let regions = &seen.tables[0].1;
            if let Some(&(first, _)) = regions.first() {
                let j = first / 0x1000;
                assert_eq!(regions.len(), 1 + j % 5, "a torn copy: {regions:x?}");
                for (i, &(at, len)) in regions.iter().enumerate() {
                    assert_eq!((at, len), (j * 0x1000 + i * 0x10, 0x10), "a torn copy: {regions:x?}");
                }
            }
        }
        writer.join().expect("the writer");
    }
}

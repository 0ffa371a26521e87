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
//! 16   the owner's MPI_Alloc_mem arena (`arena.rs`): its descriptor + 1 (0: none)
//! 24   reserved (0)
//! 32   SLOTS entries of five AtomicU64: start address, length in bytes, the arena chunk
//!      holding the region: its offset in the file + 1 (0: the region is not in one chunk
//!      of the arena), its length, and the region's offset in it
//! ```
//!
//! A sequence lock (as Linux's seqcount): the owner makes the generation odd, rewrites the
//! entries, and makes it even again with Release; a reader that sees the same even generation
//! before and after copying the entries has a whole table. MPI forbids an origin to reach a
//! region while its owner detaches it (MPI 3.1 section 11.2.4), so a copy that still lists a
//! region being detached is the program's race, not ours.
//!
//! # Mapped regions
//!
//! A region in the arena is reached by plain loads and stores: the origin maps its chunk
//! (`arena::map_peer_file`) on the first operation there and keeps the mapping while the
//! target's table lists a region in that chunk; a new generation without one unmaps it
//! (MPI_Win_detach, then MPI_Free_mem), and so does the window's end. Chunks' ranges of the
//! file are never reused (`arena.rs`), so a mapping kept across a detach and a new attach
//! still shows the file's bytes at its offset.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::segment::Segment;

/// Regions a member publishes; more attached ones stay reachable through its handler.
pub(super) const SLOTS: usize = 62;
/// Words of an entry.
const ENTRY: usize = 5;
/// Bytes of a member's part of a dynamic window's node segment.
pub(super) const TABLE_BYTES: usize = 32 + 8 * ENTRY * SLOTS;

/// Operations done on mapped regions of dynamic windows by this process (MPI_T
/// `bb_rma_mapped_operations`).
pub(crate) static MAPPED_OPERATIONS: AtomicU64 = AtomicU64::new(0);

/// Counts one operation on a mapped region: a load and a store, not a read-modify-write on
/// the fast path (threads of MPI_THREAD_MULTIPLE may lose a count; it is a measure, not a
/// sum anything depends on).
#[inline(always)]
pub(super) fn count_mapped() {
    MAPPED_OPERATIONS.store(MAPPED_OPERATIONS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// The words of member `rank`'s table in `seg`.
fn words(seg: &Segment, rank: usize) -> &[AtomicU64] {
    let (at, bytes) = seg.part(rank);
    debug_assert!(bytes >= TABLE_BYTES);
    // SAFETY: the part is TABLE_BYTES of the shared mapping, 64-byte aligned, used only
    // atomically (module comment), alive as long as `seg`.
    unsafe { std::slice::from_raw_parts(at as *const AtomicU64, TABLE_BYTES / 8) }
}

/// A region as a table lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Region {
    pub at: usize,
    pub len: usize,
    /// Its arena chunk (offset in the file, length) and its offset there, if in one.
    pub chunk: Option<(u64, usize, usize)>,
}

impl Region {
    /// A region of this process, with where it lies in the arena.
    pub fn here(at: usize, len: usize) -> Region {
        let chunk = super::arena::place(at, len).map(|p| (p.chunk_file, p.chunk_len, p.offset));
        Region { at, len, chunk }
    }
}

/// Rewrites this member's table with `regions`: the first SLOTS of them.
pub(super) fn publish(seg: &Segment, regions: &[(usize, usize)]) {
    let listed: Vec<Region> = regions.iter().take(SLOTS).map(|&(at, len)| Region::here(at, len)).collect();
    let arena = super::arena::descriptor().map_or(0, |fd| fd as u64 + 1);
    write(words(seg, seg.me()), arena, &listed)
}

/// Rewrites the table in `w` (module comment); `arena` is the descriptor + 1 (0: none).
fn write(w: &[AtomicU64], arena: u64, regions: &[Region]) {
    let generation = w[0].load(Ordering::Relaxed);
    w[0].store(generation + 1, Ordering::Relaxed);
    // The odd generation is visible before any entry changes.
    fence(Ordering::Release);
    let shown = regions.len().min(SLOTS);
    for (i, r) in regions[..shown].iter().enumerate() {
        let e = &w[4 + ENTRY * i..4 + ENTRY * (i + 1)];
        let (file, len, offset) = r.chunk.map_or((0, 0, 0), |(f, l, o)| (f + 1, l as u64, o as u64));
        for (word, value) in e.iter().zip([r.at as u64, r.len as u64, file, len, offset]) {
            word.store(value, Ordering::Relaxed);
        }
    }
    w[1].store(shown as u64, Ordering::Relaxed);
    w[2].store(arena, Ordering::Relaxed);
    w[0].store(generation + 2, Ordering::Release);
}

/// One target's table as an origin copied it, and the chunks of its arena mapped here.
struct Table {
    /// The generation copied (odd: none yet).
    seen: u64,
    regions: Vec<Region>,
    /// The target's arena descriptor + 1 (0: none).
    arena: u64,
    /// Chunks mapped here: (offset in the file, length, address here).
    mapped: Vec<(u64, usize, usize)>,
    /// Mapping the target's chunks failed once: its regions are reached by single copy.
    unmappable: bool,
}

/// An origin's copy of every target's table.
pub(super) struct Seen {
    tables: Vec<Table>,
    me: usize,
}

// SAFETY: addresses of mappings this value owns; nothing in it is a thread's own.
unsafe impl Send for Seen {}

impl Seen {
    pub fn new(ranks: usize, me: usize) -> Seen {
        let table = || Table { seen: 1, regions: Vec::new(), arena: 0, mapped: Vec::new(), unmappable: false };
        Seen { tables: (0..ranks).map(|_| table()).collect(), me }
    }

    /// Whether bytes `[lo, hi)` (addresses in `target`) lie inside one region `target` has
    /// attached, as its table says now.
    #[inline]
    pub fn covers(&mut self, seg: &Segment, target: usize, lo: i64, hi: i64) -> bool {
        self.find(words(seg, target), target, lo, hi).is_some()
    }

    /// Whether `target` may have regions this process maps: itself, or a process whose table
    /// listed an arena when last read (one made since shows at the next read, which the
    /// general path's check of the regions makes; meanwhile single copies are as right).
    /// Keeps the lookup off the operations on windows of malloc'd memory.
    #[inline(always)]
    pub fn may_map(&self, target: usize) -> bool {
        target == self.me || self.tables[target].arena != 0
    }

    /// Where bytes `[lo, hi)` of `target` (process `pid`) are here, if they lie inside one
    /// region it attached that this process reaches by loads and stores: its own, or one in
    /// its arena, whose chunk is mapped here on the first call.
    #[inline]
    pub fn mapped(&mut self, seg: &Segment, target: usize, pid: u64, lo: usize, hi: usize) -> Option<*mut u8> {
        let (Ok(l), Ok(h)) = (i64::try_from(lo), i64::try_from(hi)) else { return None };
        let i = self.find(words(seg, target), target, l, h)?;
        if target == self.me {
            return Some(lo as *mut u8);
        }
        let t = &mut self.tables[target];
        let r = t.regions[i];
        let (file, len, offset) = r.chunk?;
        let at = match t.mapped.iter().find(|m| m.0 == file && m.1 == len) {
            Some(m) => m.2,
            None => t.map(pid, file, len)?,
        };
        Some((at + offset + (lo - r.at)) as *mut u8)
    }

    /// The index of the region holding `[lo, hi)` in `target`'s table as it is now.
    #[inline]
    fn find(&mut self, w: &[AtomicU64], target: usize, lo: i64, hi: i64) -> Option<usize> {
        let (Ok(lo), Ok(hi)) = (usize::try_from(lo), usize::try_from(hi)) else { return None };
        let t = &mut self.tables[target];
        if w[0].load(Ordering::Acquire) != t.seen {
            t.reread(w);
        }
        t.regions.iter().position(|r| lo >= r.at && hi <= r.at + r.len)
    }
}

impl Table {
    /// Copies the table in `w`, then unmaps the chunks it no longer lists. Its owner rewrites
    /// it in a few stores and never waits meanwhile, so a reader that meets a rewrite tries
    /// again (yielding after a while: the owner may have lost its core); falling back to the
    /// handler instead would let this operation overtake earlier ones on the same bytes that
    /// the origin did itself.
    #[cold]
    fn reread(&mut self, w: &[AtomicU64]) {
        let mut tries = 0u32;
        loop {
            let generation = w[0].load(Ordering::Acquire);
            if generation.is_multiple_of(2) {
                let count = (w[1].load(Ordering::Relaxed) as usize).min(SLOTS);
                self.arena = w[2].load(Ordering::Relaxed);
                self.regions.clear();
                self.regions.extend((0..count).map(|i| {
                    let e: Vec<u64> =
                        w[4 + ENTRY * i..4 + ENTRY * (i + 1)].iter().map(|x| x.load(Ordering::Relaxed)).collect();
                    let chunk = (e[2] != 0).then(|| (e[2] - 1, e[3] as usize, e[4] as usize));
                    Region { at: e[0] as usize, len: e[1] as usize, chunk }
                }));
                // The entries are read before the generation is checked again.
                fence(Ordering::Acquire);
                if w[0].load(Ordering::Relaxed) == generation {
                    self.seen = generation;
                    break;
                }
            }
            tries += 1;
            if tries.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if self.arena == 0 {
            self.regions.iter_mut().for_each(|r| r.chunk = None);
        }
        let regions = &self.regions;
        self.mapped.retain(|&(file, len, at)| {
            let listed = regions.iter().any(|r| r.chunk.is_some_and(|c| (c.0, c.1) == (file, len)));
            if !listed {
                unmap(at, len);
            }
            listed
        });
    }

    /// Maps the target's chunk at `file` (`len` bytes); `None`: refused (then never again).
    #[cold]
    fn map(&mut self, pid: u64, file: u64, len: usize) -> Option<usize> {
        if self.unmappable || self.arena == 0 {
            return None;
        }
        let fd = (self.arena - 1) as i32;
        match super::arena::map_peer_file(pid, fd, file, len) {
            Some(at) => {
                super::remap::record_view(at, len);
                self.mapped.push((file, len, at));
                Some(at)
            }
            None => {
                self.unmappable = true;
                report(pid);
                None
            }
        }
    }
}

/// Says once, under `BB_VERBOSE`, that a target's arena could not be mapped.
#[cold]
fn report(pid: u64) {
    static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if billboard::VERBOSE.get() != 0 && !REPORTED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "billboard MPI: cannot map process {pid}'s MPI_Alloc_mem memory (/proc/{pid}/fd refused); its \
             regions of dynamic windows are reached by single copies"
        );
    }
}

fn unmap(at: usize, len: usize) {
    super::remap::forget_view(at, len);
    // SAFETY: a mapping made in `Table::map`, unmapped once.
    unsafe { libc::munmap(at as *mut libc::c_void, len) };
}

impl Drop for Seen {
    fn drop(&mut self) {
        for t in &mut self.tables {
            for (_, len, at) in t.mapped.drain(..) {
                unmap(at, len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(regions: &[(usize, usize)]) -> Vec<Region> {
        regions.iter().map(|&(at, len)| Region { at, len, chunk: None }).collect()
    }

    fn covers(seen: &mut Seen, w: &[AtomicU64], lo: i64, hi: i64) -> bool {
        seen.find(w, 0, lo, hi).is_some()
    }

    fn table() -> Vec<AtomicU64> {
        (0..TABLE_BYTES / 8).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn an_origin_sees_attaches_and_detaches_through_the_generation() {
        let w = table();
        let mut seen = Seen::new(1, 0);
        assert!(!covers(&mut seen, &w, 0x1000, 0x1008), "an empty table covers nothing");
        write(&w, 0, &listed(&[(0x1000, 64), (0x9000, 8)]));
        assert!(covers(&mut seen, &w, 0x1000, 0x1040));
        assert!(covers(&mut seen, &w, 0x9000, 0x9008));
        assert!(!covers(&mut seen, &w, 0x1038, 0x1048), "bytes past a region's end");
        assert!(!covers(&mut seen, &w, -8, 0), "negative addresses");
        write(&w, 0, &listed(&[(0x9000, 8)]));
        assert!(!covers(&mut seen, &w, 0x1000, 0x1008), "a detached region, after the copy was made");
        assert!(covers(&mut seen, &w, 0x9000, 0x9008));
    }

    #[test]
    fn regions_beyond_the_slots_are_not_published() {
        let w = table();
        let many: Vec<(usize, usize)> = (0..SLOTS + 3).map(|i| (0x10000 * (i + 1), 16)).collect();
        write(&w, 0, &listed(&many));
        let mut seen = Seen::new(1, 0);
        assert!(covers(&mut seen, &w, 0x10000 * SLOTS as i64, 0x10000 * SLOTS as i64 + 16));
        assert!(!covers(&mut seen, &w, 0x10000 * (SLOTS as i64 + 1), 0x10000 * (SLOTS as i64 + 1) + 8));
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
                write(w, 0, &listed(&regions));
            }
        });
        let mut seen = Seen::new(1, 0);
        while !writer.is_finished() {
            covers(&mut seen, w, 0, 1);
            let regions: Vec<(usize, usize)> = seen.tables[0].regions.iter().map(|r| (r.at, r.len)).collect();
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

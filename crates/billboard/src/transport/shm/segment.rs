//! The node-wide segment: creation, mapping, layout, unlinking.
//!
//! Layout (all offsets from the start of the mapping; pinned by [`Layout`] and the assertions
//! below). Every word has exactly one writer, named in brackets.
//!
//! ```text
//! 0        SegmentHeader (4 KiB)                           [creator, before anyone maps]
//! 4096     partition 0 | partition 1 | ... | partition n-1  (part_bytes each, 4 KiB aligned)
//!
//! partition p:
//!   +0                Control: pid, sleep word               [p; sleep word: see wait.rs]
//!   +256              doorbell[s] u64 for each sender s      [s] packed: a silent poll reads
//!                                                            ceil(n/16) lines, not n rings
//!   +door_end         Returns[r], 128 B each                 [r] r's consumed position in ring
//!                                                            p->r, and r's count of p's slots read
//!   +claims           claims[s], 128 B each: 16 claim words  [p and s, compare-and-swap] pages
//!                     of messages from s that both copy      of a shared copy (engine/claims.rs)
//!   +rings            ring[s], ring_bytes each: cells from s to p  [s]
//!   +data             slots x slot_bytes: p's data part      [p]
//!   +board            BOARD_SLOTS x BOARD_SLOT_BYTES: p's    [p] the collectives' board
//!                     lines (layout inside a slot: coll/board.rs)
//! ```
//!
//! The header also carries the creator's `crowded` flag (ranks outnumber cores), so every
//! mapper takes the same value and all ranks of a host choose from the same tables.

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{FallocateFlags, Mode};
use rustix::mm::{MapFlags, ProtFlags};
use rustix::shm;

use crate::sync::{AtomicU64, Ordering};
use crate::{Error, Result};

const MAGIC: u64 = u64::from_le_bytes(*b"BBOARD01");
const VERSION: u32 = 6;
const HEADER_BYTES: usize = 4096;
const CONTROL_BYTES: usize = 256;
pub(crate) const LINE: usize = 128;
/// Claim words per (sender, receiver) pair: shared copies in flight between them at once.
pub(crate) const CLAIM_WORDS: usize = LINE / 8;
const PAGE: usize = 4096;
/// Board slots per rank: communicators that can hold one at once (coll/board.rs).
pub(crate) const BOARD_SLOTS: usize = 8;
/// Bytes of one lane of a board slot: a line for its read mark, 64 header lines and 32 data
/// areas of 2 KiB (coll/board.rs lays them out and says why 32): 72 KiB.
pub(crate) const BOARD_LANE_BYTES: usize = LINE + 64 * LINE + 32 * 2048;
/// Bytes of one rank's board slot: two lanes, the blocking collectives' and the nonblocking
/// ones' (each with epochs of its own, coll/board.rs says why): 144 KiB, 1,154 KiB a rank.
pub(crate) const BOARD_SLOT_BYTES: usize = 2 * BOARD_LANE_BYTES;

/// The segment header, written once by the creator before any other rank maps.
#[repr(C)]
struct SegmentHeader {
    magic: AtomicU64,
    version: u32,
    nranks: u32,
    ring_bytes: u64,
    slot_bytes: u64,
    slots: u64,
    part_bytes: u64,
    total_bytes: u64,
    /// 1 if ranks outnumber cores on this host, as the creator found it. [creator]
    crowded: u64,
}

/// Per-rank control words, each on its own 128-byte line.
#[repr(C, align(128))]
pub(crate) struct Control {
    /// The owner's process id, for `process_vm_readv`. [owner]
    pub pid: AtomicU64,
    _pad0: [u8; LINE - 8],
    /// 1 while the owner sleeps (or is about to) on this futex word. See `wait.rs`.
    pub sleep: std::sync::atomic::AtomicU32,
    _pad1: [u8; LINE - 4],
}

/// What receiver r returns to sender p, in p's partition, written only by r.
#[repr(C, align(128))]
pub(crate) struct Returns {
    /// Cells of ring p->r that r has consumed (lazily published: credits).
    pub consumed: AtomicU64,
    /// Slot descriptors of p that r has finished reading (ACKs, in posting order).
    pub acked: AtomicU64,
    /// Non-zero once r has closed its end of the pair: it reads nothing more p sends (it
    /// failed p, or p's records broke the protocol), stored after r's last record to p, so p,
    /// having seen it, finds every such record in its ring first ([`super::CLOSED`]).
    pub closed: AtomicU64,
    _pad: [u8; LINE - 24],
}

// Under loom the atomics are loom's bigger types; the layout is pinned for the real ones.
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Control>() == CONTROL_BYTES);
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Returns>() == LINE);
const _: () = assert!(std::mem::size_of::<SegmentHeader>() <= HEADER_BYTES);

/// Sizes and offsets, derived from the rank count and the tunables; identical in every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub nranks: usize,
    pub ring_bytes: usize,
    pub slot_bytes: usize,
    pub slots: usize,
    pub doorbell_off: usize,
    pub returns_off: usize,
    pub claims_off: usize,
    pub rings_off: usize,
    pub data_off: usize,
    pub board_off: usize,
    pub part_bytes: usize,
    pub total_bytes: usize,
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl Layout {
    pub fn new(nranks: usize, ring_bytes: usize, slot_bytes: usize, slots: usize) -> Layout {
        // A power of two, so ring positions map to cells with a mask instead of a division.
        let ring_bytes = ring_bytes.max(1024).next_power_of_two();
        let slot_bytes = round_up(slot_bytes.max(PAGE), PAGE);
        let doorbell_off = CONTROL_BYTES;
        let returns_off = round_up(doorbell_off + 8 * nranks, LINE);
        let claims_off = returns_off + LINE * nranks;
        let rings_off = claims_off + LINE * nranks;
        let data_off = round_up(rings_off + ring_bytes * nranks, PAGE);
        let board_off = data_off + slot_bytes * slots;
        let part_bytes = round_up(board_off + BOARD_SLOTS * BOARD_SLOT_BYTES, PAGE);
        let total_bytes = HEADER_BYTES + part_bytes * nranks;
        Layout {
            nranks,
            ring_bytes,
            slot_bytes,
            slots,
            doorbell_off,
            returns_off,
            claims_off,
            rings_off,
            data_off,
            board_off,
            part_bytes,
            total_bytes,
        }
    }
}

/// A mapped segment. Unmapped on drop.
pub(crate) struct Segment {
    base: NonNull<u8>,
    pub layout: Layout,
    name: String,
    unlinked: bool,
}

impl Segment {
    /// Creates the segment (`O_EXCL`, mode 0600), reserves its pages so a full `/dev/shm` is an
    /// error now rather than a SIGBUS later, maps it and writes the header.
    pub fn create(name: &str, layout: Layout, crowded: bool) -> Result<Segment> {
        check_free_space(layout.total_bytes)?;
        let fd = shm::open(name, shm::OFlags::CREATE | shm::OFlags::EXCL | shm::OFlags::RDWR, Mode::RUSR | Mode::WUSR)
            .map_err(|e| Error::SharedMemory(format!("cannot create /dev/shm{name}: {e}")))?;
        let reserve = rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, layout.total_bytes as u64)
            .or_else(|_| rustix::fs::ftruncate(&fd, layout.total_bytes as u64));
        if let Err(e) = reserve {
            let _ = shm::unlink(name);
            return Err(Error::SharedMemory(format!(
                "cannot reserve {} for /dev/shm{name}: {e}; {}",
                mib(layout.total_bytes),
                SPACE_FIX
            )));
        }
        let seg = Segment::map(fd, name, layout).inspect_err(|_| {
            let _ = shm::unlink(name);
        })?;
        let h = seg.header();
        // SAFETY: nobody else maps the segment before the name is published after this returns.
        unsafe {
            let hp = h as *const SegmentHeader as *mut SegmentHeader;
            (*hp).version = VERSION;
            (*hp).nranks = layout.nranks as u32;
            (*hp).ring_bytes = layout.ring_bytes as u64;
            (*hp).slot_bytes = layout.slot_bytes as u64;
            (*hp).slots = layout.slots as u64;
            (*hp).part_bytes = layout.part_bytes as u64;
            (*hp).total_bytes = layout.total_bytes as u64;
            (*hp).crowded = crowded as u64;
        }
        h.magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Maps a segment another rank created and checks that its header matches `layout`.
    pub fn open(name: &str, layout: Layout) -> Result<Segment> {
        let fd = shm::open(name, shm::OFlags::RDWR, Mode::empty())
            .map_err(|e| Error::SharedMemory(format!("cannot open /dev/shm{name}: {e}")))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::os("fstat", e))?;
        if (st.st_size as usize) < layout.total_bytes {
            return Err(Error::SharedMemory(format!(
                "/dev/shm{name} has {} bytes, this rank expects {}: ranks disagree on BB_SHM_* settings",
                st.st_size, layout.total_bytes
            )));
        }
        let seg = Segment::map(fd, name, layout)?;
        let h = seg.header();
        let expect =
            (VERSION, layout.nranks as u32, layout.ring_bytes as u64, layout.slot_bytes as u64, layout.slots as u64);
        let found = (h.version, h.nranks, h.ring_bytes, h.slot_bytes, h.slots);
        if h.magic.load(Ordering::Acquire) != MAGIC || found != expect {
            return Err(Error::SharedMemory(format!(
                "/dev/shm{name} has layout (version, ranks, ring, slot, slots) = {found:?}, expected {expect:?}: \
                 ranks of one job must run the same library with the same BB_SHM_* settings"
            )));
        }
        Ok(seg)
    }

    fn map(fd: OwnedFd, name: &str, layout: Layout) -> Result<Segment> {
        // SAFETY: a fresh shared mapping of a file we opened; we never hand out references to
        // it except through the typed accessors below.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                layout.total_bytes,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                0,
            )
        }
        .map_err(|e| Error::SharedMemory(format!("cannot map /dev/shm{name} ({}): {e}", mib(layout.total_bytes))))?;
        Ok(Segment {
            base: NonNull::new(ptr.cast()).expect("mmap returned null"),
            layout,
            name: name.to_string(),
            unlinked: false,
        })
    }

    /// The name it was created under (unique on the host).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Removes the name: the memory lives on while mapped, and a crash leaves nothing behind.
    pub fn unlink(&mut self) {
        if !self.unlinked {
            let _ = shm::unlink(self.name.as_str());
            self.unlinked = true;
        }
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: the header lies at offset 0 of a mapping of at least HEADER_BYTES.
        unsafe { &*(self.base.as_ptr() as *const SegmentHeader) }
    }

    /// Whether ranks outnumber cores on this host, as the segment's creator found it: every
    /// rank takes this value, so that all choose collective algorithms from the same table.
    pub fn crowded(&self) -> bool {
        self.header().crowded != 0
    }

    /// First byte of board slot `i` of rank `p` ([`BOARD_SLOT_BYTES`] long, 128-byte aligned).
    pub fn board(&self, p: usize, i: usize) -> *mut u8 {
        assert!(i < BOARD_SLOTS);
        // SAFETY: in bounds by construction of the layout.
        unsafe { self.partition(p).add(self.layout.board_off + BOARD_SLOT_BYTES * i) }
    }

    /// Start of rank `p`'s partition.
    pub fn partition(&self, p: usize) -> *mut u8 {
        assert!(p < self.layout.nranks);
        // SAFETY: in bounds by construction of the layout.
        unsafe { self.base.as_ptr().add(HEADER_BYTES + p * self.layout.part_bytes) }
    }

    pub fn control(&self, p: usize) -> &Control {
        // SAFETY: Control sits at the start of each partition, 128-byte aligned.
        unsafe { &*(self.partition(p) as *const Control) }
    }

    /// Doorbell word of sender `s` in receiver `r`'s partition.
    pub fn doorbell(&self, r: usize, s: usize) -> &AtomicU64 {
        assert!(s < self.layout.nranks);
        // SAFETY: within the doorbell array of partition r; u64-aligned.
        unsafe { &*(self.partition(r).add(self.layout.doorbell_off + 8 * s) as *const AtomicU64) }
    }

    /// What receiver `r` returns to sender `p` (in `p`'s partition).
    pub fn returns(&self, p: usize, r: usize) -> &Returns {
        assert!(r < self.layout.nranks);
        // SAFETY: within the returns array of partition p; 128-byte aligned.
        unsafe { &*(self.partition(p).add(self.layout.returns_off + LINE * r) as *const Returns) }
    }

    /// Claim word `k` (of [`CLAIM_WORDS`]) of the copies shared by sender `s` and receiver
    /// `r`, in `r`'s partition.
    pub fn claim(&self, r: usize, s: usize, k: usize) -> &AtomicU64 {
        assert!(s < self.layout.nranks && k < CLAIM_WORDS);
        // SAFETY: within the claims array of partition r; u64-aligned.
        unsafe { &*(self.partition(r).add(self.layout.claims_off + LINE * s + 8 * k) as *const AtomicU64) }
    }

    /// First byte of the ring from sender `s` into receiver `r`.
    pub fn ring(&self, r: usize, s: usize) -> *mut u8 {
        assert!(s < self.layout.nranks);
        // SAFETY: in bounds by construction of the layout.
        unsafe { self.partition(r).add(self.layout.rings_off + self.layout.ring_bytes * s) }
    }

    /// First byte of slot `i` of rank `p`'s data part.
    pub fn slot(&self, p: usize, i: usize) -> *mut u8 {
        assert!(i < self.layout.slots);
        // SAFETY: in bounds by construction of the layout.
        unsafe { self.partition(p).add(self.layout.data_off + self.layout.slot_bytes * i) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping we made; no references outlive the segment because the
        // channel owning it drops its views first.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.layout.total_bytes) };
    }
}

const SPACE_FIX: &str = "free space in /dev/shm (e.g. `mount -o remount,size=2G /dev/shm`) \
                         or lower BB_SHM_RING_BYTES, BB_SHM_SLOTS or BB_SHM_SLOT_BYTES";

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn check_free_space(bytes: usize) -> Result<()> {
    let Ok(st) = rustix::fs::statvfs("/dev/shm") else { return Ok(()) };
    let free = st.f_bavail as usize * st.f_frsize as usize;
    if free < bytes {
        return Err(Error::SharedMemory(format!(
            "the job's segment needs {} in /dev/shm but only {} is free; {SPACE_FIX}",
            mib(bytes),
            mib(free)
        )));
    }
    Ok(())
}

/// A name no other job and no other user will pick: user, job id and a random part.
pub(crate) fn segment_name(job: &str) -> String {
    let user = std::env::var("USER").ok().filter(|u| !u.is_empty() && !u.contains('/'));
    let user = user.unwrap_or_else(|| rustix::process::getuid().as_raw().to_string());
    let job: String = job.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.').collect();
    format!("/bb-{user}-{job}-{:08x}", random_u32())
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    if rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty()).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return t.subsec_nanos() ^ std::process::id();
    }
    u32::from_ne_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_aligns_every_region() {
        let l = Layout::new(5, 10000, 5000, 3);
        assert_eq!(l.ring_bytes % LINE, 0);
        assert_eq!(l.slot_bytes % PAGE, 0);
        assert_eq!(l.returns_off % LINE, 0);
        assert_eq!(l.claims_off, l.returns_off + 5 * LINE);
        assert_eq!(l.rings_off, l.claims_off + 5 * LINE);
        assert_eq!(l.data_off % PAGE, 0);
        assert_eq!(l.part_bytes % PAGE, 0);
        assert!(l.doorbell_off + 8 * 5 <= l.returns_off);
        assert!(l.rings_off + 5 * l.ring_bytes <= l.data_off);
        assert_eq!(l.board_off % LINE, 0);
        assert!(l.board_off + BOARD_SLOTS * BOARD_SLOT_BYTES <= l.part_bytes);
    }

    #[test]
    fn create_open_unlink_round_trip() {
        let l = Layout::new(2, 4096, 4096, 2);
        let name = segment_name("unit");
        let mut a = Segment::create(&name, l, true).unwrap();
        let b = Segment::open(&name, l).unwrap();
        assert!(b.crowded(), "a mapper reads the creator's crowded flag");
        a.control(1).pid.store(42, Ordering::Release);
        assert_eq!(b.control(1).pid.load(Ordering::Acquire), 42);
        a.unlink();
        assert!(Segment::open(&name, l).is_err(), "the name is gone once unlinked");
        let other = Layout::new(3, 4096, 4096, 2);
        let name2 = segment_name("unit");
        let mut c = Segment::create(&name2, l, false).unwrap();
        let err = Segment::open(&name2, other).err().expect("layout mismatch is refused");
        assert!(err.to_string().contains("BB_SHM"), "{err}");
        c.unlink();
    }
}

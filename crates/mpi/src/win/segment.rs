//! The node segment of a window whose members all run on one host (MPI_Win_allocate_shared
//! always, MPI_Win_allocate when the group is on one host): one `/dev/shm` object every member
//! maps, holding every member's part of the window and the words that synchronise them
//! without the target's help (`shm_sync.rs`), so an origin reads, writes and locks a
//! target's memory itself (`direct.rs`).
//!
//! # Layout (native-endian; offsets in bytes)
//!
//! ```text
//! 0       header: magic u64 (MAGIC), layout version u64, ranks n u64, control stride u64,
//!         data offset u64 (padded to 128)
//! 128     control block of rank 0, then of rank 1, ... each `stride` bytes:
//!           +0    lock word (AtomicU64): MPI_Win_lock's reader-writer lock on this part
//!           +128  accumulate lock (AtomicU32): accumulates done by plain loads and stores
//!           +256  fences (AtomicU64): MPI_Win_fence's this rank has entered, written by it
//!           +384  atomics (AtomicU64): 1 + the rank whose part this rank is changing by CPU
//!                 atomics right now, 0 when none; written by this rank (`shm_sync.rs`)
//!           +512  posted[n] (AtomicU64): MPI_Win_post's of target t to this rank, written by t
//!           +512+8n completed[n] (AtomicU64): MPI_Win_complete's of origin o here, written by o
//!           +512+16n settled[n] (AtomicU64): the last operation of origin o sent to this rank's
//!                 handler that is settled: applied by the handler or withdrawn by o (a created
//!                 window's, `withdraw.rs`); written by both, only under this part's accumulate lock
//! data    every member's part back to back in rank order, each rounded up to 64 bytes (MPI's
//!         default for shared windows, `alloc_shared_noncontig` unset); `data` is page-aligned
//! ```
//!
//! Every word has one writer except the two locks, which are read-modify-written by whoever
//! takes them, and the settled words, which the accumulate lock guards. The two locks, the
//! fence count and the atomics word lie on lines of their own (128 bytes: adjacent-line
//! prefetch); the post/complete counters change once per epoch and share lines, as do the
//! settled words (each changes under the lock, which moves its line anyway).
//!
//! # Lifetime
//!
//! The lowest rank creates the object (`O_EXCL`, mode 0600, its pages reserved with
//! `posix_fallocate`, so a full `/dev/shm` is an error naming the size now, not a SIGBUS
//! later) and writes the header; the others map it by name and check the header; it is
//! unlinked as soon as all have mapped it, so a crash after that leaves nothing behind.

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64};

use billboard::Communicator;

use crate::abi::*;
use crate::error::{err, Res};

/// Part alignment in the object (a cache line).
const ALIGN: usize = 64;
/// Where the control blocks start (after the header).
const CONTROL_AT: usize = 128;
/// "BBWINSEG" as a word.
const MAGIC: u64 = u64::from_ne_bytes(*b"BBWINSEG");
const VERSION: u64 = 4;
/// Offsets inside a control block.
const LOCK_AT: usize = 0;
const ACC_LOCK_AT: usize = 128;
const FENCES_AT: usize = 256;
const ATOMICS_AT: usize = 384;
const COUNTERS_AT: usize = 512;

/// The mapping of a node segment; unmapped on drop (after MPI_Win_free's barrier).
pub(crate) struct Segment {
    base: *mut u8,
    len: usize,
    ranks: usize,
    /// This process's rank in the window.
    me: usize,
    /// The least elements of an accumulate folded under the lock (`BB_RMA_ACC_BULK`, read
    /// once here: a tunable's read costs a call on every accumulate).
    pub bulk: usize,
    stride: usize,
    /// Each member's part: its address here and its bytes (inside the mapping; for
    /// MPI_Win_create, where `remap.rs` maps each member's pages).
    parts: Vec<(*mut u8, usize)>,
}

// SAFETY: the mapping is memory shared with other processes already: its control words are
// only used atomically, and the parts are reached under MPI's rules for window memory, from
// whichever thread makes the call.
unsafe impl Send for Segment {}
// SAFETY: as for Send: nothing in it is a thread's own.
unsafe impl Sync for Segment {}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

impl Segment {
    /// Member `rank`'s part of the window: its address and size in bytes.
    #[inline]
    pub fn part(&self, rank: usize) -> (*mut u8, usize) {
        self.parts[rank]
    }

    /// Places every member's part elsewhere: MPI_Win_create's windows, whose pages every
    /// member maps (`remap.rs`), in a segment of synchronisation words only.
    pub fn set_parts(&mut self, parts: Vec<(*mut u8, usize)>) {
        debug_assert_eq!(parts.len(), self.ranks);
        self.parts = parts;
    }

    #[inline]
    fn control(&self, rank: usize, at: usize) -> *mut u8 {
        debug_assert!(rank < self.ranks);
        // SAFETY: inside the mapping: the control blocks lie before `data`.
        unsafe { self.base.add(CONTROL_AT + rank * self.stride + at) }
    }

    /// The reader-writer lock word of `rank`'s part (MPI_Win_lock).
    #[inline]
    pub fn lock_word(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: an 8-aligned word of the shared mapping, only ever used atomically.
        unsafe { &*(self.control(rank, LOCK_AT) as *const AtomicU64) }
    }

    /// The accumulate lock of `rank`'s part.
    #[inline]
    pub fn accumulate_lock(&self, rank: usize) -> &AtomicU32 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(rank, ACC_LOCK_AT) as *const AtomicU32) }
    }

    /// MPI_Win_fence's that `rank` has entered (written by `rank`).
    pub fn fences(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(rank, FENCES_AT) as *const AtomicU64) }
    }

    /// Which part `rank` is changing by CPU atomics now (1 + its rank; 0: none); written by `rank`.
    #[inline]
    pub fn atomics(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(rank, ATOMICS_AT) as *const AtomicU64) }
    }

    /// Members of the window.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// This process's rank in the window.
    #[inline]
    pub fn me(&self) -> usize {
        self.me
    }

    /// MPI_Win_post's of `target` to `origin` (written by `target`).
    pub fn posted(&self, origin: usize, target: usize) -> &AtomicU64 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(origin, COUNTERS_AT + 8 * target) as *const AtomicU64) }
    }

    /// MPI_Win_complete's of `origin` at `target` (written by `origin`).
    pub fn completed(&self, target: usize, origin: usize) -> &AtomicU64 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(target, COUNTERS_AT + 8 * (self.ranks + origin)) as *const AtomicU64) }
    }

    /// The last operation of `origin` sent to `target`'s handler that is settled (applied there
    /// or withdrawn by `origin`); changed only under `target`'s accumulate lock.
    #[inline]
    pub fn settled(&self, target: usize, origin: usize) -> &AtomicU64 {
        // SAFETY: as in `lock_word`.
        unsafe { &*(self.control(target, COUNTERS_AT + 8 * (2 * self.ranks + origin)) as *const AtomicU64) }
    }
}

fn os_error(what: String) -> crate::error::MpiError {
    err(MPI_ERR_NO_MEM, format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Creates (`create`) or opens the object `name` of `len` bytes and maps it.
fn map(name: &CString, len: usize, create: bool) -> Res<*mut u8> {
    let flags = if create { libc::O_CREAT | libc::O_EXCL | libc::O_RDWR } else { libc::O_RDWR };
    // SAFETY: a NUL-terminated name; the descriptor is closed below.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(os_error(format!("window memory: cannot open /dev/shm{}", name.to_string_lossy())));
    }
    let close_and = |e| {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
        if create {
            // SAFETY: the name we created.
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
        Err(e)
    };
    // SAFETY: plain system calls on our descriptor.
    if create && unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) } != 0 {
        return close_and(err(
            MPI_ERR_NO_MEM,
            format!("window memory: cannot reserve {len} bytes in /dev/shm (too little space there?)"),
        ));
    }
    // SAFETY: a shared mapping of the object; nothing else is at the returned address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return close_and(os_error(format!("window memory: cannot map {len} bytes")));
    }
    // SAFETY: the mapping keeps the object; the descriptor is no longer needed.
    unsafe { libc::close(fd) };
    Ok(p.cast())
}

/// Whether every member of `comm` runs on the host of its rank 0 (`Err` names one that does not).
pub(crate) fn one_host(comm: &Communicator) -> Res<std::result::Result<(), usize>> {
    let host = comm.host_of(0)?;
    for r in 1..comm.size() {
        if comm.host_of(r)? != host {
            return Ok(Err(r));
        }
    }
    Ok(Ok(()))
}

/// Whether `/dev/shm` has room for `bytes` more (what rank 0 sees: it decides for all).
pub(crate) fn room_for(bytes: usize) -> bool {
    let mut s: libc::statvfs = unsafe_zeroed_statvfs();
    let path = c"/dev/shm";
    // SAFETY: a NUL-terminated path and a struct of the size the call expects.
    if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
        return true;
    }
    (s.f_bavail as u128) * (s.f_frsize as u128) > bytes as u128
}

fn unsafe_zeroed_statvfs() -> libc::statvfs {
    // SAFETY: statvfs is plain integers, for which all zeros is a value.
    unsafe { std::mem::zeroed() }
}

/// The collective making of a node segment over `comm` (all on one host), this member's part
/// `size` bytes; `None` (on every member alike) when `/dev/shm` has too little room for it,
/// the bytes needed in `needed`.
pub(crate) fn allocate(size: usize, comm: &Communicator, needed: &mut usize) -> Res<Option<Segment>> {
    let (n, me) = (comm.size(), comm.rank());
    // Each member's size, and rank 0's object name (64 bytes, NUL-padded), in one exchange.
    let mut mine = [0u8; 72];
    mine[..8].copy_from_slice(&(size as u64).to_ne_bytes());
    if me == 0 {
        let name = format!("/bb-win-{}-{:08x}", std::process::id(), random());
        mine[8..8 + name.len()].copy_from_slice(name.as_bytes());
    }
    let mut all = vec![0u8; 72 * n];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (72 * r, 72)).collect();
    comm.allgatherv_bytes(&mine, &mut all, &layout)?;
    let mut parts = Vec::with_capacity(n);
    let mut at = 0usize;
    for r in 0..n {
        let bytes = u64::from_ne_bytes(all[72 * r..72 * r + 8].try_into().expect("8 bytes")) as usize;
        parts.push((at, bytes));
        at = at
            .checked_add(bytes)
            .map(|e| e.div_ceil(ALIGN) * ALIGN)
            .ok_or_else(|| err(MPI_ERR_SIZE, "window parts add up to more than the address space"))?;
    }
    let stride = (COUNTERS_AT + 24 * n).div_ceil(128) * 128;
    let data = (CONTROL_AT + n * stride).div_ceil(4096) * 4096;
    let len = data + at.max(1);
    *needed = len;
    let raw = &all[8..72];
    let name = CString::new(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(64)]).expect("no NUL inside");
    // Rank 0 creates it (or fails, or finds too little room) before anyone opens it; its flag
    // says which to all: 1 made, 0 failed, 2 no room (the caller may do without a segment).
    let no_room = me == 0 && !room_for(len);
    let base = match me {
        0 if no_room => Err(err(MPI_ERR_NO_MEM, "no room")),
        0 => map(&name, len, true),
        _ => Err(err(MPI_ERR_NO_MEM, "not mapped yet")),
    };
    if let Ok(b) = base {
        let header = [MAGIC, VERSION, n as u64, stride as u64, data as u64];
        // SAFETY: the start of our fresh mapping; nobody else maps it before the exchange below.
        unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), b as *mut u64, header.len()) };
    }
    let made = if no_room { 2 } else { base.is_ok() as u8 };
    let mut flags = vec![0u8; n];
    comm.allgatherv_bytes(&[made], &mut flags, &(0..n).map(|r| (r, 1)).collect::<Vec<_>>())?;
    let base = match base {
        Ok(b) => b,
        Err(_) if flags[0] == 2 => return Ok(None),
        Err(e) if me == 0 => return Err(e),
        Err(_) if flags[0] == 0 => {
            return Err(err(
                MPI_ERR_NO_MEM,
                format!("rank 0 could not create the window's {len} bytes of memory in /dev/shm"),
            ));
        }
        Err(_) => map(&name, len, false)?,
    };
    let bulk = super::direct::BULK.get();
    // SAFETY: each part lies inside the mapping (the layout above).
    let parts = parts.into_iter().map(|(at, bytes)| (unsafe { base.add(data + at) }, bytes)).collect();
    let segment = Segment { base, len, ranks: n, me, bulk, stride, parts };
    // SAFETY: the header's words, written by rank 0 before the exchange above.
    let header = unsafe { std::slice::from_raw_parts(base as *const u64, 5) };
    let ok = header == [MAGIC, VERSION, n as u64, stride as u64, data as u64];
    comm.barrier()?;
    if me == 0 {
        // SAFETY: our object's name; every member has mapped it.
        unsafe { libc::shm_unlink(name.as_ptr()) };
    }
    if !ok {
        return Err(err(
            MPI_ERR_INTERN,
            format!("window memory {}: header disagrees with the layout", name.to_string_lossy()),
        ));
    }
    Ok(Some(segment))
}

fn random() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(16)
}

//! The memory of MPI_Alloc_mem: a memory file (`memfd_create`, one per process) mapped in
//! chunks, so that another process of the host can map the same pages. A dynamic window's
//! region that lies in the arena is published with where it lies in the file (`attached.rs`),
//! and an origin of the host maps that chunk on its first operation there, then puts, gets and
//! accumulates by plain loads, stores and CPU atomics as on a window of MPI_Win_allocate
//! (`direct.rs`, `fast.rs`): no `process_vm_writev` per operation (2.4 us on the development
//! machine), no help from the target.
//!
//! # Layout
//!
//! The file only grows: each chunk is a fresh range of it (`CHUNK` bytes, or a larger
//! allocation's own pages rounded up), mapped `MAP_SHARED` here. Allocations of up to
//! `CHUNK / 2` bytes share chunks (first fit, 64-byte aligned); larger ones get a chunk of
//! their own. A chunk nothing uses any more is unmapped and its pages given back to the kernel
//! (`FALLOCATE_PUNCH_HOLE`); its range of the file is never reused, so a mapping an origin
//! still holds of it (until it sees the target's table of regions change) reaches only holes.
//!
//! # Origins' mappings
//!
//! An origin opens the file through `/proc/<pid>/fd/<fd>` and maps the chunk's range, then
//! closes its descriptor: the same permission `process_vm_readv` needs (same user, the
//! `PR_SET_PTRACER` billboard sets where Yama asks), no socket or helper thread at the target
//! (a target computing outside MPI could not answer one), and one descriptor per process
//! in all (the arena's own). Passing the descriptor over a Unix socket would work where
//! `/proc` is hidden, but needs the target to serve the socket.
//!
//! # fork
//!
//! A child would share the arena's pages with its parent. The chunks are recorded with
//! `remap.rs`'s claims as moved pages, whose `fork` handlers give the child private copies of
//! them (and empty memory in place of other processes' chunks mapped here); the child's
//! MPI_Alloc_mem is plain `malloc` (it cannot use MPI) and its MPI_Free_mem of arena memory
//! leaves the parent's file alone.
//!
//! `BB_ALLOC_MEM_SHARED=0`, or the info key `bb_alloc_mem_shared` = `false` on a call, gives
//! plain `malloc` memory (then attached regions are reached by single copies).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

use billboard::tunables::Tunable;

/// Whether MPI_Alloc_mem takes its memory from the arena.
pub(crate) static ALLOC_MEM_SHARED: Tunable = Tunable::new(
    "BB_ALLOC_MEM_SHARED",
    1,
    "MPI_Alloc_mem from a memory file other processes of the host map, so RMA on dynamic windows' regions there is plain loads and stores (0: malloc)",
);

/// Bytes of a shared chunk: room for many small allocations in one mapping an origin maps
/// once; 1 MiB keeps an idle arena small and the chunk count low (a mapping each).
const CHUNK: usize = 1 << 20;
const PAGE: usize = 4096;
/// Alignment of every allocation (a cache line; MPI_Alloc_mem memory is used for atomics).
const ALIGN: usize = 64;

/// A range of the file mapped here.
struct Chunk {
    at: usize,
    len: usize,
    /// Its offset in the file.
    file: u64,
    /// Free ranges (offset in the chunk, length), sorted, coalesced.
    free: Vec<(usize, usize)>,
}

struct Arena {
    file: OwnedFd,
    /// The process that made the file (a child of `fork` leaves it alone).
    owner: u32,
    /// The file's size: where the next chunk goes.
    end: u64,
    chunks: Vec<Chunk>,
    /// Live allocations: address -> (chunk's file offset, length).
    blocks: BTreeMap<usize, (u64, usize)>,
}

static ARENA: Mutex<Option<Arena>> = Mutex::new(None);

fn arena() -> std::sync::MutexGuard<'static, Option<Arena>> {
    ARENA.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a range of this process's memory lies in the arena's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    /// The arena's descriptor here.
    pub fd: i32,
    /// The chunk's offset in the file and length.
    pub chunk_file: u64,
    pub chunk_len: usize,
    /// The range's offset in the chunk.
    pub offset: usize,
}

/// `size` bytes from the arena (`None`: the arena is off or the kernel refused; the caller
/// falls back to `malloc`).
pub(crate) fn alloc(size: usize) -> Option<*mut u8> {
    if ALLOC_MEM_SHARED.get() == 0 {
        return None;
    }
    let size = size.max(1).checked_next_multiple_of(ALIGN)?;
    let mut guard = arena();
    if guard.is_none() {
        // SAFETY: a NUL-terminated name; the descriptor is owned below.
        let raw = unsafe { libc::memfd_create(c"bb-alloc-mem".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor, ours alone.
        let file = unsafe { OwnedFd::from_raw_fd(raw) };
        *guard = Some(Arena { file, owner: std::process::id(), end: 0, chunks: Vec::new(), blocks: BTreeMap::new() });
    }
    let a = guard.as_mut().expect("made above");
    if a.owner != std::process::id() {
        return None;
    }
    let shared = size <= CHUNK / 2;
    let found = a.chunks.iter_mut().filter(|_| shared).find_map(|c| take(c, size).map(|off| (c.at + off, c.file)));
    let (at, file) = match found {
        Some(hit) => hit,
        None => {
            let len = if shared { CHUNK } else { size.checked_next_multiple_of(PAGE)? };
            let mut c = a.grow(len)?;
            let off = take(&mut c, size).expect("a fresh chunk holds the allocation");
            let hit = (c.at + off, c.file);
            a.chunks.push(c);
            hit
        }
    };
    a.blocks.insert(at, (file, size));
    Some(at as *mut u8)
}

/// Gives back memory [`alloc`] returned; false: `at` is not the arena's (the caller frees it
/// with `free`).
pub(crate) fn free(at: *mut u8) -> bool {
    let mut guard = arena();
    let Some(a) = guard.as_mut() else { return false };
    let Some((file, size)) = a.blocks.remove(&(at as usize)) else { return false };
    if a.owner != std::process::id() {
        // A child of fork: its pages are private copies, the file is the parent's.
        return true;
    }
    let Some(i) = a.chunks.iter().position(|c| c.file == file) else { return true };
    let c = &mut a.chunks[i];
    give(c, at as usize - c.at, size);
    if c.free == [(0, c.len)] {
        let c = a.chunks.swap_remove(i);
        super::remap::forget_shared((c.at, c.at + c.len));
        // SAFETY: this chunk's own mapping, nothing of it allocated any more; the file range
        // is never handed out again (module comment).
        unsafe {
            libc::munmap(c.at as *mut libc::c_void, c.len);
            let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            libc::fallocate(a.file.as_raw_fd(), punch, c.file as libc::off_t, c.len as libc::off_t);
        }
    }
    true
}

/// The arena's descriptor, if this process made one.
pub(crate) fn descriptor() -> Option<i32> {
    arena().as_ref().filter(|a| a.owner == std::process::id()).map(|a| a.file.as_raw_fd())
}

/// Where `[at, at + len)` lies in the arena, if inside one chunk.
pub(crate) fn place(at: usize, len: usize) -> Option<Placed> {
    let guard = arena();
    let a = guard.as_ref().filter(|a| a.owner == std::process::id())?;
    let end = at.checked_add(len)?;
    let c = a.chunks.iter().find(|c| at >= c.at && end <= c.at + c.len)?;
    Some(Placed { fd: a.file.as_raw_fd(), chunk_file: c.file, chunk_len: c.len, offset: at - c.at })
}

impl Arena {
    /// A new chunk of `len` bytes at the file's end, mapped here.
    fn grow(&mut self, len: usize) -> Option<Chunk> {
        let file = self.end;
        let end = file.checked_add(len as u64)?;
        // SAFETY: our descriptor; the file only grows.
        if unsafe { libc::ftruncate(self.file.as_raw_fd(), end as libc::off_t) } != 0 {
            return None;
        }
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh shared mapping of the new range, unmapped in `free`.
        let at =
            unsafe { libc::mmap(std::ptr::null_mut(), len, rw, libc::MAP_SHARED, self.file.as_raw_fd(), file as i64) };
        if at == libc::MAP_FAILED {
            return None;
        }
        self.end = end;
        super::remap::record_shared((at as usize, at as usize + len));
        Some(Chunk { at: at as usize, len, file, free: vec![(0, len)] })
    }
}

/// First fit of `size` bytes in `c`: their offset.
fn take(c: &mut Chunk, size: usize) -> Option<usize> {
    let i = c.free.iter().position(|&(_, len)| len >= size)?;
    let (off, len) = c.free[i];
    if len == size {
        c.free.remove(i);
    } else {
        c.free[i] = (off + size, len - size);
    }
    Some(off)
}

/// Returns `[off, off + size)` to `c`'s free ranges, merged with its neighbours.
fn give(c: &mut Chunk, off: usize, size: usize) {
    let i = c.free.partition_point(|&(o, _)| o < off);
    c.free.insert(i, (off, size));
    if i + 1 < c.free.len() && c.free[i].0 + c.free[i].1 == c.free[i + 1].0 {
        c.free[i].1 += c.free[i + 1].1;
        c.free.remove(i + 1);
    }
    if i > 0 && c.free[i - 1].0 + c.free[i - 1].1 == c.free[i].0 {
        c.free[i - 1].1 += c.free[i].1;
        c.free.remove(i);
    }
}

/// Maps `len` bytes at offset `file` of process `pid`'s descriptor `fd` here, shared
/// (`None`: the kernel refused). The mapping keeps the file; the descriptor opened for it is
/// closed at once.
pub(crate) fn map_peer_file(pid: u64, fd: i32, file: u64, len: usize) -> Option<usize> {
    let path = CString::new(format!("/proc/{pid}/fd/{fd}")).ok()?;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if raw < 0 {
        return None;
    }
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a fresh shared mapping of the process's file, unmapped by the caller.
    let at = unsafe { libc::mmap(std::ptr::null_mut(), len, rw, libc::MAP_SHARED, raw, file as libc::off_t) };
    // SAFETY: our descriptor, closed once; the mapping keeps the file.
    unsafe { libc::close(raw) };
    (at != libc::MAP_FAILED).then_some(at as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_share_chunks_free_whole_ones_and_another_mapping_sees_their_bytes() {
        let small: Vec<*mut u8> = (0..100).map(|_| alloc(100).expect("arena memory")).collect();
        let big = alloc(3 * CHUNK).expect("a chunk of its own");
        for (i, &p) in small.iter().enumerate() {
            assert_eq!(p as usize % ALIGN, 0);
            // SAFETY: 100 bytes of ours.
            unsafe { p.write_bytes(i as u8, 100) };
        }
        let a = place(small[7] as usize, 100).expect("placed");
        let b = place(big as usize, 3 * CHUNK).expect("placed");
        assert_eq!(a.chunk_file, place(small[8] as usize, 100).expect("placed").chunk_file, "small ones share");
        assert_ne!(a.chunk_file, b.chunk_file);
        assert!(place(small[7] as usize, CHUNK).is_none(), "past the chunk's end");
        // Another process's view of it: the same bytes.
        let view = map_peer_file(std::process::id() as u64, a.fd, a.chunk_file, a.chunk_len).expect("mapped");
        // SAFETY: inside the view.
        assert_eq!(unsafe { *((view + a.offset + 99) as *const u8) }, 7);
        // SAFETY: as above; then the view goes.
        unsafe {
            *((view + a.offset) as *mut u8) = 200;
            assert_eq!(std::ptr::read_volatile(small[7]), 200);
            libc::munmap(view as *mut libc::c_void, a.chunk_len);
        }
        assert!(free(big));
        assert!(place(big as usize, 8).is_none(), "a chunk nothing uses is gone");
        for p in small {
            assert!(free(p));
        }
        let mut heap = vec![0u8; 8];
        assert!(!free(heap.as_mut_ptr()), "memory not from the arena");
    }

    #[test]
    fn freed_ranges_merge_with_their_neighbours() {
        let mut c = Chunk { at: 0, len: 1024, file: 0, free: vec![(0, 1024)] };
        let (x, y, z) = (take(&mut c, 64).unwrap(), take(&mut c, 128).unwrap(), take(&mut c, 64).unwrap());
        assert_eq!((x, y, z), (0, 64, 192));
        give(&mut c, x, 64);
        give(&mut c, z, 64);
        assert_eq!(c.free, vec![(0, 64), (192, 832)]);
        give(&mut c, y, 128);
        assert_eq!(c.free, vec![(0, 1024)]);
    }
}

//! MPI_Win_create on one host with the window's pages shared: each member moves the pages
//! that hold its window onto a memory file (`memfd_create`) mapped at the same addresses,
//! and every other member maps that file too. The program sees the same bytes at the same
//! addresses; an origin then reaches a target's window by plain loads, stores and CPU
//! atomics, as in a window of MPI_Win_allocate (`direct.rs`), with no single copy and no
//! handler: a fetch-and-op is one locked instruction, and a target computing outside MPI
//! stalls nothing (issue 18, items 2 and 4).
//!
//! # How the pages move
//!
//! The pages covering `[base, base + size)` are copied into a fresh memfd mapped elsewhere,
//! which `mremap(MREMAP_FIXED)` then moves over them in one call (the old private pages go).
//! Other members open the file through `/proc/<pid>/fd/<fd>` (the same permission as
//! `process_vm_readv`: same user, `PR_SET_PTRACER` where Yama asks) and map it; the owner
//! closes its descriptor once all have. MPI_Win_free (after its barrier: nobody touches the
//! window any more) copies the pages back into private anonymous memory moved over them the
//! same way, so the program's allocator finds plain memory again (glibc's `calloc` counts on
//! `MADV_DONTNEED` zeroing freed heap pages, which a shared mapping does not do).
//!
//! A window in MPI_Alloc_mem's memory (`arena.rs`) is on a memory file already: its pages do
//! not move, the other members map its range of the arena's file. So is a window in a shared
//! mapping the program made itself (a file's, or `mmap(MAP_SHARED | MAP_ANONYMOUS)`, which the
//! kernel backs by a file of its own): the member opens that file (`shared_object`: by its
//! path, else through `/proc/self/map_files/`, which needs `CAP_SYS_ADMIN` or
//! `CAP_CHECKPOINT_RESTORE`) and the others map its range; the pages stay the program's, shared
//! as it made them (with a child of `fork` too).
//!
//! # What is shared besides the window
//!
//! The first and last pages may also hold other data of the program (malloc's chunk
//! header, a neighbouring object). Other members map them but touch only window bytes; the
//! program keeps reading and writing them as before. One thing could tell: a store by
//! another thread of this process to those pages in the microseconds between the copy and
//! the move (lost). So only private anonymous read-write memory is moved (malloc's heap and
//! its mmap'd chunks), never a stack in use (the process's main stack, or pages near the
//! calling thread's stack pointer), a file mapping or memory already shared, and only while
//! no thread of the program but the caller runs (the library's own threads do not count); and
//! `BB_RMA_CREATE_MAP=0` turns this off (then single copies and the handler, `single_copy.rs`).
//! The choice is collective: every member moves its pages and maps every other's, or none does.
//!
//! # fork
//!
//! A child made by `fork` would share a shared mapping with its parent, where malloc'd memory
//! is the child's own copy: its stores would land in the parent's window, and other members'
//! RMA in the parent's window would show in the child. So `pthread_atfork` handlers give the
//! child private pages: before the fork, the parent copies each moved range into private
//! anonymous memory of its own (a snapshot: the window's bytes at the fork); the child moves
//! that copy (its copy-on-write image of it) over the range, and replaces the other members'
//! pages mapped here by empty private memory (the child cannot use MPI, so nothing reaches
//! them); the parent drops its snapshot. Copying in the child instead would race with the
//! parent, which returns from `fork` at once and may change its window meanwhile. The claims
//! stay locked across the fork, so the child sees them whole. `MADV_DONTFORK` would leave the
//! child without the pages, `MADV_WIPEONFORK` with zeros.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

use billboard::tunables::Tunable;
use billboard::Communicator;

use super::segment::Segment;
use crate::error::Res;

/// Whether MPI_Win_create on one host shares the window's pages.
pub(crate) static CREATE_MAP: Tunable = Tunable::new(
    "BB_RMA_CREATE_MAP",
    1,
    "MPI_Win_create on one host: move each window's pages onto a memory file all members map, so RMA is done by the origin in shared memory (0: single copies and the target's handler)",
);

const PAGE: usize = 4096;

/// The page ranges `[lo, hi)` of this process's live windows of MPI_Win_create on one host,
/// and of moved pages not yet put back. Pages are moved only where no other such window has a
/// page, and put back only then too: an origin's single copy into a neighbouring window on a
/// shared page could land between the copy and the move, and be lost. Pages whose window ends
/// while such a neighbour lives wait in `unrestored` until it ends too. `moved` and `views`
/// are what a child of `fork` must not share (module comment).
#[derive(Default)]
struct Claims {
    live: Vec<(usize, usize)>,
    unrestored: Vec<(usize, usize)>,
    /// Live windows' own pages on a memory file (disjoint from each other and `unrestored`).
    moved: Vec<(usize, usize)>,
    /// Other members' pages mapped here: (address, length).
    views: Vec<(usize, usize)>,
    /// During a fork: private copies of the moved ranges, as (range start, length, copy).
    snapshots: Vec<(usize, usize, usize)>,
}

static CLAIMS: Mutex<Claims> = Mutex::new(Claims {
    live: Vec::new(),
    unrestored: Vec::new(),
    moved: Vec::new(),
    views: Vec::new(),
    snapshots: Vec::new(),
});

fn claims() -> std::sync::MutexGuard<'static, Claims> {
    CLAIMS.lock().unwrap_or_else(|e| e.into_inner())
}

fn overlap((a, b): (usize, usize), (c, d): (usize, usize)) -> bool {
    a < d && c < b
}

impl Claims {
    /// Ends the claim of `range` (`moved`: its pages are on a file), and puts back every
    /// moved range that no live window touches any more.
    fn release(&mut self, range: (usize, usize), moved: bool) {
        if let Some(i) = self.live.iter().position(|&c| c == range) {
            self.live.swap_remove(i);
        }
        if moved {
            forget(&mut self.moved, range);
            self.unrestored.push(range);
        }
        let live = &self.live;
        self.unrestored.retain(|&(lo, hi)| {
            if live.iter().any(|&c| overlap(c, (lo, hi))) {
                return true;
            }
            // SAFETY: pages of ended windows, reached by no other member any more (each
            // window's MPI_Win_free barrier) and by no live window; a failed restore leaves
            // them shared, with the same bytes.
            unsafe { restore(lo, hi - lo) };
            false
        });
    }

    /// Before a fork: a private copy of every moved range (module comment, "fork").
    fn snapshot_for_fork(&mut self) {
        for &(lo, hi) in self.moved.iter().chain(&self.unrestored) {
            // SAFETY: the range's pages are mapped (this process's moved window pages).
            if let Some(at) = unsafe { private_copy(lo, hi - lo) } {
                self.snapshots.push((lo, hi - lo, at));
            }
        }
    }

    /// After a fork, in the parent: the snapshots go.
    fn drop_snapshots(&mut self) {
        for (_, len, at) in self.snapshots.drain(..) {
            // SAFETY: a mapping made in `snapshot_for_fork`, unmapped once.
            unsafe { libc::munmap(at as *mut libc::c_void, len) };
        }
    }

    /// After a fork, in the child: the snapshots under the moved ranges (a range without one,
    /// its mapping refused, gets a copy of what it holds now), and empty private memory in
    /// place of other members' pages.
    fn unshare_in_child(&mut self) {
        for (lo, len, at) in self.snapshots.drain(..) {
            // SAFETY: this process's private copy of its own window pages, moved over them
            // (the child has no other thread); if refused, the range is copied below.
            if unsafe { move_over(at, lo, len) } {
                forget(&mut self.moved, (lo, lo + len));
                forget(&mut self.unrestored, (lo, lo + len));
            }
        }
        for (lo, hi) in self.moved.drain(..).chain(self.unrestored.drain(..)) {
            // SAFETY: as above, a copy of what the pages hold now.
            unsafe { restore(lo, hi - lo) };
        }
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let fresh = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
        for (at, len) in self.views.drain(..) {
            // SAFETY: a mapping of another member's file made in `share`, replaced in place.
            unsafe { libc::mmap(at as *mut libc::c_void, len, rw, fresh, -1, 0) };
        }
    }
}

/// Removes `range` from `list`, if there.
fn forget(list: &mut Vec<(usize, usize)>, range: (usize, usize)) {
    if let Some(i) = list.iter().position(|&c| c == range) {
        list.swap_remove(i);
    }
}

thread_local! {
    /// The claims, held by the thread that forks from `before_fork` until the fork returns.
    static HELD_ACROSS_FORK: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Claims>>> =
        const { std::cell::RefCell::new(None) };
}

/// The claims held across a fork by the forking thread (taken back by the handlers below).
fn hold_across_fork(
    held: Option<std::sync::MutexGuard<'static, Claims>>,
) -> Option<std::sync::MutexGuard<'static, Claims>> {
    HELD_ACROSS_FORK
        .try_with(|h| h.try_borrow_mut().ok().and_then(|mut h| std::mem::replace(&mut *h, held)))
        .ok()
        .flatten()
}

extern "C" fn before_fork() {
    let mut claims = claims();
    claims.snapshot_for_fork();
    hold_across_fork(Some(claims));
}

extern "C" fn after_fork_in_parent() {
    if let Some(mut claims) = hold_across_fork(None) {
        claims.drop_snapshots();
    }
}

extern "C" fn after_fork_in_child() {
    if let Some(mut claims) = hold_across_fork(None) {
        claims.unshare_in_child();
    }
}

/// Installs the `fork` handlers once, before the first pages move.
fn watch_forks() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: handlers that live as long as the library, registered once.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork_in_parent), Some(after_fork_in_child)) };
    });
}

/// A member's window pages for the window's life: claimed, and possibly shared: its own
/// moved onto a memory file (made private again on drop) and its mappings of every other
/// member's.
pub(crate) struct Pages {
    /// This process's pages `[lo, hi)`, when it has a window.
    claim: Option<(usize, usize)>,
    /// Whether the own pages are on a memory file now.
    moved: bool,
    /// Other members' pages mapped here: (address, length).
    views: Vec<(usize, usize)>,
    /// Whether every member's window is reached through the mappings.
    shared: bool,
}

// SAFETY: plain addresses of mappings this value owns; nothing in it is a thread's own.
unsafe impl Send for Pages {}

impl Pages {
    /// Whether the window is reached through every member's mapped pages.
    pub fn shared(&self) -> bool {
        self.shared
    }

    /// Unmaps the other members' pages (the own stay moved until the claim ends).
    fn unmap_views(&mut self) {
        self.shared = false;
        if self.views.is_empty() {
            return;
        }
        let mut claims = claims();
        for (at, len) in self.views.drain(..) {
            forget(&mut claims.views, (at, len));
            // SAFETY: a mapping made in `share`, unmapped once.
            unsafe { libc::munmap(at as *mut libc::c_void, len) };
        }
    }

    /// Unmaps the other members' pages and puts the own back, if no other live window has
    /// a page among them (`share` made sure of that before it moved them).
    fn unshare(&mut self) {
        self.unmap_views();
        if let Some((lo, hi)) = self.claim.filter(|_| self.moved) {
            let mut claims = claims();
            forget(&mut claims.moved, (lo, hi));
            // SAFETY: as in `Claims::release`: no other member reached them yet.
            unsafe { restore(lo, hi - lo) };
            self.moved = false;
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        self.unmap_views();
        if let Some(range) = self.claim {
            claims().release(range, self.moved);
        }
    }
}

/// What this member tells the others (seven words).
struct Offer {
    ok: bool,
    pid: u64,
    fd: i32,
    /// Where the pages start in the file.
    file: u64,
    /// The window's offset in its first page, and the pages' length.
    offset: usize,
    len: usize,
    size: usize,
}

/// The collective sharing of every member's window pages over `comm` (all on one host;
/// this member's window `size` bytes at `base`). If every member's pages could be shared,
/// sets `seg`'s parts to where each member's window is reachable here; else (on every member
/// alike) nothing changed but the claim of the pages.
pub(crate) fn share(comm: &Communicator, base: *mut u8, size: usize, seg: &mut Segment) -> Res<Pages> {
    let (n, me) = (comm.size(), comm.rank());
    let mut pages = Pages { claim: None, moved: false, views: Vec::new(), shared: false };
    // Our memory file, closed when this returns (the mappings keep it).
    let mut file: Option<OwnedFd> = None;
    let mut mine =
        Offer { ok: CREATE_MAP.get() != 0, pid: std::process::id() as u64, fd: -1, file: 0, offset: 0, len: 0, size };
    if size > 0 {
        let lo = base as usize & !(PAGE - 1);
        let hi = (base as usize + size).div_ceil(PAGE) * PAGE;
        if mine.ok {
            watch_forks();
        }
        let mut claims = claims();
        let alone = !claims.live.iter().chain(&claims.unrestored).any(|&c| overlap(c, (lo, hi)));
        claims.live.push((lo, hi));
        pages.claim = Some((lo, hi));
        // MPI_Alloc_mem's memory is on a memory file already (`arena.rs`): offered as it is.
        let placed = if mine.ok { super::arena::place(lo, hi - lo) } else { None };
        if let Some(p) = placed {
            (mine.fd, mine.file, mine.offset, mine.len) =
                (p.fd, p.chunk_file + p.offset as u64, base as usize - lo, hi - lo);
        }
        // SAFETY: the program's window pages, checked to be private anonymous memory first.
        match (mine.ok && placed.is_none() && alone && alone_with_library_threads() && movable(lo, hi - lo))
            .then(|| unsafe { move_to_file(lo, hi - lo) })
            .flatten()
        {
            Some(fd) => {
                claims.moved.push((lo, hi));
                pages.moved = true;
                (mine.fd, mine.offset, mine.len) = (fd.as_raw_fd(), base as usize - lo, hi - lo);
                file = Some(fd);
            }
            // A shared mapping of the program's (a file, memory shared by mmap): offered as
            // it is, the pages stay where they are and whose they are (a child of fork
            // shares them by the program's choice).
            None => match (mine.ok && placed.is_none()).then(|| shared_object(lo, hi - lo)).flatten() {
                Some((fd, at)) => {
                    (mine.fd, mine.file, mine.offset, mine.len) = (fd.as_raw_fd(), at, base as usize - lo, hi - lo);
                    file = Some(fd);
                }
                None => mine.ok = placed.is_some(),
            },
        }
    }
    let offers = exchange(comm, &mine)?;
    if offers.iter().any(|o| !o.ok) {
        pages.unshare();
        return Ok(pages);
    }
    let mut parts = Vec::with_capacity(n);
    let mut mapped = true;
    for (r, o) in offers.iter().enumerate() {
        if r == me || o.size == 0 {
            parts.push((if o.size == 0 { std::ptr::null_mut() } else { base }, o.size));
            continue;
        }
        // Mapped and recorded under the claims, so a fork sees either both or neither.
        let mut claims = claims();
        match map_peer(o) {
            Some(at) => {
                claims.views.push((at, o.len));
                pages.views.push((at, o.len));
                parts.push(((at + o.offset) as *mut u8, o.size));
            }
            None => {
                mapped = false;
                break;
            }
        }
    }
    // Also the barrier before the owners close their files: everyone has opened them.
    let all_mapped = exchange(comm, &Offer { ok: mapped, ..mine })?.iter().all(|o| o.ok);
    drop(file);
    if !all_mapped {
        pages.unshare();
        return Ok(pages);
    }
    seg.set_parts(parts);
    pages.shared = true;
    Ok(pages)
}

/// Every member's offer, in rank order.
fn exchange(comm: &Communicator, o: &Offer) -> Res<Vec<Offer>> {
    let n = comm.size();
    let words = [o.ok as u64, o.pid, o.fd as i64 as u64, o.offset as u64, o.len as u64, o.size as u64, o.file];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let mut all = vec![0u8; 56 * n];
    comm.allgatherv_bytes(&bytes, &mut all, &(0..n).map(|r| (56 * r, 56)).collect::<Vec<_>>())?;
    let word = |i: usize| u64::from_ne_bytes(all[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    Ok((0..n)
        .map(|r| Offer {
            ok: word(7 * r) != 0,
            pid: word(7 * r + 1),
            fd: word(7 * r + 2) as i64 as i32,
            offset: word(7 * r + 3) as usize,
            len: word(7 * r + 4) as usize,
            size: word(7 * r + 5) as usize,
            file: word(7 * r + 6),
        })
        .collect())
}

/// One line of `/proc/self/maps`: the range `[lo, hi)`, then the fields as written (perms,
/// file offset, device, inode) and the path, which may hold spaces (empty: none).
struct Mapping<'a> {
    lo: usize,
    hi: usize,
    perms: &'a str,
    offset: &'a str,
    dev: &'a str,
    inode: &'a str,
    path: &'a str,
}

/// The mappings of `/proc/self/maps` (its text in `maps`), in address order.
fn mappings(maps: &str) -> impl Iterator<Item = Mapping<'_>> {
    maps.lines().filter_map(|line| {
        let mut fields = line.splitn(6, ' ');
        let (range, perms, offset, dev, inode) =
            (fields.next()?, fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let (a, b) = range.split_once('-')?;
        let (lo, hi) = (usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?);
        let path = fields.next().unwrap_or("").trim();
        Some(Mapping { lo, hi, perms, offset, dev, inode, path })
    })
}

/// Whether `[lo, lo + len)` is private anonymous read-write memory of this process, none of
/// it a stack in use (module comment), by `/proc/self/maps`.
fn movable(lo: usize, len: usize) -> bool {
    let hi = lo + len;
    let probe = 0u8;
    let sp = std::hint::black_box(&probe) as *const u8 as usize;
    // The calling thread's stack: its frames lie below the caller's, within a few pages.
    if sp + (1 << 20) > lo && sp < hi + (1 << 20) {
        return false;
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return false };
    let mut covered = lo;
    for Mapping { lo: a, hi: b, perms, inode, path, .. } in mappings(&maps) {
        if b <= covered || a >= hi {
            continue;
        }
        let anonymous = inode == "0" && (path.is_empty() || path == "[heap]");
        if a > covered || !perms.starts_with("rw") || perms.as_bytes().get(3) != Some(&b'p') || !anonymous {
            return false;
        }
        covered = b;
        if covered >= hi {
            return true;
        }
    }
    false
}

/// The file behind `[lo, lo + len)` when one shared read-write mapping of a regular file
/// covers it (a file's, or memory the program shared by `mmap(MAP_SHARED | MAP_ANONYMOUS)` or
/// SysV shm, which the kernel keeps on a file of its own), opened read-write, and the pages'
/// offset in it; `None`: anything else. By the file's path where it still has one (checked to
/// be the same file), else `/proc/self/map_files/`, which the kernel opens only for a process
/// with `CAP_CHECKPOINT_RESTORE` or `CAP_SYS_ADMIN` (then the single copies stay).
fn shared_object(lo: usize, len: usize) -> Option<(OwnedFd, u64)> {
    use std::os::unix::fs::MetadataExt;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let hi = lo + len;
    for Mapping { lo: a, hi: b, perms, offset: pgoff, dev, inode, path } in mappings(&maps) {
        if b <= lo || a >= hi {
            continue;
        }
        // One mapping for the whole range, read-write and shared.
        if a > lo || b < hi || !perms.starts_with("rw") || perms.as_bytes().get(3) != Some(&b's') {
            return None;
        }
        let at = u64::from_str_radix(pgoff, 16).ok()? + (lo - a) as u64;
        let (major, minor) = dev.split_once(':')?;
        let (major, minor) = (u64::from_str_radix(major, 16).ok()?, u64::from_str_radix(minor, 16).ok()?);
        let inode: u64 = inode.parse().ok()?;
        let same = |f: &std::fs::File| {
            f.metadata().is_ok_and(|m| {
                m.file_type().is_file()
                    && m.ino() == inode
                    && libc::major(m.dev()) as u64 == major
                    && libc::minor(m.dev()) as u64 == minor
            })
        };
        let rw = |path: &str| std::fs::OpenOptions::new().read(true).write(true).open(path).ok().filter(same);
        // A removed file's path ends so.
        let by_path = (path.starts_with('/') && !path.ends_with(" (deleted)")).then(|| rw(path)).flatten();
        let file = by_path.or_else(|| rw(&format!("/proc/self/map_files/{a:x}-{b:x}")))?;
        return Some((OwnedFd::from(file), at));
    }
    None
}

/// Whether every thread of this process but the caller is one of the library's own (named
/// `bb-...`: progress, MPI-IO, background operations), which never touch the program's memory
/// while MPI_Win_create runs. Another thread of the program (OpenMP workers, a thread under
/// MPI_THREAD_MULTIPLE) might store to a neighbour of the window on an edge page between the
/// copy and the move, and that store would be lost: then the pages stay where they are.
fn alone_with_library_threads() -> bool {
    // `/proc/thread-self` links to `PID/task/TID`, this thread's entry among the process's.
    let Ok(me) = std::fs::read_link("/proc/thread-self") else { return false };
    let Ok(tasks) = std::fs::read_dir("/proc/thread-self/..") else { return false };
    tasks.flatten().all(|task| {
        Some(task.file_name().as_os_str()) == me.file_name()
            || std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.starts_with("bb-"))
    })
}

/// Moves the pages `[lo, lo + len)` onto a new memfd with the same bytes; returns its
/// descriptor, or `None` with the pages untouched.
///
/// # Safety
/// The pages are this process's private anonymous memory ([`movable`]).
unsafe fn move_to_file(lo: usize, len: usize) -> Option<OwnedFd> {
    let raw = libc::memfd_create(c"bb-win".as_ptr(), libc::MFD_CLOEXEC);
    if raw < 0 {
        return None;
    }
    let fd = OwnedFd::from_raw_fd(raw);
    if libc::ftruncate(raw, len as libc::off_t) != 0 {
        return None;
    }
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let at = libc::mmap(std::ptr::null_mut(), len, rw, libc::MAP_SHARED, raw, 0);
    if at == libc::MAP_FAILED {
        return None;
    }
    std::ptr::copy_nonoverlapping(lo as *const u8, at.cast::<u8>(), len);
    move_over(at as usize, lo, len).then_some(fd)
}

/// Puts private anonymous memory with the same bytes back under `[lo, lo + len)`.
///
/// # Safety
/// The pages are mapped and no other process changes them any more.
unsafe fn restore(lo: usize, len: usize) {
    if let Some(at) = private_copy(lo, len) {
        move_over(at, lo, len);
    }
}

/// A private anonymous copy of the mapped pages `[lo, lo + len)`, elsewhere (`None`: the
/// kernel refused the memory).
///
/// # Safety
/// The pages are mapped.
unsafe fn private_copy(lo: usize, len: usize) -> Option<usize> {
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let at = libc::mmap(std::ptr::null_mut(), len, rw, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
    if at == libc::MAP_FAILED {
        return None;
    }
    std::ptr::copy_nonoverlapping(lo as *const u8, at.cast::<u8>(), len);
    Some(at as usize)
}

/// Moves the mapping at `at` over `[lo, lo + len)` (whatever was there goes); if the kernel
/// refuses, unmaps it and returns false.
///
/// # Safety
/// `at` is a mapping of `len` bytes of ours, and nothing else uses the pages at `lo` meanwhile.
unsafe fn move_over(at: usize, lo: usize, len: usize) -> bool {
    let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED;
    let moved = libc::mremap(at as *mut libc::c_void, len, len, flags, lo as *mut libc::c_void) != libc::MAP_FAILED;
    if !moved {
        libc::munmap(at as *mut libc::c_void, len);
    }
    moved
}

/// Maps another member's window pages here (`None`: the kernel refused); unmapped in
/// `Pages::unshare`.
fn map_peer(o: &Offer) -> Option<usize> {
    super::arena::map_peer_file(o.pid, o.fd, o.file, o.len)
}

/// Records this process's pages `[lo, hi)` that live on a memory file other processes map
/// (MPI_Alloc_mem's arena, `arena.rs`), so a child of `fork` gets private copies of them.
pub(crate) fn record_shared(range: (usize, usize)) {
    watch_forks();
    claims().moved.push(range);
}

/// Ends [`record_shared`] for `range` (its mapping goes).
pub(crate) fn forget_shared(range: (usize, usize)) {
    forget(&mut claims().moved, range);
}

/// Records another process's pages mapped here at `at` (`len` bytes), which a child of
/// `fork` must not share.
pub(crate) fn record_view(at: usize, len: usize) {
    watch_forks();
    claims().views.push((at, len));
}

/// Ends [`record_view`] (the mapping goes).
pub(crate) fn forget_view(at: usize, len: usize) {
    forget(&mut claims().views, (at, len));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_move_onto_a_file_and_back_with_their_bytes() {
        // 1 MiB: a chunk of its own from malloc (mmap'd), so no other thread's data shares a page.
        let mut v: Vec<u64> = (0..(1u64 << 17)).collect();
        let (at, bytes) = (v.as_ptr() as usize, v.len() * 8);
        let lo = at & !(PAGE - 1);
        let len = (at + bytes).div_ceil(PAGE) * PAGE - lo;
        assert!(movable(lo, len), "a heap chunk is private anonymous memory");
        // SAFETY: `v`'s pages, checked above; nothing else writes them meanwhile.
        let fd = unsafe { move_to_file(lo, len) }.expect("moved onto a memfd");
        assert!(!movable(lo, len), "now a shared mapping");
        // A second mapping of the file (another member's view) reaches the same bytes.
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh shared mapping of our memfd, unmapped below.
        let view = unsafe { libc::mmap(std::ptr::null_mut(), len, rw, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        assert_ne!(view, libc::MAP_FAILED);
        let word = |i: usize| (view as usize + (at - lo) + 8 * i) as *mut u64;
        // SAFETY: inside the view.
        unsafe {
            assert_eq!(word(12345).read_volatile(), 12345);
            word(5).write_volatile(77);
        }
        // SAFETY: `v`'s own element, read as memory another mapping changed.
        assert_eq!(unsafe { std::ptr::read_volatile(&v[5]) }, 77);
        // SAFETY: the view made above; then `v`'s pages, which no other mapping writes now.
        unsafe {
            libc::munmap(view, len);
            restore(lo, len);
        }
        assert!(movable(lo, len), "private again");
        // The compiler must not assume the vector unchanged: another mapping wrote it.
        std::hint::black_box(v.as_mut_ptr());
        assert!(v.iter().enumerate().all(|(i, &x)| x == if i == 5 { 77 } else { i as u64 }));
    }

    #[test]
    fn a_child_of_fork_keeps_the_bytes_of_the_fork_and_its_stores_stay_its_own() {
        // 1 MiB: a chunk of its own from malloc (mmap'd), so no other thread's data shares a page.
        let mut v: Vec<u64> = vec![7; 1 << 17];
        let (at, n) = (v.as_mut_ptr(), v.len());
        let lo = at as usize & !(PAGE - 1);
        let hi = (at as usize + 8 * n).div_ceil(PAGE) * PAGE;
        // SAFETY: `v`'s pages, private anonymous memory; nothing else writes them meanwhile.
        let file = unsafe { move_to_file(lo, hi - lo) }.expect("moved onto a memfd");
        claims().moved.push((lo, hi));
        watch_forks();
        let mut go = [0; 2];
        // SAFETY: a pipe into a local array; fork in a test process whose child only reads,
        // writes its own memory and the pipe, and leaves by _exit.
        unsafe {
            assert_eq!(libc::pipe(go.as_mut_ptr()), 0);
            let child = libc::fork();
            assert!(child >= 0, "fork");
            if child == 0 {
                let mut byte = 0u8;
                libc::read(go[0], (&mut byte as *mut u8).cast(), 1);
                let kept = (0..n).all(|i| at.add(i).read_volatile() == 7);
                (0..n).for_each(|i| at.add(i).write_volatile(9));
                libc::_exit(if kept { 0 } else { 2 });
            }
            // The parent's stores after the fork stay out of the child's copy, and the child's
            // out of the parent's pages.
            (0..n).for_each(|i| at.add(i).write_volatile(8));
            assert_eq!(libc::write(go[1], b"g".as_ptr().cast(), 1), 1);
            let mut status = 0;
            assert_eq!(libc::waitpid(child, &mut status, 0), child);
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child's copy changed: {status:#x}");
            libc::close(go[0]);
            libc::close(go[1]);
        }
        std::hint::black_box(v.as_mut_ptr());
        assert!(v.iter().all(|&x| x == 8), "a store of the child reached the parent");
        assert!(!movable(lo, hi - lo), "the parent's pages are still on the file");
        claims().release((lo, hi), true);
        drop(file);
        assert!(movable(lo, hi - lo), "private again");
    }

    #[test]
    fn a_stack_in_use_and_a_file_mapping_stay_put() {
        let local = std::hint::black_box([0u8; 64]);
        assert!(!movable(local.as_ptr() as usize & !(PAGE - 1), PAGE));
        let code = movable as fn(usize, usize) -> bool as usize;
        assert!(!movable(code & !(PAGE - 1), PAGE), "the library's code is a file mapping");
    }
}

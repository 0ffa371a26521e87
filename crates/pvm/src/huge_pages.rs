//! Huge pages under the program's memory that single copies read and write
//! (`single_copy.rs`): `process_vm_readv`/`process_vm_writev` pin the other process's pages
//! one by one before they copy (a sixth of a 4 MiB NPpvm transfer's samples with 4 KiB
//! pages); a transparent huge page is pinned at once for 2 MiB, and the copy takes fewer TLB
//! misses. The kernel here gives huge pages only where asked (`enabled` = madvise), so the
//! library asks: `MADV_HUGEPAGE` on the 2 MiB-aligned inside of a large buffer, then
//! `MADV_COLLAPSE` to turn the pages it already has into huge ones (once per buffer: the
//! last few buffers asked for are remembered). Both only advise: where the kernel says no
//! (another kind of mapping, an older kernel), nothing changes.

use std::sync::Mutex;

use billboard::tunables::Tunable;

pub static HUGE_PAGES: Tunable = Tunable::new(
    "BB_PVM_HUGE_PAGES",
    1,
    "PVM: 1 asks for transparent huge pages under buffers of at least 4 MiB that single copies read or write (madvise MADV_HUGEPAGE and MADV_COLLAPSE, once a buffer); 0: never",
);

/// A huge page's size on x86-64 (a PMD).
const HUGE: usize = 2 << 20;
/// Buffers smaller than this are left alone: their aligned inside is at most one huge page.
const MIN_BYTES: usize = 4 << 20;
/// Buffers remembered as asked for.
const REMEMBERED: usize = 16;

static ASKED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The 2 MiB-aligned stretch inside `len` bytes at `addr`, if it holds a huge page.
fn inside(addr: usize, len: usize) -> Option<(usize, usize)> {
    let start = addr.checked_next_multiple_of(HUGE)?;
    let end = addr.checked_add(len)? / HUGE * HUGE;
    (end > start).then_some((start, end - start))
}

/// Asks for huge pages under `len` bytes at `addr` (this process's memory), once.
pub fn prefer(addr: usize, len: usize) {
    if len < MIN_BYTES || HUGE_PAGES.get() == 0 {
        return;
    }
    let Some((start, n)) = inside(addr, len) else { return };
    {
        let Ok(mut asked) = ASKED.lock() else { return };
        if asked.contains(&(start, n)) {
            return;
        }
        if asked.len() == REMEMBERED {
            asked.remove(0);
        }
        asked.push((start, n));
    }
    // SAFETY: advice on whole pages of this process's own mapped memory (inside a buffer the
    // program handed over); it changes no byte of it.
    unsafe {
        if libc::madvise(start as *mut libc::c_void, n, libc::MADV_HUGEPAGE) == 0 {
            libc::madvise(start as *mut libc::c_void, n, libc::MADV_COLLAPSE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_aligned_inside_of_a_large_buffer_is_asked_for_and_its_bytes_stay() {
        assert_eq!(inside(HUGE + 4096, 3 * HUGE), Some((2 * HUGE, 2 * HUGE)));
        assert_eq!(inside(4096, HUGE), None, "no whole huge page inside");
        assert_eq!(inside(usize::MAX - 10, 100), None);
        let mut v: Vec<u8> = (0..(6 << 20)).map(|i| (i % 251) as u8).collect();
        prefer(v.as_ptr() as usize, v.len());
        prefer(v.as_ptr() as usize, v.len());
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "advice changes no byte");
        v[12345] = 7;
        assert_eq!(v[12345], 7);
    }
}

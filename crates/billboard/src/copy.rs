//! Copies of the small-message path. A variable-length `copy_nonoverlapping` is a call into
//! libc's `memcpy` (through the PLT in a shared library) even for the handful of bytes most
//! messages carry; up to 16 bytes two overlapping loads and stores do it inline.
//!
//! Large copies dodge one trap of AMD's `rep movsb` (glibc's `memcpy` from a few KiB up to its
//! non-temporal threshold where the CPU has FSRM/ERMS, as the EPYC here): when the destination
//! lies 1 to 63 bytes past the source modulo 4 KiB, every store aliases a load it follows and
//! the copy runs ~20x slower (64 KiB: 29 us against 1.4 us). That is the common case of a
//! message leaving a page-aligned segment slot for a buffer of `malloc` (mmapped blocks begin 16
//! bytes into a page). Copied in pieces below glibc's `rep movsb` threshold (2,112 bytes with
//! FSRM), `memcpy` takes its vector loop instead: 64 KiB in 1.9 us.

use std::ptr::{read_unaligned as load, write_unaligned as store};

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// As for [`std::ptr::copy_nonoverlapping`]: `src` readable and `dst` writable for `n` bytes,
/// the two ranges disjoint.
#[inline(always)]
pub(crate) unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    match n {
        0 => {}
        1..=3 => {
            // First, middle and last byte cover 1, 2 and 3 bytes.
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
        4..=7 => {
            let (a, b) = (load(src.cast::<u32>()), load(src.add(n - 4).cast::<u32>()));
            store(dst.cast::<u32>(), a);
            store(dst.add(n - 4).cast::<u32>(), b);
        }
        8..=16 => {
            let (a, b) = (load(src.cast::<u64>()), load(src.add(n - 8).cast::<u64>()));
            store(dst.cast::<u64>(), a);
            store(dst.add(n - 8).cast::<u64>(), b);
        }
        // A small message's header and payload: glibc's vector loop, never `rep movsb`.
        17..=ALIASED_PIECE => std::ptr::copy_nonoverlapping(src, dst, n),
        _ => copy_bulk(src, dst, n),
    }
}

/// Pieces of a copy whose destination trails its source by 1 to 63 bytes modulo 4 KiB (see
/// the module's note): below glibc's smallest `rep movsb` threshold (2,112 bytes).
const ALIASED_PIECE: usize = 2048;

/// The piece a copy of `n` bytes from `src` to `dst` goes in: all of it, unless `rep movsb`
/// would alias (`dst` 1 to 63 bytes past `src` modulo 4 KiB, more than a piece to copy).
#[inline(always)]
fn piece(src: *const u8, dst: *mut u8, n: usize) -> usize {
    let skew = (dst as usize).wrapping_sub(src as usize) & 4095;
    match n > ALIASED_PIECE && skew != 0 && skew < 64 {
        true => ALIASED_PIECE,
        false => n,
    }
}

/// Copies `n` bytes from `src` to `dst`, in pieces of [`ALIASED_PIECE`] where `rep movsb`
/// would alias.
///
/// Out of line, as the `memcpy` call it stands for: inlined, its loop grew the small path's
/// callers (path_cost pair 782 -> 793 instructions), and [`copy`] calls it only past a piece
/// (through it, a small message's header paid ~35 more).
///
/// # Safety
/// As for [`copy`].
#[inline(never)]
pub(crate) unsafe fn copy_bulk(src: *const u8, dst: *mut u8, n: usize) {
    let piece = piece(src, dst, n);
    let mut at = 0;
    while at < n {
        let l = piece.min(n - at);
        std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), l);
        at += l;
    }
}

/// Copies a collective's own part (gather, scatter, all-to-all: the rank's part from its send
/// buffer to its receive buffer), which may lie where it goes already (in place: `src == dst`,
/// nothing to do), as [`copy`] does: a plain `memmove` of two `malloc`'d buffers 16 bytes apart
/// modulo 4 KiB took `rep movsb`'s aliasing path (coll.c, 2 ranks, gather 4 KiB 3.4 us, 32 KiB
/// 27 us; 0.7-1.0 and 6.7-8.0 with `rep movsb` off). Ranges that overlap otherwise move as
/// `memmove` moves them.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes.
#[inline]
pub(crate) unsafe fn copy_own(src: *const u8, dst: *mut u8, n: usize) {
    let (s, d) = (src as usize, dst as usize);
    match () {
        _ if s == d => {}
        _ if s < d + n && d < s + n => std::ptr::copy(src, dst, n),
        _ => copy(src, dst, n),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_small_length_copies_exactly_its_bytes() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = [0u8; 48];
            // SAFETY: both buffers hold at least n bytes and are distinct.
            unsafe { super::copy(src.as_ptr(), dst.as_mut_ptr(), n) };
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(dst[n..].iter().all(|&b| b == 0), "length {n} wrote past its end");
        }
    }

    #[test]
    fn copies_whose_destination_trails_by_1_to_63_bytes_modulo_a_page_go_in_pieces() {
        let at = |a: usize| a as *mut u8;
        let page = 1 << 20;
        // 1 MiB from a page-aligned slot into a malloc'd block 16 bytes into its page.
        assert_eq!(super::piece(at(page), at(8 * page + 16), 1 << 20), super::ALIASED_PIECE);
        for skew in [1, 8, 32, 63] {
            assert_eq!(super::piece(at(page), at(3 * page + skew), 65_536), super::ALIASED_PIECE, "skew {skew}");
        }
        for skew in [0, 64, 128, 2048, 4032, 4080, 4095] {
            assert_eq!(super::piece(at(page), at(3 * page + skew), 65_536), 65_536, "skew {skew}");
        }
        // A small copy never takes `rep movsb`: one piece whatever its skew.
        assert_eq!(super::piece(at(page), at(3 * page + 16), 2048), 2048);
    }

    #[test]
    fn an_own_part_copies_in_place_overlapping_and_apart() {
        let pattern = |i: usize| (i * 7 + i / 251) as u8;
        for n in [0, 5, 2049, 40_000] {
            let mut buf: Vec<u8> = (0..3 * n + 64).map(pattern).collect();
            let p = buf.as_mut_ptr();
            // SAFETY: every range lies inside `buf`.
            unsafe {
                super::copy_own(p, p, n);
                assert!(buf.iter().enumerate().all(|(i, &b)| b == pattern(i)), "in place, {n} bytes");
                super::copy_own(p, p.add(n / 2 + 1), n);
                assert!((0..n).all(|i| buf[n / 2 + 1 + i] == pattern(i)), "overlapping, {n} bytes");
                let q = buf.as_mut_ptr();
                super::copy_own(q.add(2 * n + 48), q.add(16), n.min(40));
            }
            assert!((0..n.min(40)).all(|i| buf[16 + i] == pattern(2 * n + 48 + i)), "apart, {n} bytes");
        }
    }

    #[test]
    fn a_large_copy_copies_exactly_its_bytes_at_every_skew() {
        // Source and destination in one buffer, `gap + skew` bytes apart (gap a multiple of
        // 4 KiB), so the skew modulo 4 KiB is the one chosen, the aliasing pieces included.
        let gap = 20_480;
        let pattern = |i: usize| (i * 7 + i / 251) as u8;
        for skew in [0, 1, 16, 63, 64, 4095] {
            for n in [17, 2047, 2048, 2049, 4096, 6001, 16_384] {
                let mut buf: Vec<u8> = (0..gap + skew + n + 8).map(pattern).collect();
                let (src, dst) = buf.split_at_mut(gap + skew);
                // SAFETY: src holds at least n bytes, dst n + 8, and the two are disjoint.
                unsafe { super::copy(src.as_ptr(), dst.as_mut_ptr(), n) };
                assert!((0..n).all(|i| dst[i] == pattern(i)), "length {n} skew {skew}");
                assert!((n..n + 8).all(|i| dst[i] == pattern(gap + skew + i)), "length {n} skew {skew}: past its end");
            }
        }
    }
}

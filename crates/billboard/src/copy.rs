//! Copies of the small-message path. A variable-length `copy_nonoverlapping` is a call into
//! libc's `memcpy` (through the PLT in a shared library) even for the handful of bytes most
//! messages carry; up to 16 bytes two overlapping loads and stores do it inline.

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
        _ => std::ptr::copy_nonoverlapping(src, dst, n),
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
}

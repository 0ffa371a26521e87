//! Copies of the few bytes a small message carries, without a call to `memcpy`: a 1-byte
//! message crossed `memcpy` four times a side (pack, ring write, ring read, unpack), ~20
//! instructions each for one byte. Up to 16 bytes, two overlapping loads and stores of a
//! fixed width do it (the way `memcpy` itself handles its smallest sizes); longer runs go to
//! `memcpy`.

/// Copies `src` into the start of `dst` (which holds at least as many bytes).
#[inline(always)]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    match n {
        0 => {}
        1 => dst[0] = src[0],
        2..=3 => {
            dst[..2].copy_from_slice(&src[..2]);
            dst[n - 2..].copy_from_slice(&src[n - 2..]);
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Appends `src` to `v`: a few bytes one by one (a push is a capacity check and a store),
/// more with `memcpy`.
#[inline(always)]
pub fn extend(v: &mut Vec<u8>, src: &[u8]) {
    if src.len() > 8 {
        return v.extend_from_slice(src);
    }
    v.reserve(src.len());
    for &b in src {
        v.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_copies_and_appends_exactly_its_bytes() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = vec![0u8; n + 3];
            copy(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "copy of {n}");
            assert!(dst[n..].iter().all(|&b| b == 0), "copy of {n} wrote past its end");
            let mut v = vec![99u8];
            extend(&mut v, &src[..n]);
            assert_eq!(v[0], 99);
            assert_eq!(&v[1..], &src[..n], "extend by {n}");
        }
    }
}

//! Moving data between a user buffer laid out by a type map and packed bytes, and the
//! "external32" representation (MPI 3.1 section 13.5.2: big-endian, fixed sizes).

use super::typemap::TypeMap;
use crate::abi::*;

/// Calls `f(offset, len)` for each piece of memory of `count` instances of `t` (the k-th at
/// `k * extent`), in packed order, until `f` returns false. Contiguous instances are one piece.
#[inline]
pub(crate) fn for_each_piece(t: &TypeMap, count: usize, mut f: impl FnMut(i64, usize) -> bool) {
    if let Some(off) = t.contiguous(count) {
        if t.size > 0 && count > 0 {
            f(off, count * t.size);
        }
        return;
    }
    let extent = t.extent();
    let mut at = 0i64;
    for _ in 0..count {
        if !t.for_each_piece(at, &mut f) {
            return;
        }
        at = at.wrapping_add(extent);
    }
}

/// Copies `count` instances of `t` at `base` into `out` (which holds `count * t.size` bytes).
///
/// # Safety
/// Every block of every instance must be readable memory.
pub(crate) unsafe fn pack(t: &TypeMap, base: *const u8, count: usize, out: &mut [u8]) {
    if let Some(flat) = t.flat() {
        // Small types (the message path's common case): a plain loop over their pieces.
        let (extent, mut dst) = (t.extent() as isize, out.as_mut_ptr());
        for i in 0..count as isize {
            let at = base.wrapping_offset(i.wrapping_mul(extent));
            for &(off, len) in flat {
                // SAFETY: the caller vouches for the user memory; `out` has room for every piece.
                std::ptr::copy_nonoverlapping(at.wrapping_offset(off as isize), dst, len);
                dst = dst.add(len);
            }
        }
        return;
    }
    let mut pos = 0;
    for_each_piece(t, count, |off, len| {
        // SAFETY: the caller vouches for the user memory; `out` has room for every piece.
        std::ptr::copy_nonoverlapping(base.wrapping_offset(off as isize), out.as_mut_ptr().add(pos), len);
        pos += len;
        true
    });
}

/// Copies packed bytes back into `count` instances of `t` at `base`; stops early when `src`
/// runs out (a short message fills only the first elements).
///
/// # Safety
/// Every block of every instance must be writable memory.
pub(crate) unsafe fn unpack(t: &TypeMap, src: &[u8], base: *mut u8, count: usize) {
    if let Some(flat) = t.flat() {
        let (extent, mut pos) = (t.extent() as isize, 0);
        for i in 0..count as isize {
            let at = base.wrapping_offset(i.wrapping_mul(extent));
            for &(off, len) in flat {
                let n = len.min(src.len() - pos);
                // SAFETY: as for `pack`, in the other direction.
                std::ptr::copy_nonoverlapping(src.as_ptr().add(pos), at.wrapping_offset(off as isize), n);
                pos += n;
                if pos == src.len() {
                    return;
                }
            }
        }
        return;
    }
    let mut pos = 0;
    for_each_piece(t, count, |off, len| {
        let n = len.min(src.len() - pos);
        // SAFETY: as for `pack`, in the other direction.
        std::ptr::copy_nonoverlapping(src.as_ptr().add(pos), base.wrapping_offset(off as isize), n);
        pos += n;
        pos < src.len()
    });
}

/// Size of a predefined type in external32 and the size of the units it is byte-swapped in
/// (complex numbers and `MPI_2INT`-like types swap each half). MPI 3.1 table 13.2: `long` is
/// 4 bytes there, `wchar_t` 2, `long double` 16.
pub(crate) fn external32(t: MPI_Datatype, native: usize) -> (usize, usize) {
    match t {
        MPI_LONG | MPI_UNSIGNED_LONG => (4, 4),
        MPI_WCHAR => (2, 2),
        MPI_C_FLOAT_COMPLEX
        | MPI_C_DOUBLE_COMPLEX
        | MPI_C_LONG_DOUBLE_COMPLEX
        | MPI_COMPLEX
        | MPI_DOUBLE_COMPLEX
        | MPI_COMPLEX8
        | MPI_COMPLEX16
        | MPI_COMPLEX32
        | MPI_CXX_FLOAT_COMPLEX
        | MPI_CXX_DOUBLE_COMPLEX
        | MPI_CXX_LONG_DOUBLE_COMPLEX
        | MPI_2INT
        | MPI_2INTEGER
        | MPI_2REAL
        | MPI_2DOUBLE_PRECISION => (native, native / 2),
        MPI_BYTE | MPI_PACKED | MPI_CHAR | MPI_UNSIGNED_CHAR | MPI_SIGNED_CHAR | MPI_CHARACTER => (native, 1),
        _ => (native, native),
    }
}

/// Bytes of `count` instances of `t` in external32, if that fits in memory.
pub(crate) fn external32_size(t: &TypeMap, count: usize) -> Option<usize> {
    count.checked_mul(t.external32_size())
}

/// One native element (`native.len()` bytes) to external32 (`ext.len()` bytes): big-endian,
/// integers narrowed or widened with their sign (`signed`), swapped in `unit`-byte pieces.
fn to_external(native: &[u8], ext: &mut [u8], unit: usize, signed: bool) {
    if native.len() == ext.len() {
        for (n, e) in native.chunks(unit).zip(ext.chunks_mut(unit)) {
            e.iter_mut().zip(n.iter().rev()).for_each(|(e, n)| *e = *n);
        }
        return;
    }
    let mut v = [0u8; 16];
    v[..native.len()].copy_from_slice(native);
    let fill = if signed && native[native.len() - 1] & 0x80 != 0 { 0xff } else { 0 };
    v[native.len()..].fill(fill);
    let n = ext.len();
    for (i, e) in ext.iter_mut().enumerate() {
        *e = v[n - 1 - i];
    }
}

fn from_external(ext: &[u8], native: &mut [u8], unit: usize, signed: bool) {
    if native.len() == ext.len() {
        for (e, n) in ext.chunks(unit).zip(native.chunks_mut(unit)) {
            n.iter_mut().zip(e.iter().rev()).for_each(|(n, e)| *n = *e);
        }
        return;
    }
    let fill = if signed && ext[0] & 0x80 != 0 { 0xff } else { 0 };
    native.fill(fill);
    for (i, e) in ext.iter().rev().enumerate().take(native.len()) {
        native[i] = *e;
    }
}

/// Converts packed native bytes (`count` instances of `t`, type-map order) to external32.
pub(crate) fn native_to_external(t: &TypeMap, count: usize, native: &[u8], ext: &mut [u8]) {
    convert(t, count, native, ext, true);
}

/// The inverse of [`native_to_external`].
pub(crate) fn external_to_native(t: &TypeMap, count: usize, ext: &[u8], native: &mut [u8]) {
    convert(t, count, ext, native, false);
}

/// Element by element from `src` to `dst`: native to external32 (`to_external`) or back.
fn convert(t: &TypeMap, count: usize, src: &[u8], dst: &mut [u8], to_external32: bool) {
    let (mut s, mut d) = (0, 0);
    for _ in 0..count {
        t.for_each_run(&mut |basic, size, n| {
            let (es, unit) = external32(basic, size);
            let signed = basic == MPI_LONG;
            for _ in 0..n {
                if to_external32 {
                    to_external(&src[s..s + size], &mut dst[d..d + es], unit, signed);
                    (s, d) = (s + size, d + es);
                } else {
                    from_external(&src[s..s + es], &mut dst[d..d + size], unit, signed);
                    (s, d) = (s + es, d + size);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::typemap::{hvector, structure};
    use super::*;
    use std::sync::Arc;

    fn basic(t: MPI_Datatype, size: usize) -> Arc<TypeMap> {
        Arc::new(TypeMap::basic(t, size, size))
    }

    #[test]
    fn pack_and_unpack_a_vector() {
        let t = hvector(3, 1, 8, &basic(MPI_INT, 4)).unwrap();
        let src: Vec<i32> = (0..8).collect();
        let mut packed = vec![0u8; 2 * t.size];
        // Two instances of extent 20 bytes: ints 0, 2, 4 and 5, 7, 9 (only 8 present: use 1).
        unsafe { pack(&t, src.as_ptr().cast(), 1, &mut packed[..12]) };
        let got: Vec<i32> = packed[..12].chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, [0, 2, 4]);
        let mut dst = vec![-1i32; 8];
        unsafe { unpack(&t, &packed[..8], dst.as_mut_ptr().cast(), 1) };
        assert_eq!(dst, [0, -1, 2, -1, -1, -1, -1, -1], "a short message fills the first elements");
    }

    #[test]
    fn external32_is_big_endian_with_fixed_sizes() {
        let s = structure(&[(1, 0, &basic(MPI_INT, 4)), (1, 8, &basic(MPI_LONG, 8))]).unwrap();
        assert_eq!(external32_size(&s, 2), Some(16));
        let native = [0x01020304i32.to_ne_bytes().to_vec(), (-2i64).to_ne_bytes().to_vec()].concat();
        let mut ext = [0u8; 8];
        native_to_external(&s, 1, &native, &mut ext);
        assert_eq!(ext, [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe]);
        let mut back = [0u8; 12];
        external_to_native(&s, 1, &ext, &mut back);
        assert_eq!(back.to_vec(), native);
    }
}

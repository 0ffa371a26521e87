//! How packed items become bytes: PVM's two encodings, byte by byte.
//!
//! - `PvmDataDefault` is XDR (RFC 4506) as Debian's PVM 3.4.6 writes it on x86-64: every
//!   integer, `short` and `long` included, is a 4-byte big-endian unit (sign-extended, even an
//!   `unsigned short`; zero-extended for `unsigned int`;
//!   a `long` keeps its low 32 bits, as Debian's library does without an error); `float` is 4 bytes and `double` 8
//!   bytes of big-endian IEEE 754; complex numbers are their two parts in order; a run of
//!   bytes is copied and padded with zeros to a multiple of 4 (per pack call, so pack and
//!   unpack calls must pair up); a string is its length counting the NUL as an XDR int, then
//!   its bytes and the NUL, padded to 4. `tests/xdr_matches_debian.rs` pins this against
//!   Debian's library.
//! - `PvmDataRaw` (and `PvmDataInPlace`, which is raw on the wire) is the sender's native
//!   layout: `short` 2 bytes, `int` 4, `long` 8, little-endian here; no padding; a string is a
//!   native int length (counting the NUL) then its bytes and the NUL.

use crate::error::PvmError;

/// The encodings a buffer can have (`pvm_mkbuf`'s argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Xdr,
    Raw,
    InPlace,
}

impl Encoding {
    /// PVM's number for it (`PvmDataDefault` 0, `PvmDataRaw` 1, `PvmDataInPlace` 2).
    pub fn from_code(code: i32) -> Result<Encoding, PvmError> {
        match code {
            0 => Ok(Encoding::Xdr),
            1 => Ok(Encoding::Raw),
            2 => Ok(Encoding::InPlace),
            _ => Err(PvmError::BadParam),
        }
    }

    pub fn code(self) -> i32 {
        match self {
            Encoding::Xdr => 0,
            Encoding::Raw => 1,
            Encoding::InPlace => 2,
        }
    }

    /// The encoding a receiver reads: in-place data travels raw.
    pub fn on_wire(self) -> Encoding {
        match self {
            Encoding::InPlace => Encoding::Raw,
            e => e,
        }
    }
}

/// One packable C type: how it is written in each encoding.
pub trait Item: Copy + Default {
    /// Bytes per item in XDR.
    const XDR_SIZE: usize;
    /// Bytes per item in the native layout.
    const RAW_SIZE: usize;
    fn put_xdr(self, out: &mut Vec<u8>) -> Result<(), PvmError>;
    /// `b` is exactly `XDR_SIZE` bytes.
    fn get_xdr(b: &[u8]) -> Self;
    fn put_raw(self, out: &mut Vec<u8>);
    /// `b` is exactly `RAW_SIZE` bytes.
    fn get_raw(b: &[u8]) -> Self;
}

/// Integers narrower than or as wide as 4 bytes: one 4-byte XDR unit, extended through
/// `$via` (an `unsigned short` is sign-extended, as Debian's library writes it: 65535 is
/// `ff ff ff ff`).
macro_rules! small_int {
    ($t:ty, $wide:ty) => {
        small_int!($t, $wide, $t);
    };
    ($t:ty, $wide:ty, $via:ty) => {
        impl Item for $t {
            const XDR_SIZE: usize = 4;
            const RAW_SIZE: usize = std::mem::size_of::<$t>();
            fn put_xdr(self, out: &mut Vec<u8>) -> Result<(), PvmError> {
                out.extend_from_slice(&(self as $via as $wide).to_be_bytes());
                Ok(())
            }
            fn get_xdr(b: &[u8]) -> Self {
                <$wide>::from_be_bytes([b[0], b[1], b[2], b[3]]) as $t
            }
            fn put_raw(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn get_raw(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().expect("RAW_SIZE bytes"))
            }
        }
    };
}
small_int!(i16, i32);
small_int!(u16, u32, i16);
small_int!(i32, i32);
small_int!(u32, u32);

/// `long` and `unsigned long`: 8 bytes natively, one 4-byte unit in XDR holding the low 32
/// bits, as Debian's PVM 3.4.6 writes them (the bytes must match). Unpacking sign-extends a
/// `long`, where Debian's library zero-extends it (it reads back -7 as 4294967289): we return
/// the value that was packed.
macro_rules! long_int {
    ($t:ty, $narrow:ty) => {
        impl Item for $t {
            const XDR_SIZE: usize = 4;
            const RAW_SIZE: usize = 8;
            fn put_xdr(self, out: &mut Vec<u8>) -> Result<(), PvmError> {
                out.extend_from_slice(&(self as $narrow).to_be_bytes());
                Ok(())
            }
            fn get_xdr(b: &[u8]) -> Self {
                <$narrow>::from_be_bytes([b[0], b[1], b[2], b[3]]) as $t
            }
            fn put_raw(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn get_raw(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().expect("RAW_SIZE bytes"))
            }
        }
    };
}
long_int!(i64, i32);
long_int!(u64, u32);

macro_rules! float {
    ($t:ty, $n:expr) => {
        impl Item for $t {
            const XDR_SIZE: usize = $n;
            const RAW_SIZE: usize = $n;
            fn put_xdr(self, out: &mut Vec<u8>) -> Result<(), PvmError> {
                out.extend_from_slice(&self.to_be_bytes());
                Ok(())
            }
            fn get_xdr(b: &[u8]) -> Self {
                <$t>::from_be_bytes(b.try_into().expect("XDR_SIZE bytes"))
            }
            fn put_raw(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn get_raw(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().expect("RAW_SIZE bytes"))
            }
        }
    };
}
float!(f32, 4);
float!(f64, 8);

/// A complex number (`pvm_pkcplx`, `pvm_pkdcplx`): real part, then imaginary part.
impl<T: Item> Item for [T; 2] {
    const XDR_SIZE: usize = 2 * T::XDR_SIZE;
    const RAW_SIZE: usize = 2 * T::RAW_SIZE;
    fn put_xdr(self, out: &mut Vec<u8>) -> Result<(), PvmError> {
        self[0].put_xdr(out)?;
        self[1].put_xdr(out)
    }
    fn get_xdr(b: &[u8]) -> Self {
        [T::get_xdr(&b[..T::XDR_SIZE]), T::get_xdr(&b[T::XDR_SIZE..])]
    }
    fn put_raw(self, out: &mut Vec<u8>) {
        self[0].put_raw(out);
        self[1].put_raw(out);
    }
    fn get_raw(b: &[u8]) -> Self {
        [T::get_raw(&b[..T::RAW_SIZE]), T::get_raw(&b[T::RAW_SIZE..])]
    }
}

/// Appends `items` to `out` in `enc`. On an error nothing is appended.
pub fn pack<T: Item>(enc: Encoding, out: &mut Vec<u8>, items: impl IntoIterator<Item = T>) -> Result<(), PvmError> {
    let start = out.len();
    for item in items {
        let r = match enc {
            Encoding::Xdr => item.put_xdr(out),
            Encoding::Raw | Encoding::InPlace => {
                item.put_raw(out);
                Ok(())
            }
        };
        if let Err(e) = r {
            out.truncate(start);
            return Err(e);
        }
    }
    Ok(())
}

/// Reads `n` items at `*pos` and hands each to `put` with its index; moves `*pos` past them.
/// `PvmNoData` (and `*pos` unmoved) when the message holds fewer.
pub fn unpack<T: Item>(
    enc: Encoding,
    data: &[u8],
    pos: &mut usize,
    n: usize,
    mut put: impl FnMut(usize, T),
) -> Result<(), PvmError> {
    let size = match enc {
        Encoding::Xdr => T::XDR_SIZE,
        _ => T::RAW_SIZE,
    };
    let need = n.checked_mul(size).ok_or(PvmError::NoData)?;
    let body = take(data, *pos, need)?;
    for (i, b) in body.chunks_exact(size).enumerate() {
        put(
            i,
            match enc {
                Encoding::Xdr => T::get_xdr(b),
                _ => T::get_raw(b),
            },
        );
    }
    *pos += need;
    Ok(())
}

fn take(data: &[u8], pos: usize, n: usize) -> Result<&[u8], PvmError> {
    let end = pos.checked_add(n).ok_or(PvmError::NoData)?;
    data.get(pos..end).ok_or(PvmError::NoData)
}

fn xdr_pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Appends a run of bytes (`pvm_pkbyte`): padded to 4 in XDR.
#[inline]
pub fn pack_bytes(enc: Encoding, out: &mut Vec<u8>, bytes: &[u8]) {
    crate::small_copy::extend(out, bytes);
    if enc == Encoding::Xdr {
        out.resize(out.len() + xdr_pad(bytes.len()), 0);
    }
}

/// Reads a run of `n` bytes packed by [`pack_bytes`].
pub fn unpack_bytes<'a>(enc: Encoding, data: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], PvmError> {
    let pad = if enc == Encoding::Xdr { xdr_pad(n) } else { 0 };
    take(data, *pos, n + pad)?;
    let bytes = &data[*pos..*pos + n];
    *pos += n + pad;
    Ok(bytes)
}

/// Appends a C string (`pvm_pkstr`; `s` without its NUL): its length with the NUL, then it.
pub fn pack_str(enc: Encoding, out: &mut Vec<u8>, s: &[u8]) -> Result<(), PvmError> {
    let len = i32::try_from(s.len() + 1).map_err(|_| PvmError::Overflow)?;
    pack(enc, out, [len])?;
    let start = out.len();
    out.extend_from_slice(s);
    out.push(0);
    if enc == Encoding::Xdr {
        out.resize(out.len() + xdr_pad(out.len() - start), 0);
    }
    Ok(())
}

/// Reads a string packed by [`pack_str`]: its bytes with the NUL, as packed (a sender's
/// malformed string without a NUL gets none; the caller adds its own).
pub fn unpack_str<'a>(enc: Encoding, data: &'a [u8], pos: &mut usize) -> Result<&'a [u8], PvmError> {
    let mut at = *pos;
    let mut len = 0i32;
    unpack(enc, data, &mut at, 1, |_, v: i32| len = v)?;
    let len = usize::try_from(len).map_err(|_| PvmError::BadMsg)?;
    let s = unpack_bytes(enc, data, &mut at, len)?;
    *pos = at;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip<T: Item + PartialEq + std::fmt::Debug>(enc: Encoding, items: Vec<T>) {
        let mut out = vec![0xAB];
        pack(enc, &mut out, items.iter().copied()).unwrap();
        let size = if enc == Encoding::Xdr { T::XDR_SIZE } else { T::RAW_SIZE };
        assert_eq!(out.len(), 1 + items.len() * size);
        let mut pos = 1;
        let mut back = vec![T::default(); items.len()];
        unpack(enc, &out, &mut pos, items.len(), |i, v| back[i] = v).unwrap();
        assert_eq!(back, items);
        assert_eq!(pos, out.len());
        assert_eq!(unpack(enc, &out, &mut pos, 1, |_, _: T| ()), Err(PvmError::NoData));
    }

    fn encodings() -> impl Strategy<Value = Encoding> {
        prop_oneof![Just(Encoding::Xdr), Just(Encoding::Raw), Just(Encoding::InPlace)]
    }

    proptest! {
        #[test]
        fn shorts(enc in encodings(), v in proptest::collection::vec(any::<i16>(), 0..40)) { round_trip(enc, v) }
        #[test]
        fn ushorts(enc in encodings(), v in proptest::collection::vec(any::<u16>(), 0..40)) { round_trip(enc, v) }
        #[test]
        fn ints(enc in encodings(), v in proptest::collection::vec(any::<i32>(), 0..40)) { round_trip(enc, v) }
        #[test]
        fn uints(enc in encodings(), v in proptest::collection::vec(any::<u32>(), 0..40)) { round_trip(enc, v) }
        #[test]
        fn longs_that_fit(enc in encodings(), v in proptest::collection::vec(any::<i32>(), 0..40)) {
            round_trip(enc, v.into_iter().map(i64::from).collect())
        }
        #[test]
        fn ulongs_that_fit(enc in encodings(), v in proptest::collection::vec(any::<u32>(), 0..40)) {
            round_trip(enc, v.into_iter().map(u64::from).collect())
        }
        #[test]
        fn raw_longs(v in proptest::collection::vec(any::<i64>(), 0..40)) { round_trip(Encoding::Raw, v) }
        #[test]
        fn floats(enc in encodings(), v in proptest::collection::vec(any::<i32>(), 0..40)) {
            // Compared as bits: every float, NaNs included, survives.
            let v: Vec<f32> = v.into_iter().map(|b| f32::from_bits(b as u32)).collect();
            let mut out = Vec::new();
            pack(enc, &mut out, v.iter().copied()).unwrap();
            let mut back = vec![0u32; v.len()];
            unpack(enc, &out, &mut 0, v.len(), |i, x: f32| back[i] = x.to_bits()).unwrap();
            prop_assert_eq!(back, v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        }
        #[test]
        fn doubles(enc in encodings(), v in proptest::collection::vec(-1e300f64..1e300, 0..40)) { round_trip(enc, v) }
        #[test]
        fn complexes(enc in encodings(), v in proptest::collection::vec(any::<(i16, i16)>(), 0..20)) {
            round_trip(enc, v.iter().map(|&(a, b)| [f32::from(a), f32::from(b)]).collect());
            round_trip(enc, v.iter().map(|&(a, b)| [f64::from(a), f64::from(b)]).collect());
        }
        #[test]
        fn bytes_and_strings(enc in encodings(), b in proptest::collection::vec(any::<u8>(), 0..40),
                             s in "[a-zA-Z0-9 ]{0,30}") {
            let mut out = Vec::new();
            pack_bytes(enc, &mut out, &b);
            pack_str(enc, &mut out, s.as_bytes()).unwrap();
            if enc == Encoding::Xdr { prop_assert_eq!(out.len() % 4, 0); }
            let mut pos = 0;
            prop_assert_eq!(unpack_bytes(enc, &out, &mut pos, b.len()).unwrap(), &b[..]);
            let back = unpack_str(enc, &out, &mut pos).unwrap();
            prop_assert_eq!(&back[..back.len() - 1], s.as_bytes());
            prop_assert_eq!(pos, out.len());
        }
        #[test]
        fn truncated_messages_are_no_data(enc in encodings(), v in proptest::collection::vec(any::<i32>(), 1..10), cut in 1usize..4) {
            let mut out = Vec::new();
            pack(enc, &mut out, v.iter().copied()).unwrap();
            out.truncate(out.len() - cut);
            let mut pos = 0;
            prop_assert_eq!(unpack(enc, &out, &mut pos, v.len(), |_, _: i32| ()), Err(PvmError::NoData));
            prop_assert_eq!(pos, 0);
        }
    }

    #[test]
    fn a_long_beyond_32_bits_keeps_its_low_bits_in_xdr() {
        let mut out = vec![];
        pack(Encoding::Xdr, &mut out, [1i64 << 40 | 5, -(1i64 << 40) - 3]).unwrap();
        assert_eq!(out, [0, 0, 0, 5, 0xff, 0xff, 0xff, 0xfd], "the bytes Debian's library writes");
        let mut back = [0i64; 2];
        unpack(Encoding::Xdr, &out, &mut 0, 2, |i, v: i64| back[i] = v).unwrap();
        assert_eq!(back, [5, -3]);
    }

    #[test]
    fn a_string_with_a_bad_length_is_a_bad_message() {
        let mut out = Vec::new();
        pack(Encoding::Xdr, &mut out, [-5i32]).unwrap();
        assert_eq!(unpack_str(Encoding::Xdr, &out, &mut 0), Err(PvmError::BadMsg));
        let mut out = Vec::new();
        pack(Encoding::Xdr, &mut out, [1000i32]).unwrap();
        assert_eq!(unpack_str(Encoding::Xdr, &out, &mut 0), Err(PvmError::NoData));
    }
}

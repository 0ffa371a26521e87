//! `wire_decode`: the 56-byte frame header decoder.

use billboard::transport::tcp::wire::{decode, encode, FrameKind, FRAME_HEADER_BYTES};

/// `decode` never panics, and whatever it accepts re-encodes to the same 56 bytes (one encoding
/// per header: nothing in a header is ignored or normalised).
pub fn check(data: &[u8]) {
    match decode(data) {
        Ok(h) => {
            assert_eq!(&encode(&h)[..], &data[..FRAME_HEADER_BYTES], "decode/encode disagree on {h:?}");
            assert!(h.len == 0 || h.kind.carries_payload());
            assert_eq!(FrameKind::from_u8(h.kind as u8), Some(h.kind));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

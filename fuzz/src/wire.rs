//! `wire_decode`: the 28-byte frame header decoder.

use billboard::transport::tcp::wire::{decode, encode, FrameHeader, FRAME_HEADER_BYTES, MAX_FRAME_PAYLOAD};

/// `decode` never panics, and whatever it accepts re-encodes to the same 28 bytes (one encoding
/// per header: nothing in a header is ignored or normalised).
pub fn check(data: &[u8]) {
    match decode(data) {
        Ok(h) => {
            assert_eq!(&encode(&h)[..], &data[..FRAME_HEADER_BYTES], "decode/encode disagree on {h:?}");
            if let FrameHeader::Record { len, .. } = h {
                assert!(len <= MAX_FRAME_PAYLOAD);
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

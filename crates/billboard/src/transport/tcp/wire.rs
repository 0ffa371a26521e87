//! The TCP route's frame: the engine's record as it is, its length in front.
//!
//! Every frame on an established connection is [`FRAME_HEADER_BYTES`] bytes of header followed by
//! `len` payload bytes. Layout (all integers little-endian, so two hosts of different byte order
//! agree; offsets in bytes):
//!
//! | offset | size | field     | meaning                                                               |
//! |--------|------|-----------|-----------------------------------------------------------------------|
//! | 0      | 4    | len       | payload bytes after the header, at most [`MAX_FRAME_PAYLOAD`]; [`CLOSE`] marks the close frame |
//! | 4      | 4    | h.kind    | the engine's [`Header`], carried opaquely: `kind`                     |
//! | 8      | 4    | h.context | `context`                                                             |
//! | 12     | 4    | h.source  | `source`                                                              |
//! | 16     | 4    | h.tag     | `tag` (two's complement)                                              |
//! | 20     | 8    | h.aux     | `aux`                                                                 |
//!
//! 28 bytes, and nothing else, because TCP gives the rest: bytes arrive in order and unaltered (no
//! sequence number, no checksum); the handshake (`handshake.rs`) authenticated the connection and
//! agreed on the wire version (no magic, no version byte per frame); and the engine's records carry
//! all of its protocol (rendezvous ids and offsets live in its header and payload), so a frame
//! needs no kind of its own. The one frame that is not a record is the close frame (`len` =
//! [`CLOSE`], header bytes zero): it tells an orderly end from a peer that died, whose kernel
//! closes the connection just the same. The handshake authenticates the connection, not each
//! frame: the threat is a stranger connecting to a rank's port, not an attacker on the path.

use crate::transport::Header;
use std::fmt;

/// Size of an encoded frame header: the length word and the engine's [`Header`].
pub const FRAME_HEADER_BYTES: usize = 4 + Header::BYTES;

/// Largest payload one frame may carry (eager message or one rendezvous chunk). A bound every
/// reader can enforce before buffering, so a peer cannot make it allocate without limit. 1 MiB:
/// large enough that per-frame costs vanish against the copy, small enough that a reader's buffer
/// per connection stays modest. (`BB_TCP_CHUNK` may go lower.)
pub const MAX_FRAME_PAYLOAD: u32 = 1 << 20;

/// The length word of the close frame: no more frames follow in this direction.
pub const CLOSE: u32 = u32::MAX;

/// A decoded frame header. See the module documentation for the byte layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameHeader {
    /// One engine record, `len` payload bytes following.
    Record { header: Header, len: u32 },
    /// Orderly close: nothing follows.
    Close,
}

/// Why bytes are not a valid frame header. Each names what was wrong and the value seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer than [`FRAME_HEADER_BYTES`] bytes were given.
    Short { got: usize },
    /// The payload length exceeds [`MAX_FRAME_PAYLOAD`] (garbage, or a stream out of step).
    PayloadTooLarge { len: u32, max: u32 },
    /// A close frame whose header bytes are not zero.
    BadClose,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Short { got } => write!(f, "frame header needs {FRAME_HEADER_BYTES} bytes, got {got}"),
            WireError::PayloadTooLarge { len, max } => {
                write!(f, "frame payload of {len} bytes ({len:#010x}) exceeds the maximum {max}")
            }
            WireError::BadClose => write!(f, "close frame with a non-zero header"),
        }
    }
}

impl std::error::Error for WireError {}

/// Encodes the header of a record of `len` payload bytes (`len` <= [`MAX_FRAME_PAYLOAD`]: the
/// channel never offers larger records, see `TcpChannel::caps`).
#[inline]
pub fn encode_record(h: &Header, len: usize) -> [u8; FRAME_HEADER_BYTES] {
    assert!(len <= MAX_FRAME_PAYLOAD as usize, "a record of {len} bytes does not fit a frame");
    let mut b = [0u8; FRAME_HEADER_BYTES];
    b[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    b[4..8].copy_from_slice(&h.kind.to_le_bytes());
    b[8..12].copy_from_slice(&h.context.to_le_bytes());
    b[12..16].copy_from_slice(&h.source.to_le_bytes());
    b[16..20].copy_from_slice(&h.tag.to_le_bytes());
    b[20..28].copy_from_slice(&h.aux.to_le_bytes());
    b
}

/// Encodes `h` (valid by construction where it is a record: see [`encode_record`]).
pub fn encode(h: &FrameHeader) -> [u8; FRAME_HEADER_BYTES] {
    match h {
        FrameHeader::Record { header, len } => encode_record(header, *len as usize),
        FrameHeader::Close => {
            let mut b = [0u8; FRAME_HEADER_BYTES];
            b[0..4].copy_from_slice(&CLOSE.to_le_bytes());
            b
        }
    }
}

/// Decodes the first [`FRAME_HEADER_BYTES`] of `bytes` (the rest is ignored). Never panics.
#[inline]
pub fn decode(bytes: &[u8]) -> Result<FrameHeader, WireError> {
    let Some(b) = bytes.first_chunk::<FRAME_HEADER_BYTES>() else {
        return Err(WireError::Short { got: bytes.len() });
    };
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let len = u32_at(0);
    if len == CLOSE {
        return if b[4..].iter().all(|&x| x == 0) { Ok(FrameHeader::Close) } else { Err(WireError::BadClose) };
    }
    if len > MAX_FRAME_PAYLOAD {
        return Err(WireError::PayloadTooLarge { len, max: MAX_FRAME_PAYLOAD });
    }
    let header = Header {
        kind: u32_at(4),
        context: u32_at(8),
        source: u32_at(12),
        tag: u32_at(16) as i32,
        aux: u64::from(u32_at(20)) | u64::from(u32_at(24)) << 32,
    };
    Ok(FrameHeader::Record { header, len })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any valid frame header.
    pub(crate) fn frame_header() -> impl Strategy<Value = FrameHeader> {
        prop_oneof![
            1 => Just(FrameHeader::Close),
            9 => (0..=MAX_FRAME_PAYLOAD, any::<(u32, u32, u32, i32, u64)>()).prop_map(
                |(len, (kind, context, source, tag, aux))| FrameHeader::Record {
                    header: Header { kind, context, source, tag, aux },
                    len
                }
            ),
        ]
    }

    fn sample() -> FrameHeader {
        FrameHeader::Record { header: Header { kind: 1, context: 2, source: 3, tag: -4, aux: 5 }, len: 5 }
    }

    #[test]
    fn layout_is_pinned() {
        assert_eq!(FRAME_HEADER_BYTES, 28, "length word + the engine's 24-byte header, nothing more");
        let b = encode(&sample());
        assert_eq!(&b[0..4], &5u32.to_le_bytes());
        assert_eq!(&b[4..8], &1u32.to_le_bytes());
        assert_eq!(&b[16..20], &(-4i32).to_le_bytes());
        assert_eq!(&b[20..28], &5u64.to_le_bytes());
        let c = encode(&FrameHeader::Close);
        assert_eq!(&c[0..4], &[0xff; 4]);
        assert!(c[4..].iter().all(|&x| x == 0));
    }

    #[test]
    fn each_defect_is_named() {
        let good = encode(&sample());
        assert_eq!(decode(&good[..10]), Err(WireError::Short { got: 10 }));
        let mut big = good;
        big[3] = 0x10;
        assert_eq!(decode(&big), Err(WireError::PayloadTooLarge { len: 0x1000_0005, max: MAX_FRAME_PAYLOAD }));
        // The message names the value, so a log line says what the stranger sent.
        assert!(decode(&big).unwrap_err().to_string().contains("0x10000005"));
        let mut close = encode(&FrameHeader::Close);
        close[27] = 1;
        assert_eq!(decode(&close), Err(WireError::BadClose));
        // The first bytes of an HTTP request read as an impossible length.
        assert!(matches!(decode(b"GET / HTTP/1.1\r\nHost: rank0\r\n\r\n"), Err(WireError::PayloadTooLarge { .. })));
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(h in frame_header()) {
            prop_assert_eq!(decode(&encode(&h)), Ok(h));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2 * FRAME_HEADER_BYTES)) {
            if let Ok(h) = decode(&bytes) {
                // Whatever decodes re-encodes to the same bytes: no two encodings of one header.
                prop_assert_eq!(&encode(&h)[..], &bytes[..FRAME_HEADER_BYTES]);
            }
        }
    }
}

//! The TCP route's frame header: fixed size, little-endian, validated before any payload is read.
//!
//! Every frame on an established connection is a [`FrameHeader`] of [`FRAME_HEADER_BYTES`] bytes
//! followed by `len` payload bytes. Layout (all integers little-endian, so two hosts of different
//! byte order agree; offsets in bytes):
//!
//! | offset | size | field      | meaning                                                            |
//! |--------|------|------------|--------------------------------------------------------------------|
//! | 0      | 1    | magic+ver  | high nibble `0xB` marks a Billboard frame, low nibble the version (1) |
//! | 1      | 1    | kind       | [`FrameKind`] (1..=7)                                              |
//! | 2      | 2    | flags      | reserved, must be zero in version 1                                |
//! | 4      | 4    | len        | payload bytes after the header, at most [`MAX_FRAME_PAYLOAD`]      |
//! | 8      | 8    | seq        | per-connection frame number: 0, 1, 2, ... in each direction        |
//! | 16     | 8    | transfer   | rendezvous id chosen by the sender of the RTS (0 for other kinds)   |
//! | 24     | 8    | arg        | per kind: RTS total length, CTS/credit bytes granted, chunk offset |
//! | 32     | 4    | h.kind     | the engine's [`Header`], carried opaquely: `kind`                  |
//! | 36     | 4    | h.context  | `context`                                                          |
//! | 40     | 4    | h.source   | `source`                                                           |
//! | 44     | 4    | h.tag      | `tag` (two's complement)                                           |
//! | 48     | 8    | h.aux      | `aux`                                                              |
//!
//! 56 bytes: a multiple of 8, so a payload read right behind a header stays 8-aligned in a buffer.
//! The secret-based handshake (see `handshake.rs`) authenticates the connection, not each frame:
//! the threat is a stranger connecting to a rank's port, not an attacker on the path.

use crate::transport::Header;
use std::fmt;

/// Size of an encoded [`FrameHeader`].
pub const FRAME_HEADER_BYTES: usize = 56;

/// Byte 0 of every frame: magic nibble `0xB`, wire version 1.
pub const MAGIC_VERSION: u8 = 0xB1;

/// Largest payload one frame may carry (eager message or one rendezvous chunk). A bound every
/// reader can enforce before buffering, so a peer cannot make it allocate without limit. 1 MiB:
/// large enough that per-frame costs vanish against the copy, small enough that a reader's buffer
/// per connection stays modest. (A tunable of the socket layer's chunk size may go lower.)
pub const MAX_FRAME_PAYLOAD: u32 = 1 << 20;

/// What a frame is. Only [`Eager`](FrameKind::Eager) and [`DataChunk`](FrameKind::DataChunk)
/// carry a payload; the others are control frames with `len == 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A whole message below the eager threshold: engine header + payload.
    Eager = 1,
    /// Rendezvous request (RTS): engine header, `transfer` id, `arg` = total message length.
    RendezvousRequest = 2,
    /// Clear to send: the receiver grants `arg` more bytes of `transfer`.
    ClearToSend = 3,
    /// One piece of a rendezvous message: `transfer`, `arg` = offset, payload = the bytes.
    DataChunk = 4,
    /// The sender has sent every byte of `transfer` (`arg` = total length).
    Fin = 5,
    /// The receiver returns `arg` bytes of eager buffer space.
    Credit = 6,
    /// Orderly close: no more frames follow in this direction.
    Close = 7,
}

impl FrameKind {
    pub const ALL: [FrameKind; 7] = [
        FrameKind::Eager,
        FrameKind::RendezvousRequest,
        FrameKind::ClearToSend,
        FrameKind::DataChunk,
        FrameKind::Fin,
        FrameKind::Credit,
        FrameKind::Close,
    ];

    pub fn from_u8(b: u8) -> Option<FrameKind> {
        FrameKind::ALL.get((b as usize).wrapping_sub(1)).copied()
    }

    /// Whether frames of this kind may carry payload bytes.
    pub fn carries_payload(self) -> bool {
        matches!(self, FrameKind::Eager | FrameKind::DataChunk)
    }
}

/// A decoded frame header. See the module documentation for the byte layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub kind: FrameKind,
    /// Payload bytes following the header.
    pub len: u32,
    /// Per-connection frame number.
    pub seq: u64,
    /// Rendezvous transfer id (0 when the kind has none).
    pub transfer: u64,
    /// Kind-specific argument (see [`FrameKind`]).
    pub arg: u64,
    /// The engine's header, carried opaquely.
    pub header: Header,
}

/// Why bytes are not a valid frame header. Each names what was wrong and the value seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer than [`FRAME_HEADER_BYTES`] bytes were given.
    Short { got: usize },
    /// Byte 0's high nibble is not `0xB`: not a Billboard frame (or the stream lost sync).
    BadMagic { byte: u8 },
    /// A Billboard frame of a version this build does not speak.
    UnsupportedVersion { version: u8 },
    /// Byte 1 names no [`FrameKind`].
    UnknownKind { kind: u8 },
    /// Reserved flag bits were set.
    ReservedFlags { flags: u16 },
    /// The payload length exceeds [`MAX_FRAME_PAYLOAD`].
    PayloadTooLarge { len: u32, max: u32 },
    /// A control frame announced payload bytes.
    UnexpectedPayload { kind: FrameKind, len: u32 },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Short { got } => write!(f, "frame header needs {FRAME_HEADER_BYTES} bytes, got {got}"),
            WireError::BadMagic { byte } => write!(f, "bad frame magic: first byte {byte:#04x}, expected 0xb_"),
            WireError::UnsupportedVersion { version } => {
                write!(f, "unsupported frame version {version} (this build speaks {})", MAGIC_VERSION & 0xf)
            }
            WireError::UnknownKind { kind } => write!(f, "unknown frame kind {kind}"),
            WireError::ReservedFlags { flags } => write!(f, "reserved frame flags set: {flags:#06x}"),
            WireError::PayloadTooLarge { len, max } => {
                write!(f, "frame payload of {len} bytes exceeds the maximum {max}")
            }
            WireError::UnexpectedPayload { kind, len } => {
                write!(f, "{kind:?} frame must carry no payload, has {len} bytes")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Encodes `h` (assumed valid: [`decode`] is where untrusted bytes are checked).
pub fn encode(h: &FrameHeader) -> [u8; FRAME_HEADER_BYTES] {
    let mut b = [0u8; FRAME_HEADER_BYTES];
    b[0] = MAGIC_VERSION;
    b[1] = h.kind as u8;
    // b[2..4]: flags, zero.
    b[4..8].copy_from_slice(&h.len.to_le_bytes());
    b[8..16].copy_from_slice(&h.seq.to_le_bytes());
    b[16..24].copy_from_slice(&h.transfer.to_le_bytes());
    b[24..32].copy_from_slice(&h.arg.to_le_bytes());
    b[32..36].copy_from_slice(&h.header.kind.to_le_bytes());
    b[36..40].copy_from_slice(&h.header.context.to_le_bytes());
    b[40..44].copy_from_slice(&h.header.source.to_le_bytes());
    b[44..48].copy_from_slice(&h.header.tag.to_le_bytes());
    b[48..56].copy_from_slice(&h.header.aux.to_le_bytes());
    b
}

/// Decodes the first [`FRAME_HEADER_BYTES`] of `bytes` (the rest is ignored). Never panics;
/// checks in wire order, so the error names the first thing wrong.
pub fn decode(bytes: &[u8]) -> Result<FrameHeader, WireError> {
    let Some(b) = bytes.first_chunk::<FRAME_HEADER_BYTES>() else {
        return Err(WireError::Short { got: bytes.len() });
    };
    if b[0] >> 4 != MAGIC_VERSION >> 4 {
        return Err(WireError::BadMagic { byte: b[0] });
    }
    if b[0] != MAGIC_VERSION {
        return Err(WireError::UnsupportedVersion { version: b[0] & 0xf });
    }
    let kind = FrameKind::from_u8(b[1]).ok_or(WireError::UnknownKind { kind: b[1] })?;
    let flags = u16::from_le_bytes([b[2], b[3]]);
    if flags != 0 {
        return Err(WireError::ReservedFlags { flags });
    }
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let u64_at = |i: usize| u64::from(u32_at(i)) | u64::from(u32_at(i + 4)) << 32;
    let len = u32_at(4);
    if len > MAX_FRAME_PAYLOAD {
        return Err(WireError::PayloadTooLarge { len, max: MAX_FRAME_PAYLOAD });
    }
    if len != 0 && !kind.carries_payload() {
        return Err(WireError::UnexpectedPayload { kind, len });
    }
    Ok(FrameHeader {
        kind,
        len,
        seq: u64_at(8),
        transfer: u64_at(16),
        arg: u64_at(24),
        header: Header {
            kind: u32_at(32),
            context: u32_at(36),
            source: u32_at(40),
            tag: u32_at(44) as i32,
            aux: u64_at(48),
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any valid frame header (payload length consistent with its kind).
    pub(crate) fn frame_header() -> impl Strategy<Value = FrameHeader> {
        (
            proptest::sample::select(FrameKind::ALL.to_vec()),
            0..=MAX_FRAME_PAYLOAD,
            any::<(u64, u64, u64)>(),
            any::<(u32, u32, u32, i32, u64)>(),
        )
            .prop_map(|(kind, len, (seq, transfer, arg), (k, context, source, tag, aux))| FrameHeader {
                kind,
                len: if kind.carries_payload() { len } else { 0 },
                seq,
                transfer,
                arg,
                header: Header { kind: k, context, source, tag, aux },
            })
    }

    fn sample() -> FrameHeader {
        FrameHeader {
            kind: FrameKind::Eager,
            len: 5,
            seq: 9,
            transfer: 0,
            arg: 0,
            header: Header { kind: 1, context: 2, source: 3, tag: -4, aux: 5 },
        }
    }

    #[test]
    fn layout_is_pinned() {
        let b = encode(&sample());
        assert_eq!(b[0], 0xB1);
        assert_eq!(b[1], 1);
        assert_eq!(&b[4..8], &5u32.to_le_bytes());
        assert_eq!(&b[8..16], &9u64.to_le_bytes());
        assert_eq!(&b[44..48], &(-4i32).to_le_bytes());
        assert_eq!(FRAME_HEADER_BYTES % 8, 0);
    }

    #[test]
    fn each_defect_is_named() {
        let good = encode(&sample());
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            decode(&b)
        };
        assert_eq!(decode(&good[..10]), Err(WireError::Short { got: 10 }));
        assert_eq!(with(0, 0x47), Err(WireError::BadMagic { byte: 0x47 }));
        assert_eq!(with(0, 0xB2), Err(WireError::UnsupportedVersion { version: 2 }));
        assert_eq!(with(1, 0), Err(WireError::UnknownKind { kind: 0 }));
        assert_eq!(with(1, 8), Err(WireError::UnknownKind { kind: 8 }));
        assert_eq!(with(3, 1), Err(WireError::ReservedFlags { flags: 0x100 }));
        assert_eq!(with(7, 0x10), Err(WireError::PayloadTooLarge { len: 0x1000_0005, max: MAX_FRAME_PAYLOAD }));
        assert_eq!(with(1, 6), Err(WireError::UnexpectedPayload { kind: FrameKind::Credit, len: 5 }));
        // The message names the value, so a log line says what the stranger sent.
        assert!(with(0, 0x47).unwrap_err().to_string().contains("0x47"));
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

        #[test]
        fn decode_of_a_valid_prefix_with_noise_never_panics(h in frame_header(), i in 0..FRAME_HEADER_BYTES, v: u8) {
            let mut b = encode(&h);
            b[i] = v;
            let _ = decode(&b);
        }
    }
}

//! `frame_reader`: the incremental frame decoder, fed the way a socket feeds it.
//!
//! Input: a mode byte, chunk sizes (see [`Chunker`]), then a body. Mode bit 0 picks what the body
//! is: raw bytes from a stranger (0), or descriptions of frames that are encoded with
//! `FrameWriter` into a valid stream (1), which must come out frame for frame. Mode bit 1 feeds
//! through `unfilled`/`filled` (as a socket `read` does) instead of `feed`.

use billboard::transport::tcp::stream::{FrameReader, FrameWriter, StreamError, MAX_READ_BUFFER};
use billboard::transport::tcp::wire::{FrameHeader, FrameKind, MAX_FRAME_PAYLOAD};
use billboard::transport::Header;

use crate::input::{Chunker, Input};

/// Caps on a generated stream, so one fuzz run stays in the milliseconds.
const MAX_FRAMES: usize = 64;
const MAX_STREAM_BYTES: usize = 2 << 20;

pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte();
    let mut chunker = Chunker::read(&mut input);
    let via_unfilled = mode & 2 != 0;
    if mode & 1 == 0 {
        let (_, err, _) = drive(input.rest(), &mut chunker, via_unfilled);
        if let Some(e) = err {
            assert!(!e.to_string().is_empty());
        }
    } else {
        let frames = describe(&mut input);
        let stream = encode(&frames);
        let (got, err, left) = drive(&stream, &mut chunker, via_unfilled);
        assert_eq!(err, None, "a valid stream was refused");
        assert_eq!(left, 0, "bytes of a valid stream left in the reader");
        assert!(got.len() == frames.len() && got.iter().zip(&frames).all(|(g, f)| g == f), "frames out != frames in");
    }
}

/// A frame as the test sees it: header and payload.
type Owned = (FrameHeader, Vec<u8>);

/// Feeds `stream` in chunks, taking frames after every chunk as a socket layer would; checks the
/// buffer bound and that the reader never stalls. Returns the frames, the first error, and the
/// bytes left buffered at the end.
pub fn drive(stream: &[u8], chunker: &mut Chunker, via_unfilled: bool) -> (Vec<Owned>, Option<StreamError>, usize) {
    let mut reader = FrameReader::new();
    let mut frames = Vec::new();
    for mut chunk in chunker.split(stream) {
        while !chunk.is_empty() {
            let taken = if via_unfilled {
                let space = reader.unfilled();
                let n = space.len().min(chunk.len());
                space[..n].copy_from_slice(&chunk[..n]);
                reader.filled(n);
                n
            } else {
                reader.feed(chunk)
            };
            chunk = &chunk[taken..];
            assert!(reader.buffered() + reader.unfilled().len() <= MAX_READ_BUFFER, "reader buffer past its bound");
            let before = frames.len();
            if let Err(e) = take_frames(&mut reader, &mut frames) {
                // Sticky: the same error again, and nothing more is handed out.
                assert_eq!(reader.next_frame(), Err(e));
                return (frames, Some(e), reader.buffered());
            }
            assert!(taken > 0 || frames.len() > before, "reader took no bytes and gave no frame: stalled");
        }
    }
    (frames, None, reader.buffered())
}

fn take_frames(reader: &mut FrameReader, out: &mut Vec<Owned>) -> Result<(), StreamError> {
    while let Some(f) = reader.next_frame()? {
        assert_eq!(f.payload.len(), f.header.len as usize);
        assert_eq!(f.header.seq, out.len() as u64, "frames numbered out of order");
        out.push((f.header, f.payload.to_vec()));
    }
    Ok(())
}

/// Frames described by the input: kind byte (low bits: kind, bit 7: large payload), length,
/// transfer, arg, the engine header. Payload bytes are a pattern (the reader does not read them).
/// A `Close` frame ends the stream, as the protocol says.
fn describe(input: &mut Input<'_>) -> Vec<Owned> {
    let mut frames = Vec::new();
    let mut bytes = 0;
    while !input.is_empty() && frames.len() < MAX_FRAMES {
        let k = input.byte();
        let kind = FrameKind::ALL[(k & 0x7f) as usize % FrameKind::ALL.len()];
        let raw = input.u16() as u32;
        // Large lengths are multiples of 16 up to exactly MAX_FRAME_PAYLOAD.
        let len = if !kind.carries_payload() {
            0
        } else if k & 0x80 != 0 {
            ((raw + 1) << 4).min(MAX_FRAME_PAYLOAD)
        } else {
            raw
        };
        if bytes + len as usize > MAX_STREAM_BYTES {
            break;
        }
        bytes += len as usize;
        let header = FrameHeader {
            kind,
            len,
            seq: frames.len() as u64,
            transfer: input.u64(),
            arg: input.u64(),
            header: Header {
                kind: input.u32(),
                context: input.u32(),
                source: input.u32(),
                tag: input.u32() as i32,
                aux: input.u64(),
            },
        };
        let seed = input.byte();
        let payload = (0..len as usize).map(|i| seed.wrapping_add((i as u8).wrapping_mul(7))).collect();
        frames.push((header, payload));
        if kind == FrameKind::Close {
            break;
        }
    }
    frames
}

/// The stream a `FrameWriter` produces for `frames`, gathered from its `writev` slices.
pub fn encode(frames: &[Owned]) -> Vec<u8> {
    let mut writer = FrameWriter::new();
    let mut stream = Vec::new();
    for (h, payload) in frames {
        let out = writer.frame(h.kind, h.transfer, h.arg, &h.header, payload.len()).expect("a valid frame");
        for slice in out.io_slices(payload) {
            stream.extend_from_slice(&slice);
        }
    }
    stream
}

//! `frame_reader`: the incremental frame decoder, fed the way a socket feeds it.
//!
//! Input: a mode byte, chunk sizes (see [`Chunker`]), then a body. Mode bit 0 picks what the body
//! is: raw bytes from a stranger (0), or descriptions of frames that are encoded (as a connection
//! writes them) into a valid stream (1), which must come out frame for frame. Mode bit 1 feeds
//! through `unfilled`/`filled` (as a socket `read` does) instead of `feed`.

use billboard::transport::tcp::stream::{Frame, FrameReader, StreamError, MAX_READ_BUFFER};
use billboard::transport::tcp::wire::{encode as encode_header, FrameHeader, MAX_FRAME_PAYLOAD};
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

/// A frame as the test sees it: header and payload (empty for the close frame).
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
        out.push(match f {
            Frame::Record { header, payload } => {
                (FrameHeader::Record { header, len: payload.len() as u32 }, payload.to_vec())
            }
            Frame::Close => (FrameHeader::Close, Vec::new()),
        });
    }
    Ok(())
}

/// Frames described by the input: kind byte (low 7 bits = 1: the close frame; bit 7: large
/// payload), length, the engine header. Payload bytes are a pattern (the reader does not read
/// them). A close frame ends the stream, as the protocol says.
fn describe(input: &mut Input<'_>) -> Vec<Owned> {
    let mut frames = Vec::new();
    let mut bytes = 0;
    while !input.is_empty() && frames.len() < MAX_FRAMES {
        let k = input.byte();
        let raw = input.u16() as u32;
        // Large lengths are multiples of 16 up to exactly MAX_FRAME_PAYLOAD.
        let len = if k & 0x80 != 0 { ((raw + 1) << 4).min(MAX_FRAME_PAYLOAD) } else { raw };
        if k & 0x7f == 1 {
            frames.push((FrameHeader::Close, Vec::new()));
            break;
        }
        if bytes + len as usize > MAX_STREAM_BYTES {
            break;
        }
        bytes += len as usize;
        let header = Header {
            kind: input.u32(),
            context: input.u32(),
            source: input.u32(),
            tag: input.u32() as i32,
            aux: input.u64(),
        };
        let seed = input.byte();
        let payload = (0..len as usize).map(|i| seed.wrapping_add((i as u8).wrapping_mul(7))).collect();
        frames.push((FrameHeader::Record { header, len }, payload));
    }
    frames
}

/// The stream a connection writes for `frames`: each frame's header, then its payload.
pub fn encode(frames: &[Owned]) -> Vec<u8> {
    let mut stream = Vec::new();
    for (h, payload) in frames {
        stream.extend_from_slice(&encode_header(h));
        stream.extend_from_slice(payload);
    }
    stream
}

//! Frames out of a byte stream that arrives in pieces (`wire.rs` says what a frame is); a large
//! message's data goes straight into the vector its receiver gets.

use crate::wire::{Frame, WireError, MAX_FRAME};

/// Collects frames from a byte stream that arrives in pieces.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
    /// Where the next frame starts in `buf` (what is before it is dropped in one go).
    start: usize,
    /// A large message on its way: its data goes straight into its own vector, the one the
    /// receiver gets, instead of through `buf` and a copy.
    large: Option<LargeMessage>,
}

#[derive(Debug)]
struct LargeMessage {
    src: i32,
    tag: i32,
    ctx: i32,
    enc: i32,
    data: Vec<u8>,
    want: usize,
}

/// A `Frame::Message`'s kind (`wire.rs`).
pub(crate) const MESSAGE: i32 = 3;

/// Messages with more data than this take the direct path of [`LargeMessage`].
pub(crate) const LARGE: usize = 64 * 1024;

impl FrameBuffer {
    /// Whether no byte of the stream waits here (the next frame starts in what comes next).
    pub fn is_empty(&self) -> bool {
        self.start == self.buf.len() && self.large.is_none()
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if let Some(m) = &mut self.large {
            let take = (m.want - m.data.len()).min(bytes.len());
            m.data.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > LARGE && self.start > self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, WireError> {
        if let Some(m) = &self.large {
            if m.data.len() < m.want {
                return Ok(None);
            }
            let m = self.large.take().expect("checked above");
            return Ok(Some(Frame::Message { src: m.src, tag: m.tag, ctx: m.ctx, enc: m.enc, data: m.data }));
        }
        let avail = &self.buf[self.start..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let word = |i: usize| i32::from_le_bytes(avail[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let len = word(0) as u32 as usize;
        if len > MAX_FRAME {
            return Err(WireError(format!("a frame of {len} bytes (at most {MAX_FRAME})")));
        }
        if avail.len() < 4 + len {
            if len > LARGE + 24 && avail.len() >= 28 && word(1) == MESSAGE {
                let want = word(6) as u32 as usize;
                if want != len - 24 {
                    return Err(WireError(format!("a message frame of {len} bytes says it holds {want}")));
                }
                let mut data = Vec::with_capacity(want);
                data.extend_from_slice(&avail[28..]);
                self.large = Some(LargeMessage { src: word(2), tag: word(3), ctx: word(4), enc: word(5), data, want });
                self.start = self.buf.len();
            }
            return Ok(None);
        }
        // The usual frame, a whole message, straight into reused memory (`buffer::reuse`).
        if len >= 24 && word(1) == MESSAGE && word(6) as u32 as usize == len - 24 {
            let mut data = crate::buffer::reuse();
            data.extend_from_slice(&avail[28..4 + len]);
            let f = Frame::Message { src: word(2), tag: word(3), ctx: word(4), enc: word(5), data };
            self.start += 4 + len;
            return Ok(Some(f));
        }
        let f = Frame::decode(&avail[4..4 + len]);
        self.start += 4 + len;
        f.map(Some)
    }
}

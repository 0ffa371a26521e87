//! Frames over a byte stream: an incremental reader fed whatever chunks a socket delivers. (The
//! writing side needs no state: a frame is [`encode_record`](super::wire::encode_record)'s header
//! and the payload, handed to `sendmsg` as two slices.)

use super::wire::{decode, FrameHeader, WireError, FRAME_HEADER_BYTES, MAX_FRAME_PAYLOAD};
use crate::transport::Header;
use std::fmt;

/// The reader's buffer never grows past one largest frame: a peer cannot make it allocate more.
pub const MAX_READ_BUFFER: usize = FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD as usize;

/// First allocation of a reader's buffer: room for many small frames per `read`; grows (doubling,
/// up to [`MAX_READ_BUFFER`]) only for a frame that needs it.
const INITIAL_READ_BUFFER: usize = 64 << 10;

/// One complete frame, its payload borrowed from the reader until the next call.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// An engine record.
    Record { header: Header, payload: &'a [u8] },
    /// The peer's orderly close: nothing may follow.
    Close,
}

/// The peer broke the framing protocol; the connection is unusable from here on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// A frame header failed to decode.
    Wire(WireError),
    /// Bytes arrived after the peer's `Close` frame.
    DataAfterClose,
}

impl From<WireError> for StreamError {
    fn from(e: WireError) -> Self {
        StreamError::Wire(e)
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Wire(e) => e.fmt(f),
            StreamError::DataAfterClose => write!(f, "bytes after the peer's close frame"),
        }
    }
}

impl std::error::Error for StreamError {}

/// Incremental frame decoder for one direction of one connection.
///
/// Feed bytes with [`feed`](Self::feed) (copies) or by reading straight into
/// [`unfilled`](Self::unfilled) and calling [`filled`](Self::filled); then take frames with
/// [`next_frame`](Self::next_frame) until it returns `Ok(None)`. A header is checked as soon as its
/// bytes are in, before its payload is buffered. The first error is sticky.
#[derive(Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Bytes `start..end` of `buf` are received and not yet handed out.
    start: usize,
    end: usize,
    closed: bool,
    failed: Option<StreamError>,
}

impl FrameReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes received and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Space to read into (then call [`filled`](Self::filled)). Empty only while complete frames
    /// wait to be taken with [`next_frame`](Self::next_frame).
    pub fn unfilled(&mut self) -> &mut [u8] {
        self.make_room();
        &mut self.buf[self.end..]
    }

    /// Marks `n` bytes at the front of [`unfilled`](Self::unfilled) as received.
    pub fn filled(&mut self, n: usize) {
        assert!(n <= self.buf.len() - self.end, "filled({n}) past the unfilled space");
        self.end += n;
    }

    /// Copies as much of `bytes` as fits and returns how many bytes it took: fewer than
    /// `bytes.len()` only while complete frames wait to be taken.
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        let space = self.unfilled();
        let n = space.len().min(bytes.len());
        space[..n].copy_from_slice(&bytes[..n]);
        self.end += n;
        n
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed, or the protocol error.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, StreamError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let avail = &self.buf[self.start..self.end];
        if self.closed && !avail.is_empty() {
            return Err(self.fail(StreamError::DataAfterClose));
        }
        if avail.len() < FRAME_HEADER_BYTES {
            return Ok(None);
        }
        let (header, len) = match decode(avail) {
            Ok(FrameHeader::Record { header, len }) => (header, len as usize),
            Ok(FrameHeader::Close) => {
                self.start += FRAME_HEADER_BYTES;
                self.closed = true;
                return Ok(Some(Frame::Close));
            }
            Err(e) => return Err(self.fail(e.into())),
        };
        let total = FRAME_HEADER_BYTES + len;
        if avail.len() < total {
            return Ok(None);
        }
        let payload = self.start + FRAME_HEADER_BYTES..self.start + total;
        self.start += total;
        Ok(Some(Frame::Record { header, payload: &self.buf[payload] }))
    }

    fn fail(&mut self, e: StreamError) -> StreamError {
        self.failed = Some(e);
        e
    }

    /// Total bytes the frame at `start` needs in the buffer (a header's worth while it is partial
    /// or bad: a bad header is reported by `next_frame`, and buffers nothing more).
    fn need(&self) -> usize {
        match decode(&self.buf[self.start..self.end]) {
            Ok(FrameHeader::Record { len, .. }) => FRAME_HEADER_BYTES + len as usize,
            Ok(FrameHeader::Close) | Err(_) => FRAME_HEADER_BYTES,
        }
    }

    /// Compacts and grows the buffer so the frame at `start` fits and there is space to read.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let need = self.need();
        if self.start > 0 && (self.end == self.buf.len() || self.buf.len() - self.start < need) {
            // Moves at most one partial frame, once: the cost of taking arbitrary chunks.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() || self.buf.len() - self.start < need {
            let grown = (2 * self.buf.len()).max(INITIAL_READ_BUFFER).max(need).min(MAX_READ_BUFFER);
            self.buf.resize(grown, 0);
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;

//! Forwarding a rank's stdout or stderr: whole lines at a time, so lines of different ranks
//! never interleave mid-line, optionally tagged with the rank (`--tag-output`).
//!
//! A line without its newline yet (a prompt) is held for at most [`PARTIAL_LINE_WAIT`], then
//! written as it is, so `printf "value? "` followed by a read of stdin still shows the prompt.

use std::time::{Duration, Instant};

/// How long an unfinished line waits for its end before it is written anyway.
pub const PARTIAL_LINE_WAIT: Duration = Duration::from_millis(100);

/// A line longer than this is written in pieces rather than buffered without bound.
const MAX_HELD: usize = 64 * 1024;

pub struct LineSplitter {
    /// `[rank] ` when tagging, else empty.
    prefix: Vec<u8>,
    held: Vec<u8>,
    /// When the oldest held byte arrived, if any are held.
    held_since: Option<Instant>,
    /// The last byte written was not a newline: the next bytes continue that line and get no
    /// prefix.
    mid_line: bool,
}

impl LineSplitter {
    pub fn new(tag: Option<usize>) -> Self {
        let prefix = tag.map(|rank| format!("[{rank}] ").into_bytes()).unwrap_or_default();
        LineSplitter { prefix, held: Vec::new(), held_since: None, mid_line: false }
    }

    /// Takes bytes read from the rank; appends what is ready to be written to `out`.
    pub fn push(&mut self, data: &[u8], now: Instant, out: &mut Vec<u8>) {
        if data.is_empty() {
            return;
        }
        self.held.extend_from_slice(data);
        let complete = match self.held.iter().rposition(|&b| b == b'\n') {
            Some(last) => last + 1,
            None if self.held.len() >= MAX_HELD => self.held.len(),
            None => 0,
        };
        if complete > 0 {
            let ready: Vec<u8> = self.held.drain(..complete).collect();
            self.emit(&ready, out);
        }
        self.held_since = match (self.held.is_empty(), self.held_since) {
            (true, _) => None,
            (false, Some(since)) if complete == 0 => Some(since),
            (false, _) => Some(now),
        };
    }

    /// When a held partial line must be written, if one is held.
    pub fn deadline(&self) -> Option<Instant> {
        self.held_since.map(|since| since + PARTIAL_LINE_WAIT)
    }

    /// Writes a held partial line whose wait is over.
    pub fn flush_due(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.deadline().is_some_and(|d| d <= now) {
            let held = std::mem::take(&mut self.held);
            self.emit(&held, out);
            self.held_since = None;
        }
    }

    /// The stream ended: write whatever is held. A tagged stream ends its last line, so the
    /// next rank's tag starts a line of its own.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        self.emit(&held, out);
        self.held_since = None;
        if self.mid_line && !self.prefix.is_empty() {
            out.push(b'\n');
            self.mid_line = false;
        }
    }

    fn emit(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if self.prefix.is_empty() {
            out.extend_from_slice(bytes);
        } else {
            for line in bytes.split_inclusive(|&b| b == b'\n') {
                if !self.mid_line {
                    out.extend_from_slice(&self.prefix);
                }
                out.extend_from_slice(line);
                self.mid_line = line.last() != Some(&b'\n');
            }
            return;
        }
        self.mid_line = bytes.last() != Some(&b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(out: &[u8]) -> &str {
        std::str::from_utf8(out).unwrap()
    }

    #[test]
    fn whole_lines_pass_and_partial_lines_wait() {
        let t0 = Instant::now();
        let mut s = LineSplitter::new(None);
        let mut out = Vec::new();
        s.push(b"one\ntw", t0, &mut out);
        assert_eq!(text(&out), "one\n");
        assert_eq!(s.deadline(), Some(t0 + PARTIAL_LINE_WAIT));
        s.push(b"o\nthr", t0 + Duration::from_millis(50), &mut out);
        assert_eq!(text(&out), "one\ntwo\n");
        // The wait restarts for the new partial line.
        assert_eq!(s.deadline(), Some(t0 + Duration::from_millis(50) + PARTIAL_LINE_WAIT));
        s.finish(&mut out);
        assert_eq!(text(&out), "one\ntwo\nthr");
    }

    #[test]
    fn tags_every_line_once() {
        let t0 = Instant::now();
        let mut s = LineSplitter::new(Some(3));
        let mut out = Vec::new();
        s.push(b"a\nb\n", t0, &mut out);
        s.push(b"prompt? ", t0, &mut out);
        s.flush_due(t0, &mut out);
        assert_eq!(text(&out), "[3] a\n[3] b\n", "not due yet");
        s.flush_due(t0 + PARTIAL_LINE_WAIT, &mut out);
        s.push(b"42\nc", t0, &mut out);
        s.finish(&mut out);
        assert_eq!(text(&out), "[3] a\n[3] b\n[3] prompt? 42\n[3] c\n");
    }

    #[test]
    fn overlong_lines_are_cut_not_buffered_forever() {
        let mut s = LineSplitter::new(None);
        let mut out = Vec::new();
        s.push(&vec![b'x'; MAX_HELD], Instant::now(), &mut out);
        assert_eq!(out.len(), MAX_HELD);
        assert_eq!(s.deadline(), None);
    }
}

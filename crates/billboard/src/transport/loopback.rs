//! Records a socket channel sends to its own rank, kept in this process's memory.
//!
//! The engine never sends one through a socket channel: its self route is the billboard, which
//! always holds its own rank (`routes.rs`). A bare TCP or UDP channel is still asked to (the
//! conformance suite sends to itself on every channel), and answers from this queue, which
//! every poll empties first. Buffers are kept for reuse: a record allocates only while the
//! queue grows past its longest length so far.

use std::collections::VecDeque;

use super::Header;

#[derive(Default)]
pub(crate) struct Loopback {
    /// Records sent and not yet handed over, oldest first.
    queue: VecDeque<(Header, Vec<u8>)>,
    /// Emptied payload buffers, for the next records.
    spare: Vec<Vec<u8>>,
}

impl Loopback {
    /// Whether no record waits.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Keeps one record whose payload is the concatenation of `pieces`.
    pub fn push(&mut self, header: &Header, pieces: &[&[u8]]) {
        let mut payload = self.spare.pop().unwrap_or_default();
        payload.clear();
        for p in pieces {
            payload.extend_from_slice(p);
        }
        self.queue.push_back((*header, payload));
    }

    /// Hands every waiting record to `f`, oldest first; returns how many. Records `f` cannot
    /// send meanwhile (it has no access to this queue), so the loop ends.
    #[inline]
    pub fn drain(&mut self, mut f: impl FnMut(&Header, &[u8])) -> usize {
        let mut handled = 0;
        while let Some((h, p)) = self.queue.pop_front() {
            f(&h, &p);
            self.spare.push(p);
            handled += 1;
        }
        handled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(tag: i32) -> Header {
        Header { kind: 1, context: 2, source: 3, tag, aux: 4 }
    }

    #[test]
    fn records_come_back_in_order_and_buffers_are_reused() {
        let mut l = Loopback::default();
        assert!(l.is_empty());
        l.push(&header(1), &[b"ab", b"c"]);
        l.push(&header(2), &[b"defg"]);
        let mut seen = Vec::new();
        assert_eq!(l.drain(|h, p| seen.push((h.tag, p.to_vec()))), 2);
        assert_eq!(seen, [(1, b"abc".to_vec()), (2, b"defg".to_vec())]);
        assert!(l.is_empty());
        // The next record reuses a buffer: no allocation once the queue has been this long.
        let spare: Vec<*const u8> = l.spare.iter().map(|v| v.as_ptr()).collect();
        l.push(&header(3), &[b"x"]);
        assert!(spare.contains(&l.queue[0].1.as_ptr()));
    }
}

//! The fast-box ring: cache-line cells from one sender to one receiver.
//!
//! A record starts at a 64-byte cell and runs over as many following cells as its payload
//! needs, so the payload is always contiguous (a record that would run past the end is
//! preceded by a SKIP record that fills the ring up to its end). First cell of a record:
//!
//! ```text
//! 0   seq   u64   position + 1 of this record; written LAST with Release: the publish word
//! 8   form  u32   INLINE (payload follows), SLOT (payload = slot index u32), SKIP (wrap)
//! 12  len   u32   INLINE: payload bytes; SLOT: bytes in the slot
//! 16  header 24 B kind, context, source, tag, aux (see transport::Header)
//! 40  payload ...  continues into the following cells
//! ```
//!
//! The seq word carries the absolute position (a lap number in effect), so cells need no
//! clearing by the reader: a stale head cell holds an older position, never the one the reader
//! expects. A cell that held the middle of a payload holds payload bytes instead, which could
//! be anything, so the sender clears the publish word of the cell after each record before it
//! publishes the record (that cell must be free too: a ring holds at most `n - 1` cells). The
//! receiver publishes how far it has consumed lazily (every eighth of the ring), and the
//! sender re-reads that credit only when the ring looks full.

use crate::sync::{AtomicU64, Ordering};
use crate::transport::Header;

pub(crate) const CELL: usize = 64;
pub(crate) const RECORD_HEAD: usize = 40;

pub(crate) const FORM_INLINE: u32 = 1;
pub(crate) const FORM_SLOT: u32 = 2;
const FORM_SKIP: u32 = 3;
/// Not on the wire: [`RingRx::next`]'s answer for a record it cannot read.
pub(crate) const FORM_MALFORMED: u32 = u32::MAX;

/// Where a ring's cells and its credit word live: the shared segment, or a model under loom.
pub(crate) trait RingMemory {
    /// Cells in the ring: a power of two, so positions map to cells with a mask.
    fn ncells(&self) -> usize;
    /// The publish word of cell `i` (its first 8 bytes).
    fn seq(&self, i: usize) -> &AtomicU64;
    /// The receiver's published consumed position (credits).
    fn consumed(&self) -> &AtomicU64;
    /// Writes `src` at byte `offset` of the ring (never past its end).
    ///
    /// # Safety
    /// The caller owns the cells written (they are free per the credits).
    unsafe fn write(&self, offset: usize, src: &[u8]);
    /// The `len` bytes at `offset`.
    ///
    /// # Safety
    /// The caller has Acquire-read the publish word of the record holding them and has not
    /// released it yet.
    unsafe fn read(&self, offset: usize, len: usize) -> &[u8];
}

/// Cells a record with `payload` bytes after its head occupies.
pub(crate) fn cells_for(payload: usize) -> u64 {
    (RECORD_HEAD + payload).div_ceil(CELL) as u64
}

/// The sender's private state for one ring.
#[derive(Default)]
pub(crate) struct RingTx {
    /// Cells posted (absolute position of the next record).
    tail: u64,
    /// Last credit read: cells the receiver had consumed then.
    credit: u64,
}

impl RingTx {
    /// Posts one record, or returns false when the ring has no room for it now.
    /// `payload` is what lands in the ring; `len` is the record's length field.
    #[inline(always)]
    pub fn try_push<M: RingMemory>(&mut self, mem: &M, form: u32, len: u32, header: &Header, payload: &[u8]) -> bool {
        self.try_push_pieces(mem, form, len, header, &[payload], payload.len())
    }

    /// Posts one INLINE record whose payload is `pieces` joined (`total` bytes in all), copied
    /// straight into the cells; false when the ring has no room for it now.
    pub fn try_push_gather<M: RingMemory>(&mut self, mem: &M, header: &Header, pieces: &[&[u8]], total: usize) -> bool {
        debug_assert_eq!(pieces.iter().map(|p| p.len()).sum::<usize>(), total);
        self.try_push_pieces(mem, FORM_INLINE, total as u32, header, pieces, total)
    }

    /// Both of the above: the payload is `pieces` joined, `bytes` in all. Inlined: it is most
    /// of the small-message send.
    #[inline(always)]
    fn try_push_pieces<M: RingMemory>(
        &mut self,
        mem: &M,
        form: u32,
        len: u32,
        header: &Header,
        pieces: &[&[u8]],
        bytes: usize,
    ) -> bool {
        let n = mem.ncells() as u64;
        let need = cells_for(bytes);
        debug_assert!(need * 4 <= n, "record of {bytes} bytes is too large for the ring");
        debug_assert!(n.is_power_of_two());
        let idx = self.tail & (n - 1);
        let skip = if idx + need > n { n - idx } else { 0 };
        // One cell beyond the record must be free too: the next record's first cell, whose
        // publish word `publish` clears.
        if self.tail + skip + need + 1 - self.credit > n {
            self.credit = self.read_credit(mem);
            if self.tail + skip + need + 1 - self.credit > n {
                return false;
            }
        }
        if skip > 0 {
            self.publish(mem, FORM_SKIP, 0, &Header::default(), &[], skip);
            self.tail += skip;
        }
        self.publish(mem, form, len, header, pieces, need);
        self.tail += need;
        true
    }

    /// Whether a record with `payload` bytes fits now (refreshing the credit if needed).
    pub fn has_room<M: RingMemory>(&mut self, mem: &M, payload: usize) -> bool {
        let n = mem.ncells() as u64;
        let need = cells_for(payload);
        let idx = self.tail & (n - 1);
        let skip = if idx + need > n { n - idx } else { 0 };
        if self.tail + skip + need + 1 - self.credit <= n {
            return true;
        }
        self.credit = self.read_credit(mem);
        self.tail + skip + need + 1 - self.credit <= n
    }

    /// The receiver's published consumed position, never past what we posted: a receiver
    /// that says it has read more can only make us overwrite its own unread cells, never
    /// make this end's arithmetic wrap.
    #[inline]
    fn read_credit<M: RingMemory>(&self, mem: &M) -> u64 {
        mem.consumed().load(Ordering::Acquire).min(self.tail)
    }

    /// Writes one record of `cells` cells at the tail. Before its publish word, it clears the
    /// publish word of the cell after it, where the next record will start: a cell that held
    /// the middle of a payload on an earlier lap keeps payload bytes in its first word, and
    /// they could equal the position the reader will wait for there (a reader took reduction
    /// data for "a ring record of form 30"). The Release store below orders the clearing
    /// before this record, so a reader that has consumed it sees the cleared word.
    #[inline(always)]
    fn publish<M: RingMemory>(&self, mem: &M, form: u32, len: u32, header: &Header, pieces: &[&[u8]], cells: u64) {
        let n = mem.ncells() as u64;
        let idx = (self.tail & (n - 1)) as usize;
        let at = idx * CELL;
        let mut head = [0u8; RECORD_HEAD - 8];
        head[0..4].copy_from_slice(&form.to_ne_bytes());
        head[4..8].copy_from_slice(&len.to_ne_bytes());
        head[8..].copy_from_slice(&header.to_bytes());
        let mut offset = at + RECORD_HEAD;
        // SAFETY: the credit check above proved these cells consumed by the receiver; the record
        // does not run past the ring's end (a SKIP record was posted if it would).
        unsafe {
            mem.write(at + 8, &head);
            for piece in pieces {
                mem.write(offset, piece);
                offset += piece.len();
            }
        }
        mem.seq(((self.tail + cells) & (n - 1)) as usize).store(0, Ordering::Relaxed);
        mem.seq(idx).store(self.tail + 1, Ordering::Release);
    }
}

/// One record as the receiver sees it, valid until [`RingRx::release`]. A record of form
/// [`FORM_MALFORMED`] is what the ring holds where a well-formed one should be (an unknown form,
/// a length past the ring's end): `form` and `len` of it are in `len` and `header.aux` for the
/// report; it is never released (where the next record starts is unknown).
pub(crate) struct Record<'a> {
    pub form: u32,
    pub len: u32,
    pub header: Header,
    pub payload: &'a [u8],
    cells: u64,
}

impl Record<'_> {
    #[cold]
    fn malformed(form: u32, len: u32) -> Record<'static> {
        Record {
            form: FORM_MALFORMED,
            len,
            header: Header { aux: form as u64, ..Header::default() },
            payload: &[],
            cells: 0,
        }
    }

    /// What was wrong with a [`FORM_MALFORMED`] record, for the report.
    pub fn malformation(&self) -> String {
        format!(
            "a ring record of form {} and length {} (forms are 1..=3, and a record ends inside the ring)",
            self.header.aux, self.len
        )
    }
}

/// The receiver's private state for one ring.
#[derive(Default)]
pub(crate) struct RingRx {
    /// Cells consumed.
    head: u64,
    /// Last consumed position published to the sender.
    published: u64,
}

impl RingRx {
    /// The next record, if the sender has published one.
    pub fn next<'m, M: RingMemory>(&mut self, mem: &'m M) -> Option<Record<'m>> {
        let n = mem.ncells() as u64;
        loop {
            let idx = (self.head & (n - 1)) as usize;
            if !self.published(mem, idx) {
                return None;
            }
            let at = idx * CELL;
            // SAFETY: the Acquire load in `published` saw this record's publish word.
            let head = unsafe { mem.read(at + 8, RECORD_HEAD - 8) };
            let form = u32::from_ne_bytes(head[0..4].try_into().unwrap());
            let len = u32::from_ne_bytes(head[4..8].try_into().unwrap());
            let inline = match form {
                FORM_INLINE => len as usize,
                FORM_SLOT => 4,
                FORM_SKIP => {
                    self.head += n - idx as u64;
                    continue;
                }
                _ => return Some(Record::malformed(form, len)),
            };
            // The sender never lets a record run past the ring's end (it posts SKIP first):
            // one that says otherwise is not read, whatever its length says.
            if at + RECORD_HEAD + inline > n as usize * CELL {
                return Some(Record::malformed(form, len));
            }
            let header = Header::from_bytes(head[8..].try_into().unwrap());
            // SAFETY: as above; the record's cells were all written before its publish word,
            // and they lie inside the ring (checked just above).
            let payload = unsafe { mem.read(at + RECORD_HEAD, inline) };
            return Some(Record { form, len, header, payload, cells: cells_for(inline) });
        }
    }

    /// Whether a record waits at the head (a cheap check: one load, no copy).
    #[inline(always)]
    pub fn ready<M: RingMemory>(&self, mem: &M) -> bool {
        self.published(mem, (self.head & (mem.ncells() as u64 - 1)) as usize)
    }

    /// Whether cell `idx` (the head's) holds the head's record (Acquire: its bytes are ours).
    #[inline(always)]
    fn published<M: RingMemory>(&self, mem: &M, idx: usize) -> bool {
        mem.seq(idx).load(Ordering::Acquire) == self.head + 1
    }

    /// Frees the record's cells; publishes credits every eighth of the ring.
    /// Returns true when credits were published (the sender may want waking).
    pub fn release<M: RingMemory>(&mut self, mem: &M, rec: Record<'_>) -> bool {
        self.head += rec.cells;
        if self.head - self.published >= mem.ncells() as u64 / 8 {
            self.published = self.head;
            mem.consumed().store(self.head, Ordering::Release);
            return true;
        }
        false
    }
}

/// Largest payload an INLINE record may carry in a ring of `ring_bytes`: a quarter of the ring,
/// so the lazily published credits can never leave a sender waiting on a drained ring.
pub(crate) fn max_inline(ring_bytes: usize) -> usize {
    ring_bytes / 4 - RECORD_HEAD
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::cell::UnsafeCell;

    /// A ring in ordinary memory, for single-threaded tests of the index arithmetic.
    struct HeapRing {
        bytes: UnsafeCell<Vec<u64>>,
        consumed: AtomicU64,
    }

    impl HeapRing {
        fn new(cells: usize) -> Self {
            HeapRing { bytes: UnsafeCell::new(vec![0; cells * CELL / 8]), consumed: AtomicU64::new(0) }
        }
        fn base(&self) -> *mut u8 {
            // SAFETY: test-only single-threaded access.
            unsafe { (*self.bytes.get()).as_mut_ptr().cast() }
        }
    }

    impl RingMemory for HeapRing {
        fn ncells(&self) -> usize {
            // SAFETY: test-only.
            unsafe { (*self.bytes.get()).len() * 8 / CELL }
        }
        fn seq(&self, i: usize) -> &AtomicU64 {
            // SAFETY: u64-aligned, inside the buffer.
            unsafe { &*(self.base().add(i * CELL) as *const AtomicU64) }
        }
        fn consumed(&self) -> &AtomicU64 {
            &self.consumed
        }
        unsafe fn write(&self, offset: usize, src: &[u8]) {
            assert!(offset + src.len() <= self.ncells() * CELL);
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base().add(offset), src.len());
        }
        unsafe fn read(&self, offset: usize, len: usize) -> &[u8] {
            assert!(offset + len <= self.ncells() * CELL);
            std::slice::from_raw_parts(self.base().add(offset), len)
        }
    }

    fn hdr(tag: i32) -> Header {
        Header { kind: 1, context: 2, source: 3, tag, aux: 99 }
    }

    #[test]
    fn records_come_out_in_order_across_many_laps() {
        let ring = HeapRing::new(32);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        let mut sent = 0i32;
        let mut got = 0i32;
        let mut lens = (0..7u32).cycle();
        while got < 2000 {
            // Fill as far as it goes, with sizes that force SKIP records at the end.
            loop {
                let len = lens.next().unwrap() as usize * 37 % 150;
                let payload: Vec<u8> = (0..len).map(|i| (i as i32 + sent) as u8).collect();
                if !tx.try_push(&ring, FORM_INLINE, len as u32, &hdr(sent), &payload) {
                    break;
                }
                sent += 1;
            }
            while let Some(rec) = rx.next(&ring) {
                assert_eq!(rec.header, hdr(got));
                assert_eq!(rec.len as usize, rec.payload.len());
                for (i, b) in rec.payload.iter().enumerate() {
                    assert_eq!(*b, (i as i32 + got) as u8);
                }
                got += 1;
                rx.release(&ring, rec);
            }
        }
        assert_eq!(got, sent);
    }

    /// A cell that held the middle of a record's payload keeps those bytes in its first word
    /// on the next lap; when they equal the position the reader waits for there, the reader
    /// took them for a published record (BB's collectives: reduction data read as "a ring
    /// record of form 30"). The sender now clears the next record's publish word first.
    #[test]
    fn payload_left_in_a_cell_is_never_taken_for_a_record() {
        let ring = HeapRing::new(16);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        // Record 0 spans cells 0..3; its payload bytes 24..32 are cell 1's first word: 18, the
        // publish word a record at position 17 (cell 1 of the next lap) will carry.
        let mut payload = vec![0u8; 100];
        payload[24..32].copy_from_slice(&18u64.to_ne_bytes());
        assert!(tx.try_push(&ring, FORM_INLINE, 100, &hdr(0), &payload));
        let rec = rx.next(&ring).expect("record 0");
        assert_eq!(rec.header, hdr(0));
        rx.release(&ring, rec);
        // One-cell records at positions 3..=16 (the last in cell 0 again), each read at once.
        for k in 1..=14 {
            assert!(tx.try_push(&ring, FORM_INLINE, 1, &hdr(k), &[k as u8]), "record {k}");
            let rec = rx.next(&ring).expect("a one-cell record");
            assert_eq!((rec.header, rec.payload), (hdr(k), &[k as u8][..]));
            rx.release(&ring, rec);
        }
        // The reader waits at position 17, cell 1, which still holds record 0's payload.
        assert!(rx.next(&ring).is_none(), "stale payload read as a record");
    }

    #[test]
    fn gathered_records_equal_joined_ones_across_wraps() {
        let ring = HeapRing::new(32);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        let mut got = 0i32;
        for k in 0..300i32 {
            let len = (k as usize * 53) % 400;
            let joined: Vec<u8> = (0..len).map(|i| (i as i32 ^ k) as u8).collect();
            // Pieces of uneven sizes, some empty.
            let cuts = [0, len / 3, len / 3, len / 2 + 1, len].map(|c| c.min(len));
            let pieces: Vec<&[u8]> = cuts.windows(2).map(|w| &joined[w[0]..w[1]]).collect();
            while !tx.try_push_gather(&ring, &hdr(k), &pieces, len) {
                let rec = rx.next(&ring).expect("a full ring holds records");
                let want: Vec<u8> = (0..rec.payload.len()).map(|i| (i as i32 ^ got) as u8).collect();
                assert_eq!((rec.header, rec.form, rec.payload), (hdr(got), FORM_INLINE, &want[..]));
                got += 1;
                rx.release(&ring, rec);
            }
        }
        while let Some(rec) = rx.next(&ring) {
            assert_eq!(rec.header, hdr(got));
            assert_eq!(rec.len as usize, (got as usize * 53) % 400);
            got += 1;
            rx.release(&ring, rec);
        }
        assert_eq!(got, 300);
    }

    #[test]
    fn records_the_ring_cannot_hold_are_not_read() {
        let ring = HeapRing::new(32);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        // A length that runs past the ring's end, then an unknown form.
        assert!(tx.try_push(&ring, FORM_INLINE, (32 * CELL) as u32, &hdr(1), &[1; 8]));
        let rec = rx.next(&ring).expect("a record is published");
        assert_eq!((rec.form, rec.payload.len()), (FORM_MALFORMED, 0));
        assert!(rec.malformation().contains("length 2048"), "{}", rec.malformation());
        let ring = HeapRing::new(32);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        assert!(tx.try_push(&ring, 77, 0, &hdr(1), &[]));
        assert!(rx.next(&ring).unwrap().malformation().contains("form 77"));
    }

    #[test]
    fn a_credit_past_what_was_posted_does_not_wrap() {
        let ring = HeapRing::new(32);
        let mut tx = RingTx::default();
        while tx.try_push(&ring, FORM_INLINE, 8, &hdr(0), &[1; 8]) {}
        ring.consumed.store(u64::MAX, Ordering::Release);
        // Read as "everything consumed" (the receiver harms only its own ring), never wrapping.
        assert!(tx.has_room(&ring, 8));
        assert!(tx.try_push(&ring, FORM_INLINE, 8, &hdr(0), &[1; 8]));
    }

    #[test]
    fn a_full_ring_refuses_until_credits_return() {
        let ring = HeapRing::new(32);
        let (mut tx, mut rx) = (RingTx::default(), RingRx::default());
        let mut posted = 0;
        while tx.try_push(&ring, FORM_INLINE, 8, &hdr(posted), &[1; 8]) {
            posted += 1;
        }
        assert_eq!(posted, 31, "one-cell records fill every cell but one (the next record's, cleared)");
        let rec = rx.next(&ring).unwrap();
        rx.release(&ring, rec);
        assert!(!tx.try_push(&ring, FORM_INLINE, 8, &hdr(0), &[1; 8]), "credit not yet published");
        for _ in 0..3 {
            let rec = rx.next(&ring).unwrap();
            rx.release(&ring, rec);
        }
        assert!(tx.try_push(&ring, FORM_INLINE, 8, &hdr(0), &[1; 8]), "credits published after 1/8 of the ring");
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    //! `RUSTFLAGS="--cfg loom" cargo test -p billboard --release --lib loom`
    //! Explores every interleaving of one sender and one receiver over a 4-cell ring (six records: it wraps and needs credits): records
    //! arrive complete, in order, exactly once, and the sender never overwrites a cell the
    //! receiver has not released (loom's UnsafeCell tracking reports such a race).
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    struct ModelRing {
        seqs: Vec<AtomicU64>,
        consumed: AtomicU64,
        /// Access tracking, one per cell: a write racing a read is a loom failure.
        tracks: Vec<UnsafeCell<()>>,
        bytes: std::cell::UnsafeCell<Vec<u8>>,
    }
    // SAFETY: loom serializes the model's threads; `tracks` checks the real ordering.
    unsafe impl Sync for ModelRing {}
    unsafe impl Send for ModelRing {}

    impl RingMemory for ModelRing {
        fn ncells(&self) -> usize {
            self.seqs.len()
        }
        fn seq(&self, i: usize) -> &AtomicU64 {
            &self.seqs[i]
        }
        fn consumed(&self) -> &AtomicU64 {
            &self.consumed
        }
        unsafe fn write(&self, offset: usize, src: &[u8]) {
            for c in offset / CELL..(offset + src.len()).div_ceil(CELL) {
                self.tracks[c].with_mut(|_| ());
            }
            (&mut *self.bytes.get())[offset..offset + src.len()].copy_from_slice(src);
        }
        unsafe fn read(&self, offset: usize, len: usize) -> &[u8] {
            for c in offset / CELL..(offset + len).div_ceil(CELL) {
                self.tracks[c].with(|_| ());
            }
            &(&*self.bytes.get())[offset..offset + len]
        }
    }

    #[test]
    fn loom_ring_delivers_in_order_without_races() {
        loom::model(|| {
            let n = 4;
            let ring = Arc::new(ModelRing {
                seqs: (0..n).map(|_| AtomicU64::new(0)).collect(),
                consumed: AtomicU64::new(0),
                tracks: (0..n).map(|_| UnsafeCell::new(())).collect(),
                bytes: std::cell::UnsafeCell::new(vec![0; n * CELL]),
            });
            let sender = {
                let ring = ring.clone();
                loom::thread::spawn(move || {
                    let mut tx = RingTx::default();
                    for k in 0..6u8 {
                        let payload = [k; 20];
                        let h = Header { tag: k as i32, ..Header::default() };
                        while !tx.try_push(&*ring, FORM_INLINE, 20, &h, &payload) {
                            loom::thread::yield_now();
                        }
                    }
                })
            };
            let mut rx = RingRx::default();
            let mut k = 0u8;
            while k < 6 {
                match rx.next(&*ring) {
                    Some(rec) => {
                        assert_eq!(rec.header.tag, k as i32);
                        assert!(rec.payload.iter().all(|b| *b == k));
                        rx.release(&*ring, rec);
                        k += 1;
                    }
                    None => loom::thread::yield_now(),
                }
            }
            sender.join().unwrap();
        });
    }
}

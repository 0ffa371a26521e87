//! The shared-memory route between two tasks on a host: a byte ring from one sender to one
//! receiver in a memfd the sender makes and hands over its connection (SCM_RIGHTS), so
//! nothing is ever named in /dev/shm. The frames of `wire.rs` flow through it; the socket
//! beside it only carries wake-up bytes for a receiver that sleeps.
//!
//! Layout (every word has one writer, the BBP rule):
//!
//! ```text
//! 0    magic   u64  RING_MAGIC, then the data capacity (u64), then the address of the
//!                   sender's probe word (u64, `single_copy.rs`), written once by the sender
//! 24   helped  u64  the last shared-copy request the sender has written its half of, with
//!                   bit 63 set when it could not (sender; Release after writing)
//! 128  key     u64  random, written once by the sender: what record stamps are XORed with
//! 256  head    u64  stream bytes ever consumed (receiver; Release after copying them out)
//! 384  asleep  u32  1 while the receiver may block in poll (receiver)
//! 388  single  u32  1 once the receiver has read the sender's probe word from the sender's
//!                   memory: large messages may then go by single copy (receiver)
//! 392  acked   u64  the sequence number of the last single-copy message the receiver is done
//!                   with (receiver; Release once it no longer reads the sender's memory)
//! 400  help    u64  shared-copy requests so far (receiver; Release after the next three)
//! 408  at, len, addr  u64 each: the request's part of the message (offset, length) and
//!                   where it goes in the receiver's memory (receiver)
//! 432  rx_pid  u32  the receiver's process, written when it allows single copies
//! 512  data    cap bytes, a power of two; stream byte n is at data[n % cap]. Records, each
//!              at a multiple of 64 (a cache line) of the stream:
//!                0   stamp u64  the record's stream position XOR `key` (sender; written last,
//!                               Release)
//!                8   len   u32  bytes of the frame stream the record carries (wrapping at
//!                               the ring's end), from 16 on
//!                12  -     u32
//!                16  len bytes, then up to the next multiple of 64 nothing
//! ```
//!
//! A record says it is there on its own line: the receiver polls the stamp where the next
//! record starts, and a small frame (a 1-byte message is 16 + 29 bytes) comes with it in the
//! same line: one line moves from the sender's core to the receiver's a message, where a
//! separate `tail` word cost two (its line, then the data's). A stamp is new only when it
//! names the position it is read at: a stamp of an earlier lap names an earlier position,
//! and old frame bytes would have to match a random 64-bit key. So nothing is ever cleared,
//! and every word still has one writer.
//!
//! Wake-up is Dekker's handshake: the receiver stores `asleep`, fences (SeqCst) and looks at
//! the next stamp once more before it blocks; the sender stores a stamp, fences and looks at
//! `asleep`, sending one byte on the socket when it is set. One of the two always sees the
//! other.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::error::PvmError;

const RING_MAGIC: u64 = 0x4242_5056_4d52_3032; // "BBPVMR02"
const DATA: usize = 512;
/// A record's stamp and length, before its bytes.
const RECORD_HEAD: usize = 16;
/// Where records start: a cache line each.
const RECORD_ALIGN: usize = 64;

/// Ring bytes a record of `n` stream bytes takes.
fn record_bytes(n: usize) -> usize {
    (RECORD_HEAD + n).next_multiple_of(RECORD_ALIGN)
}

/// Bytes of data in a ring, one per connection.
pub static RING_BYTES: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_PVM_RING_BYTES",
    1 << 20,
    "PVM: bytes of each task-to-task shared-memory ring (a sender of messages up to this size never waits for its receiver)",
);

#[repr(C)]
struct Header {
    magic: u64,
    cap: u64,
    probe: u64,
    helped: AtomicU64,
    _pad0: [u8; 96],
    key: u64,
    _pad1: [u8; 120],
    head: AtomicU64,
    _pad2: [u8; 120],
    asleep: AtomicU32,
    single: AtomicU32,
    acked: AtomicU64,
    help: AtomicU64,
    help_at: AtomicU64,
    help_len: AtomicU64,
    help_addr: AtomicU64,
    rx_pid: AtomicU32,
}

const _: () = assert!(std::mem::offset_of!(Header, key) == 128);
const _: () = assert!(std::mem::offset_of!(Header, head) == 256);
const _: () = assert!(std::mem::offset_of!(Header, asleep) == 384);
const _: () = assert!(std::mem::offset_of!(Header, single) == 388);
const _: () = assert!(std::mem::offset_of!(Header, acked) == 392);
const _: () = assert!(std::mem::offset_of!(Header, helped) == 24);
const _: () = assert!(std::mem::offset_of!(Header, help) == 400);
const _: () = assert!(std::mem::offset_of!(Header, rx_pid) == 432);

/// `helped`'s bit saying the sender could not write its half.
const HELP_FAILED: u64 = 1 << 63;

/// A shared-copy request as the sender reads it: its number, the part of the message
/// (offset, length), where it goes in the receiver, and the receiver's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelpRequest {
    pub id: u64,
    pub at: u64,
    pub len: u64,
    pub addr: u64,
    pub pid: i32,
}
const _: () = assert!(std::mem::size_of::<Header>() <= DATA);

/// A ring's memory, mapped; unmapped when the last of its users (the ring's end, and the
/// [`Acker`]s of single-copy messages still unread) lets go.
struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: shared memory whose words each have one writer process; inside this process each
// end is used under the library's lock, and the header words it shares are atomics.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn header(&self) -> &Header {
        // SAFETY: base maps at least DATA bytes, laid out as Header (checked at map time).
        unsafe { &*(self.base as *const Header) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `Ring::map`, used by nothing after this.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One end of a ring, mapped.
pub struct Ring {
    map: std::sync::Arc<Mapping>,
    base: *mut u8,
    cap: usize,
    /// Where the next record starts: the sender's next to write, the receiver's next to read.
    mine: u64,
    /// The header's `key`, read once.
    key: u64,
    /// Sender: `head` as last read. Credits flow back lazily: the receiver's line is read
    /// again only when the ring looks too full for a write (one cache miss a message less).
    seen_head: u64,
    /// Receiver: where a record still read in place starts (`hold_record`), `NO_HOLD` when
    /// none: `head` never passes it, so the sender cannot write over it.
    hold: u64,
}

/// `Ring::hold` when no record is held.
const NO_HOLD: u64 = u64::MAX;

// SAFETY: see Mapping; `base` is the mapping's own address.
unsafe impl Send for Ring {}

/// The receiver's word that tells the sender a single-copy message is done with (its memory
/// free again); held by the message until then, so it may outlive the connection.
pub struct Acker {
    map: std::sync::Arc<Mapping>,
    seq: u64,
}

impl Acker {
    /// Tells the sender: its memory is no longer read.
    pub fn ack(self) {
        self.map.header().acked.store(self.seq, Ordering::Release);
    }

    /// Receiver: asks the sender, which waits for this message, to write bytes `at..at+len`
    /// of it to `addr` in this process; the request's number.
    pub fn ask_help(&self, at: u64, len: u64, addr: u64) -> u64 {
        let h = self.map.header();
        let id = h.help.load(Ordering::Relaxed) + 1;
        h.help_at.store(at, Ordering::Relaxed);
        h.help_len.store(len, Ordering::Relaxed);
        h.help_addr.store(addr, Ordering::Relaxed);
        h.help.store(id, Ordering::Release);
        id
    }

    /// Receiver: whether the sender has done request `id`: `Some(true)` written, `Some(false)`
    /// could not, `None` not yet.
    pub fn helped(&self, id: u64) -> Option<bool> {
        let h = self.map.header().helped.load(Ordering::Acquire);
        (h & !HELP_FAILED == id).then_some(h & HELP_FAILED == 0)
    }
}

impl Ring {
    fn header(&self) -> &Header {
        self.map.header()
    }

    /// Sender: the address of its probe word, for the receiver to check it can read this
    /// process's memory.
    pub fn set_probe(&mut self, addr: u64) {
        // SAFETY: the sender's own word, written before the memfd goes to the receiver.
        unsafe { (*(self.base as *mut Header)).probe = addr };
    }

    /// Receiver: the sender's probe word's address.
    pub fn probe(&self) -> u64 {
        self.header().probe
    }

    /// Receiver: large messages may come by single copy from now on.
    pub fn allow_single_copy(&self) {
        self.header().rx_pid.store(std::process::id(), Ordering::Relaxed);
        self.header().single.store(1, Ordering::Release);
    }

    /// Sender: whether the receiver reads this process's memory.
    pub fn single_copy_allowed(&self) -> bool {
        self.header().single.load(Ordering::Acquire) != 0
    }

    /// Sender: the receiver's newest shared-copy request, when it is newer than `done`.
    pub fn help_request(&self, done: u64) -> Option<HelpRequest> {
        let h = self.header();
        let id = h.help.load(Ordering::Acquire);
        (id > done).then(|| HelpRequest {
            id,
            at: h.help_at.load(Ordering::Relaxed),
            len: h.help_len.load(Ordering::Relaxed),
            addr: h.help_addr.load(Ordering::Relaxed),
            pid: h.rx_pid.load(Ordering::Relaxed) as i32,
        })
    }

    /// Sender: request `id` is done (its half written, or not: `ok`).
    pub fn mark_helped(&self, id: u64, ok: bool) {
        self.header().helped.store(id | if ok { 0 } else { HELP_FAILED }, Ordering::Release);
    }

    /// Sender: the last single-copy message the receiver is done with.
    pub fn acked(&self) -> u64 {
        self.header().acked.load(Ordering::Acquire)
    }

    /// Receiver: the handle that acknowledges single-copy message `seq`.
    pub fn acker(&self, seq: u64) -> Acker {
        Acker { map: self.map.clone(), seq }
    }

    /// Makes a ring of `cap` bytes (rounded up to a power of two); its memfd for the peer.
    pub fn create(cap: usize) -> Result<(Ring, std::os::fd::OwnedFd), PvmError> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let cap = cap.max(4096).next_power_of_two();
        // SAFETY: memfd_create with a static name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"bb-pvm-ring".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return Err(PvmError::OutOfRes);
        }
        // SAFETY: fd is a new descriptor we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut ring = Ring::map(&fd, DATA + cap, true)?;
        // Sealed at its size: the receiver maps it only so, and no one can shrink it under
        // the receiver's reads (which would be SIGBUS, not an error).
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on our own memfd.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(PvmError::OutOfRes);
        }
        let mut key = [0u8; 8];
        // SAFETY: getrandom writes at most 8 bytes into `key`.
        if unsafe { libc::getrandom(key.as_mut_ptr().cast(), 8, 0) } != 8 {
            return Err(PvmError::OutOfRes);
        }
        let key = u64::from_ne_bytes(key);
        // SAFETY: a fresh mapping of our own memfd; the peer has not seen it yet.
        unsafe {
            let h = ring.base as *mut Header;
            (*h).magic = RING_MAGIC;
            (*h).cap = cap as u64;
            (*h).key = key;
        }
        ring.cap = cap;
        ring.key = key;
        Ok((ring, fd))
    }

    /// Maps a ring a peer made; checks its header (a peer's bytes never panic).
    pub fn open(fd: &std::os::fd::OwnedFd) -> Result<Ring, PvmError> {
        use std::os::fd::AsRawFd;
        // SAFETY: fstat into a zeroed struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on a valid descriptor.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 || (st.st_size as usize) < DATA + 4096 {
            return Err(PvmError::BadMsg);
        }
        // SAFETY: fcntl on a descriptor we hold.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(PvmError::BadMsg);
        }
        let len = st.st_size as usize;
        let mut ring = Ring::map(fd, len, false)?;
        let (magic, cap, head, key) = {
            let h = ring.header();
            (h.magic, h.cap as usize, h.head.load(Ordering::Acquire), h.key)
        };
        if magic != RING_MAGIC || !cap.is_power_of_two() || cap < 4096 || DATA + cap != len || head != 0 {
            return Err(PvmError::BadMsg);
        }
        ring.cap = cap;
        ring.key = key;
        Ok(ring)
    }

    fn map(fd: &std::os::fd::OwnedFd, len: usize, size_it: bool) -> Result<Ring, PvmError> {
        use std::os::fd::AsRawFd;
        // SAFETY: ftruncate on our own memfd.
        if size_it && unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(PvmError::OutOfRes);
        }
        // SAFETY: a fresh shared mapping of the memfd; unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(PvmError::OutOfRes);
        }
        let base = p.cast::<u8>();
        Ok(Ring {
            map: std::sync::Arc::new(Mapping { base, len }),
            base,
            cap: 0,
            mine: 0,
            key: 0,
            seen_head: 0,
            hold: NO_HOLD,
        })
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: the mapping is DATA + cap bytes.
        unsafe { self.base.add(DATA) }
    }

    /// The stamp of the record at ring offset `at` (a multiple of 64).
    fn stamp(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is a multiple of 64 below cap: 8 aligned bytes inside the data area,
        // which only atomics touch at record starts.
        unsafe { &*(self.data().add(at) as *const AtomicU64) }
    }

    /// Sender: ring bytes free now, at least `want` if the receiver has made that much room.
    fn free(&mut self, want: usize) -> usize {
        let free = |head: u64| self.cap - (self.mine.wrapping_sub(head) as usize).min(self.cap);
        if free(self.seen_head) >= want {
            return free(self.seen_head);
        }
        self.seen_head = self.header().head.load(Ordering::Acquire);
        free(self.seen_head)
    }

    /// Sender: writes one record of `n` stream bytes, the first `n` of `parts`, and
    /// publishes it (its stamp last). The caller checked that `record_bytes(n)` is free.
    fn put_record(&mut self, parts: &[&[u8]], n: usize) {
        let at = (self.mine as usize) & (self.cap - 1);
        self.put_bytes(at + RECORD_HEAD, parts, n);
        self.publish(at, n);
    }

    /// Sender: copies the first `n` bytes of `parts` to ring offset `off` on, wrapping at the
    /// ring's end; the room is free (the caller checked).
    fn put_bytes(&mut self, mut off: usize, parts: &[&[u8]], n: usize) {
        let mut left = n;
        for p in parts {
            if left == 0 {
                break;
            }
            let p = &p[..p.len().min(left)];
            let first = p.len().min(self.cap - off);
            // SAFETY: [mine, mine + record_bytes(n)) is free (the receiver consumed it and
            // does not read it until published): this side alone touches these bytes now;
            // `off` is inside the data area and the bytes wrap at its end in two pieces.
            let dst = unsafe { std::slice::from_raw_parts_mut(self.data().add(off), first) };
            crate::small_copy::copy(dst, &p[..first]);
            // Only at the ring's end: a copy of nothing is still a call to memcpy.
            if first < p.len() {
                // SAFETY: as above, the piece after the wrap, at the data area's start.
                unsafe { std::ptr::copy_nonoverlapping(p.as_ptr().add(first), self.data(), p.len() - first) };
            }
            off = (off + p.len()) & (self.cap - 1);
            left -= p.len();
        }
    }

    /// Sender: publishes the record of `n` bytes at ring offset `at`: its length, then its
    /// stamp (Release), the word the receiver polls.
    fn publish(&mut self, at: usize, n: usize) {
        // SAFETY: the length word of this record, inside the data area (`at` + 8 < cap).
        unsafe { (self.data().add(at + 8) as *mut u32).write(n as u32) };
        self.stamp(at).store(self.mine ^ self.key, Ordering::Release);
        self.mine += record_bytes(n) as u64;
    }

    /// Sender: writes a message frame, its 28-byte header and `parts`, as one record when it
    /// fits now; whether it did. The header goes in by a fixed-size copy: a record starts on
    /// a line, and its head and the header (16 + 28 bytes) never reach the ring's end.
    pub fn write_message(&mut self, header: &[u8; 28], parts: &[&[u8]]) -> bool {
        let total = header.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        if total > self.cap - RECORD_HEAD || record_bytes(total) > self.free(record_bytes(total)) {
            return false;
        }
        let at = (self.mine as usize) & (self.cap - 1);
        // SAFETY: 28 bytes at `at` + 16 of a free record, inside one line of the data area.
        unsafe { (self.data().add(at + RECORD_HEAD) as *mut [u8; 28]).write_unaligned(*header) };
        self.put_bytes(at + RECORD_HEAD + header.len(), parts, total - header.len());
        self.publish(at, total);
        true
    }

    /// Sender: writes a message frame, its header `words` (`wire::message_words`) and
    /// `data`, as one record when it fits now before the ring's end; whether it did. The
    /// usual message (`Task::post_small`): the header's words are stored straight into the
    /// record, the data copied once after them, with no list of parts to walk (121 -> ~40
    /// instructions for a 1-byte message, 2026-11-28).
    #[inline(always)]
    pub fn write_small_message(&mut self, words: [i32; 7], data: &[u8]) -> bool {
        let total = 28 + data.len();
        let rec = record_bytes(total);
        let at = (self.mine as usize) & (self.cap - 1);
        if at + RECORD_HEAD + total > self.cap || rec > self.free(rec) {
            return false;
        }
        // SAFETY: the record's bytes at `at` + 16 on are free (checked above) and lie before
        // the data area's end; a record starts on a line, so the words are 4-aligned.
        unsafe {
            let p = self.data().add(at + RECORD_HEAD);
            for (i, w) in words.iter().enumerate() {
                (p as *mut i32).add(i).write(w.to_le());
            }
            crate::small_copy::copy(std::slice::from_raw_parts_mut(p.add(28), data.len()), data);
        }
        self.publish(at, total);
        true
    }

    /// Sender: writes as much of `bytes` as fits; how much.
    pub fn write(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.free(record_bytes(bytes.len())).saturating_sub(RECORD_HEAD));
        if n == 0 {
            return 0;
        }
        self.put_record(&[bytes], n);
        n
    }

    /// Sender: writes all of `parts` when they fit now, as one record (one store for the
    /// receiver to see, one wake-up check); whether they did.
    pub fn write_whole(&mut self, parts: &[&[u8]]) -> bool {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total == 0 || total > self.cap - RECORD_HEAD || record_bytes(total) > self.free(record_bytes(total)) {
            return false;
        }
        self.put_record(parts, total);
        true
    }

    /// Sender, after writing: whether the receiver may be asleep and needs a wake-up byte.
    pub fn receiver_asleep(&self) -> bool {
        fence(Ordering::SeqCst);
        self.header().asleep.load(Ordering::Relaxed) != 0
    }

    /// Receiver: whether a record waits.
    pub fn has_data(&self) -> bool {
        let at = (self.mine as usize) & (self.cap - 1);
        self.stamp(at).load(Ordering::Acquire) == self.mine ^ self.key
    }

    /// Receiver: moves the bytes of every waiting record to `out`; how many. `Err` when the
    /// peer wrote an impossible length.
    pub fn read_into(&mut self, out: &mut crate::wire::FrameBuffer) -> Result<usize, PvmError> {
        let mut total = 0;
        while self.has_data() {
            let at = (self.mine as usize) & (self.cap - 1);
            // SAFETY: the record's length word, published by the stamp's Release store that
            // `has_data`'s Acquire load saw.
            let n = unsafe { (self.data().add(at + 8) as *const u32).read() } as usize;
            if n > self.cap - RECORD_HEAD {
                return Err(PvmError::BadMsg);
            }
            let off = at + RECORD_HEAD;
            let first = n.min(self.cap - off);
            // SAFETY: the record's bytes, published with its stamp; inside the data area in
            // at most two pieces.
            unsafe { out.push(std::slice::from_raw_parts(self.data().add(off), first)) };
            if first < n {
                // SAFETY: as above, the piece after the wrap.
                unsafe { out.push(std::slice::from_raw_parts(self.data(), n - first)) };
            }
            self.mine += record_bytes(n) as u64;
            total += n;
        }
        if total > 0 {
            self.header().head.store(self.mine.min(self.hold), Ordering::Release);
        }
        Ok(total)
    }

    /// Receiver: the next record's bytes, when one waits and lies in one piece (not across
    /// the ring's end): for a reader that takes a whole frame straight out of the ring
    /// (`Link::take_message`). `None` also for a broken length ([`Ring::read_into`] says so).
    pub fn next_record(&self) -> Option<&[u8]> {
        if !self.has_data() {
            return None;
        }
        let at = (self.mine as usize) & (self.cap - 1);
        // SAFETY: the record's length word, published by the stamp `has_data` saw.
        let n = unsafe { (self.data().add(at + 8) as *const u32).read() } as usize;
        if n > self.cap - RECORD_HEAD || at + RECORD_HEAD + n > self.cap {
            return None;
        }
        // SAFETY: the record's bytes, published with its stamp, inside the data area.
        Some(unsafe { std::slice::from_raw_parts(self.data().add(at + RECORD_HEAD), n) })
    }

    /// Receiver: the record [`Ring::next_record`] returned is read; its room goes back to the
    /// sender.
    pub fn consume_record(&mut self, n: usize) {
        self.mine += record_bytes(n) as u64;
        self.header().head.store(self.mine.min(self.hold), Ordering::Release);
    }

    /// Receiver: the record [`Ring::next_record`] returned is read, but its bytes are still
    /// read in place (a received message left in its ring until unpacked, `held_message.rs`):
    /// the records after it are read as usual, and its room goes back to the sender only at
    /// [`Ring::release_hold`]. One record is held at a time.
    pub fn hold_record(&mut self, n: usize) {
        debug_assert_eq!(self.hold, NO_HOLD, "one held record at a time");
        self.hold = self.mine;
        self.mine += record_bytes(n) as u64;
    }

    /// Receiver: the held record is no longer read; its room (and that of every record read
    /// after it) goes back to the sender.
    pub fn release_hold(&mut self) {
        if self.hold != NO_HOLD {
            self.hold = NO_HOLD;
            self.header().head.store(self.mine, Ordering::Release);
        }
    }

    /// Receiver: says it may sleep (or is awake again). After saying so, look at
    /// [`Ring::has_data`] once more before blocking.
    pub fn set_asleep(&self, asleep: bool) {
        self.header().asleep.store(u32::from(asleep), Ordering::Relaxed);
        if asleep {
            fence(Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;

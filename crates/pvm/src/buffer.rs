//! Message buffers and the table behind PVM's buffer ids: the active send buffer that the pack
//! routines fill, the active receive buffer that the unpack routines read, and any number of
//! others a program makes with `pvm_mkbuf` and switches between.

use crate::encoding::{self, Encoding, Item};
use crate::error::PvmError;
use crate::single_copy::Remote;

/// A stretch of the caller's memory that a `PvmDataInPlace` buffer reads at `pvm_send`.
#[derive(Debug)]
struct InPlace {
    /// Where in `data` the stretch goes.
    at: usize,
    ptr: *const u8,
    len: usize,
}

/// One message: being packed (a send buffer) or read (a received one).
#[derive(Debug)]
pub struct Buffer {
    pub enc: Encoding,
    data: Vec<u8>,
    in_place: Vec<InPlace>,
    /// A received message still in its sender's memory (`single_copy.rs`); `data` is then
    /// empty. `spent`: the length of one that was unpacked whole straight from there. Boxed:
    /// rare, and a buffer moves less with it out of line.
    remote: Option<Box<Remote>>,
    spent: usize,
    /// A small received message still in its ring cell (`held_message.rs`): its bytes
    /// there, read in place of `data` (then empty) until the next call that is not an
    /// unpack copies them in ([`Buffer::own_view`]).
    view: Option<(*const u8, usize)>,
    /// The unpack routines' position in `data` (in `remote` while there is one).
    pos: usize,
    /// Sender, tag and context of a received message (0 in a buffer made here).
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
}

impl Buffer {
    pub fn new(enc: Encoding) -> Buffer {
        Buffer {
            enc,
            data: Vec::new(),
            in_place: Vec::new(),
            remote: None,
            spent: 0,
            view: None,
            pos: 0,
            src: 0,
            tag: 0,
            ctx: 0,
        }
    }

    /// A message that arrived: `data` in encoding `enc` from `src`.
    pub fn received(enc: Encoding, data: Vec<u8>, src: i32, tag: i32, ctx: i32) -> Buffer {
        Buffer { data, src, tag, ctx, ..Buffer::new(enc) }
    }

    /// Empties a freed buffer for its next message, keeping its memory unless it is large.
    /// A message still in its sender's memory lets the sender go here, and in-place
    /// stretches are forgotten (the program's memory is no longer ours to read).
    #[inline(always)]
    fn release(&mut self) {
        if self.data.capacity() > REUSE_MAX {
            self.data = Vec::new();
        }
        self.data.clear();
        self.in_place.clear();
        if self.remote.is_some() {
            self.remote = None;
        }
        self.view = None;
        (self.spent, self.pos, self.src, self.tag, self.ctx) = (0, 0, 0, 0, 0);
    }

    /// The received message's bytes (in its ring cell while it is held there, else `data`)
    /// and the unpack routines' position in them.
    #[inline]
    fn bytes_and_pos(&mut self) -> (&[u8], &mut usize) {
        let bytes: &[u8] = match self.view {
            // SAFETY: a held record's bytes, which its sender does not write over while the
            // buffer holds them (`held_message.rs` releases the record only after `own_view`
            // or with the buffer's release).
            Some((at, len)) => unsafe { std::slice::from_raw_parts(at, len) },
            None => &self.data,
        };
        (bytes, &mut self.pos)
    }

    /// A message held in its ring cell is copied into the buffer's own memory (before its
    /// cell goes back to the sender).
    pub(crate) fn own_view(&mut self) {
        if let Some((at, len)) = self.view.take() {
            self.data.clear();
            // SAFETY: as in `bytes_and_pos`: the record is still held.
            self.data.extend_from_slice(unsafe { std::slice::from_raw_parts(at, len) });
        }
    }

    /// The message's length in bytes, in-place stretches included.
    pub fn len(&self) -> usize {
        self.data.len()
            + self.view.map_or(0, |(_, n)| n)
            + self.in_place.iter().map(|s| s.len).sum::<usize>()
            + self.remote.as_ref().map_or(0, |r| r.len())
            + self.spent
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message's bytes as they travel, in order, as pieces: packed bytes and, for
    /// `PvmDataInPlace`, the caller's own memory, so that a send copies each piece once,
    /// straight to its route.
    pub fn wire_parts(&self) -> Vec<&[u8]> {
        let mut parts = Vec::with_capacity(2 * self.in_place.len() + 1);
        let mut from = 0;
        for s in &self.in_place {
            parts.push(&self.data[from..s.at]);
            // SAFETY: PvmDataInPlace's contract: the caller keeps the packed memory valid and
            // unchanged-in-size until the message is sent; `pack_in_place` checked ptr/len.
            parts.push(unsafe { std::slice::from_raw_parts(s.ptr, s.len) });
            from = s.at;
        }
        parts.push(&self.data[from..]);
        parts.retain(|p| !p.is_empty());
        parts
    }

    /// Runs `f` on [`Buffer::wire_parts`], on the stack for the usual message (at most one
    /// in-place stretch): no allocation on the small-message path.
    pub fn with_wire_parts<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        if self.in_place.is_empty() {
            let whole: [&[u8]; 1] = [&self.data];
            return f(if self.data.is_empty() { &[] } else { &whole });
        }
        let [s] = self.in_place.as_slice() else { return f(&self.wire_parts()) };
        // SAFETY: as in wire_parts.
        let stretch = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
        let all: [&[u8]; 3] = [&self.data[..s.at], stretch, &self.data[s.at..]];
        match (s.at == 0, s.at == self.data.len()) {
            (true, true) => f(&all[1..2]),
            (true, false) => f(&all[1..]),
            (false, true) => f(&all[..2]),
            (false, false) => f(&all),
        }
    }

    /// The message's bytes as they travel when they are all packed here (no in-place
    /// stretch): the usual send buffer.
    #[inline(always)]
    pub fn packed(&self) -> Option<&[u8]> {
        self.in_place.is_empty().then_some(&self.data)
    }

    /// The message's bytes as they travel, in one vector.
    pub fn wire_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.in_place.is_empty() {
            return std::borrow::Cow::Borrowed(&self.data);
        }
        std::borrow::Cow::Owned(self.wire_parts().concat())
    }

    /// Packs typed items (already gathered by stride).
    pub fn pack<T: Item>(&mut self, items: impl IntoIterator<Item = T>) -> Result<(), PvmError> {
        encoding::pack(self.enc, &mut self.data, items)
    }

    #[inline]
    pub fn pack_bytes(&mut self, bytes: &[u8]) {
        encoding::pack_bytes(self.enc, &mut self.data, bytes)
    }

    /// Appends bytes already in this buffer's encoding (`pvm_pkmesgbody`).
    pub fn append_encoded(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }

    pub fn pack_str(&mut self, s: &[u8]) -> Result<(), PvmError> {
        encoding::pack_str(self.enc, &mut self.data, s)
    }

    /// Records `len` bytes at `ptr` to be read at send time (`PvmDataInPlace`).
    ///
    /// # Safety
    /// `ptr` must be valid for `len` bytes until the message is sent or the buffer freed.
    pub unsafe fn pack_in_place(&mut self, ptr: *const u8, len: usize) {
        if len > 0 {
            self.in_place.push(InPlace { at: self.data.len(), ptr, len });
        }
    }

    /// The message's bytes, taken out of the buffer.
    pub fn into_data(mut self) -> Vec<u8> {
        self.own_view();
        let _ = self.settle();
        std::mem::take(&mut self.data)
    }

    /// Unpacking starts again at the message's first byte.
    pub fn rewind(&mut self) {
        self.pos = 0;
    }

    /// Reading a buffer that holds in-place stretches (a send buffer made the receive buffer),
    /// or a message still in its sender's memory: copy them in first so that unpacking sees
    /// the whole message.
    #[inline]
    pub fn settle(&mut self) -> Result<(), PvmError> {
        // The usual buffer has neither: two tests here, no call.
        if self.in_place.is_empty() && self.remote.is_none() {
            return Ok(());
        }
        self.settle_all()
    }

    #[cold]
    #[inline(never)]
    fn settle_all(&mut self) -> Result<(), PvmError> {
        if !self.in_place.is_empty() {
            self.data = self.wire_bytes().into_owned();
            self.in_place.clear();
        }
        if let Some(r) = self.remote.take() {
            self.data = (*r).read_all()?;
        }
        Ok(())
    }

    /// `pvm_upkbyte` of `dst.len()` bytes straight from the sender's memory, when the message
    /// is still there (and travels raw): `None` when it is not. Once the whole message is
    /// read, its sender is let go, and the buffer is at its end.
    pub fn unpack_bytes_direct(&mut self, dst: &mut [u8]) -> Option<Result<(), PvmError>> {
        let r = self.remote.as_ref().filter(|_| self.enc.on_wire() == Encoding::Raw)?;
        let end = self.pos.checked_add(dst.len()).filter(|&e| e <= r.len());
        let Some(end) = end else { return Some(Err(PvmError::NoData)) };
        if let Err(e) = r.read_shared(self.pos, dst) {
            return Some(Err(e));
        }
        self.pos = end;
        if end == r.len() {
            self.spent = r.len();
            self.remote = None;
            self.pos = 0;
        }
        Some(Ok(()))
    }

    /// `pvm_upkbyte`'s direct way (`state::plain`): `dst.len()` bytes copied out when the
    /// message is all here or in its ring cell and holds them; `None`, having changed
    /// nothing, for anything else (the general way reads it, or says what is wrong).
    #[inline(always)]
    pub fn unpack_bytes_plain(&mut self, dst: &mut [u8]) -> Option<()> {
        if self.remote.is_some() || !self.in_place.is_empty() {
            return None;
        }
        let enc = self.enc.on_wire();
        let (bytes, pos) = self.bytes_and_pos();
        let mut at = *pos;
        let got = encoding::unpack_bytes(enc, bytes, &mut at, dst.len()).ok()?;
        // The position first, the copy last: nothing of this buffer is needed after it.
        *pos = at;
        crate::small_copy::copy(dst, got);
        Some(())
    }

    pub fn unpack<T: Item>(&mut self, n: usize, put: impl FnMut(usize, T)) -> Result<(), PvmError> {
        self.settle()?;
        let enc = self.enc.on_wire();
        let (bytes, pos) = self.bytes_and_pos();
        encoding::unpack(enc, bytes, pos, n, put)
    }

    pub fn unpack_bytes(&mut self, n: usize) -> Result<&[u8], PvmError> {
        self.settle()?;
        let enc = self.enc.on_wire();
        let (bytes, pos) = self.bytes_and_pos();
        encoding::unpack_bytes(enc, bytes, pos, n)
    }

    pub fn unpack_str(&mut self) -> Result<&[u8], PvmError> {
        self.settle()?;
        let enc = self.enc.on_wire();
        let (bytes, pos) = self.bytes_and_pos();
        encoding::unpack_str(enc, bytes, pos)
    }
}

// SAFETY: the raw pointers of in-place stretches are only read on the thread that calls
// pvm_send, under the library's lock; PVM's contract keeps them valid until then.
unsafe impl Send for Buffer {}

/// Buffers by id (id - 1 is the slot): a look-up is an index, and a freed id is handed out
/// again first, so the table stays as small as the most buffers alive at once. A freed slot
/// keeps its buffer, emptied (`Buffer::release`): the next buffer made there packs into the
/// same memory and nothing moves, so a small message costs no allocation and no copy of a
/// buffer (`pvm_initsend` and each receive take the slot the one before them left).
#[derive(Debug, Default)]
struct Slab {
    slots: Vec<Slot>,
    /// Ids freed, the last freed at the end.
    free: Vec<i32>,
}

#[derive(Debug)]
struct Slot {
    live: bool,
    buf: Buffer,
}

impl Slab {
    const fn new() -> Slab {
        Slab { slots: Vec::new(), free: Vec::new() }
    }

    /// An empty buffer in encoding `enc`, in the slot freed last (with its memory).
    #[inline(always)]
    fn insert_empty(&mut self, enc: Encoding) -> i32 {
        match self.free.pop() {
            Some(id) => {
                let s = &mut self.slots[id as usize - 1];
                s.live = true;
                s.buf.enc = enc;
                id
            }
            None => {
                self.slots.push(Slot { live: true, buf: Buffer::new(enc) });
                self.slots.len() as i32
            }
        }
    }

    fn insert(&mut self, b: Buffer) -> i32 {
        let id = self.insert_empty(b.enc);
        self.slots[id as usize - 1].buf = b;
        id
    }

    fn slot(&mut self, id: i32) -> Option<&mut Slot> {
        self.slots.get_mut(usize::try_from(id).ok()?.checked_sub(1)?).filter(|s| s.live)
    }

    /// Frees buffer `id`, keeping its memory for the next; whether there was one.
    fn release(&mut self, id: i32) -> bool {
        let Some(s) = self.slot(id) else { return false };
        s.live = false;
        s.buf.release();
        self.free.push(id);
        true
    }

    /// Takes buffer `id` out of the table.
    fn remove(&mut self, id: i32) -> Option<Buffer> {
        let s = self.slot(id)?;
        s.live = false;
        let b = std::mem::replace(&mut s.buf, Buffer::new(Encoding::Raw));
        self.free.push(id);
        Some(b)
    }

    fn get(&self, id: i32) -> Option<&Buffer> {
        let s = self.slots.get(usize::try_from(id).ok()?.checked_sub(1)?)?;
        s.live.then_some(&s.buf)
    }

    fn get_mut(&mut self, id: i32) -> Option<&mut Buffer> {
        Some(&mut self.slot(id)?.buf)
    }
}

/// Every buffer of the process by id, and which are active.
#[derive(Debug, Default)]
pub struct Buffers {
    map: Slab,
    /// The active send and receive buffers (0: none).
    pub sbuf: i32,
    pub rbuf: i32,
    /// Whether the active receive buffer may still be in its sender's memory (only it may).
    lazy_rbuf: bool,
    /// The buffer whose message is still in its ring cell, and the inbound link of that ring
    /// (`held_message.rs`): the active receive buffer, from its receive until the next call
    /// that is not an unpack or a receive.
    pub(crate) held: Option<Held>,
}

/// A received message held in its ring cell: its buffer, and the index of its link in
/// `Task::inbound` (links come and go only in the progress loop, which no call runs while a
/// message is held).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub id: i32,
    pub link: usize,
}

impl Buffers {
    pub const fn new() -> Buffers {
        Buffers { map: Slab::new(), sbuf: 0, rbuf: 0, lazy_rbuf: false, held: None }
    }

    /// Adds a buffer and returns its id: the one freed last, as Debian's library hands out
    /// freed ids again.
    pub fn insert(&mut self, b: Buffer) -> i32 {
        self.map.insert(b)
    }

    pub fn mkbuf(&mut self, enc: i32) -> Result<i32, PvmError> {
        Ok(self.insert(Buffer::new(Encoding::from_code(enc)?)))
    }

    pub fn free(&mut self, id: i32) -> Result<(), PvmError> {
        if id < 0 {
            return Err(PvmError::BadParam);
        }
        if !self.map.release(id) {
            return Err(PvmError::NoSuchBuf);
        }
        if self.sbuf == id {
            self.sbuf = 0;
        }
        if self.rbuf == id {
            self.rbuf = 0;
        }
        Ok(())
    }

    /// `pvm_initsend`: frees the active send buffer and makes a new, empty one active (in
    /// the slot freed the time before, with its memory: no allocation per message).
    #[inline(always)]
    pub fn initsend(&mut self, enc: i32) -> Result<i32, PvmError> {
        let enc = Encoding::from_code(enc)?;
        // The new one first, then the old one freed, as Debian's library does (its ids
        // alternate between two).
        let old = self.sbuf;
        self.sbuf = self.map.insert_empty(enc);
        self.map.release(old);
        Ok(self.sbuf)
    }

    /// `pvm_setsbuf` / `pvm_setrbuf`: makes `id` (0: none) active, returns the one before.
    pub fn set_active(&mut self, id: i32, send: bool) -> Result<i32, PvmError> {
        if id < 0 {
            return Err(PvmError::BadParam);
        }
        if id != 0 && self.map.get(id).is_none() {
            return Err(PvmError::NoSuchBuf);
        }
        let slot = if send { &mut self.sbuf } else { &mut self.rbuf };
        Ok(std::mem::replace(slot, id))
    }

    /// A message that arrived becomes the active receive buffer, in the slot of the one
    /// before (freed): its bytes move in by a swap of vectors; the buffer's old memory is
    /// returned (empty) for the next arrival, or kept in the pool (`reuse`) when it is large.
    pub fn deliver(&mut self, m: crate::task::Arrived) -> (i32, Vec<u8>) {
        let enc = Encoding::from_code(m.enc).unwrap_or(Encoding::Raw);
        // Freeing the one before and making the new one would hand its id out again at once
        // (the last freed goes first): the slot is emptied in place instead.
        let id = match self.map.get_mut(self.rbuf) {
            Some(b) => {
                b.release();
                b.enc = enc;
                self.rbuf
            }
            None => self.map.insert_empty(enc),
        };
        let b = self.map.get_mut(id).expect("made above");
        let old = std::mem::replace(&mut b.data, m.data);
        (b.src, b.tag, b.ctx) = (m.src, m.tag, m.ctx);
        // The slot's own is none (emptied above, or new): only a message still in its
        // sender's memory is stored, so the usual one drops nothing (a call per message).
        if let Some(r) = m.remote {
            b.remote = Some(r);
        }
        self.lazy_rbuf = b.remote.is_some();
        self.rbuf = id;
        (id, old)
    }

    /// A message found at the front of inbound link `link`'s ring becomes the active receive
    /// buffer, in the slot of the one before (freed), its bytes left in the ring cell: the
    /// caller holds the record there (`Link::hold_front`) and released the one held before.
    #[inline(always)]
    pub(crate) fn deliver_held(&mut self, f: &crate::link::Front, link: usize) -> i32 {
        let enc = Encoding::from_code(f.enc).unwrap_or(Encoding::Raw);
        // The slot of the receive buffer before, looked up once.
        let (id, b) = match self.map.slot(self.rbuf) {
            Some(s) => {
                s.buf.release();
                (self.rbuf, &mut s.buf)
            }
            None => {
                let id = self.map.insert_empty(enc);
                (id, &mut self.map.slots[id as usize - 1].buf)
            }
        };
        b.enc = enc;
        b.view = Some((f.data().as_ptr(), f.len));
        (b.src, b.tag, b.ctx) = (f.src, f.tag, f.ctx);
        self.rbuf = id;
        self.lazy_rbuf = false;
        self.held = Some(Held { id, link });
        id
    }

    /// Forgets the active receive buffer's message if it is still in its sender's memory,
    /// letting the sender go (at exit).
    pub fn let_sender_go(&mut self) {
        if std::mem::take(&mut self.lazy_rbuf) {
            if let Ok(b) = self.recv_buffer() {
                b.remote = None;
            }
        }
    }

    /// Whether the active receive buffer's message may still be in its sender's memory.
    pub fn receive_buffer_is_lazy(&self) -> bool {
        self.lazy_rbuf
    }

    /// Copies in the active receive buffer's message if it is still in its sender's memory.
    pub fn settle_receive_buffer(&mut self) -> Result<(), PvmError> {
        if !std::mem::take(&mut self.lazy_rbuf) {
            return Ok(());
        }
        match self.recv_buffer() {
            Ok(b) => b.settle(),
            Err(_) => Ok(()),
        }
    }

    /// Takes buffer `id` out of the table (it is no longer active).
    pub fn take(&mut self, id: i32) -> Option<Buffer> {
        let b = self.map.remove(id)?;
        if self.sbuf == id {
            self.sbuf = 0;
        }
        if self.rbuf == id {
            self.rbuf = 0;
        }
        Some(b)
    }

    /// Buffer `id`, already in the table, becomes the active receive buffer; the one before
    /// is freed.
    pub fn deliver_id(&mut self, id: i32) {
        if self.rbuf != 0 && self.rbuf != id {
            self.map.release(self.rbuf);
        }
        self.rbuf = id;
    }

    pub fn get(&self, id: i32) -> Result<&Buffer, PvmError> {
        if id <= 0 {
            return Err(PvmError::BadParam);
        }
        self.map.get(id).ok_or(PvmError::NoSuchBuf)
    }

    /// `pvm_setminfo`: a buffer's header fields.
    pub fn set_info(&mut self, id: i32, tag: i32, src: i32, ctx: i32) -> Result<(), PvmError> {
        if id <= 0 {
            return Err(PvmError::BadParam);
        }
        let b = self.map.get_mut(id).ok_or(PvmError::NoSuchBuf)?;
        (b.tag, b.src, b.ctx) = (tag, src, ctx);
        Ok(())
    }

    pub fn send_buffer(&mut self) -> Result<&mut Buffer, PvmError> {
        let id = self.sbuf;
        self.map.get_mut(id).ok_or(PvmError::NoBuf)
    }

    pub fn get_mut(&mut self, id: i32) -> Result<&mut Buffer, PvmError> {
        if id <= 0 {
            return Err(PvmError::BadParam);
        }
        self.map.get_mut(id).ok_or(PvmError::NoSuchBuf)
    }

    pub fn recv_buffer(&mut self) -> Result<&mut Buffer, PvmError> {
        let id = self.rbuf;
        self.map.get_mut(id).ok_or(PvmError::NoBuf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initsend_replaces_the_send_buffer_and_ids_are_checked() {
        let mut b = Buffers::default();
        assert_eq!(b.send_buffer().unwrap_err(), PvmError::NoBuf);
        let first = b.initsend(0).unwrap();
        let second = b.initsend(1).unwrap();
        assert_ne!(first, second);
        assert_eq!(b.get(first).unwrap_err(), PvmError::NoSuchBuf, "initsend frees the old one");
        assert_eq!(b.initsend(7).unwrap_err(), PvmError::BadParam);
        assert_eq!(b.set_active(12345, true).unwrap_err(), PvmError::NoSuchBuf);
        assert_eq!(b.set_active(-1, false).unwrap_err(), PvmError::BadParam);
        assert_eq!(b.free(-3).unwrap_err(), PvmError::BadParam);
        assert_eq!(b.free(999).unwrap_err(), PvmError::NoSuchBuf);
        assert_eq!(b.set_active(0, true).unwrap(), second);
        b.free(second).unwrap();
        assert_eq!(b.sbuf, 0);
    }

    #[test]
    fn the_stack_parts_are_the_message_in_every_shape() {
        let data = [1u8, 2, 3];
        let shapes: [(bool, usize, bool); 5] =
            [(false, 1, false), (true, 1, false), (false, 1, true), (true, 1, true), (true, 2, true)];
        for (before, stretches, after) in shapes {
            let mut b = Buffer::new(Encoding::InPlace);
            if before {
                b.pack([7i32]).unwrap();
            }
            for _ in 0..stretches {
                // SAFETY: `data` outlives `b`.
                unsafe { b.pack_in_place(data.as_ptr(), 3) };
            }
            if after {
                b.pack([8i32]).unwrap();
            }
            let whole = b.wire_bytes().into_owned();
            assert_eq!(whole.len(), 4 * usize::from(before) + 3 * stretches + 4 * usize::from(after));
            b.with_wire_parts(|parts| {
                assert!(parts.iter().all(|p| !p.is_empty()), "{before} {stretches} {after}");
                assert_eq!(parts.concat(), whole, "{before} {stretches} {after}");
            });
        }
    }

    #[test]
    fn in_place_stretches_are_read_at_send_time() {
        let mut b = Buffer::new(Encoding::InPlace);
        let mut data = [1u8, 2, 3];
        let p = data.as_mut_ptr();
        b.pack([7i32]).unwrap();
        // SAFETY: `data` outlives `b`'s use below, and is changed only through `p`.
        unsafe {
            b.pack_in_place(p, 3);
            *p.add(1) = 9;
        }
        b.pack([8i32]).unwrap();
        let parts = b.wire_parts();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].as_ptr(), p as *const u8, "the stretch goes out from the caller's memory, not a copy");
        let wire = b.wire_bytes().into_owned();
        assert_eq!(wire.len(), 11);
        assert_eq!(&wire[4..7], &[1, 9, 3], "the value at send time travels");
        let mut v = 0;
        b.unpack(1, |_, x: i32| v = x).unwrap();
        assert_eq!(v, 7);
        assert_eq!(b.unpack_bytes(3).unwrap(), &[1, 9, 3]);
        b.unpack(1, |_, x: i32| v = x).unwrap();
        assert_eq!(v, 8);
    }
}

/// Message memory to use again: the vectors of buffers that `pvm_initsend` and receives
/// replace go here, and new send buffers and arriving messages (`frame_buffer.rs`) take them,
/// so that a small message costs no allocation. Per thread (the library's calls and their
/// progress run on the caller's), a few vectors of at most [`REUSE_MAX`] bytes.
pub(crate) const REUSE_MAX: usize = 64 * 1024;
const REUSE_COUNT: usize = 4;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps `v`'s memory for the next message.
pub(crate) fn recycle(mut v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > REUSE_MAX {
        return;
    }
    v.clear();
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < REUSE_COUNT {
            s.push(v);
        }
    });
}

/// An empty vector, with memory from an earlier message where one is kept.
pub(crate) fn reuse() -> Vec<u8> {
    // A new one has room for a small message: packing it does not grow it again.
    SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_else(|| Vec::with_capacity(256))
}

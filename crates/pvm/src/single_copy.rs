//! Large messages between tasks of a host by a single copy: the sender leaves the message's
//! bytes where they are (its send buffer, or the program's own memory for `PvmDataInPlace`),
//! posts their addresses through the ring (`Frame::Remote`), and waits; the receiver copies
//! them once with `process_vm_readv`, into the program's memory when `pvm_upkbyte` takes the
//! whole message, else into the receive buffer, then acknowledges in the ring (`ring.rs`'s
//! `acked`). The ring route's two copies (into the ring, out of it) and the receive buffer's
//! third become one; a multicast posts once per receiver and waits once for all.
//!
//! No task waits for ever on another's memory: a message stays unread in its sender's memory
//! only while it is the one a receive just returned (it is read, in whole, when any other call
//! comes before its `pvm_upkbyte`) ; every other arrival is copied in before its receiver
//! waits for anything, and a sender that waits for its acknowledgements keeps taking in its
//! own arrivals, so two tasks that send each other large messages at once both go on.
//!
//! A large `pvm_upkbyte` (`SHARED_MIN`) is a shared copy: the receiver asks the waiting sender,
//! through the ring's header, to write the back half into the program's buffer
//! (`process_vm_writev`) while it reads the front half, and returns once the sender says it
//! is done (or has died); both cores copy, as the engine's shared copies do.
//!
//! A receiver allows single copies on a ring only once it has read the sender's probe word
//! from the sender's memory (`process_vm_readv` may be refused: Yama, seccomp, a
//! non-dumpable sender); until then, and below `BB_PVM_SINGLE_COPY` bytes, messages go
//! through the ring.

use billboard::tunables::Tunable;

use crate::error::PvmError;
use crate::ring::Acker;

pub static SINGLE_COPY_BYTES: Tunable = Tunable::new(
    "BB_PVM_SINGLE_COPY",
    64 * 1024,
    "PVM: messages of at least this many bytes go from task to task of a host by one copy (process_vm_readv) instead of through the ring; 0: never (below 64 KiB the ring's pipelined copies are as fast)",
);

/// The word a receiver reads from its sender's memory to learn that it can.
static PROBE: u64 = PROBE_VALUE;
const PROBE_VALUE: u64 = 0x4242_5056_4d50_5242; // "BBPVMPRB"

/// This process's probe word's address, for the rings it makes.
pub fn probe_address() -> u64 {
    std::ptr::addr_of!(PROBE) as u64
}

/// Whether this process can read process `pid`'s memory: its probe word at `addr`.
pub fn can_read(pid: i32, addr: u64) -> bool {
    let mut got = [0u8; 8];
    read_pieces(pid, &[(addr, 8)], 0, &mut got).is_ok() && u64::from_ne_bytes(got) == PROBE_VALUE
}

/// The stretches of the message made of `pieces` that cover bytes `at..at + len`.
fn stretches(pieces: &[(u64, u64)], at: usize, len: usize) -> Result<Vec<libc::iovec>, PvmError> {
    let mut out = Vec::new();
    let (mut skip, mut want) = (at as u64, len as u64);
    for &(addr, len) in pieces {
        if want == 0 {
            break;
        }
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = (len - skip).min(want);
        out.push(libc::iovec { iov_base: (addr + skip) as *mut libc::c_void, iov_len: n as usize });
        (skip, want) = (0, want - n);
    }
    match want {
        0 => Ok(out),
        _ => Err(PvmError::NoData),
    }
}

/// Moves past `n` bytes of the stretches from `first` on (after a short transfer).
fn advance(iov: &mut [libc::iovec], first: &mut usize, mut n: usize) {
    while n > 0 && *first < iov.len() {
        let r = &mut iov[*first];
        if n >= r.iov_len {
            n -= r.iov_len;
            *first += 1;
        } else {
            r.iov_base = (r.iov_base as u64 + n as u64) as *mut libc::c_void;
            r.iov_len -= n;
            n = 0;
        }
    }
}

/// Copies `dst.len()` bytes of the message made of `pieces` in process `pid`, from byte `at`.
fn read_pieces(pid: i32, pieces: &[(u64, u64)], at: usize, dst: &mut [u8]) -> Result<(), PvmError> {
    let mut remote = stretches(pieces, at, dst.len())?;
    let (mut done, mut first) = (0usize, 0usize);
    while done < dst.len() {
        // At most IOV_MAX remote stretches a call; a short read goes on where it stopped.
        let batch = &remote[first..(first + 1024).min(remote.len())];
        let local = libc::iovec { iov_base: dst[done..].as_mut_ptr().cast(), iov_len: dst.len() - done };
        // SAFETY: `local` is our own writable memory of that length; the remote stretches are
        // only read by the kernel, which checks them against process `pid`'s mappings.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, batch.as_ptr(), batch.len() as _, 0) };
        if n <= 0 {
            return Err(PvmError::SysErr);
        }
        done += n as usize;
        advance(&mut remote, &mut first, n as usize);
    }
    Ok(())
}

/// Sender: writes bytes `at..at + len` of its own message (`parts`) to `addr` in process
/// `pid`, the receiver's half of a shared copy.
fn write_pieces(pid: i32, parts: &[&[u8]], at: usize, len: usize, addr: u64) -> Result<(), PvmError> {
    let pieces: Vec<(u64, u64)> = parts.iter().map(|p| (p.as_ptr() as u64, p.len() as u64)).collect();
    let mut local = stretches(&pieces, at, len)?;
    let (mut done, mut first) = (0usize, 0usize);
    while done < len {
        let batch = &local[first..(first + 1024).min(local.len())];
        let remote = libc::iovec { iov_base: (addr + done as u64) as *mut libc::c_void, iov_len: len - done };
        // SAFETY: the local stretches lie in `parts`, our own memory, only read; the remote
        // one is checked by the kernel against process `pid`'s mappings.
        let n = unsafe { libc::process_vm_writev(pid, batch.as_ptr(), batch.len() as _, &remote, 1, 0) };
        if n <= 0 {
            return Err(PvmError::SysErr);
        }
        done += n as usize;
        advance(&mut local, &mut first, n as usize);
    }
    Ok(())
}

/// Parts of at least this many bytes are copied by both ends (`Remote::read_shared`): below
/// it, asking the sender and waiting for its answer costs more than half the copy saves
/// (NPpvm reaches the one-copy floor, ~10 GB/s, from ~400 KiB).
const SHARED_MIN: usize = 256 * 1024;

/// Whether process `pid` still exists.
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() != libc::ESRCH }
}

/// A message that is still in its sender's memory; acknowledged (the sender let go) when it
/// is dropped, read or not.
pub struct Remote {
    pid: i32,
    pieces: Vec<(u64, u64)>,
    len: usize,
    acker: Option<Acker>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote {{ pid: {}, len: {} }}", self.pid, self.len)
    }
}

impl Remote {
    /// `pieces` were checked to add up to at most `wire::MAX_FRAME` bytes when decoded.
    pub fn new(pid: i32, pieces: Vec<(u64, u64)>, acker: Acker) -> Remote {
        let len = pieces.iter().map(|&(_, l)| l as usize).sum();
        Remote { pid, pieces, len, acker: Some(acker) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies bytes `at..at + dst.len()` of the message into `dst`.
    pub fn read(&self, at: usize, dst: &mut [u8]) -> Result<(), PvmError> {
        read_pieces(self.pid, &self.pieces, at, dst)
    }

    /// As [`Remote::read`], shared with the sender for a large part: the sender (which waits
    /// for this message) writes the back half into `dst` with `process_vm_writev` while this
    /// process reads the front half, so both cores copy (the engine's shared copy, and the
    /// floor's "shared" ping-pong). Returns only once the sender has said it is done writing.
    pub fn read_shared(&self, at: usize, dst: &mut [u8]) -> Result<(), PvmError> {
        // The sender pins `dst`'s pages for its half: huge ones where the kernel gives them.
        crate::huge_pages::prefer(dst.as_ptr() as usize, dst.len());
        let Some(acker) = self.acker.as_ref().filter(|_| dst.len() >= SHARED_MIN) else { return self.read(at, dst) };
        let half = dst.len() / 2;
        let (front, back) = dst.split_at_mut(half);
        let id = acker.ask_help((at + half) as u64, back.len() as u64, back.as_mut_ptr() as u64);
        let mine = self.read(at, front);
        let mut looks = 0u64;
        let helped = loop {
            if let Some(ok) = acker.helped(id) {
                break ok;
            }
            looks += 1;
            if looks < 1024 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
                // A sender that died writes nothing more.
                if looks.is_multiple_of(1024) && !alive(self.pid) {
                    break false;
                }
            }
        };
        mine?;
        match helped {
            true => Ok(()),
            false => self.read(at + half, back),
        }
    }

    /// The whole message, copied here; the sender is free again.
    pub fn read_all(self) -> Result<Vec<u8>, PvmError> {
        let mut data = vec![0u8; self.len];
        self.read(0, &mut data)?;
        Ok(data)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(a) = self.acker.take() {
            a.ack();
        }
    }
}

impl crate::task::Task {
    /// Posts a message to `tid` for its single copy, when the route allows it: the sequence
    /// number to wait for, or `None` (send it through the route instead).
    pub(crate) fn post_single_copy(
        &mut self,
        tid: i32,
        tag: i32,
        enc: i32,
        parts: &[&[u8]],
    ) -> Result<Option<u64>, PvmError> {
        let Some(route) = self.outbound.get_mut(tid) else { return Ok(None) };
        if !route.ring.as_ref().is_some_and(|r| r.single_copy_allowed()) {
            return Ok(None);
        }
        route.posted += 1;
        let seq = route.posted;
        // The receiver pins these pages to read them: huge ones where the kernel gives them.
        for p in parts {
            crate::huge_pages::prefer(p.as_ptr() as usize, p.len());
        }
        let pieces = parts.iter().map(|p| (p.as_ptr() as u64, p.len() as u64)).collect();
        let frame = crate::wire::Frame::Remote { tag, ctx: self.ctx, enc, seq, pieces };
        self.write_route(tid, &[&frame.encode()])?;
        Ok(Some(seq))
    }

    /// Waits until each receiver of a posted single copy is done with it: polls the rings'
    /// acknowledgements, taking in this task's own arrivals meanwhile; spins, then yields,
    /// then sleeps in short steps (an acknowledgement wakes nobody). A receiver that ends
    /// first is `PvmNoTask`.
    pub(crate) fn wait_single_copies(&mut self, posted: &[(i32, u64)], parts: &[&[u8]]) -> Result<(), PvmError> {
        let start = std::time::Instant::now();
        let mut done = vec![false; posted.len()];
        let mut gone = false;
        let mut looks = 0u64;
        loop {
            for (i, &(tid, seq)) in posted.iter().enumerate() {
                let route = match self.outbound.get_mut(tid) {
                    _ if done[i] => continue,
                    Some(r) => r,
                    None => {
                        (done[i], gone) = (true, true);
                        continue;
                    }
                };
                // The receiver may ask for the back half of a large unpack (read_shared).
                if let Some(req) = route.ring.as_ref().and_then(|r| r.help_request(route.helped)) {
                    let ok = write_pieces(req.pid, parts, req.at as usize, req.len as usize, req.addr).is_ok();
                    route.ring.as_ref().expect("asked through it").mark_helped(req.id, ok);
                    route.helped = req.id;
                }
                if route.ring.as_ref().is_some_and(|r| r.acked() >= seq) {
                    done[i] = true;
                } else if looks % 256 == 255 && crate::link::peer_closed(&route.stream) {
                    (done[i], gone) = (true, true);
                }
            }
            if done.iter().all(|&d| d) {
                break;
            }
            self.drain_rings();
            looks += 1;
            if looks < 64 {
                std::hint::spin_loop();
            } else if start.elapsed() < std::time::Duration::from_millis(1) {
                std::thread::yield_now();
            } else {
                self.progress(Some(std::time::Duration::from_micros(50)), None);
            }
        }
        match gone {
            true => Err(PvmError::NoTask),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::Ring;

    #[test]
    fn a_message_in_pieces_is_read_at_any_offset_and_acknowledged_when_dropped() {
        let me = std::process::id() as i32;
        assert!(can_read(me, probe_address()));
        let a: Vec<u8> = (0..70_000u32).map(|i| (i * 7) as u8).collect();
        let b = [1u8, 2, 3];
        let (tx, fd) = Ring::create(4096).unwrap();
        let rx = Ring::open(&fd).unwrap();
        let pieces = vec![(a.as_ptr() as u64, a.len() as u64), (b.as_ptr() as u64, 3)];
        let r = Remote::new(me, pieces, rx.acker(3));
        assert_eq!(r.len(), 70_003);
        let mut part = vec![0u8; 8];
        r.read(69_995, &mut part).unwrap();
        assert_eq!(&part[..5], &a[69_995..]);
        assert_eq!(&part[5..8], &b);
        assert_eq!(r.read(69_999, &mut part), Err(PvmError::NoData), "beyond the message");
        assert_eq!(tx.acked(), 0);
        let all = r.read_all().unwrap();
        assert_eq!(all, [&a[..], &b[..]].concat());
        assert_eq!(tx.acked(), 3);
    }

    #[test]
    fn the_sender_writes_any_part_of_its_message_into_the_receiver() {
        let me = std::process::id() as i32;
        let a: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let b = [9u8; 3];
        let mut dst = vec![0u8; 10];
        write_pieces(me, &[&a, &b], 4995, 8, dst.as_mut_ptr() as u64).unwrap();
        assert_eq!(&dst[..8], &[a[4995], a[4996], a[4997], a[4998], a[4999], 9, 9, 9]);
        assert_eq!(write_pieces(me, &[&a], 4999, 2, dst.as_mut_ptr() as u64), Err(PvmError::NoData));
        assert_eq!(write_pieces(me, &[&a], 0, 2, 8), Err(PvmError::SysErr), "an unmapped address");
    }

    #[test]
    fn memory_that_cannot_be_read_is_an_error_not_a_crash() {
        let me = std::process::id() as i32;
        assert!(!can_read(me, 8), "an unmapped address");
        let mut dst = [0u8; 4];
        assert_eq!(read_pieces(me, &[(8, 4)], 0, &mut dst), Err(PvmError::SysErr));
    }
}

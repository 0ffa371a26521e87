//! Channels: move bytes between processes. No matching, no MPI.
//!
//! A channel carries records of a fixed 24-byte [`Header`] and a payload between ranks. What it
//! can do is data it declares ([`Caps`]); the engine chooses protocols from that at setup.
//! Operations that cannot proceed now return `false` / `WouldBlock`, never block.

#[cfg(test)]
mod conformance;
mod loopback;
#[cfg(all(test, not(loom)))]
pub(crate) mod mem;
mod remote;
pub mod routes;
pub mod shm;
pub mod tcp;
pub mod udp;

/// A channel: this rank's end of a route to its peers (ranks `0..nranks`).
///
/// This trait is everything the engine may ask of a route. The mandatory core is `try_send`
/// (and its gathering form `try_send_gather`) + `poll`; the rest are optional, declared in
/// [`Caps`] and defaulted to "cannot": multicast, the remote memory of a large transfer
/// (`read_remote*`, `write_remote`, claim words), a ready record to take at once
/// (`take_head`), a cheap wait for one peer (`spin_for`), and broken routes to report. Nothing
/// here blocks except `sleep` and `poll_blocking` (at most [`BLOCK_BOUND`]).
pub trait Channel {
    /// What this channel can do, fixed at setup: what the engine may assume of every peer.
    fn caps(&self) -> Caps;
    /// What the route to `peer` can do (a channel of several routes differs per peer).
    fn caps_for(&self, _peer: usize) -> Caps {
        self.caps()
    }
    /// Number of ranks reachable (including this one).
    fn nranks(&self) -> usize;
    /// Posts one record to `peer`, or says it cannot now (no room: poll, then retry).
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock>;
    /// Posts one record whose payload is the concatenation of `pieces` (a non-contiguous
    /// buffer), copied straight from them: the same record as `try_send` of the joined bytes.
    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock>;
    /// Posts one record to every peer in `peers`, written once (all or none).
    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock>;
    /// Hands arrived records to `f(sender, header, payload)`, `hint`'s first; returns how many.
    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, f: F) -> usize;
    /// [`poll`](Self::poll) for a waiter whose `peer` needs this core to answer (the ranks
    /// crowd the cores): where nothing has arrived yet, the receive waits in the kernel, up to
    /// [`BLOCK_BOUND`], so the kernel hands the core straight to the peer and back, as in a
    /// pipe ping-pong (one system call a message, where a yield and then a receive made two).
    /// `None` where this channel cannot wait so now, or does not (`BB_WAIT_BLOCK=0`, the
    /// default): the caller yields instead.
    fn poll_blocking<F: FnMut(usize, &Header, &[u8])>(&mut self, _peer: usize, _f: F) -> Option<usize> {
        None
    }
    /// The system calls this channel made to receive so far (a socket route's; zero elsewhere).
    fn receive_calls(&self) -> ReceiveCalls {
        ReceiveCalls::default()
    }
    /// Hands the record at the head of `peer`'s queue to `take` if one waits there, and
    /// consumes it if `take` says so: a blocking receive's short cut past a whole poll.
    /// False when nothing was taken (or the channel has no such short cut).
    fn take_head(&mut self, _peer: usize, _take: impl FnOnce(&Header, &[u8]) -> bool) -> bool {
        false
    }
    /// Waits for a record from `peer` with a tight spin of at most `spins` pauses; returns the
    /// pauses spent, counting what a poll of this route costs (a channel that cannot watch
    /// for arrivals cheaply pauses once and lets the caller poll).
    fn spin_for(&self, _peer: usize, _spins: u32) -> u32 {
        std::hint::spin_loop();
        1
    }
    /// Whether this rank shares its cores with more ranks than there are cores.
    fn oversubscribed(&self) -> bool {
        false
    }
    /// Whether a broken route waits in [`take_failure`](Self::take_failure).
    fn has_failure(&self) -> bool {
        false
    }
    /// The next broken route not yet reported: the peer and what happened.
    fn take_failure(&mut self) -> Option<(usize, String)> {
        None
    }
    /// Stops taking records from `peer`, whose records broke the engine's protocol; the peer
    /// learns it (a socket's end shuts; the billboard's pair says so in a word the peer finds
    /// by [`look_for_closed`](Self::look_for_closed)).
    fn close(&mut self, _peer: usize, _why: &str) {}
    /// Looks for peers whose end closed without a record or a broken connection saying so (a
    /// shared-memory receiver that closed the pair, or whose process is gone): each waits in
    /// [`take_failure`](Self::take_failure) then. A look at every peer, so the engine's wait
    /// makes it before it sleeps, never on a poll: a send that waits only for its receiver's
    /// answer fails then instead of waiting for ever.
    fn look_for_closed(&mut self) {}
    /// Copies `dst.len()` bytes at `addr` in `peer`'s memory into `dst` (single copy).
    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
        let mut local = [libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() }];
        let mut remote = [libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: dst.len() }];
        self.read_remote_iov(peer, &mut local, &mut remote)
    }
    /// Copies from pieces of `peer`'s memory (`remote`) into local pieces (`local`, memory the
    /// caller owns mutably), both consumed as it goes; the two cover the same bytes.
    fn read_remote_iov(
        &self,
        _peer: usize,
        _local: &mut [libc::iovec],
        _remote: &mut [libc::iovec],
    ) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
    /// Copies `src` into `peer`'s memory at `addr` (the sender's half of a shared copy).
    fn write_remote(&self, _peer: usize, _addr: u64, _src: &[u8]) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
    /// Claim word `k` (below [`Caps::claim_words`]) of the copies shared with `peer`: the one
    /// of messages it sends us (`from_peer`), or of ours to it; both ends see the same word.
    fn claim_word(&self, peer: usize, _from_peer: bool, _k: usize) -> &crate::sync::AtomicU64 {
        unreachable!("claim word of rank {peer} asked of a channel that declares none")
    }
    /// Sleeps until a record may have arrived or `timeout` passes.
    fn sleep(&self, timeout: std::time::Duration);
    /// Whether every record accepted has left this process. A channel may keep the tail of what
    /// it accepted (a TCP socket that was full) until its owner's next poll, so an owner about
    /// to stop polling (finalize) polls until this holds.
    fn flushed(&self) -> bool {
        true
    }
}

/// The fixed header every record carries: match information and one word for the protocol.
/// The engine gives the fields their meaning; a channel only moves them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub kind: u32,
    pub context: u32,
    pub source: u32,
    pub tag: i32,
    pub aux: u64,
}

impl Header {
    pub const BYTES: usize = 24;

    #[inline]
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[0..4].copy_from_slice(&self.kind.to_ne_bytes());
        b[4..8].copy_from_slice(&self.context.to_ne_bytes());
        b[8..12].copy_from_slice(&self.source.to_ne_bytes());
        b[12..16].copy_from_slice(&self.tag.to_ne_bytes());
        b[16..24].copy_from_slice(&self.aux.to_ne_bytes());
        b
    }

    #[inline]
    pub fn from_bytes(b: &[u8; Self::BYTES]) -> Header {
        let w = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        Header {
            kind: w(0),
            context: w(4),
            source: w(8),
            tag: w(12) as i32,
            aux: u64::from_ne_bytes(b[16..24].try_into().unwrap()),
        }
    }
}

/// What a channel can do, declared once at setup.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Largest payload carried inline with the header (one post, no data-part slot).
    pub max_inline: usize,
    /// Largest payload one record may carry at all (inline or through a slot).
    pub max_record: usize,
    /// `read_remote` copies straight from a peer's memory (cross-memory attach).
    pub single_copy: bool,
    /// Claim words per peer and direction, on which both ends of a shared copy divide a large
    /// message (`write_remote` then writes the sender's part); 0: no shared copy.
    pub claim_words: usize,
    /// One post can be read by several receivers.
    pub multicast: bool,
    /// Largest message worth sending eagerly on this route, where the channel knows better than
    /// the engine's default (`BB_EAGER_MAX`): a TCP round trip costs far more than a memory one.
    pub eager_max: Option<usize>,
}

pub static WAIT_BLOCK: crate::tunables::Tunable = crate::tunables::Tunable::new(
    "BB_WAIT_BLOCK",
    0,
    "1: a rank that shares its core with the socket peer it waits for (one connection over TCP, one receiving socket over UDP) waits in one blocking receive, not a yield and a receive; 0 (default): it yields. Two ranks on one core, 8 B, loaded machine (load 15-20), CPU time per message over 3 rounds: UDP +7 %, TCP +8 % with 1 (a sleep and a wake-up cost more than a yield here), so off",
);

/// The longest one receive of [`Channel::poll_blocking`] waits (the sockets' `SO_RCVTIMEO`): a
/// UDP timer due meanwhile runs up to this late (its probes come 300 µs after a send at the
/// soonest, its retransmissions 1 ms), and the waiter looks at the rest of its work this often.
pub const BLOCK_BOUND: std::time::Duration = std::time::Duration::from_micros(500);

/// What a socket route's receiving cost in system calls so far: what a wait costs a message.
/// Plain counts kept by the channel's owner (under the lock it holds already).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiveCalls {
    /// Receive calls that found data, and those that found none.
    pub found: u64,
    pub empty: u64,
    /// Of both, those that waited in the kernel ([`Channel::poll_blocking`]).
    pub blocking: u64,
}

impl ReceiveCalls {
    /// Counts one receive call (`found`: it returned data; `blocking`: it could wait).
    #[inline]
    pub(crate) fn count(&mut self, found: bool, blocking: bool) {
        if found {
            self.found += 1;
        } else {
            self.empty += 1;
        }
        self.blocking += blocking as u64;
    }

    /// Both counts added.
    pub(crate) fn plus(self, o: ReceiveCalls) -> ReceiveCalls {
        ReceiveCalls { found: self.found + o.found, empty: self.empty + o.empty, blocking: self.blocking + o.blocking }
    }
}

/// The operation cannot proceed now (no ring room, no free slot): retry after progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WouldBlock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_through_bytes() {
        let h = Header { kind: 7, context: 1 << 20, source: 3, tag: -5, aux: u64::MAX - 1 };
        assert_eq!(Header::from_bytes(&h.to_bytes()), h);
    }
}

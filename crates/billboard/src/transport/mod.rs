//! Channels: move bytes between processes. No matching, no MPI.
//!
//! A channel carries records of a fixed 24-byte [`Header`] and a payload between ranks. What it
//! can do is data it declares ([`Caps`]); the engine chooses protocols from that at setup.
//! Operations that cannot proceed now return `false` / `WouldBlock`, never block.

#[cfg(test)]
mod conformance;
mod remote;
pub mod routes;
pub mod shm;
pub mod tcp;
pub mod udp;

/// A channel: this rank's end of a route to its peers (ranks `0..nranks`).
///
/// The mandatory core is `try_send` (and its gathering form `try_send_gather`) + `poll`;
/// `try_multicast` and `read_remote` are the optional fast paths, declared in [`Caps`]. Nothing here blocks except `sleep`.
pub trait Channel {
    /// What this channel can do, fixed at setup.
    fn caps(&self) -> Caps;
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
    /// Copies `dst.len()` bytes at `addr` in `peer`'s memory into `dst` (single copy).
    fn read_remote(&self, peer: usize, addr: u64, dst: &mut [u8]) -> std::io::Result<()>;
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
    /// One post can be read by several receivers.
    pub multicast: bool,
    /// Largest message worth sending eagerly on this route, where the channel knows better than
    /// the engine's default (`BB_EAGER_MAX`): a TCP round trip costs far more than a memory one.
    pub eager_max: Option<usize>,
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

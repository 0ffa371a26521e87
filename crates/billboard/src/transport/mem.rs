//! An in-memory channel for tests: every rank's end lives in this process, and the records in
//! flight sit in a [`Net`] the test drives. Nothing touches a segment, a socket or the kernel,
//! so engines over it (`engine/sim_tests.rs`) run every protocol with chosen delivery orders,
//! held-back records, full links, refused remote copies and dead peers, deterministically.
//!
//! A link (sender, receiver) keeps its records in order, as every real channel does; what the
//! test chooses is when each link's records become visible ([`Net::hold`], [`Net::release`]),
//! and so how the links interleave. Remote memory is this process's memory: the engines of one
//! test share the address space, so a single or shared copy is a plain copy.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::{Caps, Channel, Header, WouldBlock};
use crate::sync::AtomicU64;

/// The records in flight between the ranks of one test, and what the test has done to them.
pub struct Net {
    n: usize,
    /// Per link `from * n + to`: records sent and not yet polled, oldest first.
    links: Vec<VecDeque<(Header, Vec<u8>)>>,
    /// Per link: how many of its oldest records the receiver may see (`usize::MAX`: all).
    visible: Vec<usize>,
    /// Records a link holds before `try_send` says `WouldBlock`.
    capacity: usize,
    caps: Caps,
    /// Ranks the test killed: nothing more goes to or comes from them.
    dead: Vec<bool>,
    /// Per rank: failures it has not taken yet.
    failures: Vec<VecDeque<(usize, String)>>,
    /// Per rank: the remote reads (`.0`) and writes (`.1`) it makes are refused.
    refused: Vec<(bool, bool)>,
    /// Per rank: its memory cannot be found (another pid namespace), though it lives.
    hidden: Vec<bool>,
    /// Per link `from * n + to`: the receiver closed it ([`Channel::close`]); the sender finds
    /// out only by looking ([`Channel::look_for_closed`]), as over shared memory.
    closed: Vec<bool>,
    /// Every record accepted, oldest first: (from, to, kind, payload bytes).
    pub sent: Vec<(usize, usize, u32, usize)>,
}

impl Net {
    /// A net of `n` ranks whose channels declare `caps`; each link holds `capacity` records.
    pub fn new(n: usize, caps: Caps, capacity: usize) -> Rc<RefCell<Net>> {
        Rc::new(RefCell::new(Net {
            n,
            links: (0..n * n).map(|_| VecDeque::new()).collect(),
            visible: vec![usize::MAX; n * n],
            capacity,
            caps,
            dead: vec![false; n],
            failures: (0..n).map(|_| VecDeque::new()).collect(),
            refused: vec![(false, false); n],
            hidden: vec![false; n],
            closed: vec![false; n * n],
            sent: Vec::new(),
        }))
    }

    /// Every rank's channel, in rank order. They share the claim words of shared copies.
    pub fn channels(net: &Rc<RefCell<Net>>) -> Vec<MemChannel> {
        let (n, words) = {
            let net = net.borrow();
            (net.n, net.caps.claim_words)
        };
        let claims: Rc<[AtomicU64]> = (0..n * n * words.max(1)).map(|_| AtomicU64::new(0)).collect();
        (0..n).map(|me| MemChannel { me, net: Rc::clone(net), claims: Rc::clone(&claims) }).collect()
    }

    /// From now on the receiver sees no more of link `from -> to` than it has been shown.
    pub fn hold(&mut self, from: usize, to: usize) {
        let l = from * self.n + to;
        self.visible[l] = 0;
    }

    /// Shows the receiver `k` more records of a held link (`usize::MAX`: all, and stop holding).
    pub fn release(&mut self, from: usize, to: usize, k: usize) {
        let l = from * self.n + to;
        self.visible[l] = self.visible[l].saturating_add(k);
    }

    /// Rank `r` dies: what it had in flight is lost, and every other rank is told, as a real
    /// channel reports a broken route.
    pub fn kill(&mut self, r: usize, why: &str) {
        self.dead[r] = true;
        for other in 0..self.n {
            self.links[r * self.n + other].clear();
            self.links[other * self.n + r].clear();
            if other != r {
                self.failures[other].push_back((r, why.to_string()));
            }
        }
    }

    /// Rank `r`'s process is gone, and no route has noticed yet (a shared-memory peer's death
    /// is seen first by a copy from or into its memory): its records stop, and remote reads
    /// and writes of its memory fail with ESRCH, as `process_vm_readv/writev` do.
    pub fn vanish(&mut self, r: usize) {
        self.dead[r] = true;
        for other in 0..self.n {
            self.links[r * self.n + other].clear();
            self.links[other * self.n + r].clear();
        }
    }

    /// Rank `r` lives, but copies from or into its memory find no such process (ESRCH), as
    /// for a peer in another pid namespace.
    pub fn hide(&mut self, r: usize) {
        self.hidden[r] = true;
    }

    /// Puts a record on link `from -> to` behind what it holds, as if `from` had sent it: a
    /// record a well-behaved engine never sends (a peer that broke the protocol).
    pub fn inject(&mut self, from: usize, to: usize, header: Header, payload: &[u8]) {
        let l = from * self.n + to;
        self.links[l].push_back((header, payload.to_vec()));
    }

    /// The remote reads (`read`) and writes (`write`) rank `r` makes are refused from now on,
    /// as the kernel refuses `process_vm_readv/writev`.
    pub fn refuse(&mut self, r: usize, read: bool, write: bool) {
        self.refused[r] = (read, write);
    }
}

/// One rank's end of a [`Net`].
pub struct MemChannel {
    me: usize,
    net: Rc<RefCell<Net>>,
    /// Claim words, `(receiver * n + sender) * words + k`.
    claims: Rc<[AtomicU64]>,
}

impl MemChannel {
    /// Whether a remote read (or `write`) of `peer`'s memory goes: not if `peer` is dead or
    /// hidden, or
    /// if the test refuses this rank's.
    fn refused(&self, peer: usize, write: bool) -> std::io::Result<()> {
        if self.net.borrow().dead[peer] || self.net.borrow().hidden[peer] {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        let (read_refused, write_refused) = self.net.borrow().refused[self.me];
        match if write { write_refused } else { read_refused } {
            true => Err(std::io::ErrorKind::PermissionDenied.into()),
            false => Ok(()),
        }
    }
}

impl Channel for MemChannel {
    fn caps(&self) -> Caps {
        self.net.borrow().caps
    }

    fn nranks(&self) -> usize {
        self.net.borrow().n
    }

    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        self.try_send_gather(peer, header, &[payload])
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        self.try_multicast_gather(&[peer], header, pieces)
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        self.try_multicast_gather(peers, header, &[payload])
    }

    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, hint: Option<usize>, mut f: F) -> usize {
        let n = self.nranks();
        let first = hint.unwrap_or(0);
        let mut handled = 0;
        for s in (0..n).map(|i| (first + i) % n) {
            loop {
                // The record leaves the net before `f` runs: `f` may not reach the net, but a
                // test's closure could, and the borrow must not be held across it.
                let record = {
                    let mut net = self.net.borrow_mut();
                    let l = s * n + self.me;
                    if net.visible[l] == 0 {
                        None
                    } else {
                        let r = net.links[l].pop_front();
                        if r.is_some() && net.visible[l] != usize::MAX {
                            net.visible[l] -= 1;
                        }
                        r
                    }
                };
                let Some((h, payload)) = record else { break };
                f(s, &h, &payload);
                handled += 1;
            }
        }
        handled
    }

    fn has_failure(&self) -> bool {
        !self.net.borrow().failures[self.me].is_empty()
    }

    fn take_failure(&mut self) -> Option<(usize, String)> {
        self.net.borrow_mut().failures[self.me].pop_front()
    }

    fn close(&mut self, peer: usize, _why: &str) {
        let mut net = self.net.borrow_mut();
        let l = peer * net.n + self.me;
        net.links[l].clear();
        net.visible[l] = 0;
        net.closed[l] = true;
    }

    /// Reports each receiver that closed its link from this rank, once, when nothing it sent
    /// waits on its link to this rank (it is read first).
    fn look_for_closed(&mut self) {
        let mut net = self.net.borrow_mut();
        let n = net.n;
        for r in (0..n).filter(|&r| r != self.me) {
            let (out, back) = (self.me * n + r, r * n + self.me);
            if net.closed[out] && net.links[back].is_empty() {
                net.closed[out] = false;
                net.failures[self.me].push_back((r, "it closed its end of the pair".to_string()));
            }
        }
    }

    fn read_remote_iov(
        &self,
        peer: usize,
        local: &mut [libc::iovec],
        remote: &mut [libc::iovec],
    ) -> std::io::Result<()> {
        self.refused(peer, false)?;
        let mut src = Vec::new();
        for v in remote.iter() {
            // SAFETY: the peer's engine lives in this process and keeps the buffer its RTS
            // named alive until our FIN (the protocol under test).
            src.extend_from_slice(unsafe { std::slice::from_raw_parts(v.iov_base.cast::<u8>(), v.iov_len) });
        }
        if local.iter().map(|v| v.iov_len).sum::<usize>() != src.len() {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        let mut at = 0;
        for v in local.iter() {
            // SAFETY: the local pieces are memory the caller owns mutably (the contract).
            unsafe { std::ptr::copy_nonoverlapping(src[at..].as_ptr(), v.iov_base.cast::<u8>(), v.iov_len) };
            at += v.iov_len;
        }
        Ok(())
    }

    fn write_remote(&self, peer: usize, addr: u64, src: &[u8]) -> std::io::Result<()> {
        self.refused(peer, true)?;
        // SAFETY: the receiver's engine lives in this process and offered these pages of its
        // posted buffer (SHARE); the claim word gave them to us alone.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) };
        Ok(())
    }

    fn claim_word(&self, peer: usize, from_peer: bool, k: usize) -> &AtomicU64 {
        let (n, words) = {
            let net = self.net.borrow();
            (net.n, net.caps.claim_words)
        };
        assert!(k < words, "claim word {k} of {words}");
        let (receiver, sender) = if from_peer { (self.me, peer) } else { (peer, self.me) };
        &self.claims[(receiver * n + sender) * words + k]
    }

    fn sleep(&self, _timeout: std::time::Duration) {}
}

impl MemChannel {
    /// One record to every peer in `peers` (all or none), gathered from `pieces`.
    fn try_multicast_gather(&mut self, peers: &[usize], header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        let mut net = self.net.borrow_mut();
        let n = net.n;
        let payload: Vec<u8> = pieces.concat();
        assert!(payload.len() <= net.caps.max_record, "a record of {} bytes past max_record", payload.len());
        if peers.iter().any(|&p| net.links[self.me * n + p].len() >= net.capacity) {
            return Err(WouldBlock);
        }
        for &p in peers {
            net.sent.push((self.me, p, header.kind, payload.len()));
            if !net.dead[p] && !net.dead[self.me] {
                net.links[self.me * n + p].push_back((*header, payload.clone()));
            }
        }
        Ok(())
    }
}

/// Capabilities of a billboard-like channel: small records inline, single and shared copies.
pub fn shm_like() -> Caps {
    Caps { max_inline: 256, max_record: 16 << 10, single_copy: true, claim_words: 4, multicast: true, eager_max: None }
}

/// `n` ranks over one [`Net`] with [`shm_like`] capabilities (the conformance suite's way in).
pub(crate) fn endpoints(n: usize) -> Vec<MemChannel> {
    Net::channels(&Net::new(n, shm_like(), 8))
}

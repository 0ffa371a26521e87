//! The first bytes on every TCP connection: both ends prove knowledge of the job secret.
//!
//! A mutual challenge–response with HMAC-SHA256 (RFC 2104) keyed by the secret `bbrun` generates
//! per job and passes in the environment ([`SECRET_ENV`]), never on a command line. Each side
//! contributes a fresh 32-byte nonce, and each MAC covers both nonces and both ranks under a label
//! that says which side computed it, so a recorded exchange cannot be replayed (the other side's
//! nonce is new), one side's MAC cannot be reflected as the other's, and a connection meant for
//! rank B cannot be answered by rank C. Byte by byte (integers little-endian):
//!
//! ```text
//! initiator -> acceptor   HELLO     48 bytes: "BBhs" | version u32 = 2 | initiator rank u32
//!                                             | acceptor rank u32 (whom it meant to reach) | nonce_i [32]
//! acceptor -> initiator   CHALLENGE 76 bytes: "BBhs" | version u32 = 2 | acceptor rank u32 | nonce_a [32]
//!                                             | HMAC(secret, "billboard-tcp-2 acceptor" | ranks | nonce_i | nonce_a)
//! initiator -> acceptor   PROOF     32 bytes: HMAC(secret, "billboard-tcp-2 initiator" | ranks | nonce_i | nonce_a)
//! ```
//!
//! The version is that of everything on the connection: the handshake and the frames after it
//! (`wire.rs`), which carry none of their own. Version 2: frames of 28 bytes (1 had 56).
//!
//! `ranks` is initiator rank u32 | acceptor rank u32. The initiator sends its PROOF only after
//! checking the acceptor's MAC, so it never answers a party that does not know the secret; the
//! acceptor accepts frames only after checking the PROOF. Messages have fixed sizes, so a side
//! buffers at most one message: there is no length a stranger can inflate. Bytes after the last
//! handshake message belong to the frame stream (see [`Step::Done`]). Out of scope: an attacker on
//! the path who relays or alters bytes after the handshake (the threat is a stranger connecting to
//! a rank's port); and ranks of the same job, who share the secret.

use ring::{hkdf, hmac};
use std::fmt;

/// Environment variable holding the job secret, hex-encoded (at least [`MIN_SECRET_BYTES`]).
pub const SECRET_ENV: &str = "BB_JOB_SECRET";
/// 128 bits: the least a secret a stranger must guess may have.
pub const MIN_SECRET_BYTES: usize = 16;
/// Bytes of a generated secret and of each nonce.
const RANDOM_BYTES: usize = 32;
const MAGIC: &[u8; 4] = b"BBhs";
/// The wire version, of the handshake and of the frames that follow it.
pub const VERSION: u32 = 2;
/// What each side's MAC is computed over first, so one side's MAC is never valid as the other's.
const ACCEPTOR_LABEL: &[u8] = b"billboard-tcp-2 acceptor";
const INITIATOR_LABEL: &[u8] = b"billboard-tcp-2 initiator";
const HELLO_BYTES: usize = 48;
const CHALLENGE_BYTES: usize = 76;
const PROOF_BYTES: usize = 32;

/// The job secret: the HMAC key. Never printed; wiped when dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// A fresh random secret (for the launcher).
    pub fn generate() -> Result<Secret, HandshakeError> {
        Ok(Secret(random::<RANDOM_BYTES>()?.to_vec()))
    }

    /// Reads [`SECRET_ENV`].
    pub fn from_env() -> Result<Secret, HandshakeError> {
        let v = std::env::var(SECRET_ENV).map_err(|_| HandshakeError::BadSecret("BB_JOB_SECRET is not set"))?;
        Secret::from_hex(&v)
    }

    pub fn from_hex(hex: &str) -> Result<Secret, HandshakeError> {
        let digit = |c: u8| (c as char).to_digit(16).ok_or(HandshakeError::BadSecret("the secret is not hex"));
        if hex.len() & 1 != 0 {
            return Err(HandshakeError::BadSecret("the secret is not hex"));
        }
        let bytes = hex
            .as_bytes()
            .chunks(2)
            .map(|p| Ok((digit(p[0])? * 16 + digit(p[1])?) as u8))
            .collect::<Result<Vec<u8>, _>>()?;
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(HandshakeError::BadSecret("the secret is shorter than 16 bytes"));
        }
        Ok(Secret(bytes))
    }

    /// The hex form to put in [`SECRET_ENV`].
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A 32-byte key for `context` derived from the secret (HKDF-SHA256, RFC 5869, the
    /// context as its info): the UDP route's datagram key.
    pub(crate) fn derive_key(&self, context: &str) -> [u8; 32] {
        struct Len32;
        impl hkdf::KeyType for Len32 {
            fn len(&self) -> usize {
                32
            }
        }
        let mut key = [0u8; 32];
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"billboard").extract(&self.0);
        let info = [context.as_bytes()];
        prk.expand(&info, Len32).and_then(|okm| okm.fill(&mut key)).expect("32 bytes is within HKDF's limit");
        key
    }

    /// HMAC-SHA256 keyed by the secret over `label`, both ranks and both nonces: the MAC of the
    /// TCP handshake.
    fn mac_input(label: &[u8], initiator: u32, acceptor: u32, nonce_i: &[u8], nonce_a: &[u8]) -> Vec<u8> {
        [label, &initiator.to_le_bytes(), &acceptor.to_le_bytes(), nonce_i, nonce_a].concat()
    }

    fn mac(&self, label: &[u8], initiator: u32, acceptor: u32, nonce_i: &[u8], nonce_a: &[u8]) -> hmac::Tag {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        hmac::sign(&key, &Self::mac_input(label, initiator, acceptor, nonce_i, nonce_a))
    }

    /// Checks, in constant time, a MAC made by [`mac`](Self::mac) with the same inputs.
    #[allow(clippy::too_many_arguments)]
    fn verify(
        &self,
        label: &[u8],
        initiator: u32,
        acceptor: u32,
        nonce_i: &[u8],
        nonce_a: &[u8],
        got: &[u8],
    ) -> Result<(), HandshakeError> {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        hmac::verify(&key, &Self::mac_input(label, initiator, acceptor, nonce_i, nonce_a), got)
            .map_err(|_| HandshakeError::BadMac)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<{} bytes>)", self.0.len())
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        for b in self.0.iter_mut() {
            // SAFETY: `b` is a valid, aligned, exclusive reference; volatile so the wipe is kept.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

/// Why a connection was refused. The socket layer logs it with the peer's address and drops it.
#[derive(Debug, PartialEq, Eq)]
pub enum HandshakeError {
    /// The job secret is missing or malformed (a setup error, not a peer's).
    BadSecret(&'static str),
    /// The kernel gave no random bytes.
    Random(rustix::io::Errno),
    /// The first bytes are not a Billboard handshake (a stranger, a port scanner, garbage).
    BadMagic,
    /// A Billboard handshake of another version.
    UnsupportedVersion(u32),
    /// The peer is not the rank this side expected (initiator), or meant another rank (acceptor).
    WrongPeer { expected: u32, got: u32 },
    /// The initiator claims a rank outside the job.
    UnknownPeer { rank: u32, nranks: u32 },
    /// The MAC is wrong: the peer does not know the secret, or replays an old exchange.
    BadMac,
    /// `on_bytes` after the handshake finished or failed.
    Finished,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::BadSecret(why) => write!(f, "job secret: {why}"),
            HandshakeError::Random(e) => write!(f, "getrandom: {e}"),
            HandshakeError::BadMagic => write!(f, "not a Billboard handshake"),
            HandshakeError::UnsupportedVersion(v) => write!(f, "handshake version {v}, this build speaks {VERSION}"),
            HandshakeError::WrongPeer { expected, got } => write!(f, "peer is rank {got}, expected rank {expected}"),
            HandshakeError::UnknownPeer { rank, nranks } => write!(f, "peer claims rank {rank} of a {nranks}-rank job"),
            HandshakeError::BadMac => write!(f, "authentication failed: wrong job secret or a replayed handshake"),
            HandshakeError::Finished => write!(f, "handshake already over"),
        }
    }
}

impl std::error::Error for HandshakeError {}

/// What a handshake state machine asks for after `on_bytes`. Send [`take_transmit`](Initiator::take_transmit)'s
/// bytes in either case.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// All input was taken; more is needed.
    Wait,
    /// Authenticated `peer`. The first `consumed` bytes of this input were the handshake's; the
    /// rest are frames for the [`FrameReader`](super::stream::FrameReader).
    Done { peer: u32, consumed: usize },
}

fn random<const N: usize>() -> Result<[u8; N], HandshakeError> {
    let mut b = [0u8; N];
    let mut filled = 0;
    while filled < N {
        match rustix::rand::getrandom(&mut b[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(HandshakeError::Random(e)),
        }
    }
    Ok(b)
}

/// Collects one fixed-size message across calls; checks the magic as soon as it arrives, so
/// garbage is refused on its first bytes.
struct Inbox<const N: usize> {
    buf: [u8; N],
    len: usize,
    has_magic: bool,
}

impl<const N: usize> Inbox<N> {
    fn new(has_magic: bool) -> Self {
        Inbox { buf: [0; N], len: 0, has_magic }
    }

    /// Takes what it needs of `input`; returns the bytes taken and whether the message is complete.
    fn take(&mut self, input: &[u8]) -> Result<(usize, bool), HandshakeError> {
        let n = (N - self.len).min(input.len());
        self.buf[self.len..self.len + n].copy_from_slice(&input[..n]);
        self.len += n;
        if self.has_magic {
            let seen = self.len.min(MAGIC.len());
            if self.buf[..seen] != MAGIC[..seen] {
                return Err(HandshakeError::BadMagic);
            }
            if self.len >= 8 {
                let v = u32::from_le_bytes(self.buf[4..8].try_into().unwrap());
                if v != VERSION {
                    return Err(HandshakeError::UnsupportedVersion(v));
                }
            }
        }
        Ok((n, self.len == N))
    }

    fn u32_at(&self, i: usize) -> u32 {
        u32::from_le_bytes(self.buf[i..i + 4].try_into().unwrap())
    }
}

/// The side that connects: knows which rank it means to reach.
pub struct Initiator {
    secret: Secret,
    me: u32,
    peer: u32,
    nonce: [u8; RANDOM_BYTES],
    inbox: Inbox<CHALLENGE_BYTES>,
    transmit: Vec<u8>,
    over: bool,
}

impl Initiator {
    /// Starts a handshake from rank `me` to rank `peer`; HELLO waits in [`take_transmit`](Self::take_transmit).
    pub fn new(secret: &Secret, me: u32, peer: u32) -> Result<Initiator, HandshakeError> {
        let nonce = random::<RANDOM_BYTES>()?;
        let mut transmit = Vec::with_capacity(HELLO_BYTES);
        for part in [&MAGIC[..], &VERSION.to_le_bytes(), &me.to_le_bytes(), &peer.to_le_bytes(), &nonce] {
            transmit.extend_from_slice(part);
        }
        let inbox = Inbox::new(true);
        Ok(Initiator { secret: secret.clone(), me, peer, nonce, inbox, transmit, over: false })
    }

    /// Bytes to send now (empty if none).
    pub fn take_transmit(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.transmit)
    }

    /// Feeds bytes received from the acceptor.
    pub fn on_bytes(&mut self, input: &[u8]) -> Result<Step, HandshakeError> {
        if self.over {
            return Err(HandshakeError::Finished);
        }
        let result = self.advance(input);
        self.over = !matches!(result, Ok(Step::Wait));
        result
    }

    fn advance(&mut self, input: &[u8]) -> Result<Step, HandshakeError> {
        let (consumed, complete) = self.inbox.take(input)?;
        if !complete {
            return Ok(Step::Wait);
        }
        let got = self.inbox.u32_at(8);
        if got != self.peer {
            return Err(HandshakeError::WrongPeer { expected: self.peer, got });
        }
        let nonce_a = &self.inbox.buf[12..44];
        self.secret.verify(ACCEPTOR_LABEL, self.me, self.peer, &self.nonce, nonce_a, &self.inbox.buf[44..76])?;
        let proof = self.secret.mac(INITIATOR_LABEL, self.me, self.peer, &self.nonce, nonce_a);
        self.transmit.extend_from_slice(proof.as_ref());
        Ok(Step::Done { peer: self.peer, consumed })
    }
}

/// The side that accepts: learns the initiator's rank from its HELLO.
pub struct Acceptor {
    secret: Secret,
    me: u32,
    nranks: u32,
    nonce: [u8; RANDOM_BYTES],
    hello: Inbox<HELLO_BYTES>,
    proof: Inbox<PROOF_BYTES>,
    peer: Option<u32>,
    transmit: Vec<u8>,
    over: bool,
}

impl Acceptor {
    /// Waits for a HELLO addressed to rank `me` of an `nranks`-rank job.
    pub fn new(secret: &Secret, me: u32, nranks: u32) -> Result<Acceptor, HandshakeError> {
        Ok(Acceptor {
            secret: secret.clone(),
            me,
            nranks,
            nonce: random::<RANDOM_BYTES>()?,
            hello: Inbox::new(true),
            proof: Inbox::new(false),
            peer: None,
            transmit: Vec::new(),
            over: false,
        })
    }

    /// Bytes to send now (empty if none).
    pub fn take_transmit(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.transmit)
    }

    /// The initiator's rank, once its HELLO is in (and the CHALLENGE sent).
    pub fn peer(&self) -> Option<u32> {
        self.peer
    }

    /// Feeds bytes received from the initiator.
    pub fn on_bytes(&mut self, input: &[u8]) -> Result<Step, HandshakeError> {
        if self.over {
            return Err(HandshakeError::Finished);
        }
        let result = self.advance(input);
        self.over = !matches!(result, Ok(Step::Wait));
        result
    }

    fn advance(&mut self, input: &[u8]) -> Result<Step, HandshakeError> {
        let mut consumed = 0;
        let peer = match self.peer {
            Some(p) => p,
            None => {
                let (n, complete) = self.hello.take(input)?;
                consumed = n;
                if !complete {
                    return Ok(Step::Wait);
                }
                let (peer, meant) = (self.hello.u32_at(8), self.hello.u32_at(12));
                if meant != self.me {
                    return Err(HandshakeError::WrongPeer { expected: self.me, got: meant });
                }
                if peer >= self.nranks || peer == self.me {
                    return Err(HandshakeError::UnknownPeer { rank: peer, nranks: self.nranks });
                }
                let nonce_i = &self.hello.buf[16..48];
                let mac = self.secret.mac(ACCEPTOR_LABEL, peer, self.me, nonce_i, &self.nonce);
                for part in [&MAGIC[..], &VERSION.to_le_bytes(), &self.me.to_le_bytes(), &self.nonce] {
                    self.transmit.extend_from_slice(part);
                }
                self.transmit.extend_from_slice(mac.as_ref());
                self.peer = Some(peer);
                peer
            }
        };
        let (n, complete) = self.proof.take(&input[consumed..])?;
        consumed += n;
        if !complete {
            return Ok(Step::Wait);
        }
        self.secret.verify(INITIATOR_LABEL, peer, self.me, &self.hello.buf[16..48], &self.nonce, &self.proof.buf)?;
        Ok(Step::Done { peer, consumed })
    }
}

#[cfg(test)]
#[path = "handshake_tests.rs"]
mod tests;

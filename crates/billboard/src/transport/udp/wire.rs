//! One UDP datagram, byte by byte (integers little-endian), and its protection.
//!
//! ```text
//!  0  magic "BBu6"      4   (version 6 of this layout; 5 sealed short datagrams with AES-GCM
//!                           too, 4 had no ranges, 3 no xmit and echo, 2 a keyed BLAKE3 MAC and
//!                           no encryption, 1 an HMAC-SHA256 MAC)
//!  4  kind u8           1   DATA = 1, ACK = 2, FIN = 3 (the sender is done: it acknowledges
//!                           everything it will ever acknowledge)
//!  5  flags u8          1   DATA only: FIRST = 1 (a record starts here), LAST = 2 (it ends here)
//!  6  reserved u16      2   zero
//!  8  src u32           4   sending rank
//! 12  dst u32           4   receiving rank (a datagram meant for another rank is refused)
//! 16  seq u64           8   DATA: this datagram's number in the src -> dst stream (from 0)
//! 24  ack u64           8   every datagram of the dst -> src stream below this has arrived
//! 32  sack u64          8   bit i: datagram ack + 1 + i of the dst -> src stream has arrived
//! 40  xmit u32          4   DATA: this transmission's number in the src -> dst stream (from 1;
//!                           a retransmission takes a new one), low 32 bits; others zero
//! 44  echo u32          4   the xmit of the DATA datagram of the dst -> src stream that arrived
//!                           last (0: none yet): tells the sender, without the ambiguity of a
//!                           sequence number sent twice, how far its transmissions got (RACK)
//! 48  nonce u64         8   the sender's count of datagrams it sealed (see below)
//! 56  body              n   DATA: a fragment of a record; a FIRST fragment opens with the
//!                           record's 24-byte header and its payload length (u32). ACK, FIN:
//!                           the selective acknowledgement as ranges (see below). In clear in a
//!                           short datagram, encrypted in a long one (see below)
//! 56+n tag [16]        16   the datagram's MAC (see below)
//! ```
//!
//! The keys: HKDF-SHA256(job secret, info "billboard-udp-6 datagram"), 32 bytes: the first 16
//! an AES-128-GCM key, the last 16 the SipHash key (two little-endian u64).
//!
//! - A short datagram ([`SHORT`] bytes or fewer, tag included; every message of up to 156
//!   bytes, and every acknowledgement of up to 23 ranges): the body travels in clear and the tag
//!   is SipHash-2-4 with its 128-bit output ([`super::siphash`]; OpenSSL's SIPHASH MAC with its
//!   default 16-byte output) of bytes 0 .. 56+n. A PRF made for short inputs: ~49 ns for a
//!   92-byte datagram (an 8-byte message) where ring's AES-GCM took ~97, twice a message (seal
//!   and check); from ~250 bytes on AES-GCM is the cheaper (`bench/udp/macs`, 2026-11-27: 148 B
//!   70 vs 98 ns, 596 B 236 vs 134).
//! - A long datagram: the tag is AES-128-GCM's over bytes 0 .. 56 (authenticated, in clear) and
//!   the body (encrypted).
//!
//! The tag keeps out datagrams of strangers and of other jobs, and a rank's datagrams from being
//! redirected to another rank; sequence numbers (64-bit, never reused) make a replayed datagram
//! a duplicate, which the receiver drops. Long bodies are encrypted because that is what makes
//! their authentication cheap: AES-GCM's encryption path runs on the CPU's AES and carry-less multiply
//! instructions (measured on this machine, one datagram: 1472 B 0.36 us where keyed BLAKE3, the
//! MAC of layout 2, took 1.7 us and GCM over unencrypted data 1.0 us; 104 B 0.10 vs 0.14 us;
//! 64 KiB 7.7 vs 15.6 us). Each seal takes a fresh 96-bit GCM nonce: the sender's rank (u32) and
//! its count of seals (u64, the `nonce` field), so no two datagrams of one job share a nonce
//! under its key (a retransmission, with its new xmit and acknowledgements, is sealed again
//! under the next count). The count starts at a random value in each process, so that a rank number reused by
//! another process of the same job (a spawned one) cannot run into a range already used but with
//! a chance of 2^-64 per datagram.

//! The ranges of an ACK or FIN body: 8 bytes each, `start - ack` (u32, at least 1) and the
//! length (u32, at least 1), in ascending order with a gap between one and the next: the
//! datagrams `start .. start + length` of the dst -> src stream have arrived. They list, from the
//! lowest, what the receiver holds past the first gap, up to [`MAX_RANGES`] ranges; the end of the
//! last one is as far as the acknowledgement tells (beyond it the receiver may hold more). The
//! head's bitmap sees only the 64 datagrams after `ack`: under loss a sender learned of a loss
//! further on only once every gap before it had been repaired, one round trip per gap.

use ring::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey, AES_128_GCM};

use crate::transport::tcp::handshake::Secret;

pub const MAGIC: &[u8; 4] = b"BBu6";
/// The longest datagram (tag included) whose tag is SipHash's, its body in clear.
pub const SHORT: usize = 256;
pub const HEAD: usize = 56;
/// Bytes of the authentication tag that ends every datagram.
pub const MAC: usize = 16;
/// Bytes a FIRST fragment spends on the record's header and length.
pub const RECORD_HEAD: usize = crate::transport::Header::BYTES + 4;

pub const DATA: u8 = 1;
pub const ACK: u8 = 2;
pub const FIN: u8 = 3;
pub const FIRST: u8 = 1;
pub const LAST: u8 = 2;

/// The fixed part of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub kind: u8,
    pub flags: u8,
    pub src: u32,
    pub dst: u32,
    pub seq: u64,
    pub ack: u64,
    pub sack: u64,
    pub xmit: u32,
    pub echo: u32,
}

impl Head {
    /// Appends the encoded head to `out` (its nonce is the seal's to write): built whole, then
    /// appended once (one capacity check, not eleven).
    pub fn put(&self, out: &mut Vec<u8>) {
        let mut b = [0u8; HEAD];
        b[..4].copy_from_slice(MAGIC);
        b[4] = self.kind;
        b[5] = self.flags;
        b[8..12].copy_from_slice(&self.src.to_le_bytes());
        b[12..16].copy_from_slice(&self.dst.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.ack.to_le_bytes());
        b[32..40].copy_from_slice(&self.sack.to_le_bytes());
        b[40..44].copy_from_slice(&self.xmit.to_le_bytes());
        b[44..48].copy_from_slice(&self.echo.to_le_bytes());
        out.extend_from_slice(&b);
    }

    /// The fields a retransmission rewrites (its xmit, and the acknowledgements of when it
    /// leaves), as they sit in bytes 24 .. 48.
    pub fn resent(ack: u64, sack: u64, xmit: u32, echo: u32) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&ack.to_le_bytes());
        b[8..16].copy_from_slice(&sack.to_le_bytes());
        b[16..20].copy_from_slice(&xmit.to_le_bytes());
        b[20..].copy_from_slice(&echo.to_le_bytes());
        b
    }

    fn get(b: &[u8]) -> Head {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Head {
            kind: b[4],
            flags: b[5],
            src: u32_at(8),
            dst: u32_at(12),
            seq: u64_at(16),
            ack: u64_at(24),
            sack: u64_at(32),
            xmit: u32_at(40),
            echo: u32_at(44),
        }
    }
}

/// Ranges one acknowledgement lists at most (its body: 8 bytes each, 1 KiB at most; fewer
/// where the datagram is smaller): a window of 1024 datagrams at 5 % loss has about 50 gaps.
pub const MAX_RANGES: usize = 128;
/// Bytes of one range.
pub const RANGE: usize = 8;

/// Appends the ranges `start .. end` (ascending, apart, all past `ack`) to an ACK's body.
pub fn put_ranges(ack: u64, ranges: &[(u64, u64)], out: &mut Vec<u8>) {
    for &(start, end) in ranges {
        out.extend_from_slice(&((start - ack) as u32).to_le_bytes());
        out.extend_from_slice(&((end - start) as u32).to_le_bytes());
    }
}

/// Reads the ranges of an ACK's or FIN's `body` into `out` (as `start .. end`), or says what is
/// wrong with them.
pub fn get_ranges(ack: u64, body: &[u8], out: &mut Vec<(u64, u64)>) -> Result<(), String> {
    out.clear();
    if !body.len().is_multiple_of(RANGE) || body.len() / RANGE > MAX_RANGES {
        return Err(format!("an acknowledgement body of {} bytes is no list of ranges", body.len()));
    }
    let mut after = ack; // a range must start past this
    for r in body.chunks_exact(RANGE) {
        let off = u32::from_le_bytes(r[..4].try_into().unwrap());
        let len = u32::from_le_bytes(r[4..].try_into().unwrap());
        let start = ack.checked_add(u64::from(off)).filter(|&s| s > after && len > 0);
        let Some(start) = start else {
            return Err(format!("acknowledgement range {off}+{len} past {ack} overlaps, touches or is empty"));
        };
        let end = start.saturating_add(u64::from(len));
        out.push((start, end));
        after = end;
    }
    Ok(())
}

/// The job secret prepared for datagrams, and this process's count of seals.
pub struct Key {
    aead: LessSafeKey,
    /// The short datagrams' SipHash key.
    sip: (u64, u64),
    seals: u64,
}

impl Key {
    pub fn new(secret: &Secret) -> Key {
        let derived = secret.derive_key("billboard-udp-6 datagram");
        let key = UnboundKey::new(&AES_128_GCM, &derived[..16]).expect("16 bytes is an AES-128 key");
        let half = |at: usize| u64::from_le_bytes(derived[at..at + 8].try_into().expect("8 bytes"));
        let mut start = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut start)
            .expect("the kernel's random numbers");
        Key { aead: LessSafeKey::new(key), sip: (half(16), half(24)), seals: u64::from_le_bytes(start) }
    }

    /// The GCM nonce of a datagram: its sender and its `nonce` field.
    fn nonce(datagram: &[u8]) -> Nonce {
        let mut n = [0u8; 12];
        n[..4].copy_from_slice(&datagram[8..12]);
        n[4..].copy_from_slice(&datagram[48..56]);
        Nonce::assume_unique_for_key(n)
    }

    /// A short datagram's tag: SipHash of its head and body.
    fn short_tag(&self, covered: &[u8]) -> [u8; MAC] {
        super::siphash::siphash128(self.sip.0, self.sip.1, covered)
    }

    /// Seals `datagram` (its head already written, `nonce` aside): encrypts a long one's body,
    /// and appends the tag.
    pub fn seal(&mut self, datagram: &mut Vec<u8>) {
        self.seals = self.seals.wrapping_add(1);
        datagram[48..56].copy_from_slice(&self.seals.to_le_bytes());
        if datagram.len() + MAC <= SHORT {
            let tag = self.short_tag(datagram);
            datagram.extend_from_slice(&tag);
            return;
        }
        let (head, body) = datagram.split_at_mut(HEAD);
        let tag = self.aead.seal_in_place_separate_tag(Self::nonce(head), Aad::from(&*head), body);
        datagram.extend_from_slice(tag.expect("a datagram is far below GCM's limit").as_ref());
    }

    /// Seals a datagram sealed before again, with bytes 24 .. 48 replaced ([`Head::resent`]: a
    /// retransmission's xmit and the acknowledgements of when it leaves) and the next nonce.
    pub fn reseal(&mut self, datagram: &mut [u8], fields: &[u8; 24]) {
        let n = datagram.len() - MAC;
        if datagram.len() <= SHORT {
            datagram[24..48].copy_from_slice(fields);
            self.seals = self.seals.wrapping_add(1);
            datagram[48..56].copy_from_slice(&self.seals.to_le_bytes());
            let tag = self.short_tag(&datagram[..n]);
            datagram[n..].copy_from_slice(&tag);
            return;
        }
        let (head, rest) = datagram.split_at_mut(HEAD);
        let (body, tag) = rest.split_at_mut(n - HEAD);
        let old = Tag::try_from(&*tag).expect("16 bytes");
        self.aead
            .open_in_place_separate_tag(Self::nonce(head), Aad::from(&*head), old, body, 0..)
            .expect("a datagram this side sealed opens");
        head[24..48].copy_from_slice(fields);
        self.seals = self.seals.wrapping_add(1);
        head[48..56].copy_from_slice(&self.seals.to_le_bytes());
        let new = self.aead.seal_in_place_separate_tag(Self::nonce(head), Aad::from(&*head), body);
        tag.copy_from_slice(new.expect("a datagram is far below GCM's limit").as_ref());
    }

    /// Checks and decrypts, in place, a received datagram addressed to `me`: its head and body,
    /// or why it was refused.
    pub fn open<'a>(&self, me: u32, b: &'a mut [u8]) -> Result<(Head, &'a [u8]), Refused> {
        if b.len() < HEAD + MAC || &b[..4] != MAGIC {
            return Err(Refused::NotOurs);
        }
        let n = b.len() - MAC;
        if b.len() <= SHORT {
            let (covered, got) = b.split_at(n);
            // Every byte compared whatever the first difference (no early exit to time).
            let expected = self.short_tag(covered);
            let diff = expected.iter().zip(got).fold(0u8, |d, (x, y)| d | (x ^ y));
            if std::hint::black_box(diff) != 0 {
                return Err(Refused::BadMac);
            }
            return Self::checked(me, Head::get(covered), &covered[HEAD..]);
        }
        let (head, rest) = b.split_at_mut(HEAD);
        let (body, tag) = rest.split_at_mut(n - HEAD);
        let tag = Tag::try_from(&*tag).expect("16 bytes");
        // The tag check is ring's, in constant time.
        self.aead
            .open_in_place_separate_tag(Self::nonce(head), Aad::from(&*head), tag, body, 0..)
            .map_err(|_| Refused::BadMac)?;
        Self::checked(me, Head::get(head), body)
    }

    /// An authentic datagram's head and body, if it is addressed to `me` and of a known kind.
    fn checked(me: u32, head: Head, body: &[u8]) -> Result<(Head, &[u8]), Refused> {
        if head.dst != me {
            return Err(Refused::NotForMe(head.dst));
        }
        if !(DATA..=FIN).contains(&head.kind) {
            return Err(Refused::BadKind(head.kind));
        }
        Ok((head, body))
    }
}

/// Why a datagram was dropped unread.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Too short, or not a Billboard datagram.
    NotOurs,
    /// The MAC is wrong: not this job's secret, or altered bytes.
    BadMac,
    NotForMe(u32),
    BadKind(u8),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::new(&Secret::from_hex("00112233445566778899aabbccddeeff").unwrap())
    }

    #[test]
    fn a_sealed_datagram_opens_and_any_change_is_refused() {
        // Both seals: a short datagram's (SipHash, body in clear) and a long one's (AES-GCM,
        // body encrypted), on either side of SHORT.
        for len in [4, SHORT - HEAD - MAC, SHORT - HEAD - MAC + 1, 400] {
            let short = HEAD + len + MAC <= SHORT;
            let content: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let head =
                Head { kind: DATA, flags: FIRST | LAST, src: 3, dst: 1, seq: 7, ack: 9, sack: 0b101, xmit: 4, echo: 2 };
            let mut d = Vec::new();
            head.put(&mut d);
            d.extend_from_slice(&content);
            let mut sealer = key();
            sealer.seal(&mut d);
            assert_eq!(d.len(), HEAD + len + MAC);
            assert_eq!(d[HEAD..HEAD + len] == content[..], short, "{len} bytes: only a long body is encrypted");
            let (h, body) = key().open(1, &mut d.clone()).map(|(h, b)| (h, b.to_vec())).unwrap();
            assert_eq!((h, &body[..]), (head, &content[..]));
            assert_eq!(key().open(2, &mut d.clone()), Err(Refused::NotForMe(1)));
            for i in [0, 5, 9, 20, 41, 50, HEAD + 1, HEAD + len - 1, d.len() - 1] {
                for bit in [0, 7] {
                    let mut bad = d.clone();
                    bad[i] ^= 1 << bit;
                    assert!(key().open(1, &mut bad).is_err(), "{len} bytes: bit {bit} of byte {i} flipped");
                }
            }
            let other = Key::new(&Secret::from_hex("ff112233445566778899aabbccddeeff").unwrap());
            assert_eq!(other.open(1, &mut d.clone()), Err(Refused::BadMac), "{len} bytes: another secret");
            assert_eq!(key().open(1, &mut d.clone()[..HEAD]), Err(Refused::NotOurs));
            // One byte cut off the end, or added: a different length, another tag.
            assert!(key().open(1, &mut d.clone()[..d.len() - 1]).is_err());
            assert!(key().open(1, &mut [&d[..], &[0]].concat()).is_err());
            // New acknowledgements written over a sealed datagram: refused; resealed: open, under
            // another nonce.
            let mut altered = d.clone();
            altered[24..48].copy_from_slice(&Head::resent(11, 1, 5, 3));
            assert_eq!(key().open(1, &mut altered), Err(Refused::BadMac));
            let mut again = d.clone();
            sealer.reseal(&mut again, &Head::resent(11, 1, 5, 3));
            assert_ne!(again[48..56], d[48..56], "a new nonce");
            let (h, body) = key().open(1, &mut again).unwrap();
            assert_eq!((h.ack, h.sack, h.xmit, h.echo, body), (11, 1, 5, 3, &content[..]));
        }
    }

    #[test]
    fn the_short_tag_is_siphash_of_the_datagram_under_the_second_derived_half() {
        // The construction of the module's note, written out from its parts: a datagram sealed
        // by the route carries this tag, so the note says what the code does.
        let secret = Secret::from_hex("00112233445566778899aabbccddeeff").unwrap();
        let mut d = Vec::new();
        Head { kind: ACK, flags: 0, src: 5, dst: 2, seq: 0, ack: 3, sack: 0, xmit: 0, echo: 1 }.put(&mut d);
        d.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
        Key::new(&secret).seal(&mut d);
        let n = d.len() - MAC;
        let derived = secret.derive_key("billboard-udp-6 datagram");
        let half = |at: usize| u64::from_le_bytes(derived[at..at + 8].try_into().unwrap());
        assert_eq!(d[n..], super::super::siphash::siphash128(half(16), half(24), &d[..n]));
        assert_eq!(d[HEAD..n], [1, 0, 0, 0, 2, 0, 0, 0], "in clear");
    }

    #[test]
    fn ranges_round_trip_and_bad_lists_are_refused() {
        let ranges = [(12, 14), (20, 21), (100, 400)];
        let mut body = Vec::new();
        put_ranges(10, &ranges, &mut body);
        assert_eq!(body.len(), 3 * RANGE);
        let mut got = Vec::new();
        get_ranges(10, &body, &mut got).unwrap();
        assert_eq!(got, ranges);
        let bad = |list: &[(u32, u32)]| {
            let b: Vec<u8> = list.iter().flat_map(|&(o, l)| [o.to_le_bytes(), l.to_le_bytes()].concat()).collect();
            get_ranges(10, &b, &mut Vec::new()).is_err()
        };
        assert!(bad(&[(0, 1)]), "the first range starts at the gap the cumulative ack names");
        assert!(bad(&[(2, 0)]), "empty");
        assert!(bad(&[(2, 3), (5, 1)]), "touching: one range");
        assert!(bad(&[(5, 3), (2, 1)]), "descending");
        assert!(get_ranges(10, &[0; 7], &mut got).is_err());
        assert!(get_ranges(10, &vec![1; RANGE * (MAX_RANGES + 1)], &mut got).is_err());
        assert!(!bad(&[(u32::MAX, u32::MAX)]), "far but well-formed: the sender bounds it by what it sent");
    }
}

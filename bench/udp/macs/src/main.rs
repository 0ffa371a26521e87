//! What authenticating one datagram of the UDP route costs, per candidate and datagram size
//! (56-byte head + body, before the 16-byte tag): seal on the sender, check on the receiver, ns each, median of 7 runs
//! of 200,000. Run pinned and under real-time priority on a busy machine:
//! `cargo run --release --manifest-path bench/udp/macs/Cargo.toml` (or `chrt -f 10 taskset -c 1
//! bench/udp/macs/target/release/udp-macs`).
//!
//! - ring AES-128-GCM, body encrypted, head as associated data: what `transport/udp/wire.rs`
//!   does (ring's VAES/VPCLMULQDQ code on this CPU).
//! - ring GMAC: AES-128-GCM over an empty plaintext, the whole datagram as associated data.
//! - RustCrypto `aes-gcm`: the same algorithm (same bytes) in another implementation.
//! - ring HMAC-SHA256 (the word), keyed BLAKE3 (layout 2 of the wire).
//! - AES + POLYVAL: a Wegman-Carter MAC built from parts (POLYVAL of the datagram, XORed with
//!   AES of a per-datagram nonce block).
//! - SipHash-2-4 with its 128-bit output (`transport/udp/siphash.rs`), over the whole datagram.
use std::hint::black_box;
use std::time::Instant;

use aes::cipher::{BlockEncrypt, KeyInit};
use aes_gcm::aead::AeadInPlace;
use polyval::universal_hash::UniversalHash;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::hmac;

#[path = "../../../../crates/billboard/src/transport/udp/siphash.rs"]
mod siphash;

const HEAD: usize = 56;

fn median_ns(n: usize, mut f: impl FnMut(u64)) -> f64 {
    let mut runs: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for i in 0..n {
                f(i as u64);
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[3]
}

fn nonce(i: u64) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[4..].copy_from_slice(&i.to_le_bytes());
    b
}

fn main() {
    let (key16, key32) = ([7u8; 16], [9u8; 32]);
    let gcm = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key16).unwrap());
    let rc = aes_gcm::Aes128Gcm::new(&key16.into());
    let hk = hmac::Key::new(hmac::HMAC_SHA256, &key32);
    let aes = aes::Aes128::new(&key16.into());
    let mut h = aes::Block::default();
    aes.encrypt_block(&mut h);
    let pv = polyval::Polyval::new(&h);
    let n = 200_000;
    println!("{:<30} {:>6} {:>9} {:>9}", "candidate", "bytes", "seal ns", "check ns");
    // Bodies of the route's messages of 0, 8, 64 and 512 bytes (a FIRST fragment carries the
    // record's 28-byte header and length), and of a full 1472-byte datagram.
    for body in [28usize, 36, 92, 540, 1400] {
        let total = HEAD + body;
        let mut d = vec![3u8; total];
        let row = |name: &str, seal: f64, check: f64| println!("{name:<30} {total:>6} {seal:>9.1} {check:>9.1}");

        let seal = median_ns(n, |i| {
            let (hd, bd) = d.split_at_mut(HEAD);
            let nc = Nonce::assume_unique_for_key(nonce(i));
            let _ = black_box(gcm.seal_in_place_separate_tag(nc, Aad::from(&*hd), bd).unwrap());
        });
        let mut sealed = d.clone();
        let tag = {
            let (hd, bd) = sealed.split_at_mut(HEAD);
            gcm.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce(5)), Aad::from(&*hd), bd).unwrap()
        };
        let mut c = sealed.clone();
        let open = median_ns(n, |_| {
            c.copy_from_slice(&sealed);
            let (hd, bd) = c.split_at_mut(HEAD);
            let nc = Nonce::assume_unique_for_key(nonce(5));
            assert!(gcm.open_in_place_separate_tag(nc, Aad::from(&*hd), tag, bd, 0..).is_ok());
        });
        row("ring AES-GCM (the route's)", seal, open);

        let gmac = median_ns(n, |i| {
            let nc = Nonce::assume_unique_for_key(nonce(i));
            let _ = black_box(gcm.seal_in_place_separate_tag(nc, Aad::from(&d[..]), &mut []).unwrap());
        });
        row("ring GMAC (all associated)", gmac, gmac);

        let seal = median_ns(n, |i| {
            let (hd, bd) = d.split_at_mut(HEAD);
            black_box(rc.encrypt_in_place_detached(&nonce(i).into(), hd, bd).unwrap());
        });
        row("RustCrypto aes-gcm", seal, seal);

        let mac = median_ns(n, |_| {
            black_box(hmac::sign(&hk, &d));
        });
        row("ring HMAC-SHA256", mac, mac);

        let mac = median_ns(n, |_| {
            black_box(blake3::keyed_hash(&key32, &d));
        });
        row("BLAKE3 keyed", mac, mac);

        let mac = median_ns(n, |i| {
            let mut p = pv.clone();
            p.update_padded(&d);
            let mut lengths = polyval::Block::default();
            lengths[..8].copy_from_slice(&((total as u64) * 8).to_le_bytes());
            p.update(&[lengths]);
            let mut mask = aes::Block::default();
            mask[..12].copy_from_slice(&nonce(i));
            mask[15] = 1;
            aes.encrypt_block(&mut mask);
            let mut t = p.finalize();
            t.iter_mut().zip(mask.iter()).for_each(|(t, m)| *t ^= m);
            black_box(t);
        });
        row("AES + POLYVAL (Wegman-Carter)", mac, mac);

        let mac = median_ns(n, |_| {
            black_box(siphash::siphash128(black_box(0x0123), black_box(0x4567), &d));
        });
        row("SipHash-2-4-128 (the route's)", mac, mac);
    }
}

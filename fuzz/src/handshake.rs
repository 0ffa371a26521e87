//! `handshake_acceptor` and `handshake_initiator`: the connection handshake never panics, and never
//! reports `Done` unless the bytes it was fed hold the MAC an honest peer computed with the secret.
//!
//! The nonces are fresh random bytes, so a fuzz input cannot contain a valid MAC by itself: every
//! mode but the relay must end without `Done`. In the relay mode an honest peer runs on the other
//! side and the input tampers with what passes between them; the side under test must finish
//! exactly when nothing was altered.
//!
//! Input: a mode byte, chunk sizes (see [`Chunker`]), then per mode:
//! - 0: raw bytes;
//! - 1: a well-formed first message (ranks and nonce from the input; for the initiator also the
//!   MAC) followed by raw bytes;
//! - 2: relay: a rank for the initiator, the tampering of each message (see [`tamper`]), then bytes
//!   that follow the handshake on the wire (the first frames), which must not be consumed.

use billboard::transport::tcp::handshake::{Acceptor, HandshakeError, Initiator, Secret, Step, VERSION};

use crate::input::{tamper, Chunker, Input};

/// Both sides' fixed job secret.
pub fn secret() -> Secret {
    Secret::from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f").expect("valid hex")
}

/// The job the acceptor serves: rank [`ACCEPTOR`] of [`NRANKS`].
pub const NRANKS: u32 = 4;
pub const ACCEPTOR: u32 = 1;
const INITIATOR: u32 = 0;

/// The handshake's first message, with each field from `input`.
fn forged(input: &mut Input<'_>, with_mac: bool) -> Vec<u8> {
    let mut m = b"BBhs".to_vec();
    m.extend_from_slice(&VERSION.to_le_bytes());
    for _ in 0..if with_mac { 1 } else { 2 } {
        m.extend_from_slice(&(u32::from(input.byte() % 4)).to_le_bytes());
    }
    let nonce_and_mac = if with_mac { 64 } else { 32 };
    m.extend((0..nonce_and_mac).map(|_| input.byte()));
    m
}

/// What feeding a byte stream to one side came to.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Done, after taking this many bytes of the stream in all.
    Done {
        peer: u32,
        taken: usize,
    },
    Failed(HandshakeError),
    /// Still waiting when the stream ran out.
    Waiting,
}

/// Feeds `stream` in chunks to `on_bytes` until it finishes or fails; then checks that a finished
/// side refuses more bytes.
fn feed(
    stream: &[u8],
    chunker: &mut Chunker,
    mut on_bytes: impl FnMut(&[u8]) -> Result<Step, HandshakeError>,
) -> Outcome {
    let mut offset = 0;
    let mut outcome = Outcome::Waiting;
    for chunk in chunker.split(stream) {
        match on_bytes(chunk) {
            Ok(Step::Wait) => {}
            Ok(Step::Done { peer, consumed }) => {
                assert!(consumed <= chunk.len(), "consumed {consumed} of a {}-byte chunk", chunk.len());
                outcome = Outcome::Done { peer, taken: offset + consumed };
                break;
            }
            Err(e) => {
                assert_ne!(e, HandshakeError::Finished, "refused as finished before finishing");
                outcome = Outcome::Failed(e);
                break;
            }
        }
        offset += chunk.len();
    }
    if outcome != Outcome::Waiting {
        assert_eq!(on_bytes(b"x"), Err(HandshakeError::Finished));
    }
    outcome
}

pub fn check_acceptor(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte() % 3;
    let mut chunker = Chunker::read(&mut input);
    let secret = secret();
    let mut acceptor = Acceptor::new(&secret, ACCEPTOR, NRANKS).expect("getrandom");
    let stream = match mode {
        0 => input.rest().to_vec(),
        1 => [forged(&mut input, false), input.rest().to_vec()].concat(),
        _ => return relay_to_acceptor(&mut input, &mut chunker, &mut acceptor),
    };
    let outcome = feed(&stream, &mut chunker, |b| acceptor.on_bytes(b));
    assert!(!matches!(outcome, Outcome::Done { .. }), "acceptor accepted bytes without a valid MAC: {outcome:?}");
    // A CHALLENGE goes out only for a well-formed HELLO addressed to this rank.
    let challenge = acceptor.take_transmit();
    assert!(challenge.is_empty() || (challenge.len() == 76 && stream[12..16] == ACCEPTOR.to_le_bytes()));
}

/// An honest initiator talks to the acceptor through a tampering relay.
fn relay_to_acceptor(input: &mut Input<'_>, chunker: &mut Chunker, acceptor: &mut Acceptor) {
    let secret = secret();
    let me = u32::from(input.byte() % NRANKS as u8);
    let mut initiator = Initiator::new(&secret, me, ACCEPTOR).expect("getrandom");
    let (hello, hello_changed) = tamper(&initiator.take_transmit(), input);
    let (proof_tampering, trailing) = (input.take(7), input.rest());
    let outcome = feed(&hello, chunker, |b| acceptor.on_bytes(b));
    let valid_rank = me != ACCEPTOR;
    if outcome != Outcome::Waiting {
        assert!(hello_changed || !valid_rank, "an honest HELLO was refused: {outcome:?}");
        assert!(!matches!(outcome, Outcome::Done { .. }));
        return;
    }
    let challenge = acceptor.take_transmit();
    let i_outcome = feed(&challenge, &mut Chunker::read(&mut Input::new(&[])), |b| initiator.on_bytes(b));
    let proof = initiator.take_transmit();
    if !matches!(i_outcome, Outcome::Done { .. }) {
        // The initiator found the acceptor's MAC wrong: only if its HELLO was altered.
        assert!(hello_changed, "the initiator refused an honest acceptor: {i_outcome:?}");
        let outcome = feed(trailing, chunker, |b| acceptor.on_bytes(b));
        assert!(!matches!(outcome, Outcome::Done { .. }), "acceptor accepted without a proof: {outcome:?}");
        return;
    }
    let (proof, proof_changed) = tamper(&proof, &mut Input::new(proof_tampering));
    let stream = [proof.as_slice(), trailing].concat();
    let outcome = feed(&stream, chunker, |b| acceptor.on_bytes(b));
    if hello_changed || proof_changed {
        assert!(!matches!(outcome, Outcome::Done { .. }), "acceptor accepted a tampered exchange: {outcome:?}");
    } else {
        // Exactly the proof is consumed; what follows it is the frame stream's.
        assert_eq!(outcome, Outcome::Done { peer: me, taken: proof.len() });
    }
}

pub fn check_initiator(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte() % 3;
    let mut chunker = Chunker::read(&mut input);
    let secret = secret();
    let mut initiator = Initiator::new(&secret, INITIATOR, ACCEPTOR).expect("getrandom");
    let hello = initiator.take_transmit();
    assert_eq!(hello.len(), 48);
    let stream = match mode {
        0 => input.rest().to_vec(),
        1 => [forged(&mut input, true), input.rest().to_vec()].concat(),
        _ => return relay_to_initiator(&mut input, &mut chunker, &mut initiator, &hello),
    };
    let outcome = feed(&stream, &mut chunker, |b| initiator.on_bytes(b));
    assert!(!matches!(outcome, Outcome::Done { .. }), "initiator accepted bytes without a valid MAC: {outcome:?}");
    assert!(initiator.take_transmit().is_empty(), "initiator sent a proof to a stranger");
}

/// An honest acceptor answers the initiator through a tampering relay.
fn relay_to_initiator(input: &mut Input<'_>, chunker: &mut Chunker, initiator: &mut Initiator, hello: &[u8]) {
    let secret = secret();
    let mut acceptor = Acceptor::new(&secret, ACCEPTOR, NRANKS).expect("getrandom");
    let (hello, hello_changed) = tamper(hello, input);
    let (challenge_tampering, trailing) = (input.take(7), input.rest());
    let a_outcome = feed(&hello, &mut Chunker::read(&mut Input::new(&[])), |b| acceptor.on_bytes(b));
    let challenge = acceptor.take_transmit();
    let (challenge, challenge_changed) = tamper(&challenge, &mut Input::new(challenge_tampering));
    if a_outcome != Outcome::Waiting {
        assert!(hello_changed, "an honest HELLO was refused: {a_outcome:?}");
    }
    let stream = [challenge.as_slice(), trailing].concat();
    let outcome = feed(&stream, chunker, |b| initiator.on_bytes(b));
    let proof = initiator.take_transmit();
    if hello_changed || challenge_changed || a_outcome != Outcome::Waiting {
        assert!(!matches!(outcome, Outcome::Done { .. }), "initiator accepted a tampered exchange: {outcome:?}");
        assert!(proof.is_empty(), "initiator sent a proof after a tampered exchange");
    } else {
        assert_eq!(outcome, Outcome::Done { peer: ACCEPTOR, taken: challenge.len() });
        // And the honest acceptor takes the proof.
        assert_eq!(acceptor.on_bytes(&proof), Ok(Step::Done { peer: INITIATOR, consumed: proof.len() }));
    }
}

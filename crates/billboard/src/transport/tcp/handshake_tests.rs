use super::*;
use proptest::prelude::*;

fn secret() -> Secret {
    Secret::from_hex("00112233445566778899aabbccddeeff0123456789abcdef").unwrap()
}

fn other_secret() -> Secret {
    Secret::generate().unwrap()
}

/// What one side sent during a run, for replay tests.
#[derive(Default)]
struct Transcript {
    hello: Vec<u8>,
    challenge: Vec<u8>,
    proof: Vec<u8>,
}

/// Runs a handshake, delivering each message in pieces of `piece` bytes.
fn run(
    i: &mut Initiator,
    a: &mut Acceptor,
    piece: usize,
) -> (Result<Step, HandshakeError>, Result<Step, HandshakeError>, Transcript) {
    let mut t = Transcript { hello: i.take_transmit(), ..Transcript::default() };
    let feed = |on: &mut dyn FnMut(&[u8]) -> Result<Step, HandshakeError>, bytes: &[u8]| {
        let mut last = Ok(Step::Wait);
        for p in bytes.chunks(piece) {
            last = on(p);
            if !matches!(last, Ok(Step::Wait)) {
                break;
            }
        }
        last
    };
    let a_step = feed(&mut |b| a.on_bytes(b), &t.hello);
    assert_eq!(a_step, Ok(Step::Wait), "the acceptor cannot finish before the proof");
    t.challenge = a.take_transmit();
    let i_step = feed(&mut |b| i.on_bytes(b), &t.challenge);
    if i_step.is_err() {
        return (i_step, a_step, t);
    }
    t.proof = i.take_transmit();
    let a_step = feed(&mut |b| a.on_bytes(b), &t.proof);
    (i_step, a_step, t)
}

#[test]
fn both_sides_authenticate_in_either_direction_and_any_chunking() {
    for (me, peer) in [(0, 1), (1, 0), (7, 3)] {
        for piece in [1, 3, 32, 1000] {
            let mut i = Initiator::new(&secret(), me, peer).unwrap();
            let mut a = Acceptor::new(&secret(), peer, 8).unwrap();
            let (i_step, a_step, t) = run(&mut i, &mut a, piece);
            assert_eq!((t.hello.len(), t.challenge.len(), t.proof.len()), (HELLO_BYTES, CHALLENGE_BYTES, PROOF_BYTES));
            let last = |n: usize| if piece >= n { n } else { (n - 1) % piece + 1 };
            assert_eq!(i_step, Ok(Step::Done { peer, consumed: last(CHALLENGE_BYTES) }));
            assert_eq!(a_step, Ok(Step::Done { peer: me, consumed: last(PROOF_BYTES) }));
            assert_eq!(i.on_bytes(b"x"), Err(HandshakeError::Finished));
            assert_eq!(a.on_bytes(b"x"), Err(HandshakeError::Finished));
        }
    }
}

#[test]
fn truncated_input_waits_and_frame_bytes_after_the_proof_are_left_over() {
    let mut i = Initiator::new(&secret(), 0, 1).unwrap();
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    let hello = i.take_transmit();
    for b in hello.chunks(1) {
        assert_eq!(a.on_bytes(b), Ok(Step::Wait));
    }
    assert_eq!(a.on_bytes(&[]), Ok(Step::Wait));
    let challenge = a.take_transmit();
    assert_eq!(i.on_bytes(&challenge[..CHALLENGE_BYTES - 1]), Ok(Step::Wait));
    assert!(i.take_transmit().is_empty(), "no proof before the acceptor is verified");
    assert_eq!(i.on_bytes(&challenge[CHALLENGE_BYTES - 1..]), Ok(Step::Done { peer: 1, consumed: 1 }));
    let mut proof_and_frames = i.take_transmit();
    proof_and_frames.extend_from_slice(&[0xB1; 100]);
    assert_eq!(a.on_bytes(&proof_and_frames), Ok(Step::Done { peer: 0, consumed: PROOF_BYTES }));
}

#[test]
fn a_wrong_secret_is_rejected_on_either_side() {
    // A stranger accepting: the initiator refuses its challenge and sends no proof.
    let mut i = Initiator::new(&secret(), 0, 1).unwrap();
    let mut a = Acceptor::new(&other_secret(), 1, 2).unwrap();
    let (i_step, _, _) = run(&mut i, &mut a, 1000);
    assert_eq!(i_step, Err(HandshakeError::BadMac));
    assert!(i.take_transmit().is_empty());

    // A stranger connecting, who ignores the acceptor's MAC and answers with its own.
    let mut i = Initiator::new(&other_secret(), 0, 1).unwrap();
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    a.on_bytes(&i.take_transmit()).unwrap();
    let challenge = a.take_transmit();
    let forged = other_secret().mac(INITIATOR_LABEL, 0, 1, &i.nonce, &challenge[12..44]);
    assert_eq!(a.on_bytes(forged.as_ref()), Err(HandshakeError::BadMac));
    assert_eq!(a.on_bytes(&[0; 32]), Err(HandshakeError::Finished), "a failed acceptor stays failed");
}

#[test]
fn garbage_is_rejected_on_its_first_wrong_byte() {
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    assert_eq!(a.on_bytes(b"G"), Err(HandshakeError::BadMagic));
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    assert_eq!(a.on_bytes(b"BBh"), Ok(Step::Wait));
    assert_eq!(a.on_bytes(b"x"), Err(HandshakeError::BadMagic));
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    // Version 1 (56-byte frames) and any other version are refused before a single frame.
    assert_eq!(a.on_bytes(b"BBhs\x01\0\0\0"), Err(HandshakeError::UnsupportedVersion(1)));
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    assert_eq!(a.on_bytes(b"BBhs\x03\0\0\0"), Err(HandshakeError::UnsupportedVersion(3)));
    let mut i = Initiator::new(&secret(), 0, 1).unwrap();
    assert_eq!(i.on_bytes(b"SSH-2.0-OpenSSH_9.2\r\n"), Err(HandshakeError::BadMagic));
    assert!(a.take_transmit().is_empty(), "nothing is sent to a stranger");
}

#[test]
fn a_replayed_exchange_is_rejected() {
    let mut i = Initiator::new(&secret(), 0, 1).unwrap();
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    let (i_step, a_step, old) = run(&mut i, &mut a, 1000);
    assert!(matches!((i_step, a_step), (Ok(Step::Done { .. }), Ok(Step::Done { .. }))));

    // Replaying the initiator's side to a new acceptor: its fresh nonce makes the old proof wrong.
    let mut a = Acceptor::new(&secret(), 1, 2).unwrap();
    assert_eq!(a.on_bytes(&old.hello), Ok(Step::Wait));
    assert_ne!(a.take_transmit()[12..44], old.challenge[12..44], "a fresh nonce");
    assert_eq!(a.on_bytes(&old.proof), Err(HandshakeError::BadMac));

    // Replaying the acceptor's side to a new initiator: its fresh nonce makes the old MAC wrong.
    let mut i = Initiator::new(&secret(), 0, 1).unwrap();
    assert_ne!(i.take_transmit()[16..48], old.hello[16..48], "a fresh nonce");
    assert_eq!(i.on_bytes(&old.challenge), Err(HandshakeError::BadMac));
    assert!(i.take_transmit().is_empty());
}

#[test]
fn identities_are_checked() {
    // HELLO meant for rank 2 reaching rank 1.
    let mut i = Initiator::new(&secret(), 0, 2).unwrap();
    let mut a = Acceptor::new(&secret(), 1, 4).unwrap();
    assert_eq!(a.on_bytes(&i.take_transmit()), Err(HandshakeError::WrongPeer { expected: 1, got: 2 }));
    // A rank outside the job, or the acceptor's own.
    for rank in [4, 1] {
        let mut i = Initiator::new(&secret(), rank, 1).unwrap();
        let mut a = Acceptor::new(&secret(), 1, 4).unwrap();
        assert_eq!(a.on_bytes(&i.take_transmit()), Err(HandshakeError::UnknownPeer { rank, nranks: 4 }));
    }
    // A challenge from rank 1 offered to an initiator that wanted rank 2.
    let mut i1 = Initiator::new(&secret(), 0, 1).unwrap();
    let mut a = Acceptor::new(&secret(), 1, 4).unwrap();
    a.on_bytes(&i1.take_transmit()).unwrap();
    let mut i2 = Initiator::new(&secret(), 0, 2).unwrap();
    assert_eq!(i2.on_bytes(&a.take_transmit()), Err(HandshakeError::WrongPeer { expected: 2, got: 1 }));
}

#[test]
fn secrets_parse_print_and_stay_hidden() {
    let s = Secret::generate().unwrap();
    assert_eq!(Secret::from_hex(&s.to_hex()), Ok(s.clone()));
    assert_ne!(s, Secret::generate().unwrap());
    assert_eq!(format!("{s:?}"), "Secret(<32 bytes>)");
    assert!(matches!(Secret::from_hex("abc"), Err(HandshakeError::BadSecret(_))));
    assert!(matches!(Secret::from_hex(&"zz".repeat(16)), Err(HandshakeError::BadSecret(_))));
    assert!(matches!(Secret::from_hex(&"ab".repeat(15)), Err(HandshakeError::BadSecret(_))));
    assert!(matches!(Secret::from_hex("é0"), Err(HandshakeError::BadSecret(_))));
    std::env::set_var(SECRET_ENV, s.to_hex());
    assert_eq!(Secret::from_env(), Ok(s));
    std::env::remove_var(SECRET_ENV);
    assert!(matches!(Secret::from_env(), Err(HandshakeError::BadSecret(_))));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_authenticate(bytes in proptest::collection::vec(any::<u8>(), 0..200), cut in 0usize..200) {
        let cut = cut.min(bytes.len());
        let mut a = Acceptor::new(&secret(), 1, 4).unwrap();
        let mut i = Initiator::new(&secret(), 0, 1).unwrap();
        for part in [&bytes[..cut], &bytes[cut..]] {
            prop_assert!(!matches!(a.on_bytes(part), Ok(Step::Done { .. })), "authenticated garbage");
            prop_assert!(!matches!(i.on_bytes(part), Ok(Step::Done { .. })), "authenticated garbage");
        }
    }

    #[test]
    fn a_well_formed_hello_with_a_random_proof_is_rejected(proof: [u8; 32], rank in 0u32..4) {
        let mut a = Acceptor::new(&secret(), 1, 4).unwrap();
        let mut hello = Initiator::new(&secret(), rank, 1).unwrap().take_transmit();
        hello.extend_from_slice(&proof);
        let want = if rank == 1 { HandshakeError::UnknownPeer { rank, nranks: 4 } } else { HandshakeError::BadMac };
        prop_assert_eq!(a.on_bytes(&hello), Err(want));
    }
}

//! Tests of the relay protocol (`relay.rs`).

use super::*;

fn setup() -> Setup {
    Setup {
        jobid: "12x34".into(),
        secret: "00ff".repeat(16),
        host: "node-2".into(),
        node_id: 1,
        nnodes: 2,
        size: 4,
        env: vec![(b"PATH".to_vec(), b"/bin".to_vec()), (b"EMPTY".to_vec(), vec![])],
        parts: vec![
            Part {
                ranks: vec![1],
                program: b"/bin/prog".to_vec(),
                args: vec![b"-x".to_vec(), vec![0xff, b' ']],
                cwd: b"/home/u".to_vec(),
                env: vec![],
            },
            Part {
                ranks: vec![2, 3],
                program: b"worker".to_vec(),
                args: vec![],
                cwd: b"/tmp".to_vec(),
                env: vec![(b"ROLE".to_vec(), b"w".to_vec())],
            },
        ],
    }
}

fn orders() -> Vec<Order> {
    vec![
        Order::Setup(Box::new(setup())),
        Order::Spawn { first: 4, local_base: 1, local_size: 3, setup: Box::new(setup()) },
        Order::PmiReply { rank: 3, line: "cmd=barrier_out rc=0\n".into() },
        Order::Stdin(b"input\n".to_vec()),
        Order::Stdin(vec![]),
        Order::StdinEnd,
        Order::Signal(15),
        Order::Stop,
        Order::Check { id: 7, program: b"./child".to_vec(), path: b"/usr/bin:/bin".to_vec(), wdir: Vec::new() },
        Order::Kill { ranks: vec![5, 6] },
        Order::Kill { ranks: vec![] },
    ]
}

fn reports() -> Vec<Report> {
    vec![
        Report::Started { rank: 2, pid: 4242 },
        Report::Pmi { rank: 2, line: "cmd=barrier_in\n".into() },
        Report::PmiBroken { rank: 3 },
        Report::Output { rank: 3, stream: Stream::Stdout, data: b"hello\n".to_vec() },
        Report::Output { rank: 3, stream: Stream::Stderr, data: vec![0, 1, 2] },
        Report::OutputEnd { rank: 2, stream: Stream::Stderr },
        Report::Exited { rank: 2, exit: Exit::Code(3) },
        Report::Exited { rank: 3, exit: Exit::Signal(9) },
        Report::StdinTaken,
        Report::Failed { code: 127, message: "cannot run 'prog': not found in PATH".into() },
        Report::Checked { id: 7, error: String::new() },
        Report::Checked { id: 8, error: "cannot run './child': no such file".into() },
    ]
}

fn stream_of<M: Message>(msgs: &[M]) -> Vec<u8> {
    let mut bytes = Vec::new();
    start_stream(&mut bytes);
    for m in msgs {
        encode(m, &mut bytes);
    }
    bytes
}

fn decode_in_pieces<M: Message>(bytes: &[u8], piece: usize) -> Vec<M> {
    let mut d = Decoder::<M>::default();
    let mut out = Vec::new();
    for chunk in bytes.chunks(piece) {
        d.push(chunk);
        while let Some(m) = d.next().unwrap() {
            out.push(m);
        }
    }
    out
}

#[test]
fn every_message_round_trips_whatever_the_read_sizes() {
    let (o, r) = (orders(), reports());
    let (ob, rb) = (stream_of(&o), stream_of(&r));
    for piece in [1, 2, 3, 7, 64, 4096] {
        assert_eq!(decode_in_pieces::<Order>(&ob, piece), o, "pieces of {piece}");
        assert_eq!(decode_in_pieces::<Report>(&rb, piece), r, "pieces of {piece}");
    }
}

#[test]
fn the_frame_layout_is_as_documented() {
    let mut bytes = Vec::new();
    encode(&Report::Exited { rank: 3, exit: Exit::Signal(9) }, &mut bytes);
    assert_eq!(bytes, [10, 0, 0, 0, 6, 3, 0, 0, 0, 1, 9, 0, 0, 0]);
    bytes.clear();
    encode(&Order::PmiReply { rank: 1, line: "ab".into() }, &mut bytes);
    assert_eq!(bytes, [11, 0, 0, 0, 2, 1, 0, 0, 0, 2, 0, 0, 0, b'a', b'b']);
}

#[test]
fn a_stream_that_is_not_ours_is_refused_at_the_first_byte() {
    let mut d = Decoder::<Report>::default();
    d.push(b"Welcome to host");
    assert!(matches!(d.next(), Err(DecodeError::BadMagic(got)) if got.starts_with(b"Welcome")));
    let mut d = Decoder::<Report>::default();
    d.push(b"BBre");
    assert_eq!(d.next(), Ok(None), "a partial magic waits for more");
    assert!(!d.greeted());
    d.push(b"lay1");
    assert_eq!(d.next(), Ok(None));
    assert!(d.greeted());
}

#[test]
fn bad_frames_are_errors_not_panics() {
    let with = |frame: &[u8]| {
        let mut d = Decoder::<Report>::default();
        d.push(MAGIC);
        d.push(frame);
        d.next()
    };
    assert_eq!(with(&[0, 0, 0, 0]), Err(DecodeError::TooLong(0)));
    assert_eq!(with(&[0, 0, 0, 0x10]), Err(DecodeError::TooLong(0x1000_0000)));
    assert_eq!(with(&[1, 0, 0, 0, 99]), Err(DecodeError::UnknownKind(99)));
    assert!(matches!(with(&[2, 0, 0, 0, 1, 0]), Err(DecodeError::Malformed(1, _))), "truncated field");
    assert!(matches!(with(&[2, 0, 0, 0, 7, 0]), Err(DecodeError::Malformed(7, _))), "trailing byte");
    let bad_stream = [10, 0, 0, 0, 4, 0, 0, 0, 0, 3, 0, 0, 0, 0];
    assert!(matches!(with(&bad_stream), Err(DecodeError::Malformed(4, _))));
    // A list count far beyond the frame fails on the missing bytes, without reserving them.
    let mut lie = vec![0; 4];
    lie.push(1);
    for _ in 0..3 {
        lie.extend_from_slice(&0u32.to_le_bytes());
    }
    lie.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]);
    let len = (lie.len() - 4) as u32;
    lie[..4].copy_from_slice(&len.to_le_bytes());
    let mut d = Decoder::<Order>::default();
    d.push(MAGIC);
    d.push(&lie);
    assert!(matches!(d.next(), Err(DecodeError::Malformed(1, _))));
}

#[test]
fn random_bytes_never_panic_the_decoder() {
    // A small xorshift: deterministic, no dependency.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        let mut bytes = MAGIC.to_vec();
        let n = (x % 40) as usize;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push(if x.is_multiple_of(3) { (x >> 8) as u8 % 12 } else { (x >> 16) as u8 & 3 });
        }
        let mut d = Decoder::<Report>::default();
        d.push(&bytes);
        while let Ok(Some(_)) = d.next() {}
        let mut d = Decoder::<Order>::default();
        d.push(&bytes);
        while let Ok(Some(_)) = d.next() {}
    }
}

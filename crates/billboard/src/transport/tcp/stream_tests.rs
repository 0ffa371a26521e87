use super::*;
use proptest::prelude::*;

type Spec = (FrameKind, u64, u64, Header, Vec<u8>);

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::sample::select(FrameKind::ALL.to_vec()),
        any::<(u64, u64, u32, i32)>(),
        prop_oneof![4 => 0usize..200, 2 => 0usize..5000, 1 => 60_000usize..140_000],
        any::<u8>(),
    )
        .prop_map(|(kind, (transfer, arg, context, tag), len, fill)| {
            let len = if kind.carries_payload() { len } else { 0 };
            let payload = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
            (kind, transfer, arg, Header { kind: 3, context, source: 1, tag, aux: arg }, payload)
        })
}

/// Writes the frames as a socket would take them: `writev` of at most `step` bytes at a time.
fn write_all(frames: &[Spec], step: usize) -> Vec<u8> {
    let mut w = FrameWriter::new();
    let mut wire = Vec::new();
    for (kind, transfer, arg, header, payload) in frames {
        let mut out = w.frame(*kind, *transfer, *arg, header, payload.len()).unwrap();
        while !out.is_done() {
            let mut budget = step;
            let mut took = 0;
            for s in out.io_slices(payload) {
                let n = s.len().min(budget);
                wire.extend_from_slice(&s[..n]);
                budget -= n;
                took += n;
            }
            out.advance(took);
        }
    }
    wire
}

fn check(got: &Frame<'_>, want: &Spec, seq: u64) {
    let (kind, transfer, arg, header, payload) = want;
    assert_eq!(
        got.header,
        FrameHeader { kind: *kind, len: payload.len() as u32, seq, transfer: *transfer, arg: *arg, header: *header }
    );
    assert_eq!(got.payload, &payload[..]);
}

proptest! {
    #[test]
    fn random_chunkings_round_trip(frames in proptest::collection::vec(spec(), 0..40),
                                   cuts in proptest::collection::vec(1usize..3000, 1..20),
                                   step in 1usize..100_000, through_unfilled: bool) {
        // A close frame ends the stream: keep one only in last place.
        let mut frames = frames;
        let last = frames.len().saturating_sub(1);
        for (k, f) in frames.iter_mut().enumerate() {
            if f.0 == FrameKind::Close && k != last {
                f.0 = FrameKind::Credit;
            }
        }
        let wire = write_all(&frames, step);
        let mut r = FrameReader::new();
        let (mut pos, mut k, mut n) = (0, 0, 0);
        while pos < wire.len() {
            let chunk = &wire[pos..(pos + cuts[k % cuts.len()] * (1 + k % 50)).min(wire.len())];
            k += 1;
            let took = if through_unfilled {
                let space = r.unfilled();
                let m = space.len().min(chunk.len());
                space[..m].copy_from_slice(&chunk[..m]);
                r.filled(m);
                m
            } else {
                r.feed(chunk)
            };
            pos += took;
            while let Some(f) = r.next_frame().unwrap() {
                check(&f, &frames[n], n as u64);
                n += 1;
            }
            prop_assert!(r.buf.len() <= MAX_READ_BUFFER);
        }
        prop_assert_eq!(n, frames.len());
        prop_assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..10)) {
        let mut r = FrameReader::new();
        for c in &chunks {
            r.feed(c);
            while let Ok(Some(_)) = r.next_frame() {}
        }
    }
}

#[test]
fn several_frames_in_one_chunk_and_a_frame_split_everywhere() {
    let frames: Vec<Spec> = (0..3u8)
        .map(|i| (FrameKind::Eager, 0, 0, Header { tag: i as i32, ..Header::default() }, vec![i; 10]))
        .collect();
    let wire = write_all(&frames, usize::MAX);
    for cut in 0..=wire.len() {
        let mut r = FrameReader::new();
        let mut n = 0;
        for part in [&wire[..cut], &wire[cut..]] {
            assert_eq!(r.feed(part), part.len());
            while let Some(f) = r.next_frame().unwrap() {
                check(&f, &frames[n], n as u64);
                n += 1;
            }
        }
        assert_eq!(n, 3);
    }
}

#[test]
fn an_oversized_frame_is_rejected_from_its_header_alone() {
    let mut h =
        encode(&FrameHeader { kind: FrameKind::Eager, len: 0, seq: 0, transfer: 0, arg: 0, header: Header::default() });
    h[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut r = FrameReader::new();
    r.feed(&h);
    let e = StreamError::Wire(WireError::PayloadTooLarge { len: u32::MAX, max: MAX_FRAME_PAYLOAD });
    assert_eq!(r.next_frame(), Err(e));
    assert_eq!(r.next_frame(), Err(e), "errors are sticky");
    assert!(r.buf.len() <= INITIAL_READ_BUFFER, "nothing was allocated for the announced payload");
}

#[test]
fn garbage_out_of_sequence_and_data_after_close_are_errors() {
    let mut r = FrameReader::new();
    r.feed(b"GET / HTTP/1.1\r\nHost: rank0\r\n\r\nGET / HTTP/1.1\r\nHost: rank0\r\n\r\n");
    assert_eq!(r.next_frame(), Err(StreamError::Wire(WireError::BadMagic { byte: b'G' })));

    let h = Header::default();
    let mut w = FrameWriter::new();
    let skipped = w.frame(FrameKind::Credit, 0, 1, &h, 0).unwrap();
    let _ = skipped;
    let second = w.frame(FrameKind::Credit, 0, 1, &h, 0).unwrap();
    let mut r = FrameReader::new();
    r.feed(second.header_bytes());
    assert_eq!(r.next_frame(), Err(StreamError::OutOfSequence { expected: 0, got: 1 }));

    let mut w = FrameWriter::new();
    let mut r = FrameReader::new();
    r.feed(w.frame(FrameKind::Close, 0, 0, &h, 0).unwrap().header_bytes());
    r.feed(w.frame(FrameKind::Credit, 0, 0, &h, 0).unwrap().header_bytes());
    assert_eq!(r.next_frame().unwrap().unwrap().header.kind, FrameKind::Close);
    assert_eq!(r.next_frame(), Err(StreamError::DataAfterClose));
}

#[test]
fn the_writer_refuses_what_a_reader_would_reject() {
    let h = Header::default();
    let mut w = FrameWriter::new();
    let big = MAX_FRAME_PAYLOAD as usize + 1;
    assert_eq!(
        w.frame(FrameKind::DataChunk, 1, 0, &h, big).unwrap_err(),
        WireError::PayloadTooLarge { len: big as u32, max: MAX_FRAME_PAYLOAD }
    );
    assert_eq!(
        w.frame(FrameKind::Fin, 1, 0, &h, 3).unwrap_err(),
        WireError::UnexpectedPayload { kind: FrameKind::Fin, len: 3 }
    );
    // Refusals use up no frame number.
    let out = w.frame(FrameKind::Fin, 1, 0, &h, 0).unwrap();
    assert_eq!(decode(out.header_bytes()).unwrap().seq, 0);
}

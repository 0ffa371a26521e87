use super::*;
use crate::transport::tcp::wire::{encode, encode_record};
use proptest::prelude::*;

/// A frame to send: a record (header, payload) or the close frame (`None`).
type Spec = Option<(Header, Vec<u8>)>;

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<(u32, u32, i32, u64)>(),
        prop_oneof![4 => 0usize..200, 2 => 0usize..5000, 1 => 60_000usize..140_000],
        any::<u8>(),
    )
        .prop_map(|((kind, context, tag, aux), len, fill)| {
            let payload = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
            Some((Header { kind, context, source: 1, tag, aux }, payload))
        })
}

/// The bytes a sender puts on the wire for `frames`.
fn wire_of(frames: &[Spec]) -> Vec<u8> {
    let mut wire = Vec::new();
    for f in frames {
        match f {
            Some((header, payload)) => {
                wire.extend_from_slice(&encode_record(header, payload.len()));
                wire.extend_from_slice(payload);
            }
            None => wire.extend_from_slice(&encode(&FrameHeader::Close)),
        }
    }
    wire
}

fn check(got: &Frame<'_>, want: &Spec) {
    match (got, want) {
        (Frame::Record { header, payload }, Some((h, p))) => {
            assert_eq!(header, h);
            assert_eq!(payload, &&p[..]);
        }
        (Frame::Close, None) => {}
        _ => panic!("got {got:?}, expected {want:?}"),
    }
}

proptest! {
    #[test]
    fn random_chunkings_round_trip(frames in proptest::collection::vec(spec(), 0..40),
                                   cuts in proptest::collection::vec(1usize..3000, 1..20),
                                   close: bool, through_unfilled: bool) {
        // A close frame ends the stream: only in last place.
        let mut frames = frames;
        if close {
            frames.push(None);
        }
        let wire = wire_of(&frames);
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
                check(&f, &frames[n]);
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
    let frames: Vec<Spec> =
        (0..3u8).map(|i| Some((Header { tag: i as i32, ..Header::default() }, vec![i; 10]))).collect();
    let wire = wire_of(&frames);
    assert_eq!(wire.len(), 3 * (FRAME_HEADER_BYTES + 10));
    for cut in 0..=wire.len() {
        let mut r = FrameReader::new();
        let mut n = 0;
        for part in [&wire[..cut], &wire[cut..]] {
            assert_eq!(r.feed(part), part.len());
            while let Some(f) = r.next_frame().unwrap() {
                check(&f, &frames[n]);
                n += 1;
            }
        }
        assert_eq!(n, 3);
    }
}

#[test]
fn an_oversized_frame_is_rejected_from_its_header_alone() {
    let mut h = encode_record(&Header::default(), 0);
    h[0..4].copy_from_slice(&(MAX_FRAME_PAYLOAD + 1).to_le_bytes());
    let mut r = FrameReader::new();
    r.feed(&h);
    let e = StreamError::Wire(WireError::PayloadTooLarge { len: MAX_FRAME_PAYLOAD + 1, max: MAX_FRAME_PAYLOAD });
    assert_eq!(r.next_frame(), Err(e));
    assert_eq!(r.next_frame(), Err(e), "errors are sticky");
    assert!(r.buf.len() <= INITIAL_READ_BUFFER, "nothing was allocated for the announced payload");
}

#[test]
fn garbage_and_data_after_close_are_errors() {
    let mut r = FrameReader::new();
    r.feed(b"GET / HTTP/1.1\r\nHost: rank0\r\n\r\nGET / HTTP/1.1\r\nHost: rank0\r\n\r\n");
    assert!(matches!(r.next_frame(), Err(StreamError::Wire(WireError::PayloadTooLarge { .. }))));

    let mut r = FrameReader::new();
    r.feed(&encode(&FrameHeader::Close));
    r.feed(&encode_record(&Header::default(), 0));
    assert_eq!(r.next_frame(), Ok(Some(Frame::Close)));
    assert_eq!(r.next_frame(), Err(StreamError::DataAfterClose));
}

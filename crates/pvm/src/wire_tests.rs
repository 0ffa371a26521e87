//! Tests of `wire.rs`: every frame survives a round trip, and bytes from another process
//! never panic the decoder.

use super::*;
use crate::frame_buffer::LARGE;
use proptest::prelude::*;

fn samples() -> Vec<Frame> {
    vec![
        Frame::Hello { secret: "abc".into(), pid: 7, tid: 0x40001, name: "hello".into() },
        Frame::Welcome { tid: 0x40002, ptid: -23, siblings: vec![0x40002, 0x40003] },
        Frame::Message { src: 1, tag: -1, ctx: 0, enc: 0, data: vec![1, 2, 3] },
        Frame::Remote { tag: 5, ctx: 1, enc: 1, seq: 9, pieces: vec![(0x7fff_0000_1000, 65536), (0x10, 3)] },
        Frame::Output { tid: 3, event: OUTPUT_LINE, text: b"line".to_vec() },
        Frame::Output { tid: 3, event: OUTPUT_EOF, text: Vec::new() },
        Frame::Spawn(SpawnRequest {
            file: "slave1".into(),
            argv: vec!["-x".into()],
            flags: 1,
            place: "vm".into(),
            count: 3,
            path: vec!["/usr/bin".into()],
            env: vec!["A=b".into()],
            cwd: "/tmp".into(),
            output: [0x40001, 77, 3],
        }),
        Frame::Spawned { tids: vec![1, -7] },
        Frame::Kill { tid: 4, sig: 15 },
        Frame::Notify { what: 1, tag: 9, tids: vec![5] },
        Frame::Config,
        Frame::ConfigIs {
            hosts: vec![HostEntry { tid: 0x40000, name: "vm".into(), arch: "LINUX64".into(), speed: 1000, dsig: 1 }],
        },
        Frame::Tasks { which: 0 },
        Frame::TasksAre { tasks: vec![TaskEntry { tid: 1, ptid: 2, host: 3, flag: 4, name: "a".into(), pid: 5 }] },
        Frame::Lookup { tid: 1 },
        Frame::CatchOut { on: 1 },
        Frame::Halt,
        Frame::Exit,
        Frame::Group { op: 1, name: "g".into(), arg: -1 },
        Frame::Status { code: -31, list: vec![] },
        Frame::MboxPut { name: "svc".into(), flags: 2, enc: 0, data: vec![1] },
        Frame::MboxGet { name: "svc".into(), index: 0, flags: 8 },
        Frame::MboxDel { name: "svc".into(), index: 1 },
        Frame::MboxEntry { owner: 3, enc: 1, data: vec![4, 5] },
        Frame::MboxList { pattern: "*".into() },
        Frame::MboxClasses { classes: vec![("svc".into(), vec![(0, 1, 2)])] },
        Frame::AddHosts { names: vec!["b".into(), "c".into()] },
        Frame::DelHosts { names: vec!["b".into()] },
        Frame::Listening { addr: "10.0.0.1:4000".into() },
        Frame::Where { tid: 0x80001 },
        Frame::At { addr: "10.0.0.2:4001".into() },
        Frame::Join { secret: "s".into(), host_tid: 0x80000, name: "b".into(), dir: "/tmp/x.b".into() },
        Frame::Joined { pid: 9 },
        Frame::Enrolled { tid: 0x80001, ptid: 0x40001, pid: 10, name: "slave1".into() },
        Frame::Gone { tid: 0x80001 },
        Frame::Relay { tid: 0x80001, frame: Box::new(Frame::Kill { tid: 1, sig: 2 }) },
        Frame::SpawnAt {
            id: 3,
            from: 0x40001,
            catch: 0,
            tids: vec![0x80001],
            req: SpawnRequest {
                file: "a".into(),
                argv: vec![],
                flags: 0,
                place: String::new(),
                count: 1,
                path: vec![],
                env: vec![],
                cwd: "/".into(),
                output: [0; 3],
            },
        },
        Frame::Started { id: 3, tids: vec![0x80001, -7] },
        Frame::HostClock { host: 0x80000, id: 4 },
        Frame::ClockIs { id: 4, micros: 1_800_000_000_123_456 },
        Frame::Request { from: 0x80001, frame: Box::new(Frame::Config) },
    ]
}

#[test]
fn every_frame_round_trips_even_byte_by_byte() {
    let mut fb = FrameBuffer::default();
    for f in samples() {
        for b in f.encode() {
            assert_eq!(fb.next_frame().unwrap(), None);
            fb.push(&[b]);
        }
        assert_eq!(fb.next_frame().unwrap(), Some(f));
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Frame::decode(&bytes);
        let mut fb = FrameBuffer::default();
        fb.push(&bytes);
        while let Ok(Some(_)) = fb.next_frame() {}
    }

    #[test]
    fn every_truncation_of_a_frame_is_an_error(which in 0usize..24, cut in 1usize..40) {
        let body = samples()[which].encode()[4..].to_vec();
        let keep = body.len().saturating_sub(cut);
        prop_assert!(Frame::decode(&body[..keep]).is_err());
    }
}

#[test]
fn a_message_header_is_the_start_of_the_encoded_frame() {
    let f = Frame::Message { src: 5, tag: 6, ctx: 7, enc: 1, data: vec![9; 13] };
    let bytes = f.encode();
    assert_eq!(&bytes[..28], &message_header(5, 6, 7, 1, 13).unwrap()[..]);
    assert_eq!(bytes.len(), 28 + 13);
}

#[test]
fn large_messages_arrive_whole_between_small_frames_in_any_pieces() {
    let frames = vec![
        Frame::Kill { tid: 1, sig: 2 },
        Frame::Message { src: 1, tag: 2, ctx: 3, enc: 1, data: (0..200_000u32).map(|i| i as u8).collect() },
        Frame::Config,
        Frame::Message { src: 4, tag: 5, ctx: 0, enc: 0, data: vec![9; LARGE + 1] },
        Frame::Message { src: 4, tag: 6, ctx: 0, enc: 0, data: vec![7; 10] },
    ];
    let bytes: Vec<u8> = frames.iter().flat_map(Frame::encode).collect();
    for piece in [1, 7, 4096, 100_000, bytes.len()] {
        let mut fb = FrameBuffer::default();
        let mut got = Vec::new();
        for chunk in bytes.chunks(piece) {
            fb.push(chunk);
            while let Some(f) = fb.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, frames, "pieces of {piece} bytes");
    }
}

#[test]
fn an_oversized_length_is_an_error() {
    let mut fb = FrameBuffer::default();
    fb.push(&u32::MAX.to_le_bytes());
    assert!(fb.next_frame().is_err());
}

#[test]
fn a_record_is_one_small_message_only_when_it_holds_one_whole() {
    let data = [9u8, 8, 7];
    let header = message_header(0x40001, 5, 2, 1, data.len()).unwrap();
    let rec = [&header[..], &data].concat();
    assert_eq!(message_in(&rec), Some((5, 2, 1, &data[..])));
    assert_eq!(message_in(&rec[..rec.len() - 1]), None, "part of one");
    let two = [&rec[..], &rec].concat();
    assert_eq!(message_in(&two), None, "two frames");
    let hello = Frame::Hello { secret: "s".into(), pid: 1, tid: 2, name: String::new() }.encode();
    assert_eq!(message_in(&hello), None, "another kind");
    let big = vec![0u8; LARGE + 1];
    let big_rec = [&message_header(1, 1, 0, 1, big.len()).unwrap()[..], &big].concat();
    assert_eq!(message_in(&big_rec), None, "a large message takes the frame buffer's own path");
}

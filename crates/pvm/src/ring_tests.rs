//! Tests of `ring.rs`: bytes cross in order, stale records never read as new, the
//! receiver's and sender's words, and the in-place read of a record.

use super::*;
use crate::wire::{Frame, FrameBuffer};

#[test]
fn bytes_cross_the_ring_in_order_across_its_end() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    let mut fb = FrameBuffer::default();
    let mut sent = Vec::new();
    for i in 0..200u32 {
        let f = Frame::Message { src: 1, tag: i as i32, ctx: 0, enc: 0, data: vec![i as u8; (i as usize * 37) % 700] };
        let bytes = f.encode();
        let mut off = 0;
        while off < bytes.len() {
            off += tx.write(&bytes[off..]);
            rx.read_into(&mut fb).unwrap();
        }
        sent.push(f);
    }
    rx.read_into(&mut fb).unwrap();
    assert!(!rx.has_data());
    for f in sent {
        assert_eq!(fb.next_frame().unwrap(), Some(f));
    }
}

#[test]
fn records_of_earlier_laps_never_read_as_new() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    let mut fb = FrameBuffer::default();
    // 100 laps of records of every size up to a few lines, each read at once: after each
    // read no stale stamp looks like the next record.
    for i in 0..100 * 4096 / 128 {
        let bytes = vec![(i % 251) as u8; 1 + i % 200];
        assert!(tx.write_whole(&[&bytes]));
        assert!(rx.has_data());
        assert_eq!(rx.read_into(&mut fb).unwrap(), bytes.len());
        assert!(!rx.has_data());
    }
}

#[test]
fn parts_that_fit_are_written_whole_and_the_rest_waits() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    assert!(tx.write_whole(&[&[1; 3000], &[2; 1000]]));
    assert!(!tx.write_whole(&[&[3; 50], &[4; 50]]), "a record of 100 bytes takes 128, 64 are free");
    let mut fb = FrameBuffer::default();
    assert_eq!(rx.read_into(&mut fb).unwrap(), 4000);
    assert!(!rx.has_data());
    assert!(tx.write_whole(&[&[3; 50], &[4; 50]]), "across the ring's end");
    assert_eq!(rx.read_into(&mut fb).unwrap(), 100);
}

#[test]
fn a_record_in_one_piece_is_read_in_place_and_one_across_the_end_is_not() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    assert!(rx.next_record().is_none());
    assert!(tx.write_whole(&[&[1; 10], &[2; 5]]));
    assert_eq!(rx.next_record().unwrap(), [[1u8; 10].as_slice(), &[2; 5]].concat());
    rx.consume_record(15);
    assert!(rx.next_record().is_none() && !rx.has_data());
    // Up to 64 bytes before the end, then a record that wraps round it.
    assert!(tx.write_whole(&[&[3; 4096 - 64 - 64 - RECORD_HEAD]]));
    let mut fb = FrameBuffer::default();
    assert_eq!(rx.read_into(&mut fb).unwrap(), 4096 - 128 - RECORD_HEAD);
    assert!(tx.write_whole(&[&[4; 100]]));
    assert!(rx.has_data() && rx.next_record().is_none(), "across the end: the general way");
    assert_eq!(rx.read_into(&mut fb).unwrap(), 100);
    assert!(tx.write(&[5; 8]) == 8, "the sender got its room back");
}

#[test]
fn a_full_ring_takes_nothing_and_a_broken_length_is_an_error() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    assert_eq!(tx.write(&[7; 5000]), 4096 - RECORD_HEAD);
    assert_eq!(tx.write(&[7; 10]), 0);
    let mut fb = FrameBuffer::default();
    assert_eq!(rx.read_into(&mut fb).unwrap(), 4096 - RECORD_HEAD);
    assert_eq!(tx.write(&[7; 10]), 10);
    // A length beyond the ring, as a broken peer might write it.
    // SAFETY: the length word of the record just written, at ring offset 0.
    unsafe { (tx.data().add(8) as *mut u32).write(1 << 30) };
    assert_eq!(rx.read_into(&mut fb), Err(PvmError::BadMsg));
}

#[test]
fn a_ring_that_could_shrink_is_refused() {
    use std::os::fd::FromRawFd;
    // SAFETY: a new memfd we own, sized like a ring but not sealed.
    let fd = unsafe {
        let fd = libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, (DATA + 4096) as libc::off_t), 0);
        std::os::fd::OwnedFd::from_raw_fd(fd)
    };
    assert_eq!(Ring::open(&fd).err(), Some(PvmError::BadMsg));
}

#[test]
fn the_sender_sees_a_sleeping_receiver() {
    let (tx, fd) = Ring::create(4096).unwrap();
    let rx = Ring::open(&fd).unwrap();
    assert!(!tx.receiver_asleep());
    rx.set_asleep(true);
    assert!(tx.receiver_asleep());
    rx.set_asleep(false);
    assert!(!tx.receiver_asleep());
}

#[test]
fn single_copy_is_allowed_and_acknowledged_by_the_receiver_even_after_its_end_is_gone() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    tx.set_probe(0x1234);
    let rx = Ring::open(&fd).unwrap();
    assert_eq!(rx.probe(), 0x1234);
    assert!(!tx.single_copy_allowed());
    rx.allow_single_copy();
    assert!(tx.single_copy_allowed());
    let acker = rx.acker(7);
    drop(rx);
    assert_eq!(tx.acked(), 0);
    acker.ack();
    assert_eq!(tx.acked(), 7);
}

#[test]
fn a_shared_copy_request_is_seen_once_and_answered() {
    let (tx, fd) = Ring::create(4096).unwrap();
    let rx = Ring::open(&fd).unwrap();
    rx.allow_single_copy();
    let acker = rx.acker(1);
    assert_eq!(tx.help_request(0), None);
    let id = acker.ask_help(100, 50, 0xabc);
    let pid = std::process::id() as i32;
    assert_eq!(tx.help_request(0), Some(HelpRequest { id, at: 100, len: 50, addr: 0xabc, pid }));
    assert_eq!(tx.help_request(id), None, "answered requests are not seen again");
    assert_eq!(acker.helped(id), None);
    tx.mark_helped(id, false);
    assert_eq!(acker.helped(id), Some(false));
    let next = acker.ask_help(0, 1, 0xdef);
    assert_eq!(acker.helped(next), None);
    tx.mark_helped(next, true);
    assert_eq!(acker.helped(next), Some(true));
}

#[test]
fn a_held_record_keeps_its_room_while_later_records_are_read_and_written() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    assert!(tx.write_whole(&[&[7; 1000]]));
    let held = rx.next_record().unwrap();
    let (at, n) = (held.as_ptr(), held.len());
    rx.hold_record(n);
    // Later records are read (in place and into frames) while the first is held; the sender
    // refills everything but the held record's room, and no more.
    let mut fb = FrameBuffer::default();
    let mut written = 0;
    for round in 0..20u8 {
        while tx.write_whole(&[&[round; 500]]) {
            written += 1;
        }
        if let Some(r) = rx.next_record() {
            let len = r.len();
            rx.consume_record(len);
        }
        rx.read_into(&mut fb).unwrap();
    }
    assert!(written >= 5, "the rest of the ring is used: {written}");
    // SAFETY: the held record's bytes, still in the mapping.
    let still = unsafe { std::slice::from_raw_parts(at, n) };
    assert!(still.iter().all(|&b| b == 7), "the held record was written over");
    assert!(!tx.write_whole(&[&[9; 3000]]), "its room (and what follows) is not the sender's");
    rx.release_hold();
    assert!(tx.write_whole(&[&[9; 3000]]), "released, the whole ring is free again");
}

#[test]
fn a_small_message_written_in_place_is_the_record_write_message_makes_and_never_wraps() {
    let (mut tx, fd) = Ring::create(4096).unwrap();
    let (mut general, gfd) = Ring::create(4096).unwrap();
    let mut rx = Ring::open(&fd).unwrap();
    let mut grx = Ring::open(&gfd).unwrap();
    // Every length up to two lines, through a few laps (each record read at once): the
    // same record bytes as the general write of the same frame.
    for i in 0..400usize {
        let data: Vec<u8> = (0..i % 100).map(|b| (b + i) as u8).collect();
        let tag = i as i32;
        let words = crate::wire::message_words(7, tag, 5, 1, data.len()).unwrap();
        let header = crate::wire::message_header(7, tag, 5, 1, data.len()).unwrap();
        let fits = tx.write_small_message(words, &data);
        let at = (tx.mine as usize) & (tx.cap - 1);
        if !fits {
            // At the ring's end: the general write takes it (across the end).
            assert!(at + RECORD_HEAD + 28 + data.len() > tx.cap, "refused only across the end ({i})");
            assert!(tx.write_message(&header, &[&data]));
        }
        assert!(general.write_message(&header, &[&data]));
        let mut fb = FrameBuffer::default();
        let mut gfb = FrameBuffer::default();
        rx.read_into(&mut fb).unwrap();
        grx.read_into(&mut gfb).unwrap();
        let f = fb.next_frame().unwrap().expect("a whole frame");
        assert_eq!(f, gfb.next_frame().unwrap().unwrap(), "{i}");
        assert_eq!(f, Frame::Message { src: 7, tag, ctx: 5, enc: 1, data }, "{i}");
    }
    // A full ring takes nothing.
    let (mut tx, _fd) = Ring::create(4096).unwrap();
    let words = crate::wire::message_words(7, 1, 0, 1, 20).unwrap();
    let written = (0..).take_while(|_| tx.write_small_message(words, &[9; 20])).count();
    assert_eq!(written, 4096 / 64, "one line a record, until the ring is full");
}

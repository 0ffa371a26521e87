//! A sender that posts what the billboard cannot hold is closed and reported, never trusted:
//! unknown forms, lengths past the ring, slot descriptors outside the data part, ACK counts
//! past what was sent.

use super::*;

const SLOTS: usize = 4;

fn pair() -> Vec<ShmChannel> {
    endpoints(2, 32 << 10, 64 << 10, SLOTS)
}

fn header(tag: i32) -> Header {
    Header { kind: 1, context: 0, source: 1, tag, aux: 0 }
}

/// Polls `rx` until nothing more comes; the tags of the records handed out.
fn drained(rx: &mut ShmChannel) -> Vec<i32> {
    let mut tags = Vec::new();
    while rx.poll(None, |_, h, _| tags.push(h.tag)) > 0 {}
    tags
}

/// Posts a record of `form`/`len` after a good one and checks the receiver hands out the good
/// one, then closes the sender with a report naming `what`, and reads nothing after.
fn closes_on(form: u32, len: u32, payload: &[u8], what: &str) {
    let mut eps = pair();
    eps[1].try_send(0, &header(1), b"fine").unwrap();
    eps[1].push_raw(0, form, len, &header(2), payload);
    eps[1].try_send(0, &header(3), b"after").unwrap();
    assert_eq!(drained(&mut eps[0]), [1], "records before the bad one only");
    assert!(eps[0].has_failure());
    let (peer, why) = eps[0].take_failure().unwrap();
    assert_eq!(peer, 1);
    assert!(why.contains(what), "{why}");
    assert!(!eps[0].has_failure(), "reported once");
    eps[1].try_send(0, &header(4), b"later").unwrap();
    assert_eq!(drained(&mut eps[0]), [] as [i32; 0], "a closed sender is not read");
    assert!(!eps[0].pending(), "nor counted as pending (a waiter may sleep)");
    assert!(!eps[0].take_head(1, |_, _| true), "nor taken at the head");
}

#[test]
fn an_unknown_form_closes_the_sender() {
    closes_on(9, 4, b"abcd", "form 9");
}

#[test]
fn an_inline_length_past_the_ring_closes_the_sender() {
    closes_on(FORM_INLINE, 1 << 30, b"abcd", "length 1073741824");
}

#[test]
fn a_slot_outside_the_data_part_closes_the_sender() {
    closes_on(FORM_SLOT, 10, &(SLOTS as u32).to_ne_bytes(), "slot");
}

#[test]
fn a_slot_length_past_the_slot_closes_the_sender() {
    closes_on(FORM_SLOT, (64 << 10) + 1, &0u32.to_ne_bytes(), "65537 bytes");
}

#[test]
fn an_ack_count_past_what_was_sent_closes_the_receiver() {
    let mut eps = pair();
    let big = vec![5u8; 20 << 10]; // past the inline limit: through a slot
    for k in 0..SLOTS as i32 {
        eps[0].try_send(1, &header(k), &big).unwrap();
    }
    eps[1].forge_acks(0, 1000);
    // Every slot is in use: the next send reclaims, and finds the count impossible.
    let _ = eps[0].try_send(1, &header(9), &big);
    let (peer, why) = eps[0].take_failure().expect("the receiver is reported");
    assert_eq!(peer, 1);
    assert!(why.contains("ACK count 1000 passed the 4 slot descriptors"), "{why}");
    // Its slots came back: sends go on (to others; the engine sends it nothing more).
    assert!(eps[0].try_send(1, &header(10), &big).is_ok(), "slots freed");
}

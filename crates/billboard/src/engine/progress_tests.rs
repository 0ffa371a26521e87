//! An engine fed records a well-behaved peer cannot send: each class of malformation fails
//! that peer exactly as a broken route does (every request depending on it completes with
//! `PeerGone` naming it and what was wrong), and nothing else: no panic, no write outside a
//! buffer, other peers untouched. The engine runs over a real billboard in this process; the
//! peers are bare channel endpoints that post whatever a test tells them to.

use super::*;
use crate::engine::matching::MAX_CONTEXTS;
use crate::transport::routes::shm_only;
use crate::transport::shm::{self, ShmChannel};

/// A message this big goes by rendezvous (above the eager limit).
const LARGE: usize = 100_000;

struct Rig {
    engine: Engine,
    /// Ranks 1.. as bare endpoints (index 0 is rank 1).
    peers: Vec<ShmChannel>,
}

fn rig(ranks: usize) -> Rig {
    let mut eps = shm::endpoints(ranks, 32 << 10, 64 << 10, 4).into_iter();
    let engine = Engine::new(shm_only(eps.next().unwrap()));
    Rig { engine, peers: eps.collect() }
}

fn header(kind: u32, context: u32, tag: i32, aux: u64) -> Header {
    Header { kind, context, source: 1, tag, aux }
}

impl Rig {
    /// Rank `from` posts one record to the engine (rank 0).
    fn post(&mut self, from: usize, h: Header, payload: &[u8]) {
        self.peers[from - 1].try_send(0, &h, payload).expect("room in the ring");
    }

    fn progress(&mut self) {
        for _ in 0..4 {
            self.engine.progress(None);
        }
    }

    /// Why rank `peer` failed, if it did.
    fn failure(&self, peer: usize) -> Option<&str> {
        self.engine.core.failed[peer].as_deref()
    }

    /// A receive from rank 1 (context 0, tag 0) into `buf`.
    fn recv(&mut self, buf: &mut [u8]) -> ReqId {
        let pattern = Pattern { context: 0, source: Some(1), tag: Some(0) };
        // SAFETY: every test keeps its buffer until the request is finished.
        unsafe { self.engine.irecv(pattern, Some(1), buf.as_mut_ptr(), buf.len()) }
    }

    /// A rendezvous send of `buf` to rank `to`.
    fn send_large(&mut self, to: usize, buf: &[u8]) -> ReqId {
        // SAFETY: as above.
        unsafe { self.engine.isend(to, 0, 0, 0, buf.as_ptr(), buf.len(), false) }.expect("a rendezvous")
    }

    /// A receive into `buf` matched by rank 1's RTS of a 100-byte message it must pipeline
    /// (DATA chunks through the channel): the CTS has gone out.
    fn pipelined_recv(&mut self, buf: &mut [u8]) -> ReqId {
        self.engine.core.single_copy[1] = false;
        let recv = self.recv(buf);
        let (rts, n) = Rts { addr: 0x1000, send_req: 7, blocks: 0 }.encode();
        self.post(1, header(RTS, 0, 0, 100), &rts[..n]);
        self.progress();
        let cts = self.received(1);
        assert_eq!((cts[0].0.kind, cts[0].0.aux, &cts[0].1[..]), (CTS, 7, &recv.to_ne_bytes()[..]));
        recv
    }

    /// Records rank `at` has received from the engine.
    fn received(&mut self, at: usize) -> Vec<(Header, Vec<u8>)> {
        let mut got = Vec::new();
        self.peers[at - 1].poll(None, |_, h, p| got.push((*h, p.to_vec())));
        got
    }

    /// Checks that rank 1 failed for a reason containing `what`, and that request `id` ended
    /// with `PeerGone` naming it and the same reason.
    fn assert_failed(&mut self, id: ReqId, what: &str) {
        let why = self.failure(1).unwrap_or_else(|| panic!("rank 1 not failed (expected {what:?})")).to_string();
        assert!(why.contains(what), "{why}");
        assert!(self.engine.is_done(id), "the request depending on rank 1 completed");
        match self.engine.finish(id) {
            Err(Error::PeerGone { rank: 1, reason }) => assert_eq!(reason, why),
            other => panic!("expected PeerGone from rank 1, got {other:?}"),
        }
    }
}

#[test]
fn an_unknown_kind_fails_the_peer() {
    let mut r = rig(2);
    let mut buf = [0u8; 8];
    let id = r.recv(&mut buf);
    r.post(1, header(99, 0, 0, 0), b"");
    r.progress();
    r.assert_failed(id, "a record of unknown kind 99");
    let later = r.recv(&mut buf);
    r.assert_failed(later, "unknown kind 99");
}

#[test]
fn payloads_of_the_wrong_length_fail_the_peer() {
    let data = vec![1u8; LARGE];
    for (kind, payload, what) in [
        (RTS, &[0u8; 5][..], "an RTS record of 5 payload bytes"),
        (CTS, &[0u8; 3][..], "CTS of 3 payload bytes"),
        (SHARE, &[0u8; 15][..], "SHARE of 15 payload bytes"),
    ] {
        let mut r = rig(2);
        let mut buf = [0u8; 8];
        let recv = r.recv(&mut buf);
        let send = r.send_large(1, &data);
        r.post(1, header(kind, 0, 0, send as u64), payload);
        r.progress();
        r.assert_failed(send, what);
        r.assert_failed(recv, what);
    }
}

#[test]
fn request_ids_that_name_nothing_fail_the_peer() {
    for (kind, tag, aux, payload, what) in [
        (FIN, 0, 12345, &[][..], "FIN for request 12345"),
        (CTS, 0, 12345, &[0u8; 4][..], "CTS of 4 payload bytes for request 12345"),
        (SHARE, 0, 1 << 40, &[0u8; 16][..], "for request 1099511627776"),
        (PUSHED, 0, 7, &[][..], "PUSHED of 0 payload bytes for request 7"),
        (DATA, 999, 0, &[1u8; 10][..], "DATA for request 999"),
    ] {
        let mut r = rig(2);
        let mut buf = [0u8; 8];
        let recv = r.recv(&mut buf);
        r.post(1, header(kind, 0, tag, aux), payload);
        r.progress();
        r.assert_failed(recv, what);
    }
}

#[test]
fn requests_in_the_wrong_state_fail_the_peer() {
    // A FIN, CTS or SHARE naming a receive; DATA or PUSHED naming a send.
    let data = vec![1u8; LARGE];
    for kind in [FIN, CTS, SHARE, DATA, PUSHED] {
        let mut r = rig(2);
        let mut buf = [7u8; 8];
        let recv = r.recv(&mut buf);
        let send = r.send_large(1, &data);
        let (named, payload): (ReqId, &[u8]) = match kind {
            FIN => (recv, &[]),
            CTS => (recv, &[0; 4]),
            SHARE => (recv, &[0; 16]),
            _ => (send, &[0; 8]),
        };
        let h = match kind {
            DATA => header(DATA, 0, named as i32, 0),
            _ => header(kind, 0, 0, named as u64),
        };
        r.post(1, h, payload);
        r.progress();
        r.assert_failed(send, "no ");
        r.assert_failed(recv, "no ");
        assert_eq!(buf, [7; 8], "the receive buffer is untouched");
    }
}

#[test]
fn a_request_of_another_peer_fails_only_the_sender() {
    let data = vec![1u8; LARGE];
    let mut r = rig(3);
    let to_one = r.send_large(1, &data);
    // Rank 2 says it has read rank 1's message.
    r.post(2, header(FIN, 0, 0, to_one as u64), b"");
    r.progress();
    let why = r.failure(2).expect("rank 2 failed").to_string();
    assert!(why.contains(&format!("FIN for request {to_one}")), "{why}");
    assert!(r.failure(1).is_none(), "rank 1 is fine");
    assert!(!r.engine.is_done(to_one), "the send to rank 1 still waits for rank 1");
    // Rank 1 ends it properly.
    r.post(1, header(FIN, 0, 0, to_one as u64), b"");
    r.progress();
    assert!(r.engine.finish(to_one).is_ok());
}

#[test]
fn bytes_outside_the_message_fail_the_peer() {
    for (offset, bytes, what) in [
        (90u64, 20usize, "DATA of 20 bytes at 90 of a 100-byte message"),
        (u64::MAX - 4, 10, "DATA of 10 bytes at 18446744073709551611"),
    ] {
        let mut r = rig(2);
        let mut buf = [0u8; 128];
        let recv = r.pipelined_recv(&mut buf);
        r.post(1, header(DATA, 0, recv as i32, 0), &[3; 90]);
        r.post(1, header(DATA, 0, recv as i32, offset), &vec![4; bytes]);
        r.progress();
        r.assert_failed(recv, what);
        assert!(buf[..90].iter().all(|&b| b == 3) && buf[90..].iter().all(|&b| b == 0), "nothing past the chunk");
    }
}

/// DATA chunks of one message come in order (routes keep a pair's records in order, senders
/// send chunks in order): a repeated chunk or one past a gap fails the sender, and is never
/// counted as new bytes (a repeat once completed the receive with a hole in it).
#[test]
fn repeated_or_reordered_chunks_fail_the_peer() {
    for (second, what) in [
        (0u64, "DATA of 50 bytes at 0 of a 100-byte message, out of order (50 received)"),
        (60, "DATA of 40 bytes at 60 of a 100-byte message, out of order (50 received)"),
    ] {
        let mut r = rig(2);
        let mut buf = [0u8; 100];
        let recv = r.pipelined_recv(&mut buf);
        r.post(1, header(DATA, 0, recv as i32, 0), &[3; 50]);
        r.post(1, header(DATA, 0, recv as i32, second), &vec![4; 100 - second.max(50) as usize]);
        r.progress();
        r.assert_failed(recv, what);
        assert!(buf[..50].iter().all(|&b| b == 3) && buf[50..].iter().all(|&b| b == 0), "nothing but the first chunk");
    }
}

/// The sender's answers out of order or twice: once a CTS has turned a send into a pipeline,
/// a second CTS or a FIN names a send that waits for neither, and fails the receiver.
#[test]
fn a_second_answer_to_one_rts_fails_the_peer() {
    // More than the peer's data slots hold: the send is still pipelining when the answer comes.
    let data = vec![1u8; 1 << 20];
    for (kind, payload, what) in
        [(CTS, &[5u8, 0, 0, 0][..], "CTS of 4 payload bytes"), (FIN, &[][..], "FIN for request")]
    {
        let mut r = rig(2);
        let send = r.send_large(1, &data);
        r.post(1, header(CTS, 0, 0, send as u64), &5u32.to_ne_bytes());
        r.progress();
        assert!(r.received(1).iter().any(|(h, _)| h.kind == DATA), "pipelining");
        assert!(!r.engine.is_done(send));
        r.post(1, header(kind, 0, 0, send as u64), payload);
        r.progress();
        r.assert_failed(send, what);
    }
}

#[test]
fn pushed_pages_outside_the_message_fail_the_peer() {
    let mut r = rig(2);
    let theirs = vec![9u8; 1 << 20]; // "rank 1's memory": this process is every rank
    let mut buf = vec![0u8; 1 << 20];
    let recv = r.recv(&mut buf);
    let (rts, n) = Rts { addr: theirs.as_ptr() as u64, send_req: 3, blocks: 0 }.encode();
    r.post(1, header(RTS, 0, 0, theirs.len() as u64), &rts[..n]);
    r.engine.progress(None); // matched, a shared copy: the claim word is opened, SHARE sent
    assert!(matches!(r.engine.core.reqs.get(recv).state, State::RecvShared { copy, .. } if copy.slot() == Some(0)));
    let mut pages = [0u8; 8];
    pages[..4].copy_from_slice(&200u32.to_ne_bytes());
    pages[4..].copy_from_slice(&900u32.to_ne_bytes());
    r.post(1, header(PUSHED, 0, 0, recv as u64), &pages);
    r.progress();
    r.assert_failed(recv, "PUSHED naming pages 200..900 of a 1048576-byte message");
}

#[test]
fn a_context_no_communicator_can_have_fails_the_peer() {
    for kind in [EAGER, RTS] {
        let mut r = rig(2);
        let mut buf = [0u8; 8];
        let recv = r.recv(&mut buf);
        let (rts, n) = Rts { addr: 0x1000, send_req: 3, blocks: 0 }.encode();
        let payload = if kind == RTS { &rts[..n] } else { &b"hi"[..] };
        r.post(1, header(kind, MAX_CONTEXTS, 0, 100), payload);
        r.progress();
        r.assert_failed(recv, &format!("record on context {MAX_CONTEXTS}"));
        assert!(r.engine.core.matcher.unexpected_len() == 0, "nothing kept");
    }
}

#[test]
fn block_lists_that_cannot_be_fail_the_peer() {
    // More blocks than bytes.
    let mut r = rig(2);
    let mut buf = vec![0u8; LARGE];
    let recv = r.recv(&mut buf);
    let (rts, n) = Rts { addr: 0x1000, send_req: 3, blocks: u32::MAX }.encode();
    r.post(1, header(RTS, 0, 0, LARGE as u64), &rts[..n]);
    r.progress();
    r.assert_failed(recv, &format!("an RTS of {LARGE} bytes in 4294967295 blocks"));

    // Blocks that do not add up to the message.
    let mut r = rig(2);
    let theirs = [9u8; 200];
    let list: [Block; 2] = [(theirs.as_ptr() as *mut u8, 100), (theirs[100..].as_ptr() as *mut u8, 100)];
    let recv = r.recv(&mut buf);
    let (rts, n) = Rts { addr: list.as_ptr() as u64, send_req: 3, blocks: 2 }.encode();
    r.post(1, header(RTS, 0, 0, LARGE as u64), &rts[..n]);
    r.progress();
    r.assert_failed(recv, &format!("an RTS whose 2 blocks do not hold its {LARGE} bytes"));
    assert!(buf.iter().all(|&b| b == 0), "nothing was copied");
}

#[test]
fn a_failed_peer_is_not_read_any_more() {
    let mut r = rig(2);
    r.post(1, header(99, 0, 0, 0), b"");
    r.post(1, header(EAGER, 0, 0, 0), b"after the fault");
    r.progress();
    assert!(r.failure(1).is_some());
    assert_eq!(r.engine.core.matcher.unexpected_len(), 0, "the record behind the fault was dropped");
    let mut buf = [0u8; 32];
    let any = Pattern { context: 0, source: None, tag: None };
    // SAFETY: `buf` outlives the request (cancelled below).
    let id = unsafe { r.engine.irecv(any, None, buf.as_mut_ptr(), buf.len()) };
    r.post(1, header(EAGER, 0, 0, 0), b"later");
    r.progress();
    assert!(!r.engine.is_done(id), "and so are later ones");
    assert!(r.engine.cancel(id));
    assert!(r.engine.finish(id).is_ok_and(|c| c.cancelled));
    assert_eq!(buf, [0; 32]);
}

#[test]
fn a_ring_the_billboard_cannot_read_fails_the_peer() {
    let mut r = rig(2);
    let mut buf = [0u8; 8];
    let recv = r.recv(&mut buf);
    r.peers[0].push_raw(0, 9, 0, &header(EAGER, 0, 0, 0), b"");
    r.progress();
    r.assert_failed(recv, "it sent what the billboard cannot hold: a ring record of form 9");
}

/// A REVOKE record (`revoke.rs`) fails the receives waiting on the communicator's two
/// contexts and nothing else, releases the sender of a rendezvous offer waiting there with a
/// FIN, and makes later operations on either context fail as they start; the sender stays well.
#[test]
fn a_revoke_record_fails_what_waits_on_its_communicator() {
    let mut r = rig(3);
    let (mut a, mut b, mut c) = ([0u8; 8], [0u8; 8], [0u8; 8]);
    let on_it = r.recv(&mut a);
    let other = Pattern { context: 4, source: Some(1), tag: Some(0) };
    // SAFETY: the buffers outlive the requests (finished below).
    let elsewhere = unsafe { r.engine.irecv(other, Some(1), b.as_mut_ptr(), b.len()) };
    let (rts, n) = Rts { addr: 0x1000, send_req: 11, blocks: 0 }.encode();
    r.post(2, Header { source: 2, ..header(RTS, 1, 5, 100) }, &rts[..n]);
    r.progress();
    r.post(1, header(REVOKE, 0, 0, 0), b"");
    r.progress();
    assert!(r.failure(1).is_none() && r.failure(2).is_none(), "a revocation fails no peer");
    assert!(matches!(r.engine.finish(on_it), Err(Error::Revoked { context: 0 })));
    assert!(!r.engine.is_done(elsewhere), "a receive on another communicator waits on");
    let fin = r.received(2);
    assert_eq!((fin.len(), fin[0].0.kind, fin[0].0.aux), (1, FIN, 11), "the offer's sender is released");
    let coll = Pattern { context: 1, source: None, tag: None };
    // SAFETY: as above.
    let later = unsafe { r.engine.irecv(coll, None, c.as_mut_ptr(), c.len()) };
    assert!(matches!(r.engine.finish(later), Err(Error::Revoked { context: 0 })));
    // SAFETY: the buffer is a static.
    let send = unsafe { r.engine.isend(1, 0, 0, 0, b"x".as_ptr(), 1, false) }.expect("a failed send");
    assert!(matches!(r.engine.finish(send), Err(Error::Revoked { context: 0 })));
    // A later offer on the revoked communicator is released as it arrives.
    r.post(2, Header { source: 2, ..header(RTS, 0, 5, 100) }, &rts[..n]);
    r.progress();
    assert_eq!(r.received(2).iter().map(|(h, _)| (h.kind, h.aux)).collect::<Vec<_>>(), [(FIN, 11)]);
    r.post(1, header(EAGER, 4, 0, 0), b"12345678");
    r.progress();
    assert!(r.engine.is_done(elsewhere) && r.engine.finish(elsewhere).is_ok() && &b == b"12345678");
}

#[test]
fn a_revoke_record_reaches_the_communicators_its_communicator_keeps() {
    // World (pair 0) keeps pairs 4 and 6 for a hierarchy's phases; pair 8 is another's.
    let mut r = rig(2);
    r.engine.keep(0, 4);
    r.engine.keep(0, 6);
    let (mut a, mut b, mut c) = ([0u8; 8], [0u8; 8], [0u8; 8]);
    let on = |context| Pattern { context, source: Some(1), tag: Some(0) };
    // SAFETY: the buffers outlive the requests (finished or checked below).
    let (host, leaders, other) = unsafe {
        (
            r.engine.irecv(on(5), Some(1), a.as_mut_ptr(), a.len()),
            r.engine.irecv(on(6), Some(1), b.as_mut_ptr(), b.len()),
            r.engine.irecv(on(8), Some(1), c.as_mut_ptr(), c.len()),
        )
    };
    r.post(1, header(REVOKE, 0, 0, 0), b"");
    r.progress();
    assert!(matches!(r.engine.finish(host), Err(Error::Revoked { context: 4 })));
    assert!(matches!(r.engine.finish(leaders), Err(Error::Revoked { context: 6 })));
    assert!(!r.engine.is_done(other), "a communicator not kept waits on");
    // Kept after the revocation: revoked at once.
    r.engine.keep(0, 10);
    // SAFETY: as above.
    let late = unsafe { r.engine.irecv(on(10), Some(1), a.as_mut_ptr(), a.len()) };
    assert!(matches!(r.engine.finish(late), Err(Error::Revoked { context: 10 })));
}

#[test]
fn a_revoke_record_of_a_context_no_communicator_can_have_fails_the_peer() {
    for aux in [3, MAX_CONTEXTS as u64, u64::MAX] {
        let mut r = rig(2);
        let mut buf = [0u8; 8];
        let id = r.recv(&mut buf);
        r.post(1, header(REVOKE, 0, 0, aux), b"");
        r.progress();
        r.assert_failed(id, &format!("a REVOKE record for context {aux}"));
    }
}

//! Engines over the in-memory channel (`transport/mem.rs`): several ranks in one thread, each a
//! whole engine, with the test choosing who runs a progress round when, which records a link
//! shows, which remote copies the "kernel" refuses and who dies. Every protocol path runs here
//! deterministically: eager (expected, unexpected, direct), rendezvous by single copy, shared
//! copy and pipeline, gathered and scattered buffers, back-pressure, cancel, probe, and peer
//! failure mid-transfer; a property test mixes them all under random schedules.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::transport::mem::{shm_like, MemChannel, Net};
use crate::transport::Caps;

#[path = "active_tests.rs"]
mod active;

/// Engines of one test and the net between them.
struct Sim {
    net: Rc<RefCell<Net>>,
    ranks: Vec<Engine<MemChannel>>,
}

/// The routes a test runs on: a billboard-like one (single copy and claim words), one with
/// single copy but no claim words, and one that can only move records (another host).
fn shm() -> Caps {
    shm_like()
}
fn single_only() -> Caps {
    Caps { claim_words: 0, ..shm_like() }
}
fn records_only() -> Caps {
    Caps { single_copy: false, claim_words: 0, multicast: false, ..shm_like() }
}

/// Records one link holds before a send must wait.
const LINK: usize = 8;

fn sim(n: usize, caps: Caps) -> Sim {
    sim_with(n, caps, LINK)
}

fn sim_with(n: usize, caps: Caps, capacity: usize) -> Sim {
    let net = Net::new(n, caps, capacity);
    let ranks = Net::channels(&net)
        .into_iter()
        .map(|c| {
            let mut e = Engine::new(c);
            // Small steps, so a message of a few pages takes many turns of each protocol.
            e.core.cma_segment = 4096;
            e.core.shared_min = 2 * claims::PAGE;
            e.core.shared_chunk = claims::PAGE;
            e
        })
        .collect();
    Sim { net, ranks }
}

/// The message `k` of rank `from`: `len` bytes no other message has in the same places.
fn data(from: usize, k: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + k * 7 + from * 101) as u8).collect()
}

fn pattern(from: Option<usize>, tag: Option<i32>) -> Pattern {
    Pattern { context: 0, source: from.map(|f| f as u32), tag }
}

impl Sim {
    /// Starts a send; `None`: complete at once. The test keeps `buf` until it completes.
    fn send(&mut self, from: usize, to: usize, tag: i32, buf: &[u8]) -> Option<ReqId> {
        // SAFETY: every test keeps its buffers alive and unchanged until its requests finish.
        unsafe { self.ranks[from].isend(to, 0, from as u32, tag, buf.as_ptr(), buf.len(), false) }
    }

    /// Posts a receive at rank `at`. The test keeps `buf` until it completes.
    fn recv(&mut self, at: usize, from: Option<usize>, tag: Option<i32>, buf: &mut [u8]) -> ReqId {
        // SAFETY: as above.
        unsafe { self.ranks[at].irecv(pattern(from, tag), from, buf.as_mut_ptr(), buf.len()) }
    }

    /// One progress round at each rank of `order`, in turn.
    fn rounds(&mut self, order: &[usize]) {
        for &r in order {
            self.ranks[r].progress(None);
        }
    }

    /// Rounds at every rank in turn until `done` holds; panics if it never does.
    fn run_until(&mut self, mut done: impl FnMut(&mut Sim) -> bool) {
        let all: Vec<usize> = (0..self.ranks.len()).collect();
        for _ in 0..100_000 {
            if done(self) {
                return;
            }
            self.rounds(&all);
        }
        panic!("no progress after 100000 rounds; in flight: {:?}", self.net.borrow().sent.len());
    }

    /// Runs until every `(rank, request)` is done, and finishes them.
    fn complete(&mut self, reqs: &[(usize, Option<ReqId>)]) -> Vec<Result<Completion>> {
        self.run_until(|s| reqs.iter().all(|&(r, id)| id.is_none_or(|id| s.ranks[r].is_done(id))));
        reqs.iter()
            .map(|&(r, id)| match id {
                Some(id) => self.ranks[r].finish(id),
                None => Ok(Completion::default()),
            })
            .collect()
    }

    /// How many records of `kind` went from `from` to `to`.
    fn count(&self, from: usize, to: usize, kind: u32) -> usize {
        self.net.borrow().sent.iter().filter(|s| (s.0, s.1, s.2) == (from, to, kind)).count()
    }
}

#[test]
fn eager_messages_land_expected_unexpected_and_direct() {
    let mut s = sim(2, shm());
    let msg = data(0, 1, 200);
    // Unexpected: sent before the receive is posted.
    assert!(s.send(0, 1, 5, &msg).is_none(), "an eager send completes at once");
    s.rounds(&[1]);
    let mut buf = vec![0u8; 300];
    let id = s.recv(1, Some(0), Some(5), &mut buf);
    let done = s.complete(&[(1, Some(id))]).remove(0).unwrap();
    assert_eq!((done.source, done.tag, done.bytes), (0, 5, 200));
    assert_eq!(&buf[..200], &msg[..]);
    // Expected: the receive waits first.
    let mut buf = vec![0u8; 300];
    let id = s.recv(1, None, None, &mut buf);
    s.send(0, 1, 6, &msg);
    assert_eq!(s.complete(&[(1, Some(id))]).remove(0).unwrap().tag, 6);
    assert_eq!(&buf[..200], &msg[..]);
    // Direct: a blocking receive outside the matcher.
    let mut buf = vec![0u8; 300];
    // SAFETY: `buf` outlives the receive.
    let started = unsafe { s.ranks[1].recv_direct(pattern(Some(0), Some(7)), Some(0), buf.as_mut_ptr(), 300) };
    assert!(matches!(started, Started::Direct));
    s.send(0, 1, 7, &msg);
    s.run_until(|s| s.ranks[1].direct_done());
    assert_eq!(s.ranks[1].direct_finish().unwrap().bytes, 200);
    assert_eq!(&buf[..200], &msg[..]);
}

#[test]
fn truncation_is_reported_and_the_buffer_kept_to_its_size() {
    for len in [100, 20_000] {
        let mut s = sim(2, shm());
        let msg = data(0, 0, len);
        let mut buf = [0xeeu8; 60];
        let id = s.recv(1, Some(0), None, &mut buf[..50]);
        let send = s.send(0, 1, 1, &msg);
        let mut out = s.complete(&[(1, Some(id)), (0, send)]);
        assert!(
            matches!(out.remove(0), Err(Error::Truncated { message_bytes, buffer_bytes: 50, .. }) if message_bytes == len)
        );
        assert_eq!(&buf[..50], &msg[..50]);
        assert!(buf[50..].iter().all(|&b| b == 0xee), "nothing written past the buffer ({len} bytes)");
    }
}

/// A rendezvous message goes by the protocol the route allows, posted before or after it
/// arrives, and arrives whole; the records on the wire say which protocol it took.
#[test]
fn rendezvous_by_every_protocol() {
    for (caps, name) in [(shm(), "shared"), (single_only(), "single"), (records_only(), "pipeline")] {
        for len in [(16 << 10) + 1, 5 * claims::PAGE + 17, 100_000] {
            for recv_first in [false, true] {
                let mut s = sim(2, caps);
                let msg = data(0, 3, len);
                let mut buf = vec![0u8; len];
                let mut id = None;
                if recv_first {
                    id = Some(s.recv(1, Some(0), Some(9), &mut buf));
                }
                let send = s.send(0, 1, 9, &msg);
                assert!(send.is_some(), "{len} bytes go by rendezvous");
                s.rounds(&[1, 1]);
                let id = id.unwrap_or_else(|| s.recv(1, Some(0), Some(9), &mut buf));
                let out = s.complete(&[(1, Some(id)), (0, send)]);
                assert_eq!(out[0].as_ref().unwrap().bytes, len);
                assert!(buf == msg, "{name}, {len} bytes, receive first: {recv_first}");
                assert_eq!(s.count(0, 1, RTS), 1);
                assert_eq!(s.count(1, 0, FIN), usize::from(name != "pipeline"), "{name}");
                assert_eq!(s.count(1, 0, CTS), usize::from(name == "pipeline"), "{name}");
                assert_eq!(s.count(1, 0, SHARE), usize::from(name == "shared"), "{name}");
                if name == "pipeline" {
                    assert_eq!(s.count(0, 1, DATA), len.div_ceil(caps.max_record));
                }
            }
        }
    }
}

/// Both ends of a shared copy take pages: the sender, run as soon as the SHARE reaches it,
/// writes from the back and says PUSHED; the message is whole either way round.
#[test]
fn shared_copy_divides_pages_between_both_ends() {
    let len = 20 * claims::PAGE + 3;
    let mut s = sim(2, shm());
    let msg = data(0, 4, len);
    let mut buf = vec![0u8; len];
    let send = s.send(0, 1, 1, &msg);
    let id = s.recv(1, Some(0), Some(1), &mut buf);
    // The receiver matches and asks (SHARE); the sender then copies first.
    s.rounds(&[1, 0, 0, 0]);
    s.complete(&[(1, Some(id)), (0, send)]);
    assert!(buf == msg);
    assert_eq!((s.count(1, 0, SHARE), s.count(0, 1, PUSHED)), (1, 1), "the sender took pages and said so");
}

/// The kernel refuses the sender's writes: it gives its pages back (PUSHED names them), the
/// receiver copies them itself, and the sender stops helping that peer.
#[test]
fn a_refused_shared_write_gives_its_pages_back() {
    let len = 12 * claims::PAGE;
    let mut s = sim(2, shm());
    s.net.borrow_mut().refuse(0, false, true);
    let (a, b) = (data(0, 0, len), data(0, 1, len));
    let (mut ra, mut rb) = (vec![0u8; len], vec![0u8; len]);
    let send = s.send(0, 1, 1, &a);
    let id = s.recv(1, Some(0), Some(1), &mut ra);
    s.rounds(&[1, 0, 0]);
    s.complete(&[(1, Some(id)), (0, send)]);
    assert!(ra == a);
    let pushed: Vec<_> = s.net.borrow().sent.iter().filter(|r| r.2 == PUSHED).map(|r| r.3).collect();
    assert_eq!(pushed, [8], "one PUSHED naming the pages it could not write");
    // The next message: the receiver still asks, the sender no longer helps.
    let send = s.send(0, 1, 2, &b);
    let id = s.recv(1, Some(0), Some(2), &mut rb);
    s.rounds(&[1, 0, 0]);
    s.complete(&[(1, Some(id)), (0, send)]);
    assert!(rb == b);
    assert_eq!((s.count(1, 0, SHARE), s.count(0, 1, PUSHED)), (2, 1));
}

/// The kernel refuses the receiver's reads, at the start or after the sender took pages: the
/// message starts over by the pipeline, arrives whole, and later ones go by the pipeline.
#[test]
fn refused_reads_restart_by_the_pipeline() {
    for sender_first in [false, true] {
        let len = 12 * claims::PAGE + 5;
        let mut s = sim(2, shm());
        let msg = data(0, 2, len);
        let mut buf = vec![0u8; len];
        let send = s.send(0, 1, 1, &msg);
        let id = s.recv(1, Some(0), Some(1), &mut buf);
        if sender_first {
            // SHARE out, the sender takes pages from the back, then reads are refused.
            s.rounds(&[1, 0]);
            assert!(s.ranks[0].core.active.len() == 1, "the sender is helping");
        }
        s.net.borrow_mut().refuse(1, true, false);
        s.complete(&[(1, Some(id)), (0, send)]);
        assert!(buf == msg, "sender first: {sender_first}");
        assert_eq!(s.count(1, 0, CTS), 1, "restarted by the pipeline");
        let later = data(0, 9, 30_000);
        let mut buf = vec![0u8; later.len()];
        let send = s.send(0, 1, 2, &later);
        let id = s.recv(1, Some(0), Some(2), &mut buf);
        s.complete(&[(1, Some(id)), (0, send)]);
        assert!(buf == later);
        assert_eq!((s.count(1, 0, CTS), s.count(1, 0, SHARE)), (2, 1), "later messages pipeline at once");
    }
}

/// A message sent from pieces and received into pieces, by every protocol: the bytes in
/// order, each piece filled in turn.
#[test]
fn gathered_sends_into_scattered_receives() {
    for caps in [shm(), single_only(), records_only()] {
        for len in [300, 9_000, 70_000] {
            let mut s = sim(2, caps);
            let msg = data(0, 5, len);
            let mut src = msg.clone();
            // Pieces of 7, 1000, 7, 1000, ... bytes, sent from out of order addresses.
            let mut send_blocks = Vec::new();
            let mut at = 0;
            for k in 0.. {
                let n = if k % 2 == 0 { 7 } else { 1000 }.min(len - at);
                send_blocks.push((src.as_mut_ptr().wrapping_add(at), n));
                at += n;
                if at == len {
                    break;
                }
            }
            let mut dst = vec![0u8; len + len / 500 + 1];
            let recv_blocks: Vec<Block> = (0..len.div_ceil(500))
                .map(|k| (dst.as_mut_ptr().wrapping_add(k * 501), 500.min(len - k * 500)))
                .collect();
            // SAFETY: `src` and `dst` outlive the requests.
            let send = unsafe { s.ranks[0].isend_blocks(1, 0, 0, 3, send_blocks.into(), false) };
            // SAFETY: as above.
            let id = unsafe { s.ranks[1].irecv_blocks(pattern(Some(0), Some(3)), Some(0), recv_blocks.into()) };
            s.complete(&[(1, Some(id)), (0, send)]);
            let got: Vec<u8> = dst.chunks(501).flat_map(|c| c[..500.min(c.len())].to_vec()).take(len).collect();
            assert!(got == msg, "{len} bytes, single copy: {}", caps.single_copy);
            assert!(dst.chunks(501).all(|c| c.len() < 501 || c[500] == 0), "gaps untouched");
        }
    }
}

/// One post to several ranks: each receives it as an ordinary message, expected or not. A
/// route without multicast, a message too large to be eager, or a peer with sends queued
/// before it make the engine decline (nothing sent), so the caller sends to each.
#[test]
fn multicast_reaches_every_peer_or_declines() {
    let msg = data(0, 1, 3000);
    let send = |s: &mut Sim, peers: &[usize], m: &[u8]| {
        // SAFETY: `m` is readable for the call.
        unsafe { s.ranks[0].multicast(peers, 0, 0, 8, m.as_ptr(), m.len()) }
    };
    let mut s = sim(4, shm());
    let mut bufs = vec![vec![0u8; 3000]; 3];
    let (first, rest) = bufs.split_first_mut().expect("three buffers");
    let mut reqs = vec![(1, Some(s.recv(1, Some(0), Some(8), first)))];
    assert!(send(&mut s, &[1, 2, 3], &msg));
    s.rounds(&[2, 3]);
    for (i, b) in rest.iter_mut().enumerate() {
        reqs.push((i + 2, Some(s.recv(i + 2, Some(0), Some(8), b))));
    }
    s.complete(&reqs);
    assert!(bufs.iter().all(|b| *b == msg));
    assert!(!send(&mut sim(4, records_only()), &[1, 2], &msg), "no multicast on this route");
    let big = data(0, 2, 20_000);
    assert!(!send(&mut s, &[1, 2], &big), "not eager");
    let mut s = sim_with(3, shm(), 1);
    s.send(0, 1, 0, &msg);
    let queued = s.send(0, 1, 0, &msg);
    assert!(queued.is_some(), "the link is full: the second send queues");
    assert!(!send(&mut s, &[1, 2], &msg), "it would overtake the queued send");
}

/// With a link of one record, sends queue behind each other and control records wait for
/// room: nothing overtakes, nothing is lost.
#[test]
fn back_pressure_keeps_the_order() {
    let sizes: Vec<usize> = (0..24).map(|k| [10, 20_000, 300, 0, 70_000][k % 5]).collect();
    let msgs: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(k, &n)| data(0, k, n)).collect();
    let mut s = sim_with(2, records_only(), 1);
    let sends: Vec<_> = msgs.iter().map(|m| (0, s.send(0, 1, 4, m))).collect();
    let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let recvs: Vec<_> = bufs.iter_mut().map(|b| (1, Some(s.recv(1, Some(0), Some(4), b)))).collect();
    s.complete(&[recvs, sends].concat());
    assert!(bufs == msgs);
}

#[test]
fn probe_take_and_cancel() {
    let mut s = sim(2, shm());
    let (small, large) = (data(0, 0, 40), data(0, 1, 50_000));
    s.send(0, 1, 1, &small);
    let send = s.send(0, 1, 2, &large);
    s.run_until(|s| s.ranks[1].iprobe(&pattern(Some(0), Some(2))).is_some());
    let (env, len) = s.ranks[1].iprobe(&pattern(Some(0), None)).unwrap();
    assert_eq!((env.tag, len), (1, 40), "the oldest first");
    // MPI_Mprobe + MPI_Mrecv of the rendezvous message.
    let (env, msg) = s.ranks[1].take(&pattern(None, Some(2))).unwrap();
    let mut buf = vec![0u8; 50_000];
    // SAFETY: `buf` outlives the receive.
    let id = unsafe { s.ranks[1].irecv_taken(env, msg, buf.as_mut_ptr(), buf.len()) };
    s.complete(&[(1, Some(id)), (0, send)]);
    assert!(buf == large);
    // A receive that never matches is cancelled; one that matched is not.
    let mut buf = [0u8; 8];
    let never = s.recv(1, Some(0), Some(77), &mut buf);
    assert!(s.ranks[1].cancel(never));
    assert!(s.ranks[1].finish(never).unwrap().cancelled);
    let mut small_buf = [0u8; 40];
    let id = s.recv(1, Some(0), Some(1), &mut small_buf);
    assert!(!s.ranks[1].cancel(id), "it matched the unexpected message at once");
    assert!(s.ranks[1].finish(id).is_ok() && small_buf[..] == small[..]);
}

/// A cancel racing the rendezvous: before the RTS is polled the receive is still posted and
/// is cancelled (the message waits, unexpected, for a later receive); once the RTS matched it
/// and the CTS (or the single copy) is under way, cancel says no, and the message lands whole
/// even while the CTS is still held on its way to the sender.
#[test]
fn a_cancel_racing_the_cts() {
    for (caps, name) in [(records_only(), "pipeline"), (single_only(), "single")] {
        let len = 30_000;
        let msg = data(0, 4, len);
        // The cancel wins: the RTS is in the link but not polled yet.
        let mut s = sim(2, caps);
        let mut buf = vec![0u8; len];
        let early = s.recv(1, Some(0), Some(3), &mut buf);
        let send = s.send(0, 1, 3, &msg);
        assert!(s.ranks[1].cancel(early), "{name}: not matched yet");
        assert!(s.ranks[1].finish(early).unwrap().cancelled);
        s.rounds(&[1]);
        assert_eq!(s.count(1, 0, CTS) + s.count(1, 0, FIN), 0, "{name}: nothing answered the RTS");
        let later = s.recv(1, Some(0), Some(3), &mut buf);
        s.complete(&[(1, Some(later)), (0, send)]);
        assert!(buf == msg, "{name}: the later receive has it");
        // The match wins: the receiver's answer is held on its way, and cancel says no.
        let mut s = sim(2, caps);
        let mut buf = vec![0u8; len];
        let id = s.recv(1, Some(0), Some(3), &mut buf);
        let send = s.send(0, 1, 3, &msg);
        s.net.borrow_mut().hold(1, 0);
        s.rounds(&[1]);
        assert!(!s.ranks[1].cancel(id), "{name}: matched");
        s.rounds(&[0, 1, 0]);
        assert!(!s.ranks[0].is_done(send.unwrap()), "{name}: the answer is held");
        s.net.borrow_mut().release(1, 0, usize::MAX);
        let out = s.complete(&[(1, Some(id)), (0, send)]);
        let done = out[0].as_ref().unwrap();
        assert!(!done.cancelled && done.bytes == len && buf == msg, "{name}");
    }
}

/// The sender dies while the receiver copies from its memory a segment at a time: the receive
/// fails naming it at the next round, no FIN goes out, and the copy stops.
#[test]
fn a_sender_dying_mid_single_copy_fails_the_receive() {
    let len = 10 * 4096;
    let mut s = sim(2, single_only());
    let msg = data(0, 5, len);
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(0), &mut buf);
    s.send(0, 1, 0, &msg);
    s.rounds(&[1, 1, 1]);
    assert!(!s.ranks[1].is_done(id) && buf[..4096] == msg[..4096], "copying, a segment a round");
    s.net.borrow_mut().kill(0, "killed mid-copy");
    s.rounds(&[1]);
    assert!(
        matches!(s.ranks[1].finish(id), Err(Error::PeerGone { rank: 0, ref reason }) if reason.contains("mid-copy"))
    );
    assert!(s.ranks[1].core.active.is_empty(), "the copy stopped");
    assert_eq!(s.count(1, 0, FIN), 0);
}

/// The receiver dies while the sender pipelines DATA through a full link: the send fails
/// naming it, and nothing more is sent.
#[test]
fn a_receiver_dying_mid_pipeline_fails_the_send() {
    let len = 40 * records_only().max_record;
    let mut s = sim(2, records_only());
    let msg = data(0, 6, len);
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(0), &mut buf);
    let send = s.send(0, 1, 0, &msg).unwrap();
    s.run_until(|s| s.count(0, 1, DATA) >= LINK + 2);
    assert!(!s.ranks[0].is_done(send) && !s.ranks[1].is_done(id));
    s.net.borrow_mut().kill(1, "killed mid-pipeline");
    let before = s.count(0, 1, DATA);
    s.rounds(&[0, 0]);
    assert!(
        matches!(s.ranks[0].finish(send), Err(Error::PeerGone { rank: 1, ref reason }) if reason.contains("mid-pipeline"))
    );
    assert_eq!(s.count(0, 1, DATA), before, "nothing sent after the failure");
}

/// The sender dies mid shared copy, after the receiver opened a claim word and asked it
/// (SHARE) and both ends took pages: the receive fails naming it at the next round, no FIN
/// goes out, the copy stops, and the claim word it held is free again; a shared copy from
/// another rank beside it is untouched. Whether a route reports the death first (`kill`) or
/// the receiver's next read of its memory finds the process gone (`vanish`, ESRCH: before,
/// taken for a refusal, it sealed the word, waited, and sent a CTS to no one).
#[test]
fn a_sender_dying_mid_shared_copy_fails_the_receive() {
    for noticed in [true, false] {
        let len = 24 * claims::PAGE;
        let mut s = sim(3, shm());
        let (dying, living) = (data(0, 1, len), data(1, 1, len));
        let (mut from_dying, mut from_living) = (vec![0u8; len], vec![0u8; len]);
        let a = s.recv(2, Some(0), Some(0), &mut from_dying);
        let b = s.recv(2, Some(1), Some(0), &mut from_living);
        s.send(0, 2, 0, &dying);
        let send_b = s.send(1, 2, 0, &living);
        // Rank 2 matches both and asks both; each sender copies a chunk from the back.
        s.rounds(&[2, 2, 0, 1, 0, 1, 2]);
        assert!(matches!(s.ranks[2].core.reqs.get(a).state, State::RecvShared { copy, .. } if copy.slot().is_some()));
        assert_eq!(s.count(2, 0, SHARE), 1);
        assert!(s.ranks[0].core.active.len() == 1, "rank 0 helps");
        match noticed {
            true => s.net.borrow_mut().kill(0, "killed mid shared copy"),
            false => s.net.borrow_mut().vanish(0),
        }
        s.rounds(&[2]);
        assert!(s.ranks[2].is_done(a), "noticed by a route: {noticed}");
        let why = if noticed { "mid shared copy" } else { "process is gone" };
        match s.ranks[2].finish(a) {
            Err(Error::PeerGone { rank: 0, reason }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected rank 0 gone, got {other:?}"),
        }
        assert_eq!(s.count(2, 0, FIN) + s.count(2, 0, CTS), 0, "nothing to the dead sender");
        assert_eq!(s.ranks[2].core.claims_busy[0], 0, "the dead sender's claim word is free again");
        s.complete(&[(2, Some(b)), (1, send_b)]);
        assert!(from_living == living, "the copy beside it arrives whole");
        assert_eq!(s.ranks[2].core.claims_busy, [0, 0, 0]);
        assert!(s.ranks[2].core.single_copy[1], "single copy from the living rank goes on");
    }
}

/// The receiver dies while the sender writes pages of a shared copy into its buffer: the send
/// fails naming it at the next round, the sender stops writing and sends no PUSHED, and it
/// still helps the other ranks. Whether a route reports the death first or the next write
/// finds the process gone (ESRCH: before, taken for a refused write, the sender gave up
/// helping that rank for good, sent PUSHED to no one, and waited for a FIN).
#[test]
fn a_receiver_dying_mid_shared_copy_fails_the_send() {
    for noticed in [true, false] {
        let len = 24 * claims::PAGE;
        let mut s = sim(3, shm());
        let msg = data(0, 3, len);
        let mut buf = vec![0u8; len];
        s.recv(1, Some(0), Some(0), &mut buf);
        let send = s.send(0, 1, 0, &msg).unwrap();
        s.rounds(&[1, 0, 0]);
        assert!(matches!(s.ranks[0].core.reqs.get(send).state, State::SendShared { .. }), "helping");
        match noticed {
            true => s.net.borrow_mut().kill(1, "killed mid shared copy"),
            false => s.net.borrow_mut().vanish(1),
        }
        s.rounds(&[0, 0]);
        assert!(s.ranks[0].is_done(send), "noticed by a route: {noticed}");
        let why = if noticed { "mid shared copy" } else { "process is gone" };
        match s.ranks[0].finish(send) {
            Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected rank 1 gone, got {other:?}"),
        }
        assert!(s.ranks[0].core.active.is_empty(), "the copy stopped");
        assert_eq!(s.count(0, 1, PUSHED), 0);
        assert!(!s.ranks[0].core.push_refused[1], "a dead receiver is not a refused write");
        rank_0_still_helps_rank_2(&mut s, &msg);
    }
}

/// A receiver fails a live sender for a bad record (a PUSHED of 3 bytes) in the middle of a
/// shared copy. Closing the sender's route closes the claim words of its copies into this rank
/// too: the sender takes no more pages of the buffer the failed receive gave back; it finds
/// the word closed and fails the receiver (no FIN will come) instead of waiting for one; and
/// it still helps other ranks. Before, the word stayed open: the sender claimed and wrote
/// every page left into the given-back buffer, sent PUSHED to no one and waited for ever.
#[test]
fn a_receiver_failing_a_live_sender_closes_its_shared_copies() {
    let len = 24 * claims::PAGE;
    let mut s = sim(3, shm());
    let msg = data(0, 5, len);
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(0), &mut buf);
    let send = s.send(0, 1, 0, &msg).unwrap();
    s.rounds(&[1, 0, 0]);
    assert!(matches!(s.ranks[0].core.reqs.get(send).state, State::SendShared { .. }), "helping");
    let bad = Header { kind: PUSHED, context: 0, source: 0, tag: 0, aux: id as u64 };
    s.net.borrow_mut().inject(0, 1, bad, &[1, 2, 3]);
    s.rounds(&[1]);
    match s.ranks[1].finish(id) {
        Err(Error::PeerGone { rank: 0, reason }) => assert!(reason.contains("broke the message protocol"), "{reason}"),
        other => panic!("expected rank 0 failed, got {other:?}"),
    }
    let given_back = buf.clone();
    for _ in 0..100 {
        s.rounds(&[0]);
    }
    assert!(buf == given_back, "the sender wrote into a buffer its failed receive gave back");
    assert!(s.ranks[0].is_done(send), "the sender still waits for a FIN that cannot come");
    match s.ranks[0].finish(send) {
        Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains("closed"), "{reason}"),
        other => panic!("expected rank 1 failed, got {other:?}"),
    }
    assert!(s.ranks[0].core.active.is_empty(), "the copy stopped");
    assert_eq!(s.count(0, 1, PUSHED), 0, "nothing written, nothing to say");
    rank_0_still_helps_rank_2(&mut s, &msg);
}

/// A receiver that fails a live sender before it answers its RTS (here for a record of no
/// known kind ahead of it) closes the pair; the sender, whose send waits only for a FIN, is not
/// told by any record. Its wait looks for closed ends before it sleeps
/// (`Engine::look_for_closed`): the send fails naming the receiver, and sends to others go on.
/// Before: the send waited for ever, whatever the rounds.
#[test]
fn a_send_waiting_for_a_fin_fails_when_its_receiver_closes_the_pair() {
    for caps in [shm(), single_only()] {
        let len = 24 * claims::PAGE;
        let mut s = sim(3, caps);
        let msg = data(0, 6, len);
        let bad = Header { kind: 99, context: 0, source: 0, tag: 0, aux: 0 };
        s.net.borrow_mut().inject(0, 1, bad, &[]);
        let send = s.send(0, 1, 0, &msg).unwrap();
        let mut buf = vec![0u8; len];
        let id = s.recv(1, Some(0), Some(0), &mut buf);
        for _ in 0..100 {
            s.rounds(&[1, 0]);
        }
        assert!(matches!(s.ranks[1].finish(id), Err(Error::PeerGone { rank: 0, .. })), "rank 1 failed rank 0");
        assert_eq!(s.count(1, 0, FIN) + s.count(1, 0, CTS) + s.count(1, 0, SHARE), 0, "no answer to the RTS");
        assert!(!s.ranks[0].is_done(send), "no record tells the sender");
        assert!(s.ranks[0].look_for_closed(), "the look before a sleep finds the closed pair");
        assert!(!s.ranks[0].look_for_closed(), "once");
        assert!(s.ranks[0].is_done(send), "the send still waits for a FIN that cannot come");
        match s.ranks[0].finish(send) {
            Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains("closed its end"), "{reason}"),
            other => panic!("expected rank 1 failed, got {other:?}"),
        }
        let mut buf2 = vec![0u8; len];
        let id2 = s.recv(2, Some(0), Some(0), &mut buf2);
        let send2 = s.send(0, 2, 0, &msg);
        let out = s.complete(&[(2, Some(id2)), (0, send2)]);
        assert!(out.iter().all(Result::is_ok) && buf2 == msg, "rank 2 still gets rank 0's messages: {out:?}");
    }
}

/// A receiver that closes the pair after its FIN: the sender reads the FIN first (its send
/// completes), and only then learns of the close.
#[test]
fn a_fin_sent_before_the_close_completes_the_send() {
    let len = 24 * claims::PAGE;
    let mut s = sim(2, single_only());
    let msg = data(0, 7, len);
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(0), &mut buf);
    let send = s.send(0, 1, 0, &msg).unwrap();
    s.net.borrow_mut().hold(1, 0);
    s.complete(&[(1, Some(id))]);
    assert!(buf == msg);
    s.ranks[1].chan.close(0, "test");
    assert!(!s.ranks[0].look_for_closed(), "the FIN waits on the link: not reported yet");
    s.net.borrow_mut().release(1, 0, usize::MAX);
    s.rounds(&[0]);
    assert!(s.ranks[0].finish(send).is_ok(), "the FIN completed the send");
    assert!(s.ranks[0].look_for_closed(), "then the close");
}

/// After rank 0's copy to rank 1 ended in a failure, rank 2 still gets its help: a shared copy
/// of `msg` from rank 0 arrives whole, rank 0 having written pages of it (PUSHED).
fn rank_0_still_helps_rank_2(s: &mut Sim, msg: &[u8]) {
    let mut buf = vec![0u8; msg.len()];
    let id2 = s.recv(2, Some(0), Some(0), &mut buf);
    let send2 = s.send(0, 2, 0, msg);
    s.rounds(&[2, 0, 0]);
    s.complete(&[(2, Some(id2)), (0, send2)]);
    assert!(buf == msg);
    assert_eq!(s.count(0, 2, PUSHED), 1, "the sender helped rank 2");
}

/// A peer whose memory no copy finds from the start (ESRCH: another pid namespace, as in a
/// container) is alive: its messages come by the pipeline, and nothing fails.
#[test]
fn a_peer_no_copy_can_find_is_not_dead() {
    let len = 24 * claims::PAGE;
    let mut s = sim(2, shm());
    s.net.borrow_mut().hide(0);
    let msg = data(0, 2, len);
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(0), &mut buf);
    let send = s.send(0, 1, 0, &msg);
    let out = s.complete(&[(1, Some(id)), (0, send)]);
    assert!(out.iter().all(Result::is_ok), "{out:?}");
    assert!(buf == msg);
    assert_eq!(s.count(1, 0, CTS), 1, "restarted by the pipeline");
    assert!(s.ranks[1].core.failed[0].is_none());
}

/// A cancel racing the SHARE: before the RTS is polled the cancel wins (nothing answers the
/// RTS, a later receive gets the message by a shared copy); once the receive has matched and
/// its SHARE is on its way, cancel says no and the copy completes whole.
#[test]
fn a_cancel_racing_the_share() {
    let len = 16 * claims::PAGE + 7;
    let msg = data(0, 8, len);
    let mut s = sim(2, shm());
    let mut buf = vec![0u8; len];
    let early = s.recv(1, Some(0), Some(3), &mut buf);
    let send = s.send(0, 1, 3, &msg);
    assert!(s.ranks[1].cancel(early));
    assert!(s.ranks[1].finish(early).unwrap().cancelled);
    s.rounds(&[1, 1]);
    assert_eq!(s.count(1, 0, SHARE) + s.count(1, 0, FIN) + s.count(1, 0, CTS), 0, "nothing answered the RTS");
    let later = s.recv(1, Some(0), Some(3), &mut buf);
    s.complete(&[(1, Some(later)), (0, send)]);
    assert!(buf == msg);
    assert_eq!(s.count(1, 0, SHARE), 1, "the later receive copied it shared");
    // The match wins: the SHARE is held on its way; the cancel is refused.
    let mut s = sim(2, shm());
    let mut buf = vec![0u8; len];
    let id = s.recv(1, Some(0), Some(3), &mut buf);
    let send = s.send(0, 1, 3, &msg);
    s.net.borrow_mut().hold(1, 0);
    s.rounds(&[1, 1]);
    assert_eq!(s.count(1, 0, SHARE), 1, "asked");
    assert!(!s.ranks[1].cancel(id), "matched: too late to cancel");
    s.rounds(&[0, 1, 0, 1]);
    assert!(!s.ranks[0].is_done(send.unwrap()), "the FIN is held");
    s.net.borrow_mut().release(1, 0, usize::MAX);
    let out = s.complete(&[(1, Some(id)), (0, send)]);
    let done = out[0].as_ref().unwrap();
    assert!(!done.cancelled && done.bytes == len && buf == msg);
    assert_eq!(s.ranks[1].core.claims_busy[0], 0);
}

/// A peer that dies mid-transfer fails exactly what depends on it, naming it: the receive of
/// its pipelined message, a send waiting for its FIN, a wildcard receive; later operations
/// with it fail at once; the other ranks go on.
#[test]
fn a_peer_dying_mid_transfer_fails_what_depends_on_it() {
    let mut s = sim(3, records_only());
    let msg = data(1, 0, 100_000);
    let mut buf = vec![0u8; 100_000];
    let recv = s.recv(0, Some(1), Some(1), &mut buf);
    s.send(1, 0, 1, &msg);
    let to_dying = data(0, 0, 50_000);
    let waiting = s.send(0, 1, 2, &to_dying);
    let mut any = [0u8; 4];
    let wildcard = s.recv(0, None, Some(3), &mut any);
    // Some DATA arrives, then rank 1 dies.
    s.run_until(|s| s.count(1, 0, DATA) >= 2);
    assert!(!s.ranks[0].is_done(recv));
    s.net.borrow_mut().kill(1, "killed by the test");
    s.rounds(&[0]);
    for id in [recv, waiting.unwrap(), wildcard] {
        assert!(s.ranks[0].is_done(id));
        match s.ranks[0].finish(id) {
            Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains("killed by the test")),
            other => panic!("expected rank 1 gone, got {other:?}"),
        }
    }
    let later = s.send(0, 1, 5, &to_dying).expect("a failed request");
    assert!(matches!(s.ranks[0].finish(later), Err(Error::PeerGone { rank: 1, .. })));
    // Rank 2 is untouched.
    let fine = data(2, 0, 30_000);
    let mut buf = vec![0u8; 30_000];
    let id = s.recv(0, Some(2), None, &mut buf);
    let send = s.send(2, 0, 0, &fine);
    s.complete(&[(0, Some(id)), (2, send)]);
    assert!(buf == fine);
}

/// A peer that joined after start (a spawned child, a connected job) leaving is normal: it
/// fails the receives that name it, not a wildcard receive, which still matches a message from
/// another rank afterwards.
#[test]
fn a_joined_peer_leaving_spares_wildcard_receives() {
    let mut s = sim(3, records_only());
    s.ranks[0].joined_from(2);
    let mut named = [0u8; 4];
    let from_joined = s.recv(0, Some(2), Some(1), &mut named);
    let mut any = [0u8; 4];
    let wildcard = s.recv(0, None, Some(3), &mut any);
    s.net.borrow_mut().kill(2, "it finalized");
    s.rounds(&[0]);
    assert!(matches!(s.ranks[0].finish(from_joined), Err(Error::PeerGone { rank: 2, .. })));
    assert!(!s.ranks[0].is_done(wildcard), "a wildcard receive outlives a joined peer's leaving");
    let msg = data(1, 0, 4);
    let send = s.send(1, 0, 3, &msg);
    s.complete(&[(0, Some(wildcard)), (1, send)]);
    assert!(any[..] == msg[..]);
}

/// Any mix of messages among three ranks, on any route, under any schedule of progress rounds
/// and held links: each (sender, receiver, tag) stream arrives whole and in order.
mod property {
    use super::*;
    use proptest::prelude::*;

    fn caps_of(k: u8) -> Caps {
        [shm(), single_only(), records_only()][k as usize % 3]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn streams_arrive_whole_and_in_order(
            route in 0u8..3,
            capacity in 1usize..4,
            msgs in prop::collection::vec((0usize..3, 0usize..3, 0i32..2, 0usize..40_000, any::<bool>()), 1..14),
            schedule in prop::collection::vec(0usize..3, 1..30),
            held in prop::collection::vec((0usize..3, 0usize..3, 0usize..12), 0..3),
        ) {
            let mut s = sim_with(3, caps_of(route), capacity);
            for &(from, to, _) in &held {
                s.net.borrow_mut().hold(from, to);
            }
            let msgs: Vec<_> = msgs.into_iter().filter(|m| m.0 != m.1).collect();
            let payloads: Vec<Vec<u8>> = msgs.iter().enumerate().map(|(k, m)| data(m.0, k, m.3)).collect();
            let mut bufs: Vec<Vec<u8>> = msgs.iter().map(|m| vec![0u8; m.3]).collect();
            let mut reqs = Vec::new();
            // Receives posted early go first, in message order per stream; the rest after the
            // sends and some rounds (unexpected, or rendezvous offers waiting).
            // Early receives are a prefix of each stream, so its messages match in order.
            let mut late = Vec::new();
            let mut stream_late = std::collections::HashSet::new();
            for (k, (m, buf)) in msgs.iter().zip(bufs.iter_mut()).enumerate() {
                if !m.4 {
                    stream_late.insert((m.0, m.1, m.2));
                }
                if !stream_late.contains(&(m.0, m.1, m.2)) {
                    reqs.push((m.1, Some(s.recv(m.1, Some(m.0), Some(m.2), buf))));
                } else {
                    late.push(k);
                }
            }
            for (k, m) in msgs.iter().enumerate() {
                reqs.push((m.0, s.send(m.0, m.1, m.2, &payloads[k])));
                s.rounds(&schedule[..k.min(schedule.len())]);
            }
            s.rounds(&schedule);
            for &(from, to, k) in &held {
                s.net.borrow_mut().release(from, to, k);
            }
            s.rounds(&schedule);
            for (from, to, _) in held {
                s.net.borrow_mut().release(from, to, usize::MAX);
            }
            for k in late {
                let m = msgs[k];
                let id = s.recv(m.1, Some(m.0), Some(m.2), &mut bufs[k]);
                reqs.push((m.1, Some(id)));
            }
            for out in s.complete(&reqs) {
                prop_assert!(out.is_ok(), "{out:?}");
            }
            prop_assert!(bufs == payloads);
        }

        /// A rank dies mid-traffic (noticed by a route, or first found gone by a copy):
        /// against the model, every request between the two others completes with its bytes,
        /// and every request of a survivor with the dead rank either had completed (whole) or
        /// fails naming it; nothing hangs.
        #[test]
        fn a_dying_rank_fails_exactly_what_depends_on_it(
            route in 0u8..3,
            msgs in prop::collection::vec((0usize..3, 0usize..3, 0usize..60_000), 1..10),
            schedule in prop::collection::vec(0usize..3, 0..20),
            dead in 0usize..3,
            noticed in any::<bool>(),
        ) {
            let mut s = sim(3, caps_of(route));
            let msgs: Vec<_> = msgs.into_iter().filter(|m| m.0 != m.1).collect();
            let payloads: Vec<Vec<u8>> = msgs.iter().enumerate().map(|(k, m)| data(m.0, k, m.2)).collect();
            let mut bufs: Vec<Vec<u8>> = msgs.iter().map(|m| vec![0u8; m.2]).collect();
            // (rank, request, message) of every receive, then every send.
            let mut reqs = Vec::new();
            for (k, (m, buf)) in msgs.iter().zip(bufs.iter_mut()).enumerate() {
                reqs.push((m.1, Some(s.recv(m.1, Some(m.0), Some(0), buf)), k));
            }
            for (k, m) in msgs.iter().enumerate() {
                reqs.push((m.0, s.send(m.0, m.1, 0, &payloads[k]), k));
            }
            s.rounds(&schedule);
            if noticed {
                s.net.borrow_mut().kill(dead, "killed by the test");
            } else {
                // Found gone by copies first; a route notices later.
                s.net.borrow_mut().vanish(dead);
                let alive: Vec<usize> = schedule.iter().copied().filter(|&r| r != dead).collect();
                s.rounds(&alive);
                s.net.borrow_mut().kill(dead, "killed by the test");
            }
            let alive: Vec<usize> = (0..3).filter(|&r| r != dead).collect();
            let mine: Vec<_> = reqs.iter().filter(|r| r.0 != dead).copied().collect();
            let mut rounds = 0;
            while !mine.iter().all(|&(r, id, _)| id.is_none_or(|id| s.ranks[r].is_done(id))) {
                prop_assert!(rounds < 100_000, "a survivor's request hangs");
                s.rounds(&alive);
                rounds += 1;
            }
            for (r, id, k) in mine {
                let Some(id) = id else { continue };
                let m = msgs[k];
                let out = s.ranks[r].finish(id);
                let involved = m.0 == dead || m.1 == dead;
                match out {
                    Ok(_) => {
                        if r == m.1 {
                            prop_assert!(bufs[k] == payloads[k], "message {} received, not whole", k);
                        }
                    }
                    Err(Error::PeerGone { rank, .. }) => {
                        prop_assert!(involved && rank == dead, "message {} failed naming {}", k, rank);
                    }
                    Err(e) => prop_assert!(false, "message {}: {:?}", k, e),
                }
            }
        }
    }
}

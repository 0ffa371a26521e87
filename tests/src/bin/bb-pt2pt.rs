//! Rank program for the point-to-point tests: `bbrun -n N bb-pt2pt <case>`.
//! Each case checks its own results and panics (non-zero exit) on any mismatch; rank 0 prints
//! one `ok <case>` line at the end.

use billboard::engine::traffic::WaitCalls;
use billboard::{wait_all, Communicator, Error, SendMode, Source, TagMatch, ANY_SOURCE, ANY_TAG};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Deterministic content for message `seq` of `len` bytes from `src`.
fn pattern(src: usize, seq: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ seq.wrapping_mul(7) ^ src.wrapping_mul(13)) as u8).collect()
}

/// Sizes that cross every protocol: inline, slot, rendezvous, odd lengths.
fn sizes(max: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 7, 8, 24, 25, 63, 64, 65, 1000, 4095, 8192, 8193, 65535, 65536, 65537, 100_000];
    let mut p = 1 << 17;
    while p <= max {
        v.push(p);
        v.push(p + 3);
        p <<= 1;
    }
    v.retain(|&s| s <= max);
    v
}

/// Every rank sends a stream of mixed-size messages to the next rank; the receiver checks
/// they arrive in order (no overtaking within one sender and context) with intact content.
fn order(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let to = (me + 1) % n;
    let from = (me + n - 1) % n;
    let lens = [0usize, 5, 40, 3000, 20_000, 200_000, 17];
    let count = 300;
    let outgoing: Vec<Vec<u8>> = (0..count).map(|k| pattern(me, k, lens[k % lens.len()])).collect();
    w.scope(|s| -> Res {
        let mut sends = Vec::new();
        for (k, m) in outgoing.iter().enumerate() {
            sends.push(s.isend(&m[..], to, (k % 5) as i32)?);
        }
        let mut buf = vec![0u8; 200_000];
        for k in 0..count {
            // ANY_TAG: order must follow posting, not tags.
            let st = w.recv(&mut buf[..], from, ANY_TAG)?;
            let want = pattern(from, k, lens[k % lens.len()]);
            assert_eq!(st.tag(), (k % 5) as i32, "message {k} from {from} overtaken");
            assert_eq!(st.bytes(), want.len());
            assert!(buf[..st.bytes()] == want[..], "content of message {k} from {from}");
        }
        wait_all(sends)?;
        Ok(())
    })
}

/// Rank 0 receives from ANY_SOURCE with specific and wildcard tags; per sender the order holds.
fn wildcards(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let per = 20;
    if me != 0 {
        for k in 0..per {
            w.send(&[me as u32, k as u32][..], 0, 100 + (k % 3) as i32)?;
        }
        // After rank 0's go: tags it will receive out of order, through the unexpected queue.
        let mut go = 0u8;
        w.recv(&mut go, 0, 99)?;
        w.send(&1u8, 0, 1)?;
        w.send(&2u8, 0, 2)?;
        w.send(&3u8, 0, 3)?;
        return Ok(());
    }
    let mut next = vec![0u32; n];
    for _ in 0..per * (n - 1) {
        let mut m = [0u32; 2];
        let st = w.recv(&mut m[..], ANY_SOURCE, ANY_TAG)?;
        let src = st.source();
        assert_eq!(m[0] as usize, src, "status source matches the sender's own rank");
        assert_eq!(m[1], next[src], "from rank {src}: out of order");
        assert_eq!(st.tag(), 100 + (m[1] % 3) as i32);
        assert_eq!(st.count::<u32>()?, 2);
        next[src] += 1;
    }
    for src in 1..n {
        w.send(&0u8, src, 99)?;
    }
    for src in 1..n {
        for tag in [3, 1, 2] {
            let mut b = 0u8;
            let st = w.recv(&mut b, src, tag)?;
            assert_eq!((b as i32, st.source(), st.tag()), (tag, src, tag));
        }
    }
    Ok(())
}

/// Pairs (0,1), (2,3)... exchange every size both ways with content checks.
fn all_sizes(w: &Communicator, max: usize) -> Res {
    let me = w.rank();
    let peer = me ^ 1;
    if peer >= w.size() {
        return Ok(());
    }
    let mut buf = vec![0u8; max + 3];
    for (k, &len) in sizes(max).iter().enumerate() {
        let out = pattern(me, k, len);
        let st = w.sendrecv(&out[..], peer, 9, &mut buf[..], peer, 9)?;
        assert_eq!(st.bytes(), len, "size {len}");
        let want = pattern(peer, k, len);
        assert!(buf[..len] == want[..], "content mismatch at size {len}");
    }
    Ok(())
}

/// Many outstanding requests at once, completed by wait_all in an order unrelated to posting.
fn many(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let k = 200;
    let mut inbox = vec![[0u64; 4]; k * n];
    let outbox: Vec<[u64; 4]> = (0..k * n).map(|i| [me as u64, i as u64, 7, 9]).collect();
    let statuses = w.scope(|s| -> Result<_, Error> {
        let mut recvs = Vec::new();
        for (i, slot) in inbox.iter_mut().enumerate() {
            recvs.push(s.irecv(slot, i % n, (i / n) as i32)?);
        }
        let mut sends = Vec::new();
        for (i, m) in outbox.iter().enumerate() {
            sends.push(s.isend(m, i % n, (i / n) as i32)?);
        }
        let statuses = wait_all(recvs)?;
        wait_all(sends)?;
        Ok(statuses)
    })?;
    for (i, (m, st)) in inbox.iter().zip(statuses).enumerate() {
        assert_eq!(st.source(), i % n);
        assert_eq!(m[0] as usize, i % n);
        assert_eq!(m[1] as usize / n, i / n);
    }
    Ok(())
}

/// Requests let go as raw ids (as the MPI library's handles hold them) and taken back: waited
/// for together, with a stale id among them reported, not waited on; a receive nobody sends to
/// and a large send never taken back are finished by finalize (the caller's).
fn raw(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let k = 64;
    let mut inbox = vec![0u64; k];
    let outbox: Vec<u64> = (0..k as u64).map(|i| i * 1000 + me as u64).collect();
    let mut ids = Vec::new();
    let (tag, from) = (|i: usize| TagMatch::Tag(i as i32), Source::Rank(left));
    for (i, slot) in inbox.iter_mut().enumerate() {
        // SAFETY: `inbox` outlives every request: all are finished by `wait_each_raw` below.
        ids.push(unsafe { w.irecv_raw((slot as *mut u64).cast(), 8, from, tag(i)) }?.into_raw());
    }
    for (i, m) in outbox.iter().enumerate() {
        // SAFETY: as above, for `outbox`.
        ids.push(unsafe { w.isend_raw((m as *const u64).cast(), 8, right, i as i32, SendMode::Standard) }?.into_raw());
    }
    assert!(ids[..k].iter().all(Option::is_some), "a receive is never finished as it starts");
    // Taken back and let go again: still the same operation.
    let first = ids[0].unwrap();
    // SAFETY: `first` was let go above and nothing else holds it; the buffers outlive it.
    let again = unsafe { w.adopt_request(first) }.expect("in flight");
    assert_eq!(again.into_raw(), Some(first));
    let mut statuses = vec![None; 2 * k];
    // SAFETY: each id was let go above and is finished here once; the buffers outlive the call.
    unsafe { w.wait_each_raw(&ids, |i, outcome| statuses[i] = Some(outcome.map(|s| (s.source(), s.tag())).ok())) };
    for i in 0..k {
        assert_eq!(statuses[i], Some(Some((left, i as i32))), "receive {i}");
        assert_eq!(inbox[i], i as u64 * 1000 + left as u64, "payload {i}");
        assert!(matches!(statuses[k + i], Some(Some(_))), "send {i} failed");
    }
    // Finished now: the id is stale, and taking it back or waiting on it says so at once.
    assert!(!w.request_in_flight(first));
    // SAFETY: a stale id is refused, not adopted.
    assert!(unsafe { w.adopt_request(first) }.is_none());
    let mut stale = None;
    // SAFETY: as above; `first` is not in flight, so nothing is finished twice.
    unsafe { w.wait_each_raw(&[Some(first)], |_, outcome| stale = Some(outcome)) };
    assert!(matches!(stale, Some(Err(Error::StaleRequest { id })) if id == first), "{stale:?}");
    // Let go and never taken back: finalize cancels the receive and waits for the send, whose
    // receiver takes it with a blocking receive.
    let never: &'static mut [u8] = Box::leak(vec![0u8; 8].into_boxed_slice());
    // SAFETY: leaked buffers live for ever.
    let _ = unsafe { w.irecv(never, left, 77) }?.into_raw();
    let big: &'static [u8] = Box::leak(pattern(me, 0, 1 << 20).into_boxed_slice());
    // SAFETY: as above.
    let _ = unsafe { w.isend(big, right, 78) }?.into_raw();
    let mut got = vec![0u8; 1 << 20];
    w.recv(&mut got[..], left, 78)?;
    assert!(got == pattern(left, 0, 1 << 20), "large message from {left} differs");
    Ok(())
}

/// A message longer than the buffer is an error that names source, tag and sizes; traffic
/// afterwards is unharmed. Both for an eager and for a rendezvous message.
fn truncate(w: &Communicator) -> Res {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 0 {
        for len in [100usize, 1 << 20] {
            w.send(&vec![1u8; len][..], 1, 4)?;
            w.send(&[2u8; 3][..], 1, 5)?;
        }
    } else {
        for (len, cap) in [(100usize, 10usize), (1 << 20, 1 << 19)] {
            let mut small = vec![0u8; cap];
            match w.recv(&mut small[..], 0, 4) {
                Err(Error::Truncated { source, tag, message_bytes, buffer_bytes }) => {
                    assert_eq!((source, tag, message_bytes, buffer_bytes), (0, 4, len, cap));
                    assert!(small.iter().all(|&b| b == 1), "the buffer holds the message's prefix");
                }
                other => panic!("expected truncation, got {other:?}"),
            }
            let mut b = [0u8; 3];
            w.recv(&mut b[..], 0, 5)?;
            assert_eq!(b, [2; 3]);
        }
        let e = w.send(&0u8, w.size(), 0).unwrap_err();
        assert!(e.to_string().contains(&format!("rank {}", w.size())), "{e}");
        let e = w.send(&0u8, 0, -3).unwrap_err();
        assert!(e.to_string().contains("-3"), "{e}");
    }
    Ok(())
}

/// Blocking receives take a shorter way when no other receive could match first; matching must
/// stay exactly MPI's around it: an earlier posted receive wins, unexpected messages are taken
/// oldest first, large messages and several threads still work.
fn blocking(w: &Communicator) -> Res {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    let big = pattern(0, 9, 300_000);
    if w.rank() == 0 {
        // (1) Two messages for an Irecv posted before a blocking receive that accepts both.
        w.send(&[1u8][..], 1, 5)?;
        w.send(&[2u8][..], 1, 6)?;
        // (2) Two messages the receiver takes in reverse order, one of them unexpected.
        w.send(&[3u8][..], 1, 1)?;
        w.send(&[4u8][..], 1, 2)?;
        // (3) A rendezvous message into a blocking receive, then a small one.
        w.send(&big[..], 1, 7)?;
        w.send(&[5u8][..], 1, 8)?;
        // (4) Two threads on the receiver, each with its own tag, interleaved.
        for k in 0..200u32 {
            w.send(&k.to_ne_bytes()[..], 1, 20 + (k % 2) as i32)?;
        }
        let mut done = 0u8;
        w.recv(&mut done, 1, 99)?;
    } else {
        let mut first = [0u8];
        w.scope(|s| -> Res {
            let req = s.irecv(&mut first[..], 0, 5)?;
            let mut second = [0u8];
            let st = w.recv(&mut second[..], 0, ANY_TAG)?;
            assert_eq!((st.tag(), second[0]), (6, 2), "the posted Irecv takes tag 5 first");
            req.wait()?;
            Ok(())
        })?;
        assert_eq!(first[0], 1);
        let mut b = [0u8];
        w.recv(&mut b[..], 0, 2)?;
        assert_eq!(b[0], 4, "tag 2 skips the unexpected tag 1");
        w.recv(&mut b[..], 0, ANY_TAG)?;
        assert_eq!(b[0], 3, "the unexpected tag 1 is received next");
        let mut got = vec![0u8; big.len()];
        let st = w.recv(&mut got[..], 0, 7)?;
        assert_eq!(st.bytes(), big.len());
        assert!(got == big, "rendezvous content");
        w.recv(&mut b[..], 0, 8)?;
        assert_eq!(b[0], 5);
        std::thread::scope(|s| -> Res {
            let threads: Vec<_> = (0..2)
                .map(|t| {
                    s.spawn(move || -> Result<(), Error> {
                        for k in 0..100u32 {
                            let mut v = [0u8; 4];
                            let st = w.recv(&mut v[..], 0, 20 + t)?;
                            assert_eq!(st.tag(), 20 + t);
                            assert_eq!(u32::from_ne_bytes(v), 2 * k + t as u32, "thread {t}, message {k}");
                        }
                        Ok(())
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("receiver thread")?;
            }
            Ok(())
        })?;
        w.send(&1u8, 0, 99)?;
    }
    Ok(())
}

/// dup and split make communicators whose traffic never matches another's.
fn comms(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let d = w.dup()?;
    assert_eq!((d.rank(), d.size()), (me, n));
    let half = w.split(Some((me % 2) as u32), -(me as i32))?.expect("every rank has a color");
    let expect_size = (n + 1 - me % 2) / 2;
    assert_eq!(half.size(), expect_size);
    // key = -rank: reversed order inside each half.
    assert_eq!(half.rank(), expect_size - 1 - me / 2);
    assert!(w.split(None, 0)?.is_none());
    if n >= 2 {
        let to = (me + 1) % n;
        let from = (me + n - 1) % n;
        // Same tag, same peers, three communicators: each receive gets its own.
        let r_world = w.irecv_owned(from)?;
        let r_dup = d.irecv_owned(from)?;
        d.send(&2u32, to, 0)?;
        w.send(&1u32, to, 0)?;
        assert_eq!(r_dup.wait()?, 2, "dup traffic stays on dup");
        assert_eq!(r_world.wait()?, 1, "world traffic stays on world");
        let hs = half.size();
        let hr = half.rank();
        let v = half.sendrecv_u32(hr as u32, (hr + 1) % hs, (hr + hs - 1) % hs)?;
        assert_eq!(v as usize, (hr + hs - 1) % hs);
    }
    half.barrier()?;
    d.barrier()?;
    Ok(())
}

/// A synchronous send does not complete before its receive is posted, whatever its size.
fn ssend(w: &Communicator) -> Res {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    for len in [0usize, 8, 100_000] {
        if w.rank() == 0 {
            let data = vec![3u8; len];
            w.scope(|s| -> Res {
                let mut r = s.issend(&data[..], 1, 5)?;
                for _ in 0..2000 {
                    assert!(r.test()?.is_none(), "a {len}-byte ssend completed before its receive was posted");
                }
                w.send(&0u8, 1, 6)?;
                r.wait()?;
                Ok(())
            })?;
            w.ssend(&data[..], 1, 7)?;
        } else {
            let mut go = 0u8;
            w.recv(&mut go, 0, 6)?;
            let mut b = vec![0u8; len];
            assert_eq!(w.recv(&mut b[..], 0, 5)?.bytes(), len);
            assert_eq!(w.recv(&mut b[..], 0, 7)?.bytes(), len);
            assert!(b.iter().all(|&x| x == 3));
        }
    }
    Ok(())
}

/// A blocking send of a large message returns once its receive has the data, even if the
/// receiver then computes for a long time without calling the library: the receiver's last
/// word on it (the FIN of a single copy) goes out before its receive returns.
fn prompt(w: &Communicator) -> Res {
    const QUIET: std::time::Duration = std::time::Duration::from_secs(3);
    if w.size() < 2 || w.rank() > 1 {
        return Ok(w.barrier()?);
    }
    let len = 4 << 20;
    if w.rank() == 0 {
        let data = vec![7u8; len];
        let start = std::time::Instant::now();
        w.send(&data[..], 1, 3)?;
        let took = start.elapsed();
        assert!(took < QUIET / 2, "a {len}-byte send waited {took:?}, until its receiver called in again");
    } else {
        let mut b = vec![0u8; len];
        assert_eq!(w.recv(&mut b[..], 0, 3)?.bytes(), len);
        assert!(b.iter().all(|&x| x == 7));
        std::thread::sleep(QUIET);
    }
    Ok(w.barrier()?)
}

/// Large contiguous messages, which both ends copy at once (shared copies): every rank sends
/// more to every other rank at once than a pair has claim words, at lengths off page
/// boundaries, in both directions at the same time. Then a sender that computes after posting:
/// its receiver must copy alone, not wait for it.
fn shared(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let lens: Vec<usize> = (0..24).map(|k| (64 << 10) + k * 20_011).collect();
    let peers: Vec<usize> = (0..n).filter(|&p| p != me).collect();
    let mut inbox: Vec<Vec<u8>> = peers.iter().flat_map(|_| lens.iter().map(|&l| vec![0u8; l])).collect();
    let outbox: Vec<Vec<u8>> =
        peers.iter().flat_map(|&p| lens.iter().enumerate().map(move |(k, &l)| pattern(me, p * 100 + k, l))).collect();
    w.scope(|s| -> Res {
        let mut recvs = Vec::new();
        for (i, b) in inbox.iter_mut().enumerate() {
            recvs.push(s.irecv(&mut b[..], peers[i / lens.len()], (i % lens.len()) as i32)?);
        }
        let mut sends = Vec::new();
        for (i, b) in outbox.iter().enumerate() {
            sends.push(s.isend(&b[..], peers[i / lens.len()], (i % lens.len()) as i32)?);
        }
        wait_all(recvs)?;
        wait_all(sends)?;
        Ok(())
    })?;
    for (i, b) in inbox.iter().enumerate() {
        let (from, k) = (peers[i / lens.len()], i % lens.len());
        assert!(b[..] == pattern(from, me * 100 + k, lens[k])[..], "message {k} from rank {from} differs");
    }

    // Long enough that a loaded machine (4 ranks on 2 cores beside other jobs: 916 ms seen
    // for the copy) still tells "copied alone" from "waited for the sender" (BUSY or more).
    const BUSY: std::time::Duration = std::time::Duration::from_millis(4000);
    w.barrier()?;
    let len = 8 << 20;
    if me == 0 && n > 1 {
        let data = pattern(0, 1, len);
        w.scope(|s| -> Res {
            let req = s.isend(&data[..], 1, 5)?;
            std::thread::sleep(BUSY);
            req.wait()?;
            Ok(())
        })?;
    } else if me == 1 {
        let mut b = vec![0u8; len];
        let start = std::time::Instant::now();
        w.recv(&mut b[..], 0, 5)?;
        let took = start.elapsed();
        assert!(took < BUSY / 2, "an {len}-byte receive waited {took:?} for its busy sender");
        assert!(b == pattern(0, 1, len), "the busy sender's message differs");
    }
    Ok(())
}

extern "C" {
    fn prctl(option: i32, arg: u64, ...) -> i32;
    fn capget(header: *mut [u32; 2], data: *mut [u32; 6]) -> i32;
    fn capset(header: *mut [u32; 2], data: *const [u32; 6]) -> i32;
}

/// Shared copies the kernel refuses half-way. Rank 1 makes itself undumpable and rank 0 gives
/// up CAP_SYS_PTRACE, so rank 0 may neither write into rank 1's memory (the sender's half of a
/// shared copy: its pages go back to the receiver) nor read from it (the receiver's half: the
/// message starts over by the pipeline). Everything must still arrive intact, both ways.
fn refused(w: &Communicator) -> Res {
    const PR_SET_DUMPABLE: i32 = 4;
    const CAP_SYS_PTRACE: u32 = 19;
    const VERSION_3: u32 = 0x2008_0522;
    match w.rank() {
        // SAFETY: prctl(PR_SET_DUMPABLE, 0) changes only this process's dumpable flag.
        1 => assert_eq!(unsafe { prctl(PR_SET_DUMPABLE, 0) }, 0, "PR_SET_DUMPABLE"),
        0 => {
            let mut header = [VERSION_3, 0];
            let mut caps = [0u32; 6];
            // SAFETY: version-3 capability header and two 3-word data structs, as capget(2) has them.
            unsafe {
                assert_eq!(capget(&mut header, &mut caps), 0, "capget");
                caps[0] &= !(1 << CAP_SYS_PTRACE); // effective
                caps[1] &= !(1 << CAP_SYS_PTRACE); // permitted
                assert_eq!(capset(&mut header, &caps), 0, "capset");
            }
        }
        _ => {}
    }
    w.barrier()?;
    if w.rank() > 1 {
        return Ok(());
    }
    let peer = 1 - w.rank();
    let mut b = vec![0u8; 4 << 20];
    for (k, len) in [4 << 20, 3 << 20, 1 << 20, (1 << 20) + 5].into_iter().enumerate() {
        let out = pattern(w.rank(), k, len);
        let st = w.sendrecv(&out[..], peer, 7, &mut b[..], peer, 7)?;
        assert_eq!(st.bytes(), len);
        assert!(b[..len] == pattern(peer, k, len)[..], "message {k} ({len} bytes) from rank {peer} differs");
    }
    Ok(())
}

/// Probe, iprobe and cancel.
fn probe(w: &Communicator) -> Res {
    let me = w.rank();
    let mut r = w.irecv_owned_tag(me, 77)?;
    assert!(r.cancel(), "an unmatched receive can be cancelled");
    assert!(w.iprobe(ANY_SOURCE, 12345)?.is_none());
    if w.size() < 2 || me > 1 {
        return Ok(());
    }
    if me == 0 {
        w.send(&[5u16; 9][..], 1, 42)?;
        w.send(&[0u8; 300_000][..], 1, 43)?;
    } else {
        let st = w.probe(0, 42)?;
        assert_eq!((st.source(), st.tag(), st.bytes()), (0, 42, 18));
        let st = loop {
            if let Some(st) = w.iprobe(ANY_SOURCE, 43)? {
                break st;
            }
        };
        assert_eq!(st.bytes(), 300_000, "probe sees a rendezvous message's size");
        let mut a = [0u16; 9];
        let m = w.mprobe(0, 42)?;
        assert_eq!(m.status().bytes(), 18);
        assert!(w.iprobe(0, 42)?.is_none(), "a matched probe takes the message out of matching");
        m.recv(&mut a[..])?;
        let mut b = vec![1u8; 300_000];
        w.recv(&mut b[..], 0, 43)?;
        assert!(a == [5; 9] && b.iter().all(|&x| x == 0));
    }
    Ok(())
}

/// Content that never repeats at a power-of-two period (a chunk or segment sent from the wrong
/// offset shows up), for message `seq` of `len` bytes from `src`.
fn aperiodic(src: usize, seq: usize, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize ^ seq ^ (src << 4)) as u8).collect()
}

/// Memory holding a message in pieces, and where each piece is (offset, length).
type Spread = (Vec<u8>, Vec<(usize, usize)>);

/// `msg` spread over pieces of `piece` bytes with `gap` bytes (0xEE) between them: the memory
/// and the blocks of the message in it.
fn spread(msg: &[u8], piece: usize, gap: usize) -> Spread {
    let mut mem = Vec::new();
    let mut places = Vec::new();
    for chunk in msg.chunks(piece) {
        places.push((mem.len(), chunk.len()));
        mem.extend_from_slice(chunk);
        mem.extend(std::iter::repeat_n(0xEE, gap));
    }
    (mem, places)
}

fn blocks_in(mem: &mut [u8], places: &[(usize, usize)]) -> Box<[(*mut u8, usize)]> {
    places.iter().map(|&(at, len)| (mem[at..].as_mut_ptr(), len)).collect()
}

/// Non-contiguous sends (`isend_blocks_raw`) of every size and piece size, standard and
/// synchronous, into contiguous and into non-contiguous receives: the receiver gets the pieces
/// joined, and gaps on either side stay untouched. Then a burst of gathered sends nobody
/// receives yet, so they queue behind a full ring, received afterwards in order.
fn blocks(w: &Communicator, max: usize) -> Res {
    use billboard::SendMode;
    let me = w.rank();
    let peer = me ^ 1;
    if peer >= w.size() {
        return Ok(());
    }
    for (k, &len) in sizes(max).iter().enumerate() {
        let msg = aperiodic(me, k, len);
        let (send_piece, recv_piece) = [(64, 100), (1000, 777), (4099, 65536), (1 << 20, 64)][k % 4];
        let mode = if k % 3 == 2 { SendMode::Synchronous } else { SendMode::Standard };
        let (mut src, src_places) = spread(&msg, send_piece, 8);
        let into_blocks = k % 2 == 1;
        let (mut dst, dst_places) = spread(&vec![0; len + 5], recv_piece, 16);
        let mut flat = vec![0u8; len + 5];
        // SAFETY: the buffers outlive the requests, which are waited for below.
        let r = unsafe {
            if into_blocks {
                w.irecv_blocks_raw(blocks_in(&mut dst, &dst_places), peer.into(), 11.into())?
            } else {
                w.irecv_raw(flat.as_mut_ptr(), flat.len(), peer.into(), 11.into())?
            }
        };
        // SAFETY: as above.
        let s = unsafe { w.isend_blocks_raw(blocks_in(&mut src, &src_places), peer, 11, mode)? };
        let st = r.wait()?;
        s.wait()?;
        assert_eq!(st.bytes(), len, "size {len}");
        let want = aperiodic(peer, k, len);
        let got: Vec<u8> = if into_blocks {
            let inside: Vec<u8> = dst_places.iter().flat_map(|&(at, n)| dst[at..at + n].to_vec()).collect();
            assert!(inside[len..].iter().all(|&b| b == 0), "size {len}: bytes past the message");
            let gaps_kept = dst_places.iter().all(|&(at, n)| dst[at + n..at + n + 16].iter().all(|&b| b == 0xEE));
            assert!(gaps_kept, "size {len}: a gap between receive blocks was written");
            inside[..len].to_vec()
        } else {
            flat[..len].to_vec()
        };
        assert!(got == want, "content mismatch at size {len} (send pieces {send_piece}, into blocks: {into_blocks})");
    }
    // The burst: 60 eager gathered sends of 3000 bytes, then the receives.
    let msgs: Vec<Vec<u8>> = (0..60).map(|i| aperiodic(me, 1000 + i, 3000)).collect();
    let mut mems: Vec<Spread> = msgs.iter().map(|m| spread(m, 300, 4)).collect();
    let mut sends = Vec::new();
    for (mem, places) in mems.iter_mut() {
        // SAFETY: `mems` outlives the requests, waited for below.
        sends.push(unsafe { w.isend_blocks_raw(blocks_in(mem, places), peer, 12, SendMode::Standard)? });
    }
    for i in 0..60 {
        let mut b = vec![0u8; 3000];
        w.recv(&mut b[..], peer, 12)?;
        assert!(b == aperiodic(peer, 1000 + i, 3000), "burst message {i} out of order or damaged");
    }
    wait_all(sends)?;
    Ok(())
}

/// Small helpers for tests that need an owned receive buffer.
trait Owned {
    fn irecv_owned(&self, from: usize) -> Result<OwnedRecv, Error>;
    fn irecv_owned_tag(&self, from: usize, tag: i32) -> Result<OwnedRecv, Error>;
    fn sendrecv_u32(&self, v: u32, to: usize, from: usize) -> Result<u32, Error>;
}

struct OwnedRecv {
    // Dropped before the buffer it writes into (fields drop in order).
    req: Option<billboard::Request<'static>>,
    buf: Box<u32>,
}

impl OwnedRecv {
    fn wait(mut self) -> Result<u32, Error> {
        self.req.take().unwrap().wait()?;
        Ok(*self.buf)
    }
    fn cancel(&mut self) -> bool {
        let r = self.req.as_mut().unwrap();
        let cancelled = r.cancel();
        let st = self.req.take().unwrap().wait().expect("cancelled receive completes");
        assert!(st.cancelled() == cancelled);
        cancelled
    }
}

impl Owned for Communicator {
    fn irecv_owned(&self, from: usize) -> Result<OwnedRecv, Error> {
        self.irecv_owned_tag(from, 0)
    }
    fn irecv_owned_tag(&self, from: usize, tag: i32) -> Result<OwnedRecv, Error> {
        let mut buf = Box::new(0u32);
        // SAFETY (test helper): the box outlives the request, which OwnedRecv drops first.
        let slot: &'static mut u32 = unsafe { &mut *(&mut *buf as *mut u32) };
        // SAFETY: as above; the request is never leaked.
        let req = unsafe { self.irecv(slot, from, tag) }?;
        Ok(OwnedRecv { buf, req: Some(req) })
    }
    fn sendrecv_u32(&self, v: u32, to: usize, from: usize) -> Result<u32, Error> {
        let mut got = 0u32;
        self.sendrecv(&v, to, 3, &mut got, from, 3)?;
        Ok(got)
    }
}

extern "C" {
    fn raise(sig: i32) -> i32;
}

/// This process's voluntary context switches so far (its main thread's, where it waits).
fn voluntary_switches() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:")).expect("a switch count");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number")
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bb-pt2pt: {e}");
        std::process::exit(1);
    }
}

/// Pins this process to the first `cpus` cpus (at least cpu 0), as `taskset -c 0-1` does (before
/// the library starts: it counts the cores it may use then).
fn on_cpus(cpus: usize) {
    extern "C" {
        fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
    }
    let cpus = cpus.min(std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let mut one = [0u64; 16]; // cpu_set_t: 1024 bits
    one[0] = (1u64 << cpus) - 1;
    // SAFETY: the mask lives across the call and is as long as the size given.
    let r = unsafe { sched_setaffinity(0, std::mem::size_of_val(&one), one.as_ptr()) };
    assert_eq!(r, 0, "sched_setaffinity: {}", std::io::Error::last_os_error());
}

/// Ranks 0 and 1 ping-pong `MESSAGES` messages of 8 B, both on cpu 0, and print the system calls
/// their waits made (`Comm::wait_calls`), for `tests/udp.rs` and `tests/hosts.rs` to check.
fn one_core(w: &Communicator) -> Res {
    const MESSAGES: u64 = 2000;
    // SAFETY: this program calls the library from its main thread alone.
    unsafe { w.assume_serialized() };
    let other = 1 - w.rank();
    let mut b = [0u8; 8];
    // Warm-up: connections and first timers out of the count.
    for _ in 0..50 {
        if w.rank() == 0 {
            w.send(&b[..], other, 3)?;
            w.recv(&mut b[..], other, 3)?;
        } else {
            w.recv(&mut b[..], other, 3)?;
            w.send(&b[..], other, 3)?;
        }
    }
    let before = w.wait_calls();
    for k in 0..MESSAGES {
        if w.rank() == 0 {
            b = k.to_le_bytes();
            w.send(&b[..], other, 3)?;
            w.recv(&mut b[..], other, 3)?;
            assert_eq!(u64::from_le_bytes(b), k + 1, "rank 0: the answer to message {k}");
        } else {
            w.recv(&mut b[..], other, 3)?;
            b = (u64::from_le_bytes(b) + 1).to_le_bytes();
            w.send(&b[..], other, 3)?;
        }
    }
    print_wait_calls(w, MESSAGES, before, w.wait_calls());
    w.barrier()?;
    Ok(())
}

/// The `wait calls` line of this rank (`bb_tests::wait_calls` reads it): what its waits cost
/// between `before` and `after`, over `messages` received.
fn print_wait_calls(w: &Communicator, messages: u64, before: WaitCalls, after: WaitCalls) {
    let r = (after.receives, before.receives);
    println!(
        "wait calls of rank {}: messages={messages} yields={} polls={} found={} empty={} blocking={}",
        w.rank(),
        after.yields - before.yields,
        after.polls - before.polls,
        r.0.found - r.1.found,
        r.0.empty - r.1.empty,
        r.0.blocking - r.1.blocking
    );
}

/// A token goes round every rank `messages` times (rank r receives from r-1 and sends to r+1),
/// the ranks pinned to cpus 0 and 1 so that they outnumber the cores: each rank prints its
/// waits' yields and polls (`Comm::wait_calls`), for `tests/pt2pt.rs` to check that a crowded
/// wait hands its core over after each poll that found nothing (engine/ladder.rs). (`ring N`
/// under callgrind at two N: instructions a hop, bench/README.md.)
fn ring(w: &Communicator, messages: u64) -> Res {
    // SAFETY: this program calls the library from its main thread alone.
    unsafe { w.assume_serialized() };
    let (me, n) = (w.rank(), w.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let mut b = [0u8; 8];
    let mut round = |k: u64| -> Res {
        if me == 0 {
            w.send(&k.to_le_bytes()[..], next, 4)?;
            w.recv(&mut b[..], prev, 4)?;
        } else {
            w.recv(&mut b[..], prev, 4)?;
            w.send(&b[..], next, 4)?;
        }
        assert_eq!(u64::from_le_bytes(b), k, "rank {me}: the token of round {k}");
        Ok(())
    };
    for k in 0..50 {
        round(k)?;
    }
    let before = w.wait_calls();
    for k in 0..messages {
        round(k)?;
    }
    print_wait_calls(w, messages, before, w.wait_calls());
    w.barrier()?;
    Ok(())
}

/// Messages a rank sends itself complete at the first poll, whatever peer the wait names first
/// (the self route, `transport/routes.rs`): rank 0 prints the polls they cost, for
/// `tests/routes.rs` to check on every route. `MESSAGES` sendrecvs to itself; then as many
/// rounds of a wait on two receives, the first from rank 1 (its message arrived already) and the
/// second from itself, so the wait's hint names rank 1 while the message it waits for is its
/// own: through the billboard such a message waited for the poll that looks beyond the hint
/// (every 16th), paying each poll between a socket receive or, on a crowded core, a yield.
fn self_send(w: &Communicator) -> Res {
    const MESSAGES: u64 = 200;
    let me = w.rank();
    let mut b = [0u8; 8];
    if me == 1 {
        for k in 0..MESSAGES {
            w.send(&k.to_le_bytes()[..], 0, 7)?;
        }
    }
    w.barrier()?;
    if me != 0 {
        return Ok(());
    }
    let before = w.wait_calls();
    for k in 0..MESSAGES {
        w.sendrecv(&k.to_le_bytes()[..], 0, 5, &mut b[..], 0, 5)?;
        assert_eq!(u64::from_le_bytes(b), k, "rank 0: message {k} to itself");
    }
    let alone = w.wait_calls();
    let mut theirs = [0u8; 8];
    for k in 0..MESSAGES {
        // SAFETY: both requests are waited for below, within the buffers' borrows.
        let (r1, r2) = unsafe { (w.irecv(&mut theirs[..], 1, 7)?, w.irecv(&mut b[..], 0, 6)?) };
        w.send(&(k + 1).to_le_bytes()[..], 0, 6)?;
        wait_all(vec![r1, r2])?;
        assert_eq!((u64::from_le_bytes(theirs), u64::from_le_bytes(b)), (k, k + 1), "rank 0: round {k}");
    }
    let beside = w.wait_calls();
    println!(
        "self polls of rank 0: messages={MESSAGES} alone={} beside={} beside_receives={} beside_yields={}",
        alone.polls - before.polls,
        beside.polls - alone.polls,
        (beside.receives.found + beside.receives.empty) - (alone.receives.found + alone.receives.empty),
        beside.yields - alone.yields,
    );
    Ok(())
}

fn run() -> Res {
    let case = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    match case.as_str() {
        "onecore" => on_cpus(1),
        "ring" => on_cpus(2),
        _ => {}
    }
    let universe = billboard::init()?;
    let w = universe.world();
    match case.as_str() {
        "order" => order(&w)?,
        "wildcards" => wildcards(&w)?,
        "sizes" => all_sizes(&w, 16 << 20)?,
        "sizes64" => all_sizes(&w, 64 << 20)?,
        // The first and last rank ping-pong for up to 30 s: a route cut meanwhile must end it.
        "pingpong" => {
            let last = w.size() - 1;
            let start = std::time::Instant::now();
            let mut b = [0u8; 64];
            while start.elapsed() < std::time::Duration::from_secs(30) {
                if w.rank() == 0 {
                    w.send(&b[..], last, 1)?;
                    w.recv(&mut b[..], last, 1)?;
                } else if w.rank() == last {
                    w.recv(&mut b[..], 0, 1)?;
                    w.send(&b[..], 0, 1)?;
                }
            }
        }
        "onecore" => one_core(&w)?,
        "ring" => ring(&w, std::env::args().nth(2).map_or(Ok(2000), |n| n.parse())?)?,
        "selfsend" => self_send(&w)?,
        "many" => many(&w)?,
        "raw" => raw(&w)?,
        "truncate" => truncate(&w)?,
        "blocking" => blocking(&w)?,
        "comms" => comms(&w)?,
        "probe" => probe(&w)?,
        "ssend" => ssend(&w)?,
        "prompt" => prompt(&w)?,
        "blocks" => blocks(&w, 16 << 20)?,
        "shared" => shared(&w)?,
        "refused" => refused(&w)?,
        "init" => {}
        // Rank 1 waits two seconds for rank 0: it must sleep, not burn its core.
        "idle" => {
            if w.rank() == 0 {
                std::thread::sleep(std::time::Duration::from_secs(2));
                w.send(&1u8, 1 % w.size(), 0)?;
            } else if w.rank() == 1 {
                let mut b = 0u8;
                w.recv(&mut b, 0, 0)?;
            }
        }
        // Every other rank waits a second for rank 0, asleep (run with a ladder that sleeps at
        // once and for long, BB_SPIN=1 BB_YIELD=1 BB_SLEEP_US=30000000): the data itself must
        // wake it, whatever the route, in one or a few wake-ups, not a timer's thousands.
        "wakeup" => {
            if w.rank() == 0 {
                std::thread::sleep(std::time::Duration::from_secs(1));
                for r in 1..w.size() {
                    w.send(&1u8, r, 0)?;
                }
            } else {
                let (before, start) = (voluntary_switches(), std::time::Instant::now());
                let mut b = 0u8;
                w.recv(&mut b, 0, 0)?;
                let (switches, took) = (voluntary_switches() - before, start.elapsed());
                assert!(took < std::time::Duration::from_secs(10), "rank {} woke after {took:?}", w.rank());
                assert!(switches < 100, "rank {} woke {switches} times in {took:?} of waiting", w.rank());
            }
        }
        // Fault cases: the others wait on the failing rank, which bbrun must notice and end.
        "kill9" | "exit3" => {
            w.barrier()?;
            if w.rank() == 2 % w.size() {
                if case == "kill9" {
                    // SAFETY: raise(3) on ourselves.
                    unsafe { raise(9) };
                }
                std::process::exit(3);
            }
            let mut b = 0u8;
            w.recv(&mut b, 2 % w.size(), 0)?;
            unreachable!("rank 2 never sends");
        }
        "all" => {
            order(&w)?;
            wildcards(&w)?;
            all_sizes(&w, 4 << 20)?;
            many(&w)?;
            raw(&w)?;
            truncate(&w)?;
            blocking(&w)?;
            comms(&w)?;
            probe(&w)?;
            ssend(&w)?;
            blocks(&w, 1 << 20)?;
        }
        other => panic!("unknown case {other:?}"),
    }
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok {case} on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

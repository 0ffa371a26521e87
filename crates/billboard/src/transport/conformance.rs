//! The conformance suite every channel passes: generic over [`Channel`], driven with all
//! endpoints in one process. Run below for shared memory, TCP and UDP.

use super::{Channel, Header, WouldBlock};

fn header(seq: u64, tag: i32) -> Header {
    Header { kind: 9, context: 3, source: 1, tag, aux: seq }
}

fn bytes(seq: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u64 ^ seq.wrapping_mul(0x9e37)) as u8).collect()
}

/// Sends with polling of the receiver whenever the channel says WouldBlock.
fn send_or_drain<C: Channel>(
    eps: &mut [C],
    from: usize,
    to: usize,
    h: &Header,
    data: &[u8],
    got: &mut Vec<(usize, Header, Vec<u8>)>,
) {
    loop {
        match eps[from].try_send(to, h, data) {
            Ok(()) => return,
            Err(WouldBlock) => {
                eps[to].poll(None, |s, h, p| got.push((s, *h, p.to_vec())));
            }
        }
    }
}

/// Records of every size up to `max_record` arrive intact and in order.
pub(super) fn every_size_in_order<C: Channel>(eps: &mut [C]) {
    let max = eps[0].caps().max_record;
    let mut sizes: Vec<usize> = (0..130).chain([1000, 4095, 4096, 8191, 8192, 16_000, max - 1, max]).collect();
    sizes.retain(|&s| s <= max);
    let mut got = Vec::new();
    for (k, &len) in sizes.iter().enumerate() {
        send_or_drain(eps, 0, 1, &header(k as u64, k as i32), &bytes(k as u64, len), &mut got);
    }
    while got.len() < sizes.len() {
        eps[1].poll(Some(0), |s, h, p| got.push((s, *h, p.to_vec())));
        eps[0].poll(None, |_, _, _| panic!("nothing is sent to rank 0"));
    }
    for (k, (s, h, p)) in got.iter().enumerate() {
        assert_eq!(*s, 0);
        assert_eq!(*h, header(k as u64, k as i32), "record {k} out of order");
        assert_eq!(*p, bytes(k as u64, sizes[k]), "payload of record {k} ({} bytes)", sizes[k]);
    }
}

/// A sender that outruns its receiver is told WouldBlock, never loses or reorders a record.
pub(super) fn backpressure_loses_nothing<C: Channel>(eps: &mut [C]) {
    let mut refused = 0;
    let mut sent = 0u64;
    let mut got = Vec::new();
    let total = 5000u64;
    while sent < total {
        let len = [8usize, 300, 3000, 20_000][sent as usize % 4].min(eps[0].caps().max_record);
        match eps[0].try_send(1, &header(sent, 0), &bytes(sent, len)) {
            Ok(()) => sent += 1,
            Err(WouldBlock) => {
                refused += 1;
                eps[1].poll(None, |_, h, p| got.push((h.aux, p.to_vec())));
            }
        }
    }
    while (got.len() as u64) < total {
        eps[1].poll(None, |_, h, p| got.push((h.aux, p.to_vec())));
        // A sender may hold the tail of what it accepted until its own next poll (TCP).
        eps[0].poll(None, |_, _, _| panic!("nothing is sent to rank 0"));
    }
    assert!(refused > 0, "the receiver never fell behind: the test did not exercise backpressure");
    for (k, (seq, p)) in got.iter().enumerate() {
        assert_eq!(*seq, k as u64);
        assert_eq!(*p, bytes(k as u64, p.len()));
    }
}

/// One multicast post reaches every addressed receiver; buffers are reclaimed once all read.
pub(super) fn multicast_reaches_every_receiver<C: Channel>(eps: &mut [C]) {
    if !eps[0].caps().multicast {
        return;
    }
    let n = eps.len();
    let peers: Vec<usize> = (1..n).collect();
    let rounds = 200u64;
    let mut got = vec![Vec::new(); n];
    let mut sent = 0;
    while sent < rounds {
        let data = bytes(sent, 5000);
        match eps[0].try_multicast(&peers, &header(sent, 7), &data) {
            Ok(()) => sent += 1,
            Err(WouldBlock) => {
                for r in 1..n {
                    eps[r].poll(None, |_, h, p| got[r].push((h.aux, p.to_vec())));
                }
            }
        }
    }
    for r in 1..n {
        while (got[r].len() as u64) < rounds {
            eps[r].poll(None, |_, h, p| got[r].push((h.aux, p.to_vec())));
        }
        for (k, (seq, p)) in got[r].iter().enumerate() {
            assert_eq!((*seq, p), (k as u64, &bytes(k as u64, 5000)), "receiver {r}, record {k}");
        }
    }
}

/// Every rank sends to every rank (itself included); polls without a hint find them all.
pub(super) fn all_to_all<C: Channel>(eps: &mut [C]) {
    let n = eps.len();
    for (from, ep) in eps.iter_mut().enumerate() {
        for to in 0..n {
            let h = Header { source: from as u32, ..header((from * n + to) as u64, 1) };
            ep.try_send(to, &h, &bytes(from as u64, 40)).expect("room for one record each");
        }
    }
    for (to, ep) in eps.iter_mut().enumerate() {
        let mut from_seen = vec![false; n];
        while from_seen.iter().any(|s| !s) {
            ep.poll(None, |s, h, p| {
                assert_eq!(h.source as usize, s, "sender is reported");
                assert_eq!(h.aux, (s * n + to) as u64);
                assert_eq!(p, bytes(s as u64, 40));
                from_seen[s] = true;
            });
        }
    }
}

/// A receiver polling with a hint for one peer still hears the others.
pub(super) fn hinted_polls_do_not_starve_others<C: Channel>(eps: &mut [C]) {
    if eps.len() < 3 {
        return;
    }
    eps[2].try_send(1, &header(1, 1), b"from two").unwrap();
    let mut heard = false;
    for _ in 0..1000 {
        eps[1].poll(Some(0), |s, _, p| heard = s == 2 && p == b"from two");
        if heard {
            return;
        }
    }
    panic!("a receiver waiting on rank 0 never read rank 2's record");
}

/// `read_remote` copies from the peer's memory where the channel offers single copy.
pub(super) fn single_copy_reads_peer_memory<C: Channel>(eps: &mut [C]) {
    if !eps[0].caps().single_copy {
        return;
    }
    let src = bytes(42, 3 << 20);
    let mut dst = vec![0u8; src.len()];
    eps[1].read_remote(0, src.as_ptr() as u64, &mut dst).expect("process_vm_readv of our own pid");
    assert!(dst == src);
}

/// Fails a test whose records stop arriving (a lost or torn record would otherwise hang it).
struct Deadline(std::time::Instant);

impl Deadline {
    fn new() -> Deadline {
        Deadline(std::time::Instant::now() + std::time::Duration::from_secs(60))
    }

    fn check(&self, got: usize, want: usize) {
        assert!(std::time::Instant::now() < self.0, "stalled: {got} of {want} records arrived");
    }
}

/// `pieces` ways to cut `data`: whole, in two, in pieces of `step` bytes with empty ones
/// between (a gathered send must not care where the cuts are).
fn cuts(data: &[u8], step: usize) -> Vec<Vec<&[u8]>> {
    let half = data.len() / 2;
    let mut fine = Vec::new();
    for chunk in data.chunks(step.max(1)) {
        fine.push(chunk);
        fine.push(&chunk[..0]);
    }
    vec![vec![data], vec![&data[..half], &data[half..]], fine]
}

/// A gathered record is the record of its pieces joined, whatever the cuts, at every size up
/// to `max_record` (inline, slot, several `sendmsg` batches), in order with plain records.
pub(super) fn gathered_sends_equal_joined_ones<C: Channel>(eps: &mut [C]) {
    let caps = eps[0].caps();
    let max = caps.max_record;
    let mut sizes: Vec<usize> = vec![0, 1, 63, 64, 65, 1000, 4096, 8191, 8192, 20_000, max - 1, max];
    sizes.extend([caps.max_inline - 1, caps.max_inline, caps.max_inline + 1]);
    sizes.retain(|&s| s <= max);
    let mut sent = Vec::new();
    let mut got = Vec::new();
    let deadline = Deadline::new();
    for &len in &sizes {
        let seq = sent.len() as u64;
        let data = bytes(seq, len);
        // Steps that give 2 pieces, dozens, and (for large records) more than 1024.
        for (k, pieces) in [cuts(&data, len / 2 + 1), cuts(&data, 97), cuts(&data, 7)].concat().into_iter().enumerate()
        {
            let h = header(seq, k as i32);
            loop {
                match eps[0].try_send_gather(1, &h, &pieces) {
                    Ok(()) => break,
                    Err(WouldBlock) => {
                        deadline.check(got.len(), sent.len());
                        eps[1].poll(None, |s, h, p| got.push((s, *h, p.to_vec())));
                    }
                }
            }
            sent.push((h, data.clone()));
            // A plain record between gathered ones keeps its place.
            let plain = header(seq, -1 - k as i32);
            send_or_drain(eps, 0, 1, &plain, &data[..len.min(40)], &mut got);
            sent.push((plain, data[..len.min(40)].to_vec()));
        }
    }
    while got.len() < sent.len() {
        deadline.check(got.len(), sent.len());
        eps[1].poll(Some(0), |s, h, p| got.push((s, *h, p.to_vec())));
        eps[0].poll(None, |_, _, _| panic!("nothing is sent to rank 0"));
    }
    for (i, ((s, h, p), (wh, wp))) in got.iter().zip(&sent).enumerate() {
        assert_eq!((*s, h), (0, wh), "record {i} out of order");
        assert!(p == wp, "payload of record {i} ({} bytes, tag {})", wp.len(), wh.tag);
    }
}

/// Gathered records of many pieces from a sender that outruns its receiver: WouldBlock, never
/// a lost, torn or reordered record (over TCP: the tail of a partly taken `sendmsg` is kept).
pub(super) fn gathered_backpressure_loses_nothing<C: Channel>(eps: &mut [C]) {
    let mut refused = 0;
    let mut sent = 0u64;
    let mut got = Vec::new();
    let total = 3000u64;
    let deadline = Deadline::new();
    while sent < total {
        let len = [100usize, 3000, 20_000, 60_000][sent as usize % 4].min(eps[0].caps().max_record);
        let data = bytes(sent, len);
        let pieces: Vec<&[u8]> = data.chunks(150).collect();
        match eps[0].try_send_gather(1, &header(sent, 0), &pieces) {
            Ok(()) => sent += 1,
            Err(WouldBlock) => {
                refused += 1;
                deadline.check(got.len(), total as usize);
                eps[1].poll(None, |_, h, p| got.push((h.aux, p.to_vec())));
            }
        }
    }
    while (got.len() as u64) < total {
        deadline.check(got.len(), total as usize);
        eps[1].poll(None, |_, h, p| got.push((h.aux, p.to_vec())));
        eps[0].poll(None, |_, _, _| panic!("nothing is sent to rank 0"));
    }
    assert!(refused > 0, "the receiver never fell behind: the test did not exercise backpressure");
    for (k, (seq, p)) in got.iter().enumerate() {
        assert_eq!(*seq, k as u64);
        assert!(*p == bytes(k as u64, p.len()), "record {k}");
    }
}

#[cfg(test)]
mod shm {
    use crate::transport::shm::endpoints;
    use crate::transport::Channel;

    #[test]
    fn every_size_in_order() {
        super::every_size_in_order(&mut endpoints(2, 32 << 10, 64 << 10, 4));
    }

    #[test]
    fn backpressure_loses_nothing() {
        super::backpressure_loses_nothing(&mut endpoints(2, 4096, 8192, 2));
    }

    #[test]
    fn multicast_reaches_every_receiver() {
        super::multicast_reaches_every_receiver(&mut endpoints(4, 4096, 8192, 3));
    }

    #[test]
    fn all_to_all() {
        super::all_to_all(&mut endpoints(5, 4096, 8192, 2));
    }

    #[test]
    fn hinted_polls_do_not_starve_others() {
        super::hinted_polls_do_not_starve_others(&mut endpoints(3, 4096, 8192, 2));
    }

    #[test]
    fn single_copy_reads_peer_memory() {
        super::single_copy_reads_peer_memory(&mut endpoints(2, 4096, 8192, 2));
    }

    #[test]
    fn gathered_sends_equal_joined_ones() {
        super::gathered_sends_equal_joined_ones(&mut endpoints(2, 32 << 10, 64 << 10, 4));
    }

    #[test]
    fn gathered_backpressure_loses_nothing() {
        super::gathered_backpressure_loses_nothing(&mut endpoints(2, 4096, 65536, 2));
    }

    /// Remote pieces into local pieces, more than IOV_MAX on each side, cut at different places.
    #[test]
    fn single_copy_between_piece_lists() {
        let eps = endpoints(2, 4096, 8192, 2);
        let src = super::bytes(5, 3 << 20);
        let iov = |ptr: *mut u8, len| libc::iovec { iov_base: ptr.cast(), iov_len: len };
        // Remote: every other 700-byte block of `src` (plus an empty one); local: 300-byte
        // blocks of `dst` with 100-byte gaps.
        let mut remote: Vec<libc::iovec> =
            (0..src.len() / 1400).map(|i| iov(src.as_ptr().wrapping_add(i * 1400) as *mut u8, 700)).collect();
        remote.insert(3, iov(src.as_ptr() as *mut u8, 0));
        let want: Vec<u8> = src.chunks(1400).filter(|c| c.len() == 1400).flat_map(|c| c[..700].to_vec()).collect();
        let mut dst = vec![0u8; want.len() / 300 * 400 + 400];
        let mut local: Vec<libc::iovec> = (0..want.len().div_ceil(300))
            .map(|i| iov(dst.as_mut_ptr().wrapping_add(i * 400), 300.min(want.len() - i * 300)))
            .collect();
        assert!(local.len() > 1024 && remote.len() > 1024);
        eps[1].read_remote_iov(0, &mut local, &mut remote).expect("process_vm_readv of our own pid");
        let got: Vec<u8> = dst.chunks(400).flat_map(|c| c[..300.min(c.len())].to_vec()).take(want.len()).collect();
        assert!(got == want);
        assert!(dst.chunks(400).all(|c| c.len() < 400 || c[300..].iter().all(|&b| b == 0)), "gaps untouched");
        // Lists of different lengths are an error, not a hang.
        let mut one = [iov(dst.as_mut_ptr(), 10)];
        let mut two = [iov(src.as_ptr() as *mut u8, 20)];
        assert!(eps[1].read_remote_iov(0, &mut one, &mut two).is_err());
    }
}

/// The suite on a channel whose `endpoints(n)` connects `n` ranks in this process.
macro_rules! suite_on {
    ($name:ident, $endpoints:path) => {
        #[cfg(test)]
        mod $name {
            use $endpoints as endpoints;

            #[test]
            fn every_size_in_order() {
                super::every_size_in_order(&mut endpoints(2));
            }

            #[test]
            fn backpressure_loses_nothing() {
                super::backpressure_loses_nothing(&mut endpoints(2));
            }

            #[test]
            fn multicast_reaches_every_receiver() {
                super::multicast_reaches_every_receiver(&mut endpoints(4));
            }

            #[test]
            fn all_to_all() {
                super::all_to_all(&mut endpoints(5));
            }

            #[test]
            fn hinted_polls_do_not_starve_others() {
                super::hinted_polls_do_not_starve_others(&mut endpoints(3));
            }

            #[test]
            fn gathered_sends_equal_joined_ones() {
                super::gathered_sends_equal_joined_ones(&mut endpoints(2));
            }

            #[test]
            fn gathered_backpressure_loses_nothing() {
                super::gathered_backpressure_loses_nothing(&mut endpoints(2));
            }
        }
    };
}

suite_on!(tcp, crate::transport::tcp::endpoints);
suite_on!(udp, crate::transport::udp::endpoints);
#[cfg(not(loom))]
suite_on!(mem, crate::transport::mem::endpoints);

//! The conformance suite every channel passes: generic over [`Channel`], driven with all
//! endpoints in one process. Run for shared memory below; the TCP channel will add its own
//! factory and run the same functions.

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

#[cfg(test)]
mod shm {
    use crate::transport::shm::endpoints;

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
}

#[cfg(test)]
mod tcp {
    use crate::transport::tcp::endpoints;

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
}

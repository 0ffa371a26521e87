//! Rank program for the hierarchy's host phases on the board beyond `bb-coll hier-board`
//! (`coll/hier_board.rs`, `coll/hier_board_scan.rs`): `bbrun -n N bb-hier MODE`, on ranks of
//! several hosts. Rank 0 prints `ok MODE on N ranks`; a wrong value panics.
//!
//! - `more`: blocking reduce_scatter (even and uneven blocks, in place), scan and exscan,
//!   allgatherv of uneven parts, and bcast, reduce and allreduce past one board data area
//!   (2 KiB) up to 1 MiB; a sum and a non-commutative operator in rank order, every root (first
//!   and last at 1 MiB); values checked, then again counting the messages each rank exchanged
//!   with members of its own host (`rank R: M messages on its host`).
//! - `revoke`: a rank revokes a hierarchical communicator while the others are blocked in its
//!   barrier (host phases on the board, the leaders' between hosts): every one of them must
//!   return revoked, and a later collective on it too.
//! - `parts`: blocking gatherv and scatterv of uneven parts (up to 70,000 bytes), every root,
//!   in place at the root and not; then again with parts within one data area (a host's
//!   scatterv parts together past it, in cells) counting the
//!   messages each rank exchanged with members of its own host and with ranks of other hosts
//!   (`rank R: M messages sent to other hosts in C calls`).
//! - `alltoall`: blocking all-to-all and all-to-allv (uneven parts, some empty) from 0 B to
//!   past `BB_HIER_ALLTOALL_MAX` a host, gaps checked; then again with parts within it,
//!   counting as `parts` does.
//! - `alltoall-past`: blocking all-to-all and all-to-allv of parts past every host's share of
//!   `BB_HIER_ALLTOALL_MAX`, counting as `parts` does, and the parts with bytes this rank
//!   sends other hosts (`rank R: P parts with bytes for other hosts`).
//! - `alltoallv-disagree`: erroneous blocking all-to-allvs whose counts disagree: every part
//!   100 bytes (through the hosts' leaders) but the last rank expects 50 from rank 0, then the
//!   next member of rank 0's host does; each rank prints `rank R: disagreeing counts across
//!   hosts: ok` (`on a host`) or `... failed: ERROR`, then all go on to the end.
//! - `alltoallv-disagree-cases`: on any placement (one host too), erroneous blocking
//!   all-to-allvs in which rank 0 sends rank 1 another count than that rank expects
//!   (within a data area, past it, past the rendezvous threshold, empty against not), then a
//!   right one; each rank prints `rank R: counts S to E: ok` or `... failed: ERROR` a case.
//! - `slots`: more hierarchical communicators than a rank has board slots (8), all alive, each
//!   running collectives (all-to-all(v) too): those whose hosts find no slot run their host
//!   phases by messages, values still right; prints the same-host message count.

use billboard::{Collective, Communicator, Error, Reduction};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Affine maps x -> a*x + b on 16-byte elements, composed in order: associative, not
/// commutative, so a result in the wrong rank order is caught.
fn element(r: usize, i: usize) -> [u64; 2] {
    let k = (r * 7 + i % 11) as u64;
    [(k % 5) + 2, k * 3 + 1]
}

fn compose(x: [u64; 2], y: [u64; 2]) -> [u64; 2] {
    [y[0].wrapping_mul(x[0]), y[0].wrapping_mul(x[1]).wrapping_add(y[1])]
}

fn words<const N: usize>(b: &[u8]) -> [u64; N] {
    std::array::from_fn(|k| u64::from_ne_bytes(b[8 * k..8 * k + 8].try_into().unwrap()))
}

/// `inout = in ⊕ inout`, element by element.
fn compose_each(invec: &[u8], inout: &mut [u8]) {
    for (x, y) in invec.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
        let z = compose(words(x), words(y));
        y.copy_from_slice(&[z[0].to_ne_bytes(), z[1].to_ne_bytes()].concat());
    }
}

fn add_words(invec: &[u8], inout: &mut [u8]) {
    for (a, b) in invec.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
        let s = u64::from_ne_bytes(a.try_into().unwrap()).wrapping_add(u64::from_ne_bytes((&*b).try_into().unwrap()));
        b.copy_from_slice(&s.to_ne_bytes());
    }
}

/// One of the two operators, with what each rank contributes and how a fold is computed here.
#[derive(Clone, Copy)]
enum Op {
    Sum,
    Ordered,
}

impl Op {
    fn elem(self) -> usize {
        match self {
            Op::Sum => 8,
            Op::Ordered => 16,
        }
    }

    fn apply(self, invec: &[u8], inout: &mut [u8]) {
        match self {
            Op::Sum => add_words(invec, inout),
            Op::Ordered => compose_each(invec, inout),
        }
    }

    fn reduction(self) -> Reduction {
        let (elem, commutative) = (self.elem(), matches!(self, Op::Sum));
        Reduction { op: Box::new(move |a: &[u8], b: &mut [u8]| self.apply(a, b)), elem, commutative }
    }

    /// Rank r's vector of `len` bytes.
    fn vector(self, r: usize, len: usize) -> Vec<u8> {
        match self {
            Op::Sum => (0..len / 8)
                .flat_map(|i| ((i as u64).wrapping_mul(0x9e37_79b9) ^ (r as u64 * 1001)).to_ne_bytes())
                .collect(),
            Op::Ordered => (0..len / 16).flat_map(|i| element(r, i).map(u64::to_ne_bytes).concat()).collect(),
        }
    }

    /// The fold of ranks `ranks`' vectors in rank order.
    fn fold(self, ranks: std::ops::Range<usize>, len: usize) -> Vec<u8> {
        let mut ranks = ranks;
        let Some(first) = ranks.next() else { return vec![0; len] };
        let mut acc = self.vector(first, len);
        for r in ranks {
            let mut next = self.vector(r, len);
            self.apply(&acc, &mut next);
            acc = next;
        }
        acc
    }
}

/// A blocking form's start and wait, as MPI's blocking calls run them.
fn blocking(start: impl FnOnce() -> billboard::Result<Collective>) -> billboard::Result<()> {
    billboard::coll::blocking(true, start)?.wait()
}

fn byte(r: usize, i: usize) -> u8 {
    (r * 31 + i * 13 + i / 251) as u8
}

/// Every check of `more`, once.
fn more_rounds(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    for op in [Op::Sum, Op::Ordered] {
        let e = op.elem();
        // Reduce-scatter: blocks of one length, and uneven ones (rank r's r + 1 elements, in
        // reverse order), in place (the vector in the receive buffer, the block to its start).
        for per in [0usize, 1, 7, 64, 200] {
            for uneven in [false, true] {
                let mut blocks = vec![(0, 0); n];
                let mut at = 0;
                for r in (0..n).rev().filter(|_| uneven).chain((0..n).filter(|_| !uneven)) {
                    let l = if uneven { (per + r) * e } else { per * e };
                    blocks[r] = (at, l);
                    at += l;
                }
                let want = op.fold(0..n, at);
                let (d, l) = blocks[me];
                for in_place in [false, true] {
                    let mine = op.vector(me, at);
                    let mut recv = if in_place { mine.clone() } else { vec![0xee; l] };
                    let send = if in_place { recv.as_ptr() } else { mine.as_ptr() };
                    // SAFETY: both buffers outlive the wait and are not touched before it.
                    blocking(|| unsafe {
                        w.ireduce_scatter_raw(send, at, recv.as_mut_ptr(), &blocks, op.reduction())
                    })?;
                    assert!(recv[..l] == want[d..d + l], "reduce_scatter of {at} B (in place {in_place}) at {me}");
                }
            }
        }
        // Scans: inclusive and exclusive, within one data area.
        for len in [0usize, 16, 112, 1024, 2048] {
            let mine = op.vector(me, len);
            for exclusive in [false, true] {
                let mut recv = vec![0xee; len];
                w.scan_bytes(&mine, &mut recv, &mut |a, b| op.apply(a, b), exclusive)?;
                let want =
                    if exclusive && me == 0 { vec![0xee; len] } else { op.fold(0..me + usize::from(!exclusive), len) };
                assert!(recv == want, "scan of {len} B (exclusive {exclusive}) at {me} of {n}");
            }
        }
        // Reduce (every root; first and last at 1 MiB) and allreduce past one data area.
        for len in [2048usize, 2048 + 16 * e, 65_536, 1 << 20] {
            let mine = op.vector(me, len);
            let want = op.fold(0..n, len);
            for in_place in [false, true] {
                let mut all = if in_place { mine.clone() } else { vec![0xee; len] };
                let send = if in_place { all.as_ptr() } else { mine.as_ptr() };
                // SAFETY: both buffers outlive the wait and are not touched before it.
                blocking(|| unsafe { w.iallreduce_raw(send, all.as_mut_ptr(), len, op.reduction()) })?;
                assert!(all == want, "allreduce of {len} B (in place {in_place}) at {me} of {n}");
                let roots: Vec<usize> = if len > 65_536 { vec![0, n - 1] } else { (0..n).collect() };
                for root in roots {
                    let mut out = if in_place && me == root { mine.clone() } else { vec![0xee; len] };
                    let send = if in_place && me == root { out.as_ptr() } else { mine.as_ptr() };
                    // SAFETY: as above.
                    blocking(|| unsafe { w.ireduce_raw(send, out.as_mut_ptr(), len, root, op.reduction()) })?;
                    assert!(me != root || out == want, "reduce of {len} B to {root} (in place {in_place})");
                }
            }
        }
    }
    // Broadcast across the data area's boundary up to 1 MiB, every root.
    for len in [2047usize, 2048, 2049, 10_000, 65_536, 1 << 20] {
        for root in 0..n {
            let mut buf: Vec<u8> = if me == root { (0..len).map(|i| byte(root, i)).collect() } else { vec![0; len] };
            w.bcast_bytes(&mut buf, root)?;
            assert!(buf.iter().enumerate().all(|(i, &b)| b == byte(root, i)), "bcast of {len} B from {root} at {me}");
        }
    }
    // All-gather of uneven parts (rank r's part + 3r bytes, reverse order, 5-byte gaps), in
    // place and not.
    for part in [0usize, 8, 100, 1000, 2000] {
        let lens: Vec<usize> = (0..n).map(|r| (part + 3 * r).min(2048)).collect();
        let mut layout = vec![(0, 0); n];
        let mut at = 0;
        for r in (0..n).rev() {
            layout[r] = (at, lens[r]);
            at += lens[r] + 5;
        }
        for in_place in [false, true] {
            let mine: Vec<u8> = (0..lens[me]).map(|i| byte(me, i)).collect();
            let mut all = vec![0xab; at];
            let (d, l) = layout[me];
            if in_place {
                all[d..d + l].copy_from_slice(&mine);
            }
            let send = if in_place { all[d..].as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            blocking(|| unsafe { w.iallgatherv_raw(send, l, all.as_mut_ptr(), all.len(), &layout) })?;
            for (r, &(d, l)) in layout.iter().enumerate() {
                assert!(
                    all[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r, i)),
                    "allgatherv: {r}'s part at {me}"
                );
                assert!(all[d + l..(d + l + 5).min(at)].iter().all(|&b| b == 0xab), "allgatherv wrote a gap at {me}");
            }
        }
    }
    Ok(w.barrier()?)
}

/// Messages this rank exchanged with members of its own host while `f` ran.
fn on_host(w: &Communicator, f: impl FnOnce() -> Res) -> Result<u64, Box<dyn std::error::Error>> {
    let (n, me) = (w.size(), w.rank());
    let hosts: Vec<usize> = (0..n).map(|r| w.host_of(r)).collect::<Result<_, _>>()?;
    let before = w.traffic();
    f()?;
    let after = w.traffic();
    let mut count = 0;
    for r in (0..n).filter(|&r| r != me && hosts[r] == hosts[me]) {
        let (a, b) = (&after[w.world_rank(r)], &before[w.world_rank(r)]);
        count += a.sent_messages - b.sent_messages + a.received_messages - b.received_messages;
    }
    Ok(count)
}

/// Messages this rank sent to ranks of other hosts while `f` ran (sends are counted inside
/// the sender's own calls; a receive may be counted early, while the receiver is still in the
/// call before).
fn between_hosts(w: &Communicator, f: impl FnOnce() -> Res) -> Result<u64, Box<dyn std::error::Error>> {
    let (n, me) = (w.size(), w.rank());
    let hosts: Vec<usize> = (0..n).map(|r| w.host_of(r)).collect::<Result<_, _>>()?;
    let before = w.traffic();
    f()?;
    let after = w.traffic();
    let mut count = 0;
    for r in (0..n).filter(|&r| hosts[r] != hosts[me]) {
        let (a, b) = (&after[w.world_rank(r)], &before[w.world_rank(r)]);
        count += a.sent_messages - b.sent_messages;
    }
    Ok(count)
}

/// Rank r's part of a v-form of `part`: r * 5 more bytes, one data area at most past 2 KiB
/// (`part` past it: every other rank's past it).
fn part_len(part: usize, r: usize) -> usize {
    match part > 2048 && r % 2 == 1 {
        true => 2048 - r,
        false => part + 5 * r,
    }
}

/// Gatherv and scatterv of uneven parts (`part_len`, in reverse rank order with 3-byte gaps),
/// every root, in place at the root and not; returns the calls made.
fn parts_rounds(w: &Communicator, parts: &[usize]) -> Result<u64, Box<dyn std::error::Error>> {
    let (n, me) = (w.size(), w.rank());
    let mut calls = 0;
    for &part in parts {
        let lens: Vec<usize> = (0..n).map(|r| part_len(part, r)).collect();
        let mut layout = vec![(0, 0); n];
        let mut at = 0;
        for r in (0..n).rev() {
            layout[r] = (at, lens[r]);
            at += lens[r] + 3;
        }
        for root in 0..n {
            for in_place in [false, true] {
                let mine: Vec<u8> = (0..lens[me]).map(|i| byte(me, i)).collect();
                let mut all = vec![0xab; at];
                let (d, l) = layout[me];
                if in_place && me == root {
                    all[d..d + l].copy_from_slice(&mine);
                }
                let send = if in_place && me == root { all[d..d + l].to_vec() } else { mine.clone() };
                let recv = (me == root).then_some((&mut all[..], &layout[..]));
                billboard::coll::blocking(true, || w.gatherv_bytes(&send, recv, root))?;
                calls += 1;
                if me == root {
                    for (r, &(d, l)) in layout.iter().enumerate() {
                        assert!(
                            all[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r, i)),
                            "gatherv of {part}: {r}'s part at root {root}"
                        );
                        assert!(
                            all[d + l..(d + l + 3).min(at)].iter().all(|&b| b == 0xab),
                            "gatherv of {part} wrote a gap"
                        );
                    }
                }
                // Scatterv: the root's parts, each rank's into its buffer (none at a root in place).
                let whole: Vec<u8> = (0..at).map(|i| byte(root + 7, i)).collect();
                let mut got = vec![0xcd; if in_place && me == root { 0 } else { lens[me] }];
                let send = (me == root).then_some((&whole[..], &layout[..]));
                billboard::coll::blocking(true, || w.scatterv_bytes(send, &mut got, root))?;
                calls += 1;
                assert!(got[..] == whole[d..d + got.len()], "scatterv of {part} from {root} at {me}");
            }
        }
    }
    Ok(calls)
}

fn parts(w: &Communicator) -> Res {
    parts_rounds(w, &[0, 8, 100, 1000, 2040, 3000, 70_000])?;
    // Every part within one data area (a host's scatterv parts together past it too, in cells
    // of the board: 1000 and 2000 on hosts of 2 and 3): one message between the root and each
    // other host a call.
    counted(w, || parts_rounds(w, &[0, 8, 100, 500, 1000, 2000]))
}

/// Blocking gather and scatter of parts of one length (as MPI_Gather and MPI_Scatter start
/// them), laid out in reverse rank order with 3-byte gaps, every root, in place at the root
/// and not, values checked against what this rank computes alone; returns the calls made.
fn rooted_rounds(w: &Communicator, parts: &[usize]) -> Result<u64, Box<dyn std::error::Error>> {
    let (n, me) = (w.size(), w.rank());
    let mut calls = 0;
    for &part in parts {
        let layout: Vec<(usize, usize)> = (0..n).map(|r| ((n - 1 - r) * (part + 3), part)).collect();
        let span = n * (part + 3);
        let (d, _) = layout[me];
        for root in 0..n {
            for in_place in [false, true] {
                let at_root = me == root;
                let mine: Vec<u8> = (0..part).map(|i| byte(me + root, i)).collect();
                let mut all = vec![0xab; span];
                if in_place && at_root {
                    all[d..d + part].copy_from_slice(&mine);
                }
                let send = if in_place && at_root { all[d..].as_ptr() } else { mine.as_ptr() };
                let recv = at_root.then_some((all.as_mut_ptr(), span, &layout[..]));
                // SAFETY: both buffers outlive the wait and are not touched before it.
                blocking(|| unsafe { w.igather_raw(send, part, recv, root) })?;
                calls += 1;
                for (r, &(d, l)) in layout.iter().enumerate().filter(|_| at_root) {
                    let ok = all[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r + root, i));
                    assert!(ok, "gather of {part} B parts to {root} (in place: {in_place}): rank {r}'s part");
                    assert!(all[d + l..d + l + 3].iter().all(|&b| b == 0xab), "gather of {part} B wrote a gap");
                }
                let whole: Vec<u8> = (0..span).map(|i| byte(root + 7, i)).collect();
                let mut got = vec![0xcd; part];
                let send = at_root.then_some((whole.as_ptr(), span, &layout[..]));
                // In place the root receives nothing (its part stays where it is).
                let len = if in_place && at_root { 0 } else { part };
                // SAFETY: as above.
                blocking(|| unsafe { w.iscatter_raw(send, got.as_mut_ptr(), len, root) })?;
                calls += 1;
                let want = if len == 0 { vec![0xcd; part] } else { whole[d..d + part].to_vec() };
                assert!(got == want, "scatter of {part} B parts from {root} (in place: {in_place}) at {me}");
            }
        }
    }
    Ok(calls)
}

/// `rooted_rounds` from 0 B to past `BB_HIER_PARTS_MAX` a host, then counted past
/// `BB_GATHER_HIER_MAX` where every host's parts fit `BB_HIER_PARTS_MAX` (3 members of
/// 5,000 B and their table): the messages on each rank's host and sent to other hosts.
fn rooted(w: &Communicator) -> Res {
    rooted_rounds(w, &[0, 8, 100, 112, 113, 1000, 1024, 1100, 2048, 2100, 4096, 8192, 16_384, 20_000])?;
    counted(w, || rooted_rounds(w, &[1100, 2048, 2100, 4096, 5000]))
}

/// Runs `rounds` counting the messages on this rank's host and those sent to other hosts, and
/// prints both with the calls `rounds` made (what coll_hosts reads).
fn counted(w: &Communicator, mut rounds: impl FnMut() -> Result<u64, Box<dyn std::error::Error>>) -> Res {
    let mut calls = 0;
    let mut between = 0;
    let on = on_host(w, || {
        between = between_hosts(w, || {
            calls = rounds()?;
            Ok(())
        })?;
        Ok(())
    })?;
    println!("rank {}: {on} messages on its host", w.rank());
    println!("rank {}: {between} messages sent to other hosts in {calls} calls", w.rank());
    Ok(())
}

/// Rank r's part for rank s of an all-to-allv of `part`: uneven, every third one empty.
fn pair_len(part: usize, r: usize, s: usize) -> usize {
    match (r + s) % 3 {
        0 => 0,
        k => part + 7 * r + 3 * s + k,
    }
}

/// The layout of parts of `len(p)` bytes for p = 0..n, in reverse order with 3-byte gaps, and
/// its span.
fn reversed(n: usize, len: impl Fn(usize) -> usize) -> (Vec<(usize, usize)>, usize) {
    let mut layout = vec![(0, 0); n];
    let mut at = 0;
    for p in (0..n).rev() {
        layout[p] = (at, len(p));
        at += len(p) + 3;
    }
    (layout, at)
}

/// Blocking all-to-all (parts of one length, as MPI_Alltoall starts it) and all-to-allv (uneven
/// parts, some empty: `pair_len`), both laid out in reverse rank order with 3-byte gaps, values
/// and gaps checked; returns the calls made.
fn alltoall_rounds(w: &Communicator, parts: &[usize]) -> Result<u64, Box<dyn std::error::Error>> {
    let (n, me) = (w.size(), w.rank());
    let value = |from: usize, to: usize, i: usize| byte(from * n + to, i);
    let mut calls = 0;
    for &part in parts {
        for uneven in [false, true] {
            let out_len = |s: usize| if uneven { pair_len(part, me, s) } else { part };
            let in_len = |r: usize| if uneven { pair_len(part, r, me) } else { part };
            let (out, out_span) = reversed(n, out_len);
            let (into, in_span) = reversed(n, in_len);
            let mut send = vec![0xabu8; out_span];
            for (s, &(d, l)) in out.iter().enumerate() {
                for i in 0..l {
                    send[d + i] = value(me, s, i);
                }
            }
            let mut recv = vec![0xcdu8; in_span];
            let from = (send.as_ptr(), send.len(), &out[..]);
            let to = (recv.as_mut_ptr(), recv.len(), &into[..]);
            // SAFETY: both buffers outlive the wait and are not touched before it.
            blocking(|| unsafe {
                match uneven {
                    true => w.ialltoallv_raw(from, to),
                    false => w.ialltoall_raw(from, to),
                }
            })?;
            calls += 1;
            for (r, &(d, l)) in into.iter().enumerate() {
                let ok = recv[d..d + l].iter().enumerate().all(|(i, &b)| b == value(r, me, i));
                assert!(ok, "alltoall (uneven: {uneven}) of {part} B at {me}: rank {r}'s part");
                assert!(recv[d + l..d + l + 3].iter().all(|&b| b == 0xcd), "alltoall of {part} B wrote a gap");
            }
        }
    }
    Ok(calls)
}

/// `alltoall_rounds` from 0 B to past `BB_HIER_ALLTOALL_MAX` a host, then counted where every
/// part fits it (on 2 hosts of up to 3 ranks each: parts of at most 2,730 bytes).
fn alltoall(w: &Communicator) -> Res {
    alltoall_rounds(w, &[0, 8, 100, 113, 1000, 2048, 2100, 4096, 5000, 20_000])?;
    // Parts of 0 bytes everywhere move nothing, so nothing crosses (uncounted above).
    counted(w, || alltoall_rounds(w, &[8, 100, 500, 1000, 1700]))
}

/// All-to-all and all-to-allv of parts past every host's share of `BB_HIER_ALLTOALL_MAX`
/// (13,000 bytes and up: the share is at most 12 KiB on 2 hosts of 1 to 3 ranks), counted as
/// `parts` does, beside the parts this rank sends other hosts that hold bytes
/// (`rank R: P parts with bytes for other hosts`: each needs its one message).
fn alltoall_past(w: &Communicator) -> Res {
    let (n, me, part) = (w.size(), w.rank(), 13_000);
    // Uncounted first: the first hierarchical call makes the host's communicators (messages).
    alltoall_rounds(w, &[part])?;
    counted(w, || alltoall_rounds(w, &[part]))?;
    let hosts: Vec<usize> = (0..n).map(|r| w.host_of(r)).collect::<Result<_, _>>()?;
    let away = (0..n).filter(|&s| hosts[s] != hosts[me]);
    // The all-to-all's parts, then the all-to-allv's that hold bytes.
    let parts = away.map(|s| 1 + usize::from(pair_len(part, me, s) > 0)).sum::<usize>();
    println!("rank {me}: {parts} parts with bytes for other hosts");
    Ok(())
}

/// An all-to-allv of 100-byte parts whose counts disagree (MPI calls it erroneous): rank
/// `receiver` expects 50 bytes from rank 0, which sends it 100.
fn disagreeing(w: &Communicator, receiver: usize) -> billboard::Result<()> {
    let (n, me) = (w.size(), w.rank());
    let expects = |r: usize| if me == receiver && r == 0 { 50 } else { 100 };
    let (out, out_span) = reversed(n, |_| 100);
    let (into, in_span) = reversed(n, expects);
    let send = vec![7u8; out_span];
    let mut recv = vec![0u8; in_span];
    let from = (send.as_ptr(), send.len(), &out[..]);
    let to = (recv.as_mut_ptr(), recv.len(), &into[..]);
    // SAFETY: both buffers outlive the wait and are not touched before it.
    blocking(|| unsafe { w.ialltoallv_raw(from, to) })
}

/// `disagreeing` with the last rank as the receiver (on another host than rank 0), then,
/// where rank 0's host holds another member, with that member; prints each rank's outcomes.
fn alltoallv_disagree(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    // Once right first: the first hierarchical call makes the host's communicators.
    alltoall_rounds(w, &[100])?;
    let hosts: Vec<usize> = (0..n).map(|r| w.host_of(r)).collect::<Result<_, _>>()?;
    let across = std::iter::once((n - 1, "across hosts"));
    let on_host = (1..n).find(|&r| hosts[r] == hosts[0]).map(|r| (r, "on a host"));
    for (receiver, place) in across.chain(on_host) {
        match disagreeing(w, receiver) {
            Ok(()) => println!("rank {me}: disagreeing counts {place}: ok"),
            Err(e) => println!("rank {me}: disagreeing counts {place} failed: {e}"),
        }
    }
    Ok(())
}

/// The disagreements `alltoallv-disagree-cases` runs: (bytes rank 0 sends rank 1, bytes rank 1
/// expects from rank 0), every other part 100 bytes; within a board data area, past it, past
/// the collectives' rendezvous threshold (16 KiB), and empty against not. Rank 1 receives from
/// rank 0 in the first of a pairwise exchange's rounds, so it still has parts to send after.
const DISAGREEING: [(usize, usize); 6] = [(100, 50), (50, 100), (100, 0), (0, 100), (40_000, 20_000), (20_000, 40_000)];

/// Each of [`DISAGREEING`] in turn (rank 0 to rank 1), then a right all-to-allv; prints each
/// rank's outcome of each (`rank R: counts S to E: ok` or `... failed: ERROR`).
fn alltoallv_disagree_cases(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    for (sent, expected) in DISAGREEING {
        let out_len = |s: usize| if me == 0 && s == 1 { sent } else { 100 };
        let in_len = |r: usize| if me == 1 && r == 0 { expected } else { 100 };
        let (out, out_span) = reversed(n, out_len);
        let (into, in_span) = reversed(n, in_len);
        let send = vec![7u8; out_span];
        let mut recv = vec![0u8; in_span];
        let from = (send.as_ptr(), send.len(), &out[..]);
        let to = (recv.as_mut_ptr(), recv.len(), &into[..]);
        // SAFETY: both buffers outlive the wait and are not touched before it.
        match blocking(|| unsafe { w.ialltoallv_raw(from, to) }) {
            Ok(()) => println!("rank {me}: counts {sent} to {expected}: ok"),
            Err(e) => println!("rank {me}: counts {sent} to {expected} failed: {e}"),
        }
    }
    alltoall_rounds(w, &[100])?;
    Ok(())
}

fn more(w: &Communicator) -> Res {
    more_rounds(w)?;
    let count = on_host(w, || more_rounds(w))?;
    println!("rank {}: {count} messages on its host", w.rank());
    Ok(())
}

/// Whether a collective's outcome says its communicator was revoked: an error, or (a board
/// wait that gave up) the thread's mark.
fn revoked(outcome: billboard::Result<()>) -> bool {
    matches!(outcome, Err(Error::Revoked { .. })) | billboard::coll::revoked_in_wait()
}

fn revoke(w: &Communicator) -> Res {
    let n = w.size();
    for revoker in [0, n - 1, n / 2] {
        let c = w.dup()?;
        // The first hierarchical collective makes the host's and the leaders' communicators.
        c.barrier()?;
        if c.rank() == revoker {
            std::thread::sleep(std::time::Duration::from_millis(300));
            c.revoke()?;
        } else {
            let outcome = c.barrier();
            assert!(revoked(outcome), "rank {}: a barrier revoked by {revoker} did not say so", c.rank());
        }
        let mut buf = [0u8; 8];
        assert!(revoked(c.bcast_bytes(&mut buf, 0)), "rank {}: a bcast on a revoked communicator", c.rank());
        w.barrier()?;
    }
    Ok(())
}

fn slots(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let comms: Vec<Communicator> = (0..12).map(|_| w.dup()).collect::<Result<_, _>>()?;
    let round = || -> Res {
        for (k, c) in comms.iter().enumerate() {
            c.barrier()?;
            let root = k % n;
            let mut buf: Vec<u8> = (0..1000).map(|i| if me == root { byte(k, i) } else { 0 }).collect();
            c.bcast_bytes(&mut buf, root)?;
            assert!(buf.iter().enumerate().all(|(i, &b)| b == byte(k, i)), "bcast on communicator {k} at {me}");
            for op in [Op::Sum, Op::Ordered] {
                let (mine, want) = (op.vector(me, 256), op.fold(0..n, 256));
                let mut all = vec![0; 256];
                blocking(|| unsafe { c.iallreduce_raw(mine.as_ptr(), all.as_mut_ptr(), 256, op.reduction()) })?;
                assert!(all == want, "allreduce on communicator {k} at {me}");
                let mut recv = vec![0; 256];
                c.scan_bytes(&mine, &mut recv, &mut |a, b| op.apply(a, b), false)?;
                assert!(recv == op.fold(0..me + 1, 256), "scan on communicator {k} at {me}");
            }
            alltoall_rounds(c, &[8, 1000])?;
        }
        Ok(())
    };
    round()?;
    let count = on_host(w, round)?;
    println!("rank {me}: {count} messages on its host");
    Ok(())
}

fn main() -> Res {
    let universe = billboard::init()?;
    let w = universe.world();
    type Check = fn(&Communicator) -> Res;
    let modes: [(&str, Check); 9] = [
        ("more", more),
        ("revoke", revoke),
        ("slots", slots),
        ("parts", parts),
        ("rooted", rooted),
        ("alltoall", alltoall),
        ("alltoall-past", alltoall_past),
        ("alltoallv-disagree", alltoallv_disagree),
        ("alltoallv-disagree-cases", alltoallv_disagree_cases),
    ];
    let mode = std::env::args().nth(1).unwrap_or_default();
    let Some((mode, check)) = modes.into_iter().find(|(m, _)| *m == mode) else {
        return Err(
            format!("bb-hier: no mode {mode:?} (more, revoke, slots, parts, rooted, alltoall, alltoall-past, alltoallv-disagree, alltoallv-disagree-cases)").into()
        );
    };
    check(&w)?;
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok {mode} on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

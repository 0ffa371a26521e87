//! Rank program for the collective tests: `bbrun -n N bb-coll [large] [sizes]`. Checks every
//! collective against values each rank can compute alone; panics on a mismatch; rank 0 prints
//! `ok coll`. `large` adds reductions of 300,000 B (rendezvous messages, shared copies);
//! `sizes` adds every data-moving collective at 0 B to 1 MiB (`sizes` below), the algorithms
//! for ranks on several hosts switch by size. `association` checks only that reductions
//! combine in the binomial tree's order (see [`association`]); `halves` only typed blocking
//! reduces (see [`halves`]).

use billboard::{Communicator, Reduction};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Affine maps x -> a*x + b composed in order: associative but not commutative, so a result
/// in the wrong rank order is caught.
fn affine(r: usize) -> [u64; 2] {
    [(r as u64 % 5) + 2, r as u64 * 3 + 1]
}

fn compose(invec: &[u8], inout: &mut [u8]) {
    let words = |b: &[u8]| -> Vec<u64> { b.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect() };
    let (x, y) = (words(invec), words(inout));
    // (x then y): y(x(t)) = ya*(xa*t + xb) + yb
    let z = [y[0].wrapping_mul(x[0]), y[0].wrapping_mul(x[1]).wrapping_add(y[1])];
    for (i, w) in z.iter().enumerate() {
        inout[8 * i..8 * i + 8].copy_from_slice(&w.to_ne_bytes());
    }
}

/// [`compose`] as a schedule's reduction: 16-byte elements, rank order kept.
fn ordered(f: fn(&[u8], &mut [u8])) -> Reduction {
    Reduction { op: Box::new(f), elem: 16, commutative: false }
}

fn compose_ranks(range: std::ops::Range<usize>) -> [u64; 2] {
    range.fold([1, 0], |acc, r| {
        let f = affine(r);
        [f[0].wrapping_mul(acc[0]), f[0].wrapping_mul(acc[1]).wrapping_add(f[1])]
    })
}

fn bytes_of(w: [u64; 2]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// Every collective on `w`; `with_sizes`: also [`sizes`] if asked for.
fn run(w: &Communicator, with_sizes: bool) -> Res {
    let (n, me) = (w.size(), w.rank());
    for root in 0..n {
        for len in [0usize, 1, 100, 8192, 8193, 10_000, 65_536, 65_537, 300_000] {
            let mut buf: Vec<u8> = if me == root { (0..len).map(|i| (i + root) as u8).collect() } else { vec![0; len] };
            w.bcast_bytes(&mut buf, root)?;
            assert!(buf.iter().enumerate().all(|(i, &b)| b == (i + root) as u8), "bcast from {root}, {len} B");
        }
        let mine = bytes_of(affine(me));
        let mut out = vec![0u8; 16];
        w.reduce_bytes(&mine, (me == root).then_some(&mut out[..]), root, &mut compose)?;
        if me == root {
            assert_eq!(out, bytes_of(compose_ranks(0..n)), "reduce to {root} keeps rank order");
        }
    }
    let mut all = vec![0u8; 16];
    w.allreduce_bytes(&bytes_of(affine(me)), &mut all, &mut compose)?;
    assert_eq!(all, bytes_of(compose_ranks(0..n)));

    let mut prefix = vec![0u8; 16];
    w.scan_bytes(&bytes_of(affine(me)), &mut prefix, &mut compose, false)?;
    assert_eq!(prefix, bytes_of(compose_ranks(0..me + 1)), "scan at {me}");
    let mut ex = bytes_of([7, 7]);
    w.scan_bytes(&bytes_of(affine(me)), &mut ex, &mut compose, true)?;
    if me > 0 {
        assert_eq!(ex, bytes_of(compose_ranks(0..me)), "exscan at {me}");
    }

    // Rank r contributes r+1 bytes of value r; parts laid out back to back.
    let layout: Vec<(usize, usize)> = (0..n)
        .scan(0, |off, r| {
            let p = (*off, r + 1);
            *off += r + 1;
            Some(p)
        })
        .collect();
    let total = layout.iter().map(|p| p.1).sum::<usize>();
    let expect: Vec<u8> = (0..n).flat_map(|r| std::iter::repeat_n(r as u8, r + 1)).collect();
    let send = vec![me as u8; me + 1];
    for root in [0, n - 1] {
        let mut g = vec![0xffu8; total];
        w.gatherv_bytes(&send, (me == root).then_some((&mut g[..], &layout[..])), root)?;
        if me == root {
            assert_eq!(g, expect, "gatherv at {root}");
        }
        let mut part = vec![0u8; me + 1];
        w.scatterv_bytes((me == root).then_some((&expect[..], &layout[..])), &mut part, root)?;
        assert_eq!(part, send, "scatterv from {root}");
    }
    let mut ag = vec![0u8; total];
    w.allgatherv_bytes(&send, &mut ag, &layout)?;
    assert_eq!(ag, expect);

    // All-to-all: rank r sends byte (r*n + s) to rank s, 3 copies each.
    let per = 3;
    let blocks: Vec<(usize, usize)> = (0..n).map(|r| (r * per, per)).collect();
    let out: Vec<u8> = (0..n).flat_map(|s| std::iter::repeat_n((me * n + s) as u8, per)).collect();
    let mut inb = vec![0u8; n * per];
    w.alltoallv_bytes(&out, &blocks, &mut inb, &blocks)?;
    let want: Vec<u8> = (0..n).flat_map(|r| std::iter::repeat_n((r * n + me) as u8, per)).collect();
    assert_eq!(inb, want, "alltoall at {me}");

    // A communicator made by two ranks alone (the others do not take part), in reverse order.
    if n >= 2 {
        match w.subset(&[n - 1, 0], 5)? {
            Some(pair) => {
                assert_eq!((pair.size(), pair.rank()), (2, if me == 0 { 1 } else { 0 }));
                let mut b = if pair.rank() == 0 { [9u8; 4] } else { [0; 4] };
                pair.bcast_bytes(&mut b, 0)?;
                assert_eq!(b, [9; 4]);
            }
            None => assert!(me != 0 && me != n - 1, "rank {me} is in the subset"),
        }
    }

    nonblocking(w)?;
    reductions(w, std::env::args().any(|a| a == "large"))?;
    if with_sizes && std::env::args().any(|a| a == "sizes") {
        sizes(w)?;
    }

    // Arguments are checked, with messages that say what is wrong.
    let e = w.bcast_bytes(&mut [0u8; 1], n).unwrap_err();
    assert!(e.to_string().contains(&format!("rank {n}")), "{e}");
    Ok(())
}

/// The nonblocking collectives, several in flight at once with a blocking one among their
/// starts, completed in reverse order: each result checked as for the blocking forms.
fn nonblocking(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let root = n - 1;
    let len = 300_000; // a rendezvous message, moved on in rounds like the small ones
    let mut big: Vec<u8> = if me == root { (0..len).map(|i| (i % 251) as u8).collect() } else { vec![0; len] };
    let mine = bytes_of(affine(me));
    let (mut reduced, mut all, mut blocking) = (vec![0u8; 16], vec![0u8; 16], vec![0u8; 16]);
    let (mut prefix, mut ex) = (vec![0u8; 16], bytes_of([7, 7]));
    // SAFETY: every buffer outlives the wait below and is not touched before it.
    let ops = unsafe {
        [
            w.ibarrier()?,
            w.ibcast_raw(big.as_mut_ptr(), len, root)?,
            w.ireduce_raw(mine.as_ptr(), reduced.as_mut_ptr(), 16, root, ordered(compose))?,
            w.iallreduce_raw(mine.as_ptr(), all.as_mut_ptr(), 16, ordered(compose))?,
            w.iscan_raw(mine.as_ptr(), prefix.as_mut_ptr(), 16, Box::new(compose), false)?,
            w.iscan_raw(mine.as_ptr(), ex.as_mut_ptr(), 16, Box::new(compose), true)?,
        ]
    };
    w.allreduce_bytes(&mine, &mut blocking, &mut compose)?;
    for op in ops.into_iter().rev() {
        op.wait()?;
    }
    assert!(big.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "ibcast from {root}");
    if me == root {
        assert_eq!(reduced, bytes_of(compose_ranks(0..n)), "ireduce to {root} keeps rank order");
    }
    assert_eq!(all, bytes_of(compose_ranks(0..n)), "iallreduce");
    assert_eq!(blocking, all, "the blocking allreduce among them");
    assert_eq!(prefix, bytes_of(compose_ranks(0..me + 1)), "iscan at {me}");
    let want = if me == 0 { bytes_of([7, 7]) } else { bytes_of(compose_ranks(0..me)) };
    assert_eq!(ex, want, "iexscan at {me} (rank 0's is left as it was)");
    let e = w.ibarrier().and_then(|b| {
        b.wait()?;
        // SAFETY: nothing is sent: the root is refused first.
        unsafe { w.ibcast_raw(big.as_mut_ptr(), 1, n) }.map(drop)
    });
    assert!(e.unwrap_err().to_string().contains(&format!("rank {n}")), "a bad root is named");

    // Schedules reuse their slots and scratch blocks: sizes go up and down across the bound
    // above which a block is not kept (64 KiB).
    for words in [1u64, 20_000, 3, 5_000, 1] {
        let mine: Vec<u8> = (0..words).flat_map(|i| (i * n as u64 + me as u64).to_le_bytes()).collect();
        let mut sum = vec![0u8; mine.len()];
        // SAFETY: both buffers outlive the wait.
        unsafe {
            w.iallreduce_raw(
                mine.as_ptr(),
                sum.as_mut_ptr(),
                mine.len(),
                Reduction { op: Box::new(add_words), elem: 8, commutative: true },
            )?
        }
        .wait()?;
        let n = n as u64;
        for (i, word) in sum.chunks_exact(8).enumerate() {
            let want = i as u64 * n * n + n * (n - 1) / 2;
            assert_eq!(u64::from_le_bytes(word.try_into().unwrap()), want, "iallreduce of {words} words, word {i}");
        }
    }
    Ok(())
}

/// Rank r's element i for the reduction tests: an affine map that depends on both.
fn element(r: usize, i: usize) -> [u64; 2] {
    affine(r * 7 + i % 11)
}

/// [`compose`] on every 16-byte element of a vector.
fn compose_each(invec: &[u8], inout: &mut [u8]) {
    for (x, y) in invec.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
        compose(x, y);
    }
}

/// Reduce and allreduce of vectors of a non-commutative operator, through the schedules that
/// MPI's blocking and nonblocking forms run (so whichever algorithm `BB_COLL_REDUCE` and
/// `BB_COLL_ALLREDUCE` force or the table picks), at sizes around the switch points (post,
/// inline, split, eager limits; with `large` also 300,000 B), to the first, middle and last
/// root, in place and not; each result checked against the fold computed here.
fn reductions(w: &Communicator, large: bool) -> Res {
    let sizes = [0usize, 16, 4096, 4112, 8176, 8192, 8208, 16_384, 16_400, 65_520, 65_536, 65_552, 300_000];
    ordered_reductions(w, &sizes[..sizes.len() - usize::from(!large)], false)
}

/// [`reductions`] at `sizes`; `blocks`: started as MPI's blocking forms start them (waited
/// for at once, so they may run on the board).
fn ordered_reductions(w: &Communicator, sizes: &[usize], blocks: bool) -> Res {
    let (n, me) = (w.size(), w.rank());
    let mut roots = vec![0, n / 2, n - 1];
    roots.dedup();
    let start = |f: &mut dyn FnMut() -> billboard::Result<billboard::Collective>| {
        billboard::coll::blocking(blocks, f).and_then(billboard::Collective::wait)
    };
    for &len in sizes {
        let mine: Vec<u8> = (0..len / 16).flat_map(|i| bytes_of(element(me, i))).collect();
        let want: Vec<u8> = (0..len / 16)
            .flat_map(|i| {
                let f = (0..n).fold([1u64, 0], |acc, r| {
                    let f = element(r, i);
                    [f[0].wrapping_mul(acc[0]), f[0].wrapping_mul(acc[1]).wrapping_add(f[1])]
                });
                bytes_of(f)
            })
            .collect();
        for in_place in [false, true] {
            let mut all = if in_place { mine.clone() } else { vec![0xee; len] };
            let send = if in_place { all.as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            start(&mut || unsafe { w.iallreduce_raw(send, all.as_mut_ptr(), len, ordered(compose_each)) })?;
            assert!(all == want, "allreduce of {len} B (in place: {in_place}) at {me} of {n}");
            for &root in &roots {
                let mut out = if in_place && me == root { mine.clone() } else { vec![0xee; len] };
                let send = if in_place && me == root { out.as_ptr() } else { mine.as_ptr() };
                // SAFETY: as above.
                start(&mut || unsafe { w.ireduce_raw(send, out.as_mut_ptr(), len, root, ordered(compose_each)) })?;
                if me == root {
                    assert!(out == want, "reduce of {len} B to {root} (in place: {in_place}) of {n}");
                }
            }
        }
    }
    Ok(())
}

/// Byte i of the part rank `from` contributes to rank `to` (`to` = 0 where every rank gets the
/// same part).
fn byte(from: usize, to: usize, i: usize) -> u8 {
    (from * 31 + to * 7 + i * 13 + i / 251) as u8
}

/// Every data-moving collective at sizes from 0 B to 1 MiB (the switch points of the network
/// and hierarchical algorithms lie between), roots first, middle and last, in place and not,
/// each result checked against what this rank computes alone: bcast, allgatherv (uneven parts
/// laid out in reverse rank order with gaps that must stay untouched), gather and scatter of
/// parts of one length (reverse order, gaps), alltoallv, and reduce
/// and allreduce of a commutative sum (the ring and the hierarchy's reduce of any placement).
fn sizes(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let mut roots = vec![0, n / 2, n - 1];
    roots.dedup();
    for len in [0usize, 8, 65_536, 300_000, 1 << 20] {
        for &root in &roots {
            let mut buf: Vec<u8> =
                if me == root { (0..len).map(|i| byte(root, 0, i)).collect() } else { vec![0xee; len] };
            w.bcast_bytes(&mut buf, root)?;
            assert!(
                buf.iter().enumerate().all(|(i, &b)| b == byte(root, 0, i)),
                "bcast of {len} B from {root} at {me}"
            );
        }
    }
    for part in [0usize, 8, 20_000, 150_000] {
        // Rank r's part is part + r bytes; parts in reverse rank order, 5 bytes apart.
        let mut layout = vec![(0, 0); n];
        let mut at = 0;
        for r in (0..n).rev() {
            layout[r] = (at, part + r);
            at += part + r + 5;
        }
        for in_place in [false, true] {
            let mine: Vec<u8> = (0..part + me).map(|i| byte(me, 0, i)).collect();
            let mut all = vec![0xabu8; at];
            let (d, l) = layout[me];
            if in_place {
                all[d..d + l].copy_from_slice(&mine);
            }
            let send = if in_place { all[d..].as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            unsafe { w.iallgatherv_raw(send, l, all.as_mut_ptr(), all.len(), &layout)? }.wait()?;
            for (r, &(d, l)) in layout.iter().enumerate() {
                let ok = all[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r, 0, i));
                assert!(ok, "allgatherv of {part}+r B parts (in place: {in_place}) at {me}: rank {r}'s part");
                assert!(all[d + l..(d + l + 5).min(at)].iter().all(|&b| b == 0xab), "a gap was written at {me}");
            }
        }
        // Gather and scatter of parts of one length (part bytes), reverse layout with gaps.
        let one: Vec<(usize, usize)> = (0..n).map(|r| ((n - 1 - r) * (part + 3), part)).collect();
        let span = n * (part + 3);
        for &root in &roots {
            for in_place in [false, true] {
                let mine: Vec<u8> = (0..part).map(|i| byte(me, root, i)).collect();
                let mut g = vec![0xabu8; span];
                let (d, _) = one[me];
                let at_root = me == root;
                if in_place && at_root {
                    g[d..d + part].copy_from_slice(&mine);
                }
                let send = if in_place && at_root { g[d..].as_ptr() } else { mine.as_ptr() };
                let recv = at_root.then_some((g.as_mut_ptr(), span, &one[..]));
                // SAFETY: both buffers outlive the wait and are not touched before it.
                unsafe { w.igather_raw(send, part, recv, root)? }.wait()?;
                if at_root {
                    for (r, &(d, l)) in one.iter().enumerate() {
                        let ok = g[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r, root, i));
                        assert!(ok, "gather of {part} B parts to {root} (in place: {in_place}): rank {r}'s part");
                        assert!(g[d + l..d + l + 3].iter().all(|&b| b == 0xab), "gather wrote a gap");
                    }
                }
                let all: Vec<u8> = if at_root {
                    let mut a = vec![0xcdu8; span];
                    for (r, &(d, l)) in one.iter().enumerate() {
                        a[d..d + l].iter_mut().enumerate().for_each(|(i, b)| *b = byte(root, r, i));
                    }
                    a
                } else {
                    Vec::new()
                };
                let mut got = vec![0u8; part];
                let send = at_root.then_some((all.as_ptr(), all.len(), &one[..]));
                // In place the root receives nothing (its part stays where it is).
                let (recv, len) = if in_place && at_root { (got.as_mut_ptr(), 0) } else { (got.as_mut_ptr(), part) };
                // SAFETY: as above.
                unsafe { w.iscatter_raw(send, recv, len, root)? }.wait()?;
                if !(in_place && at_root) {
                    let ok = got.iter().enumerate().all(|(i, &b)| b == byte(root, me, i));
                    assert!(ok, "scatter of {part} B parts from {root} (in place: {in_place}) at {me}");
                }
            }
        }
        // All-to-all: rank r sends part + s bytes to rank s.
        let out: Vec<(usize, usize)> =
            (0..n).scan(0, |at, s| Some((std::mem::replace(at, *at + part + s), part + s))).collect();
        let into: Vec<(usize, usize)> =
            (0..n).scan(0, |at, _| Some((std::mem::replace(at, *at + part + me), part + me))).collect();
        let send: Vec<u8> = (0..n).flat_map(|s| (0..part + s).map(move |i| byte(me, s, i))).collect();
        let mut recv = vec![0u8; n * (part + me)];
        w.alltoallv_bytes(&send, &out, &mut recv, &into)?;
        for (r, &(d, l)) in into.iter().enumerate() {
            assert!(recv[d..d + l].iter().enumerate().all(|(i, &b)| b == byte(r, me, i)), "alltoallv from {r} at {me}");
        }
    }
    let sum = || Reduction { op: Box::new(add_words), elem: 8, commutative: true };
    for len in [0usize, 8, 4096, 65_536, 300_000, 1 << 20] {
        let (mine, want) = summed_words(me, n, len);
        for in_place in [false, true] {
            let mut all = if in_place { mine.clone() } else { vec![0xee; len] };
            let send = if in_place { all.as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            unsafe { w.iallreduce_raw(send, all.as_mut_ptr(), len, sum())? }.wait()?;
            assert!(all == want, "allreduce (sum) of {len} B (in place: {in_place}) at {me} of {n}");
            for &root in &roots {
                let mut out = if in_place && me == root { mine.clone() } else { vec![0xee; len] };
                let send = if in_place && me == root { out.as_ptr() } else { mine.as_ptr() };
                // SAFETY: as above.
                unsafe { w.ireduce_raw(send, out.as_mut_ptr(), len, root, sum())? }.wait()?;
                if me == root {
                    assert!(out == want, "reduce (sum) of {len} B to {root} (in place: {in_place}) of {n}");
                }
            }
        }
        w.barrier()?;
    }
    Ok(())
}

/// `inout[i] += in[i]` over little-endian u64 words.
/// Neither associative nor commutative, word by word: the result names the expression tree
/// that produced it, so a reduction that groups its operands otherwise is caught.
fn tree_mark(invec: &[u8], inout: &mut [u8]) {
    for (a, out) in invec.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
        let (a, b) = (u64::from_le_bytes(a.try_into().unwrap()), u64::from_le_bytes((&*out).try_into().unwrap()));
        let c = a.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(b.rotate_left(17)) ^ 0x632B_E59B_D9B4_E019;
        out.copy_from_slice(&c.to_le_bytes());
    }
}

fn leaf(r: usize, words: usize) -> Vec<u8> {
    (0..words).flat_map(|i| ((r as u64 + 1) * 0x1000_0001 + i as u64).to_le_bytes()).collect()
}

/// The binomial tree's reduction into rank 0, done alone: each rank's partial result takes in
/// the one `mask` above it, lower ranks as `invec`.
fn tree_result(n: usize, words: usize) -> Vec<u8> {
    let mut acc: Vec<Vec<u8>> = (0..n).map(|r| leaf(r, words)).collect();
    let mut mask = 1;
    while mask < n {
        for r in (0..n).step_by(2 * mask).filter(|&r| r + mask < n) {
            let mut higher = acc[r + mask].clone();
            tree_mark(&acc[r], &mut higher);
            acc[r] = higher;
        }
        mask <<= 1;
    }
    acc.swap_remove(0)
}

/// Reduce (every root) and allreduce combine their operands in the binomial tree's order,
/// whichever of the tree, the posts or the board runs them: the same arguments in the same
/// order give the same bits (MPI 4.0 section 6.9.1 recommends it; ScaLAPACK's eigensolvers
/// need it). Vectors of 8 B (inline on the board) and 1 KiB (its data area).
fn association(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    for words in [1, 128] {
        let want = tree_result(n, words);
        let mine = leaf(me, words);
        for root in 0..n {
            let mut out = vec![0u8; 8 * words];
            w.reduce_bytes(&mine, (me == root).then_some(&mut out[..]), root, &mut tree_mark)?;
            if me == root {
                assert!(out == want, "reduce of {words} words to {root} of {n}: not the tree's grouping");
            }
        }
        let mut all = vec![0u8; 8 * words];
        w.allreduce_bytes(&mine, &mut all, &mut tree_mark)?;
        assert!(all == want, "allreduce of {words} words at {me} of {n}: not the tree's grouping");
    }
    Ok(())
}

/// Blocking barrier, bcast (every root, inline and data-area sizes), reduce and allreduce
/// (a commutative sum, and a non-commutative operator; every root, in place and not; as MPI's
/// blocking forms start them) and allgather, values checked, twice; the second time counting messages:
/// prints how many this rank exchanged with members of its own host (none where the
/// hierarchy's host phases run on the board, `coll/hier_board.rs`; a non-commutative
/// reduction on hosts whose ranks are not consecutive runs flat, so it is left out of that
/// count).
/// This rank's `len` bytes of words for a sum over `n` ranks, and the sum every rank should get.
fn summed_words(me: usize, n: usize, len: usize) -> (Vec<u8>, Vec<u8>) {
    let word = |r: usize, i: usize| (i as u64).wrapping_mul(0x9e37_79b9) ^ (r as u64 * 1001);
    let mine = (0..len / 8).flat_map(|i| word(me, i).to_le_bytes()).collect();
    let want = (0..len / 8).flat_map(|i| (0..n).fold(0u64, |a, r| a.wrapping_add(word(r, i))).to_le_bytes()).collect();
    (mine, want)
}

fn hier_board(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let hosts: Vec<usize> = (0..n).map(|r| w.host_of(r)).collect::<Result<_, _>>()?;
    let consecutive = (1..n).all(|r| hosts[r] == hosts[r - 1] || !hosts[..r].contains(&hosts[r]));
    let rounds = |ordered: bool| -> Res {
        for _ in 0..3 {
            w.barrier()?;
        }
        for root in 0..n {
            for len in [0usize, 8, 112, 113, 2048] {
                let fill = |i: usize| (i + root + len) as u8;
                let mut buf: Vec<u8> = if me == root { (0..len).map(fill).collect() } else { vec![0; len] };
                w.bcast_bytes(&mut buf, root)?;
                assert!(buf.iter().enumerate().all(|(i, &b)| b == fill(i)), "bcast from {root}, {len} B at {me}");
            }
        }
        summed(w, &[0, 8, 112, 1024, 2048], true)?;
        gathered_to_all(w)?;
        if ordered {
            ordered_reductions(w, &[0, 16, 112, 1024, 2048], true)?;
        }
        Ok(w.barrier()?)
    };
    rounds(true)?;
    let before = w.traffic();
    rounds(consecutive)?;
    let after = w.traffic();
    let mut on_host = 0;
    for r in (0..n).filter(|&r| r != me && hosts[r] == hosts[me]) {
        let (a, b) = (&after[w.world_rank(r)], &before[w.world_rank(r)]);
        on_host += a.sent_messages - b.sent_messages + a.received_messages - b.received_messages;
    }
    println!("rank {me}: {on_host} messages on its host");
    Ok(())
}

/// Blocking all-gathers (as MPI_Allgather starts them) of parts up to one board data area,
/// in rank order and reversed, in place and not, and gathers to and scatters from every root,
/// values checked.
fn gathered_to_all(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    for part in [0usize, 8, 113, 1024, 2048] {
        let mine: Vec<u8> = (0..part).map(|i| byte(me, 0, i)).collect();
        for (reversed, in_place) in [(false, false), (true, false), (false, true), (true, true)] {
            let place = |r: usize| if reversed { n - 1 - r } else { r };
            let layout: Vec<(usize, usize)> = (0..n).map(|r| (place(r) * part, part)).collect();
            let mut all = vec![0xee; n * part];
            if in_place {
                all[place(me) * part..][..part].copy_from_slice(&mine);
            }
            let send = if in_place { all[place(me) * part..].as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            let started = billboard::coll::blocking(true, || unsafe {
                w.iallgatherv_raw(send, part, all.as_mut_ptr(), n * part, &layout)
            });
            started?.wait()?;
            for r in 0..n {
                let got = &all[place(r) * part..][..part];
                assert!(
                    got.iter().enumerate().all(|(i, &b)| b == byte(r, 0, i)),
                    "allgather of {part} B: rank {r}'s part at {me}"
                );
            }
            // A scatter's host block inline in one board post (3 members of up to 8 B; larger
            // blocks go by messages, `gather.rs`).
            for root in (0..n).filter(|_| part <= 8) {
                let parts: Vec<u8> = (0..n * part)
                    .map(|k| byte(root, (0..n).find(|&r| place(r) == k / part).unwrap(), k % part))
                    .collect();
                let from = (me == root).then(|| (parts.as_ptr(), n * part, &layout[..]));
                let mut got = vec![0xee; part];
                // SAFETY: both buffers outlive the wait and are not touched before it.
                let started =
                    billboard::coll::blocking(true, || unsafe { w.iscatter_raw(from, got.as_mut_ptr(), part, root) });
                started?.wait()?;
                let ok = got.iter().enumerate().all(|(i, &b)| b == byte(root, me, i));
                assert!(ok, "scatter of {part} B from {root} at {me}");
            }
            // Larger parts go straight to the root, by messages (BB_GATHER_HIER_MAX).
            for root in (0..n).filter(|_| part <= 1024) {
                let mut all = vec![0xee; n * part];
                let into = (me == root).then(|| (all.as_mut_ptr(), n * part, &layout[..]));
                // SAFETY: both buffers outlive the wait and are not touched before it.
                let started =
                    billboard::coll::blocking(true, || unsafe { w.igather_raw(mine.as_ptr(), part, into, root) });
                started?.wait()?;
                for r in (0..n).filter(|_| me == root) {
                    let got = &all[place(r) * part..][..part];
                    let ok = got.iter().enumerate().all(|(i, &b)| b == byte(r, 0, i));
                    assert!(ok, "gather of {part} B to {root}: rank {r}'s part");
                }
            }
        }
    }
    Ok(())
}

/// Reduce (every root) and allreduce of a commutative sum of words at `sizes`, in place and
/// not; `blocks`: started as MPI's blocking forms start them.
fn summed(w: &Communicator, sizes: &[usize], blocks: bool) -> Res {
    let (n, me) = (w.size(), w.rank());
    let sum = || Reduction { op: Box::new(add_words), elem: 8, commutative: true };
    let start = |f: &mut dyn FnMut() -> billboard::Result<billboard::Collective>| {
        billboard::coll::blocking(blocks, f).and_then(billboard::Collective::wait)
    };
    for &len in sizes {
        let (mine, want) = summed_words(me, n, len);
        for in_place in [false, true] {
            let mut all = if in_place { mine.clone() } else { vec![0xee; len] };
            let send = if in_place { all.as_ptr() } else { mine.as_ptr() };
            // SAFETY: both buffers outlive the wait and are not touched before it.
            start(&mut || unsafe { w.iallreduce_raw(send, all.as_mut_ptr(), len, sum()) })?;
            assert!(all == want, "allreduce (sum) of {len} B (in place: {in_place}) at {me} of {n}");
            for root in 0..n {
                let mut out = if in_place && me == root { mine.clone() } else { vec![0xee; len] };
                let send = if in_place && me == root { out.as_ptr() } else { mine.as_ptr() };
                // SAFETY: as above.
                start(&mut || unsafe { w.ireduce_raw(send, out.as_mut_ptr(), len, root, sum()) })?;
                if me == root {
                    assert!(out == want, "reduce (sum) of {len} B to {root} (in place: {in_place}) of {n}");
                }
            }
        }
    }
    Ok(())
}

/// Blocking reduces of typed vectors (`reduce_elements`: the 2-rank halves where the table or
/// `BB_COLL_REDUCE=halves` gives it, else the tree) to every root: the non-commutative
/// [`compose_each`] on 16-byte elements and the commutative [`add_words`] on 8-byte ones, at
/// lengths around the halves' 64 KiB chunk and its threshold, odd counts of elements, and up
/// to 1 MiB; each checked against the fold in rank order computed here, and the non-root's
/// receive buffer left untouched.
fn halves(w: &Communicator) -> Res {
    typed_reductions(w, true)
}

/// [`halves`] for blocking allreduces (`allreduce_elements`: the 2-rank halves where the table
/// or `BB_COLL_ALLREDUCE=halves` gives it, else the tree and a broadcast): every rank's result
/// checked.
fn allreduce_halves(w: &Communicator) -> Res {
    typed_reductions(w, false)
}

/// The typed reductions of [`halves`] (`rooted`: reduces to every root) or of
/// [`allreduce_halves`].
fn typed_reductions(w: &Communicator, rooted: bool) -> Res {
    let (n, me) = (w.size(), w.rank());
    // Around the board's data area (128 elements) and its reduce cell (1,024), too.
    let elements = [0usize, 1, 3, 128, 129, 1023, 1024, 1025, 2049, 4095, 4096, 4097, 8191, 8193, 20_001, 65_537];
    let roots = if rooted { 0..n } else { 0..1 };
    for &count in &elements {
        for root in roots.clone() {
            let lands = !rooted || me == root;
            let len = count * 16;
            let mine: Vec<u8> = (0..count).flat_map(|i| bytes_of(element(me, i))).collect();
            let mut out = vec![0xee; len];
            match rooted {
                true => w.reduce_elements(&mine, Some(&mut out), root, &mut compose_each, (16, false))?,
                false => w.allreduce_elements(&mine, &mut out, &mut compose_each, (16, false))?,
            }
            if lands {
                let want: Vec<u8> = (0..count)
                    .flat_map(|i| {
                        bytes_of((0..n).fold([1u64, 0], |acc, r| {
                            let f = element(r, i);
                            [f[0].wrapping_mul(acc[0]), f[0].wrapping_mul(acc[1]).wrapping_add(f[1])]
                        }))
                    })
                    .collect();
                assert!(out == want, "ordered reduction ({rooted}) of {count} elements to {root} at {me} of {n}");
            } else {
                assert!(out.iter().all(|&b| b == 0xee), "ordered reduce to {root} wrote rank {me}'s buffer");
            }
            // 8-byte words, an odd count of them (the halves cut between words).
            let words = 2 * count + 1;
            let word = |r: usize, i: usize| (r as u64 + 1).wrapping_mul(0x9e37_79b9).wrapping_add(i as u64);
            let mine: Vec<u8> = (0..words).flat_map(|i| word(me, i).to_le_bytes()).collect();
            let mut out = vec![0xee; words * 8];
            match rooted {
                true => w.reduce_elements(&mine, Some(&mut out), root, &mut add_words, (8, true))?,
                false => w.allreduce_elements(&mine, &mut out, &mut add_words, (8, true))?,
            }
            if lands {
                let want: Vec<u8> = (0..words)
                    .flat_map(|i| (0..n).fold(0u64, |a, r| a.wrapping_add(word(r, i))).to_le_bytes())
                    .collect();
                assert!(out == want, "sum ({rooted}) of {words} words to {root} at {me} of {n}");
            }
        }
    }
    Ok(())
}

fn add_words(inv: &[u8], inout: &mut [u8]) {
    for (a, b) in inv.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
        let s = u64::from_le_bytes(a.try_into().unwrap()).wrapping_add(u64::from_le_bytes(b.try_into().unwrap()));
        b.copy_from_slice(&s.to_le_bytes());
    }
}

fn main() -> Res {
    let universe = billboard::init()?;
    let w = universe.world();
    // A nonblocking broadcast as a fresh communicator's first collective: choosing its
    // algorithm must not need the engine, which the schedule being written holds.
    let fresh = w.dup()?;
    let mut first = vec![if fresh.rank() == 0 { 7u8 } else { 0 }; 100];
    // SAFETY: `first` is neither touched nor dropped before the broadcast is waited for.
    unsafe { fresh.ibcast_raw(first.as_mut_ptr(), first.len(), 0) }?.wait()?;
    assert!(first.iter().all(|&b| b == 7), "first ibcast on a fresh communicator");
    // Modes that run one check alone.
    type Check = fn(&Communicator) -> Res;
    let modes: [(&str, Check); 4] = [
        ("hier-board", hier_board),
        ("association", association),
        ("halves", halves),
        ("allreduce-halves", allreduce_halves),
    ];
    if let Some((mode, check)) = modes.into_iter().find(|(mode, _)| std::env::args().any(|a| a == *mode)) {
        check(&w)?;
        w.barrier()?;
        if w.rank() == 0 {
            println!("ok {mode} on {} ranks", w.size());
        }
        universe.finalize()?;
        return Ok(());
    }
    run(&w, true)?;
    // Collectives on a split communicator stay inside it (the sizes on the world only: the
    // split adds placements, not sizes).
    let half = w.split(Some((w.rank() % 2) as u32), 0)?.expect("colored");
    run(&half, false)?;
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok coll on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

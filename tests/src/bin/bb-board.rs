//! Rank program for the board's collectives (`coll/board*.rs`): `bbrun -n N bb-board [ITERS]`,
//! run with `BB_COLL_<NAME>=board`. Many collectives back to back, roots and sizes varying
//! every time (so each buffer of a slot is reused with other lengths, inline and not), on two
//! communicators alternating, one of them freed and made anew every few rounds (its slot
//! reused by the next, whose first epochs must not match the lines the freed one left), and
//! more communicators at once than there are slots (the rest fall back, silently). Every
//! result is checked against what each rank computes alone; rank 0 prints `ok board`.

use billboard::{coll::blocking, Communicator};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Byte `j` of rank `r`'s data in round `i`: differs between rounds, ranks and positions, so
/// a line left from an earlier round (or communicator) reads wrong.
fn val(r: usize, i: usize, j: usize) -> u8 {
    (r * 31 + i * 7 + j * 3 + 1) as u8
}

fn data(r: usize, i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| val(r, i, j)).collect()
}

/// Affine maps x -> a*x + b composed in rank order: associative, not commutative.
fn affine(r: usize, i: usize, k: usize) -> [u64; 2] {
    [((r + i + k) as u64 % 5) + 2, (r * 3 + i + k) as u64 + 1]
}

fn words(b: &[u8]) -> Vec<u64> {
    b.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// `inout = in ⊕ inout` element-wise over 16-byte affine maps ("in, then inout").
fn compose(invec: &[u8], inout: &mut [u8]) {
    let (x, y) = (words(invec), words(inout));
    for (e, (x, y)) in x.chunks(2).zip(y.chunks(2)).enumerate() {
        let z = [y[0].wrapping_mul(x[0]), y[0].wrapping_mul(x[1]).wrapping_add(y[1])];
        inout[16 * e..16 * e + 8].copy_from_slice(&z[0].to_ne_bytes());
        inout[16 * e + 8..16 * e + 16].copy_from_slice(&z[1].to_ne_bytes());
    }
}

/// Rank `r`'s vector of `elems` maps in round `i`.
fn vector(r: usize, i: usize, elems: usize) -> Vec<u8> {
    (0..elems).flat_map(|k| affine(r, i, k)).flat_map(u64::to_ne_bytes).collect()
}

/// Every rank's vector composed in rank order.
fn composed(n: usize, i: usize, elems: usize) -> Vec<u8> {
    let mut acc = vector(n - 1, i, elems);
    for r in (0..n - 1).rev() {
        compose(&vector(r, i, elems), &mut acc);
    }
    acc
}

/// One round `i` of every board collective on `c`.
fn round(c: &Communicator, i: usize) -> Res {
    let (n, me) = (c.size(), c.rank());
    let root = (i * 7 + 3) % n;
    // Sizes cycle through empty, inline (<= 112 B), just past it, and the data area's limit.
    let len = [0, 1, 8, 112, 113, 500, 2048][i % 7];
    let part = [1, 8, 16, 100, 113, 2048 / n][i % 6].min(2048 / n);
    c.barrier()?;

    let mut buf = if me == root { data(root, i, len) } else { vec![0xEE; len] };
    c.bcast_bytes(&mut buf, root)?;
    assert_eq!(buf, data(root, i, len), "round {i}: bcast of {len} B from {root}");

    let elems = [1, 4, 7, 128][i % 4];
    let mine = vector(me, i, elems);
    let mut out = vec![0u8; mine.len()];
    c.reduce_bytes(&mine, (me == root).then_some(&mut out[..]), root, &mut compose)?;
    if me == root {
        assert_eq!(out, composed(n, i, elems), "round {i}: reduce of {elems} maps to {root}, rank order");
    }
    let mut all = vec![0u8; mine.len()];
    c.allreduce_bytes(&mine, &mut all, &mut compose)?;
    assert_eq!(all, composed(n, i, elems), "round {i}: allreduce of {elems} maps");

    reductions_by_block_and_prefix(c, i, elems)?;
    parts_of_any_length(c, i, root)?;

    // Parts in reverse rank order with 3-byte gaps that must stay untouched.
    let stride = part + 3;
    let layout: Vec<(usize, usize)> = (0..n).map(|r| ((n - 1 - r) * stride, part)).collect();
    let in_place = i.is_multiple_of(3);
    let expect = |buf: &[u8], what: &str, of: &dyn Fn(usize) -> Vec<u8>| {
        for (r, &(d, l)) in layout.iter().enumerate() {
            assert_eq!(&buf[d..d + l], &of(r)[..], "round {i}: {what}, rank {r}'s part of {part} B");
            assert!(buf[d + l..d + l + 3].iter().all(|&b| b == 0xEE), "round {i}: {what} wrote a gap");
        }
    };

    let mut gathered = vec![0xEE; n * stride];
    let send = data(me, i, part);
    if me == root && in_place {
        let d = layout[me].0;
        gathered[d..d + part].copy_from_slice(&send);
    }
    let recv = (me == root).then(|| (gathered.as_mut_ptr(), gathered.len(), &layout[..]));
    let from = if me == root && in_place { gathered[layout[me].0..].as_ptr() } else { send.as_ptr() };
    // SAFETY: the buffers live and stay untouched until the wait below.
    blocking(true, || unsafe { c.igather_raw(from, part, recv, root) })?.wait()?;
    if me == root {
        expect(&gathered, "gather", &|r| data(r, i, part));
    }

    let parts = if me == root {
        (0..n).fold(vec![0xEE; n * stride], |mut b, r| {
            let d = layout[r].0;
            b[d..d + part].copy_from_slice(&data(r, i + 1, part));
            b
        })
    } else {
        Vec::new()
    };
    let mut mine = vec![0u8; part];
    let send = (me == root).then(|| (parts.as_ptr(), parts.len(), &layout[..]));
    let (into, cap) = if me == root && in_place { (mine.as_mut_ptr(), 0) } else { (mine.as_mut_ptr(), part) };
    // SAFETY: as above.
    blocking(true, || unsafe { c.iscatter_raw(send, into, cap, root) })?.wait()?;
    if cap > 0 {
        assert_eq!(mine, data(me, i + 1, part), "round {i}: scatter of {part} B from {root}");
    }

    let mut everyone = vec![0xEE; n * stride];
    let send = data(me, i + 2, part);
    let d = layout[me].0;
    if in_place {
        everyone[d..d + part].copy_from_slice(&send);
    }
    let from = if in_place { everyone[d..].as_ptr() } else { send.as_ptr() };
    let len = everyone.len();
    // SAFETY: as above (in place, `from` is this rank's part of `everyone`).
    blocking(true, || unsafe { c.iallgatherv_raw(from, part, everyone.as_mut_ptr(), len, &layout) })?.wait()?;
    expect(&everyone, "allgather", &|r| data(r, i + 2, part));

    // All-to-all: rank r's part for s is data(r * n + s, ...).
    let send: Vec<u8> = (0..n).flat_map(|s| data(me * n + s, i, part)).collect();
    let out: Vec<(usize, usize)> = (0..n).map(|s| (s * part, part)).collect();
    let mut got = vec![0xEE; n * stride];
    let len = got.len();
    // SAFETY: as above.
    let (from, into) = ((send.as_ptr(), send.len(), &out[..]), (got.as_mut_ptr(), len, &layout[..]));
    blocking(true, || unsafe { c.ialltoall_raw(from, into) })?.wait()?;
    expect(&got, "alltoall", &|r| data(r * n + me, i, part));
    Ok(())
}

/// Reduce-scatter with blocks of varying lengths (some empty), and the scans, in round `i`:
/// every rank's maps composed in rank order, each rank's block or prefix checked. `elems`
/// maps a rank (scans); the reduce-scatter's vector grows past one data area (2 KiB) every
/// fourth round, where only `board-cells` keeps it on the board.
fn reductions_by_block_and_prefix(c: &Communicator, i: usize, elems: usize) -> Res {
    let (n, me) = (c.size(), c.rank());
    let counts: Vec<usize> = (0..n).map(|r| if i % 4 == 3 { 100 - (i + r) % 8 } else { (i + r) % 4 }).collect();
    let total: usize = counts.iter().sum();
    let at: usize = counts[..me].iter().sum();
    let mine = vector(me, i, total);
    let mut block = vec![0xEE; counts[me] * 16];
    c.reduce_scatter_bytes(&mine, &mut block, (at * 16, 16), &mut compose)?;
    let want = &composed(n, i, total)[at * 16..][..counts[me] * 16];
    assert_eq!(block, want, "round {i}: reduce_scatter of {total} maps, rank {me}'s block of {}", counts[me]);

    let mine = vector(me, i, elems);
    for exclusive in [false, true] {
        let mut prefix = vec![0xEE; mine.len()];
        c.scan_bytes(&mine, &mut prefix, &mut compose, exclusive)?;
        match (exclusive, me) {
            (false, _) => assert_eq!(prefix, composed(me + 1, i, elems), "round {i}: scan of {elems} maps"),
            (true, 0) => assert!(prefix.iter().all(|&b| b == 0xEE), "round {i}: exscan wrote rank 0's buffer"),
            (true, _) => assert_eq!(prefix, composed(me, i, elems), "round {i}: exscan of {elems} maps"),
        }
    }
    Ok(())
}

/// Gatherv, scatterv and all-to-allv in round `i`: parts of lengths that differ by rank, some
/// empty, some past one data area (those go by message beside the board's posts), laid out at
/// the receiver in reverse rank order with 3-byte gaps that must stay untouched.
fn parts_of_any_length(c: &Communicator, i: usize, root: usize) -> Res {
    v_forms(c, i, root, &|r, s| [0, 7, 200, 2100, 600, 113][(r + 2 * s + i) % 6])?;
    // Forced on the board, parts that fit its data areas go through no message at all (the
    // messages' algorithms send one a part). Checked on the world's rounds (below 1000): a
    // communicator beyond the slots keeps the messages.
    if i < 1000 && std::env::var("BB_COLL_ALLTOALL").as_deref() == Ok("board") {
        let sent = || c.traffic().iter().map(|t| t.sent_messages).sum::<u64>();
        let before = sent();
        v_forms(c, i, root, &|r, s| (r + s + i) % 6)?;
        assert_eq!(sent(), before, "round {i}: v-forms of small parts on the board sent messages");
    }
    Ok(())
}

/// Gatherv to `root`, scatterv from it and all-to-allv, rank r's part for rank s `len(r, s)`
/// bytes, checked.
fn v_forms(c: &Communicator, i: usize, root: usize, len: &dyn Fn(usize, usize) -> usize) -> Res {
    let (n, me) = (c.size(), c.rank());
    // Rank r's part of `lens` at the receiver: reverse rank order, 3-byte gaps.
    let layout = |lens: &dyn Fn(usize) -> usize| {
        let mut at = 0;
        let mut parts = vec![(0, 0); n];
        for r in (0..n).rev() {
            parts[r] = (at, lens(r));
            at += lens(r) + 3;
        }
        (parts, at)
    };
    let check = |buf: &[u8], parts: &[(usize, usize)], what: &str, of: &dyn Fn(usize) -> Vec<u8>| {
        let mut ends: Vec<usize> = parts.iter().map(|&(d, l)| d + l).collect();
        ends.sort();
        for (r, &(d, l)) in parts.iter().enumerate() {
            assert_eq!(&buf[d..d + l], &of(r)[..], "round {i}: {what}, rank {r}'s part of {l} B");
        }
        for end in ends {
            assert!(buf[end..end + 3].iter().all(|&b| b == 0xEE), "round {i}: {what} wrote a gap");
        }
    };

    let (parts, whole) = layout(&|r| len(r, root));
    let send = data(me, i + 3, len(me, root));
    let mut gathered = vec![0xEE; whole];
    let recv = (me == root).then(|| (gathered.as_mut_ptr(), whole, &parts[..]));
    // SAFETY: the buffers live and stay untouched until the wait.
    blocking(true, || unsafe { c.igatherv_raw(send.as_ptr(), send.len(), recv, root) })?.wait()?;
    if me == root {
        check(&gathered, &parts, "gatherv", &|r| data(r, i + 3, len(r, root)));
    }

    let (parts, whole) = layout(&|s| len(root, s));
    let scattered = (0..n).fold(vec![0xEE; whole], |mut b, s| {
        let (d, l) = parts[s];
        b[d..d + l].copy_from_slice(&data(s, i + 4, l));
        b
    });
    let mut mine = vec![0u8; len(root, me)];
    let send = (me == root).then(|| (scattered.as_ptr(), whole, &parts[..]));
    // SAFETY: as above.
    blocking(true, || unsafe { c.iscatterv_raw(send, mine.as_mut_ptr(), mine.len(), root) })?.wait()?;
    assert_eq!(mine, data(me, i + 4, len(root, me)), "round {i}: scatterv from {root}");

    // All-to-allv: rank r's part for s is data(r * n + s, ...), len(r, s) bytes.
    let out: Vec<(usize, usize)> = (0..n).map(|s| ((0..s).map(|t| len(me, t)).sum(), len(me, s))).collect();
    let send: Vec<u8> = (0..n).flat_map(|s| data(me * n + s, i, len(me, s))).collect();
    let (into, whole) = layout(&|r| len(r, me));
    let mut got = vec![0xEE; whole];
    let (from, to) = ((send.as_ptr(), send.len(), &out[..]), (got.as_mut_ptr(), whole, &into[..]));
    // SAFETY: as above.
    blocking(true, || unsafe { c.ialltoallv_raw(from, to) })?.wait()?;
    check(&got, &into, "alltoallv", &|r| data(r * n + me, i, len(r, me)));
    Ok(())
}

/// Collectives back to back with no barrier between them while one reader lags (it naps
/// now and then): writers run ahead until the reuse rule holds them, and a buffer rewritten
/// before the lagging reader has read it would hand it a later round's bytes.
fn lagging_reader(c: &Communicator) -> Res {
    let (n, me) = (c.size(), c.rank());
    let slow = n - 1;
    for k in 0..60usize {
        if me == slow && k.is_multiple_of(5) {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut buf = if me == 0 { data(0, k, 300) } else { vec![0; 300] };
        c.bcast_bytes(&mut buf, 0)?;
        assert_eq!(buf, data(0, k, 300), "lagging: bcast {k}");
        let part = 40;
        let mut all = vec![0u8; n * part];
        let layout: Vec<(usize, usize)> = (0..n).map(|r| (r * part, part)).collect();
        let send = data(me, k, part);
        let root = slow;
        let recv = (me == root).then(|| (all.as_mut_ptr(), all.len(), &layout[..]));
        // SAFETY: the buffers live and stay untouched until the wait.
        blocking(true, || unsafe { c.igather_raw(send.as_ptr(), part, recv, root) })?.wait()?;
        if me == root {
            for r in 0..n {
                assert_eq!(&all[r * part..][..part], &data(r, k, part)[..], "lagging: gather {k}, rank {r}");
            }
        }
    }
    // Small posts run 64 epochs ahead (header lines, not data areas): a reader that naps
    // through more broadcasts than that holds the root back, and a header line rewritten
    // before it read it would hand it a later broadcast's bytes.
    for k in 0..200usize {
        if me == slow && k.is_multiple_of(50) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut buf = if me == 0 { data(0, k, 8) } else { vec![0; 8] };
        c.bcast_bytes(&mut buf, 0)?;
        assert_eq!(buf, data(0, k, 8), "lagging: small bcast {k}");
    }
    Ok(())
}

/// `bb-board switch`: a barrier by the table (the board), one after a tool forced another
/// algorithm (as MPI_T_cvar_write does), one after it let the table choose again: a
/// communicator's kept board choice must follow the settings.
fn switch(w: &Communicator) -> Res {
    use billboard::coll::select::BARRIER;
    w.barrier()?;
    let by = BARRIER.algorithms.iter().position(|&a| a == "dissemination").expect("an algorithm of the switch");
    BARRIER.set(Some(by));
    w.barrier()?;
    BARRIER.set(None);
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok switch on {} ranks", w.size());
    }
    Ok(())
}

fn main() -> Res {
    let universe = billboard::init()?;
    let w = universe.world();
    if std::env::args().nth(1).as_deref() == Some("switch") {
        switch(&w)?;
        universe.finalize()?;
        return Ok(());
    }
    let iters: usize = std::env::args().nth(1).map_or(Ok(120), |a| a.parse())?;
    let mut other = w.dup()?;
    lagging_reader(&w)?;
    for i in 0..iters {
        round(&w, i)?;
        round(&other, i + 1000)?;
        if i % 10 == 9 {
            // Freed, and a new one in its place: it takes the slot back once drained.
            other = w.split(Some((w.rank() % 2) as u32), 0)?.expect("colored").dup()?;
            other = if i % 20 == 19 { w.dup()? } else { other };
        }
    }
    // More communicators at once than slots: those without one keep the messages.
    let many: Vec<Communicator> = (0..12).map(|_| w.dup()).collect::<Result<_, _>>()?;
    for (k, c) in many.iter().enumerate() {
        round(c, 2000 + k)?;
    }
    drop(many);
    for i in 0..20 {
        round(&w.dup()?, 3000 + i)?;
    }
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok board on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

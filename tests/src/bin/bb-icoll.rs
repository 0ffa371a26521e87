//! Rank program for nonblocking collectives on the board (`coll/board_steps.rs`):
//! `bbrun -n N bb-icoll ITERS [mark | fresh]`.
//!
//! Default: on three communicators (the world, a dup, and halves of a split), batches of
//! Ibarrier, Ibcast (0 B to one data area, every root), Iallreduce and Ireduce (a
//! non-commutative operator, so rank order shows), Igather, Iscatter and Iallgather overlap, with blocking collectives on the
//! same communicators between their starts, and are completed in an order that changes every
//! batch: reversed, test-all sweeps, wait-any from a rotating start, interleaved with
//! point-to-point traffic. Every value is checked against what each rank computes alone. Each
//! rank prints how many messages it exchanged with the others during the batches without
//! point-to-point traffic (`rank R: M collective messages`): none where the board runs them.
//!
//! `mark` (3 ranks or more): the read mark's rule. Rank 0 posts, rank 1 reads, rank 2 comes
//! late: rank 1 starts an Ireduce to itself (epoch e) and 63 Ibcasts from rank 0, completes
//! the broadcasts, and stops calling the library for a while with epoch e not ended (rank 2's
//! post is missing). Rank 2 then starts everything, and rank 0 posts past e + 63 as far as the
//! read marks let it: if rank 1's mark were the last epoch it ended rather than below its
//! oldest one in flight, rank 0 would overwrite its epoch-e line before rank 1 read it.

use std::time::Duration;

use billboard::{Collective, Communicator, Reduction};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Byte `j` of rank `r`'s data in op `i`.
fn val(r: usize, i: usize, j: usize) -> u8 {
    (r * 31 + i * 7 + j * 3 + 1) as u8
}

fn data(r: usize, i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| val(r, i, j)).collect()
}

fn words(b: &[u8]) -> Vec<u64> {
    b.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Affine maps x -> a*x + b composed in rank order ("in, then inout"), 16 bytes each.
fn compose(invec: &[u8], inout: &mut [u8]) {
    let (x, y) = (words(invec), words(inout));
    for (e, (x, y)) in x.chunks(2).zip(y.chunks(2)).enumerate() {
        let z = [y[0].wrapping_mul(x[0]), y[0].wrapping_mul(x[1]).wrapping_add(y[1])];
        inout[16 * e..16 * e + 8].copy_from_slice(&z[0].to_ne_bytes());
        inout[16 * e + 8..16 * e + 16].copy_from_slice(&z[1].to_ne_bytes());
    }
}

fn ordered() -> Reduction {
    Reduction { op: Box::new(compose), elem: 16, commutative: false }
}

/// Rank `r`'s vector of `elems` maps in op `i`.
fn vector(r: usize, i: usize, elems: usize) -> Vec<u8> {
    (0..elems)
        .flat_map(|k| [((r + i + k) as u64 % 5) + 2, (r * 3 + i + k) as u64 + 1])
        .flat_map(u64::to_ne_bytes)
        .collect()
}

fn composed(n: usize, i: usize, elems: usize) -> Vec<u8> {
    let mut acc = vector(n - 1, i, elems);
    for r in (0..n - 1).rev() {
        compose(&vector(r, i, elems), &mut acc);
    }
    acc
}

/// One operation in flight: its handle, its buffers (heap blocks that stay put until it
/// ends), and what its result must be here.
struct Op {
    coll: Option<Collective>,
    what: String,
    buf: Vec<u8>,
    send: Vec<u8>,
    want: Option<Vec<u8>>,
}

/// Rank `from`'s part (for rank `to`) of `part` bytes in op `i`.
fn part_of(from: usize, to: usize, i: usize, part: usize) -> Vec<u8> {
    data(from * 8 + to, i, part)
}

impl Op {
    fn check(&self) {
        if let Some(want) = &self.want {
            assert!(&self.buf == want, "{}: wrong result", self.what);
        }
    }
}

/// Starts op number `i` of a batch on `c` (its kind and root follow from `i`).
fn start(c: &Communicator, i: usize) -> billboard::Result<Op> {
    let (n, me) = (c.size(), c.rank());
    let root = (i * 5 + 1) % n;
    let sizes = [0usize, 8, 112, 113, 1000, 2048];
    let mut op = Op { coll: None, what: String::new(), buf: Vec::new(), send: Vec::new(), want: None };
    // Parts up to one data area for a gather's and an all-gather's part, a scatter's n parts.
    let part = [0, 8, 112, 113, 2048 / n][i / 7 % 5];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (r * part, part)).collect();
    match i % 7 {
        4 => {
            op.what = format!("igather {i} of {part} B to {root} at {me}");
            op.send = part_of(me, 0, i, part);
            op.buf = vec![0; n * part];
            op.want = (me == root).then(|| (0..n).flat_map(|r| part_of(r, 0, i, part)).collect());
            let recv = (me == root).then_some((op.buf.as_mut_ptr(), n * part, &layout[..]));
            // SAFETY: as for every op here: the heap blocks stay put until it ends.
            op.coll = Some(unsafe { c.igather_raw(op.send.as_ptr(), part, recv, root) }?);
            return Ok(op);
        }
        5 => {
            op.what = format!("iscatter {i} of {part} B from {root} at {me}");
            if me == root {
                op.send = (0..n).flat_map(|r| part_of(root, r, i, part)).collect();
            }
            op.buf = vec![0; part];
            op.want = Some(part_of(root, me, i, part));
            let send = (me == root).then_some((op.send.as_ptr(), n * part, &layout[..]));
            // SAFETY: as above.
            op.coll = Some(unsafe { c.iscatter_raw(send, op.buf.as_mut_ptr(), part, root) }?);
            return Ok(op);
        }
        6 => {
            op.what = format!("iallgather {i} of {part} B at {me}");
            op.send = part_of(me, 0, i, part);
            op.buf = vec![0; n * part];
            op.want = Some((0..n).flat_map(|r| part_of(r, 0, i, part)).collect());
            // SAFETY: as above.
            let (send, recv) = (op.send.as_ptr(), op.buf.as_mut_ptr());
            op.coll = Some(unsafe { c.iallgatherv_raw(send, part, recv, n * part, &layout) }?);
            return Ok(op);
        }
        _ => {}
    }
    match i % 4 {
        0 => {
            op.what = format!("ibarrier {i}");
            op.coll = Some(c.ibarrier()?);
        }
        1 => {
            let len = sizes[i / 4 % sizes.len()];
            op.what = format!("ibcast {i} of {len} B from {root} at {me}");
            op.buf = if me == root { data(root, i, len) } else { vec![0; len] };
            op.want = Some(data(root, i, len));
            // SAFETY: `op.buf`'s heap block is neither touched nor freed before the op ends.
            op.coll = Some(unsafe { c.ibcast_raw(op.buf.as_mut_ptr(), len, root) }?);
        }
        2 => {
            let elems = [1, 7, 64, 128][i / 4 % 4];
            op.what = format!("iallreduce {i} of {elems} maps at {me}");
            op.send = vector(me, i, elems);
            op.buf = vec![0; elems * 16];
            op.want = Some(composed(n, i, elems));
            // SAFETY: as above, for both buffers.
            op.coll = Some(unsafe { c.iallreduce_raw(op.send.as_ptr(), op.buf.as_mut_ptr(), elems * 16, ordered()) }?);
        }
        _ => {
            let elems = [2, 7, 128][i / 4 % 3];
            op.what = format!("ireduce {i} of {elems} maps to {root} at {me}");
            op.send = vector(me, i, elems);
            op.buf = vec![0; elems * 16];
            op.want = (me == root).then(|| composed(n, i, elems));
            // SAFETY: as above.
            // Only the root lends a receive buffer.
            let recv = if me == root { op.buf.as_mut_ptr() } else { std::ptr::null_mut() };
            op.coll = Some(unsafe { c.ireduce_raw(op.send.as_ptr(), recv, elems * 16, root, ordered()) }?);
        }
    }
    Ok(op)
}

/// Completes `ops` in order `how` (0: reversed, 1: test-all sweeps, 2: wait-any from a rotating
/// start), checking each result.
fn complete(mut ops: Vec<Op>, how: usize, turn: usize) -> Res {
    match how {
        0 => {
            for op in ops.iter_mut().rev() {
                if let Some(coll) = op.coll.take() {
                    coll.wait()?;
                    op.check();
                }
            }
        }
        1 => {
            while ops.iter().any(|op| !op.coll.as_ref().is_none_or(Collective::test)) {}
            for op in &mut ops {
                op.coll.take().expect("in flight").wait()?;
                op.check();
            }
        }
        _ => {
            let k = ops.len();
            let mut left = k;
            let mut at = turn % k.max(1);
            while left > 0 {
                // Wait-any: the first from `at` on that has ended, else look again.
                if let Some(op) = ops[at].coll.as_ref() {
                    if op.test() {
                        ops[at].coll.take().expect("in flight").wait()?;
                        ops[at].check();
                        left -= 1;
                    }
                }
                at = (at + 1) % k;
            }
        }
    }
    Ok(())
}

/// Messages this rank exchanged with the others so far.
fn messages(w: &Communicator) -> u64 {
    let me = w.world_rank(w.rank());
    w.traffic().iter().enumerate().filter(|&(p, _)| p != me).map(|(_, t)| t.sent_messages + t.received_messages).sum()
}

/// A blocking check between starts: an allreduce of one map, and a barrier.
fn blocking(c: &Communicator, i: usize) -> Res {
    let (n, me) = (c.size(), c.rank());
    let mut out = vec![0; 16];
    c.allreduce_bytes(&vector(me, i, 1), &mut out, &mut compose)?;
    assert_eq!(out, composed(n, i, 1), "blocking allreduce {i} between nonblocking starts");
    Ok(c.barrier()?)
}

fn batches(comms: &[Communicator], iters: usize, p2p: bool) -> Res {
    let w = &comms[0];
    let (n, me) = (w.size(), w.rank());
    for it in 0..iters {
        let mut per: Vec<Vec<Op>> = comms.iter().map(|_| Vec::new()).collect();
        let k = 4 + it % 13;
        let mut inbox = vec![0u8; 64];
        let outbox = data(me, it, 64);
        let mut reqs = Vec::new();
        for i in 0..k {
            for (c, ops) in comms.iter().zip(per.iter_mut()) {
                ops.push(start(c, it * 31 + i)?);
            }
            if i == k / 2 {
                blocking(&comms[it % comms.len()], it)?;
            }
            if p2p && i == 1 && n > 1 {
                let (to, from) = ((me + 1) % n, (me + n - 1) % n);
                // SAFETY: both buffers outlive the requests, waited for below.
                unsafe {
                    reqs.push(w.irecv_raw(inbox.as_mut_ptr(), 64, billboard::Source::Rank(from), 9.into())?);
                    reqs.push(w.isend_raw(outbox.as_ptr(), 64, to, 9, billboard::SendMode::Standard)?);
                }
            }
        }
        for (j, ops) in per.into_iter().enumerate() {
            complete(ops, (it + j) % 3, it)?;
        }
        for r in reqs {
            r.wait()?;
        }
        if p2p && n > 1 {
            assert_eq!(inbox, data((me + n - 1) % n, it, 64), "point-to-point beside the collectives");
        }
    }
    Ok(())
}

/// See the module's head: rank 1's Ireduce of epoch e must read rank 0's line of e.
fn mark(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    assert!(n >= 3, "mark needs 3 ranks");
    let later = 200;
    if me == 2 {
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut ops = vec![start_reduce_to(w, 1)?];
    for i in 0..63 + later {
        ops.push(start_bcast_from(w, 0, i)?);
    }
    if me == 1 {
        for op in ops[1..64].iter_mut().rev() {
            op.coll.take().expect("in flight").wait()?;
            op.check();
        }
        // Epoch e still waits for rank 2: stay away while the others go on.
        std::thread::sleep(Duration::from_millis(600));
    }
    complete(ops, 0, 0)
}

fn start_reduce_to(w: &Communicator, root: usize) -> billboard::Result<Op> {
    let (n, me) = (w.size(), w.rank());
    let mut op = Op {
        coll: None,
        what: format!("ireduce to {root} at {me}"),
        buf: vec![0; 32],
        send: vector(me, 99, 2),
        want: None,
    };
    op.want = (me == root).then(|| composed(n, 99, 2));
    // SAFETY: the buffers' heap blocks stay put until the op ends.
    op.coll = Some(unsafe { w.ireduce_raw(op.send.as_ptr(), op.buf.as_mut_ptr(), 32, root, ordered()) }?);
    Ok(op)
}

fn start_bcast_from(w: &Communicator, root: usize, i: usize) -> billboard::Result<Op> {
    let me = w.rank();
    let len = 32;
    let buf = if me == root { data(root, i, len) } else { vec![0; len] };
    let mut op = Op {
        coll: None,
        what: format!("ibcast {i} from {root} at {me}"),
        buf,
        send: Vec::new(),
        want: Some(data(root, i, len)),
    };
    // SAFETY: as above.
    op.coll = Some(unsafe { w.ibcast_raw(op.buf.as_mut_ptr(), len, root) }?);
    Ok(op)
}

/// `fresh`: nonblocking collectives on the world before any blocking one (a program that
/// only overlaps): the world's slot, agreed in `init`, carries them from the first.
fn fresh(w: &Communicator, iters: usize) -> Res {
    let before = messages(w);
    for it in 0..iters {
        let ops = (0..4 + it % 5).map(|i| start(w, it * 31 + i)).collect::<billboard::Result<Vec<_>>>()?;
        complete(ops, it % 3, it)?;
    }
    println!("rank {}: {} collective messages", w.rank(), messages(w) - before);
    Ok(())
}

fn main() -> Res {
    let universe = billboard::init()?;
    let w = universe.world();
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    if args.iter().any(|a| a == "fresh") {
        fresh(&w, iters)?;
        universe.finalize()?;
        return Ok(());
    }
    let dup = w.dup()?;
    let half = w.split(Some((w.rank() % 2) as u32), 0)?.expect("colored");
    let comms = [w.clone(), dup, half];
    // A blocking collective on each first: it agrees the board slot the nonblocking starts use.
    for c in &comms {
        c.barrier()?;
    }
    let before = messages(&w);
    if args.iter().any(|a| a == "mark") {
        mark(&w)?;
    } else {
        batches(&comms, iters, false)?;
    }
    let during = messages(&w) - before;
    println!("rank {}: {during} collective messages", w.rank());
    if !args.iter().any(|a| a == "mark") {
        batches(&comms, iters / 2 + 1, true)?;
    }
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok icoll on {} ranks", w.size());
    }
    drop(comms);
    universe.finalize()?;
    Ok(())
}

//! Reduce of a large vector on 2 ranks of one host: both ranks fold at once, each its own
//! part of the vector, straight out of the other's buffers by single copy
//! (`process_vm_readv/writev`), and the non-root's folded part lands in the root's result.
//!
//! The binomial tree on 2 ranks moves the whole vector to the root, which then folds it alone:
//! the root copies `len` bytes and folds `len` while the other rank waits. Here, after one
//! small message each way (process id and addresses), the root folds its share of the vector
//! (`BB_REDUCE_HALVES_ROOT_SHARE`), reading the other's contribution into its result and
//! folding its own into it, while the other rank reads the root's contribution to the rest,
//! folds its own into it and writes the folded part into the root's result: each result byte
//! is written once, each rank copies and folds about half of the vector. Both go in chunks of
//! `BB_REDUCE_HALVES_CHUNK` bytes (whole elements), so the fold finds the bytes just copied
//! still in the cache. A last small message each way says the copies are done (the root's
//! result is whole, and neither send buffer is read any more).
//!
//! With a core for each rank the table takes it from `BB_REDUCE_HALVES_MIN` (128 KiB,
//! `select.rs`): at 1 MiB 0.72-0.82x Open MPI where the tree is 0.85-1.13x. It takes chunks of
//! 256 KiB: in 64 KiB ones the system calls and their pages' pinning ate the gain (it matched
//! the tree); larger ones measured even (`BB_REDUCE_HALVES_CHUNK`). A single copy costs ~3x a
//! `memcpy` here (`process_vm_readv` of 1 MiB within one process: 118-125 us against 39), so
//! a rank's share is weighed by its copies' bytes more than by its folds'. Every other way to the root crosses the cores through lines rewritten each call
//! (the board's cells: 90-115 us or 180-280 us a MiB run by run, as a bare C pipeline of the
//! same cells, bench/peers/reduce_pipeline.c, by where the VM's cores sit), where a single copy
//! reads the other's send buffer, which nobody rewrites.
//!
//! An allreduce (`BB_ALLREDUCE_HALVES_MIN`, blocking forms) goes the same way with a result on
//! both ranks: each folds half of the vector into its own result and writes that half into
//! the other's, so each copies in and out a half by single copy and folds a half. The split
//! it replaces (`reduce_split.rs`: halves exchanged as messages through the segment's slots)
//! crosses the cores through lines rewritten each call, and flips with the VM's placement
//! (2 ranks, 1 MiB: 82-113 us or 364-429, run by run), where these copies do not (123-169):
//! slower than the split's fast level, far faster than its slow one, and far below the peers
//! in both (MPICH 278-609, Open MPI 515-1438), so the table takes them from 256 KiB.
//!
//! Rank order is kept: `into = from ⊕ into` always has the lower rank's vector as `from`;
//! where the higher rank folds and the operator does not commute, its own vector is copied
//! into the chunk first and the other's read beside it.
//!
//! Where the kernel refuses a copy (a strict Yama or seccomp), the ranks learn it from each
//! other's last message and both run the binomial tree instead; buffers are as they were
//! (the root's result is rewritten whole).

use std::cell::Cell;

use super::{ReduceOp, TAG_REDUCE};
use crate::transport::shm::cross_memory::{copy, Direction};
use crate::tunables::{Effect, Tunable};
use crate::{Communicator, Result, SendMode, Source, TagMatch};

pub static REDUCE_HALVES_CHUNK: Tunable = Tunable::new(
    "BB_REDUCE_HALVES_CHUNK",
    256 << 10,
    "bytes a rank of a 2-rank halves reduce copies and folds at a time (rounded down to whole elements): the fold \
     finds the copied bytes in the L2 cache (1 MiB here), and each chunk costs a system call (~2 us on this VM); \
     coll.c, 2 ranks, chrt, 1 MiB, 5 interleaved rounds, load 19-22, us: 16 KiB 208-238, 64 KiB 145-157, 128 KiB \
     128-140, 256 KiB 112-128, 512 KiB 116-126; again, 4 alternated rounds: load 20, 256 KiB 116-134, 512 KiB \
     108-118, 1 MiB 107-113; load 5, 256 KiB 88-117, 1 MiB 97-115 (even); 4 MiB even (reduce 547-662 vs 603-634)",
)
.read_at(Effect::EachCollective);

pub static REDUCE_HALVES_ROOT_SHARE: Tunable = Tunable::new(
    "BB_REDUCE_HALVES_ROOT_SHARE",
    65,
    "percent of the vector the root of a 2-rank halves reduce folds (the other rank folds the rest and also \
     writes it into the root's result: a copy more); coll.c, 2 ranks (chrt), 1 MiB, us, by share: 50 158, 65 \
     118-123, 75 173, 100 199 (tree 160)",
)
.read_at(Effect::EachCollective);

thread_local! {
    /// The other rank's chunks, kept for the next reduction: one in steady use allocates nothing.
    static CHUNKS: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Chunks larger than this go back to the allocator after a reduction.
const KEEP_CHUNKS: usize = 16 << 20;

/// What each rank tells the other first: its process id, where its contribution and (the
/// root's) its result lie.
const ADDRESSES: usize = 24;

impl Communicator {
    /// The 2-rank reduce of `send` into the root's `recv` described above (`root` None: the
    /// allreduce, into both ranks' `recv`); `elem` is the element size (a chunk never cuts one). `Ok(false)` where a copy was refused on either
    /// rank: nothing is done, and the caller reduces another way.
    pub(super) fn reduce_halves(
        &self,
        send: &[u8],
        recv: Option<&mut [u8]>,
        root: Option<usize>,
        op: ReduceOp<'_>,
        (elem, commutative): (usize, bool),
    ) -> Result<bool> {
        let (me, ctx, len) = (self.rank(), self.coll_context(), send.len());
        let other = 1 - me;
        let mut recv = recv.filter(|_| root.is_none_or(|r| r == me));
        let result = recv.as_deref_mut().map_or(0, |r| r.as_mut_ptr() as u64);
        let mut words = [0u8; ADDRESSES];
        for (i, w) in [std::process::id() as u64, send.as_ptr() as u64, result].into_iter().enumerate() {
            words[8 * i..][..8].copy_from_slice(&w.to_ne_bytes());
        }
        self.send_on(ctx, &words, other, TAG_REDUCE, SendMode::Standard)?;
        self.recv_on(ctx, &mut words, Source::Rank(other), TagMatch::Tag(TAG_REDUCE))?;
        let word = |i: usize| u64::from_ne_bytes(words[8 * i..][..8].try_into().expect("8 bytes"));
        let (pid, theirs, their_result) = (word(0) as libc::pid_t, word(1), word(2));

        let elem = elem.max(1);
        // A reduce's root folds its share; an allreduce's ranks half each (rank 0 the front).
        let share = root.map_or(50, |_| REDUCE_HALVES_ROOT_SHARE.get().min(100));
        let cut = len / elem * share / 100 * elem;
        let chunk = (REDUCE_HALVES_CHUNK.get() / elem).max(1) * elem;
        // `into = from ⊕ into` wants the lower rank's vector as `from`: ours, unless this is
        // the higher rank and the operator does not commute.
        let mine_first = me < other || commutative;
        let (from, to) = if me == root.unwrap_or(0) { (0, cut) } else { (cut, len) };
        // A rank with a result folds into it, one without into a chunk of its own; each then
        // writes its folded part into the other's result, if that has one. Either may need a
        // spare chunk for the other's contribution. Each has `DODGE` bytes of room to start
        // where the kernel's copies do not crawl (`dodge`).
        let room = chunk.min(len) + DODGE;
        let mut chunks = CHUNKS.take();
        chunks.resize(chunks.len().max(2 * room), 0);
        let (own, spare) = chunks.split_at_mut(room);
        let mut copied = Ok(());
        let mut at = from;
        while at < to && copied.is_ok() {
            let n = chunk.min(to - at);
            let remote = theirs + at as u64;
            let landing = (their_result != 0).then_some(their_result + at as u64);
            let into = match recv.as_deref_mut() {
                Some(recv) => &mut recv[at..][..n],
                None => {
                    let o = dodge(own.as_ptr(), &[(remote, true), (their_result + at as u64, false)]);
                    &mut own[o..][..n]
                }
            };
            let o = dodge(spare.as_ptr(), &[(remote, true)]);
            copied = fold_chunk(pid, remote, &send[at..][..n], into, &mut spare[o..][..n], mine_first, op);
            if let Some(result) = landing.filter(|_| copied.is_ok()) {
                // SAFETY: `into` holds `n` bytes; the kernel checks the root's result range.
                copied = unsafe { copy(pid, into.as_mut_ptr(), result, n, Direction::Write) };
            }
            at += n;
        }
        if chunks.len() <= KEEP_CHUNKS {
            CHUNKS.set(chunks);
        }
        // Both ranks' copies are done (or one refused): the root's result is whole, and
        // neither send buffer is read any more.
        let ok = copied.is_ok() as u8;
        self.send_on(ctx, &[ok], other, TAG_REDUCE, SendMode::Standard)?;
        let mut theirs_ok = [0u8];
        self.recv_on(ctx, &mut theirs_ok, Source::Rank(other), TagMatch::Tag(TAG_REDUCE))?;
        if let Err(e) = copied {
            crate::verbose(format_args!(
                "reduce: a single copy from rank {other} failed ({e}); the binomial tree instead"
            ));
        }
        Ok(ok == 1 && theirs_ok[0] == 1)
    }
}

/// Room for [`dodge`]'s offsets.
const DODGE: usize = 128;

/// Whether a copy to `dst` from `src` trips AMD's `rep movsb` (the kernel's copies between
/// processes use it too): the destination 1 to 63 bytes past the source modulo 4 KiB makes
/// every store alias a load it follows, ~20x slower (`copy.rs`); the benchmark's buffers,
/// a send and a receive buffer of one size from `malloc`, lie 16 bytes apart so.
fn crawls(dst: u64, src: u64) -> bool {
    (1..64).contains(&(dst.wrapping_sub(src) & 4095))
}

/// An offset (0, 64 or 128) into `buf` where neither copy of `copies` crawls: each a remote
/// address and whether the copy goes from it into `buf` (else from `buf` to it). Each copy
/// rules out at most one of the three.
fn dodge(buf: *const u8, copies: &[(u64, bool)]) -> usize {
    (0..DODGE + 1)
        .step_by(64)
        .find(|&o| {
            let local = buf as u64 + o as u64;
            copies.iter().all(|&(remote, into)| match into {
                true => !crawls(local, remote),
                false => !crawls(remote, local),
            })
        })
        .unwrap_or(0)
}

/// Folds one chunk: `into = lower ⊕ higher` of this rank's `mine` and the other rank's bytes
/// at `remote` in process `pid` (the same elements), `mine` being the lower one where
/// `mine_first`. The other's bytes land in `into` where that copy does not crawl, else in
/// `spare` (as long, placed where it does not), copied on in the cache.
fn fold_chunk(
    pid: libc::pid_t,
    remote: u64,
    mine: &[u8],
    into: &mut [u8],
    spare: &mut [u8],
    mine_first: bool,
    op: ReduceOp<'_>,
) -> std::io::Result<()> {
    let n = mine.len();
    if mine_first && !crawls(into.as_ptr() as u64, remote) {
        // SAFETY: `into` holds `n` writable bytes; the kernel checks the remote range.
        unsafe { copy(pid, into.as_mut_ptr(), remote, n, Direction::Read) }?;
        op(mine, into);
        return Ok(());
    }
    // SAFETY: `spare` holds `n` writable bytes; the kernel checks the remote range.
    unsafe { copy(pid, spare.as_mut_ptr(), remote, n, Direction::Read) }?;
    let (from, first) = if mine_first { (&*spare, mine) } else { (mine, &*spare) };
    // SAFETY: both hold `n` bytes; `into` is apart from `mine` and `spare`.
    unsafe { crate::copy::copy_bulk(from.as_ptr(), into.as_mut_ptr(), n) };
    op(first, into);
    Ok(())
}

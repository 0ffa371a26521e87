//! MPI_Win_fence: carries out the operations queued since the last fence and opens the next
//! epoch.
//!
//! On the window's private communicator, each process
//! 1. starts a send of one batch to every other member (its operations on that member, in
//!    issue order; possibly empty), and applies its operations on itself;
//! 2. receives the batch of every other member, in rank order, applies it to its window
//!    memory and, if the batch holds get-type operations, starts a send of the reply;
//! 3. receives the reply of every member it sent get-type operations to and unpacks it into
//!    the result buffers; waits for its sends.
//!
//! A fence returns only once every member's batch has arrived and been applied, so operations
//! on this process's window are complete, and once every reply has arrived, so its own
//! operations are complete at the origin: what MPI asks of a fence. Batches and replies of
//! successive fences cannot mix: one of each per ordered pair and fence, and messages between
//! two ranks on one context and tag are never overtaken.

use std::ffi::c_int;

use billboard::{Communicator, Source, TagMatch};

use super::rma::Pending;
use super::target::{apply, Access, Kind};
use super::Epoch;
use crate::abi::*;
use crate::error::{err, MpiError, Res};
use crate::state;

const TAG_BATCH: i32 = 1;
const TAG_REPLY: i32 = 2;

/// What the fence takes out of the window table to work without holding it.
struct Work {
    comm: Communicator,
    memory: *mut u8,
    size: usize,
    pending: Vec<Pending>,
}

pub(crate) fn fence(assert: c_int, win: MPI_Win) -> Res {
    let valid = MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if assert & !valid != 0 {
        return Err(err(
            MPI_ERR_ASSERT,
            format!("assert {assert} ({assert:#x}): MPI_Win_fence takes MPI_MODE_NOSTORE, NOPUT, NOPRECEDE and NOSUCCEED only"),
        ));
    }
    let work = state::with(|m| -> Res<Work> {
        let w = m.win_mut(win)?;
        if assert & MPI_MODE_NOPRECEDE != 0 && !w.pending.is_empty() {
            let n = w.pending.len();
            return Err(err(
                MPI_ERR_RMA_SYNC,
                format!("MPI_MODE_NOPRECEDE, but {n} RMA operations precede this fence"),
            ));
        }
        w.epoch = if assert & MPI_MODE_NOSUCCEED != 0 { Epoch::Closed } else { Epoch::Fence };
        let pending = std::mem::take(&mut w.pending);
        Ok(Work { comm: w.comm.clone(), memory: w.base, size: w.size, pending })
    })
    .expect("MPI is running")?;
    // SAFETY: the window's memory, which MPI forbids the program to touch during the fence.
    unsafe { exchange(work) }
}

/// Steps 1-3 of the module's protocol.
///
/// # Safety
/// `work.memory` holds `work.size` bytes that nothing else accesses during the call, and the
/// result buffers of the pending operations are valid.
unsafe fn exchange(work: Work) -> Res {
    let Work { comm, memory, size, pending } = work;
    let (n, me) = (comm.size(), comm.rank());
    let window: &mut [u8] = if size == 0 { &mut [] } else { std::slice::from_raw_parts_mut(memory, size) };
    let mut batches = vec![Vec::new(); n];
    let mut landings: Vec<Vec<(usize, &Pending)>> = (0..n).map(|_| Vec::new()).collect();
    for p in &pending {
        p.access.encode(&mut batches[p.target]);
        if p.result.is_some() {
            landings[p.target].push((p.access.reply_bytes(), p));
        }
    }
    // Received batches' replies: they must outlive the sends that carry them.
    let mut answers: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut sends = Vec::with_capacity(2 * n);
    for (r, batch) in batches.iter().enumerate().filter(|&(r, _)| r != me) {
        // SAFETY: `sends` is waited for at the end or dropped on an early return (dropping
        // waits): no request is leaked, and `batches` outlives it.
        sends.push(unsafe { comm.isend(&batch[..], r, TAG_BATCH) }?);
    }
    let mut first_error: Option<MpiError> = None;
    let mut replies: Vec<Vec<u8>> = vec![Vec::new(); n];
    replies[me] = serve(window, &batches[me], me, &mut first_error).unwrap_or_default();
    for r in (0..n).filter(|&r| r != me) {
        let st = comm.probe(r, TAG_BATCH)?;
        let mut batch = vec![0u8; st.bytes()];
        comm.recv(&mut batch[..], r, TAG_BATCH)?;
        if let Some(reply) = serve(window, &batch, r, &mut first_error) {
            answers.push((r, reply));
        }
    }
    for (r, reply) in &answers {
        // SAFETY: as above; `answers` outlives `sends`.
        sends.push(unsafe { comm.isend(&reply[..], *r, TAG_REPLY) }?);
    }
    for (r, wanted) in landings.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
        let total: usize = wanted.iter().map(|w| w.0).sum();
        if r != me {
            replies[r] = vec![0u8; total];
            let st = comm.recv(&mut replies[r][..], Source::Rank(r), TagMatch::Tag(TAG_REPLY))?;
            if st.bytes() != total {
                let msg = format!("rank {r} answered {} bytes of RMA data, {total} expected", st.bytes());
                first_error.get_or_insert(err(MPI_ERR_INTERN, msg));
                continue;
            }
        }
        let mut at = 0;
        for (bytes, p) in wanted {
            let landing = p.result.as_ref().expect("only operations with a result are listed");
            // SAFETY: the result buffer stays valid until the epoch ends (MPI), i.e. this fence.
            if let Err(e) = landing.deliver(&replies[r][at..at + bytes]) {
                first_error.get_or_insert(e);
            }
            at += bytes;
        }
    }
    billboard::wait_all(sends)?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Applies the batch from `origin` to `window`; returns the reply if the batch holds
/// get-type operations (the origin waits for one then). Errors are kept in `first_error` and
/// the rest still runs, so that every member stays in step.
fn serve(window: &mut [u8], batch: &[u8], origin: usize, first_error: &mut Option<MpiError>) -> Option<Vec<u8>> {
    let mut reply = Vec::new();
    let accesses = match Access::decode_all(batch) {
        Ok(a) => a,
        Err(e) => {
            first_error.get_or_insert(err(MPI_ERR_INTERN, format!("RMA batch from rank {origin}: {e}")));
            return None;
        }
    };
    for a in &accesses {
        let outcome = match combiner(a) {
            Ok(mut combine) => apply(window, a, &mut *combine, &mut reply)
                .map_err(|e| err(MPI_ERR_RMA_RANGE, format!("RMA operation from rank {origin}: {e}"))),
            Err(e) => {
                reply.resize(reply.len() + a.reply_bytes(), 0);
                Err(e)
            }
        };
        if let Err(e) = outcome {
            first_error.get_or_insert(e);
        }
    }
    accesses.iter().any(|a| a.kind.fetches()).then_some(reply)
}

/// The element-wise operation of an accumulate on packed elements of `a.elem`.
fn combiner(a: &Access) -> Res<crate::ops::Combiner> {
    if !matches!(a.kind, Kind::Accumulate | Kind::GetAccumulate) || a.op == MPI_NO_OP {
        return Ok(Box::new(|_: &[u8], _: &mut [u8]| {}));
    }
    if a.op == MPI_REPLACE {
        return Ok(Box::new(|i: &[u8], io: &mut [u8]| io.copy_from_slice(i)));
    }
    let mut f = state::with(|m| crate::ops::combiner(m, a.op, a.elem)).expect("MPI is running")?;
    if !is_pair_type(a.elem) {
        return Ok(f);
    }
    // MINLOC / MAXLOC on { value; int } pairs: packed, a pair is the value's bytes then the
    // int's; the operator reads them laid out as in memory, `extent` bytes apart with the int
    // at max(value size, 4).
    let layout = crate::datatype::layout(a.elem)?;
    let (size, extent) = (layout.size(), layout.extent() as usize);
    let value = size - 4;
    let at = value.max(4);
    let spread = move |packed: &[u8]| -> Vec<u8> {
        let mut v = vec![0u8; packed.len() / size * extent];
        for (p, s) in packed.chunks_exact(size).zip(v.chunks_exact_mut(extent)) {
            s[..value].copy_from_slice(&p[..value]);
            s[at..at + 4].copy_from_slice(&p[value..]);
        }
        v
    };
    Ok(Box::new(move |i: &[u8], io: &mut [u8]| {
        let (a, mut b) = (spread(i), spread(io));
        f(&a, &mut b);
        for (p, s) in io.chunks_exact_mut(size).zip(b.chunks_exact(extent)) {
            p[..value].copy_from_slice(&s[..value]);
            p[value..].copy_from_slice(&s[at..at + 4]);
        }
    }))
}

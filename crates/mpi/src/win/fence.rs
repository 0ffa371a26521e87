//! MPI_Win_fence: completes the operations issued since the last fence and opens the next
//! epoch.
//!
//! Operations went to their targets when they were issued (`origin.rs`). At the fence each
//! process sends every member, itself included, an end-of-epoch marker behind its
//! operations, waits for the answers its get-type operations expect, and then waits until a
//! marker from every member has been handled here. A target handles each origin's requests in
//! order, so the markers say that every operation on this window is applied; and since every
//! member sends its marker only once it is in the fence, they also make the fence the barrier
//! MPI asks for (no operation of the next epoch reaches a window whose owner is still in the
//! last one). Markers are counted per origin, so one member's marker of the next fence cannot
//! stand in for another's of this one.
//!
//! A window in a node segment (`segment.rs`) needs none of that: its origins did their
//! operations themselves when they issued them, so its fence is a barrier through the
//! segment (each member's count of fences entered) and a memory fence. A created window on
//! one host (`single_copy.rs`) has the same barrier, after the answers of the accumulates its
//! origins sent to the handlers.

use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use billboard::Communicator;

use super::origin::{finish_all, send, start_flush, Wait};
use super::segment::Segment;
use super::serve::{Counters, Request as Ask};
use super::{shm_sync, Epoch};
use crate::abi::*;
use crate::error::{err, Res};
use crate::state;

/// What a fence waits for: a node window's barrier, or the handler's markers (the
/// communicator, the marker counts, the answers outstanding, the counts that end this fence).
enum Fence {
    /// The barrier, after the waits for a created window's handler answers (none otherwise).
    Node(Communicator, Arc<Segment>, Vec<Wait>),
    Handler(Communicator, Arc<Counters>, Vec<Wait>, Vec<usize>),
}

pub(crate) fn fence(assert: c_int, win: MPI_Win) -> Res {
    let valid = MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if assert & !valid != 0 {
        return Err(err(
            MPI_ERR_ASSERT,
            format!("assert {assert} ({assert:#x}): MPI_Win_fence takes MPI_MODE_NOSTORE, NOPUT, NOPRECEDE and NOSUCCEED only"),
        ));
    }
    let fence = state::with(|m| -> Res<Fence> {
        let w = m.win_mut(win)?;
        match w.epoch {
            Epoch::Closed | Epoch::Fence => {}
            ref e => {
                let what = super::epoch_name(e);
                return Err(err(MPI_ERR_RMA_SYNC, format!("MPI_Win_fence inside another epoch ({what})")));
            }
        }
        if w.exposed.is_some() {
            return Err(err(MPI_ERR_RMA_SYNC, "MPI_Win_fence while MPI_Win_post's exposure epoch is open"));
        }
        if assert & MPI_MODE_NOPRECEDE != 0 && w.issued {
            return Err(err(MPI_ERR_RMA_SYNC, "MPI_MODE_NOPRECEDE, but RMA operations precede this fence"));
        }
        w.epoch = if assert & MPI_MODE_NOSUCCEED != 0 { Epoch::Closed } else { Epoch::Fence };
        w.issued = false;
        if let Some(seg) = w.node.clone() {
            // A created window's accumulates went to their targets' handlers: their answers
            // first (a target in this fence serves them while it waits).
            let mut waits = Vec::new();
            if !w.direct() {
                for (r, t) in w.targets.iter_mut().enumerate() {
                    waits.append(&mut start_flush(&w.comm, r, t, false)?);
                }
            }
            return Ok(Fence::Node(w.comm.clone(), seg, waits));
        }
        let mut waits: Vec<Wait> = Vec::new();
        for (r, t) in w.targets.iter_mut().enumerate() {
            waits.append(&mut t.waits);
            t.unflushed = false;
            send(&w.comm, r, Ask::Complete.header(0), &mut waits)?;
        }
        // One more marker from every member ends this fence.
        w.seen.iter_mut().for_each(|k| *k += 1);
        Ok(Fence::Handler(w.comm.clone(), w.counters.clone(), waits, w.seen.clone()))
    })
    .expect("MPI is running")?;
    let (comm, counters, waits, wanted) = match fence {
        Fence::Node(comm, seg, waits) => {
            // Every operation of the epoch was done by its origin when issued (or answered
            // by the handler): what is left is a barrier, by each member's count of fences
            // entered. The count's Release store follows this process's stores (puts), the
            // Acquire loads of the others' precede its next accesses; no message.
            if !waits.is_empty() {
                finish_all(waits)?;
            }
            let me = comm.rank();
            let k = seg.fences(me).load(Ordering::Relaxed) + 1;
            seg.fences(me).store(k, Ordering::Release);
            shm_sync::wait_until(&comm, || (0..seg.ranks()).all(|r| seg.fences(r).load(Ordering::Acquire) >= k));
            std::sync::atomic::fence(Ordering::SeqCst);
            return Ok(());
        }
        Fence::Handler(comm, counters, waits, wanted) => (comm, counters, waits, wanted),
    };
    let outcome = finish_all(waits);
    comm.wait_for(|| wanted.iter().enumerate().all(|(r, &k)| counters.ends(r) >= k));
    outcome
}

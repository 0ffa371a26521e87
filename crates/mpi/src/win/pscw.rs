//! Generalized active-target synchronisation: MPI_Win_post, MPI_Win_start, MPI_Win_complete,
//! MPI_Win_wait, MPI_Win_test (MPI 3.1 section 11.5.2).
//!
//! The target's post sends each origin of its group an empty message ([`TAG_POST`]); an
//! origin's start receives one from each target of its group before it returns (MPI allows
//! start to block), so no operation reaches a window before its owner exposed it. Operations
//! go straight to the targets; complete sends each target an end-of-epoch marker behind them
//! and waits for the answers its own get-type operations expect. The target's wait returns once
//! its handler has counted a marker from every origin of the group, each after that origin's
//! operations. With MPI_MODE_NOCHECK (the program promises the post has happened) neither
//! post nor start sends or waits.
//!
//! A window in a node segment (`segment.rs`) keeps the same counts as words in the segment:
//! post adds one to a word of each origin's (`posted`), complete to one of each target's
//! (`completed`), each word written by one rank only; start and wait watch them. The
//! operations were done by the origin when issued, so nothing else is waited for (but the
//! handler's answers to a created window's accumulates, `single_copy.rs`, before complete
//! counts).

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use super::origin::{finish_all, send, start_flush, Wait};
use super::serve::{Request as Ask, TAG_POST};
use super::{shm_sync, win_call_unlocked, Epoch};
use crate::abi::*;
use crate::error::{err, out, Res};
use crate::state;

fn check_assert(assert: c_int, call: &str) -> Res {
    let valid = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT;
    if assert & !valid != 0 {
        return Err(err(MPI_ERR_ASSERT, format!("{call}: assert {assert:#x} (NOCHECK, NOSTORE, NOPUT apply)")));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_post", win, || {
        check_assert(assert, "MPI_Win_post")?;
        state::with(|m| -> Res {
            let members = m.group(group)?.to_vec();
            let w = m.win_mut(win)?;
            if w.exposed.is_some() {
                return Err(err(MPI_ERR_RMA_SYNC, "MPI_Win_post: the previous exposure epoch has not been waited for"));
            }
            let origins = w.ranks_of(&members)?;
            if let Some(seg) = w.node.as_ref().filter(|_| assert & MPI_MODE_NOCHECK == 0) {
                let me = w.comm.rank();
                for &o in &origins {
                    seg.posted(o, me).fetch_add(1, Ordering::Release);
                }
            } else if assert & MPI_MODE_NOCHECK == 0 {
                for &o in &origins {
                    // An empty message: it leaves at once (eager), nothing to keep.
                    w.comm.send(&[0u8; 0][..], o, TAG_POST)?;
                }
            }
            w.exposed = Some(origins);
            Ok(())
        })
        .expect("MPI is running")
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_start", win, || {
        check_assert(assert, "MPI_Win_start")?;
        let (comm, targets, node) = state::with(|m| -> Res<_> {
            let members = m.group(group)?.to_vec();
            let w = m.win_mut(win)?;
            w.may_start_epoch("MPI_Win_start")?;
            let targets = w.ranks_of(&members)?;
            w.epoch = Epoch::Access(targets.clone());
            // A node window's posts are counters in the segment: the ones to wait for.
            let node = w.node.clone().map(|seg| {
                let wanted: Vec<(usize, u64)> = targets.iter().map(|&t| (t, w.started[t] + 1)).collect();
                (seg, wanted)
            });
            if node.is_some() && assert & MPI_MODE_NOCHECK == 0 {
                targets.iter().for_each(|&t| w.started[t] += 1);
            }
            Ok((w.comm.clone(), targets, node))
        })
        .expect("MPI is running")?;
        if let Some((seg, wanted)) = node {
            if assert & MPI_MODE_NOCHECK == 0 {
                let me = comm.rank();
                shm_sync::wait_until(&comm, || {
                    wanted.iter().all(|&(t, k)| seg.posted(me, t).load(Ordering::Acquire) >= k)
                });
            }
        } else if assert & MPI_MODE_NOCHECK == 0 {
            for &t in &targets {
                comm.recv(&mut [0u8; 0][..], t, TAG_POST)?;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_complete(win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_complete", win, || {
        let mut counts = None;
        let waits = state::with(|m| -> Res<Vec<Wait>> {
            let w = m.win_mut(win)?;
            let Epoch::Access(targets) = std::mem::replace(&mut w.epoch, Epoch::Closed) else {
                let e = w.epoch.clone();
                return Err(err(
                    MPI_ERR_RMA_SYNC,
                    format!("MPI_Win_complete without MPI_Win_start (epoch: {})", super::epoch_name(&e)),
                ));
            };
            let mut waits = Vec::new();
            if let Some(seg) = w.node.clone() {
                // A created window's accumulates: the handlers' answers, then the counts.
                for &r in &targets {
                    waits.append(&mut start_flush(&w.comm, r, &mut w.targets[r], false)?);
                }
                counts = Some((seg, w.comm.rank(), targets));
                return Ok(waits);
            }
            for &r in &targets {
                let t = &mut w.targets[r];
                waits.append(&mut t.waits);
                t.unflushed = false;
                send(&w.comm, r, Ask::Complete.header(0), &mut waits)?;
            }
            Ok(waits)
        })
        .expect("MPI is running")?;
        let outcome = if waits.is_empty() { Ok(()) } else { finish_all(waits) };
        if let Some((seg, me, targets)) = counts {
            // The operations are done, ordered before the counters' release.
            shm_sync::complete_stores();
            for &r in &targets {
                seg.completed(r, me).fetch_add(1, Ordering::Release);
            }
        }
        outcome
    })
}

/// Ends of epochs (MPI_Win_complete) received from `origin`: counted by the handler, or by
/// the origins themselves in a node window's segment.
fn ends(w: &super::Win, origin: usize) -> usize {
    match &w.node {
        Some(seg) => seg.completed(w.comm.rank(), origin).load(Ordering::Acquire) as usize,
        None => w.counters.ends(origin),
    }
}

/// Whether every origin of the exposure has sent its marker; if so, consumes them and ends
/// the exposure. `Err`: no exposure is open.
fn exposure_over(win: MPI_Win, call: &str) -> Res<bool> {
    state::with(|m| -> Res<bool> {
        let w = m.win_mut(win)?;
        let Some(origins) = &w.exposed else {
            return Err(err(MPI_ERR_RMA_SYNC, format!("{call} without MPI_Win_post")));
        };
        if !origins.iter().all(|&o| ends(w, o) > w.seen[o]) {
            return Ok(false);
        }
        for &o in origins {
            w.seen[o] += 1;
        }
        w.exposed = None;
        Ok(true)
    })
    .expect("MPI is running")
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_wait(win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_wait", win, || {
        let (comm, counters, node, wanted) = state::with(|m| -> Res<_> {
            let w = m.win(win)?;
            let Some(origins) = &w.exposed else {
                return Err(err(MPI_ERR_RMA_SYNC, "MPI_Win_wait without MPI_Win_post"));
            };
            let wanted: Vec<(usize, usize)> = origins.iter().map(|&o| (o, w.seen[o] + 1)).collect();
            Ok((w.comm.clone(), w.counters.clone(), w.node.clone(), wanted))
        })
        .expect("MPI is running")?;
        match node {
            Some(seg) => {
                let me = comm.rank();
                shm_sync::wait_until(&comm, || {
                    wanted.iter().all(|&(o, k)| seg.completed(me, o).load(Ordering::Acquire) as usize >= k)
                })
            }
            None => comm.wait_for(|| wanted.iter().all(|&(o, k)| counters.ends(o) >= k)),
        }
        exposure_over(win, "MPI_Win_wait").map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    win_call_unlocked("MPI_Win_test", win, || {
        let flag = out(flag, "flag")?;
        let comm = state::with(|m| m.win(win).map(|w| w.comm.clone())).expect("MPI is running")?;
        comm.progress();
        *flag = exposure_over(win, "MPI_Win_test")? as c_int;
        Ok(())
    })
}

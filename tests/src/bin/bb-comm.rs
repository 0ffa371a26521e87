//! Rank program for the communicator tests: `bbrun -n N bb-comm <case>`. Each case checks its
//! own results and panics (non-zero exit) on a mismatch; rank 0 prints `ok <case> on N ranks`.
//!
//! - `threads`: 4 threads per rank, each on its own communicator, create communicators at the
//!   same time (dup, split, subset) and talk on them with wildcards: a context id handed to two
//!   communicators at once shows as a message from the wrong thread or iteration.
//! - `churn`: 10000 dup/drop cycles, more than the ids a process has, so ids must come back.
//! - `exhaust`: holding every id makes the next creation fail with a clear error; dropping them
//!   makes creation work again.
//! - `retire`: a communicator dropped with a receive still posted keeps its id until the
//!   receive is gone.
//! - `idup`: a background dup does not block its caller: rank 0 starts one and then waits for a
//!   synchronous send that rank 1 makes before starting its own (a blocking dup would deadlock
//!   here). Several idups in flight, a blocking dup on the same parent while they run, and
//!   the communicators they make are distinct and carry their own traffic. Run with the
//!   engine lock elided (`assume_serialized`), as MPI programs below THREAD_MULTIPLE do.
//! - `revoked_boards` (N >= 2, with `BB_COLL_BARRIER=board BB_VERBOSE=1`): [`REVOKED`]
//!   communicators, more than a process has board slots, each revoked by the last rank while
//!   the others wait in a barrier on its board, then dropped; every one of them, and one made
//!   after, still gets a slot (the test counts the verbose report's board lines), so a revoked
//!   communicator's slot comes back.

use std::thread;
use std::time::Duration;

use billboard::{Communicator, ANY_SOURCE, ANY_TAG};

type Res = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const THREADS: usize = 4;
const ROUNDS: usize = 50;

/// A message that names who sent it and for what: (thread, round, kind, sender's rank).
fn payload(thread: usize, round: usize, kind: usize, rank: usize) -> [u32; 4] {
    [thread as u32, round as u32, kind as u32, rank as u32]
}

/// Every member sends one message to every member of `c` (itself too) with a tag naming the
/// sender; each receives them with wildcards and checks each one is for this thread and round.
fn exchange(c: &Communicator, thread: usize, round: usize, kind: usize) -> Res {
    let n = c.size();
    let mine = payload(thread, round, kind, c.rank());
    c.scope(|s| -> Res {
        let sends: Vec<_> = (0..n).map(|to| s.isend(&mine[..], to, c.rank() as i32)).collect::<Result<_, _>>()?;
        let mut seen = vec![false; n];
        for _ in 0..n {
            let mut got = [0u32; 4];
            let st = c.recv(&mut got[..], ANY_SOURCE, ANY_TAG)?;
            let from = st.source();
            assert_eq!(
                got,
                payload(thread, round, kind, from),
                "thread {thread} round {round} kind {kind}: cross-talk"
            );
            assert_eq!(st.tag() as usize, from);
            assert!(!seen[from], "two messages from {from}");
            seen[from] = true;
        }
        billboard::wait_all(sends)?;
        Ok(())
    })
}

fn threads(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let own: Vec<Communicator> = (0..THREADS).map(|_| w.dup()).collect::<Result<_, _>>()?;
    let ids: Vec<u32> = own.iter().map(Communicator::context_id).collect();
    let handles: Vec<_> = own
        .into_iter()
        .enumerate()
        .map(|(t, c)| {
            thread::spawn(move || -> Res {
                for round in 0..ROUNDS {
                    let d = c.dup()?;
                    exchange(&d, t, round, 0)?;
                    // Split by parity, reversed order inside each half.
                    let s = c.split(Some((me % 2) as u32), -(me as i32))?.expect("every rank has a color");
                    assert_eq!(s.size(), (n + 1 - me % 2) / 2);
                    exchange(&s, t, round, 1)?;
                    // Ranks 0 and n-1 alone (a different tag per round, as MPI asks).
                    let pair: &[usize] = if n > 1 { &[n - 1, 0] } else { &[0] };
                    if let Some(p) = c.subset(pair, round as i32)? {
                        exchange(&p, t, round, 2)?;
                    }
                    // A split where this rank joins nothing still agrees on an id.
                    let lone = c.split((me == 0).then_some(0), 0)?;
                    assert_eq!(lone.is_some(), me == 0);
                    drop((d, s, lone));
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a thread panicked")?;
    }
    // Every communicator made here is gone, so the lowest id is free again.
    let lowest = ids.iter().min().copied();
    assert_eq!(Some(w.dup()?.context_id()), lowest, "ids of dropped communicators are reused");
    Ok(())
}

fn churn(w: &Communicator) -> Res {
    let first = w.dup()?.context_id();
    for i in 0..10_000 {
        let c = w.dup()?;
        assert_eq!(c.context_id(), first, "iteration {i}: the lowest free id is reused");
        if i % 1000 == 0 {
            c.barrier()?;
        }
    }
    Ok(())
}

fn exhaust(w: &Communicator) -> Res {
    let mut held = Vec::new();
    let e = loop {
        match w.dup() {
            Ok(c) => held.push(c),
            Err(e) => break e,
        }
        assert!(held.len() <= 100_000, "context ids never run out");
    };
    assert!(e.to_string().contains("out of communicator context ids"), "{e}");
    assert!(held.len() >= 2048, "only {} communicators at once", held.len());
    held.truncate(10);
    let c = w.dup()?;
    exchange(&c, 0, 0, 3)?;
    Ok(())
}

fn retire(w: &Communicator) -> Res {
    let c = w.dup()?;
    let old = c.context_id();
    let mut buf = [0u8; 4];
    // SAFETY: the request is finished (dropped) below, before `buf` goes; not in a scope,
    // whose borrow of `c` would keep `c` from being dropped first.
    let mut pending = unsafe { c.irecv(&mut buf[..], ANY_SOURCE, ANY_TAG) }?;
    drop(c);
    let c2 = w.dup()?;
    assert_ne!(c2.context_id(), old, "a posted receive keeps the id of its dropped communicator");
    assert!(pending.cancel(), "nothing was sent");
    drop(pending);
    drop(c2);
    assert_eq!(w.dup()?.context_id(), old, "the id is free once the receive is gone");
    Ok(())
}

fn idup(w: &Communicator) -> Res {
    // SAFETY: this case calls the library from the main thread only.
    unsafe { w.assume_serialized() };
    let (n, me) = (w.size(), w.rank());
    let mut token = [0u8; 1];
    let first = if me == 0 {
        let pending = w.idup()?;
        if n > 1 {
            // Rank 1 is in its synchronous send, not in its idup, until this receive matches.
            w.recv(&mut token[..], 1, 7)?;
        }
        pending
    } else {
        if me == 1 {
            w.ssend(&[1u8][..], 0, 7)?;
        }
        w.idup()?
    };
    let more: Vec<_> = (0..3).map(|_| w.idup()).collect::<Result<_, _>>()?;
    let blocking = w.dup()?;
    let mut made = vec![first.wait()?];
    for p in more {
        made.push(p.wait()?);
    }
    made.push(blocking);
    let mut ids: Vec<u32> = made.iter().map(Communicator::context_id).collect();
    ids.push(w.context_id());
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), made.len() + 1, "two communicators share a context id");
    for (k, c) in made.iter().enumerate() {
        assert_eq!((c.size(), c.rank()), (n, me));
        exchange(c, 0, k, 4)?;
    }
    // Started and finished with nobody else busy, and dropped unfinished: both wait properly.
    let done = w.idup()?.wait()?;
    exchange(&done, 1, 0, 4)?;
    drop(w.idup()?);
    Ok(())
}

/// Communicators of `revoked_boards`: three times the board slots of a process (8).
const REVOKED: usize = 24;

fn revoked_boards(w: &Communicator) -> Res {
    let last = w.size() - 1;
    for _ in 0..REVOKED {
        let c = w.dup()?;
        // The first barrier agrees on the board slot; the next is left half-done.
        c.barrier()?;
        if w.rank() == last {
            thread::sleep(Duration::from_millis(20));
            c.revoke()?;
        } else {
            // Gives up in its board wait (or fails as it starts, if the notice came first).
            let _ = c.barrier();
            billboard::coll::revoked_in_wait();
        }
        drop(c);
        w.barrier()?;
    }
    let fresh = w.dup()?;
    fresh.barrier()?;
    Ok(())
}

fn main() -> Res {
    let universe = billboard::init()?;
    let w = universe.world();
    let case = std::env::args().nth(1).unwrap_or_default();
    match case.as_str() {
        "threads" => threads(&w)?,
        "churn" => churn(&w)?,
        "exhaust" => exhaust(&w)?,
        "retire" => retire(&w)?,
        "idup" => idup(&w)?,
        "revoked_boards" => revoked_boards(&w)?,
        other => panic!("unknown case {other:?}"),
    }
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok {case} on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

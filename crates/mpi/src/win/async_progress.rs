//! When this process runs a progress thread for its windows (issue 18, item 4): a target
//! whose operations its handler applies (`serve.rs`) answers only inside progress, and a rank
//! computing for seconds outside MPI would stall every origin's lock, flush and fetch-and-op.
//!
//! Windows in a node segment need no thread (origins do everything there, `direct.rs`), nor
//! created windows on one host: put and get are single copies (`single_copy.rs`), and in a
//! passive epoch an origin applies the accumulates the handler has not taken itself
//! (`withdraw.rs`); a target waiting inside MPI wakes at the request's arrival. What remains
//! are targets across hosts: while a window served by the handler has a member on another
//! host, one thread per process (however many windows) runs progress and sleeps on the routes
//! like a blocked rank (billboard's `progress_thread.rs`).

use std::sync::Mutex;

use billboard::engine::progress_thread::ProgressThread;
use billboard::tunables::Tunable;

use super::{segment, Win};
use crate::error::Res;

pub(crate) static ASYNC_PROGRESS: Tunable = Tunable::new(
    "BB_ASYNC_PROGRESS",
    2,
    "progress thread while a window served by its target's handler exists: 2 when a member is on another host, 1 for every such window (also MPI_Win_create on one host), 0 never",
);

/// The thread, and the windows that hold it.
static THREAD: Mutex<(usize, Option<ProgressThread>)> = Mutex::new((0, None));

/// One window's claim on the progress thread; dropping it (MPI_Win_free, finalize) lets the
/// thread stop with the last.
pub(crate) struct Hold(());

impl Drop for Hold {
    fn drop(&mut self) {
        let last = {
            let mut t = THREAD.lock().unwrap_or_else(|e| e.into_inner());
            t.0 -= 1;
            if t.0 == 0 {
                t.1.take()
            } else {
                None
            }
        };
        // Joined without the table's lock: the thread may take a round to see its flag.
        drop(last);
    }
}

/// Gives `w` a hold on the progress thread if it needs one (above), starting the thread.
pub(super) fn attach(w: &mut Win) -> Res {
    let wanted = match ASYNC_PROGRESS.get() {
        0 => false,
        _ if w.direct() => false,
        1 => true,
        _ => segment::one_host(&w.comm)?.is_err(),
    };
    if !wanted || w.progress.is_some() {
        return Ok(());
    }
    let mut t = THREAD.lock().unwrap_or_else(|e| e.into_inner());
    if t.1.is_none() {
        t.1 = Some(w.comm.start_progress_thread()?);
    }
    t.0 += 1;
    w.progress = Some(Hold(()));
    Ok(())
}

/// Stops the thread whatever holds it (MPI_Finalize, before the engine goes; windows left
/// unfreed give their holds back later).
pub(crate) fn stop() {
    let thread = THREAD.lock().unwrap_or_else(|e| e.into_inner()).1.take();
    drop(thread);
}

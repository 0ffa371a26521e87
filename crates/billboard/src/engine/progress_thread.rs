//! A progress thread (issue 18, item 4): runs the engine's progress while the program's own
//! threads compute outside the library, so a handler (a window's passive target across hosts)
//! answers at once instead of at the target's next call.
//!
//! It waits as a blocked rank does (`wait.rs`, `Shared::serve_until`): it takes the baton,
//! polls, and climbs the ladder (a short spin, yields, then a sleep on the route's sleeper
//! that the next arrival ends), so an idle process sleeps. A program thread that comes to wait
//! has priority: the progress thread hands it the baton at its next look and stays aside
//! until the baton is free again.
//! Stopping sets a flag that the thread sees at its next look, at most one sleep
//! (`BB_SLEEP_US`) later, and joins it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{EngineRef, Helper};
use crate::Result;

/// A running progress thread; dropping it stops it and waits for it.
pub struct ProgressThread {
    stop: Arc<AtomicBool>,
    _thread: Helper<()>,
}

impl ProgressThread {
    pub(crate) fn start(engine: &EngineRef) -> Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, shared) = (stop.clone(), engine.clone());
        let thread = engine.spawn_helper("bb-progress", move || shared.serve_until(&flag))?;
        Ok(ProgressThread { stop, _thread: thread })
    }
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        // The thread's next look ends it; `Helper`'s drop (after this) joins it.
        self.stop.store(true, Ordering::Release);
    }
}

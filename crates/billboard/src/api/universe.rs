//! Starting and ending the library in a process.

use std::sync::atomic::{AtomicBool, Ordering};

use super::comm::Communicator;
use crate::bootstrap::Job;
use crate::engine::{Engine, Shared};
use crate::{Error, Result};

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// The library, initialized in this process. End it with [`Universe::finalize`]; dropping it
/// without that (an early error return, a panic) leaves the job without waiting for the other
/// ranks, which the launcher then reports, instead of hanging in a barrier they never reach.
pub struct Universe {
    job: Job,
    world: Communicator,
}

/// Joins the job this process was started in (by `bbrun`, or Hydra's PMI-1), or makes a
/// 1-rank job when started without a launcher.
pub fn init() -> Result<Universe> {
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return Err(Error::State("billboard is already initialized in this process (init may be called once)"));
    }
    let mut job = Job::from_env()?;
    let chan = crate::bootstrap::wire::connect(&mut job)?;
    let engine = Shared::new(Engine::new(chan));
    let world = Communicator::world(engine, job.rank, job.size);
    Ok(Universe { job, world })
}

impl Universe {
    /// All ranks of the job.
    pub fn world(&self) -> Communicator {
        self.world.clone()
    }

    /// Waits for every rank to get here, then leaves the job.
    pub fn finalize(mut self) -> Result<()> {
        self.shutdown()
    }

    /// Ends the whole job with `code`, from any rank.
    pub fn abort(&mut self, code: i32, why: &str) -> ! {
        let _ = self.job.abort(code, why);
        std::process::exit(code)
    }

    fn shutdown(&mut self) -> Result<()> {
        self.world.finish_orphans();
        self.world.barrier()?;
        self.world.drain();
        self.job.finalize()
    }
}

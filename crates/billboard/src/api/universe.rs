//! Starting and ending the library in a process.

use std::sync::atomic::{AtomicBool, Ordering};

use std::sync::{Arc, Mutex};

use super::comm::Communicator;
use super::dynamic::Launcher;
use crate::bootstrap::Job;
use crate::engine::{Engine, Shared};
use crate::{Error, Result};

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// The library, initialized in this process. End it with [`Universe::finalize`]; dropping it
/// without that (an early error return, a panic) leaves the job without waiting for the other
/// ranks, which the launcher then reports, instead of hanging in a barrier they never reach.
pub struct Universe {
    job: Launcher,
    world: Communicator,
    /// The intercommunicator to the group that spawned this job (MPI_Comm_get_parent).
    parent: Option<Communicator>,
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
    // The world's board slot is agreed here rather than by its first blocking collective:
    // a program whose first collectives are nonblocking (or that never blocks in one) would
    // otherwise run them all by messages, as nonblocking calls cannot agree a slot. Other
    // communicators agree lazily: there are only BOARD_SLOTS, and most never need one.
    world.board()?;
    super::dynamic::set_job_id(&job.id);
    // A spawned job meets its parents before the program runs, as MPI_Init must return with
    // MPI_Comm_get_parent ready; the parents wait for it in their MPI_Comm_spawn.
    let parent = match job.parent_port()? {
        Some(port) => Some(world.connect(&port, 0)?),
        None => None,
    };
    Ok(Universe { job: Launcher(Arc::new(Mutex::new(job))), world, parent })
}

impl Universe {
    /// All ranks of the job.
    pub fn world(&self) -> Communicator {
        self.world.clone()
    }

    /// The intercommunicator to the parents, when a spawn started this job.
    pub fn parent(&self) -> Option<Communicator> {
        self.parent.clone()
    }

    /// The launcher: spawn, universe size, name service.
    pub fn launcher(&self) -> Launcher {
        self.job.clone()
    }

    /// Waits for every rank to get here, then leaves the job.
    pub fn finalize(mut self) -> Result<()> {
        self.shutdown()
    }

    /// Ends the whole job with `code`, from any rank.
    pub fn abort(&mut self, code: i32, why: &str) -> ! {
        let _ = self.job.0.lock().unwrap_or_else(|p| p.into_inner()).abort(code, why);
        std::process::exit(code)
    }

    fn shutdown(&mut self) -> Result<()> {
        self.world.finish_orphans();
        self.world.barrier()?;
        self.world.drain();
        self.job.0.lock().unwrap_or_else(|p| p.into_inner()).finalize()
    }
}

//! Active messages in the native API: a handler that runs at this process, inside its
//! progress, for every message on a communicator's context with one tag (see the engine's
//! `service.rs`). The one-sided windows of the MPI library are served this way.

use std::sync::atomic::{AtomicU32, Ordering};

use super::comm::Communicator;
use crate::engine::{Handler, Service};
use crate::Result;

/// Numbers services, so that one can be stopped by name.
static SERVICE_IDS: AtomicU32 = AtomicU32::new(0);

impl Communicator {
    /// Runs `handler` for every message that arrives on this communicator with `tag`, from
    /// any rank, in arrival order, whenever this process makes progress. Such messages are
    /// no longer for receives: a receive with that tag (or `ANY_TAG`) may still take one
    /// that arrives while no progress runs, so a program keeps the tag for the service.
    /// Returns the service's id, for [`Communicator::stop_serving`].
    pub fn serve(&self, tag: i32, handler: Box<dyn Handler>) -> Result<u32> {
        Self::check_tag(tag)?;
        let id = SERVICE_IDS.fetch_add(1, Ordering::Relaxed);
        let world: Box<[usize]> = (0..self.size()).map(|r| self.world_rank(r)).collect();
        let service = Service::new(id, self.context_id(), tag, world, self.rank(), handler);
        self.engine().lock().add_service(service);
        Ok(id)
    }

    /// Stops service `id` once what it has in flight (a message being received, replies
    /// being sent) is done, making progress meanwhile.
    pub fn stop_serving(&self, id: u32) {
        drop(self.engine().wait_until(None, |e| e.remove_service(id)));
    }

    /// One round of progress: polls for arrivals, runs services, pushes sends. Returns whether
    /// anything happened.
    pub fn progress(&self) -> bool {
        self.engine().lock().progress(None)
    }
}

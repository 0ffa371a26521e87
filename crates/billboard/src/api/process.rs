//! Processes as groups name them. A peer number (a world rank, or the number a process of
//! another job got when it joined) is given again once its process is disconnected
//! (`transport/routes.rs`, `Routes::release`), so a number alone does not name one process
//! for good: a group kept from a disconnected communicator would name whoever joined next.
//! [`Process`] adds the number's generation, so such a group keeps naming processes that no
//! longer exist (as MPICH's groups do), and an operation that would reach them is an error.

use super::comm::Communicator;
use crate::Result;

/// One process, as long as it exists: its peer number and which holder of that number it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    /// Its world rank, or for a process of another job the number it got when it joined.
    pub peer: usize,
    /// How many processes held `peer` before it (disconnected since).
    pub generation: u32,
}

impl Process {
    /// Rank `rank` of this process's own job (MPI_COMM_WORLD): its number is never given again.
    pub fn world(rank: usize) -> Process {
        Process { peer: rank, generation: 0 }
    }
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "world rank {}", self.peer)?;
        if self.generation > 0 {
            write!(f, " (generation {})", self.generation)?;
        }
        Ok(())
    }
}

impl Communicator {
    /// The process that is member `rank`.
    pub fn process(&self, rank: usize) -> Process {
        let peer = self.world_rank(rank);
        Process { peer, generation: self.engine().generation(peer) }
    }

    /// The process that is remote member `rank` of an intercommunicator.
    pub fn remote_process(&self, rank: usize) -> Result<Process> {
        let peer = self.remote_world_rank(rank)?;
        Ok(Process { peer, generation: self.engine().generation(peer) })
    }

    /// Whether `process` still exists: not disconnected since it was named (then its number
    /// may name another process now).
    pub fn exists(&self, process: Process) -> bool {
        self.engine().generation(process.peer) == process.generation
    }
}

//! How a process learns its place in the job: PMI-1 from `bbrun` or Hydra, or a 1-rank
//! singleton when started without a launcher.

pub mod pmi;
pub mod port;
pub mod program;
pub(crate) mod wire;

use crate::Result;

/// The key of a spawned job's key-value space that holds its parent root's port name
/// (MPICH's name for it, so the library also spawns under Hydra).
pub const PARENT_PORT_KEY: &str = "PARENT_ROOT_PORT_NAME";

/// Where this process stands in the job, and the key-value exchange to set up routes with.
pub(crate) struct Job {
    pub rank: usize,
    pub size: usize,
    /// Names this job's shared resources (segments): the launcher's job id, else our pid.
    pub id: String,
    pmi: Option<pmi::Pmi>,
}

impl Job {
    /// Reads the launcher's environment; without one, a singleton job of one rank.
    pub fn from_env() -> Result<Job> {
        let pmi = pmi::Pmi::from_env()?;
        let (rank, size) = pmi.as_ref().map_or((0, 1), |p| (p.rank(), p.size()));
        let id = std::env::var("BB_JOBID")
            .ok()
            .or_else(|| pmi.as_ref().map(|p| p.kvsname().to_string()))
            .unwrap_or_else(|| format!("s{}", std::process::id()));
        Ok(Job { rank, size, id, pmi })
    }

    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        match &mut self.pmi {
            Some(p) => p.put(key, value),
            None => Ok(()),
        }
    }

    pub fn get(&mut self, key: &str) -> Result<String> {
        match &mut self.pmi {
            Some(p) => p.get(key),
            None => Err(crate::Error::Bootstrap(format!("no launcher to ask for key {key:?}"))),
        }
    }

    /// Waits for every rank; puts made before it are visible after it.
    pub fn barrier(&mut self) -> Result<()> {
        match &mut self.pmi {
            Some(p) => p.barrier(),
            None => Ok(()),
        }
    }

    pub fn finalize(&mut self) -> Result<()> {
        match &mut self.pmi {
            Some(p) => p.finalize(),
            None => Ok(()),
        }
    }

    /// The launcher's PMI connection, for what only it can do (spawn, the name service).
    pub fn pmi(&mut self) -> Result<&mut pmi::Pmi> {
        self.pmi.as_mut().ok_or_else(|| {
            crate::Error::Spawn("this process was started without a launcher (run it under bbrun or mpiexec)".into())
        })
    }

    /// The port of the parent's root, when a spawn started this job (`PMI_SPAWNED`, and the key
    /// the parent put in our key-value space, as MPICH names it).
    pub fn parent_port(&mut self) -> Result<Option<String>> {
        if std::env::var("PMI_SPAWNED").map_or(true, |v| v.trim() == "0" || v.trim().is_empty()) {
            return Ok(None);
        }
        match &mut self.pmi {
            Some(p) => p.get(PARENT_PORT_KEY).map(Some),
            None => Ok(None),
        }
    }

    /// Asks the launcher to end the whole job with `code`.
    pub fn abort(&mut self, code: i32, msg: &str) -> Result<()> {
        match &mut self.pmi {
            Some(p) => p.abort(code, msg),
            None => std::process::exit(code),
        }
    }
}

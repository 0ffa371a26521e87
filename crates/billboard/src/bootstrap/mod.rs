//! How a process learns its place in the job: PMI-1 from `bbrun` or Hydra, or a 1-rank
//! singleton when started without a launcher.

pub mod pmi;
pub(crate) mod wire;

use crate::Result;

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

    /// Asks the launcher to end the whole job with `code`.
    pub fn abort(&mut self, code: i32, msg: &str) -> Result<()> {
        match &mut self.pmi {
            Some(p) => p.abort(code, msg),
            None => std::process::exit(code),
        }
    }
}

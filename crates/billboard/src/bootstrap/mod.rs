//! How a process learns its place in the job: PMI-1 from `bbrun` or Hydra, or a 1-rank
//! singleton when started without a launcher.

pub mod pmi;

//! Channels: move bytes between processes. No matching, no MPI.

pub mod shm;

//! The shared-memory billboard channel.

use crate::tunables::Tunable;

pub mod wait;

pub static RING_BYTES: Tunable =
    Tunable::new("BB_SHM_RING_BYTES", 16 << 10, "bytes of fast-box ring per (sender, receiver) pair");
pub static SLOT_BYTES: Tunable =
    Tunable::new("BB_SHM_SLOT_BYTES", 64 << 10, "bytes of one data-part slot (medium messages, pipelined chunks)");
pub static SLOTS: Tunable = Tunable::new("BB_SHM_SLOTS", 32, "data-part slots per rank");
pub static SINGLE_COPY: Tunable =
    Tunable::new("BB_SHM_SINGLE_COPY", 1, "0 forces the pipelined copy instead of process_vm_readv");
pub static CMA_SEGMENT: Tunable = Tunable::new(
    "BB_SHM_CMA_SEGMENT",
    1 << 20,
    "bytes copied by one process_vm_readv before other traffic is polled",
);

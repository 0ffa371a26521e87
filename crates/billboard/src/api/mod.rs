//! The native Rust API: a universe, communicators, typed buffers, requests, active messages.

mod active;
mod comm;
mod context;
mod datatype;
mod dynamic;
mod intercomm;
mod process;
mod recover;
mod request;
mod scope;
mod universe;

pub use crate::engine::{ActiveHandler, ActiveMessage, Outbox, HANDLER_MAX, HEADER_MAX};
pub use comm::{Background, Communicator, Message, SendMode, Source, TagMatch, ANY_SOURCE, ANY_TAG};
pub use datatype::{Buffer, BufferMut, Equivalence};
pub use dynamic::{close_port, open_port, Launcher, SpawnCommand, SPAWN_WAIT_MS};
pub use process::Process;
pub use recover::Agreement;
pub use request::{test_all, wait_all, wait_any, wait_each, Request, Status};
pub use scope::Scope;
pub use universe::{init, Universe};

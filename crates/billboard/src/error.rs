//! Errors of the native API. Each variant carries what a caller needs to act on it: the rank,
//! the tag, the sizes, the system call that failed.

use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A rank outside `0..size` of the communicator.
    InvalidRank { rank: usize, size: usize },
    /// A tag outside `0..=TAG_UB` for a send, or below `ANY_TAG` for a receive.
    InvalidTag { tag: i32 },
    /// The matched message is longer than the receive buffer; the buffer holds its prefix.
    Truncated { source: usize, tag: i32, message_bytes: usize, buffer_bytes: usize },
    /// The message length is not a whole number of elements of the receive type.
    ElementSize { bytes: usize, element: usize },
    /// A peer died or its route broke; requests that depended on it fail with this.
    PeerGone { rank: usize, reason: String },
    /// Talking to the launcher (PMI) failed.
    Bootstrap(String),
    /// Creating or mapping the shared-memory segment failed.
    SharedMemory(String),
    /// The launcher could not start a command of a spawn; the message names the command.
    Spawn(String),
    /// A port name that is not one, or a port that cannot be reached or opened.
    Port(String),
    /// The library is already initialized in this process, or was finalized.
    State(&'static str),
    /// An argument that does not fit the call (a buffer too short for its layout, say).
    InvalidArgument(String),
    /// The communicator (the base of its context pair) was revoked (MPIX_Comm_revoke): the
    /// operation failed, or could not start.
    Revoked { context: u32 },
    /// A raw request id ([`Request::into_raw`](crate::Request::into_raw)) that is no
    /// operation in flight: finished already, or never issued.
    StaleRequest { id: u32 },
    /// A system call failed.
    Os { call: &'static str, errno: std::io::Error },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidRank { rank, size } => {
                write!(f, "invalid rank {rank}: the communicator has {size} ranks (0..{size})")
            }
            Error::InvalidTag { tag } => write!(f, "invalid tag {tag}: tags are 0..={}", crate::TAG_UB),
            Error::Truncated { source, tag, message_bytes, buffer_bytes } => write!(
                f,
                "message truncated: {message_bytes} bytes from rank {source} with tag {tag} \
                 do not fit the {buffer_bytes}-byte receive buffer"
            ),
            Error::ElementSize { bytes, element } => {
                write!(f, "{bytes} bytes is not a whole number of {element}-byte elements")
            }
            Error::PeerGone { rank, reason } => write!(f, "rank {rank} is gone: {reason}"),
            Error::Bootstrap(why) => write!(f, "cannot start the job: {why}"),
            Error::SharedMemory(why) => write!(f, "shared memory: {why}"),
            Error::Spawn(why) => write!(f, "spawn: {why}"),
            Error::Port(why) => write!(f, "port: {why}"),
            Error::State(why) => f.write_str(why),
            Error::InvalidArgument(why) => f.write_str(why),
            Error::Revoked { context } => {
                write!(f, "the communicator of context {context} was revoked (MPIX_Comm_revoke)")
            }
            Error::StaleRequest { id } => {
                write!(f, "request {id} is not in flight (finished already, or never issued)")
            }
            Error::Os { call, errno } => write!(f, "{call} failed: {errno}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Os { errno, .. } => Some(errno),
            _ => None,
        }
    }
}

impl Error {
    /// Wraps the last OS error of system call `call`.
    pub(crate) fn os(call: &'static str, errno: impl Into<std::io::Error>) -> Self {
        Error::Os { call, errno: errno.into() }
    }
}

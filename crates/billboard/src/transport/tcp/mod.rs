//! The TCP route: one authenticated, non-blocking `TCP_NODELAY` socket per pair of ranks on
//! different hosts (or every pair, under `BB_ROUTES=tcp`). One module per step, as every route:
//! - [`addr`]: which addresses a rank offers (`BB_TCP_IF`) and which host it is on.
//! - `listen`: listening sockets bound to exactly the offered addresses, open only during set-up,
//!   and the bounded pool of connections taken from them while they prove themselves.
//! - [`handshake`]: the first bytes on every connection, a mutual HMAC-SHA256 challenge–response
//!   over fresh nonces and both ranks' identities, keyed by the job secret (`BB_JOB_SECRET`); it
//!   also fixes the wire version of everything after it.
//! - [`setup`]: connect to the lower ranks, accept the higher, authenticate all under a deadline,
//!   then close the listeners.
//! - [`wire`] and [`stream`]: the 28-byte frame (the engine's record header and its length) and
//!   an incremental, bounded reader of frames from whatever chunks a socket delivers.
//! - `conn` and `channel`: records out with `sendmsg` (header and payload as two slices), in with
//!   `recv` into the reader's buffer; polling and sleeping on one epoll instance (a lone
//!   connection stays out of it and is watched beside it); a broken connection reported once,
//!   naming the peer.

pub mod addr;
mod channel;
mod conn;
pub mod handshake;
pub(crate) mod listen;
pub mod setup;
pub mod stream;
pub mod wire;

#[cfg(test)]
pub(crate) use channel::endpoints;
pub(crate) use channel::sleep_on;
pub use channel::{TcpChannel, CHUNK, EAGER_MAX};

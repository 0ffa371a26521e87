//! The TCP route's protocol, sans IO: bytes in, bytes and events out, no sockets and no clock.
//!
//! What exists:
//! - [`wire`]: the fixed 56-byte frame header (documented byte by byte there), its kinds (eager,
//!   rendezvous request, clear-to-send, data chunk, fin, credit, close) and a decoder that checks
//!   untrusted bytes before any payload is buffered.
//! - [`stream`]: [`FrameReader`](stream::FrameReader), an incremental decoder fed whatever chunks
//!   a socket delivers, with a bounded buffer and sequence checking; and
//!   [`FrameWriter`](stream::FrameWriter) / [`OutFrame`](stream::OutFrame), which number frames and
//!   hand header + payload to `writev` as two slices without copying the payload, resuming after a
//!   partial write.
//! - [`handshake`]: the first bytes on every connection, a mutual HMAC-SHA256 challenge–response
//!   over fresh nonces and both ranks' identities, keyed by the job secret from the environment
//!   (`BB_JOB_SECRET`). A stranger, garbage, or a replayed exchange is rejected.
//!
//! What the socket layer will do with it (not here yet): one non-blocking, `TCP_NODELAY` socket per
//! pair of ranks on different hosts, registered with one epoll instance; run the handshake state
//! machines on connect/accept (with a deadline, so a silent stranger cannot hold a slot), then
//! `read` into [`FrameReader::unfilled`](stream::FrameReader::unfilled) and `writev` the
//! [`OutFrame`](stream::OutFrame) slices. Progress polls the sockets a while before sleeping in
//! `epoll_wait` (a polled socket answers in ~4.6 µs, a blocking wake-up costs 30–40 µs on the VM).
//! The eager/rendezvous/credit state above the frames, and errors naming the peer on a broken
//! connection, belong to the channel built on this.

pub mod addr;
mod channel;
mod conn;
pub mod handshake;
pub mod setup;
pub mod stream;
pub mod wire;

#[cfg(test)]
pub(crate) use channel::endpoints;
pub(crate) use channel::sleep_on;
pub use channel::{TcpChannel, CHUNK, EAGER_MAX};

//! The UDP route: a reliable, authenticated datagram protocol (`BB_ROUTES=udp`).
//!
//! - [`wire`]: the datagram layout, its seal (SipHash for short datagrams, AES-GCM for long ones,
//!   keys derived from the job secret) and the ranges of selective acknowledgements.
//! - [`rtt`]: round-trip estimation and the retransmission timeout (Jacobson/Karels, backoff).
//! - [`peer`], [`endpoint`]: the protocol, sans IO (sequence numbers, cumulative and selective
//!   acknowledgements, loss detection and retransmission, the send window, fragmentation and
//!   reassembly of records, duplicate suppression, in-order delivery, peer failure after a
//!   deadline), driven by datagrams in and the time passed in; tested over a simulated network.
//! - `path`: the largest unfragmented datagram towards a peer (the default `BB_UDP_MTU`).
//! - `icmp`: a peer whose socket is gone, told by its host (ICMP port unreachable).
//! - `faults`: deterministic loss, duplication and reordering of outgoing datagrams
//!   (`BB_UDP_FAULTS`), for tests on real sockets.
//! - `siphash`: SipHash-2-4, the MAC of short datagrams.
//! - `sockets`: the system calls: receiving sockets, a connected socket per peer to send from,
//!   batched receives.
//! - `channel`: [`UdpChannel`], the socket layer: one non-blocking socket per rank and a timer
//!   descriptor in one epoll set a sleeping rank waits on; timers run from `poll`.

mod channel;
/// Public for the fuzz target `udp_endpoint` (fuzz/src/udp.rs), which drives it as a peer would.
pub mod endpoint;
mod faults;
mod icmp;
mod path;
pub mod peer;
pub mod rtt;
mod siphash;
mod sockets;
pub mod wire;

#[doc(hidden)]
pub use channel::endpoints;
pub use channel::{UdpChannel, DEADLINE_MS, EAGER_MAX, MTU, WINDOW};
pub(crate) use sockets::sleep_watching;

//! What this process exchanged with each peer: messages and bytes sent and received, counted by
//! the engine as each message starts (send) or arrives (receive), for tools (MPI_T's
//! performance variables). The owner of the engine counts with plain additions under the lock
//! it already holds: a counter costs a small message two adds, nothing shared between cores.

pub use crate::transport::ReceiveCalls;

/// The system calls this process's waits made so far, for tests and tools: what waiting for a
/// message costs (a rank sharing its core with its peer should block in a receive, not yield).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitCalls {
    /// Waits that gave up the core (`sched_yield`).
    pub yields: u64,
    /// Polls of the routes (rounds of progress), whatever they found.
    pub polls: u64,
    /// The receive calls of the socket routes.
    pub receives: ReceiveCalls,
}

/// One peer's message and byte counts since this process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages to the peer (each send, each reader of a multicast post), and their payload bytes.
    pub sent_messages: u64,
    pub sent_bytes: u64,
    /// Messages from the peer, counted on arrival (matched or not), and their payload bytes.
    pub received_messages: u64,
    pub received_bytes: u64,
}

impl Traffic {
    #[inline(always)]
    pub(super) fn sent(&mut self, bytes: usize) {
        self.sent_messages += 1;
        self.sent_bytes += bytes as u64;
    }

    #[inline(always)]
    pub(super) fn received(&mut self, bytes: usize) {
        self.received_messages += 1;
        self.received_bytes += bytes as u64;
    }
}

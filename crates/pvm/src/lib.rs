//! Billboard's PVM 3 library: the C ABI of Debian's PVM 3.4.6 (`libpvm3.so.3`, with the group
//! calls of `libgpvm3.so.3` in the same object), so a program built against Debian's PVM runs
//! unchanged with `LD_LIBRARY_PATH` pointing here.
//!
//! # How tasks come and go
//!
//! - **The host agent** (`bbpvmd`, `agent.rs`) plays pvmd: one per user and host, serving the
//!   folder `/tmp/bbpvm.<uid>` (or `$BB_PVM_DIR`; mode 0700) through the Unix socket `agent`
//!   in it, beside a `secret` file (mode 0600) that every connection must prove. A program
//!   started from a shell enrolls at its first PVM call (`pvm_mytid`, or any call that needs
//!   a tid): its library connects to the agent, and starts it first if none answers (the
//!   agent detaches, and leaves again when it has had no task and no added host for
//!   `BB_PVM_LINGER_MS`, or on `pvm_halt`, removing its files). The agent hands out tids in PVM's layout (host 1 in
//!   bits 18..29, so the first task is `t40001`, as under Debian's pvmd).
//! - **Spawning**: `pvm_spawn` asks the agent, which looks the program up in the spawner's
//!   `PVM_PATH` (else PVM's default `$HOME/pvm3/bin/LINUX64:$PVM_ROOT/bin/LINUX64`), reserves
//!   tids, forks each child with its tid in `BB_PVM_TID` and the `PVM_EXPORT`ed variables,
//!   and reads the child's output (to the parent if it called `pvm_catchout`, else to the
//!   agent's log, `BB_PVM_LOG`). A task lives while its connection to the agent is open (or,
//!   before it enrolls, while its process runs); when it ends, the agent sends each
//!   `pvm_notify(PvmTaskExit)` watcher its message.
//! - **Messages** go directly between tasks, never through the agent: each task listens on
//!   `t<tid>` in the folder; the first send to a task connects there and keeps the
//!   connection. Its first byte says how frames come: through a byte ring of shared memory
//!   the sender makes (a memfd passed on the socket, so nothing is named in /dev/shm; the
//!   socket then only wakes a sleeping receiver; `ring.rs`), or on the socket itself
//!   (`BB_PVM_SHM=0`). The first frame proves the secret (over TCP, between hosts, a
//!   challenge-response proves it instead, and it never goes on the network). One progress
//!   loop (`task_progress.rs`) reads every connection and ring whenever a call waits,
//!   including while a write waits for room, so crossing large sends never deadlock; a receive polls the rings for
//!   `BB_PVM_SPIN_US` before it sleeps, longer while its sleeps end soon (`spin.rs`).
//!   Messages from one sender arrive in order. Large messages (`BB_PVM_SINGLE_COPY`,
//!   64 KiB) between tasks of a host skip the ring: the receiver copies them once out of
//!   the sender's memory, straight into the program's buffer when `pvm_upkbyte` takes them whole (`single_copy.rs`); `PvmDataInPlace`
//!   stretches are read from the program's memory only by the route (ring or single copy),
//!   never gathered first. What remains for issue 21: carrying these messages on Billboard's
//!   engine itself. The engine now takes peers that join a running job
//!   (`Routes::add_tcp_peers`, crate-private, built for MPI_Comm_spawn), but only over TCP,
//!   even on one host (its billboard is sized and mapped once by one job's ranks): PVM tasks
//!   there would lose their shared memory. It still needs a public way to start an engine
//!   without PMI and add or drop peers, and shared memory that late joiners can map (per
//!   pair, as the rings here are); then PVM's tid/tag/context matching maps onto its own.
//! - **Groups** (`groups.rs` in the agent, `group_calls.rs` in the library): the agent keeps
//!   names, instances and barriers; broadcast, reduce, gather and scatter move their data
//!   between the members directly. `libgpvm3.so.3` is the same object as `libpvm3.so.3`.
//!
//! - **Several hosts** (`agent_hosts.rs`): `pvm_addhosts` (the console's `add`) has the first
//!   agent start `bbpvmd --added` on the host through `BB_PVM_LAUNCHER` (`ssh` by default,
//!   `ip netns exec {host}` in tests), linked to it by the command's stdin and stdout. The
//!   first agent keeps the machine's state; spawns go where `PvmTaskHost` says or, by
//!   default, to the hosts in turn; tasks of different hosts talk over TCP (`tcp.rs`, each
//!   connection opened by the engine's HMAC handshake keyed by the machine's secret);
//!   `pvm_hostsync` reads the other host's clock through its agent; added hosts stay until
//!   `pvm_delhosts` (which ends a host and its tasks, and its `PvmHostDelete` watchers hear)
//!   or `pvm_halt`.
//!
//! # Not yet
//!
//! Tracing (`trace.rs`: `PvmTraceTid`/`PvmTraceCode` and the trace masks act, in Debian's
//! format) covers the message calls (`pvm_send`, `pvm_recv`, `pvm_nrecv`, `pvm_trecv`,
//! `pvm_mcast`, `pvm_psend`, `pvm_precv`), the pack and unpack routines, the buffer calls,
//! `pvm_spawn` and `pvm_exit` only, with no `PvmTraceTime`/`PvmTraceCount` summaries and
//! none of pvmd's own events (output redirection, `PvmOutputTid`, goes as pvmd's output
//! messages, so Debian's console prints `spawn -> prog`); messages on Billboard's engine (see
//! above).
//!
//! Layout: `error.rs` PVM's error codes and texts; `encoding.rs` how packed items become bytes
//! (XDR and raw, byte by byte); `buffer.rs` message buffers and the table behind buffer ids;
//! `pack.rs` the pack/unpack and buffer calls (`packf.c` the two variadic ones); `state.rs`
//! the process-wide state and the wrapper every C call goes through; `place.rs` the agent's
//! folder and PVM's tid layout; `wire.rs` what tasks and the agent say (byte by byte);
//! `frame_buffer.rs` frames out of a byte stream; `task.rs` a task's enrolling, state and
//! leaving (`agent_start.rs` finding or starting its agent), `task_progress.rs` its progress
//! loop and arrivals, `task_receive.rs` its receives, `task_send.rs` its sending side,
//! `link.rs` one connection, `tcp.rs` connections between hosts, `trace.rs` trace events,
//! `ring.rs` the shared-memory
//! route, `single_copy.rs` large messages read once from the sender's memory (`huge_pages.rs`
//! asking for huge pages under them);
//! `calls.rs` the task calls, `sendrecv.rs` the message calls, `recvf.rs` receiving by the
//! program's own matching
//! function (`pvm_recvf`); `compat.rs` the other names Debian's programs import and the
//! message box calls (`mailbox.rs` in the agent); `agent.rs` (`agent_life.rs` its folder and
//! loop, `agent_spawn.rs` its spawning and caught output, `agent_hosts.rs` the other hosts),
//! `groups.rs`, `group_calls.rs` as above.

// PVM's names are the C ABI's; the exported functions' safety contract is PVM's manual.
#![allow(non_upper_case_globals, clippy::missing_safety_doc)]

pub mod agent;
mod agent_start;
pub mod buffer;
pub mod call_lock;
pub mod calls;
pub mod compat;
pub mod encoding;
pub mod error;
mod frame_buffer;
pub mod group_calls;
pub mod groups;
mod held_message;
mod huge_pages;
pub mod idmap;
mod link;
pub mod mailbox;
pub mod pack;
pub mod place;
pub mod recvf;
pub mod ring;
pub mod sendrecv;
pub mod single_copy;
mod small_copy;
pub mod spin;
pub mod state;
pub mod task;
mod task_progress;
mod task_receive;
mod task_send;
mod tcp;
pub mod trace;
mod trace_summary;
pub mod wire;

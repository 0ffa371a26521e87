//! Billboard's PVM 3 library: the C ABI of Debian's PVM 3.4.6 (`libpvm3.so.3`, with the group
//! calls of `libgpvm3.so.3` in the same object), so a program built against Debian's PVM runs
//! unchanged with `LD_LIBRARY_PATH` pointing here.
//!
//! Layout: `error.rs` PVM's error codes and texts; `encoding.rs` how packed items become bytes
//! (XDR and raw, byte by byte); `buffer.rs` message buffers and the table behind buffer ids;
//! `pack.rs` the pack/unpack and buffer calls (`packf.c` the two variadic ones); `state.rs`
//! the process-wide state and the wrapper every C call goes through.

// PVM's names are the C ABI's; the exported functions' safety contract is PVM's manual.
#![allow(non_upper_case_globals, clippy::missing_safety_doc)]

pub mod buffer;
pub mod encoding;
pub mod error;
pub mod pack;
pub mod state;
pub mod task;

//! Billboard's MPI library: the C ABI of Debian's MPICH 4.0 (`libmpi.so.12`, also installed as
//! `libmpich.so.12`) over the billboard engine, so a program compiled against MPICH runs
//! unchanged. Every function is a strong `PMPI_` symbol with a weak `MPI_` alias (the
//! profiling interface), unversioned, like MPICH.
//!
//! Layout: `abi.rs` holds MPICH's facts (handles, constants, `MPI_Status`); `state.rs` the
//! process-wide tables behind the handles; `error.rs` the one place errors become MPI error
//! classes and error handlers run; then one file per family of calls (`env`, `p2p`,
//! `request` and `request_list`, `comm`, `coll`, `datatype`, `ops`, `win` for one-sided communication,
//! `io` for MPI-IO);
//! `counts.rs` writes each large-count (`_c`) function and its int twin
//! once; `exports.rs` the weak aliases and the data objects programs link against.

// MPI's names and argument lists are the C ABI's; the exported functions' safety contract is
// the MPI standard's.
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc, clippy::too_many_arguments)]

pub mod abi;
// First: its `counted!` macro serves the families below.
#[macro_use]
mod counts;
mod attr;
mod bsend;
mod coll;
mod comm;
mod comm_create;
mod datatype;
mod env;
mod errhandler;
mod error;
mod exports;
mod grequest;
mod group;
mod info;
mod intercomm;
mod io;
mod isendrecv;
mod mpix;
mod mprobe;
mod ops;
mod p2p;
mod partitioned;
mod persistent;
mod request;
mod request_hook;
mod request_list;
mod session;
mod spawn;
mod state;
mod tool;
mod topo;
mod topo_graph;
mod unsupported;
mod win;

/// The MPI library's own tunables (its MPI_T category "rma"), for `bbrun --info`.
pub fn tunables() -> impl Iterator<Item = &'static billboard::tunables::Tunable> {
    tool::RMA.tunables.iter().copied()
}
#[cfg(target_arch = "x86_64")]
mod x87;

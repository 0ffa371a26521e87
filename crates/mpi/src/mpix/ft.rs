//! MPICH's fault-tolerance extension (ULFM): MPIX_Comm_failure_ack, _failure_get_acked,
//! _agree, _iagree, _shrink and _revoke.
//!
//! What MPICH 4.0.2 does: Debian's build (device ch4) stops the job at each of the five with
//! "Assertion failed in file src/mpid/ch4/src/ch4_comm.c ... Internal error" (checked with
//! mpicc.mpich and mpiexec.mpich on 2 ranks), so no program relies on more than that.
//!
//! What Billboard does: a rank that dies ends the job (the launcher stops the others within a
//! second, ARCHITECTURE.md "Runtime"), so a running program has no failed process to learn
//! about, and the calls give their failure-free meaning for real: no process failure to
//! acknowledge (the acknowledged group is empty), `agree` is the bitwise AND of every
//! member's flag (a collective over the communicator), `shrink` a new communicator of every
//! member (a new context, like MPI_Comm_dup without attributes or topology). A route that
//! breaks during agree or shrink fails it with MPIX_ERR_PROC_FAILED naming the peer (the
//! engine's PeerGone). MPIX_Comm_revoke is real: the engine tells every member
//! (`billboard/src/engine/revoke.rs`), their waiting receives on the communicator fail with
//! MPIX_ERR_REVOKED, and every later call that communicates on it fails so as it starts
//! (`Mpi::comm`); local calls and MPI_Comm_free still work; a collective already waiting on the
//! board gives up and fails so too. As ULFM has it, agree and shrink work on a revoked
//! communicator (`billboard/src/api/recover.rs`): they are how a program recovers. On an
//! intercommunicator agree ANDs both groups' flags and shrink gives an intercommunicator of
//! both groups (MPICH 4.0.2's own source leaves shrink of one to do).

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, out, Res};
use crate::state::Req;

/// The communicator `comm` names, revoked or not (agree and shrink work on a revoked one), with
/// its error handler. An intercommunicator too: ULFM defines both over its two groups.
fn recoverable(comm: MPI_Comm) -> Res<(billboard::Communicator, MPI_Errhandler)> {
    let found =
        crate::state::with(|m| m.comm_local(comm).filter(|c| !c.pending).map(|c| (c.comm.clone(), c.errhandler)));
    found.flatten().ok_or_else(|| bad_comm(comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_ack(comm: MPI_Comm) -> c_int {
    // Nothing has failed while the job runs: there is nothing to acknowledge.
    call("MPIX_Comm_failure_ack", comm, |m| m.comm(comm).map(|_| ()).ok_or_else(|| bad_comm(comm)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    call("MPIX_Comm_failure_get_acked", comm, |m| {
        m.comm(comm).ok_or_else(|| bad_comm(comm))?;
        *out(failedgrp, "failedgrp")? = MPI_GROUP_EMPTY;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    call_unlocked("MPIX_Comm_agree", comm, || {
        let flag = out(flag, "flag")?;
        let (c, _) = recoverable(comm)?;
        // The AND of every member's flag (both groups' of an intercommunicator).
        *flag = c.agree(*flag)?;
        Ok(())
    })
}

/// MPICH 4.1's MPIX_Comm_iagree (beyond MPICH 4.0's ABI; its binaries never call it): the
/// agreement of MPIX_Comm_agree as a request, `*flag` read now and written when it completes.
/// Its messages take a turn of the communicator's agreements, never one of its other
/// collectives' (`billboard/src/api/recover.rs`), so programs that start it in another order
/// than their barriers on different ranks (mpi4py's testIAgree) still agree.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_iagree(comm: MPI_Comm, flag: *mut c_int, request: *mut MPI_Request) -> c_int {
    call_unlocked("MPIX_Comm_iagree", comm, || {
        let flag = out(flag, "flag")?;
        let request = out(request, "request")?;
        let (c, _) = recoverable(comm)?;
        // SAFETY: MPI lets the operation write `flag` until the request completes.
        let op = unsafe { c.iagree_raw(flag)? };
        let op = Box::new(crate::coll::Scheduled::new(op, None));
        *request = crate::state::with(|m| m.add_request(Req::Background { op, comm })).expect("MPI is running");
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPIX_Comm_shrink", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, errhandler) = recoverable(comm)?;
        // Every member survives: a new context over all of them (both groups).
        *newcomm = crate::comm_create::store_child(errhandler, Some(c.shrink()?));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_revoke(comm: MPI_Comm) -> c_int {
    // Not collective, and allowed on a communicator already revoked (by anyone): the local
    // view of the table.
    call("MPIX_Comm_revoke", comm, |m| {
        let c = m.comm_local(comm).filter(|c| !c.pending).ok_or_else(|| bad_comm(comm))?;
        if c.comm.is_revoked() {
            return Ok(());
        }
        c.comm.revoke().map_err(Into::into)
    })
}

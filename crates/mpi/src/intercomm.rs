//! Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge, MPI_Comm_remote_size and
//! MPI_Comm_remote_group (the engine's side is `billboard`'s `api/intercomm.rs`). Dup, split,
//! create, free, compare, point-to-point and the collectives take intercommunicators through
//! their usual calls.

use std::ffi::c_int;

use crate::abi::*;
use crate::comm_create::{store_child, take};
use crate::error::{bad_comm, call, call_unlocked, err, out, rank_range, Res};
use crate::state;

/// The communicator `comm` if it is an intercommunicator (MPI_ERR_COMM otherwise).
fn inter(m: &state::Mpi, comm: MPI_Comm) -> Res<&billboard::Communicator> {
    let c = &m.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm;
    if !c.is_inter() {
        return Err(err(MPI_ERR_COMM, "an intracommunicator where an intercommunicator is needed"));
    }
    Ok(c)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", comm, |m| {
        *out(size, "size")? = inter(m, comm)?.peers() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_remote_group", comm, |m| {
        let c = inter(m, comm)?;
        let members = (0..c.peers()).map(|r| c.remote_process(r)).collect::<Result<Vec<_>, _>>()?;
        *out(group, "group")? = m.add_group(members);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Intercomm_create", local_comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (local, eh) = take(local_comm)?;
        if local.is_inter() {
            return Err(err(MPI_ERR_COMM, "the local communicator of MPI_Intercomm_create is an intercommunicator"));
        }
        let leader = usize::try_from(local_leader).ok().filter(|&r| r < local.size()).ok_or_else(|| {
            err(MPI_ERR_RANK, format!("invalid local leader {local_leader} ({})", rank_range(local.size())))
        })?;
        // Only the leader uses the peer communicator and the remote leader's rank.
        let peer = if local.rank() == leader {
            let (peer, _) = take(peer_comm)?;
            if peer.is_inter() {
                return Err(err(MPI_ERR_COMM, "the peer communicator of MPI_Intercomm_create is an intercommunicator"));
            }
            if remote_leader < 0 || remote_leader as usize >= peer.size() {
                let msg = format!("invalid remote leader {remote_leader} ({} of the peer)", rank_range(peer.size()));
                return Err(err(MPI_ERR_RANK, msg));
            }
            if tag < 0 {
                return Err(err(MPI_ERR_TAG, format!("invalid tag {tag}")));
            }
            Some(peer)
        } else {
            None
        };
        let made = local.intercomm_create(leader, peer.as_ref(), remote_leader.max(0) as usize, tag)?;
        *newcomm = store_child(eh, Some(made));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Intercomm_merge", intercomm, || {
        let newcomm = out(newintracomm, "newintracomm")?;
        let (c, eh) = take(intercomm)?;
        if !c.is_inter() {
            return Err(err(MPI_ERR_COMM, "MPI_Intercomm_merge of an intracommunicator"));
        }
        *newcomm = store_child(eh, Some(c.merge(high != 0)?));
        Ok(())
    })
}

//! Collectives: argument checks, MPI_IN_PLACE, counts and displacements in elements turned
//! into byte layouts, then the engine's collectives (`billboard::coll`).

use std::ffi::{c_int, c_void};

use billboard::Communicator;

use crate::abi::*;
use crate::datatype;
use crate::error::{bad_comm, call_unlocked, err, Res};
use crate::ops;

fn in_place(p: *const c_void) -> bool {
    p as isize == MPI_IN_PLACE
}

/// `len` bytes at `p` (NULL allowed when `len` is 0).
unsafe fn slice<'a>(p: *const c_void, len: usize) -> Res<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("NULL buffer for {len} bytes")));
    }
    Ok(std::slice::from_raw_parts(p.cast(), len))
}

unsafe fn slice_mut<'a>(p: *mut c_void, len: usize) -> Res<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("NULL buffer for {len} bytes")));
    }
    Ok(std::slice::from_raw_parts_mut(p.cast(), len))
}

/// The communicator behind a handle, taken out of the tables so that the collective runs
/// without holding them (other threads go on; the engine has its own lock).
fn comm_ref(comm: MPI_Comm) -> Res<Communicator> {
    crate::state::with(|m| m.comm(comm).map(|c| c.comm.clone())).flatten().ok_or_else(|| bad_comm(comm))
}

fn combiner(op: MPI_Op, t: MPI_Datatype) -> Res<ops::Combiner> {
    crate::state::with(|m| ops::combiner(m, op, t)).expect("MPI is running")
}

fn check_root(c: &Communicator, root: c_int) -> Res<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < c.size())
        .ok_or_else(|| err(MPI_ERR_ROOT, format!("invalid root {root}: the communicator has {} ranks", c.size())))
}

/// Byte layout of per-rank parts given in elements of `elem` bytes.
unsafe fn layout(n: usize, counts: *const c_int, displs: *const c_int, elem: usize) -> Res<Vec<(usize, usize)>> {
    (0..n)
        .map(|r| {
            let (c, d) = (*counts.add(r), *displs.add(r));
            if c < 0 || d < 0 {
                return Err(err(MPI_ERR_COUNT, format!("rank {r}: count {c}, displacement {d}")));
            }
            Ok((d as usize * elem, c as usize * elem))
        })
        .collect()
}

fn uniform(n: usize, part: usize) -> Vec<(usize, usize)> {
    (0..n).map(|r| (r * part, part)).collect()
}

fn span(layout: &[(usize, usize)]) -> usize {
    layout.iter().map(|&(d, l)| d + l).max().unwrap_or(0)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier(comm: MPI_Comm) -> c_int {
    call_unlocked("MPI_Barrier", comm, || Ok(comm_ref(comm)?.barrier()?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Bcast", comm, || {
        let c = comm_ref(comm)?;
        let root = check_root(&c, root)?;
        Ok(c.bcast_bytes(slice_mut(buf, datatype::bytes(count, t)?)?, root)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Reduce", comm, || {
        let c = comm_ref(comm)?;
        let root = check_root(&c, root)?;
        let len = datatype::bytes(count, t)?;
        let mut combine = combiner(op, t)?;
        let is_root = c.rank() == root;
        let send =
            if in_place(sendbuf) && is_root { slice(recvbuf, len)?.to_vec() } else { slice(sendbuf, len)?.to_vec() };
        let recv = if is_root { Some(slice_mut(recvbuf, len)?) } else { None };
        Ok(c.reduce_bytes(&send, recv, root, &mut combine)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Allreduce", comm, || {
        let c = comm_ref(comm)?;
        let len = datatype::bytes(count, t)?;
        let mut combine = combiner(op, t)?;
        let send = if in_place(sendbuf) { slice(recvbuf, len)?.to_vec() } else { slice(sendbuf, len)?.to_vec() };
        Ok(c.allreduce_bytes(&send, slice_mut(recvbuf, len)?, &mut combine)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    call_unlocked("MPI_Reduce_local", MPI_COMM_WORLD, || {
        let len = datatype::bytes(count, t)?;
        let mut combine = combiner(op, t)?;
        combine(slice(inbuf, len)?, slice_mut(inoutbuf, len)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Reduce_scatter_block", comm, || {
        let c = comm_ref(comm)?;
        let part = datatype::bytes(recvcount, t)?;
        let total = part * c.size();
        let mut combine = combiner(op, t)?;
        let send = if in_place(sendbuf) { slice(recvbuf, total)?.to_vec() } else { slice(sendbuf, total)?.to_vec() };
        let mut all = vec![0u8; total];
        c.allreduce_bytes(&send, &mut all, &mut combine)?;
        let me = c.rank();
        slice_mut(recvbuf, part)?.copy_from_slice(&all[me * part..(me + 1) * part]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Reduce_scatter", comm, || {
        let c = comm_ref(comm)?;
        let elem = datatype::size_of(t)?;
        let counts: Vec<c_int> = (0..c.size()).map(|r| *recvcounts.add(r)).collect();
        let displs: Vec<c_int> = counts
            .iter()
            .scan(0, |acc, &k| {
                let d = *acc;
                *acc += k;
                Some(d)
            })
            .collect();
        let parts = layout(c.size(), counts.as_ptr(), displs.as_ptr(), elem)?;
        let total = span(&parts);
        let mut combine = combiner(op, t)?;
        let send = if in_place(sendbuf) { slice(recvbuf, total)?.to_vec() } else { slice(sendbuf, total)?.to_vec() };
        let mut all = vec![0u8; total];
        c.allreduce_bytes(&send, &mut all, &mut combine)?;
        let (d, l) = parts[c.rank()];
        slice_mut(recvbuf, l)?.copy_from_slice(&all[d..d + l]);
        Ok(())
    })
}

unsafe fn scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> c_int {
    let name = if exclusive { "MPI_Exscan" } else { "MPI_Scan" };
    call_unlocked(name, comm, || {
        let c = comm_ref(comm)?;
        let len = datatype::bytes(count, t)?;
        let mut combine = combiner(op, t)?;
        let send = if in_place(sendbuf) { slice(recvbuf, len)?.to_vec() } else { slice(sendbuf, len)?.to_vec() };
        Ok(c.scan_bytes(&send, slice_mut(recvbuf, len)?, &mut combine, exclusive)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    scan(sendbuf, recvbuf, count, t, op, comm, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    t: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    scan(sendbuf, recvbuf, count, t, op, comm, true)
}

/// Gather with per-rank layouts in bytes at the root.
unsafe fn gatherv(
    sendbuf: *const c_void,
    sendlen: Res<usize>,
    recvbuf: *mut c_void,
    parts: impl FnOnce(&Communicator) -> Res<Vec<(usize, usize)>>,
    root: c_int,
    comm: MPI_Comm,
) -> Res {
    let c = comm_ref(comm)?;
    let root = check_root(&c, root)?;
    if c.rank() != root {
        return Ok(c.gatherv_bytes(slice(sendbuf, sendlen?)?, None, root)?);
    }
    let parts = parts(&c)?;
    let recv = slice_mut(recvbuf, span(&parts))?;
    let (d, l) = parts[root];
    let mine = if in_place(sendbuf) { recv[d..d + l].to_vec() } else { slice(sendbuf, sendlen?)?.to_vec() };
    Ok(c.gatherv_bytes(&mine, Some((recv, &parts)), root)?)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Gather", comm, || {
        let sendlen = datatype::bytes(sendcount, sendtype);
        gatherv(sendbuf, sendlen, recvbuf, |c| Ok(uniform(c.size(), datatype::bytes(recvcount, recvtype)?)), root, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Gatherv", comm, || {
        let sendlen = datatype::bytes(sendcount, sendtype);
        let parts = |c: &Communicator| layout(c.size(), recvcounts, displs, datatype::size_of(recvtype)?);
        gatherv(sendbuf, sendlen, recvbuf, parts, root, comm)
    })
}

unsafe fn scatterv(
    sendbuf: *const c_void,
    parts: impl FnOnce(&Communicator) -> Res<Vec<(usize, usize)>>,
    recvbuf: *mut c_void,
    recvlen: Res<usize>,
    root: c_int,
    comm: MPI_Comm,
) -> Res {
    let c = comm_ref(comm)?;
    let root = check_root(&c, root)?;
    if c.rank() != root {
        return Ok(c.scatterv_bytes(None, slice_mut(recvbuf, recvlen?)?, root)?);
    }
    let parts = parts(&c)?;
    let send = slice(sendbuf, span(&parts))?;
    if in_place(recvbuf) {
        // The root's own part stays where it is.
        let mut scratch = vec![0u8; parts[root].1];
        return Ok(c.scatterv_bytes(Some((send, &parts)), &mut scratch, root)?);
    }
    Ok(c.scatterv_bytes(Some((send, &parts)), slice_mut(recvbuf, recvlen?)?, root)?)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Scatter", comm, || {
        let recvlen = datatype::bytes(recvcount, recvtype);
        scatterv(
            sendbuf,
            |c| Ok(uniform(c.size(), datatype::bytes(sendcount, sendtype)?)),
            recvbuf,
            recvlen,
            root,
            comm,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Scatterv", comm, || {
        let recvlen = datatype::bytes(recvcount, recvtype);
        let parts = |c: &Communicator| layout(c.size(), sendcounts, displs, datatype::size_of(sendtype)?);
        scatterv(sendbuf, parts, recvbuf, recvlen, root, comm)
    })
}

unsafe fn allgatherv(
    sendbuf: *const c_void,
    sendlen: Res<usize>,
    recvbuf: *mut c_void,
    parts: Vec<(usize, usize)>,
    comm: MPI_Comm,
) -> Res {
    let c = comm_ref(comm)?;
    let recv = slice_mut(recvbuf, span(&parts))?;
    let (d, l) = parts[c.rank()];
    let mine = if in_place(sendbuf) { recv[d..d + l].to_vec() } else { slice(sendbuf, sendlen?)?.to_vec() };
    Ok(c.allgatherv_bytes(&mine, recv, &parts)?)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Allgather", comm, || {
        let n = comm_ref(comm)?.size();
        let parts = uniform(n, datatype::bytes(recvcount, recvtype)?);
        allgatherv(sendbuf, datatype::bytes(sendcount, sendtype), recvbuf, parts, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Allgatherv", comm, || {
        let n = comm_ref(comm)?.size();
        let parts = layout(n, recvcounts, displs, datatype::size_of(recvtype)?)?;
        allgatherv(sendbuf, datatype::bytes(sendcount, sendtype), recvbuf, parts, comm)
    })
}

unsafe fn alltoallv(
    sendbuf: *const c_void,
    send_parts: Vec<(usize, usize)>,
    recvbuf: *mut c_void,
    recv_parts: Vec<(usize, usize)>,
    comm: MPI_Comm,
) -> Res {
    let c = comm_ref(comm)?;
    let recv = slice_mut(recvbuf, span(&recv_parts))?;
    if in_place(sendbuf) {
        let send = recv.to_vec();
        return Ok(c.alltoallv_bytes(&send, &recv_parts, recv, &recv_parts)?);
    }
    Ok(c.alltoallv_bytes(slice(sendbuf, span(&send_parts))?, &send_parts, recv, &recv_parts)?)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Alltoall", comm, || {
        let n = comm_ref(comm)?.size();
        let recv_parts = uniform(n, datatype::bytes(recvcount, recvtype)?);
        let send_parts =
            if in_place(sendbuf) { recv_parts.clone() } else { uniform(n, datatype::bytes(sendcount, sendtype)?) };
        alltoallv(sendbuf, send_parts, recvbuf, recv_parts, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Alltoallv", comm, || {
        let n = comm_ref(comm)?.size();
        let recv_parts = layout(n, recvcounts, rdispls, datatype::size_of(recvtype)?)?;
        let send_parts = if in_place(sendbuf) {
            recv_parts.clone()
        } else {
            layout(n, sendcounts, sdispls, datatype::size_of(sendtype)?)?
        };
        alltoallv(sendbuf, send_parts, recvbuf, recv_parts, comm)
    })
}

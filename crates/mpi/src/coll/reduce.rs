//! Reductions and scans: reduce, allreduce, reduce_local, reduce-scatter, scan, exscan.

use super::*;

nonblocking!([PMPI_Ireduce, PMPI_Ireduce_c, PMPI_Reduce_init, PMPI_Reduce_init_c], (
    sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op, root: c_int,
), |c| ireduce((sendbuf, recvbuf, count.into(), t, op), root, c));

/// Reduce as a schedule (MPI_Ireduce, and MPI_Reduce on an intercommunicator or of large vectors).
unsafe fn ireduce(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    if root == InterRoot::Elsewhere {
        // Its arguments are not significant (mpi4py passes no datatype).
        return Ok((c.inter_idle()?, None));
    }
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let how = reduction(op, t, &layout)?;
    if root != InterRoot::Here {
        no_in_place_on_inter(c, sendbuf)?;
        return Ok((c.ireduce_at(slice(sendbuf, len)?.as_ptr(), std::ptr::null_mut(), len, root, how)?, None));
    }
    // An intercommunicator's root contributes nothing.
    let send = if c.is_inter() { no_data() } else { reduction_source(sendbuf, recvbuf, len)? };
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.ireduce_at(send, land.ptr(), len, root, how)?, land.at_completion()))
}

nonblocking!([PMPI_Iallreduce, PMPI_Iallreduce_c, PMPI_Allreduce_init, PMPI_Allreduce_init_c], (
    sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op,
), |c| iallreduce((sendbuf, recvbuf, count.into(), t, op), c));

/// Allreduce as a schedule (MPI_Iallreduce, and MPI_Allreduce on an intercommunicator or of large
/// vectors).
unsafe fn iallreduce(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res<Started> {
    no_in_place_on_inter(c, sendbuf)?;
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let how = reduction(op, t, &layout)?;
    let send = reduction_source(sendbuf, recvbuf, len)?;
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.iallreduce_raw(send, land.ptr(), len, how)?, land.at_completion()))
}

counted! {
    [PMPI_Reduce; Count = c_int] [PMPI_Reduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int {
        let count = i64::from(count);
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            let at = match check_root(&c, root)? {
                InterRoot::Remote(r) => r,
                _ => c.rank(),
            };
            let mut prepared = None;
            if builtin_on_board(&c, (sendbuf, recvbuf, count, t, op), Some(at), &mut prepared)? {
                return Ok(());
            }
            // An intercommunicator's form, and large vectors, are schedules: started and waited for.
            let Some((layout, len)) = direct_reduction(&c, count, t, true)? else {
                // Waited for at once: the hierarchy may run its host phases on the board.
                let (coll, done) = billboard::coll::blocking(true, || ireduce((sendbuf, recvbuf, count, t, op), root, &c))?;
                return Scheduled { coll, done }.wait();
            };
            let mut combine = match prepared {
                Some(combine) => combine,
                None => combiner(op, t)?,
            };
            let elements = elements(op, &layout);
            if c.rank() != at {
                // Only the root's receive buffer matters (and may take MPI_IN_PLACE).
                return Ok(c.reduce_elements(slice(sendbuf, len)?, None, at, &mut *combine, elements)?);
            }
            let mut land = Landing::new(layout, count, recvbuf, len)?;
            with_contribution(sendbuf, recvbuf, len, |send| {
                Ok(c.reduce_elements(send, Some(land.bytes()), at, &mut *combine, elements)?)
            })?;
            land.finish();
            Ok(())
        })
    }
}

counted! {
    [PMPI_Allreduce; Count = c_int] [PMPI_Allreduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        let count = i64::from(count);
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            let mut prepared = None;
            if builtin_on_board(&c, (sendbuf, recvbuf, count, t, op), None, &mut prepared)? {
                return Ok(());
            }
            let Some((layout, len)) = direct_reduction(&c, count, t, false)? else {
                // As for MPI_Reduce.
                let (coll, done) = billboard::coll::blocking(true, || iallreduce((sendbuf, recvbuf, count, t, op), &c))?;
                return Scheduled { coll, done }.wait();
            };
            let mut combine = match prepared {
                Some(combine) => combine,
                None => combiner(op, t)?,
            };
            let elements = elements(op, &layout);
            let mut land = Landing::new(layout, count, recvbuf, len)?;
            with_contribution(sendbuf, recvbuf, len, |send| {
                Ok(c.allreduce_elements(send, land.bytes(), &mut *combine, elements)?)
            })?;
            land.finish();
            Ok(())
        })
    }
}

counted! {
    [PMPI_Reduce_local; Count = c_int] [PMPI_Reduce_local_c; Count = MPI_Count]
    fn(inbuf: *const c_void, inoutbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op) -> c_int {
        call_unlocked(FUNCTION, MPI_COMM_WORLD, || {
            let layout = datatype::layout(t)?;
            let len = layout.reduce_bytes(count)?;
            let mut combine = combiner(op, t)?;
            combine(slice(inbuf, len)?, slice_mut(inoutbuf, len)?);
            Ok(())
        })
    }
}

/// Reduce-scatter as a schedule: each rank's block of the reduction of every rank's `total`
/// bytes (`blocks`: byte offset and length of each rank's).
unsafe fn reduce_scatter(
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    total: usize,
    blocks: &[(usize, usize)],
    (t, op): (MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res<Started> {
    no_in_place_on_inter(c, sendbuf)?;
    let layout = datatype::layout(t)?;
    let how = reduction(op, t, &layout)?;
    let send = reduction_source(sendbuf, recvbuf, total)?;
    let part = blocks.get(c.rank()).map_or(0, |b| b.1);
    let mut land = Landing::new(layout, instances(t, part)?, recvbuf, part)?;
    Ok((c.ireduce_scatter_raw(send, total, land.ptr(), blocks, how)?, land.at_completion()))
}

/// How many instances of `t` a reduction span of `len` bytes holds.
fn instances(t: MPI_Datatype, len: usize) -> Res<i64> {
    let extent = datatype::layout(t)?.extent().max(1) as usize;
    Ok((len / extent) as i64)
}

/// Every rank's block of MPI_Reduce_scatter_block's result, and the result's length.
fn block_part(c: &Communicator, recvcount: i64, t: MPI_Datatype) -> Res<(Vec<(usize, usize)>, usize)> {
    let part = datatype::layout(t)?.reduce_bytes(recvcount)?;
    Ok(((0..c.size()).map(|r| (r * part, part)).collect(), part * c.size()))
}

/// Every rank's block of MPI_Reduce_scatter's result, and the result's length.
unsafe fn varying_part(c: &Communicator, recvcounts: Ints, t: MPI_Datatype) -> Res<(Vec<(usize, usize)>, usize)> {
    let layout = datatype::layout(t)?;
    layout.reduce_bytes(0)?;
    let parts = reduce_parts(c.size(), recvcounts, layout.extent() as usize)?;
    let total = parts.last().map_or(0, |&(d, l)| d + l);
    Ok((parts, total))
}

/// Reduce-scatter, blocking: the reduction's `total` bytes everywhere, this rank's `part` kept.
/// (A direct form: the schedule's allocations cost more than the whole operation here.)
unsafe fn reduce_scatter_now(
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    (blocks, total): (Vec<(usize, usize)>, usize),
    (t, op): (MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res {
    if let Some(done) = inter_blocking(c, |c| reduce_scatter((sendbuf, recvbuf), total, &blocks, (t, op), c)) {
        return done;
    }
    // On several hosts (and wherever the table schedules the allreduce, and not the board)
    // the schedule's own choice runs: the hierarchy there, its host phases on the boards
    // (waited for at once).
    if c.reduce_scatter_scheduled(total)? {
        let (coll, done) =
            billboard::coll::blocking(true, || reduce_scatter((sendbuf, recvbuf), total, &blocks, (t, op), c))?;
        return Scheduled { coll, done }.wait();
    }
    let (d, l) = blocks[c.rank()];
    let layout = datatype::layout(t)?;
    let elem = layout.extent().max(1) as usize;
    let mut combine = combiner(op, t)?;
    // In place the block lands at the start of the buffer the contribution lies in: the
    // contribution is a copy (`with_contribution`).
    let mut land = Landing::new(layout, instances(t, l)?, recvbuf, l)?;
    with_contribution(sendbuf, recvbuf, total, |send| {
        Ok(c.reduce_scatter_bytes(send, land.bytes(), (d, elem), &mut *combine)?)
    })?;
    land.finish();
    Ok(())
}

counted! {
    [PMPI_Reduce_scatter_block; Count = c_int] [PMPI_Reduce_scatter_block_c; Count = MPI_Count]
    fn(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, t: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            reduce_scatter_now((sendbuf, recvbuf), block_part(&c, recvcount.into(), t)?, (t, op), &c)
        })
    }
}

nonblocking!([PMPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block_c, PMPI_Reduce_scatter_block_init, PMPI_Reduce_scatter_block_init_c], (
    sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, t: MPI_Datatype, op: MPI_Op,
), |c| {
    let (blocks, total) = block_part(c, recvcount.into(), t)?;
    reduce_scatter((sendbuf, recvbuf), total, &blocks, (t, op), c)
});

counted! {
    [PMPI_Reduce_scatter; Count = c_int] [PMPI_Reduce_scatter_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            reduce_scatter_now((sendbuf, recvbuf), varying_part(&c, Count::ints(recvcounts), t)?, (t, op), &c)
        })
    }
}

nonblocking!([PMPI_Ireduce_scatter, PMPI_Ireduce_scatter_c, PMPI_Reduce_scatter_init, PMPI_Reduce_scatter_init_c], (
    sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, t: MPI_Datatype, op: MPI_Op,
), |c| {
    let (blocks, total) = varying_part(c, Count::ints(recvcounts), t)?;
    reduce_scatter((sendbuf, recvbuf), total, &blocks, (t, op), c)
});

/// Scan and exscan as a schedule.
unsafe fn scan(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    c: &Communicator,
    exclusive: bool,
) -> Res<Started> {
    no_scan_on_inter(c)?;
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let combine = combiner(op, t)?;
    let send = reduction_source(sendbuf, recvbuf, len)?;
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.iscan_raw(send, land.ptr(), len, combine, exclusive)?, land.at_completion()))
}

/// Scan and exscan, blocking (a direct form, as for reduce-scatter).
unsafe fn scan_now(
    function: &'static str,
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    comm: MPI_Comm,
    exclusive: bool,
) -> c_int {
    call_unlocked(function, comm, || {
        let c = comm_ref(comm)?;
        no_scan_on_inter(&c)?;
        let layout = datatype::layout(t)?;
        let len = layout.reduce_bytes(count)?;
        let mut combine = combiner(op, t)?;
        let mut land = Landing::new(layout, count, recvbuf, len)?;
        with_contribution(sendbuf, recvbuf, len, |send| {
            Ok(c.scan_bytes(send, land.bytes(), &mut *combine, exclusive)?)
        })?;
        land.finish();
        Ok(())
    })
}

/// `$name(sendbuf, recvbuf, count, t, op, comm)`, its I-form and persistent form and their
/// large-count twins, for scan (`false`) or exscan (`true`).
macro_rules! scans {
    ([$name:ident, $iname:ident, $cname:ident, $icname:ident, $pname:ident, $pcname:ident], $exclusive:expr) => {
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
                scan_now(FUNCTION, (sendbuf, recvbuf, count.into(), t, op), comm, $exclusive)
            }
        }

        nonblocking!([$iname, $icname, $pname, $pcname], (
            sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op,
        ), |c| scan((sendbuf, recvbuf, count.into(), t, op), c, $exclusive));
    };
}

scans!([PMPI_Scan, PMPI_Iscan, PMPI_Scan_c, PMPI_Iscan_c, PMPI_Scan_init, PMPI_Scan_init_c], false);
scans!([PMPI_Exscan, PMPI_Iexscan, PMPI_Exscan_c, PMPI_Iexscan_c, PMPI_Exscan_init, PMPI_Exscan_init_c], true);

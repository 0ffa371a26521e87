//! Collectives that move data: broadcast, gather, scatter, all-gather, all-to-all.

use super::*;

nonblocking!([PMPI_Ibcast, PMPI_Ibcast_c, PMPI_Bcast_init, PMPI_Bcast_init_c], (
    buf: *mut c_void, count: Count, t: MPI_Datatype, root: c_int,
), |c| ibcast(buf, count.into(), t, root, c));

/// Broadcast as a schedule.
unsafe fn ibcast(buf: *mut c_void, count: i64, t: MPI_Datatype, root: c_int, c: &Communicator) -> Res<Started> {
    let root = check_root(c, root)?;
    if root == InterRoot::Elsewhere {
        return Ok((c.inter_idle()?, None));
    }
    not_in_place(buf, "the buffer")?;
    let dir = if root == InterRoot::Here { Dir::Read } else { Dir::Write };
    // A staged view lives until the end: the root's packed copy is what goes out.
    let v = view(&datatype::layout(t)?, buf, count, dir)?;
    Ok(started(c.ibcast_at(v.ptr(), v.len(), root)?, finish_view(v)))
}

counted! {
    [PMPI_Bcast; Count = c_int] [PMPI_Bcast_c; Count = MPI_Count]
    fn(buf: *mut c_void, count: Count, t: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            if let Some(done) = inter_blocking(&c, |c| ibcast(buf, count.into(), t, root, c)) {
                return done;
            }
            // On an intracommunicator the root is a rank: this one, or another.
            let (dir, root) = match check_root(&c, root)? {
                InterRoot::Remote(r) => (Dir::Write, r),
                _ => (Dir::Read, c.rank()),
            };
            not_in_place(buf, "the buffer")?;
            let mut v = view(&datatype::layout(t)?, buf, count, dir)?;
            c.bcast_bytes(v.bytes_mut(), root)?;
            let len = v.len();
            v.finish(len);
            Ok(())
        })
    }
}

/// `count` elements per rank for `n` ranks do not fit a count.
fn count_overflow(count: i64, n: usize) -> crate::error::MpiError {
    err(MPI_ERR_COUNT, format!("count {count} per rank for {n} ranks overflows a count"))
}

/// Where a rank's contribution lies: its send view, or in place its part of the receive
/// buffer (`part` of `recv`).
unsafe fn contribution(send: &Option<View>, recv: &Parted, part: usize) -> (*const u8, usize) {
    match send {
        Some(v) => (v.ptr(), v.len()),
        None => {
            let (d, l) = recv.parts()[part];
            (recv.ptr().add(d), l)
        }
    }
}

/// Gather with per-rank counts and displacements (in elements of `recvtype`) at the root.
/// `uniform`: MPI_Gather, every part of one length (the hierarchy may forward them).
unsafe fn gatherv(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    (recvbuf, uniform): (*mut c_void, bool),
    shape: impl FnOnce(&Communicator) -> Res<Shape>,
    recvtype: MPI_Datatype,
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    let send = || view(&datatype::layout(sendtype)?, sendbuf, sendcount, Dir::Read);
    match root {
        InterRoot::Here => {}
        InterRoot::Elsewhere => return Ok((c.inter_idle()?, None)),
        InterRoot::Remote(_) => {
            no_in_place_on_inter(c, sendbuf)?;
            let send = send()?;
            let coll = c.igatherv_at(send.ptr(), send.len(), None, root, uniform)?;
            return Ok(started(coll, move || drop(send)));
        }
    }
    not_in_place(recvbuf, "recvbuf")?;
    // An intercommunicator's root sends nothing (its send buffer is not read).
    let in_place = in_place(sendbuf) && !c.is_inter();
    let dir = if in_place { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, shape(c)?.parts(), dir)?;
    // In place, the root's part is already where it goes.
    let send = if in_place || c.is_inter() { None } else { Some(send()?) };
    let (from, len) = if c.is_inter() { (no_data() as *const u8, 0) } else { contribution(&send, &recv, c.rank()) };
    let coll = c.igatherv_at(from, len, Some((recv.ptr(), recv.len(), recv.parts())), root, uniform)?;
    Ok(started(coll, move || finish_parted(recv, send)))
}

/// Ends the use of a parted receive buffer (unpacking it if staged) and of a send view.
pub(super) fn finish_parted(recv: Parted, send: Option<View>) {
    drop(send);
    // SAFETY: the collective has ended; MPI keeps the user's buffer valid until then.
    unsafe { recv.finish() }
}

/// Ends the use of a receive view: what it staged is unpacked.
fn finish_view(v: View) -> impl FnOnce() {
    move || {
        let len = v.len();
        // SAFETY: as in `finish_parted`.
        unsafe { v.finish(len) }
    }
}

nonblocking!([PMPI_Igather, PMPI_Igather_c, PMPI_Gather_init, PMPI_Gather_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| igather((sendbuf, sendcount.into(), sendtype), (recvbuf, recvcount.into(), recvtype), root, c));

/// Gather as a schedule.
unsafe fn igather(
    send: (*const c_void, i64, MPI_Datatype),
    (recvbuf, recvcount, recvtype): (*mut c_void, i64, MPI_Datatype),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let shape = |c: &Communicator| Ok(Shape::Uniform(c.peers(), recvcount));
    gatherv(send, (recvbuf, true), shape, recvtype, root, c)
}

counted! {
    [PMPI_Gather; Count = c_int] [PMPI_Gather_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
    ) -> c_int {
        let (send, recv) = ((sendbuf, sendcount.into(), sendtype), (recvbuf, recvcount.into(), recvtype));
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            let start = |c: &Communicator| igather(send, recv, root, c);
            if let Some(done) = inter_blocking(&c, start) {
                return done;
            }
            // On an intracommunicator the parts lie one after another: the whole buffer is one
            // view, and the direct form runs (nothing built per call).
            let r = match check_root(&c, root)? {
                InterRoot::Remote(r) => {
                    let v = view(&datatype::layout(sendtype)?, sendbuf, send.1, Dir::Read)?;
                    return Ok(c.gather_parts(v.ptr(), v.len(), no_data(), r)?);
                }
                _ => c.rank(),
            };
            not_in_place(recvbuf, "recvbuf")?;
            let n = c.size();
            let whole = recv.1.checked_mul(n as i64).ok_or_else(|| count_overflow(recv.1, n))?;
            let dir = if in_place(sendbuf) { Dir::Both } else { Dir::Write };
            let recv = view(&datatype::layout(recvtype)?, recvbuf, whole, dir)?;
            let part = recv.len() / n.max(1);
            let send = match in_place(sendbuf) {
                true => None,
                false => Some(view(&datatype::layout(sendtype)?, sendbuf, send.1, Dir::Read)?),
            };
            if send.as_ref().is_some_and(|v| v.len() != part) {
                // The root's own part differs in length from its parts to receive: the schedule
                // checks and copies what fits.
                drop((send, recv));
                let (coll, done) = billboard::coll::blocking(true, || start(&c))?;
                return Scheduled { coll, done }.wait();
            }
            let from = send.as_ref().map_or(recv.ptr().wrapping_add(r * part), View::ptr);
            c.gather_parts(from, part, recv.ptr(), r)?;
            drop(send);
            let len = recv.len();
            recv.finish(len);
            Ok(())
        })
    }
}

collective!([PMPI_Gatherv, PMPI_Igatherv, PMPI_Gatherv_c, PMPI_Igatherv_c, PMPI_Gatherv_init, PMPI_Gatherv_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Shape::varying(c.peers(), recvcounts, displs);
    gatherv((sendbuf, sendcount.into(), sendtype), (recvbuf, false), shape, recvtype, root, c)
});

/// Scatter with per-rank counts and displacements (in elements of `sendtype`) at the root.
/// `uniform`: MPI_Scatter, every part of one length (the hierarchy may forward them).
unsafe fn scatterv(
    (sendbuf, uniform): (*const c_void, bool),
    shape: impl FnOnce(&Communicator) -> Res<Shape>,
    sendtype: MPI_Datatype,
    (recvbuf, recvcount, recvtype): (*mut c_void, i64, MPI_Datatype),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    let recv = || {
        not_in_place(recvbuf, "recvbuf (in place only at the root)")?;
        view(&datatype::layout(recvtype)?, recvbuf, recvcount, Dir::Write)
    };
    match root {
        InterRoot::Here => {}
        InterRoot::Elsewhere => return Ok((c.inter_idle()?, None)),
        InterRoot::Remote(_) => {
            let v = recv()?;
            let coll = c.iscatterv_at(None, v.ptr(), v.len(), root, uniform)?;
            return Ok(started(coll, finish_view(v)));
        }
    }
    not_in_place(sendbuf, "sendbuf")?;
    let send = parted(&datatype::layout(sendtype)?, sendbuf, shape(c)?.parts(), Dir::Read)?;
    let whole = Some((send.ptr() as *const u8, send.len(), send.parts()));
    // In place (or on an intercommunicator, where the root receives nothing), the root's own
    // part stays where it is.
    if in_place(recvbuf) || c.is_inter() {
        let coll = c.iscatterv_at(whole, no_data(), 0, root, uniform)?;
        return Ok(started(coll, move || drop(send)));
    }
    let v = recv()?;
    let coll = c.iscatterv_at(whole, v.ptr(), v.len(), root, uniform)?;
    let unpack = finish_view(v);
    Ok(started(coll, move || {
        drop(send);
        unpack()
    }))
}

nonblocking!([PMPI_Iscatter, PMPI_Iscatter_c, PMPI_Scatter_init, PMPI_Scatter_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| iscatter((sendbuf, sendcount.into(), sendtype), (recvbuf, recvcount.into(), recvtype), root, c));

/// Scatter as a schedule.
unsafe fn iscatter(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    recv: (*mut c_void, i64, MPI_Datatype),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let shape = |c: &Communicator| Ok(Shape::Uniform(c.peers(), sendcount));
    scatterv((sendbuf, true), shape, sendtype, recv, root, c)
}

counted! {
    [PMPI_Scatter; Count = c_int] [PMPI_Scatter_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
    ) -> c_int {
        let (send, recv) = ((sendbuf, sendcount.into(), sendtype), (recvbuf, recvcount.into(), recvtype));
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            let start = |c: &Communicator| iscatter(send, recv, root, c);
            if let Some(done) = inter_blocking(&c, start) {
                return done;
            }
            // As in MPI_Gather: the root's parts are one view, the direct form runs.
            let into = || -> Res<View> {
                not_in_place(recvbuf, "recvbuf (in place only at the root)")?;
                view(&datatype::layout(recvtype)?, recvbuf, recv.1, Dir::Write)
            };
            let r = match check_root(&c, root)? {
                InterRoot::Remote(r) => {
                    let v = into()?;
                    c.scatter_parts(no_data(), v.len(), (v.ptr(), v.len()), r)?;
                    let len = v.len();
                    v.finish(len);
                    return Ok(());
                }
                _ => c.rank(),
            };
            not_in_place(sendbuf, "sendbuf")?;
            let n = c.size();
            let whole = send.1.checked_mul(n as i64).ok_or_else(|| count_overflow(send.1, n))?;
            let parts = view(&datatype::layout(sendtype)?, sendbuf, whole, Dir::Read)?;
            let part = parts.len() / n.max(1);
            let mine = match in_place(recvbuf) {
                true => None,
                false => Some(into()?),
            };
            if mine.as_ref().is_some_and(|v| v.len() != part) {
                // As in MPI_Gather: the schedule checks and copies what fits.
                drop((parts, mine));
                let (coll, done) = billboard::coll::blocking(true, || start(&c))?;
                return Scheduled { coll, done }.wait();
            }
            let at = mine.as_ref().map_or((no_data(), 0), |v| (v.ptr(), v.len()));
            c.scatter_parts(parts.ptr(), part, at, r)?;
            drop(parts);
            if let Some(v) = mine {
                let len = v.len();
                v.finish(len);
            }
            Ok(())
        })
    }
}

collective!([PMPI_Scatterv, PMPI_Iscatterv, PMPI_Scatterv_c, PMPI_Iscatterv_c, PMPI_Scatterv_init, PMPI_Scatterv_init_c], (
    sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Shape::varying(c.peers(), sendcounts, displs);
    scatterv((sendbuf, false), shape, sendtype, (recvbuf, recvcount.into(), recvtype), root, c)
});

unsafe fn allgatherv(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    recvbuf: *mut c_void,
    shape: Shape,
    recvtype: MPI_Datatype,
    c: &Communicator,
) -> Res<Started> {
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let dir = if in_place(sendbuf) { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, shape.parts(), dir)?;
    let send =
        if in_place(sendbuf) { None } else { Some(view(&datatype::layout(sendtype)?, sendbuf, sendcount, Dir::Read)?) };
    let (from, len) = contribution(&send, &recv, c.rank());
    let coll = c.iallgatherv_raw(from, len, recv.ptr(), recv.len(), recv.parts())?;
    Ok(started(coll, move || finish_parted(recv, send)))
}

collective!([PMPI_Allgather, PMPI_Iallgather, PMPI_Allgather_c, PMPI_Iallgather_c, PMPI_Allgather_init, PMPI_Allgather_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c| {
    allgatherv((sendbuf, sendcount.into(), sendtype), recvbuf, Shape::Uniform(c.peers(), recvcount.into()), recvtype, c)
});

collective!([PMPI_Allgatherv, PMPI_Iallgatherv, PMPI_Allgatherv_c, PMPI_Iallgatherv_c, PMPI_Allgatherv_init, PMPI_Allgatherv_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype
), |c| {
    allgatherv((sendbuf, sendcount.into(), sendtype), recvbuf, Shape::varying(c.peers(), recvcounts, displs)?, recvtype, c)
});

/// All-to-all(v) as a schedule; `uniform`: MPI_Alltoall, every part of one length in every
/// rank (so that its blocking form may run on the board).
unsafe fn alltoallv(
    uniform: bool,
    (sendbuf, send_shape, sendtype): (*const c_void, Shape, MPI_Datatype),
    (recvbuf, recv_shape, recvtype): (*mut c_void, Shape, MPI_Datatype),
    c: &Communicator,
) -> Res<Started> {
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let dir = if in_place(sendbuf) { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, recv_shape.parts(), dir)?;
    let into = (recv.ptr(), recv.len(), recv.parts());
    if in_place(sendbuf) {
        // A copy to send from: the receives overwrite the buffer.
        let send = recv.bytes().to_vec();
        let from = (send.as_ptr(), send.len(), recv.parts());
        let coll = if uniform { c.ialltoall_raw(from, into) } else { c.ialltoallv_raw(from, into) }?;
        return Ok(started(coll, move || {
            drop(send);
            finish_parted(recv, None)
        }));
    }
    let send = parted(&datatype::layout(sendtype)?, sendbuf, send_shape.parts(), Dir::Read)?;
    let from = (send.ptr() as *const u8, send.len(), send.parts());
    let coll = if uniform { c.ialltoall_raw(from, into) } else { c.ialltoallv_raw(from, into) }?;
    Ok(started(coll, move || {
        drop(send);
        finish_parted(recv, None)
    }))
}

/// Alltoallv's counts and displacements: the send side's (none in place), the receive side's.
unsafe fn alltoall_shapes(
    c: &Communicator,
    sendbuf: *const c_void,
    send: impl FnOnce(usize) -> Res<Shape>,
    recv: impl FnOnce(usize) -> Res<Shape>,
) -> Res<(Shape, Shape)> {
    let n = c.peers();
    let send = if in_place(sendbuf) { Shape::Uniform(0, 0) } else { send(n)? };
    Ok((send, recv(n)?))
}

collective!([PMPI_Alltoall, PMPI_Ialltoall, PMPI_Alltoall_c, PMPI_Ialltoall_c, PMPI_Alltoall_init, PMPI_Alltoall_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c| {
    let n = c.peers();
    let (send, recv) = (Shape::Uniform(n, sendcount.into()), Shape::Uniform(n, recvcount.into()));
    alltoallv(true, (sendbuf, send, sendtype), (recvbuf, recv, recvtype), c)
});

collective!([PMPI_Alltoallv, PMPI_Ialltoallv, PMPI_Alltoallv_c, PMPI_Ialltoallv_c, PMPI_Alltoallv_init, PMPI_Alltoallv_init_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype
), |c| {
    let (send, recv) =
        alltoall_shapes(c, sendbuf, |n| Shape::varying(n, sendcounts, sdispls), |n| Shape::varying(n, recvcounts, rdispls))?;
    alltoallv(false, (sendbuf, send, sendtype), (recvbuf, recv, recvtype), c)
});

/// One rank's part in Alltoallw: count, byte displacement, type.
pub(super) type WPart = (i64, i64, MPI_Datatype);

/// Parts packed one after another, and their byte layout.
type Packed = (Vec<u8>, Vec<(usize, usize)>);

/// Alltoallw's per-rank parts `(count, byte displacement, type)` of a buffer, packed one
/// after another: the bytes and their byte layout.
pub(super) unsafe fn pack_w(buf: *const c_void, parts: &[WPart]) -> Res<Packed> {
    let (mut bytes, mut layout) = (Vec::new(), Vec::with_capacity(parts.len()));
    for &(count, disp, t) in parts {
        let v =
            view(&datatype::layout(t)?, (buf as *const u8).wrapping_offset(disp as isize).cast(), count, Dir::Read)?;
        layout.push((bytes.len(), v.len()));
        bytes.extend_from_slice(v.bytes());
    }
    Ok((bytes, layout))
}

/// `(count, byte displacement, type)` per rank from Alltoallw's C arrays.
pub(super) unsafe fn w_parts(n: usize, counts: Ints, displs: Ints, types: *const MPI_Datatype) -> Res<Vec<WPart>> {
    if n > 0 && (counts.is_null() || displs.is_null() || types.is_null()) {
        return Err(err(MPI_ERR_ARG, "NULL counts, displacements or types"));
    }
    Ok((0..n).map(|r| (counts.at(r), displs.at(r), *types.add(r))).collect())
}

/// Alltoallw's C arrays: counts, displacements (in bytes) and types, per rank.
pub(super) type WArrays = (Ints, Ints, *const MPI_Datatype);

/// Alltoallw as a schedule: each side packed into one buffer, part after part, and the
/// received parts unpacked into their places when it ends.
unsafe fn alltoallw(
    (sendbuf, send): (*const c_void, WArrays),
    (recvbuf, (counts, displs, types)): (*mut c_void, WArrays),
    c: &Communicator,
) -> Res<Started> {
    let n = c.peers();
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let recv_parts = w_parts(n, counts, displs, types)?;
    let (send, send_layout) = if in_place(sendbuf) {
        pack_w(recvbuf, &recv_parts)?
    } else {
        pack_w(sendbuf, &w_parts(n, send.0, send.1, send.2)?)?
    };
    let mut landing = WLanding::new(recvbuf, &recv_parts)?;
    let (total, recv_layout) = (landing.bytes.len(), landing.layout.clone());
    let coll =
        c.ialltoallv_raw((send.as_ptr(), send.len(), &send_layout), (landing.bytes.as_mut_ptr(), total, &recv_layout))?;
    Ok((coll, Some(landing.at_completion(send))))
}

/// Where Alltoallw-style parts land: one buffer, part after part, unpacked into each part's
/// place (its own datatype) when the collective ends. Made at the call, so that a bad part is
/// an error of the call.
pub(super) struct WLanding {
    pub bytes: Vec<u8>,
    pub layout: Vec<(usize, usize)>,
    places: Vec<View>,
    /// Parts no message fills (a neighbour that is MPI_PROC_NULL): left as they are.
    pub unfilled: Vec<bool>,
}

impl WLanding {
    pub(super) unsafe fn new(recvbuf: *mut c_void, parts: &[WPart]) -> Res<WLanding> {
        let (mut places, mut layout, mut total) = (Vec::with_capacity(parts.len()), Vec::new(), 0);
        for &(count, disp, t) in parts {
            let dst = (recvbuf as *mut u8).wrapping_offset(disp as isize);
            let v = view(&datatype::layout(t)?, dst.cast(), count, Dir::Write)?;
            layout.push((total, v.len()));
            total += v.len();
            places.push(v);
        }
        Ok(WLanding { bytes: vec![0u8; total], layout, places, unfilled: vec![false; parts.len()] })
    }

    /// What the end of the collective does: unpack every part, and let go of `send`.
    pub(super) fn at_completion(self, send: Vec<u8>) -> Box<dyn FnOnce()> {
        Box::new(move || {
            drop(send);
            let WLanding { bytes, layout, places, unfilled } = self;
            for ((mut v, &(at, len)), _) in places.into_iter().zip(&layout).zip(&unfilled).filter(|(_, &u)| !u) {
                v.bytes_mut().copy_from_slice(&bytes[at..at + len]);
                // SAFETY: the collective has ended; MPI keeps the user's buffer valid until then.
                unsafe { v.finish(len) };
            }
        })
    }
}

collective!([PMPI_Alltoallw, PMPI_Ialltoallw, PMPI_Alltoallw_c, PMPI_Ialltoallw_c, PMPI_Alltoallw_init, PMPI_Alltoallw_init_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype
), |c| {
    let send = (sendbuf, (Count::ints(sendcounts), Disp::ints(sdispls), sendtypes));
    alltoallw(send, (recvbuf, (Count::ints(recvcounts), Disp::ints(rdispls), recvtypes)), c)
});

//! Neighbourhood collectives (MPI 4.0 section 8.6): MPI_Neighbor_allgather(v) and
//! MPI_Neighbor_alltoall(v/w), blocking, nonblocking and persistent, with their `_c` twins, on
//! the process topology of the communicator: a Cartesian grid's neighbours are, per dimension,
//! the one in the negative direction then the one in the positive (MPI_PROC_NULL off a
//! non-periodic edge: no message), a graph's are its edges both ways, a distributed graph's its
//! sources and destinations. Each is one exchange round (`billboard`'s `ineighbor_raw`).

use super::moves::{finish_parted, pack_w, w_parts, WArrays, WLanding};
use super::*;
use crate::topo::Topology;

/// Each neighbour of a list, in MPI's order, as a rank of the communicator (`None`: none).
type Neighbours = Vec<Option<usize>>;

/// The sources and destinations of `comm`'s topology, for this rank of `c`.
pub(super) fn neighbours(comm: MPI_Comm, c: &Communicator) -> Res<(Neighbours, Neighbours)> {
    let rank = c.rank();
    let rank_of = |r: &c_int| usize::try_from(*r).ok();
    state::with(|m| match m.topos.get(comm) {
        Some(Topology::Cart(cart)) => {
            let list: Neighbours = (0..cart.dims.len())
                .flat_map(|d| {
                    let (low, high) = cart.shift(rank, d, 1);
                    [rank_of(&low), rank_of(&high)]
                })
                .collect();
            Ok((list.clone(), list))
        }
        Some(Topology::Graph(g)) => {
            let list: Neighbours = g.neighbors(rank).iter().map(rank_of).collect();
            Ok((list.clone(), list))
        }
        Some(Topology::DistGraph(g)) => {
            Ok((g.sources.iter().map(rank_of).collect(), g.destinations.iter().map(rank_of).collect()))
        }
        None => Err(err(
            MPI_ERR_TOPOLOGY,
            format!(
                "communicator {} has no process topology (neighbourhood collectives need MPI_Cart_create, \
                 MPI_Graph_create or MPI_Dist_graph_create)",
                crate::error::handle_name(comm)
            ),
        )),
    })
    .unwrap_or_else(|| Err(err(MPI_ERR_OTHER, "MPI is not running")))
}

/// Pairs each neighbour with its part.
fn pair(ranks: &[Option<usize>], parts: &[(usize, usize)]) -> Vec<(Option<usize>, (usize, usize))> {
    ranks.iter().copied().zip(parts.iter().copied()).collect()
}

/// Allgather(v) to the neighbours: the send buffer goes to every destination; part k of the
/// receive buffer (`recv_shape` of the number of sources) comes from source k.
unsafe fn allgather(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    (recvbuf, recv_shape, recvtype): (*mut c_void, impl FnOnce(usize) -> Res<Shape>, MPI_Datatype),
    comm: MPI_Comm,
    c: &Communicator,
) -> Res<Started> {
    not_in_place(sendbuf, "sendbuf")?;
    not_in_place(recvbuf, "recvbuf")?;
    let (sources, destinations) = neighbours(comm, c)?;
    let send = view(&datatype::layout(sendtype)?, sendbuf, sendcount, Dir::Read)?;
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, recv_shape(sources.len())?.parts(), Dir::Write)?;
    let sends: Vec<_> = destinations.iter().map(|&d| (d, (0, send.len()))).collect();
    let coll = c.ineighbor_raw((recv.ptr(), &pair(&sources, recv.parts())), (send.ptr(), &sends))?;
    Ok((coll, Some(Box::new(move || finish_parted(recv, Some(send))))))
}

/// Alltoall(v) with the neighbours: part k of each buffer goes to destination k, comes from
/// source k.
unsafe fn alltoall(
    (sendbuf, send_shape, sendtype): (*const c_void, impl FnOnce(usize) -> Res<Shape>, MPI_Datatype),
    (recvbuf, recv_shape, recvtype): (*mut c_void, impl FnOnce(usize) -> Res<Shape>, MPI_Datatype),
    comm: MPI_Comm,
    c: &Communicator,
) -> Res<Started> {
    not_in_place(sendbuf, "sendbuf")?;
    not_in_place(recvbuf, "recvbuf")?;
    let (sources, destinations) = neighbours(comm, c)?;
    let send = parted(&datatype::layout(sendtype)?, sendbuf, send_shape(destinations.len())?.parts(), Dir::Read)?;
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, recv_shape(sources.len())?.parts(), Dir::Write)?;
    let coll =
        c.ineighbor_raw((recv.ptr(), &pair(&sources, recv.parts())), (send.ptr(), &pair(&destinations, send.parts())))?;
    Ok((
        coll,
        Some(Box::new(move || {
            drop(send);
            finish_parted(recv, None)
        })),
    ))
}

/// Alltoallw with the neighbours: parts with their own counts, byte displacements and types.
unsafe fn alltoallw(
    (sendbuf, send): (*const c_void, WArrays),
    (recvbuf, (counts, displs, types)): (*mut c_void, WArrays),
    comm: MPI_Comm,
    c: &Communicator,
) -> Res<Started> {
    not_in_place(sendbuf, "sendbuf")?;
    not_in_place(recvbuf, "recvbuf")?;
    let (sources, destinations) = neighbours(comm, c)?;
    let (packed, send_layout) = pack_w(sendbuf, &w_parts(destinations.len(), send.0, send.1, send.2)?)?;
    let mut landing = WLanding::new(recvbuf, &w_parts(sources.len(), counts, displs, types)?)?;
    landing.unfilled = sources.iter().map(Option::is_none).collect();
    let recv_parts = pair(&sources, &landing.layout);
    let coll = c.ineighbor_raw(
        (landing.bytes.as_mut_ptr(), &recv_parts),
        (packed.as_ptr(), &pair(&destinations, &send_layout)),
    )?;
    Ok((coll, Some(landing.at_completion(packed))))
}

collective!([PMPI_Neighbor_allgather, PMPI_Ineighbor_allgather, PMPI_Neighbor_allgather_c, PMPI_Ineighbor_allgather_c, PMPI_Neighbor_allgather_init, PMPI_Neighbor_allgather_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c, comm| {
    let recv_shape = |n| Ok(Shape::Uniform(n, recvcount.into()));
    allgather((sendbuf, sendcount.into(), sendtype), (recvbuf, recv_shape, recvtype), comm, c)
});

collective!([PMPI_Neighbor_allgatherv, PMPI_Ineighbor_allgatherv, PMPI_Neighbor_allgatherv_c, PMPI_Ineighbor_allgatherv_c, PMPI_Neighbor_allgatherv_init, PMPI_Neighbor_allgatherv_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype
), |c, comm| {
    let recv_shape = |n| Shape::varying(n, recvcounts, displs);
    allgather((sendbuf, sendcount.into(), sendtype), (recvbuf, recv_shape, recvtype), comm, c)
});

collective!([PMPI_Neighbor_alltoall, PMPI_Ineighbor_alltoall, PMPI_Neighbor_alltoall_c, PMPI_Ineighbor_alltoall_c, PMPI_Neighbor_alltoall_init, PMPI_Neighbor_alltoall_init_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c, comm| {
    let send_shape = |n| Ok(Shape::Uniform(n, sendcount.into()));
    let recv_shape = |n| Ok(Shape::Uniform(n, recvcount.into()));
    alltoall((sendbuf, send_shape, sendtype), (recvbuf, recv_shape, recvtype), comm, c)
});

collective!([PMPI_Neighbor_alltoallv, PMPI_Ineighbor_alltoallv, PMPI_Neighbor_alltoallv_c, PMPI_Ineighbor_alltoallv_c, PMPI_Neighbor_alltoallv_init, PMPI_Neighbor_alltoallv_init_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype
), |c, comm| {
    let send_shape = |n| Shape::varying(n, sendcounts, sdispls);
    let recv_shape = |n| Shape::varying(n, recvcounts, rdispls);
    alltoall((sendbuf, send_shape, sendtype), (recvbuf, recv_shape, recvtype), comm, c)
});

collective!([PMPI_Neighbor_alltoallw, PMPI_Ineighbor_alltoallw, PMPI_Neighbor_alltoallw_c, PMPI_Ineighbor_alltoallw_c, PMPI_Neighbor_alltoallw_init, PMPI_Neighbor_alltoallw_init_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype
), |c, comm| {
    let send = (sendbuf, (Count::ints(sendcounts), MPI_Aint::ints(sdispls), sendtypes));
    alltoallw(send, (recvbuf, (Count::ints(recvcounts), MPI_Aint::ints(rdispls), recvtypes)), comm, c)
});

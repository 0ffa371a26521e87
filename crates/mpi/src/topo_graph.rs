//! Graph topologies (MPI_Graph_*, MPI 3.1 section 7.5.3) and distributed graph topologies
//! (MPI_Dist_graph_*, 7.5.4). As for Cartesian grids, `reorder` is not used: a node's rank is
//! its rank in the parent. A graph communicator holds the first `nnodes` ranks of its parent;
//! a distributed graph communicator holds them all. MPI_Dist_graph_create gathers every rank's
//! edges on every rank, and each keeps those that start or end at it, in the order of the
//! contributing ranks and of their arrays.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::state::{self, Mpi};
use crate::topo::{ints, split_with, Topology};

/// A graph: node i's neighbours are `edges[index[i-1]..index[i]]` (`index[-1]` is 0).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Graph {
    pub index: Vec<c_int>,
    pub edges: Vec<c_int>,
}

impl Graph {
    pub(crate) fn neighbors(&self, node: usize) -> &[c_int] {
        let start = if node == 0 { 0 } else { self.index[node - 1] as usize };
        &self.edges[start..self.index[node] as usize]
    }
}

/// This process's edges in a distributed graph, with their weights (all 1 when unweighted).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DistGraph {
    pub sources: Vec<c_int>,
    pub source_weights: Vec<c_int>,
    pub destinations: Vec<c_int>,
    pub dest_weights: Vec<c_int>,
    pub weighted: bool,
}

/// Whether a weights argument is MPI_UNWEIGHTED (an address our library exports).
fn unweighted(weights: *const c_int) -> bool {
    std::ptr::eq(weights, crate::exports::MPIR_C_MPI_UNWEIGHTED.as_ptr())
}

/// `n` weights, or ones when unweighted (MPI_WEIGHTS_EMPTY and NULL are fine when `n` is 0).
unsafe fn weights(n: c_int, w: *const c_int, what: &str) -> Res<Vec<c_int>> {
    if unweighted(w) || n == 0 {
        return Ok(vec![1; n.max(0) as usize]);
    }
    let w = ints(n, w, what)?;
    if let Some(bad) = w.iter().find(|&&x| x < 0) {
        return Err(err(MPI_ERR_ARG, format!("negative {what} entry {bad}")));
    }
    Ok(w.to_vec())
}

fn check_ranks(list: &[c_int], n: usize, what: &str) -> Res {
    match list.iter().find(|&&r| r < 0 || r as usize >= n) {
        Some(bad) => Err(err(MPI_ERR_RANK, format!("{what} entry {bad} is not a rank of the {n} nodes"))),
        None => Ok(()),
    }
}

fn size_and_rank(comm: MPI_Comm) -> Res<(usize, usize)> {
    state::with(|m| m.comm(comm).map(|c| (c.comm.size(), c.comm.rank()))).flatten().ok_or_else(|| bad_comm(comm))
}

/// Checks a graph description: `nnodes` nodes within a communicator of `size`, `index`
/// non-decreasing, edges naming nodes.
fn graph(size: usize, index: &[c_int], edges: &[c_int]) -> Res<Graph> {
    if index.len() > size {
        return Err(err(
            MPI_ERR_ARG,
            format!("graph of {} nodes is larger than the communicator ({size})", index.len()),
        ));
    }
    let mut last = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < last {
            return Err(err(MPI_ERR_ARG, format!("index[{i}] = {x} is less than the entry before ({last})")));
        }
        last = x;
    }
    check_ranks(edges, index.len(), "edges")?;
    Ok(Graph { index: index.to_vec(), edges: edges.to_vec() })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_create(
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Graph_create", comm, || {
        let newcomm = out(newcomm, "comm_graph")?;
        let (size, rank) = size_and_rank(comm)?;
        if nnodes < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative number of nodes {nnodes}")));
        }
        let index = ints(nnodes, index, "index")?;
        let nedges = index.last().copied().unwrap_or(0);
        let g = graph(size, index, ints(nedges, edges, "edges")?)?;
        let color = (rank < nnodes as usize).then_some(0);
        *newcomm = split_with(comm, color, Topology::Graph(g))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_map(
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Graph_map", comm, |m| {
        let c = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        let (size, rank) = (c.comm.size(), c.comm.rank());
        if nnodes < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative number of nodes {nnodes}")));
        }
        let index = ints(nnodes, index, "index")?;
        graph(size, index, ints(index.last().copied().unwrap_or(0), edges, "edges")?)?;
        *out(newrank, "newrank")? = if rank < nnodes as usize { rank as c_int } else { MPI_UNDEFINED };
        Ok(())
    })
}

impl Mpi {
    fn graph(&self, comm: MPI_Comm) -> Res<&Graph> {
        self.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        match self.topos.get(comm) {
            Some(Topology::Graph(g)) => Ok(g),
            _ => Err(err(MPI_ERR_TOPOLOGY, format!("communicator {comm:#x} has no graph topology"))),
        }
    }

    fn dist_graph(&self, comm: MPI_Comm) -> Res<&DistGraph> {
        self.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        match self.topos.get(comm) {
            Some(Topology::DistGraph(g)) => Ok(g),
            _ => Err(err(MPI_ERR_TOPOLOGY, format!("communicator {comm:#x} has no distributed graph topology"))),
        }
    }
}

/// Copies the first `max` of `src` to a C array.
unsafe fn copy_out(src: &[c_int], max: c_int, dst: *mut c_int, what: &str) -> Res {
    let n = src.len().min(max.max(0) as usize);
    if n > 0 && dst.is_null() {
        return Err(err(MPI_ERR_ARG, format!("null {what} array")));
    }
    // SAFETY: the caller's array holds at least `max` >= n ints (checked non-null).
    std::ptr::copy_nonoverlapping(src.as_ptr(), dst, n);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    call("MPI_Graphdims_get", comm, |m| {
        let g = m.graph(comm)?;
        let (n, e) = (g.index.len() as c_int, g.edges.len() as c_int);
        *out(nnodes, "nnodes")? = n;
        *out(nedges, "nedges")? = e;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_get(
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    call("MPI_Graph_get", comm, |m| {
        let g = m.graph(comm)?;
        copy_out(&g.index, maxindex, index, "index")?;
        copy_out(&g.edges, maxedges, edges, "edges")
    })
}

fn graph_node(g: &Graph, rank: c_int) -> Res<usize> {
    if rank < 0 || rank as usize >= g.index.len() {
        return Err(err(MPI_ERR_RANK, format!("rank {rank} is not a node of the {}-node graph", g.index.len())));
    }
    Ok(rank as usize)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> c_int {
    call("MPI_Graph_neighbors_count", comm, |m| {
        let g = m.graph(comm)?;
        let n = g.neighbors(graph_node(g, rank)?).len() as c_int;
        *out(nneighbors, "nneighbors")? = n;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors(
    comm: MPI_Comm,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    call("MPI_Graph_neighbors", comm, |m| {
        let g = m.graph(comm)?;
        copy_out(g.neighbors(graph_node(g, rank)?), maxneighbors, neighbors, "neighbors")
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create_adjacent(
    comm: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: MPI_Info,
    _reorder: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Dist_graph_create_adjacent", comm, || {
        let newcomm = out(newcomm, "comm_dist_graph")?;
        let (size, _) = size_and_rank(comm)?;
        if indegree < 0 || outdegree < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative degree (indegree {indegree}, outdegree {outdegree})")));
        }
        let (s, d) = (ints(indegree, sources, "sources")?, ints(outdegree, destinations, "destinations")?);
        check_ranks(s, size, "sources")?;
        check_ranks(d, size, "destinations")?;
        let g = DistGraph {
            sources: s.to_vec(),
            source_weights: weights(indegree, sourceweights, "sourceweights")?,
            destinations: d.to_vec(),
            dest_weights: weights(outdegree, destweights, "destweights")?,
            weighted: !unweighted(sourceweights) && !unweighted(destweights),
        };
        *newcomm = split_with(comm, Some(0), Topology::DistGraph(g))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create(
    comm: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_in: *const c_int,
    _info: MPI_Info,
    _reorder: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Dist_graph_create", comm, || {
        let newcomm = out(newcomm, "comm_dist_graph")?;
        let (size, rank) = size_and_rank(comm)?;
        if n < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative number of source nodes {n}")));
        }
        let (s, deg) = (ints(n, sources, "sources")?, ints(n, degrees, "degrees")?);
        check_ranks(s, size, "sources")?;
        if let Some(bad) = deg.iter().find(|&&x| x < 0) {
            return Err(err(MPI_ERR_ARG, format!("negative degree {bad}")));
        }
        let total: c_int = deg.iter().sum();
        let d = ints(total, destinations, "destinations")?;
        check_ranks(d, size, "destinations")?;
        let w = weights(total, weights_in, "weights")?;
        // This rank's edges as (source, destination, weight) triples, then everyone's.
        let mut mine = Vec::with_capacity(3 * total as usize);
        let mut next = 0;
        for (&src, &k) in s.iter().zip(deg) {
            for j in next..next + k as usize {
                mine.extend_from_slice(&[src, d[j], w[j]]);
            }
            next += k as usize;
        }
        let (c, _) = crate::comm_create::take(comm)?;
        let mut counts = vec![0u8; 4 * size];
        let layout: Vec<(usize, usize)> = (0..size).map(|r| (4 * r, 4)).collect();
        c.allgatherv_bytes(&(mine.len() as u32).to_ne_bytes(), &mut counts, &layout)?;
        let counts: Vec<usize> =
            counts.chunks_exact(4).map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")) as usize).collect();
        let mut at = 0;
        let layout: Vec<(usize, usize)> = counts
            .iter()
            .map(|&k| {
                at += 4 * k;
                (at - 4 * k, 4 * k)
            })
            .collect();
        let mut all = vec![0u8; at];
        let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_ne_bytes()).collect();
        c.allgatherv_bytes(&bytes, &mut all, &layout)?;
        let me = rank as c_int;
        let mut g = DistGraph {
            sources: vec![],
            source_weights: vec![],
            destinations: vec![],
            dest_weights: vec![],
            weighted: !unweighted(weights_in),
        };
        for e in all.chunks_exact(12) {
            let x = |i: usize| c_int::from_ne_bytes(e[4 * i..4 * i + 4].try_into().expect("4 bytes"));
            let (src, dst, wt) = (x(0), x(1), x(2));
            if src == me {
                g.destinations.push(dst);
                g.dest_weights.push(wt);
            }
            if dst == me {
                g.sources.push(src);
                g.source_weights.push(wt);
            }
        }
        *newcomm = split_with(comm, Some(0), Topology::DistGraph(g))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors_count(
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors_count", comm, |m| {
        let g = m.dist_graph(comm)?;
        let (i, o, w) = (g.sources.len() as c_int, g.destinations.len() as c_int, g.weighted as c_int);
        *out(indegree, "indegree")? = i;
        *out(outdegree, "outdegree")? = o;
        *out(weighted, "weighted")? = w;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors", comm, |m| {
        let g = m.dist_graph(comm)?;
        copy_out(&g.sources, maxindegree, sources, "sources")?;
        copy_out(&g.destinations, maxoutdegree, destinations, "destinations")?;
        if g.weighted {
            if !unweighted(sourceweights) {
                copy_out(&g.source_weights, maxindegree, sourceweights, "sourceweights")?;
            }
            if !unweighted(destweights) {
                copy_out(&g.dest_weights, maxoutdegree, destweights, "destweights")?;
            }
        }
        Ok(())
    })
}

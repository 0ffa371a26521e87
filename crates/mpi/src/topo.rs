//! Process topologies: Cartesian grids (MPI_Cart_*, MPI_Dims_create, MPI_Topo_test). A
//! Cartesian communicator is an ordinary communicator plus a [`Cart`] kept here by handle;
//! ranks are laid out row-major (the last dimension varies fastest) and `reorder` is not
//! used, so a grid rank is the parent rank. Graph and distributed graph topologies are in
//! `topo_graph`; every kind is kept here by communicator handle as a [`Topology`].

use std::collections::HashMap;
use std::ffi::c_int;

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::state::{self, Mpi};

/// A Cartesian grid: extent and periodicity of each dimension.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cart {
    pub dims: Vec<c_int>,
    pub periods: Vec<bool>,
}

/// The topology a communicator was made with.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Topology {
    Cart(Cart),
    Graph(crate::topo_graph::Graph),
    DistGraph(crate::topo_graph::DistGraph),
}

/// Topologies of communicators, by communicator handle.
#[derive(Default)]
pub(crate) struct Topos {
    map: HashMap<MPI_Comm, Topology>,
}

impl Topos {
    pub fn set(&mut self, comm: MPI_Comm, topology: Topology) {
        self.map.insert(comm, topology);
    }

    pub fn get(&self, comm: MPI_Comm) -> Option<&Topology> {
        self.map.get(&comm)
    }

    /// Forgets the topology of a communicator being freed.
    pub fn remove(&mut self, comm: MPI_Comm) {
        self.map.remove(&comm);
    }
}

impl Cart {
    pub fn nnodes(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// Coordinates of grid rank `rank` (row-major).
    pub fn coords(&self, rank: usize) -> Vec<c_int> {
        let mut rest = rank;
        let mut c = vec![0; self.dims.len()];
        for i in (0..self.dims.len()).rev() {
            c[i] = (rest % self.dims[i] as usize) as c_int;
            rest /= self.dims[i] as usize;
        }
        c
    }

    /// Grid rank at `coords`, wrapping periodic dimensions; `None` outside a non-periodic one.
    pub fn rank(&self, coords: &[c_int]) -> Option<usize> {
        let mut r = 0usize;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p { c.rem_euclid(d) } else { c };
            if !(0..d).contains(&c) {
                return None;
            }
            r = r * d as usize + c as usize;
        }
        Some(r)
    }

    /// (source, dest) of a shift by `disp` along `dim` from `rank` (MPI_PROC_NULL off the edge).
    pub fn shift(&self, rank: usize, dim: usize, disp: c_int) -> (c_int, c_int) {
        let at = |delta: c_int| {
            let mut c = self.coords(rank);
            c[dim] += delta;
            self.rank(&c).map_or(MPI_PROC_NULL, |r| r as c_int)
        };
        (at(-disp), at(disp))
    }
}

/// Fills the zero entries of `dims` so that the product is `nnodes`, as balanced as possible
/// and non-increasing (MPI_Dims_create), choosing as MPICH 4.0 does (see [`balanced`]).
pub(crate) fn dims_create(nnodes: c_int, dims: &mut [c_int]) -> Res {
    if nnodes < 0 {
        return Err(err(MPI_ERR_ARG, format!("negative number of nodes {nnodes}")));
    }
    if let Some(bad) = dims.iter().find(|&&d| d < 0) {
        return Err(err(MPI_ERR_DIMS, format!("negative dimension {bad}")));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    if nnodes == 0 || nnodes as i64 % fixed != 0 {
        return Err(err(
            MPI_ERR_DIMS,
            format!("{nnodes} nodes do not divide into the fixed dimensions (product {fixed})"),
        ));
    }
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    let rest = nnodes / fixed as c_int;
    if free.is_empty() {
        return if rest == 1 {
            Ok(())
        } else {
            Err(err(MPI_ERR_DIMS, format!("dimensions multiply to {fixed}, not {nnodes}")))
        };
    }
    for (&i, d) in free.iter().zip(balanced(rest, free.len())) {
        dims[i] = d;
    }
    Ok(())
}

/// The `k` extents, non-increasing, whose product is `n` and whose largest minus smallest is
/// least; among those, the least sum, then the one largest first in lexicographic order. This is
/// what MPICH 4.0.2 gives (checked on every case up to 400 nodes and 1 to 5 dimensions, with and
/// without fixed dimensions, and 600 random ones up to 200000 nodes): 72 in two is 9 x 8 where
/// handing out prime factors largest first to the smallest extent gives 12 x 6.
fn balanced(n: c_int, k: usize) -> Vec<c_int> {
    // Squares in i64: a divisor's square may not fit in an int.
    let square = |d: c_int| d as i64 * d as i64;
    let mut divisors: Vec<c_int> = (1..).take_while(|&d| square(d) <= n as i64).filter(|d| n % d == 0).collect();
    let above: Vec<c_int> = divisors.iter().rev().map(|d| n / d).filter(|&d| square(d) != n as i64).collect();
    divisors.extend(above);
    let mut best = None;
    let mut tuple = Vec::with_capacity(k);
    search(&divisors, n, k, &mut tuple, &mut best);
    best.expect("n, 1, 1, ... always qualifies").2
}

type Choice = (c_int, i64, Vec<c_int>);

/// Tries every non-increasing completion of `tuple` by `k` divisors multiplying to `n`, each at
/// most the last one chosen; keeps the best in `best` as (spread, sum, extents).
fn search(divisors: &[c_int], n: c_int, k: usize, tuple: &mut Vec<c_int>, best: &mut Option<Choice>) {
    let cap = tuple.last().copied().unwrap_or(n);
    if k == 1 {
        if n > cap {
            return;
        }
        tuple.push(n);
        let spread = tuple[0] - n;
        let sum = tuple.iter().map(|&d| d as i64).sum();
        let better = match best {
            None => true,
            Some((s, t, e)) => (spread, sum).cmp(&(*s, *t)).then_with(|| e.as_slice().cmp(tuple)).is_lt(),
        };
        if better {
            *best = Some((spread, sum, tuple.clone()));
        }
        tuple.pop();
        return;
    }
    for &d in divisors.iter().rev().filter(|&&d| d <= cap && n % d == 0) {
        // The rest are at most d, so d^k must reach n; and a spread already beaten need not go on.
        if (d as f64).powi(k as i32) < n as f64 - 0.5 {
            break;
        }
        if let (Some(&first), Some((s, ..))) = (tuple.first(), best.as_ref()) {
            if first - d > *s {
                break;
            }
        }
        tuple.push(d);
        search(divisors, n / d, k - 1, tuple, best);
        tuple.pop();
    }
}

/// Reads `n` ints from C.
pub(crate) unsafe fn ints<'a>(n: c_int, p: *const c_int, what: &str) -> Res<&'a [c_int]> {
    if n > 0 && p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("null {what} array")));
    }
    // SAFETY: an array of n ints (MPI's contract), checked non-null when n > 0.
    Ok(if n <= 0 { &[] } else { std::slice::from_raw_parts(p, n as usize) })
}

impl Mpi {
    /// The grid of Cartesian communicator `comm`, and this process's rank in it.
    fn cart(&self, comm: MPI_Comm) -> Res<(&Cart, usize)> {
        let c = self.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        match self.topos.get(comm) {
            Some(Topology::Cart(cart)) => Ok((cart, c.comm.rank())),
            _ => Err(err(MPI_ERR_TOPOLOGY, format!("communicator {comm:#x} has no Cartesian topology"))),
        }
    }
}

/// Splits `comm` by `color` (None: MPI_COMM_NULL here) keeping rank order, and gives the new
/// communicator the topology and the parent's error handler.
pub(crate) fn split_with(comm: MPI_Comm, color: Option<u32>, topology: Topology) -> Res<MPI_Comm> {
    let (c, eh) = crate::comm_create::take(comm)?;
    let new = crate::comm_create::store_child(eh, c.split(color, c.rank() as c_int)?);
    if new != MPI_COMM_NULL {
        state::with(|m| m.topos.set(new, topology));
    }
    Ok(new)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call("MPI_Dims_create", MPI_COMM_WORLD, |_| {
        if ndims < 0 {
            return Err(err(MPI_ERR_DIMS, format!("negative number of dimensions {ndims}")));
        }
        if ndims > 0 && dims.is_null() {
            return Err(err(MPI_ERR_ARG, "null dims array"));
        }
        // SAFETY: the caller's array of ndims ints, checked non-null.
        let d = if ndims == 0 { &mut [][..] } else { std::slice::from_raw_parts_mut(dims, ndims as usize) };
        dims_create(nnodes, d)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Cart_create", comm_old, || {
        let comm_cart = out(comm_cart, "comm_cart")?;
        let size =
            state::with(|m| m.comm(comm_old).map(|c| c.comm.size())).flatten().ok_or_else(|| bad_comm(comm_old))?;
        if ndims < 0 {
            return Err(err(MPI_ERR_DIMS, format!("negative number of dimensions {ndims}")));
        }
        let d = ints(ndims, dims, "dims")?;
        if let Some(bad) = d.iter().find(|&&x| x <= 0) {
            return Err(err(MPI_ERR_DIMS, format!("dimension extent {bad} is not positive")));
        }
        let cart =
            Cart { dims: d.to_vec(), periods: ints(ndims, periods, "periods")?.iter().map(|&p| p != 0).collect() };
        if cart.nnodes() > size {
            return Err(err(
                MPI_ERR_DIMS,
                format!("grid of {} nodes is larger than the communicator ({size})", cart.nnodes()),
            ));
        }
        let rank =
            state::with(|m| m.comm(comm_old).map(|c| c.comm.rank())).flatten().ok_or_else(|| bad_comm(comm_old))?;
        let color = (rank < cart.nnodes()).then_some(0);
        *comm_cart = split_with(comm_old, color, Topology::Cart(cart))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Cart_sub", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (cart, rank) = state::with(|m| m.cart(comm).map(|(c, r)| (c.clone(), r))).expect("MPI is running")?;
        let keep: Vec<bool> =
            ints(cart.dims.len() as c_int, remain_dims, "remain_dims")?.iter().map(|&k| k != 0).collect();
        let coords = cart.coords(rank);
        // The color is the position along the dropped dimensions; the key (parent rank) keeps
        // the row-major order of the kept ones.
        let mut color = 0u32;
        for i in (0..cart.dims.len()).filter(|&i| !keep[i]) {
            color = color * cart.dims[i] as u32 + coords[i] as u32;
        }
        let sub = Cart {
            dims: (0..keep.len()).filter(|&i| keep[i]).map(|i| cart.dims[i]).collect(),
            periods: (0..keep.len()).filter(|&i| keep[i]).map(|i| cart.periods[i]).collect(),
        };
        *newcomm = split_with(comm, Some(color), Topology::Cart(sub))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", comm, |m| {
        m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        *out(status, "status")? = match m.topos.get(comm) {
            Some(Topology::Cart(_)) => MPI_CART,
            Some(Topology::Graph(_)) => MPI_GRAPH,
            Some(Topology::DistGraph(_)) => MPI_DIST_GRAPH,
            None => MPI_UNDEFINED,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", comm, |m| {
        *out(ndims, "ndims")? = m.cart(comm)?.0.dims.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_get(
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_get", comm, |m| {
        let (cart, rank) = m.cart(comm)?;
        let n = cart.dims.len().min(maxdims.max(0) as usize);
        if n > 0 && (dims.is_null() || periods.is_null() || coords.is_null()) {
            return Err(err(MPI_ERR_ARG, "null dims, periods or coords array"));
        }
        let c = cart.coords(rank);
        for (i, ((&d, &p), c)) in cart.dims.iter().zip(&cart.periods).zip(c).take(n).enumerate() {
            // SAFETY: the caller's arrays hold maxdims >= n ints each (checked non-null).
            (*dims.add(i), *periods.add(i), *coords.add(i)) = (d, p as c_int, c);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    call("MPI_Cart_coords", comm, |m| {
        let (cart, _) = m.cart(comm)?;
        if rank < 0 || rank as usize >= cart.nnodes() {
            return Err(err(MPI_ERR_RANK, format!("rank {rank} is not in a grid of {} nodes", cart.nnodes())));
        }
        if maxdims < cart.dims.len() as c_int {
            return Err(err(MPI_ERR_ARG, format!("maxdims {maxdims} is less than the {} dimensions", cart.dims.len())));
        }
        if coords.is_null() && !cart.dims.is_empty() {
            return Err(err(MPI_ERR_ARG, "null coords array"));
        }
        for (i, c) in cart.coords(rank as usize).into_iter().enumerate() {
            // SAFETY: the caller's array holds maxdims >= ndims ints (checked non-null).
            *coords.add(i) = c;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> c_int {
    call("MPI_Cart_rank", comm, |m| {
        let (cart, _) = m.cart(comm)?;
        let c = ints(cart.dims.len() as c_int, coords, "coords")?;
        let r = cart
            .rank(c)
            .ok_or_else(|| err(MPI_ERR_ARG, format!("coordinates {c:?} are outside the grid {:?}", cart.dims)))?;
        *out(rank, "rank")? = r as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_shift(
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    call("MPI_Cart_shift", comm, |m| {
        let (cart, rank) = m.cart(comm)?;
        if direction < 0 || direction as usize >= cart.dims.len() {
            return Err(err(MPI_ERR_ARG, format!("direction {direction} of a {}-dimensional grid", cart.dims.len())));
        }
        (*out(source, "source")?, *out(dest, "dest")?) = cart.shift(rank, direction as usize, disp);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_map(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    _periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Cart_map", comm, |m| {
        let rank = m.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm.rank();
        let nnodes: usize = ints(ndims, dims, "dims")?.iter().map(|&d| d.max(0) as usize).product();
        *out(newrank, "newrank")? = if rank < nnodes { rank as c_int } else { MPI_UNDEFINED };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: c_int, input: &[c_int]) -> Vec<c_int> {
        let mut d = input.to_vec();
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims_create_is_balanced_and_non_increasing() {
        assert_eq!(dims(12, &[0, 0]), [4, 3]);
        assert_eq!(dims(16, &[0, 0]), [4, 4]);
        assert_eq!(dims(7, &[0, 0]), [7, 1]);
        assert_eq!(dims(24, &[0, 0, 0]), [4, 3, 2]);
        assert_eq!(dims(12, &[0, 3, 0]), [2, 3, 2]);
        assert_eq!(dims(6, &[0, 6]), [1, 6]);
        assert_eq!(dims(1, &[0, 0, 0]), [1, 1, 1]);
        assert_eq!(dims(36, &[0, 0]), [6, 6]);
        assert_eq!(dims(8, &[0]), [8]);
        // MPICH 4.0.2's answers where the most balanced is not the greedy one, or ties.
        assert_eq!(dims(72, &[0, 0]), [9, 8]);
        assert_eq!(dims(336, &[0, 0]), [21, 16]);
        assert_eq!(dims(216, &[0, 3, 0]), [9, 3, 8]);
        assert_eq!(dims(144, &[0, 0, 2]), [9, 8, 2]);
        assert_eq!(dims(72, &[0, 0, 0]), [6, 4, 3]);
        assert_eq!(dims(20, &[0, 0, 0, 0]), [5, 2, 2, 1]);
        assert_eq!(dims(360, &[0, 0, 0]), [10, 6, 6]);
        assert_eq!(dims(720720, &[0, 0]), [858, 840]);
        assert_eq!(dims(1000000, &[0; 7]), [10, 10, 10, 8, 5, 5, 5]);
        assert_eq!(dims(362880, &[0; 4]), [28, 27, 24, 20]);
        assert_eq!(dims(c_int::MAX, &[0, 0]), [c_int::MAX, 1]); // a prime near the top of int
        assert_eq!(dims_create(-1, &mut [0, 0]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(dims_create(10, &mut [0, 3]).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(dims_create(6, &mut [2, 2]).unwrap_err().class, MPI_ERR_DIMS);
    }

    #[test]
    fn cart_coordinates_ranks_and_shifts() {
        let c = Cart { dims: vec![3, 2], periods: vec![true, false] };
        assert_eq!(c.coords(5), [2, 1]);
        assert_eq!(c.rank(&[2, 1]), Some(5));
        assert_eq!(c.rank(&[-1, 1]), Some(5)); // periodic wrap
        assert_eq!(c.rank(&[0, 2]), None); // off a non-periodic edge
        assert_eq!(c.shift(0, 0, 1), (4, 2));
        assert_eq!(c.shift(0, 1, 1), (MPI_PROC_NULL, 1));
        assert_eq!(c.shift(1, 1, 1), (0, MPI_PROC_NULL));
        for r in 0..c.nnodes() {
            assert_eq!(c.rank(&c.coords(r)), Some(r));
        }
    }
}

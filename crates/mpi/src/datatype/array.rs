//! The array constructors, `MPI_Type_create_subarray` and `MPI_Type_create_darray` (MPI 3.1
//! sections 4.1.3 and 4.1.4): pure index arithmetic over [`typemap`] shapes. What a process
//! owns of a dimension is a few regular runs of blocks, so a cyclic distribution of any size
//! is O(1) nodes.

use std::sync::Arc;

use super::typemap::{self, Overflow, TypeMap};

/// `n` blocks of `len` indices, the first at `start`, block starts `step` indices apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Blocks {
    pub start: usize,
    pub len: usize,
    pub n: usize,
    pub step: usize,
}

impl Blocks {
    fn one(start: usize, len: usize) -> Blocks {
        Blocks { start, len, n: 1, step: 0 }
    }
}

/// Dimensions from the fastest-varying one: C order stores the last dimension contiguously.
fn fastest_first(n: usize, c_order: bool) -> Vec<usize> {
    if c_order {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    }
}

fn ck<T>(v: Option<T>) -> Result<T, Overflow> {
    v.ok_or(Overflow)
}

/// Builds an array type from the index blocks selected in each dimension of an array of
/// `sizes` elements of `old`: from the fastest dimension out, each dimension places copies of
/// the type built so far, as MPI 3.1 section 4.1.3 defines subarray and darray; the result
/// resized to the whole array (lb 0).
fn array_of(sizes: &[usize], blocks: &[Vec<Blocks>], c_order: bool, old: &Arc<TypeMap>) -> Result<TypeMap, Overflow> {
    let mut t = old.clone();
    let mut stride = old.extent();
    for d in fastest_first(sizes.len(), c_order) {
        let at = |i: usize| ck(i64::try_from(i).ok().and_then(|i| i.checked_mul(stride)));
        let mut parts = Vec::new();
        for b in blocks[d].iter().filter(|b| b.len > 0 && b.n > 0) {
            let block = Arc::new(typemap::repeat(b.len, stride, &t)?);
            let run = if b.n == 1 { block } else { Arc::new(typemap::repeat(b.n, at(b.step)?, &block)?) };
            parts.push((at(b.start)?, run));
        }
        t = Arc::new(typemap::seq(&parts, false)?);
        stride = at(sizes[d])?;
    }
    typemap::resized(&t, 0, stride)
}

/// `MPI_Type_create_subarray`: the block `starts .. starts + subsizes` of an array of `sizes`.
pub(crate) fn subarray(
    sizes: &[usize],
    subsizes: &[usize],
    starts: &[usize],
    c_order: bool,
    old: &Arc<TypeMap>,
) -> Result<TypeMap, Overflow> {
    let blocks: Vec<_> = subsizes.iter().zip(starts).map(|(&n, &s)| vec![Blocks::one(s, n)]).collect();
    array_of(sizes, &blocks, c_order, old)
}

/// How one dimension of a darray is distributed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Distrib {
    /// Blocks of this many elements (MPI_DISTRIBUTE_BLOCK; default ceil(gsize / psize)).
    Block(usize),
    /// Blocks of this many elements dealt round-robin (MPI_DISTRIBUTE_CYCLIC; default 1).
    Cyclic(usize),
    None,
}

/// Index blocks of a dimension of `gsize` owned by process coordinate `coord` of `psize`: for a
/// cyclic distribution the whole blocks as one run, then a last partial block if any.
pub(crate) fn owned(gsize: usize, d: Distrib, psize: usize, coord: usize) -> Vec<Blocks> {
    match d {
        Distrib::None => vec![Blocks::one(0, gsize)],
        Distrib::Block(b) => {
            let start = coord.saturating_mul(b).min(gsize);
            vec![Blocks::one(start, (start.saturating_add(b)).min(gsize) - start)]
        }
        Distrib::Cyclic(k) => {
            let first = coord.saturating_mul(k);
            let step = k.saturating_mul(psize).max(1);
            if first >= gsize {
                return Vec::new();
            }
            let starts = (gsize - first).div_ceil(step);
            let last = first + (starts - 1) * step;
            let tail = gsize - last;
            if tail >= k {
                vec![Blocks { start: first, len: k, n: starts, step }]
            } else {
                let whole = Blocks { start: first, len: k, n: starts - 1, step };
                [whole, Blocks::one(last, tail)].into_iter().filter(|b| b.n > 0).collect()
            }
        }
    }
}

/// `MPI_Type_create_darray` for process `rank` of a process grid `psizes` (row-major, as the
/// standard says, whatever the array order).
pub(crate) fn darray(
    rank: usize,
    gsizes: &[usize],
    distribs: &[Distrib],
    psizes: &[usize],
    c_order: bool,
    old: &Arc<TypeMap>,
) -> Result<TypeMap, Overflow> {
    let mut coords = vec![0; gsizes.len()];
    let mut r = rank;
    for d in (0..gsizes.len()).rev() {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    let blocks: Vec<_> = (0..gsizes.len()).map(|d| owned(gsizes[d], distribs[d], psizes[d], coords[d])).collect();
    array_of(gsizes, &blocks, c_order, old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::MPI_INT;

    fn int() -> Arc<TypeMap> {
        Arc::new(TypeMap::basic(MPI_INT, 4, 4))
    }

    fn blocks(t: &TypeMap) -> Vec<(i64, usize)> {
        t.blocks()
    }

    /// The index ranges of a dimension, listed one by one.
    fn ranges(b: &[Blocks]) -> Vec<(usize, usize)> {
        b.iter().flat_map(|b| (0..b.n).map(move |i| (b.start + i * b.step, b.len))).collect()
    }

    #[test]
    fn subarray_c_and_fortran_orders() {
        let c = subarray(&[4, 6], &[2, 3], &[1, 2], true, &int()).unwrap();
        assert_eq!(blocks(&c), [(32, 12), (56, 12)]);
        assert_eq!((c.lb, c.extent(), c.true_lb, c.true_extent()), (0, 96, 32, 36));
        let f = subarray(&[4, 6], &[2, 3], &[1, 2], false, &int()).unwrap();
        let ints: Vec<i64> = blocks(&f).iter().map(|&(o, _)| o / 4).collect();
        assert_eq!(ints, [9, 13, 17]);
        assert!(blocks(&f).iter().all(|&(_, l)| l == 8));
    }

    #[test]
    fn darray_block_and_cyclic() {
        let b = darray(1, &[8], &[Distrib::Block(4)], &[2], true, &int()).unwrap();
        assert_eq!(blocks(&b), [(16, 16)]);
        assert_eq!((b.lb, b.extent(), b.true_lb, b.true_extent()), (0, 32, 16, 16));
        let c = darray(0, &[8], &[Distrib::Cyclic(1)], &[2], true, &int()).unwrap();
        assert_eq!(blocks(&c), [(0, 4), (8, 4), (16, 4), (24, 4)]);
        assert_eq!(ranges(&owned(10, Distrib::Cyclic(2), 3, 1)), [(2, 2), (8, 2)]);
        assert_eq!(ranges(&owned(11, Distrib::Cyclic(2), 3, 1)), [(2, 2), (8, 2)]);
        assert_eq!(ranges(&owned(9, Distrib::Cyclic(2), 3, 1)), [(2, 2), (8, 1)]);
        assert_eq!(ranges(&owned(2, Distrib::Cyclic(2), 3, 1)), []);
        assert_eq!(ranges(&owned(7, Distrib::Block(3), 3, 2)), [(6, 1)]);
        // 2-D: 4x4 over a 2x2 grid, rank 3 = coords (1, 1): rows 2..4, columns 2..4.
        let g = darray(3, &[4, 4], &[Distrib::Block(2), Distrib::Block(2)], &[2, 2], true, &int()).unwrap();
        assert_eq!(blocks(&g), [(40, 8), (56, 8)]);
    }

    #[test]
    fn a_cyclic_darray_of_any_size_is_a_few_nodes() {
        let n = i32::MAX as usize;
        let c = darray(1, &[n], &[Distrib::Cyclic(1)], &[2], true, &Arc::new(TypeMap::basic(0, 1, 1))).unwrap();
        assert_eq!((c.size, c.extent(), c.true_lb, c.true_ub), (n / 2, n as i64, 1, n as i64 - 1));
        assert_eq!(c.pieces(), n / 2);
        assert!(darray(0, &[n, n, n], &[Distrib::None; 3], &[1; 3], true, &int()).is_err(), "overflow");
    }
}

//! The pure representation of a datatype: a type map flattened into byte blocks, with MPI's
//! bounds. No handles, no state: every constructor of MPI 3.1 section 4.1 is a function from
//! type maps to a type map, so the index arithmetic is tested here on its own.
//!
//! A type map is kept as
//! * `blocks`: the data of one instance as `(byte offset, length)` in type-map order (the order
//!   `MPI_Pack` writes), adjacent blocks merged, so a contiguous type is a single block;
//! * `runs`: the basic elements in the same order, run-length coded (`MPI_Get_elements`,
//!   external32 conversion);
//! * the bounds: `lb`/`ub` (extent = ub - lb) with MPI-1's sticky `MPI_LB`/`MPI_UB` markers
//!   (`lb_marked`/`ub_marked`; `MPI_Type_create_resized` sets both), and the true bounds of the
//!   data alone.

use crate::abi::MPI_Datatype;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub off: i64,
    pub len: usize,
}

/// `count` consecutive basic elements of predefined type `basic` (of `size` bytes each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub basic: MPI_Datatype,
    pub size: usize,
    pub count: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypeMap {
    pub size: usize,
    pub lb: i64,
    pub ub: i64,
    pub true_lb: i64,
    pub true_ub: i64,
    pub lb_marked: bool,
    pub ub_marked: bool,
    /// Strictest alignment of the basic elements: a struct's extent is padded to it (MPI 3.1
    /// section 4.1.6, as MPICH does), unless an upper bound was set explicitly.
    pub align: usize,
    pub blocks: Vec<Block>,
    pub runs: Vec<Run>,
}

impl TypeMap {
    /// One basic element of `size` bytes aligned to `align`.
    pub fn basic(t: MPI_Datatype, size: usize, align: usize) -> TypeMap {
        let blocks = if size > 0 { vec![Block { off: 0, len: size }] } else { Vec::new() };
        let runs = if size > 0 { vec![Run { basic: t, size, count: 1 }] } else { Vec::new() };
        TypeMap {
            size,
            lb: 0,
            ub: size as i64,
            true_lb: 0,
            true_ub: size as i64,
            lb_marked: false,
            ub_marked: false,
            align: align.max(1),
            blocks,
            runs,
        }
    }

    /// The `MPI_LB` (`upper = false`) or `MPI_UB` marker: no data, a sticky bound at 0.
    pub fn marker(upper: bool) -> TypeMap {
        TypeMap { lb_marked: !upper, ub_marked: upper, ..TypeMap::basic(0, 0, 1) }
    }

    pub fn extent(&self) -> i64 {
        self.ub - self.lb
    }

    pub fn true_extent(&self) -> i64 {
        self.true_ub - self.true_lb
    }

    /// Basic elements in one instance.
    pub fn elements(&self) -> usize {
        self.runs.iter().map(|r| r.count).sum()
    }

    /// Whether `count` instances are one block of memory: then they need no packing.
    pub fn contiguous(&self, count: usize) -> Option<i64> {
        match self.blocks.as_slice() {
            [] => Some(0),
            [b] if count <= 1 || b.len as i64 == self.extent() => Some(b.off),
            _ => None,
        }
    }

    /// Basic elements in the first `bytes` bytes of packed data (MPI_Get_elements): whole
    /// instances, then the whole elements of the partial one; `None` if an element is cut.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        let (whole, mut rest) = (bytes / self.size, bytes % self.size);
        let mut n = whole * self.elements();
        for r in &self.runs {
            if rest == 0 {
                break;
            }
            let k = (rest / r.size).min(r.count);
            n += k;
            rest -= k * r.size;
            if k < r.count {
                break;
            }
        }
        (rest == 0).then_some(n)
    }

    /// Packed bytes of the first `n` basic elements (MPI_Status_set_elements).
    pub fn bytes_of_elements(&self, n: usize) -> usize {
        let per = self.elements();
        if per == 0 {
            return 0;
        }
        let mut bytes = n / per * self.size;
        let mut left = n % per;
        for r in &self.runs {
            let k = left.min(r.count);
            bytes += k * r.size;
            left -= k;
        }
        bytes
    }
}

/// Accumulates copies of type maps at displacements, applying MPI's bound rules.
#[derive(Default)]
pub(crate) struct Builder {
    blocks: Vec<Block>,
    runs: Vec<Run>,
    size: usize,
    /// (min lb, max ub) over all pieces, and over the marked ones.
    lb: Option<i64>,
    ub: Option<i64>,
    marked_lb: Option<i64>,
    marked_ub: Option<i64>,
    align: usize,
}

fn min_opt(a: Option<i64>, b: i64) -> Option<i64> {
    Some(a.map_or(b, |a| a.min(b)))
}

fn max_opt(a: Option<i64>, b: i64) -> Option<i64> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl Builder {
    /// Appends `count` copies of `t`, the k-th at `disp + k * step` bytes.
    pub fn add(&mut self, t: &TypeMap, disp: i64, count: usize, step: i64) {
        for k in 0..count as i64 {
            let d = disp + k * step;
            for b in &t.blocks {
                self.push_block(d + b.off, b.len);
            }
            for r in &t.runs {
                match self.runs.last_mut() {
                    Some(last) if last.basic == r.basic => last.count += r.count,
                    _ => self.runs.push(*r),
                }
            }
            self.size += t.size;
            let (lb, ub) = (t.lb + d, t.ub + d);
            if t.lb_marked {
                self.marked_lb = min_opt(self.marked_lb, lb);
            }
            if t.ub_marked {
                self.marked_ub = max_opt(self.marked_ub, ub);
            }
            self.lb = min_opt(self.lb, lb);
            self.ub = max_opt(self.ub, ub);
        }
        if count > 0 {
            self.align = self.align.max(t.align);
        }
    }

    fn push_block(&mut self, off: i64, len: usize) {
        if len == 0 {
            return;
        }
        match self.blocks.last_mut() {
            Some(last) if last.off + last.len as i64 == off => last.len += len,
            _ => self.blocks.push(Block { off, len }),
        }
    }

    /// The type map; `pad` rounds an unmarked extent up to the alignment (structs only).
    pub fn build(self, pad: bool) -> TypeMap {
        let true_lb = self.blocks.iter().map(|b| b.off).min().unwrap_or(0);
        let true_ub = self.blocks.iter().map(|b| b.off + b.len as i64).max().unwrap_or(0);
        let lb = self.marked_lb.or(self.lb).unwrap_or(0);
        let mut ub = self.marked_ub.or(self.ub).unwrap_or(0);
        let align = self.align.max(1) as i64;
        if pad && self.marked_ub.is_none() && (ub - lb) % align != 0 {
            ub += align - (ub - lb).rem_euclid(align);
        }
        TypeMap {
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            lb_marked: self.marked_lb.is_some(),
            ub_marked: self.marked_ub.is_some(),
            align: self.align.max(1),
            blocks: self.blocks,
            runs: self.runs,
        }
    }
}

pub(crate) fn contiguous(count: usize, old: &TypeMap) -> TypeMap {
    let mut b = Builder::default();
    b.add(old, 0, count, old.extent());
    b.build(false)
}

/// `count` blocks of `blocklen` elements, block starts `stride` bytes apart (hvector; vector
/// passes `stride * extent`).
pub(crate) fn hvector(count: usize, blocklen: usize, stride: i64, old: &TypeMap) -> TypeMap {
    let mut b = Builder::default();
    for i in 0..count as i64 {
        b.add(old, i * stride, blocklen, old.extent());
    }
    b.build(false)
}

/// Blocks of `(length, byte displacement)` (hindexed; indexed passes displacements times the
/// extent; the block forms pass one length).
pub(crate) fn hindexed(blocks: &[(usize, i64)], old: &TypeMap) -> TypeMap {
    let mut b = Builder::default();
    for &(len, disp) in blocks {
        b.add(old, disp, len, old.extent());
    }
    b.build(false)
}

/// `MPI_Type_create_struct`: `(blocklength, displacement, type)` per entry.
pub(crate) fn structure(entries: &[(usize, i64, &TypeMap)]) -> TypeMap {
    let mut b = Builder::default();
    for &(len, disp, t) in entries {
        b.add(t, disp, len, t.extent());
    }
    b.build(true)
}

pub(crate) fn resized(old: &TypeMap, lb: i64, extent: i64) -> TypeMap {
    TypeMap { lb, ub: lb + extent, lb_marked: true, ub_marked: true, ..old.clone() }
}

/// Dimensions from the fastest-varying one: C order stores the last dimension contiguously.
fn fastest_first(n: usize, c_order: bool) -> Vec<usize> {
    if c_order {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    }
}

/// Builds an array type from the index ranges `(start, len)` selected in each dimension of an
/// array of `sizes` elements of `old`: nested hindexed types from the fastest dimension out,
/// resized to the whole array (lb 0), as MPI 3.1 section 4.1.3 defines subarray and darray.
fn array_of(sizes: &[usize], ranges: &[Vec<(usize, usize)>], c_order: bool, old: &TypeMap) -> TypeMap {
    let mut t = old.clone();
    let mut stride = old.extent();
    for d in fastest_first(sizes.len(), c_order) {
        let mut b = Builder::default();
        for &(start, len) in &ranges[d] {
            b.add(&t, start as i64 * stride, len, stride);
        }
        t = b.build(false);
        stride *= sizes[d] as i64;
    }
    resized(&t, 0, stride)
}

/// `MPI_Type_create_subarray`: the block `starts .. starts + subsizes` of an array of `sizes`.
pub(crate) fn subarray(sizes: &[usize], subsizes: &[usize], starts: &[usize], c_order: bool, old: &TypeMap) -> TypeMap {
    let ranges: Vec<_> = subsizes.iter().zip(starts).map(|(&n, &s)| vec![(s, n)]).collect();
    array_of(sizes, &ranges, c_order, old)
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

/// Index ranges of a dimension of `gsize` owned by process coordinate `coord` of `psize`.
pub(crate) fn owned(gsize: usize, d: Distrib, psize: usize, coord: usize) -> Vec<(usize, usize)> {
    match d {
        Distrib::None => vec![(0, gsize)],
        Distrib::Block(b) => {
            let start = (coord * b).min(gsize);
            vec![(start, (start + b).min(gsize) - start)]
        }
        Distrib::Cyclic(k) => {
            (coord * k..gsize).step_by((k * psize).max(1)).map(|s| (s, (s + k).min(gsize) - s)).collect()
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
    old: &TypeMap,
) -> TypeMap {
    let mut coords = vec![0; gsizes.len()];
    let mut r = rank;
    for d in (0..gsizes.len()).rev() {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    let ranges: Vec<_> = (0..gsizes.len()).map(|d| owned(gsizes[d], distribs[d], psizes[d], coords[d])).collect();
    array_of(gsizes, &ranges, c_order, old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{MPI_CHAR, MPI_DOUBLE, MPI_INT};

    fn int() -> TypeMap {
        TypeMap::basic(MPI_INT, 4, 4)
    }

    fn blocks(t: &TypeMap) -> Vec<(i64, usize)> {
        t.blocks.iter().map(|b| (b.off, b.len)).collect()
    }

    #[test]
    fn contiguous_merges_into_one_block() {
        let t = contiguous(5, &int());
        assert_eq!(blocks(&t), [(0, 20)]);
        assert_eq!((t.size, t.lb, t.extent(), t.elements()), (20, 0, 20, 5));
        assert_eq!(t.contiguous(3), Some(0));
    }

    #[test]
    fn vector_blocks_and_extent() {
        let t = hvector(3, 2, 5 * 4, &int());
        assert_eq!(blocks(&t), [(0, 8), (20, 8), (40, 8)]);
        assert_eq!((t.lb, t.extent(), t.size), (0, 48, 24));
        assert_eq!(t.contiguous(1), None);
    }

    #[test]
    fn negative_stride_vector() {
        let t = hvector(3, 1, -5 * 4, &int());
        assert_eq!(blocks(&t), [(0, 4), (-20, 4), (-40, 4)]);
        assert_eq!((t.lb, t.extent(), t.true_lb, t.true_extent()), (-40, 44, -40, 44));
    }

    #[test]
    fn vector_of_struct_with_padding() {
        // struct { char c; double d; } : size 9, extent 16 (padded to the double).
        let s = structure(&[(1, 0, &TypeMap::basic(MPI_CHAR, 1, 1)), (1, 8, &TypeMap::basic(MPI_DOUBLE, 8, 8))]);
        assert_eq!((s.size, s.extent(), s.true_extent()), (9, 16, 16));
        let v = hvector(2, 2, 48, &s);
        assert_eq!(blocks(&v), [(0, 1), (8, 9), (24, 8), (48, 1), (56, 9), (72, 8)]);
        assert_eq!((v.size, v.extent(), v.elements()), (36, 80, 8));
        assert_eq!(v.runs.len(), 8);
    }

    #[test]
    fn resized_sets_sticky_bounds() {
        let r = resized(&int(), 0, 12);
        let c = contiguous(4, &r);
        assert_eq!(blocks(&c), [(0, 4), (12, 4), (24, 4), (36, 4)]);
        assert_eq!((c.lb, c.extent(), c.true_extent()), (0, 48, 40));
        // A marker in a struct wins over the data bounds.
        let s = structure(&[(1, -8, &TypeMap::marker(false)), (1, 0, &int()), (1, 32, &TypeMap::marker(true))]);
        assert_eq!((s.lb, s.ub, s.true_lb, s.true_ub), (-8, 32, 0, 4));
    }

    #[test]
    fn subarray_c_and_fortran_orders() {
        let c = subarray(&[4, 6], &[2, 3], &[1, 2], true, &int());
        assert_eq!(blocks(&c), [(32, 12), (56, 12)]);
        assert_eq!((c.lb, c.extent(), c.true_lb, c.true_extent()), (0, 96, 32, 36));
        let f = subarray(&[4, 6], &[2, 3], &[1, 2], false, &int());
        let ints: Vec<i64> = blocks(&f).iter().map(|&(o, _)| o / 4).collect();
        assert_eq!(ints, [9, 13, 17]);
        assert!(blocks(&f).iter().all(|&(_, l)| l == 8));
    }

    #[test]
    fn darray_block_and_cyclic() {
        let b = darray(1, &[8], &[Distrib::Block(4)], &[2], true, &int());
        assert_eq!(blocks(&b), [(16, 16)]);
        assert_eq!((b.lb, b.extent(), b.true_lb, b.true_extent()), (0, 32, 16, 16));
        let c = darray(0, &[8], &[Distrib::Cyclic(1)], &[2], true, &int());
        assert_eq!(blocks(&c), [(0, 4), (8, 4), (16, 4), (24, 4)]);
        assert_eq!(owned(10, Distrib::Cyclic(2), 3, 1), [(2, 2), (8, 2)]);
        assert_eq!(owned(7, Distrib::Block(3), 3, 2), [(6, 1)]);
        // 2-D: 4x4 over a 2x2 grid, rank 3 = coords (1, 1): rows 2..4, columns 2..4.
        let g = darray(3, &[4, 4], &[Distrib::Block(2), Distrib::Block(2)], &[2, 2], true, &int());
        assert_eq!(blocks(&g), [(40, 8), (56, 8)]);
    }

    #[test]
    fn elements_of_partial_data() {
        let pair = contiguous(2, &int());
        assert_eq!(pair.elements_in(20), Some(5));
        assert_eq!(pair.elements_in(6), None);
        let s = structure(&[(1, 0, &TypeMap::basic(MPI_CHAR, 1, 1)), (1, 8, &TypeMap::basic(MPI_DOUBLE, 8, 8))]);
        assert_eq!(s.elements_in(9 * 4), Some(8));
        assert_eq!(s.elements_in(9 + 1), Some(3));
        assert_eq!(s.bytes_of_elements(3), 10);
    }
}

//! The pure representation of a datatype: its shape, a small tree of regular repetitions, with
//! MPI's bounds. No handles, no state: every constructor of MPI 3.1 section 4.1 is a function
//! from type maps to a type map, so the index arithmetic is tested here on its own.
//!
//! A type costs what it describes, not what it repeats: `MPI_Type_contiguous(INT_MAX,
//! MPI_CHAR)` is one node (`Basic` of INT_MAX chars), a vector one `Repeat` over its block, so
//! every constructor is O(depth) in time and memory whatever its counts (the index and struct
//! forms are O(their argument arrays)). Moving the data walks the tree (`pack.rs`), one piece
//! of memory at a time, and a node whose data is one block of memory in packed order (`dense`)
//! is a single piece however many elements it holds.
//!
//! Next to the tree, each type keeps what the queries need in O(1):
//! * the bounds: `lb`/`ub` (extent = ub - lb) with MPI-1's sticky `MPI_LB`/`MPI_UB` markers
//!   (`lb_marked`/`ub_marked`; `MPI_Type_create_resized` sets both), and the true bounds of the
//!   data alone;
//! * the size, basic elements and external32 size of one instance.
//!
//! Sizes and bounds are checked 64-bit arithmetic: a type whose bytes or bounds do not fit in
//! an `i64` is refused ([`Overflow`]) rather than wrapped.

use std::sync::Arc;

use crate::abi::MPI_Datatype;

/// A type whose size or bounds do not fit in 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overflow;

type Built = Result<TypeMap, Overflow>;

fn ck<T>(v: Option<T>) -> Result<T, Overflow> {
    v.ok_or(Overflow)
}

/// Which predefined types the data is made of (RMA accumulates need one throughout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Basics {
    None,
    One(MPI_Datatype),
    Mixed,
}

impl Basics {
    fn and(self, other: Basics) -> Basics {
        match (self, other) {
            (Basics::None, b) | (b, Basics::None) => b,
            (Basics::One(a), Basics::One(b)) if a == b => Basics::One(a),
            _ => Basics::Mixed,
        }
    }
}

/// The data of one instance, relative to the type's origin.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// No data.
    Empty,
    /// `count` consecutive elements of predefined type `t` (`size` bytes each) at offset 0.
    Basic { t: MPI_Datatype, size: usize, count: usize },
    /// `count` copies of `child`, the k-th at `k * stride` bytes.
    Repeat { count: usize, stride: i64, child: Arc<TypeMap> },
    /// Types at byte displacements, in type-map order (each with data).
    Seq(Arc<[(i64, Arc<TypeMap>)]>),
}

#[derive(Clone, Debug)]
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
    /// Basic elements in one instance.
    elements: usize,
    /// Bytes of one instance in external32.
    ext32: usize,
    /// Pieces of memory one instance is moved in, at most (saturating).
    pieces: usize,
    /// The data is one block, `true_lb .. true_ub`, in packed order.
    dense: bool,
    /// The pieces of one instance, `(offset, length)`, merged, when there are few (at most
    /// [`FLAT_MAX`]) and more than one: small types, the common case on the message path, move
    /// by a plain loop over them.
    flat: Option<Arc<[(i64, usize)]>>,
    basics: Basics,
    pub node: Node,
}

/// Most pieces a type lists flat beside its shape: 16 KiB per type at most, and the cost of
/// building the list is bounded by it. A type of more pieces moves by walking its shape, which
/// costs a few instructions more per piece, negligible beside the copy at that size.
const FLAT_MAX: usize = 1024;

impl TypeMap {
    /// One basic element of `size` bytes aligned to `align`.
    pub fn basic(t: MPI_Datatype, size: usize, align: usize) -> TypeMap {
        if size == 0 {
            return TypeMap { align: align.max(1), ..TypeMap::empty() };
        }
        TypeMap {
            size,
            lb: 0,
            ub: size as i64,
            true_lb: 0,
            true_ub: size as i64,
            lb_marked: false,
            ub_marked: false,
            align: align.max(1),
            elements: 1,
            ext32: super::pack::external32(t, size).0,
            pieces: 1,
            dense: true,
            flat: None,
            basics: Basics::One(t),
            node: Node::Basic { t, size, count: 1 },
        }
    }

    /// No data, bounds at 0 (what a count of 0 builds).
    pub fn empty() -> TypeMap {
        TypeMap {
            size: 0,
            lb: 0,
            ub: 0,
            true_lb: 0,
            true_ub: 0,
            lb_marked: false,
            ub_marked: false,
            align: 1,
            elements: 0,
            ext32: 0,
            pieces: 0,
            dense: true,
            flat: None,
            basics: Basics::None,
            node: Node::Empty,
        }
    }

    /// The `MPI_LB` (`upper = false`) or `MPI_UB` marker: no data, a sticky bound at 0.
    pub fn marker(upper: bool) -> TypeMap {
        TypeMap { lb_marked: !upper, ub_marked: upper, ..TypeMap::empty() }
    }

    pub fn extent(&self) -> i64 {
        self.ub - self.lb
    }

    pub fn true_extent(&self) -> i64 {
        self.true_ub - self.true_lb
    }

    /// Bytes of one instance in external32.
    pub fn external32_size(&self) -> usize {
        self.ext32
    }

    /// Pieces of memory one instance is moved in, at most.
    pub fn pieces(&self) -> usize {
        self.pieces
    }

    /// The pieces of one instance, when the type lists them flat.
    #[inline]
    pub fn flat(&self) -> Option<&[(i64, usize)]> {
        self.flat.as_deref()
    }

    pub fn basics(&self) -> Basics {
        self.basics
    }

    /// Whether `count` instances are one block of memory: then they need no packing.
    #[inline]
    pub fn contiguous(&self, count: usize) -> Option<i64> {
        if self.size == 0 {
            return Some(0);
        }
        (self.dense && (count <= 1 || self.size as i64 == self.extent())).then_some(self.true_lb)
    }

    /// Basic elements in the first `bytes` bytes of packed data (MPI_Get_elements): whole
    /// instances, then the whole elements of the partial one; `None` if an element is cut.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        Some(bytes / self.size * self.elements + self.prefix_elements(bytes % self.size)?)
    }

    /// Elements in the first `bytes` (< size) packed bytes of one instance.
    fn prefix_elements(&self, mut bytes: usize) -> Option<usize> {
        if bytes == 0 {
            return Some(0);
        }
        match &self.node {
            Node::Empty => Some(0),
            Node::Basic { size, .. } => bytes.is_multiple_of(*size).then_some(bytes / size),
            Node::Repeat { child, .. } => {
                Some(bytes / child.size * child.elements + child.prefix_elements(bytes % child.size)?)
            }
            Node::Seq(parts) => {
                let mut n = 0;
                for (_, c) in parts.iter() {
                    if bytes < c.size {
                        return Some(n + c.prefix_elements(bytes)?);
                    }
                    n += c.elements;
                    bytes -= c.size;
                }
                Some(n)
            }
        }
    }

    /// Calls `f(basic, size, count)` for each run of `count` elements of one predefined type
    /// in one instance, in type-map order.
    pub fn for_each_run(&self, f: &mut impl FnMut(MPI_Datatype, usize, usize)) {
        match &self.node {
            Node::Empty => {}
            Node::Basic { t, size, count } => f(*t, *size, *count),
            Node::Repeat { count, child, .. } => match child.node {
                Node::Basic { t, size, count: n } => f(t, size, n * count),
                _ => (0..*count).for_each(|_| child.for_each_run(f)),
            },
            Node::Seq(parts) => parts.iter().for_each(|(_, c)| c.for_each_run(f)),
        }
    }

    /// Calls `f(offset, len)` for each piece of memory of one instance placed at `at`, in
    /// packed order, until `f` returns false; returns false if it did.
    #[inline]
    pub fn for_each_piece(&self, at: i64, f: &mut impl FnMut(i64, usize) -> bool) -> bool {
        if self.size == 0 {
            return true;
        }
        if self.dense {
            return f(at.wrapping_add(self.true_lb), self.size);
        }
        if let Some(flat) = &self.flat {
            return flat.iter().all(|&(off, len)| f(at.wrapping_add(off), len));
        }
        match &self.node {
            Node::Empty | Node::Basic { .. } => unreachable!("basic data is dense"),
            Node::Repeat { count, stride, child } if child.dense => {
                // The common inner loop (a vector's blocks): no recursion per piece.
                let (mut off, len) = (at.wrapping_add(child.true_lb), child.size);
                for _ in 0..*count {
                    if !f(off, len) {
                        return false;
                    }
                    off = off.wrapping_add(*stride);
                }
                true
            }
            Node::Repeat { count, stride, child } => {
                let mut off = at;
                for _ in 0..*count {
                    if !child.for_each_piece(off, f) {
                        return false;
                    }
                    off = off.wrapping_add(*stride);
                }
                true
            }
            Node::Seq(parts) => parts.iter().all(|(d, c)| c.for_each_piece(at.wrapping_add(*d), f)),
        }
    }

    /// Lists the pieces flat if they are few (see [`FLAT_MAX`]): the last step of building.
    fn flatten(mut self) -> TypeMap {
        if !self.dense && self.pieces <= FLAT_MAX {
            let blocks = self.blocks();
            self.pieces = blocks.len();
            self.flat = Some(blocks.into());
        }
        self
    }

    /// The same type without its flat lists, at every level: only its shape moves the data.
    #[cfg(test)]
    pub fn shape_only(&self) -> TypeMap {
        let node = match &self.node {
            Node::Repeat { count, stride, child } => {
                Node::Repeat { count: *count, stride: *stride, child: Arc::new(child.shape_only()) }
            }
            Node::Seq(parts) => Node::Seq(parts.iter().map(|(d, t)| (*d, Arc::new(t.shape_only()))).collect()),
            other => other.clone(),
        };
        TypeMap { flat: None, node, ..self.clone() }
    }

    /// The pieces of one instance as `(offset, length)`, adjacent ones merged.
    pub fn blocks(&self) -> Vec<(i64, usize)> {
        let mut blocks: Vec<(i64, usize)> = Vec::new();
        self.for_each_piece(0, &mut |off, len| {
            match blocks.last_mut() {
                Some(last) if last.0 + last.1 as i64 == off => last.1 += len,
                _ => blocks.push((off, len)),
            }
            true
        });
        blocks
    }
}

/// The bounds a piece contributes to a type built of pieces (MPI 3.1 section 4.1.6, with
/// MPI-1's markers): lowest and highest over all pieces, and over the marked ones.
#[derive(Default)]
struct Bounds {
    lb: Option<i64>,
    ub: Option<i64>,
    marked_lb: Option<i64>,
    marked_ub: Option<i64>,
    true_lb: Option<i64>,
    true_ub: Option<i64>,
}

fn lower(a: Option<i64>, b: i64) -> Option<i64> {
    Some(a.map_or(b, |a| a.min(b)))
}

fn upper(a: Option<i64>, b: i64) -> Option<i64> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl Bounds {
    /// Copies of `t` spanning displacements `lo ..= hi`.
    fn add(&mut self, t: &TypeMap, lo: i64, hi: i64) -> Result<(), Overflow> {
        let (lb, ub) = (ck(t.lb.checked_add(lo))?, ck(t.ub.checked_add(hi))?);
        if t.lb_marked {
            self.marked_lb = lower(self.marked_lb, lb);
        }
        if t.ub_marked {
            self.marked_ub = upper(self.marked_ub, ub);
        }
        self.lb = lower(self.lb, lb);
        self.ub = upper(self.ub, ub);
        if t.size > 0 {
            self.true_lb = lower(self.true_lb, ck(t.true_lb.checked_add(lo))?);
            self.true_ub = upper(self.true_ub, ck(t.true_ub.checked_add(hi))?);
        }
        Ok(())
    }

    /// Puts the bounds on `t` (which has the data); `pad` rounds an unmarked extent up to the
    /// alignment (structs only).
    fn apply(self, t: &mut TypeMap, pad: bool) -> Result<(), Overflow> {
        t.true_lb = self.true_lb.unwrap_or(0);
        t.true_ub = self.true_ub.unwrap_or(0);
        t.lb = self.marked_lb.or(self.lb).unwrap_or(0);
        t.ub = self.marked_ub.or(self.ub).unwrap_or(0);
        t.lb_marked = self.marked_lb.is_some();
        t.ub_marked = self.marked_ub.is_some();
        let extent = ck(t.ub.checked_sub(t.lb))?;
        ck(t.true_ub.checked_sub(t.true_lb))?;
        let align = t.align as i64;
        if pad && !t.ub_marked && extent % align != 0 {
            t.ub = ck(t.ub.checked_add(align - extent.rem_euclid(align)))?;
            ck(t.ub.checked_sub(t.lb))?;
        }
        Ok(())
    }
}

fn checked_size(n: Option<usize>) -> Result<usize, Overflow> {
    ck(n.filter(|&s| s <= i64::MAX as usize))
}

/// `count` copies of `t`, the k-th at `k * step` bytes (no copies: the empty type).
pub(crate) fn repeat(count: usize, step: i64, t: &Arc<TypeMap>) -> Built {
    if count == 0 {
        return Ok(TypeMap::empty());
    }
    let span = ck(i64::try_from(count - 1).ok().and_then(|n| n.checked_mul(step)))?;
    let mut b = Bounds::default();
    b.add(t, span.min(0), span.max(0))?;
    let size = checked_size(count.checked_mul(t.size))?;
    let dense = t.size == 0 || (t.dense && (count == 1 || step == t.size as i64));
    let node = match t.node {
        _ if t.size == 0 => Node::Empty,
        _ if count == 1 => t.node.clone(),
        Node::Basic { t: basic, size: s, count: n } if step == (s * n) as i64 => {
            Node::Basic { t: basic, size: s, count: n * count }
        }
        _ => Node::Repeat { count, stride: step, child: t.clone() },
    };
    let mut r = TypeMap {
        size,
        elements: t.elements * count,
        ext32: t.ext32 * count,
        pieces: if dense { t.pieces.min(1) } else { t.pieces.saturating_mul(count) },
        dense,
        basics: t.basics,
        align: t.align,
        node,
        ..TypeMap::empty()
    };
    b.apply(&mut r, false)?;
    Ok(r.flatten())
}

/// Types at byte displacements, in order; `pad` as for a struct.
pub(crate) fn seq(parts: &[(i64, Arc<TypeMap>)], pad: bool) -> Built {
    let mut b = Bounds::default();
    let mut r = TypeMap::empty();
    let mut data: Vec<(i64, Arc<TypeMap>)> = Vec::new();
    // Where the next byte must be for the data so far to be one block in packed order.
    let mut next: Option<i64> = None;
    for (d, t) in parts {
        b.add(t, *d, *d)?;
        r.align = r.align.max(t.align);
        if t.size == 0 {
            continue;
        }
        let start = ck(d.checked_add(t.true_lb))?;
        r.dense = r.dense && t.dense && next.is_none_or(|n| n == start);
        next = Some(start.wrapping_add(t.size as i64));
        r.size = checked_size(r.size.checked_add(t.size))?;
        r.elements += t.elements;
        r.ext32 += t.ext32;
        r.pieces = r.pieces.saturating_add(t.pieces);
        r.basics = r.basics.and(t.basics);
        data.push((*d, t.clone()));
    }
    if r.dense {
        r.pieces = r.pieces.min(1);
    }
    r.node = match data.as_slice() {
        [] => Node::Empty,
        [(0, t)] => t.node.clone(),
        _ => Node::Seq(data.into()),
    };
    b.apply(&mut r, pad)?;
    Ok(r.flatten())
}

pub(crate) fn contiguous(count: usize, old: &Arc<TypeMap>) -> Built {
    repeat(count, old.extent(), old)
}

/// `count` blocks of `blocklen` elements, block starts `stride` bytes apart (hvector; vector
/// passes `stride * extent`).
pub(crate) fn hvector(count: usize, blocklen: usize, stride: i64, old: &Arc<TypeMap>) -> Built {
    if blocklen == 0 {
        return Ok(TypeMap::empty());
    }
    repeat(count, stride, &Arc::new(contiguous(blocklen, old)?))
}

/// Blocks of `(length, byte displacement)` (hindexed; indexed passes displacements times the
/// extent; the block forms pass one length). Evenly spaced blocks of one length are a vector.
pub(crate) fn hindexed(blocks: &[(usize, i64)], old: &Arc<TypeMap>) -> Built {
    let blocks: Vec<_> = blocks.iter().copied().filter(|b| b.0 > 0).collect();
    if let [(len, first), (_, second), ..] = blocks[..] {
        let step = second.wrapping_sub(first);
        if blocks.windows(2).all(|w| w[1].0 == len && w[1].1.checked_sub(w[0].1) == Some(step)) {
            let vector = Arc::new(hvector(blocks.len(), len, step, old)?);
            return if first == 0 { Ok((*vector).clone()) } else { seq(&[(first, vector)], false) };
        }
    }
    let mut parts: Vec<(i64, Arc<TypeMap>)> = Vec::with_capacity(blocks.len());
    let mut last: Option<(usize, Arc<TypeMap>)> = None;
    for (len, disp) in blocks {
        // Consecutive blocks of one length share their node.
        let t = match &last {
            Some((n, t)) if *n == len => t.clone(),
            _ => Arc::new(contiguous(len, old)?),
        };
        last = Some((len, t.clone()));
        parts.push((disp, t));
    }
    seq(&parts, false)
}

/// `MPI_Type_create_struct`: `(blocklength, displacement, type)` per entry.
pub(crate) fn structure(entries: &[(usize, i64, &Arc<TypeMap>)]) -> Built {
    let parts = entries
        .iter()
        .filter(|e| e.0 > 0)
        .map(|&(len, disp, t)| Ok((disp, if len == 1 { t.clone() } else { Arc::new(contiguous(len, t)?) })))
        .collect::<Result<Vec<_>, Overflow>>()?;
    seq(&parts, true)
}

pub(crate) fn resized(old: &TypeMap, lb: i64, extent: i64) -> Built {
    Ok(TypeMap { lb, ub: ck(lb.checked_add(extent))?, lb_marked: true, ub_marked: true, ..old.clone() })
}

#[cfg(test)]
#[path = "typemap_tests.rs"]
mod tests;

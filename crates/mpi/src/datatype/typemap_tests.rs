//! Tests of the shapes: fixed cases, huge counts, and random nested types checked against a
//! naive reference that lists every element (the flattened type map of MPI 3.1 section 4.1).

use super::*;
use crate::abi::{MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
use crate::datatype::pack;
use proptest::prelude::*;

fn int() -> Arc<TypeMap> {
    Arc::new(TypeMap::basic(MPI_INT, 4, 4))
}

fn char_() -> Arc<TypeMap> {
    Arc::new(TypeMap::basic(MPI_CHAR, 1, 1))
}

fn double() -> Arc<TypeMap> {
    Arc::new(TypeMap::basic(MPI_DOUBLE, 8, 8))
}

fn runs(t: &TypeMap) -> Vec<(MPI_Datatype, usize)> {
    let mut v = Vec::new();
    t.for_each_run(&mut |b, _, n| v.push((b, n)));
    v
}

#[test]
fn contiguous_merges_into_one_block() {
    let t = contiguous(5, &int()).unwrap();
    assert_eq!(t.blocks(), [(0, 20)]);
    assert_eq!((t.size, t.lb, t.extent(), t.elements), (20, 0, 20, 5));
    assert_eq!(t.contiguous(3), Some(0));
    assert!(matches!(t.node, Node::Basic { count: 5, .. }));
}

#[test]
fn vector_blocks_and_extent() {
    let t = hvector(3, 2, 5 * 4, &int()).unwrap();
    assert_eq!(t.blocks(), [(0, 8), (20, 8), (40, 8)]);
    assert_eq!((t.lb, t.extent(), t.size), (0, 48, 24));
    assert_eq!(t.contiguous(1), None);
}

#[test]
fn negative_stride_vector() {
    let t = hvector(3, 1, -5 * 4, &int()).unwrap();
    assert_eq!(t.blocks(), [(0, 4), (-20, 4), (-40, 4)]);
    assert_eq!((t.lb, t.extent(), t.true_lb, t.true_extent()), (-40, 44, -40, 44));
}

#[test]
fn vector_of_struct_with_padding() {
    // struct { char c; double d; } : size 9, extent 16 (padded to the double).
    let s = Arc::new(structure(&[(1, 0, &char_()), (1, 8, &double())]).unwrap());
    assert_eq!((s.size, s.extent(), s.true_extent()), (9, 16, 16));
    let v = hvector(2, 2, 48, &s).unwrap();
    assert_eq!(v.blocks(), [(0, 1), (8, 9), (24, 8), (48, 1), (56, 9), (72, 8)]);
    assert_eq!((v.size, v.extent(), v.elements), (36, 80, 8));
    assert_eq!(runs(&v).len(), 8);
}

#[test]
fn resized_sets_sticky_bounds() {
    let r = Arc::new(resized(&int(), 0, 12).unwrap());
    let c = contiguous(4, &r).unwrap();
    assert_eq!(c.blocks(), [(0, 4), (12, 4), (24, 4), (36, 4)]);
    assert_eq!((c.lb, c.extent(), c.true_extent()), (0, 48, 40));
    // A marker in a struct wins over the data bounds.
    let (lb, ub) = (Arc::new(TypeMap::marker(false)), Arc::new(TypeMap::marker(true)));
    let s = structure(&[(1, -8, &lb), (1, 0, &int()), (1, 32, &ub)]).unwrap();
    assert_eq!((s.lb, s.ub, s.true_lb, s.true_ub), (-8, 32, 0, 4));
}

#[test]
fn evenly_spaced_indexed_blocks_are_a_vector() {
    let t = hindexed(&[(2, 8), (2, 24), (0, 99), (2, 40)], &int()).unwrap();
    assert_eq!(t.blocks(), [(8, 8), (24, 8), (40, 8)]);
    assert!(matches!(&t.node, Node::Seq(p) if p.len() == 1), "one vector at displacement 8");
    let u = hindexed(&[(1, 0), (2, 8), (1, 40)], &int()).unwrap();
    assert_eq!(u.blocks(), [(0, 4), (8, 8), (40, 4)]);
}

#[test]
fn elements_of_partial_data() {
    let pair = contiguous(2, &int()).unwrap();
    assert_eq!(pair.elements_in(20), Some(5));
    assert_eq!(pair.elements_in(6), None);
    let s = structure(&[(1, 0, &char_()), (1, 8, &double())]).unwrap();
    assert_eq!(s.elements_in(9 * 4), Some(8));
    assert_eq!(s.elements_in(9 + 1), Some(3));
}

const MAX: usize = i32::MAX as usize;

#[test]
fn huge_counts_cost_nothing() {
    let c = contiguous(MAX, &char_()).unwrap();
    assert_eq!((c.size, c.extent(), c.elements, c.pieces()), (MAX, MAX as i64, MAX, 1));
    assert!(matches!(c.node, Node::Basic { count: MAX, .. }));
    // MPI_Type_vector(INT_MAX/2, 1, 3, MPI_INT) resized to 12 bytes: 4 GiB of data in 4-byte
    // pieces, described by two nodes.
    let v = Arc::new(hvector(MAX / 2, 1, 12, &int()).unwrap());
    assert_eq!((v.size, v.extent(), v.true_extent()), (MAX / 2 * 4, 12884901868, 12884901868));
    let r = resized(&v, 0, 12).unwrap();
    assert_eq!((r.size, r.extent(), r.true_extent(), r.pieces()), (4294967292, 12, 12884901868, MAX / 2));
    assert_eq!(r.elements_in(12), Some(3));
    // A short message unpacks its few elements only.
    let mut dst = [-1i32; 12];
    let src: Vec<u8> = [7i32, 8, 9].iter().flat_map(|v| v.to_ne_bytes()).collect();
    unsafe { pack::unpack(&r, &src, dst.as_mut_ptr().cast(), 1) };
    assert_eq!(dst, [7, -1, -1, 8, -1, -1, 9, -1, -1, -1, -1, -1]);
}

#[test]
fn overflow_is_refused_not_wrapped() {
    let big = Arc::new(contiguous(MAX, &char_()).unwrap());
    let bigger = Arc::new(contiguous(MAX, &big).unwrap());
    assert_eq!(bigger.size, MAX * MAX);
    assert_eq!(contiguous(2, &bigger).unwrap().extent(), 2 * (MAX * MAX) as i64, "just fits");
    assert_eq!(contiguous(3, &bigger).err(), Some(Overflow), "size past i64");
    assert_eq!(hvector(MAX, 2, 1 << 40, &double()).err(), Some(Overflow), "extent past i64");
    let ints = Arc::new(contiguous(MAX, &int()).unwrap());
    assert_eq!(hvector(3, 1, -(1 << 62) - 1, &ints).err(), Some(Overflow), "lower bound past i64");
    assert_eq!(resized(&int(), i64::MAX, 1).err(), Some(Overflow));
    assert_eq!(structure(&[(2, 0, &bigger), (1, 0, &bigger)]).err(), Some(Overflow));
}

/// A random type constructor tree.
#[derive(Clone, Debug)]
enum Desc {
    Basic(usize),
    Marker(bool),
    Contig(usize, Box<Desc>),
    Hvector(usize, usize, i64, Box<Desc>),
    Hindexed(Vec<(usize, i64)>, Box<Desc>),
    Struct(Vec<(usize, i64, Desc)>),
    Resized(i64, i64, Box<Desc>),
}

const BASICS: [(MPI_Datatype, usize); 4] = [(MPI_CHAR, 1), (MPI_SHORT, 2), (MPI_INT, 4), (MPI_DOUBLE, 8)];

fn desc() -> impl Strategy<Value = Desc> {
    let leaf = prop_oneof![8 => (0..4usize).prop_map(Desc::Basic), 1 => any::<bool>().prop_map(Desc::Marker)];
    leaf.prop_recursive(4, 24, 4, |inner| {
        let b = || inner.clone().prop_map(Box::new);
        prop_oneof![
            (0..4usize, b()).prop_map(|(n, d)| Desc::Contig(n, d)),
            (0..4usize, 0..3usize, -24..24i64, b()).prop_map(|(n, l, s, d)| Desc::Hvector(n, l, s, d)),
            (prop::collection::vec((0..3usize, -24..40i64), 0..4), b()).prop_map(|(v, d)| Desc::Hindexed(v, d)),
            (prop::collection::vec((0..3usize, -16..40i64, inner.clone()), 0..4)).prop_map(Desc::Struct),
            (-8..8i64, -4..40i64, b()).prop_map(|(lb, e, d)| Desc::Resized(lb, e, d)),
        ]
    })
}

fn build(d: &Desc) -> Arc<TypeMap> {
    Arc::new(match d {
        Desc::Basic(i) => TypeMap::basic(BASICS[*i].0, BASICS[*i].1, BASICS[*i].1),
        Desc::Marker(upper) => TypeMap::marker(*upper),
        Desc::Contig(n, d) => contiguous(*n, &build(d)).unwrap(),
        Desc::Hvector(n, l, s, d) => hvector(*n, *l, *s, &build(d)).unwrap(),
        Desc::Hindexed(v, d) => hindexed(v, &build(d)).unwrap(),
        Desc::Struct(v) => {
            let ts: Vec<_> = v.iter().map(|e| build(&e.2)).collect();
            let entries: Vec<_> = v.iter().zip(&ts).map(|(e, t)| (e.0, e.1, t)).collect();
            structure(&entries).unwrap()
        }
        Desc::Resized(lb, e, d) => resized(&build(d), *lb, *e).unwrap(),
    })
}

/// The naive reference: every element listed, the bounds by MPI's rules over every copy.
#[derive(Clone, Debug, Default)]
struct Flat {
    elems: Vec<(i64, MPI_Datatype, usize)>,
    lb: Option<i64>,
    ub: Option<i64>,
    marked_lb: Option<i64>,
    marked_ub: Option<i64>,
    align: usize,
}

impl Flat {
    fn lb(&self) -> i64 {
        self.marked_lb.or(self.lb).unwrap_or(0)
    }
    fn ub(&self) -> i64 {
        self.marked_ub.or(self.ub).unwrap_or(0)
    }
    fn extent(&self) -> i64 {
        self.ub() - self.lb()
    }
    fn size(&self) -> usize {
        self.elems.iter().map(|e| e.2).sum()
    }

    /// Copies of `t` at `disp + k * step`, k < count.
    fn add(&mut self, t: &Flat, disp: i64, count: usize, step: i64) {
        for k in 0..count as i64 {
            let d = disp + k * step;
            self.elems.extend(t.elems.iter().map(|&(o, b, s)| (o + d, b, s)));
            let (lb, ub) = (t.lb() + d, t.ub() + d);
            if t.marked_lb.is_some() {
                self.marked_lb = lower(self.marked_lb, lb);
            }
            if t.marked_ub.is_some() {
                self.marked_ub = upper(self.marked_ub, ub);
            }
            self.lb = lower(self.lb, lb);
            self.ub = upper(self.ub, ub);
        }
        if count > 0 {
            self.align = self.align.max(t.align);
        }
    }

    fn done(mut self, pad: bool) -> Flat {
        self.align = self.align.max(1);
        let (lb, ub, a) = (self.lb(), self.ub(), self.align as i64);
        if pad && self.marked_ub.is_none() && (ub - lb) % a != 0 {
            let ub = ub + a - (ub - lb).rem_euclid(a);
            if self.ub.is_some() {
                self.ub = Some(ub);
            }
        }
        self
    }

    fn blocks(&self) -> Vec<(i64, usize)> {
        let mut v: Vec<(i64, usize)> = Vec::new();
        for &(o, _, s) in &self.elems {
            match v.last_mut() {
                Some(l) if l.0 + l.1 as i64 == o => l.1 += s,
                _ => v.push((o, s)),
            }
        }
        v
    }
}

fn flat(d: &Desc) -> Flat {
    match d {
        Desc::Basic(i) => {
            let (b, s) = BASICS[*i];
            Flat { elems: vec![(0, b, s)], lb: Some(0), ub: Some(s as i64), align: s, ..Flat::default() }
        }
        Desc::Marker(upper) => Flat {
            lb: Some(0),
            ub: Some(0),
            marked_lb: (!upper).then_some(0),
            marked_ub: upper.then_some(0),
            align: 1,
            ..Flat::default()
        },
        Desc::Contig(n, d) => {
            let t = flat(d);
            let mut f = Flat::default();
            f.add(&t, 0, *n, t.extent());
            f.done(false)
        }
        Desc::Hvector(n, l, s, d) => {
            let t = flat(d);
            let mut f = Flat::default();
            (0..*n as i64).for_each(|i| f.add(&t, i * s, *l, t.extent()));
            f.done(false)
        }
        Desc::Hindexed(v, d) => {
            let t = flat(d);
            let mut f = Flat::default();
            v.iter().for_each(|&(l, disp)| f.add(&t, disp, l, t.extent()));
            f.done(false)
        }
        Desc::Struct(v) => {
            let mut f = Flat::default();
            for (l, disp, d) in v {
                let t = flat(d);
                f.add(&t, *disp, *l, t.extent());
            }
            f.done(true)
        }
        Desc::Resized(lb, e, d) => {
            Flat { lb: Some(*lb), ub: Some(lb + e), marked_lb: Some(*lb), marked_ub: Some(lb + e), ..flat(d) }
        }
    }
}

fn check(d: &Desc, count: usize, cut: usize, seed: u8) -> Result<(), TestCaseError> {
    let t = build(d);
    check_type(&t, &flat(d), count, cut, seed)?;
    // Small types list their pieces flat: the shape alone must move the data the same.
    check_type(&t.shape_only(), &flat(d), count, cut, seed)
}

fn check_type(t: &TypeMap, f: &Flat, count: usize, cut: usize, seed: u8) -> Result<(), TestCaseError> {
    let f_true_lb = f.elems.iter().map(|e| e.0).min().unwrap_or(0);
    let f_true_ub = f.elems.iter().map(|e| e.0 + e.2 as i64).max().unwrap_or(0);
    prop_assert_eq!((t.size, t.lb, t.ub, t.true_lb, t.true_ub), (f.size(), f.lb(), f.ub(), f_true_lb, f_true_ub));
    prop_assert_eq!((t.lb_marked, t.ub_marked, t.align), (f.marked_lb.is_some(), f.marked_ub.is_some(), f.align));
    prop_assert_eq!(t.elements, f.elems.len());
    let mut basics = Vec::new();
    t.for_each_run(&mut |b, _, n| basics.extend(std::iter::repeat_n(b, n)));
    prop_assert_eq!(basics, f.elems.iter().map(|e| e.1).collect::<Vec<_>>());
    let blocks = f.blocks();
    prop_assert_eq!(t.blocks(), blocks.clone());
    prop_assert!(t.pieces() >= blocks.len());
    let one_block = blocks.len() <= 1 && (count <= 1 || blocks.is_empty() || t.size as i64 == t.extent());
    prop_assert_eq!(t.contiguous(count).is_some(), one_block);

    // Pack and unpack `count` instances over a buffer that covers them all.
    let ext = f.extent();
    let offs: Vec<i64> = (0..count as i64)
        .flat_map(|k| f.elems.iter().map(move |e| (k * ext + e.0, e.2)))
        .flat_map(|(o, s)| [o, o + s as i64])
        .collect();
    let (lo, hi) = (offs.iter().copied().min().unwrap_or(0), offs.iter().copied().max().unwrap_or(0));
    let mem: Vec<u8> = (0..(hi - lo) as usize).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
    let want: Vec<u8> = (0..count as i64)
        .flat_map(|k| f.elems.iter().map(move |e| (k * ext + e.0 - lo, e.2)))
        .flat_map(|(o, s)| mem[o as usize..o as usize + s].to_vec())
        .collect();
    let mut got = vec![0u8; count * t.size];
    let base = mem.as_ptr().wrapping_offset(-lo as isize);
    unsafe { pack::pack(t, base, count, &mut got) };
    prop_assert_eq!(&got, &want);
    let cut = cut % (want.len() + 1);
    let mut back = vec![0xeeu8; mem.len()];
    unsafe { pack::unpack(t, &want[..cut], back.as_mut_ptr().wrapping_offset(-lo as isize), count) };
    let mut expect = vec![0xeeu8; mem.len()];
    let mut left = cut;
    'outer: for k in 0..count as i64 {
        for e in &f.elems {
            let o = (k * ext + e.0 - lo) as usize;
            let n = e.2.min(left);
            expect[o..o + n].copy_from_slice(&mem[o..o + n]);
            left -= n;
            if left == 0 {
                break 'outer;
            }
        }
    }
    prop_assert_eq!(back, expect);

    // Elements in a prefix of the packed data.
    let mut sizes = Vec::new();
    (0..count.max(1)).for_each(|_| sizes.extend(f.elems.iter().map(|e| e.2)));
    let (mut n, mut bytes) = (0, 0);
    while bytes < cut {
        bytes += sizes[n];
        n += 1;
    }
    let whole = if t.size == 0 { Some(0) } else { (bytes == cut).then_some(n) };
    prop_assert_eq!(t.elements_in(cut), whole);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn shapes_move_data_like_the_flattened_type_map(d in desc(), count in 0..4usize, cut in 0..10_000usize, seed: u8) {
        check(&d, count, cut, seed)?;
    }
}

//! The derived-datatype constructors (MPI 3.1 section 4.1.2-4.1.7, and MPI 4.0's large-count
//! `_c` forms) and `MPI_Type_dup`, with the envelope each records for `contents.rs`.

use std::ffi::c_int;

use std::sync::Arc;

use super::array::{self, Distrib};
use super::typemap::{self, Overflow, TypeMap};
use super::{map_of, Envelope};
use crate::abi::*;
use crate::error::{call, err, Res};
use crate::state::Mpi;

fn count(n: i64, what: &str) -> Res<usize> {
    usize::try_from(n).map_err(|_| err(MPI_ERR_COUNT, format!("negative {what} {n}")))
}

fn arg(n: i64, what: &str) -> Res<usize> {
    usize::try_from(n).map_err(|_| err(MPI_ERR_ARG, format!("negative {what} {n}")))
}

/// A constructor's count argument: `int` in the MPI 3 functions, `MPI_Count` in the `_c` ones.
trait Arg: Copy + Into<i64> {
    /// Whether the contents record counts and displacements as large counts.
    const LARGE: bool;
}

impl Arg for c_int {
    const LARGE: bool = false;
}

impl Arg for MPI_Count {
    const LARGE: bool = true;
}

/// `n` values from a C array of counts or displacements, as `i64`.
unsafe fn wide<T: Copy + Into<i64>>(p: *const T, n: usize, what: &str) -> Res<Vec<i64>> {
    Ok(array(p, n, what)?.iter().map(|&x| x.into()).collect())
}

/// The envelope of a constructor, its arguments pushed in the order MPI lists them: counts go
/// to the integers (addresses to the addresses) of an MPI 3 constructor, to the large counts
/// of a `_c` one.
struct Contents {
    env: Envelope,
    large: bool,
}

impl Contents {
    fn new<C: Arg>(combiner: c_int) -> Contents {
        Contents { env: Envelope { combiner, ..Default::default() }, large: C::LARGE }
    }

    fn int(mut self, v: c_int) -> Self {
        self.env.ints.push(v);
        self
    }

    fn ints(mut self, v: &[c_int]) -> Self {
        self.env.ints.extend_from_slice(v);
        self
    }

    fn counts(mut self, v: &[i64]) -> Self {
        match self.large {
            true => self.env.counts.extend_from_slice(v),
            // An MPI 3 constructor's counts came from ints.
            false => self.env.ints.extend(v.iter().map(|&x| x as c_int)),
        }
        self
    }

    fn addresses(mut self, v: &[i64]) -> Self {
        match self.large {
            true => self.env.counts.extend_from_slice(v),
            false => self.env.aints.extend_from_slice(v),
        }
        self
    }

    fn types(mut self, v: &[MPI_Datatype]) -> Res<Envelope> {
        self.env.types.extend_from_slice(v);
        Ok(self.env)
    }
}

/// `n` values from a C array (NULL allowed when `n` is 0).
unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("NULL {what} for {n} entries")));
    }
    // SAFETY: the program passes `n` entries, as MPI requires.
    Ok(std::slice::from_raw_parts(p, n))
}

/// What a constructor builds: a type, a bad argument, or a type too big for 64 bits.
type Built = Res<Result<TypeMap, Overflow>>;

/// Stores a new type built by `build` from the type maps of `envelope.types`.
unsafe fn create(
    name: &'static str,
    newtype: *mut MPI_Datatype,
    envelope: impl FnOnce() -> Res<Envelope>,
    build: impl FnOnce(&[Arc<TypeMap>]) -> Built,
) -> c_int {
    call(name, MPI_COMM_WORLD, |m: &mut Mpi| {
        if newtype.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL newtype"));
        }
        let env = envelope()?;
        let maps = env.types.iter().map(|&t| map_of(m, t)).collect::<Res<Vec<_>>>()?;
        let map = build(&maps)?.map_err(|Overflow| {
            err(
                MPI_ERR_ARG,
                format!(
                    "{name} with integers {:?} and addresses {:?}: the type's size or bounds overflow 64 bits",
                    env.ints, env.aints
                ),
            )
        })?;
        *newtype = m.types.add(map, env, &m.attrs);
        Ok(())
    })
}

fn env(combiner: c_int, ints: Vec<c_int>, aints: Vec<MPI_Aint>, types: Vec<MPI_Datatype>) -> Res<Envelope> {
    Ok(Envelope { combiner, ints, aints, types, ..Default::default() })
}

counted! {
    [PMPI_Type_contiguous; Count = c_int] [PMPI_Type_contiguous_c; Count = MPI_Count]
    fn(n: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        create(
            FUNCTION,
            newtype,
            || Contents::new::<Count>(MPI_COMBINER_CONTIGUOUS).counts(&[n.into()]).types(&[oldtype]),
            |old| Ok(typemap::contiguous(count(n.into(), "count")?, &old[0])),
        )
    }
}

counted! {
    [PMPI_Type_vector; Count = c_int] [PMPI_Type_vector_c; Count = MPI_Count]
    fn(n: Count, blocklength: Count, stride: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        let (n, blocklength, stride) = (n.into(), blocklength.into(), stride.into());
        create(
            FUNCTION,
            newtype,
            || Contents::new::<Count>(MPI_COMBINER_VECTOR).counts(&[n, blocklength, stride]).types(&[oldtype]),
            |old| {
                let (n, blocklength) = (count(n, "count")?, arg(blocklength, "blocklength")?);
                Ok(stride
                    .checked_mul(old[0].extent())
                    .ok_or(Overflow)
                    .and_then(|bytes| typemap::hvector(n, blocklength, bytes, &old[0])))
            },
        )
    }
}

counted! {
    [PMPI_Type_create_hvector; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_hvector; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_create_hvector_c; Count = MPI_Count, Disp = MPI_Count]
    fn(n: Count, blocklength: Count, stride: Disp, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        let (n, blocklength) = (n.into(), blocklength.into());
        create(
            FUNCTION,
            newtype,
            || Contents::new::<Count>(MPI_COMBINER_HVECTOR).counts(&[n, blocklength]).addresses(&[stride]).types(&[oldtype]),
            |old| Ok(typemap::hvector(count(n, "count")?, arg(blocklength, "blocklength")?, stride, &old[0])),
        )
    }
}

/// Blocks `(length, displacement in units of `unit` bytes, or of the old extent if None)`.
fn blocks(lens: &[i64], displs: &[i64], unit: Option<i64>, old: &Arc<TypeMap>) -> Built {
    let unit = unit.unwrap_or_else(|| old.extent());
    let mut b = Vec::with_capacity(lens.len());
    for (&l, &d) in lens.iter().zip(displs) {
        let Some(disp) = d.checked_mul(unit) else { return Ok(Err(Overflow)) };
        b.push((arg(l, "blocklength")?, disp));
    }
    Ok(typemap::hindexed(&b, old))
}

/// The lengths and displacements of an indexed constructor's `n` blocks.
unsafe fn block_arrays<C: Copy + Into<i64>, D: Copy + Into<i64>>(
    n: i64,
    blocklengths: *const C,
    displacements: *const D,
) -> Res<(Vec<i64>, Vec<i64>)> {
    let k = count(n, "count")?;
    Ok((wide(blocklengths, k, "blocklengths")?, wide(displacements, k, "displacements")?))
}

/// MPI_Type_indexed (`unit` None: displacements in extents of the old type) and
/// MPI_Type_create_hindexed (`Some(1)`: in bytes), in either form.
unsafe fn indexed<C: Arg, D: Copy + Into<i64>>(
    name: &'static str,
    n: C,
    (blocklengths, displacements): (*const C, *const D),
    unit: Option<i64>,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = n.into();
    let arrays = || block_arrays(n, blocklengths, displacements);
    create(
        name,
        newtype,
        || {
            let (l, d) = arrays()?;
            let contents =
                Contents::new::<C>(if unit.is_none() { MPI_COMBINER_INDEXED } else { MPI_COMBINER_HINDEXED });
            let contents = contents.counts(&[n]).counts(&l);
            match unit {
                None => contents.counts(&d),
                Some(_) => contents.addresses(&d),
            }
            .types(&[oldtype])
        },
        |old| {
            let (l, d) = arrays()?;
            blocks(&l, &d, unit, &old[0])
        },
    )
}

counted! {
    [PMPI_Type_indexed; Count = c_int] [PMPI_Type_indexed_c; Count = MPI_Count]
    fn(
        n: Count,
        blocklengths: *const Count,
        displacements: *const Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) -> c_int {
        indexed(FUNCTION, n, (blocklengths, displacements), None, oldtype, newtype)
    }
}

counted! {
    [PMPI_Type_create_hindexed; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_hindexed; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_create_hindexed_c; Count = MPI_Count, Disp = MPI_Count]
    fn(
        n: Count,
        blocklengths: *const Count,
        displacements: *const Disp,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) -> c_int {
        indexed(FUNCTION, n, (blocklengths, displacements), Some(1), oldtype, newtype)
    }
}

counted! {
    [PMPI_Type_create_indexed_block; Count = c_int] [PMPI_Type_create_indexed_block_c; Count = MPI_Count]
    fn(n: Count, blocklength: Count, displacements: *const Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        let (n, blocklength) = (n.into(), blocklength.into());
        let d = || wide(displacements, count(n, "count")?, "displacements");
        create(
            FUNCTION,
            newtype,
            || Contents::new::<Count>(MPI_COMBINER_INDEXED_BLOCK).counts(&[n, blocklength]).counts(&d()?).types(&[oldtype]),
            |old| {
                let d = d()?;
                blocks(&vec![blocklength; d.len()], &d, None, &old[0])
            },
        )
    }
}

counted! {
    [PMPI_Type_create_hindexed_block; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_create_hindexed_block_c; Count = MPI_Count, Disp = MPI_Count]
    fn(n: Count, blocklength: Count, displacements: *const Disp, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        let (n, blocklength) = (n.into(), blocklength.into());
        let d = || wide(displacements, count(n, "count")?, "displacements");
        create(
            FUNCTION,
            newtype,
            || {
                let contents = Contents::new::<Count>(MPI_COMBINER_HINDEXED_BLOCK).counts(&[n, blocklength]);
                contents.addresses(&d()?).types(&[oldtype])
            },
            |old| {
                let d = d()?;
                blocks(&vec![blocklength; d.len()], &d, Some(1), &old[0])
            },
        )
    }
}

counted! {
    [PMPI_Type_create_struct; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_struct; Count = c_int, Disp = MPI_Aint]
    [PMPI_Type_create_struct_c; Count = MPI_Count, Disp = MPI_Count]
    fn(
        n: Count,
        blocklengths: *const Count,
        displacements: *const Disp,
        types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) -> c_int {
        let n = n.into();
        let args = || -> Res<_> {
            let (l, d) = block_arrays(n, blocklengths, displacements)?;
            Ok((l, d, array(types, count(n, "count")?, "types")?))
        };
        create(
            FUNCTION,
            newtype,
            || {
                let (l, d, t) = args()?;
                Contents::new::<Count>(MPI_COMBINER_STRUCT).counts(&[n]).counts(&l).addresses(&d).types(t)
            },
            |maps| {
                let (l, d, _) = args()?;
                let entries =
                    (0..l.len()).map(|i| Ok((arg(l[i], "blocklength")?, d[i], &maps[i]))).collect::<Res<Vec<_>>>()?;
                Ok(typemap::structure(&entries))
            },
        )
    }
}

fn order(o: c_int) -> Res<bool> {
    match o {
        MPI_ORDER_C => Ok(true),
        MPI_ORDER_FORTRAN => Ok(false),
        o => Err(err(MPI_ERR_ARG, format!("invalid order {o}: MPI_ORDER_C or MPI_ORDER_FORTRAN"))),
    }
}

counted! {
    [PMPI_Type_create_subarray; Count = c_int] [PMPI_Type_create_subarray_c; Count = MPI_Count]
    fn(
        ndims: c_int,
        sizes: *const Count,
        subsizes: *const Count,
        starts: *const Count,
        array_order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) -> c_int {
        let n = ndims.max(0) as usize;
        let args = || -> Res<(Vec<i64>, Vec<i64>, Vec<i64>)> {
            if ndims <= 0 {
                return Err(err(MPI_ERR_ARG, format!("ndims {ndims} must be positive")));
            }
            Ok((wide(sizes, n, "sizes")?, wide(subsizes, n, "subsizes")?, wide(starts, n, "starts")?))
        };
        create(
            FUNCTION,
            newtype,
            || {
                let (s, u, t) = args()?;
                let contents = Contents::new::<Count>(MPI_COMBINER_SUBARRAY).int(ndims);
                contents.counts(&s).counts(&u).counts(&t).int(array_order).types(&[oldtype])
            },
            |old| {
                let (s, u, t) = args()?;
                for d in 0..n {
                    if s[d] <= 0 || u[d] <= 0 || t[d] < 0 || t[d] + u[d] > s[d] {
                        return Err(err(
                            MPI_ERR_ARG,
                            format!("dimension {d}: subsize {} at start {} does not fit in size {}", u[d], t[d], s[d]),
                        ));
                    }
                }
                let v = |a: &[i64]| a.iter().map(|&x| x as usize).collect::<Vec<_>>();
                Ok(array::subarray(&v(&s), &v(&u), &v(&t), order(array_order)?, &old[0]))
            },
        )
    }
}

counted! {
    [PMPI_Type_create_darray; Count = c_int] [PMPI_Type_create_darray_c; Count = MPI_Count]
    fn(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        gsizes: *const Count,
        distribs: *const c_int,
        dargs: *const c_int,
        psizes: *const c_int,
        array_order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) -> c_int {
        let n = ndims.max(0) as usize;
        type Args<'a> = (Vec<i64>, &'a [c_int], &'a [c_int], &'a [c_int]);
        let args = || -> Res<Args> {
            if ndims <= 0 || size <= 0 || rank < 0 || rank >= size {
                return Err(err(MPI_ERR_ARG, format!("darray: ndims {ndims}, size {size}, rank {rank}")));
            }
            let a = |p, w| array(p, n, w);
            Ok((wide(gsizes, n, "gsizes")?, a(distribs, "distribs")?, a(dargs, "dargs")?, a(psizes, "psizes")?))
        };
        create(
            FUNCTION,
            newtype,
            || {
                let (g, d, a, p) = args()?;
                let contents = Contents::new::<Count>(MPI_COMBINER_DARRAY).ints(&[size, rank, ndims]).counts(&g);
                contents.ints(d).ints(a).ints(p).int(array_order).types(&[oldtype])
            },
            |old| {
                let (g, d, a, p) = args()?;
                if p.iter().map(|&x| x as i64).product::<i64>() != size as i64 || p.iter().any(|&x| x <= 0) {
                    return Err(err(MPI_ERR_ARG, format!("darray: process grid {p:?} does not hold {size} processes")));
                }
                let mut dist = Vec::with_capacity(n);
                for i in 0..n {
                    let (gs, ps) = (g[i].max(0) as usize, p[i] as usize);
                    let dflt = a[i] == MPI_DISTRIBUTE_DFLT_DARG;
                    dist.push(match d[i] {
                        MPI_DISTRIBUTE_BLOCK if dflt => Distrib::Block(gs.div_ceil(ps)),
                        MPI_DISTRIBUTE_BLOCK if a[i] as usize * ps >= gs && a[i] > 0 => Distrib::Block(a[i] as usize),
                        MPI_DISTRIBUTE_CYCLIC if dflt => Distrib::Cyclic(1),
                        MPI_DISTRIBUTE_CYCLIC if a[i] > 0 => Distrib::Cyclic(a[i] as usize),
                        MPI_DISTRIBUTE_NONE if ps == 1 => Distrib::None,
                        other => {
                            return Err(err(
                                MPI_ERR_ARG,
                                format!("darray dimension {i}: distribution {other} with argument {} over {ps}", a[i]),
                            ))
                        }
                    });
                }
                let g: Vec<usize> = g.iter().map(|&x| x.max(0) as usize).collect();
                let p: Vec<usize> = p.iter().map(|&x| x as usize).collect();
                Ok(array::darray(rank as usize, &g, &dist, &p, order(array_order)?, &old[0]))
            },
        )
    }
}

counted! {
    [PMPI_Type_create_resized; Count = c_int] [PMPI_Type_create_resized_c; Count = MPI_Count]
    fn(oldtype: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint, newtype: *mut MPI_Datatype) -> c_int {
        create(
            FUNCTION,
            newtype,
            || Contents::new::<Count>(MPI_COMBINER_RESIZED).addresses(&[lb, extent]).types(&[oldtype]),
            |old| Ok(typemap::resized(&old[0], lb, extent)),
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    let rc = create(
        "MPI_Type_dup",
        newtype,
        || env(MPI_COMBINER_DUP, vec![], vec![], vec![oldtype]),
        |old| Ok(Ok((*old[0]).clone())),
    );
    if rc == MPI_SUCCESS {
        // A duplicate of a committed type is committed (MPI 3.1 section 4.1.10).
        crate::state::with(|m| {
            let committed = m.types.get(oldtype).is_none_or(|e| e.committed);
            if let Some(e) = m.types.get_mut(*newtype) {
                e.committed = committed;
            }
        });
        // Copy callbacks may call MPI: they run without the tables held.
        if let Err(e) = crate::attr::copy_type_attrs(oldtype, *newtype) {
            return crate::error::handle("MPI_Type_dup", MPI_COMM_WORLD, e);
        }
    }
    rc
}

//! The derived-datatype constructors (MPI 3.1 section 4.1.2-4.1.7), `MPI_Type_dup`, and what
//! `MPI_Type_get_envelope`/`MPI_Type_get_contents` report about them.

use std::ffi::c_int;

use std::sync::Arc;

use super::array::{self, Distrib};
use super::typemap::{self, Overflow, TypeMap};
use super::{map_of, Envelope};
use crate::abi::*;
use crate::error::{call, err, Res};
use crate::state::Mpi;

fn count(n: c_int, what: &str) -> Res<usize> {
    usize::try_from(n).map_err(|_| err(MPI_ERR_COUNT, format!("negative {what} {n}")))
}

fn arg(n: c_int, what: &str) -> Res<usize> {
    usize::try_from(n).map_err(|_| err(MPI_ERR_ARG, format!("negative {what} {n}")))
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

/// Copies `src` to a C output array (which may be NULL when `src` is empty).
unsafe fn copy_to<T: Copy>(src: &[T], dst: *mut T) -> Res {
    if src.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(err(MPI_ERR_ARG, "NULL output array"));
    }
    // SAFETY: the program gave room for at least `src.len()` entries (checked against max_*).
    std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
    Ok(())
}

fn env(combiner: c_int, ints: Vec<c_int>, aints: Vec<MPI_Aint>, types: Vec<MPI_Datatype>) -> Res<Envelope> {
    Ok(Envelope { combiner, ints, aints, types })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous(n: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    create(
        "MPI_Type_contiguous",
        newtype,
        || env(MPI_COMBINER_CONTIGUOUS, vec![n], vec![], vec![oldtype]),
        |old| Ok(typemap::contiguous(count(n, "count")?, &old[0])),
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_vector(
    n: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        "MPI_Type_vector",
        newtype,
        || env(MPI_COMBINER_VECTOR, vec![n, blocklength, stride], vec![], vec![oldtype]),
        |old| {
            let (n, blocklength) = (count(n, "count")?, arg(blocklength, "blocklength")?);
            Ok((stride as i64)
                .checked_mul(old[0].extent())
                .ok_or(Overflow)
                .and_then(|bytes| typemap::hvector(n, blocklength, bytes, &old[0])))
        },
    )
}

unsafe fn hvector(
    name: &'static str,
    n: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        name,
        newtype,
        || env(MPI_COMBINER_HVECTOR, vec![n, blocklength], vec![stride], vec![oldtype]),
        |old| Ok(typemap::hvector(count(n, "count")?, arg(blocklength, "blocklength")?, stride, &old[0])),
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hvector(
    n: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    hvector("MPI_Type_create_hvector", n, blocklength, stride, oldtype, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hvector(
    n: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    hvector("MPI_Type_hvector", n, blocklength, stride, oldtype, newtype)
}

/// Blocks `(length, displacement in units of `unit` bytes, or of the old extent if None)`.
fn blocks(lens: &[c_int], displs: &[i64], unit: Option<i64>, old: &Arc<TypeMap>) -> Built {
    let unit = unit.unwrap_or_else(|| old.extent());
    let mut b = Vec::with_capacity(lens.len());
    for (&l, &d) in lens.iter().zip(displs) {
        let Some(disp) = d.checked_mul(unit) else { return Ok(Err(Overflow)) };
        b.push((arg(l, "blocklength")?, disp));
    }
    Ok(typemap::hindexed(&b, old))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_indexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        "MPI_Type_indexed",
        newtype,
        || {
            let k = count(n, "count")?;
            let (l, d) = (array(blocklengths, k, "blocklengths")?, array(displacements, k, "displacements")?);
            env(MPI_COMBINER_INDEXED, [&[n], l, d].concat(), vec![], vec![oldtype])
        },
        |old| {
            let k = n as usize;
            let (l, d) = (array(blocklengths, k, "blocklengths")?, array(displacements, k, "displacements")?);
            blocks(l, &d.iter().map(|&d| d as i64).collect::<Vec<_>>(), None, &old[0])
        },
    )
}

unsafe fn hindexed(
    name: &'static str,
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        name,
        newtype,
        || {
            let k = count(n, "count")?;
            let (l, d) = (array(blocklengths, k, "blocklengths")?, array(displacements, k, "displacements")?);
            env(MPI_COMBINER_HINDEXED, [&[n], l].concat(), d.to_vec(), vec![oldtype])
        },
        |old| {
            let k = n as usize;
            blocks(array(blocklengths, k, "")?, array(displacements, k, "")?, Some(1), &old[0])
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    hindexed("MPI_Type_create_hindexed", n, blocklengths, displacements, oldtype, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hindexed(
    n: c_int,
    blocklengths: *mut c_int,
    displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    hindexed("MPI_Type_hindexed", n, blocklengths, displacements, oldtype, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_indexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        "MPI_Type_create_indexed_block",
        newtype,
        || {
            let d = array(displacements, count(n, "count")?, "displacements")?;
            env(MPI_COMBINER_INDEXED_BLOCK, [&[n, blocklength], d].concat(), vec![], vec![oldtype])
        },
        |old| {
            let d: Vec<i64> = array(displacements, n as usize, "")?.iter().map(|&d| d as i64).collect();
            blocks(&vec![blocklength; d.len()], &d, None, &old[0])
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        "MPI_Type_create_hindexed_block",
        newtype,
        || {
            let d = array(displacements, count(n, "count")?, "displacements")?;
            env(MPI_COMBINER_HINDEXED_BLOCK, vec![n, blocklength], d.to_vec(), vec![oldtype])
        },
        |old| blocks(&vec![blocklength; n as usize], array(displacements, n as usize, "")?, Some(1), &old[0]),
    )
}

unsafe fn structure(
    name: &'static str,
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        name,
        newtype,
        || {
            let k = count(n, "count")?;
            let l = array(blocklengths, k, "blocklengths")?;
            let d = array(displacements, k, "displacements")?;
            env(MPI_COMBINER_STRUCT, [&[n], l].concat(), d.to_vec(), array(types, k, "types")?.to_vec())
        },
        |maps| {
            let k = n as usize;
            let (l, d) = (array(blocklengths, k, "")?, array(displacements, k, "")?);
            let entries = (0..k).map(|i| Ok((arg(l[i], "blocklength")?, d[i], &maps[i]))).collect::<Res<Vec<_>>>()?;
            Ok(typemap::structure(&entries))
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_struct(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    structure("MPI_Type_create_struct", n, blocklengths, displacements, types, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_struct(
    n: c_int,
    blocklengths: *mut c_int,
    displacements: *mut MPI_Aint,
    types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    structure("MPI_Type_struct", n, blocklengths, displacements, types, newtype)
}

fn order(o: c_int) -> Res<bool> {
    match o {
        MPI_ORDER_C => Ok(true),
        MPI_ORDER_FORTRAN => Ok(false),
        o => Err(err(MPI_ERR_ARG, format!("invalid order {o}: MPI_ORDER_C or MPI_ORDER_FORTRAN"))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    array_order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = ndims.max(0) as usize;
    let args = || -> Res<(&[c_int], &[c_int], &[c_int])> {
        if ndims <= 0 {
            return Err(err(MPI_ERR_ARG, format!("ndims {ndims} must be positive")));
        }
        Ok((array(sizes, n, "sizes")?, array(subsizes, n, "subsizes")?, array(starts, n, "starts")?))
    };
    create(
        "MPI_Type_create_subarray",
        newtype,
        || {
            let (s, u, t) = args()?;
            env(MPI_COMBINER_SUBARRAY, [&[ndims], s, u, t, &[array_order]].concat(), vec![], vec![oldtype])
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
            let v = |a: &[c_int]| a.iter().map(|&x| x as usize).collect::<Vec<_>>();
            Ok(array::subarray(&v(s), &v(u), &v(t), order(array_order)?, &old[0]))
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    array_order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = ndims.max(0) as usize;
    type Args<'a> = (&'a [c_int], &'a [c_int], &'a [c_int], &'a [c_int]);
    let args = || -> Res<Args> {
        if ndims <= 0 || size <= 0 || rank < 0 || rank >= size {
            return Err(err(MPI_ERR_ARG, format!("darray: ndims {ndims}, size {size}, rank {rank}")));
        }
        let a = |p, w| array(p, n, w);
        Ok((a(gsizes, "gsizes")?, a(distribs, "distribs")?, a(dargs, "dargs")?, a(psizes, "psizes")?))
    };
    create(
        "MPI_Type_create_darray",
        newtype,
        || {
            let (g, d, a, p) = args()?;
            let ints = [&[size, rank, ndims], g, d, a, p, &[array_order]].concat();
            env(MPI_COMBINER_DARRAY, ints, vec![], vec![oldtype])
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_resized(
    oldtype: MPI_Datatype,
    lb: MPI_Aint,
    extent: MPI_Aint,
    newtype: *mut MPI_Datatype,
) -> c_int {
    create(
        "MPI_Type_create_resized",
        newtype,
        || env(MPI_COMBINER_RESIZED, vec![], vec![lb, extent], vec![oldtype]),
        |old| Ok(typemap::resized(&old[0], lb, extent)),
    )
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    call("MPI_Type_get_envelope", MPI_COMM_WORLD, |m| {
        let e = match m.types.get(datatype) {
            Some(e) => e.envelope.clone(),
            None => {
                map_of(m, datatype)?;
                Envelope { combiner: MPI_COMBINER_NAMED, ..Default::default() }
            }
        };
        if num_integers.is_null() || num_addresses.is_null() || num_datatypes.is_null() || combiner.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL output pointer"));
        }
        *num_integers = e.ints.len() as c_int;
        *num_addresses = e.aints.len() as c_int;
        *num_datatypes = e.types.len() as c_int;
        *combiner = e.combiner;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_get_contents", MPI_COMM_WORLD, |m| {
        let e = match m.types.get(datatype) {
            Some(e) => e.envelope.clone(),
            None => return Err(err(MPI_ERR_TYPE, format!("datatype {datatype:#x} is predefined: it has no contents"))),
        };
        let fits = |have: usize, max: c_int| max >= 0 && have <= max as usize;
        if !fits(e.ints.len(), max_integers)
            || !fits(e.aints.len(), max_addresses)
            || !fits(e.types.len(), max_datatypes)
        {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "contents need {} integers, {} addresses, {} datatypes; room for {max_integers}, {max_addresses}, {max_datatypes}",
                    e.ints.len(),
                    e.aints.len(),
                    e.types.len()
                ),
            ));
        }
        copy_to(&e.ints, integers)?;
        copy_to(&e.aints, addresses)?;
        copy_to(&e.types, datatypes)?;
        // Derived types handed out are new references the program frees (MPI 3.1 4.1.13).
        for &t in &e.types {
            m.types.retain(t);
        }
        Ok(())
    })
}

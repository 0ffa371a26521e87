//! `MPI_Type_create_f90_integer/real/complex` (MPI 3.1 section 17.1.9): the parameterized
//! Fortran 90 types. Each names the smallest predefined sized type that holds the requested
//! decimal range `r` (and precision `p`), as MPICH's table does: integers of 1, 2, 4, 8 bytes
//! for `r` up to 2, 4, 9, 18; reals of 4 and 8 bytes for `(p, r)` up to (6, 37) and (15, 307),
//! complexes twice that. The result is predefined: the same arguments give the same handle, it
//! is usable without a commit, `MPI_Type_get_envelope` reports the F90 combiner and its
//! arguments, and it cannot be freed.

use std::ffi::c_int;

use super::{map_of, Envelope};
use crate::abi::*;
use crate::error::{call, err, Res};
use crate::state::Mpi;

/// The sized type MPICH 4.0.2 picks for `MPI_Type_create_f90_<kind>(p, r)`, or why none fits.
/// MPI_UNDEFINED (negative) and 0 ask for nothing, so they fit the smallest type.
fn sized_type(combiner: c_int, p: c_int, r: c_int) -> Res<MPI_Datatype> {
    let none = |what: &str| err(MPI_ERR_OTHER, format!("no Fortran {what} type has precision {p} and range {r}"));
    Ok(match combiner {
        MPI_COMBINER_F90_INTEGER => match r {
            ..=2 => MPI_INTEGER1,
            3..=4 => MPI_INTEGER2,
            5..=9 => MPI_INTEGER4,
            10..=18 => MPI_INTEGER8,
            _ => return Err(err(MPI_ERR_OTHER, format!("no Fortran integer type has range {r} (18 at most)"))),
        },
        _ => {
            let complex = combiner == MPI_COMBINER_F90_COMPLEX;
            match (p <= 6 && r <= 37, p <= 15 && r <= 307, complex) {
                (true, _, false) => MPI_REAL4,
                (true, _, true) => MPI_COMPLEX8,
                (false, true, false) => MPI_REAL8,
                (false, true, true) => MPI_COMPLEX16,
                (false, false, _) => return Err(none(if complex { "complex" } else { "real" })),
            }
        }
    })
}

/// The cached handle for these arguments, made on first use.
unsafe fn create(name: &'static str, combiner: c_int, ints: Vec<c_int>, newtype: *mut MPI_Datatype) -> c_int {
    call(name, MPI_COMM_WORLD, |m| {
        if newtype.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL newtype"));
        }
        let (p, r) = match ints[..] {
            [r] => (0, r),
            [p, r] => (p, r),
            _ => unreachable!("one or two F90 arguments"),
        };
        let key = (combiner, p, r);
        if let Some(&t) = m.types.f90.get(&key) {
            *newtype = t;
            return Ok(());
        }
        let map = map_of(m, sized_type(combiner, p, r)?)?;
        let t = m.types.add((*map).clone(), Envelope { combiner, ints, ..Default::default() }, &m.attrs);
        m.types.get_mut(t).expect("just added").committed = true;
        m.types.f90.insert(key, t);
        *newtype = t;
        Ok(())
    })
}

/// The sized type an F90 type stands for (what predefined operators act on), else `t` itself.
pub(crate) fn predefined_base(m: &Mpi, t: MPI_Datatype) -> MPI_Datatype {
    match m.types.get(t) {
        Some(e) if is_f90(e.envelope.combiner) => {
            let (p, r) = (e.envelope.ints[0], *e.envelope.ints.last().expect("r"));
            sized_type(e.envelope.combiner, p, r).expect("made from these arguments")
        }
        _ => t,
    }
}

/// Whether `combiner` is one of the predefined parameterized types made here.
pub(crate) fn is_f90(combiner: c_int) -> bool {
    matches!(combiner, MPI_COMBINER_F90_INTEGER | MPI_COMBINER_F90_REAL | MPI_COMBINER_F90_COMPLEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    create("MPI_Type_create_f90_integer", MPI_COMBINER_F90_INTEGER, vec![r], newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    create("MPI_Type_create_f90_real", MPI_COMBINER_F90_REAL, vec![p, r], newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    create("MPI_Type_create_f90_complex", MPI_COMBINER_F90_COMPLEX, vec![p, r], newtype)
}

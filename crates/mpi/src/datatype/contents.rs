//! What `MPI_Type_get_envelope`/`MPI_Type_get_contents` and their large-count forms report
//! about a derived datatype: the envelope its constructor recorded (`create.rs`).

use std::ffi::c_int;

use super::{map_of, Envelope};
use crate::abi::*;
use crate::error::{call, err, Res};
use crate::state::Mpi;

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

/// The envelope of `datatype` (a predefined one's is `MPI_COMBINER_NAMED`).
fn envelope_of(m: &Mpi, datatype: MPI_Datatype) -> Res<Envelope> {
    match m.types.get(datatype) {
        Some(e) => Ok(e.envelope.clone()),
        None => {
            map_of(m, datatype)?;
            Ok(Envelope { combiner: MPI_COMBINER_NAMED, ..Default::default() })
        }
    }
}

/// The MPI 3 decoders cannot report large counts: a type made by a `_c` constructor needs
/// the `_c` decoders (MPICH 4.0.2 fails the call too).
fn no_large_counts(e: &Envelope, function: &str) -> Res {
    if e.counts.is_empty() {
        return Ok(());
    }
    Err(err(
        MPI_ERR_TYPE,
        format!(
            "the datatype was made by a large-count constructor: its {} large counts need {function}_c",
            e.counts.len()
        ),
    ))
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
        let e = envelope_of(m, datatype)?;
        if num_integers.is_null() || num_addresses.is_null() || num_datatypes.is_null() || combiner.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL output pointer"));
        }
        no_large_counts(&e, "MPI_Type_get_envelope")?;
        *num_integers = e.ints.len() as c_int;
        *num_addresses = e.aints.len() as c_int;
        *num_datatypes = e.types.len() as c_int;
        *combiner = e.combiner;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope_c(
    datatype: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> c_int {
    call("MPI_Type_get_envelope_c", MPI_COMM_WORLD, |m| {
        let e = envelope_of(m, datatype)?;
        let outs = [num_integers, num_addresses, num_large_counts, num_datatypes];
        if outs.iter().any(|p| p.is_null()) || combiner.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL output pointer"));
        }
        for (p, n) in outs.into_iter().zip([e.ints.len(), e.aints.len(), e.counts.len(), e.types.len()]) {
            *p = n as MPI_Count;
        }
        *combiner = e.combiner;
        Ok(())
    })
}

/// MPI_Type_get_contents(_c): `e`'s arrays into the program's, each checked against its room.
unsafe fn contents(
    m: &mut Mpi,
    datatype: MPI_Datatype,
    max: [i64; 4],
    (integers, addresses, counts, datatypes): (*mut c_int, *mut MPI_Aint, *mut MPI_Count, *mut MPI_Datatype),
    function: &str,
) -> Res {
    let e = match m.types.get(datatype) {
        Some(e) => e.envelope.clone(),
        None => return Err(err(MPI_ERR_TYPE, format!("datatype {datatype:#x} is predefined: it has no contents"))),
    };
    if counts.is_null() {
        no_large_counts(&e, function)?;
    }
    let have = [e.ints.len(), e.aints.len(), e.counts.len(), e.types.len()];
    if have.iter().zip(max).any(|(&have, max)| max < 0 || have as i64 > max) {
        let [i, a, c, t] = have;
        let [mi, ma, mc, mt] = max;
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "contents need {i} integers, {a} addresses, {c} large counts, {t} datatypes; \
                 room for {mi}, {ma}, {mc}, {mt}"
            ),
        ));
    }
    copy_to(&e.ints, integers)?;
    copy_to(&e.aints, addresses)?;
    copy_to(&e.counts, counts)?;
    copy_to(&e.types, datatypes)?;
    // Derived types handed out are new references the program frees (MPI 3.1 4.1.13).
    for &t in &e.types {
        m.types.retain(t);
    }
    Ok(())
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
        let max = [max_integers as i64, max_addresses as i64, 0, max_datatypes as i64];
        let out = (integers, addresses, std::ptr::null_mut(), datatypes);
        contents(m, datatype, max, out, "MPI_Type_get_contents")
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents_c(
    datatype: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    large_counts: *mut MPI_Count,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_get_contents_c", MPI_COMM_WORLD, |m| {
        let max = [max_integers, max_addresses, max_large_counts, max_datatypes];
        contents(m, datatype, max, (integers, addresses, large_counts, datatypes), "MPI_Type_get_contents")
    })
}

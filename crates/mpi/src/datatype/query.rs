//! Questions about datatypes (size, bounds, counts in a status), their life (commit,
//! free), addresses, and packing: `MPI_Pack`/`MPI_Unpack` in the native representation and
//! the `_external` forms in "external32".

use std::ffi::{c_char, c_int, c_void, CStr};

use super::{layout_in, map_of, pack, Layout};
use crate::abi::*;
use crate::error::{bad_comm, call, err, Res};
use crate::state::Mpi;

/// Stores `v` through an out-pointer from C, refusing NULL.
unsafe fn out<T>(p: *mut T, v: T, what: &str) -> Res {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("NULL pointer for {what}")));
    }
    // SAFETY: checked non-null; the program passes a valid pointer, as MPI requires.
    *p = v;
    Ok(())
}

counted! {
    // An int size that does not fit is MPI_UNDEFINED (MPI 3.1 section 4.1.5).
    [PMPI_Type_size; Count = c_int] [PMPI_Type_size_x; Count = MPI_Count] [PMPI_Type_size_c; Count = MPI_Count]
    fn(datatype: MPI_Datatype, size: *mut Count) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            out(size, Count::try_from(map_of(m, datatype)?.size).unwrap_or(MPI_UNDEFINED as Count), "size")
        })
    }
}

macro_rules! bounds_fn {
    ($name:ident, $label:literal, $ty:ty, $lb:ident, $ext:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(datatype: MPI_Datatype, lb: *mut $ty, extent: *mut $ty) -> c_int {
            call($label, MPI_COMM_WORLD, |m| {
                let t = map_of(m, datatype)?;
                out(lb, t.$lb as $ty, "lb")?;
                out(extent, t.$ext() as $ty, "extent")
            })
        }
    };
}

bounds_fn!(PMPI_Type_get_extent, "MPI_Type_get_extent", MPI_Aint, lb, extent);
bounds_fn!(PMPI_Type_get_extent_x, "MPI_Type_get_extent_x", MPI_Count, lb, extent);
bounds_fn!(PMPI_Type_get_extent_c, "MPI_Type_get_extent_c", MPI_Count, lb, extent);
bounds_fn!(PMPI_Type_get_true_extent, "MPI_Type_get_true_extent", MPI_Aint, true_lb, true_extent);
bounds_fn!(PMPI_Type_get_true_extent_x, "MPI_Type_get_true_extent_x", MPI_Count, true_lb, true_extent);
bounds_fn!(PMPI_Type_get_true_extent_c, "MPI_Type_get_true_extent_c", MPI_Count, true_lb, true_extent);

// The MPI-1 forms, removed in MPI 3.0 but still exported by MPICH 4.0.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    call("MPI_Type_extent", MPI_COMM_WORLD, |m| out(extent, map_of(m, datatype)?.extent(), "extent"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_lb(datatype: MPI_Datatype, lb: *mut MPI_Aint) -> c_int {
    call("MPI_Type_lb", MPI_COMM_WORLD, |m| out(lb, map_of(m, datatype)?.lb, "lb"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_ub(datatype: MPI_Datatype, ub: *mut MPI_Aint) -> c_int {
    call("MPI_Type_ub", MPI_COMM_WORLD, |m| out(ub, map_of(m, datatype)?.ub, "ub"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_commit", MPI_COMM_WORLD, |m| {
        if datatype.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL datatype pointer"));
        }
        let t = *datatype;
        match m.types.get_mut(t) {
            Some(e) => e.committed = true,
            None => drop(map_of(m, t)?),
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    // The type goes with its last reference (a derived type built from it, a persistent
    // request may hold it), as in MPICH; its attributes' delete callbacks then, which may call
    // MPI: after the call, without the tables held.
    let rc = call("MPI_Type_free", MPI_COMM_WORLD, |m| {
        if datatype.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL datatype pointer"));
        }
        let t = *datatype;
        match m.types.get(t) {
            None => {
                map_of(m, t)?;
                return Err(err(MPI_ERR_TYPE, format!("predefined datatype {t:#x} cannot be freed")));
            }
            Some(e) if super::f90::is_f90(e.envelope.combiner) => {
                return Err(err(
                    MPI_ERR_TYPE,
                    format!("datatype {t:#x} is a predefined Fortran 90 type: it cannot be freed"),
                ));
            }
            Some(_) => {}
        }
        m.types.release(t, &m.attrs);
        *datatype = MPI_DATATYPE_NULL;
        Ok(())
    });
    crate::attr::reap("MPI_Type_free");
    rc
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_match_size", MPI_COMM_WORLD, |_| {
        let t = match (typeclass, size) {
            (MPI_TYPECLASS_REAL, 4) => MPI_REAL4,
            (MPI_TYPECLASS_REAL, 8) => MPI_REAL8,
            (MPI_TYPECLASS_REAL, 16) => MPI_REAL16,
            (MPI_TYPECLASS_INTEGER, 1) => MPI_INTEGER1,
            (MPI_TYPECLASS_INTEGER, 2) => MPI_INTEGER2,
            (MPI_TYPECLASS_INTEGER, 4) => MPI_INTEGER4,
            (MPI_TYPECLASS_INTEGER, 8) => MPI_INTEGER8,
            (MPI_TYPECLASS_COMPLEX, 8) => MPI_COMPLEX8,
            (MPI_TYPECLASS_COMPLEX, 16) => MPI_COMPLEX16,
            (MPI_TYPECLASS_COMPLEX, 32) => MPI_COMPLEX32,
            _ => return Err(err(MPI_ERR_ARG, format!("no predefined type of class {typeclass} and size {size}"))),
        };
        out(datatype, t, "datatype")
    })
}

/// Whole elements of `t` in a status's byte count, or MPI_UNDEFINED.
fn count_in(m: &Mpi, status: &MPI_Status, t: MPI_Datatype) -> Res<MPI_Count> {
    let size = map_of(m, t)?.size as i64;
    let bytes = status.byte_count();
    Ok(match size {
        0 if bytes == 0 => 0,
        0 => MPI_UNDEFINED as MPI_Count,
        s if bytes % s == 0 => bytes / s,
        _ => MPI_UNDEFINED as MPI_Count,
    })
}

/// Basic elements in a status's byte count, or MPI_UNDEFINED if one is cut.
fn elements_in(m: &Mpi, status: &MPI_Status, t: MPI_Datatype) -> Res<MPI_Count> {
    let map = map_of(m, t)?;
    let n = usize::try_from(status.byte_count()).ok().and_then(|b| map.elements_in(b));
    Ok(n.map_or(MPI_UNDEFINED as MPI_Count, |n| n as MPI_Count))
}

unsafe fn status_ref<'a>(status: *const MPI_Status) -> Res<&'a MPI_Status> {
    if status.is_null() || status as isize == MPI_STATUS_IGNORE {
        return Err(err(MPI_ERR_ARG, "a status is needed, not NULL or MPI_STATUS_IGNORE"));
    }
    Ok(&*status)
}

counted! {
    // An int count that does not fit is MPI_UNDEFINED.
    [PMPI_Get_count; Count = c_int] [PMPI_Get_count_c; Count = MPI_Count]
    fn(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut Count) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            let n = count_in(m, status_ref(status)?, datatype)?;
            out(count, Count::try_from(n).unwrap_or(MPI_UNDEFINED as Count), "count")
        })
    }
}

counted! {
    [PMPI_Get_elements; Count = c_int] [PMPI_Get_elements_x; Count = MPI_Count] [PMPI_Get_elements_c; Count = MPI_Count]
    fn(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut Count) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            let n = elements_in(m, status_ref(status)?, datatype)?;
            out(count, Count::try_from(n).unwrap_or(MPI_UNDEFINED as Count), "count")
        })
    }
}

/// MPI_Status_set_elements(_x) as MPICH 4.0.2 does it: the status records `n` times the
/// datatype's size in bytes, so `n` counts instances of the datatype, not basic elements (for a
/// predefined type the two agree). MPI_Get_count of the same datatype then gives `n` back, and
/// MPI_Get_elements the basic elements of `n` instances.
unsafe fn set_elements(m: &Mpi, status: *mut MPI_Status, t: MPI_Datatype, n: MPI_Count) -> Res {
    if n < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative count {n}")));
    }
    let size = map_of(m, t)?.size as i64;
    let bytes = n.checked_mul(size).ok_or_else(|| {
        err(MPI_ERR_COUNT, format!("{n} instances of datatype {t:#x} are more bytes than 64 bits count"))
    })?;
    if !status.is_null() && status as isize != MPI_STATUS_IGNORE {
        (*status).set_byte_count(bytes);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: c_int,
) -> c_int {
    call("MPI_Status_set_elements", MPI_COMM_WORLD, |m| set_elements(m, status, datatype, count as MPI_Count))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements_x(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: MPI_Count,
) -> c_int {
    call("MPI_Status_set_elements_x", MPI_COMM_WORLD, |m| set_elements(m, status, datatype, count))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    call("MPI_Get_address", MPI_COMM_WORLD, |_| out(address, location as MPI_Aint, "address"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Address(location: *mut c_void, address: *mut MPI_Aint) -> c_int {
    PMPI_Get_address(location, address)
}

#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

/// Bytes of `count` (not negative) instances of `map` in external32.
fn external32_bytes(map: &super::typemap::TypeMap, count: i64) -> Res<usize> {
    pack::external32_size(map, count as usize)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("count {count}: more external32 bytes than memory holds")))
}

/// Checks a pack position and room: `need` bytes at `*position` of a `size`-byte buffer.
unsafe fn room(position: *const i64, need: usize, size: i64, what: &str) -> Res<usize> {
    if position.is_null() {
        return Err(err(MPI_ERR_ARG, "NULL position"));
    }
    let pos = *position;
    if pos < 0 || pos > size || (size - pos) < need as i64 {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("{what}: {need} bytes at position {pos} do not fit in {size} bytes"),
        ));
    }
    Ok(pos as usize)
}

/// Packs (or, with `external`, converts to external32) into `outbuf` at `*pos`.
unsafe fn pack_into(
    m: &Mpi,
    inbuf: *const c_void,
    count: i64,
    t: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    pos: *mut i64,
    external: bool,
) -> Res {
    let l = layout_in(m, t)?;
    let v = super::view(&l, inbuf, count, super::Dir::Read)?;
    let map = map_of(m, t)?;
    let need = if external { external32_bytes(&map, count)? } else { v.len() };
    let at = room(pos, need, outsize, "MPI_Pack")?;
    if need > 0 {
        let dst = std::slice::from_raw_parts_mut((outbuf as *mut u8).add(at), need);
        if external {
            pack::native_to_external(&map, count as usize, v.bytes(), dst);
        } else {
            dst.copy_from_slice(v.bytes());
        }
    }
    *pos += need as i64;
    Ok(())
}

/// The inverse of [`pack_into`].
unsafe fn unpack_from(
    m: &Mpi,
    inbuf: *const c_void,
    insize: i64,
    pos: *mut i64,
    outbuf: *mut c_void,
    count: i64,
    t: MPI_Datatype,
    external: bool,
) -> Res {
    let l = layout_in(m, t)?;
    let mut v = super::view(&l, outbuf, count, super::Dir::Write)?;
    let map = map_of(m, t)?;
    let need = if external { external32_bytes(&map, count)? } else { v.len() };
    let at = room(pos, need, insize, "MPI_Unpack")?;
    if need > 0 {
        let src = std::slice::from_raw_parts((inbuf as *const u8).add(at), need);
        if external {
            pack::external_to_native(&map, count as usize, src, v.bytes_mut());
        } else {
            v.bytes_mut().copy_from_slice(src);
        }
    }
    let len = v.len();
    v.finish(len);
    *pos += need as i64;
    Ok(())
}

counted! {
    [PMPI_Pack; Count = c_int] [PMPI_Pack_c; Count = MPI_Count]
    fn(
        inbuf: *const c_void,
        incount: Count,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: Count,
        position: *mut Count,
        comm: MPI_Comm,
    ) -> c_int {
        call(FUNCTION, comm, |m| {
            m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
            let mut pos = if position.is_null() { 0 } else { (*position).into() };
            pack_into(m, inbuf, incount.into(), datatype, outbuf, outsize.into(), &mut pos, false)?;
            // Within `outsize`, so it fits.
            out(position, pos as Count, "position")
        })
    }
}

counted! {
    [PMPI_Unpack; Count = c_int] [PMPI_Unpack_c; Count = MPI_Count]
    fn(
        inbuf: *const c_void,
        insize: Count,
        position: *mut Count,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int {
        call(FUNCTION, comm, |m| {
            m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
            let mut pos = if position.is_null() { 0 } else { (*position).into() };
            unpack_from(m, inbuf, insize.into(), &mut pos, outbuf, outcount.into(), datatype, false)?;
            out(position, pos as Count, "position")
        })
    }
}

counted! {
    [PMPI_Pack_size; Count = c_int] [PMPI_Pack_size_c; Count = MPI_Count]
    fn(incount: Count, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut Count) -> c_int {
        call(FUNCTION, comm, |m| {
            m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
            let bytes = Layout::Map(map_of(m, datatype)?).bytes(incount)?;
            let size_of = Count::try_from(bytes).map_err(|_| {
                err(MPI_ERR_ARG, format!("packed size {bytes} does not fit in an int (use MPI_Pack_size_c)"))
            });
            out(size, size_of?, "size")
        })
    }
}

fn check_datarep(datarep: *const c_char) -> Res {
    // SAFETY: checked non-null; the program passes a C string.
    let rep = (!datarep.is_null()).then(|| unsafe { CStr::from_ptr(datarep) }.to_string_lossy().into_owned());
    match rep.as_deref() {
        Some("external32") => Ok(()),
        other => Err(err(MPI_ERR_ARG, format!("data representation {other:?}: only \"external32\" is supported"))),
    }
}

counted! {
    [PMPI_Pack_external; Count = c_int] [PMPI_Pack_external_c; Count = MPI_Count]
    fn(
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: Count,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: MPI_Aint,
        position: *mut MPI_Aint,
    ) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            check_datarep(datarep)?;
            pack_into(m, inbuf, incount.into(), datatype, outbuf, outsize, position, true)
        })
    }
}

counted! {
    [PMPI_Unpack_external; Count = c_int] [PMPI_Unpack_external_c; Count = MPI_Count]
    fn(
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: MPI_Aint,
        position: *mut MPI_Aint,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: MPI_Datatype,
    ) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            check_datarep(datarep)?;
            unpack_from(m, inbuf, insize, position, outbuf, outcount.into(), datatype, true)
        })
    }
}

counted! {
    [PMPI_Pack_external_size; Count = c_int] [PMPI_Pack_external_size_c; Count = MPI_Count]
    fn(datarep: *const c_char, incount: Count, datatype: MPI_Datatype, size: *mut MPI_Aint) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            check_datarep(datarep)?;
            let incount = i64::from(incount);
            if incount < 0 {
                return Err(err(MPI_ERR_COUNT, format!("negative count {incount}")));
            }
            out(size, external32_bytes(&*map_of(m, datatype)?, incount)? as MPI_Aint, "size")
        })
    }
}

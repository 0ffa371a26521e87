//! Datatype names: MPI_Type_set_name and MPI_Type_get_name. A derived type keeps its name in
//! its table entry; a predefined one is named as MPICH 4.0.2 names it until the program renames
//! it (MPI allows naming predefined types too), and the new name lives in [`Types`].

use std::ffi::{c_char, c_int, CStr};

use super::map_of;
use crate::abi::*;
use crate::error::{call, copy_out, err};

/// The name MPICH 4.0.2 gives each predefined datatype (the output of a program that asks
/// MPICH for all of them): the constant's name, except that MPI_C_FLOAT_COMPLEX is
/// "MPI_C_COMPLEX" (its alias), MPI_LONG_LONG is "MPI_LONG_LONG_INT" (the same handle), and a
/// type not listed (MPICH's MPIX_C_FLOAT16) has the empty name.
const PREDEFINED_NAMES: &[(MPI_Datatype, &str)] = &[
    (MPI_CHAR, "MPI_CHAR"),
    (MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"),
    (MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"),
    (MPI_BYTE, "MPI_BYTE"),
    (MPI_WCHAR, "MPI_WCHAR"),
    (MPI_SHORT, "MPI_SHORT"),
    (MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"),
    (MPI_INT, "MPI_INT"),
    (MPI_UNSIGNED, "MPI_UNSIGNED"),
    (MPI_LONG, "MPI_LONG"),
    (MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"),
    (MPI_FLOAT, "MPI_FLOAT"),
    (MPI_DOUBLE, "MPI_DOUBLE"),
    (MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"),
    (MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT"),
    (MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"),
    (MPI_PACKED, "MPI_PACKED"),
    (MPI_LB, "MPI_LB"),
    (MPI_UB, "MPI_UB"),
    (MPI_FLOAT_INT, "MPI_FLOAT_INT"),
    (MPI_DOUBLE_INT, "MPI_DOUBLE_INT"),
    (MPI_LONG_INT, "MPI_LONG_INT"),
    (MPI_SHORT_INT, "MPI_SHORT_INT"),
    (MPI_2INT, "MPI_2INT"),
    (MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT"),
    (MPI_COMPLEX, "MPI_COMPLEX"),
    (MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX"),
    (MPI_LOGICAL, "MPI_LOGICAL"),
    (MPI_REAL, "MPI_REAL"),
    (MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION"),
    (MPI_INTEGER, "MPI_INTEGER"),
    (MPI_2INTEGER, "MPI_2INTEGER"),
    (MPI_2REAL, "MPI_2REAL"),
    (MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION"),
    (MPI_CHARACTER, "MPI_CHARACTER"),
    (MPI_REAL4, "MPI_REAL4"),
    (MPI_REAL8, "MPI_REAL8"),
    (MPI_REAL16, "MPI_REAL16"),
    (MPI_COMPLEX8, "MPI_COMPLEX8"),
    (MPI_COMPLEX16, "MPI_COMPLEX16"),
    (MPI_COMPLEX32, "MPI_COMPLEX32"),
    (MPI_INTEGER1, "MPI_INTEGER1"),
    (MPI_INTEGER2, "MPI_INTEGER2"),
    (MPI_INTEGER4, "MPI_INTEGER4"),
    (MPI_INTEGER8, "MPI_INTEGER8"),
    (MPI_INT8_T, "MPI_INT8_T"),
    (MPI_INT16_T, "MPI_INT16_T"),
    (MPI_INT32_T, "MPI_INT32_T"),
    (MPI_INT64_T, "MPI_INT64_T"),
    (MPI_UINT8_T, "MPI_UINT8_T"),
    (MPI_UINT16_T, "MPI_UINT16_T"),
    (MPI_UINT32_T, "MPI_UINT32_T"),
    (MPI_UINT64_T, "MPI_UINT64_T"),
    (MPI_C_BOOL, "MPI_C_BOOL"),
    (MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX"),
    (MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"),
    (MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (MPI_AINT, "MPI_AINT"),
    (MPI_OFFSET, "MPI_OFFSET"),
    (MPI_COUNT, "MPI_COUNT"),
    (MPI_CXX_BOOL, "MPI_CXX_BOOL"),
    (MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX"),
    (MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX"),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
];

/// The name MPICH gives predefined type `t` ("" for one it does not name).
fn predefined_name(t: MPI_Datatype) -> &'static str {
    PREDEFINED_NAMES.iter().find(|(h, _)| *h == t).map_or("", |(_, n)| n)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_name(datatype: MPI_Datatype, name: *const c_char) -> c_int {
    call("MPI_Type_set_name", MPI_COMM_WORLD, |m| {
        map_of(m, datatype)?;
        if name.is_null() {
            return Err(err(MPI_ERR_ARG, "NULL name"));
        }
        // SAFETY: a NUL-terminated string from the caller, checked non-null.
        let name = CStr::from_ptr(name).to_string_lossy();
        let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        match m.types.get_mut(datatype) {
            Some(e) => e.name = name,
            None => {
                m.types.predefined_names.insert(datatype, name);
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_name(datatype: MPI_Datatype, name: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Type_get_name", MPI_COMM_WORLD, |m| {
        map_of(m, datatype)?;
        let text = match (m.types.get(datatype), m.types.predefined_names.get(&datatype)) {
            (Some(e), _) => &e.name,
            (None, Some(renamed)) => renamed,
            (None, None) => predefined_name(datatype),
        };
        copy_out(text, name, len, MPI_MAX_OBJECT_NAME);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_predefined_name_is_listed_once_and_aliases_take_mpichs_name() {
        for (i, (t, _)) in PREDEFINED_NAMES.iter().enumerate() {
            assert!(!PREDEFINED_NAMES[..i].iter().any(|(u, _)| u == t), "{t:#x} listed twice");
        }
        assert_eq!(predefined_name(MPI_C_COMPLEX), "MPI_C_COMPLEX");
        assert_eq!(predefined_name(MPI_LONG_LONG), "MPI_LONG_LONG_INT");
        assert_eq!(predefined_name(MPI_CHAR), "MPI_CHAR");
        assert_eq!(predefined_name(MPI_CXX_LONG_DOUBLE_COMPLEX), "MPI_CXX_LONG_DOUBLE_COMPLEX");
    }
}

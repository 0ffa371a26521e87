//! MPI_T categories: one per layer of the library (`registry.rs`), each listing its control
//! and performance variables; none holds a subcategory or an event. The set never changes
//! while the process runs, so MPI_T_category_changed always reports the same stamp.

use std::ffi::{c_char, c_int};

use super::registry::{registry, Category};
use super::{copy_string, initialized, name_arg, put};
use crate::abi::*;

/// The category at `cat_index`, or MPICH's code for an index out of range.
fn category(cat_index: c_int) -> Result<&'static Category, c_int> {
    usize::try_from(cat_index).ok().and_then(|i| registry().categories.get(i)).ok_or(MPI_T_ERR_INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    initialized(|| match num_cat.as_mut() {
        Some(n) => {
            *n = registry().categories.len() as c_int;
            MPI_SUCCESS
        }
        None => MPI_T_ERR_INVALID,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    initialized(|| match category(cat_index) {
        Err(code) => code,
        Ok(cat) => {
            copy_string(&cat.name, name, name_len);
            copy_string(&cat.desc, desc, desc_len);
            put(num_cvars, cat.cvars.len() as c_int);
            put(num_pvars, cat.pvars.len() as c_int);
            put(num_categories, 0);
            MPI_SUCCESS
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
    initialized(|| {
        let (Some(name), false) = (name_arg(name), cat_index.is_null()) else { return MPI_T_ERR_INVALID };
        match registry().categories.iter().position(|c| c.name.as_c_str() == name) {
            Some(i) => {
                *cat_index = i as c_int;
                MPI_SUCCESS
            }
            None => MPI_T_ERR_INVALID_NAME,
        }
    })
}

/// Writes the first `len` of `list` to `indices`.
unsafe fn list_out(cat_index: c_int, len: c_int, indices: *mut c_int, list: fn(&Category) -> &[c_int]) -> c_int {
    initialized(|| {
        let cat = match category(cat_index) {
            Ok(cat) => cat,
            Err(code) => return code,
        };
        if len < 0 || (len > 0 && indices.is_null()) {
            return MPI_T_ERR_INVALID;
        }
        let list = list(cat);
        let n = list.len().min(len as usize);
        std::ptr::copy_nonoverlapping(list.as_ptr(), indices, n);
        MPI_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    list_out(cat_index, len, indices, |c| &c.cvars)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    list_out(cat_index, len, indices, |c| &c.pvars)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    list_out(cat_index, len, indices, |_| &[])
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_changed(stamp: *mut c_int) -> c_int {
    initialized(|| match stamp.as_mut() {
        // The categories are fixed for the process's life: their number serves as the stamp.
        Some(s) => {
            *s = registry().categories.len() as c_int;
            MPI_SUCCESS
        }
        None => MPI_T_ERR_INVALID,
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
    initialized(|| match (category(cat_index), num_events.as_mut()) {
        (Err(code), _) => code,
        (Ok(_), None) => MPI_T_ERR_INVALID,
        (Ok(_), Some(n)) => {
            *n = 0;
            MPI_SUCCESS
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // No category holds an event: nothing to write.
    list_out(cat_index, len, indices, |_| &[])
}

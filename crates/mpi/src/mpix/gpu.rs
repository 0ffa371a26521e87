//! MPIX_GPU_query_support and MPIX_Query_{cuda,ze,hip}_support: whether the library takes
//! device memory as buffers. Billboard moves host memory only, so each answers "no", as
//! Debian's MPICH 4.0.2 (built without GPU support) does; an unknown GPU type is an
//! MPI_ERR_ARG, as there. They need no MPI_Init: a program asks before choosing its buffers.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{guard, handle};

/// `MPIX_GPU_SUPPORT_CUDA`, `_ZE`, `_HIP` (mpi.h).
const GPU_TYPES: [(c_int, &str); 3] = [(0, "CUDA"), (1, "ZE"), (2, "HIP")];

#[no_mangle]
pub unsafe extern "C" fn PMPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int) -> c_int {
    guard("MPIX_GPU_query_support", || {
        let problem = if !GPU_TYPES.iter().any(|&(t, _)| t == gpu_type) {
            format!("unknown GPU type {gpu_type} (MPIX_GPU_SUPPORT_CUDA 0, _ZE 1, _HIP 2)")
        } else if is_supported.is_null() {
            "null is_supported pointer".to_string()
        } else {
            *is_supported = 0;
            return MPI_SUCCESS;
        };
        handle("MPIX_GPU_query_support", MPI_COMM_WORLD, crate::error::err(MPI_ERR_ARG, problem))
    })
}

#[no_mangle]
pub extern "C" fn PMPIX_Query_cuda_support() -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn PMPIX_Query_ze_support() -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn PMPIX_Query_hip_support() -> c_int {
    0
}

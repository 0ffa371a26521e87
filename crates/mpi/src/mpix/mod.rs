//! MPICH's extensions that Debian's `libmpich.so.12` exports (`MPIX_`, each a strong `PMPIX_`
//! symbol with a weak `MPIX_` alias, as MPICH has them): fault tolerance (`ft.rs`) and GPU
//! support queries (`gpu.rs`) here; the others beside the MPI calls they extend
//! (MPIX_Delete_error_* in `errhandler.rs`, MPIX_Grequest_* in `grequest.rs`).

mod ft;
mod gpu;

/// `MPIX_X` is a weak alias of `PMPIX_X`, as `exports.rs` makes `MPI_X` one of `PMPI_X`
/// (`exports.map` exports them).
macro_rules! weak_mpix_aliases {
    ($($name:ident),* $(,)?) => { $(
        std::arch::global_asm!(concat!(
            ".weak MPIX_", stringify!($name), "\n",
            ".type MPIX_", stringify!($name), ",@function\n",
            ".set MPIX_", stringify!($name), ", PMPIX_", stringify!($name),
        ));
    )* };
}

weak_mpix_aliases!(
    Comm_agree,
    Comm_failure_ack,
    Comm_failure_get_acked,
    Comm_iagree,
    Comm_revoke,
    Comm_shrink,
    Delete_error_class,
    Delete_error_code,
    Delete_error_string,
    GPU_query_support,
    Grequest_class_allocate,
    Grequest_class_create,
    Grequest_start,
    Query_cuda_support,
    Query_hip_support,
    Query_ze_support,
);

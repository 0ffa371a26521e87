//! What the library exports besides the `PMPI_` functions: a weak `MPI_` alias of each (the
//! profiling interface: a tool defines `MPI_Send`, calls `PMPI_Send`), and the data objects and
//! helper functions MPICH programs link against (`abi::EXPORTED_OBJECTS`, `MPIR_Dup_fn`).
//!
//! The aliases are assembled here, in this crate's single object file (codegen-units = 1), and
//! `exports.map` makes the linker export them. `tests/abi.rs` checks the built library: every
//! `PMPI_` symbol has its weak `MPI_` twin.

use std::ffi::{c_int, c_void};

use crate::abi::*;

macro_rules! weak_aliases {
    ($($name:ident),* $(,)?) => { $(
        std::arch::global_asm!(concat!(
            ".weak MPI_", stringify!($name), "\n",
            ".type MPI_", stringify!($name), ",@function\n",
            ".set MPI_", stringify!($name), ", PMPI_", stringify!($name),
        ));
    )* };
}

weak_aliases!(
    Abort,
    Add_error_class,
    Add_error_code,
    Add_error_string,
    Address,
    Aint_add,
    Aint_diff,
    Allgather,
    Allgatherv,
    Alloc_mem,
    Allreduce,
    Alltoall,
    Alltoallv,
    Alltoallw,
    Attr_delete,
    Attr_get,
    Attr_put,
    Barrier,
    Bcast,
    Bsend,
    Bsend_init,
    Buffer_attach,
    Buffer_detach,
    Cancel,
    Cart_coords,
    Cart_create,
    Cart_get,
    Cart_map,
    Cart_rank,
    Cart_shift,
    Cart_sub,
    Cartdim_get,
    Comm_call_errhandler,
    Comm_compare,
    Comm_create,
    Comm_create_errhandler,
    Comm_create_group,
    Comm_create_keyval,
    Comm_delete_attr,
    Comm_dup,
    Comm_dup_with_info,
    Comm_free,
    Comm_free_keyval,
    Comm_get_attr,
    Comm_get_errhandler,
    Comm_get_info,
    Comm_get_name,
    Comm_group,
    Comm_idup,
    Comm_rank,
    Comm_set_attr,
    Comm_set_errhandler,
    Comm_set_info,
    Comm_set_name,
    Comm_size,
    Comm_split,
    Comm_split_type,
    Comm_test_inter,
    Dims_create,
    Dist_graph_create,
    Dist_graph_create_adjacent,
    Dist_graph_neighbors,
    Dist_graph_neighbors_count,
    Errhandler_create,
    Errhandler_free,
    Errhandler_get,
    Errhandler_set,
    Error_class,
    Error_string,
    Exscan,
    Finalize,
    Finalized,
    Free_mem,
    Gather,
    Gatherv,
    Get_address,
    Get_count,
    Get_elements,
    Get_elements_x,
    Get_library_version,
    Get_processor_name,
    Get_version,
    Graph_create,
    Graph_get,
    Graph_map,
    Graph_neighbors,
    Graph_neighbors_count,
    Graphdims_get,
    Group_compare,
    Group_difference,
    Group_excl,
    Group_free,
    Group_incl,
    Group_intersection,
    Group_range_excl,
    Group_range_incl,
    Group_rank,
    Group_size,
    Group_translate_ranks,
    Group_union,
    Ibsend,
    Improbe,
    Imrecv,
    Info_create,
    Info_delete,
    Info_dup,
    Info_free,
    Info_get,
    Info_get_nkeys,
    Info_get_nthkey,
    Info_get_valuelen,
    Info_set,
    Init,
    Init_thread,
    Initialized,
    Iprobe,
    Irecv,
    Irsend,
    Is_thread_main,
    Isend,
    Issend,
    Keyval_create,
    Keyval_free,
    Mprobe,
    Mrecv,
    Op_commutative,
    Op_create,
    Op_free,
    Pack,
    Pack_external,
    Pack_external_size,
    Pack_size,
    Pcontrol,
    Probe,
    Query_thread,
    Recv,
    Recv_init,
    Reduce,
    Reduce_local,
    Reduce_scatter,
    Reduce_scatter_block,
    Request_free,
    Request_get_status,
    Rsend,
    Rsend_init,
    Scan,
    Scatter,
    Scatterv,
    Send,
    Send_init,
    Sendrecv,
    Sendrecv_replace,
    Ssend,
    Ssend_init,
    Start,
    Startall,
    Status_set_elements,
    Status_set_elements_x,
    Test,
    Test_cancelled,
    Testall,
    Testany,
    Testsome,
    Topo_test,
    Type_commit,
    Type_contiguous,
    Type_create_darray,
    Type_create_hindexed,
    Type_create_hindexed_block,
    Type_create_hvector,
    Type_create_indexed_block,
    Type_create_keyval,
    Type_create_resized,
    Type_create_struct,
    Type_create_subarray,
    Type_delete_attr,
    Type_dup,
    Type_extent,
    Type_free,
    Type_free_keyval,
    Type_get_attr,
    Type_get_contents,
    Type_get_envelope,
    Type_get_extent,
    Type_get_extent_x,
    Type_get_name,
    Type_get_true_extent,
    Type_get_true_extent_x,
    Type_hindexed,
    Type_hvector,
    Type_indexed,
    Type_lb,
    Type_match_size,
    Type_set_attr,
    Type_set_name,
    Type_size,
    Type_size_x,
    Type_struct,
    Type_ub,
    Type_vector,
    Unpack,
    Unpack_external,
    Wait,
    Waitall,
    Waitany,
    Waitsome,
    Wtick,
    Wtime,
);

/// A pointer-valued exported object (`int *const MPI_UNWEIGHTED`, ...).
#[repr(transparent)]
pub struct Exported<T>(*const T);

// SAFETY: the pointers are constants set at load time and never written.
unsafe impl<T> Sync for Exported<T> {}

/// A 20-byte status-sized object (Fortran's `MPI_F08_status`).
#[repr(C)]
pub struct StatusObject([i32; 5]);

#[no_mangle]
pub static MPIR_C_MPI_UNWEIGHTED: [i32; 2] = [0; 2];
#[no_mangle]
pub static MPIR_C_MPI_WEIGHTS_EMPTY: [i32; 2] = [0; 2];
#[no_mangle]
pub static MPI_UNWEIGHTED: Exported<[i32; 2]> = Exported(&MPIR_C_MPI_UNWEIGHTED);
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: Exported<[i32; 2]> = Exported(&MPIR_C_MPI_WEIGHTS_EMPTY);
#[no_mangle]
pub static MPIR_F08_MPI_STATUS_IGNORE_OBJ: StatusObject = StatusObject([0; 5]);
#[no_mangle]
pub static MPIR_F08_MPI_STATUSES_IGNORE_OBJ: StatusObject = StatusObject([0; 5]);
#[no_mangle]
pub static MPIR_F08_MPI_IN_PLACE: i32 = 0;
#[no_mangle]
pub static MPIR_F08_MPI_BOTTOM: i32 = 0;
#[no_mangle]
pub static MPI_F_STATUS_IGNORE: Exported<StatusObject> = Exported(&MPIR_F08_MPI_STATUS_IGNORE_OBJ);
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: Exported<StatusObject> = Exported(&MPIR_F08_MPI_STATUSES_IGNORE_OBJ);
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: Exported<StatusObject> = Exported(&MPIR_F08_MPI_STATUS_IGNORE_OBJ);
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: Exported<StatusObject> = Exported(&MPIR_F08_MPI_STATUSES_IGNORE_OBJ);
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: Exported<c_void> = Exported(std::ptr::null());

/// `MPI_DUP_FN` and friends: the attribute copy callback that copies the value.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    *(attribute_val_out as *mut *mut c_void) = attribute_val_in;
    *flag = 1;
    MPI_SUCCESS
}

//! MPICH's extensions that Debian's `libmpich.so.12` exports (`MPIX_`, each a strong `PMPIX_`
//! symbol with a weak `MPIX_` alias, as MPICH has them): fault tolerance (`ft.rs`) and GPU
//! support queries (`gpu.rs`) here; the others beside the MPI calls they extend
//! (MPIX_Delete_error_* in `errhandler.rs`, MPIX_Grequest_* in `grequest.rs`).

mod ft;
mod gpu;

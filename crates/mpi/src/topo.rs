//! Cartesian topologies (to be written): MPI_Cart_*, MPI_Dims_create, MPI_Topo_test.

/// Topologies attached to communicators.
#[derive(Default)]
pub(crate) struct Topos {}

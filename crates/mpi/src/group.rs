//! Groups (to be written): MPI_Group_* and MPI_Comm_group.

/// Groups by handle.
#[derive(Default)]
pub(crate) struct Groups {}

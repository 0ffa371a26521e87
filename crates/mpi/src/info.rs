//! Info objects (to be written): MPI_Info_*.

/// Info objects by handle.
#[derive(Default)]
pub(crate) struct Infos {}

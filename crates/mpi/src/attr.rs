//! Attributes and keyvals (to be written): MPI_Comm_get_attr and friends, type attributes.

/// Keyvals and the attributes set on communicators and datatypes.
#[derive(Default)]
pub(crate) struct Attrs {}

//! What a persistent collective keeps of its `_init` call's arrays. A program may let go of the
//! counts, displacements and datatypes arrays once the `_init` call returns (mpi4py frees its
//! temporary arrays then, and MPICH copies them at init), so each start must not read the
//! program's: the `_init` form copies every array argument here, with the length the operation
//! reads (the communicator's peers; a neighbourhood collective's in- or out-degree), and the
//! start reads the copies.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use super::*;

/// The lengths of a collective's arrays on one communicator, and the copies made.
pub(crate) struct Snapshot {
    peers: usize,
    /// The length of a reduce-scatter's `recvcounts`: the local group's size (on an
    /// intercommunicator each group's result is scattered over that group, as MPI's
    /// MPI_REDUCE_SCATTER says), not the remote group's like every other array there. Copied
    /// with the remote size, a group larger than the other read past the copy.
    scattered_over: Option<usize>,
    /// In- and out-degree of the topology, for a neighbourhood collective.
    degrees: Option<(usize, usize)>,
    kept: RefCell<Vec<Box<[i64]>>>,
    kept_ints: RefCell<Vec<Box<[c_int]>>>,
}

impl Snapshot {
    /// The lengths for collective `function` on `comm`.
    pub(crate) fn of(function: &str, comm: MPI_Comm) -> Res<Snapshot> {
        let c = comm_ref(comm)?;
        let degrees = if function.contains("eighbor") {
            let (sources, destinations) = super::neighbor::neighbours(comm, &c)?;
            Some((sources.len(), destinations.len()))
        } else {
            None
        };
        let scattered_over = function.starts_with("MPI_Reduce_scatter_init").then(|| c.size());
        Ok(Snapshot {
            peers: c.peers(),
            scattered_over,
            degrees,
            kept: RefCell::default(),
            kept_ints: RefCell::default(),
        })
    }

    /// How many entries the array argument `name` holds (`None`: not an array argument).
    fn length(&self, name: &str) -> Option<usize> {
        let receiving = matches!(name, "recvcounts" | "displs" | "rdispls" | "recvtypes");
        let sending = matches!(name, "sendcounts" | "sdispls" | "sendtypes");
        match self.degrees {
            _ if !receiving && !sending => None,
            _ if name == "recvcounts" && self.scattered_over.is_some() => self.scattered_over,
            Some((indegree, _)) if receiving => Some(indegree),
            Some((_, outdegree)) => Some(outdegree),
            None => Some(self.peers),
        }
    }
}

/// An argument of an `_init` call, as the start will read it: array arguments are copied into
/// the snapshot (a null array stays null), anything else passes as it is.
pub(crate) trait Keep: Copy {
    fn kept(self, _name: &str, _snapshot: &Snapshot) -> Self {
        self
    }
}

impl Keep for c_int {}
impl Keep for i64 {}
impl Keep for *const c_void {}
impl Keep for *mut c_void {}

impl Keep for *const c_int {
    fn kept(self, name: &str, snapshot: &Snapshot) -> Self {
        let Some(n) = snapshot.length(name).filter(|_| !self.is_null()) else { return self };
        // SAFETY: MPI's contract: the array holds an entry per peer (or neighbour).
        let copy: Box<[c_int]> = unsafe { std::slice::from_raw_parts(self, n) }.into();
        let p = copy.as_ptr();
        snapshot.kept_ints.borrow_mut().push(copy);
        p
    }
}

impl Keep for *const i64 {
    fn kept(self, name: &str, snapshot: &Snapshot) -> Self {
        let Some(n) = snapshot.length(name).filter(|_| !self.is_null()) else { return self };
        // SAFETY: as above.
        let copy: Box<[i64]> = unsafe { std::slice::from_raw_parts(self, n) }.into();
        let p = copy.as_ptr();
        snapshot.kept.borrow_mut().push(copy);
        p
    }
}

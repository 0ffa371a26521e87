//! The table of derived datatypes: their entries by handle, and the references that keep a
//! type alive (the program's handle, derived types built from it, contents handles, pending
//! operations' holds), up to its destruction, which waits for its attributes' delete callbacks.

use std::ffi::c_int;
use std::sync::Arc;

use super::typemap::TypeMap;
use super::Staging;
use crate::abi::*;
use crate::attr::Attrs;

/// What `MPI_Type_get_envelope`/`MPI_Type_get_contents` report: the constructor and its
/// arguments. A large-count (`_c`) constructor's counts and displacements are `counts`, as in
/// MPICH 4.0.2.
#[derive(Clone, Debug, Default)]
pub(crate) struct Envelope {
    pub combiner: c_int,
    pub ints: Vec<c_int>,
    pub aints: Vec<MPI_Aint>,
    pub counts: Vec<MPI_Count>,
    pub types: Vec<MPI_Datatype>,
}

/// A derived datatype.
pub(crate) struct Entry {
    pub map: Arc<TypeMap>,
    pub envelope: Envelope,
    pub committed: bool,
    pub name: String,
    /// The program's handle, plus one per derived type built from this one (its envelope
    /// names it) and per handle `MPI_Type_get_contents` gave out: freed at zero.
    refs: u32,
}

/// A pending operation's reference on a datatype ([`Types::hold`]). It may drop where the
/// state is not at hand (an engine completing a schedule, a request ending under the state's
/// lock), so the release waits in `DROPPED` for the next reap or [`Types::add`], the one place
/// an index is reused.
pub(crate) struct TypeHold(MPI_Datatype);

static DROPPED: std::sync::Mutex<Vec<MPI_Datatype>> = std::sync::Mutex::new(Vec::new());

impl TypeHold {
    pub fn handle(&self) -> MPI_Datatype {
        self.0
    }
}

impl Drop for TypeHold {
    /// The reference goes at the next [`crate::attr::reap`] (the end of the call that ended the
    /// operation, or of a later one) or type creation, whichever comes first.
    fn drop(&mut self) {
        if entry_index(self.0).is_some() {
            DROPPED.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
            crate::attr::schedule_reap();
        }
    }
}

/// Derived datatypes by handle.
#[derive(Default)]
pub(crate) struct Types {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    /// Staging buffers of requests released by `MPI_Request_free` while still in flight: the
    /// engine may still read or write them, so they live until finalize.
    orphans: Vec<Staging>,
    /// Types without references whose attributes' delete callbacks are still to run.
    dying: Vec<MPI_Datatype>,
    /// Names the program gave predefined types (MPI_Type_set_name).
    pub(super) predefined_names: std::collections::HashMap<MPI_Datatype, String>,
    /// The parameterized Fortran 90 types made so far, by (combiner, p, r): predefined, so the
    /// same arguments give the same handle.
    pub(super) f90: std::collections::HashMap<(c_int, c_int, c_int), MPI_Datatype>,
}

/// Table index of the first derived type: after MPICH's five direct pair types.
const FIRST_INDEX: u32 = handle_index(FIRST_USER_DATATYPE);

fn entry_index(t: MPI_Datatype) -> Option<usize> {
    (handle_kind(t) == HandleKind::Direct && handle_object_type(t) == object_type::DATATYPE)
        .then(|| handle_index(t).checked_sub(FIRST_INDEX))
        .flatten()
        .map(|i| i as usize)
}

impl Types {
    pub fn get(&self, t: MPI_Datatype) -> Option<&Entry> {
        self.entries.get(entry_index(t)?)?.as_ref()
    }

    pub fn get_mut(&mut self, t: MPI_Datatype) -> Option<&mut Entry> {
        self.entries.get_mut(entry_index(t)?)?.as_mut()
    }

    /// Stores a new type; the derived types its envelope names gain a reference.
    pub fn add(&mut self, map: TypeMap, envelope: Envelope, attrs: &Attrs) -> MPI_Datatype {
        // Holds dropped away from the state go first, so no held index is reused.
        self.release_dropped(attrs);
        for &t in &envelope.types {
            self.retain(t);
        }
        let entry = Entry { map: Arc::new(map), envelope, committed: false, name: String::new(), refs: 1 };
        let i = crate::state::store(&mut self.entries, &mut self.free, entry);
        make_handle(HandleKind::Direct, object_type::DATATYPE, FIRST_INDEX + i)
    }

    /// A reference for a pending operation that hands `t`'s handle to the program (a
    /// reduction's user function): `t` stays, and its index is not reused, until it drops.
    pub fn hold(&mut self, t: MPI_Datatype) -> TypeHold {
        self.retain(t);
        TypeHold(t)
    }

    pub fn retain(&mut self, t: MPI_Datatype) {
        if let Some(e) = self.get_mut(t) {
            e.refs += 1;
        }
    }

    /// Releases the references of holds dropped away from the state.
    pub fn release_dropped(&mut self, attrs: &Attrs) {
        let dropped = std::mem::take(&mut *DROPPED.lock().unwrap_or_else(|e| e.into_inner()));
        for t in dropped {
            self.release(t, attrs);
        }
    }

    /// Drops one reference; at zero the type goes ([`Types::destroy`]). One with attributes
    /// waits among the dying for their delete callbacks, which may call MPI and so run
    /// without the tables held ([`crate::attr::reap`]), and goes then.
    pub fn release(&mut self, t: MPI_Datatype, attrs: &Attrs) {
        let Some(i) = entry_index(t) else { return };
        let Some(Some(e)) = self.entries.get_mut(i) else { return };
        e.refs -= 1;
        if e.refs == 0 {
            if attrs.has(object_type::DATATYPE, t) {
                self.dying.push(t);
                crate::attr::schedule_reap();
            } else {
                self.destroy(t, attrs);
            }
        }
    }

    /// Ends a type whose last reference went, and with it its references to others.
    pub fn destroy(&mut self, t: MPI_Datatype, attrs: &Attrs) {
        let Some(i) = entry_index(t) else { return };
        let Some(e) = self.entries.get_mut(i).and_then(Option::take) else { return };
        self.free.push(i as u32);
        for t in e.envelope.types {
            self.release(t, attrs);
        }
    }

    /// The types whose last reference went with attributes still on them.
    pub fn take_dying(&mut self) -> Vec<MPI_Datatype> {
        std::mem::take(&mut self.dying)
    }

    pub fn keep_orphan(&mut self, s: Staging) {
        self.orphans.push(s);
    }
}

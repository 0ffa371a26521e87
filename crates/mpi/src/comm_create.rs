//! Communicator constructors beyond dup and split: MPI_Comm_create (from a group),
//! MPI_Comm_create_group, MPI_Comm_split_type, MPI_Comm_dup_with_info, MPI_Comm_idup,
//! MPI_Comm_set_info/get_info; and what every new or freed communicator goes through (error
//! handler inherited, attributes copied or deleted, topology kept or dropped).

use std::ffi::c_int;

use billboard::Communicator;

use crate::abi::*;
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::group::ranks_in;
use crate::state::{self, Req};

/// The native communicator of `comm` and its error handler, taken out of the tables so that a
/// collective can run on it without holding them.
pub(crate) fn take(comm: MPI_Comm) -> Res<(Communicator, MPI_Errhandler)> {
    state::with(|m| m.comm(comm).map(|c| (c.comm.clone(), c.errhandler))).flatten().ok_or_else(|| bad_comm(comm))
}

/// Stores a communicator made from `parent`: it inherits the parent's error handler (MPI 3.1
/// section 8.3).
pub(crate) fn store_child(parent_errhandler: MPI_Errhandler, new: Option<Communicator>) -> MPI_Comm {
    let Some(new) = new else { return MPI_COMM_NULL };
    state::with(|m| {
        let h = m.add_comm(new);
        m.comm_local_mut(h).expect("just added").errhandler = parent_errhandler;
        h
    })
    .expect("MPI is running")
}

/// MPI_Comm_dup: a new context, the same members, error handler, topology and (through their
/// copy callbacks) attributes.
pub(crate) fn dup(comm: MPI_Comm) -> Res<MPI_Comm> {
    let (c, eh) = take(comm)?;
    let new = store_child(eh, Some(c.dup()?));
    state::with(|m| {
        if let Some(cart) = m.topos.get(comm).cloned() {
            m.topos.set(new, cart);
        }
    });
    if let Err(e) = crate::attr::copy_comm_attrs(comm, new) {
        forget(new);
        return Err(e);
    }
    Ok(new)
}

/// Lets go of a communicator's handle: its topology goes, its entry once no request uses it
/// (see [`state::Mpi::release_comm`]).
fn forget(comm: MPI_Comm) {
    state::with(|m| m.release_comm(comm));
}

/// MPI_Comm_free's work once the handle is known to be a user communicator. A communicator
/// no request uses goes now: delete callbacks first (they may fail, and then it stays), then
/// the handle. One that requests still use goes with the last of them, as in MPICH, which
/// counts their references: its delete callbacks run then (see [`crate::attr::reap`]).
pub(crate) fn free(comm: MPI_Comm) -> Res {
    let deferred = state::with(|m| {
        let in_use = m.comm_in_use(comm);
        if in_use && m.attrs.has(object_type::COMM, comm) {
            m.attrs.doom(comm);
        }
        in_use
    });
    if deferred != Some(true) {
        crate::attr::delete_comm_attrs(comm)?;
    }
    forget(comm);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Comm_create", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, eh) = take(comm)?;
        let members = state::with(|m| m.group(group).map(<[_]>::to_vec)).expect("MPI is running")?;
        let ranks = ranks_in(&c, &members, "the communicator")?;
        // Collective over the parent. Each process may pass a group of its own, the groups
        // disjoint (MPI 2.2), so a group is told apart by its lowest member: members take that
        // as color and their group position as key. On an intercommunicator each side passes
        // a group of its own side, and the two make one intercommunicator (same color).
        let position = ranks.iter().position(|&r| r == c.rank());
        let color = if c.is_inter() { Some(0) } else { ranks.iter().min().map(|&lowest| lowest as u32) };
        let new = c.split(position.and(color), position.unwrap_or(0) as c_int)?;
        *newcomm = store_child(eh, new);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_group(
    comm: MPI_Comm,
    group: MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Comm_create_group", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, eh) = take(comm)?;
        let members = state::with(|m| m.group(group).map(<[_]>::to_vec)).expect("MPI is running")?;
        if tag < 0 {
            return Err(err(MPI_ERR_TAG, format!("invalid tag {tag}")));
        }
        let ranks = ranks_in(&c, &members, "the communicator")?;
        *newcomm = store_child(eh, c.subset(&ranks, tag)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Comm_split_type", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, eh) = take(comm)?;
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        // The engine knows which ranks share a host (and a billboard): no exchange needed.
        let host = c.host_of(c.rank())?;
        // The one level of hardware this library knows: the host, whose memory the ranks on it
        // share (MPI 4.0's resource type "mpi_shared_memory").
        let by_host = match split_type {
            MPI_COMM_TYPE_SHARED => true,
            MPI_UNDEFINED => false,
            // Split as the info's "mpi_hw_resource_type" says; a type not known here gives
            // MPI_COMM_NULL.
            MPI_COMM_TYPE_HW_GUIDED => hw_resource(info)?.as_deref() == Some(SHARED_MEMORY),
            // The next level down that makes the group smaller: the host, unless every member
            // is on one host already (then none: MPI_COMM_NULL). The info tells which it was.
            MPI_COMM_TYPE_HW_UNGUIDED => {
                let spans_hosts = (0..c.size()).map(|r| c.host_of(r)).collect::<Result<Vec<_>, _>>()?;
                let smaller = spans_hosts.iter().any(|&h| h != host);
                if smaller && info != MPI_INFO_NULL {
                    crate::info::with_infos(|i| i.set(info, HW_RESOURCE_TYPE, SHARED_MEMORY))?;
                }
                smaller
            }
            other => {
                let msg = format!(
                    "split type {other}: MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED or \
                     MPI_UNDEFINED"
                );
                return Err(err(MPI_ERR_ARG, msg));
            }
        };
        *newcomm = store_child(eh, c.split(by_host.then_some(host as u32), key)?);
        Ok(())
    })
}

/// MPI 4.0's info key naming a hardware resource type, and its value for a host's memory.
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
const SHARED_MEMORY: &str = "mpi_shared_memory";

/// The hardware resource type an info asks for, if any.
fn hw_resource(info: MPI_Info) -> Res<Option<String>> {
    if info == MPI_INFO_NULL {
        return Ok(None);
    }
    crate::info::with_infos(|i| i.value(info, HW_RESOURCE_TYPE))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Comm_dup_with_info", comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        // No hint changes what this library does, so the info is checked and set aside.
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        *newcomm = dup(comm)?;
        Ok(())
    })
}

/// An MPI_Comm_idup in flight: the engine makes the communicator in the background. Its
/// handle is set at once (`*newcomm`, as MPICH does) and is a pending communicator (see
/// [`state::Comm::pending`]) with the parent's error handler, topology and attributes (copy
/// callbacks ran at the call), which local calls may use and change meanwhile; a wait or test
/// that finds the creation done makes it a communicator.
pub(crate) struct Idup {
    pending: billboard::Background<billboard::Communicator>,
    pub parent: MPI_Comm,
    handle: MPI_Comm,
}

impl Idup {
    pub fn is_done(&self) -> bool {
        self.pending.is_done()
    }

    /// Waits for the creation (at once if [`Idup::is_done`]), then fills the pending handle
    /// in `m`, the tables (held by the caller, or taken here when `None`).
    pub fn complete(self, m: Option<&mut state::Mpi>) -> Res<MPI_Status> {
        let Idup { pending, handle, .. } = self;
        let made = pending.wait();
        let fill = |m: &mut state::Mpi| match made {
            Ok(c) => {
                m.fill_pending(handle, Some(c));
                Ok(crate::request::empty_status())
            }
            Err(e) => {
                m.fill_pending(handle, None);
                m.topos.remove(handle);
                crate::attr::drop_comm_attrs(m, handle);
                Err(e.into())
            }
        };
        match m {
            Some(m) => fill(m),
            None => state::with(fill).expect("MPI is running"),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    idup("MPI_Comm_idup", comm, MPI_INFO_NULL, newcomm, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    idup("MPI_Comm_idup_with_info", comm, info, newcomm, request)
}

/// MPI_Comm_idup(_with_info). No hint changes what this library does, so `info` is checked
/// (MPI_INFO_NULL allowed, as MPICH allows it) and set aside, as MPI_Comm_dup_with_info does.
unsafe fn idup(
    function: &'static str,
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call_unlocked(function, comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        if request.is_null() {
            return Err(err(MPI_ERR_ARG, "null request pointer"));
        }
        state::with(|m| m.check_info(info)).expect("MPI is running")?;
        let (c, errhandler) = take(comm)?;
        let attrs = crate::attr::copy_comm_values(comm)?;
        let pending = c.idup()?;
        *request = state::with(|m| {
            let handle = m.add_pending_comm(c, errhandler);
            if let Some(cart) = m.topos.get(comm).cloned() {
                m.topos.set(handle, cart);
            }
            crate::attr::install_comm_attrs(m, handle, attrs);
            *newcomm = handle;
            m.add_request(Req::Idup(Box::new(Idup { pending, parent: comm, handle })))
        })
        .expect("MPI is running");
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    call("MPI_Comm_set_info", comm, |m| {
        m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        // The hints must be an info object (MPI_INFO_NULL is MPI_ERR_ARG, as in MPICH).
        m.info(info).map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    call("MPI_Comm_get_info", comm, |m| {
        m.comm_local(comm).ok_or_else(|| bad_comm(comm))?;
        // The hints in use: none (set_info hints are accepted and ignored).
        *out(info_used, "info_used")? = m.add_info(Vec::new());
        Ok(())
    })
}

//! Ports and names: MPI_Open_port, MPI_Close_port, MPI_Comm_accept, MPI_Comm_connect,
//! MPI_Comm_join, and the launcher's name service.

use std::ffi::{c_char, c_int};

use super::text;
use crate::abi::*;
use crate::comm_create::{store_child, take};
use crate::error::{call, call_unlocked, err, out, rank_range, Res};
use crate::state;

/// Copies `name` into a program's buffer of MPI_MAX_PORT_NAME bytes.
unsafe fn copy_name(name: &str, buf: *mut c_char) -> Res {
    if buf.is_null() {
        return Err(err(MPI_ERR_ARG, "port_name is NULL"));
    }
    if name.len() >= MPI_MAX_PORT_NAME as usize {
        return Err(err(
            MPI_ERR_PORT,
            format!("the port name needs {} bytes, more than MPI_MAX_PORT_NAME", name.len() + 1),
        ));
    }
    // SAFETY: MPI's contract: the buffer holds MPI_MAX_PORT_NAME bytes; we write fewer.
    std::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), name.len());
    *buf.add(name.len()) = 0;
    Ok(())
}

fn port_error(e: billboard::Error) -> crate::error::MpiError {
    err(MPI_ERR_PORT, e.to_string())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Open_port(_info: MPI_Info, port_name: *mut c_char) -> c_int {
    call("MPI_Open_port", MPI_COMM_WORLD, |_| {
        let name = billboard::open_port().map_err(port_error)?;
        copy_name(&name, port_name).inspect_err(|_| {
            let _ = billboard::close_port(&name);
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Close_port(port_name: *const c_char) -> c_int {
    call("MPI_Close_port", MPI_COMM_WORLD, |_| {
        billboard::close_port(&text(port_name, "port_name")?).map_err(port_error)
    })
}

/// Accept or connect: `port_name` is read at the root only.
unsafe fn join(
    function: &'static str,
    accept: bool,
    port_name: *const c_char,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked(function, comm, || {
        let newcomm = out(newcomm, "newcomm")?;
        let (c, eh) = take(comm)?;
        if c.is_inter() {
            return Err(err(MPI_ERR_COMM, format!("{function} on an intercommunicator")));
        }
        let root = usize::try_from(root)
            .ok()
            .filter(|&r| r < c.size())
            .ok_or_else(|| err(MPI_ERR_ROOT, format!("invalid root {root} ({})", rank_range(c.size()))))?;
        // A bad name at the root still joins the collective: the root's join fails and says so
        // to the others.
        let name = if c.rank() == root { text(port_name, "port_name").unwrap_or_default() } else { String::new() };
        let made = if accept { c.accept(&name, root) } else { c.connect(&name, root) };
        match made {
            Ok(inter) => {
                *newcomm = store_child(eh, Some(inter));
                Ok(())
            }
            Err(e) => {
                *newcomm = MPI_COMM_NULL;
                Err(port_error(e))
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_accept(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    join("MPI_Comm_accept", true, port_name, root, comm, newcomm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_connect(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    join("MPI_Comm_connect", false, port_name, root, comm, newcomm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Comm_join", MPI_COMM_SELF, || {
        let intercomm = out(intercomm, "intercomm")?;
        if fd < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid socket {fd}")));
        }
        let (c, eh) = take(MPI_COMM_SELF)?;
        // SAFETY: the program's connected socket, open for the call; we only read and write it.
        let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
        let inter = c.join(fd).map_err(port_error)?;
        *intercomm = store_child(eh, Some(inter));
        Ok(())
    })
}

fn launcher() -> Res<billboard::Launcher> {
    state::with(|m| m.universe.launcher()).ok_or_else(|| err(MPI_ERR_OTHER, "MPI is not running"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Publish_name(service: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    call_unlocked("MPI_Publish_name", MPI_COMM_WORLD, || {
        let (service, port) = (text(service, "service_name")?, text(port_name, "port_name")?);
        launcher()?.publish_name(&service, &port).map_err(|e| err(MPI_ERR_SERVICE, format!("service {service:?}: {e}")))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpublish_name(
    service: *const c_char,
    _info: MPI_Info,
    _port_name: *const c_char,
) -> c_int {
    call_unlocked("MPI_Unpublish_name", MPI_COMM_WORLD, || {
        let service = text(service, "service_name")?;
        launcher()?.unpublish_name(&service).map_err(|e| err(MPI_ERR_SERVICE, format!("service {service:?}: {e}")))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Lookup_name(service: *const c_char, _info: MPI_Info, port_name: *mut c_char) -> c_int {
    call_unlocked("MPI_Lookup_name", MPI_COMM_WORLD, || {
        let service = text(service, "service_name")?;
        let port =
            launcher()?.lookup_name(&service).map_err(|e| err(MPI_ERR_NAME, format!("service {service:?}: {e}")))?;
        copy_name(&port, port_name)
    })
}

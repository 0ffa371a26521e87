//! Matched probes: MPI_Mprobe / MPI_Improbe take a message out of matching, so that only
//! MPI_Mrecv / MPI_Imrecv on the returned handle can receive it (safe with several threads
//! probing the same source and tag).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::datatype::{self, Dir};
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::p2p::{source, tag_match};
use crate::request::{fill_status, finish, proc_null_status, status_arg, status_of};
use crate::state::{self, Mpi, Req};

/// Message handles: indirect kind, request object type (MPI_MESSAGE_NULL is MPI_REQUEST_NULL).
fn message_handle(i: usize) -> MPI_Message {
    make_handle(HandleKind::Indirect, object_type::REQUEST, i as u32)
}

fn message_index(h: MPI_Message) -> Option<usize> {
    (handle_kind(h) == HandleKind::Indirect && handle_object_type(h) == object_type::REQUEST)
        .then_some(handle_index(h) as usize)
}

impl Mpi {
    fn add_message(&mut self, m: billboard::Message) -> MPI_Message {
        let i = match self.messages.iter().position(Option::is_none) {
            Some(i) => {
                self.messages[i] = Some(m);
                i
            }
            None => {
                self.messages.push(Some(m));
                self.messages.len() - 1
            }
        };
        message_handle(i)
    }

    fn take_message(&mut self, h: MPI_Message) -> Res<billboard::Message> {
        message_index(h)
            .and_then(|i| self.messages.get_mut(i)?.take())
            .ok_or_else(|| err(MPI_ERR_REQUEST, format!("invalid message handle {}", crate::error::handle_name(h))))
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Improbe(
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Improbe", comm, |m| {
        let (flag, message) = (out(flag, "flag")?, out(message, "message")?);
        status_arg(status)?;
        if src == MPI_PROC_NULL {
            (*flag, *message) = (1, MPI_MESSAGE_NO_PROC);
            fill_status(status, &proc_null_status());
            return Ok(());
        }
        let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?;
        match c.comm.improbe(source(src)?, tag_match(tag)?)? {
            Some(msg) => {
                fill_status(status, &status_of(&msg.status()));
                (*flag, *message) = (1, m.add_message(msg));
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Mprobe(
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    call_unlocked("MPI_Mprobe", comm, || {
        let message = out(message, "message")?;
        status_arg(status)?;
        if src == MPI_PROC_NULL {
            *message = MPI_MESSAGE_NO_PROC;
            fill_status(status, &proc_null_status());
            return Ok(());
        }
        let c = state::with(|m| m.comm(comm).map(|c| c.comm.clone())).flatten().ok_or_else(|| bad_comm(comm))?;
        let msg = c.mprobe(source(src)?, tag_match(tag)?)?;
        fill_status(status, &status_of(&msg.status()));
        *message = state::with(|m| m.add_message(msg)).expect("MPI is running");
        Ok(())
    })
}

/// Starts receiving a probed message; NO_PROC gives a completed empty receive.
unsafe fn start(m: &mut Mpi, buf: *mut c_void, count: i64, t: MPI_Datatype, message: *mut MPI_Message) -> Res<Req> {
    let message = out(message, "message")?;
    if *message == MPI_MESSAGE_NO_PROC {
        *message = MPI_MESSAGE_NULL;
        return Ok(Req::Complete(proc_null_status()));
    }
    let layout = datatype::layout_in(m, t)?;
    let data = datatype::view(&layout, buf, count, Dir::Write)?;
    let msg = m.take_message(*message)?;
    *message = MPI_MESSAGE_NULL;
    let req = msg.irecv_raw(data.ptr(), data.len())?;
    Ok(Req::Active { req, comm: MPI_COMM_WORLD, staged: data.into_staging() })
}

counted! {
    [PMPI_Imrecv; Count = c_int] [PMPI_Imrecv_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        request: *mut MPI_Request,
    ) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            let request = out(request, "request")?;
            let req = start(m, buf, count.into(), datatype, message)?.holding(m, datatype);
            *request = m.add_request(req);
            Ok(())
        })
    }
}

counted! {
    [PMPI_Mrecv; Count = c_int] [PMPI_Mrecv_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) -> c_int {
        call_unlocked(FUNCTION, MPI_COMM_WORLD, || {
            status_arg(status)?;
            let req = state::with(|m| start(m, buf, count.into(), datatype, message)).expect("MPI is running")?;
            fill_status(status, &finish(req)?);
            Ok(())
        })
    }
}

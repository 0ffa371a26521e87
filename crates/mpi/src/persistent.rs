//! Persistent requests: MPI_Send_init / Bsend_init / Ssend_init / Rsend_init / Recv_init
//! record an operation, MPI_Start / MPI_Startall start it, and completing it (wait, test)
//! leaves the request inactive for the next start.

use std::ffi::{c_int, c_void};

use billboard::SendMode;

use crate::abi::*;
use crate::error::{bad_comm, call, err, out, Res};
use crate::p2p::{start_recv, start_send};
use crate::state::{Mpi, Req};

#[derive(Clone, Copy)]
enum Kind {
    Send(SendMode),
    Bsend,
    Recv,
}

/// The operation a persistent request starts.
#[derive(Clone, Copy)]
pub(crate) struct Op {
    kind: Kind,
    /// The buffer's address (kept as a number: the program owns it).
    buf: usize,
    count: i64,
    datatype: MPI_Datatype,
    /// Destination or source.
    peer: c_int,
    tag: c_int,
    pub comm: MPI_Comm,
}

impl Op {
    /// Starts one instance of the operation.
    unsafe fn start(&self, m: &mut Mpi) -> Res<Req> {
        let buf = self.buf as *mut c_void;
        match self.kind {
            Kind::Send(mode) => start_send(m, buf, self.count, self.datatype, self.peer, self.tag, self.comm, mode),
            Kind::Recv => start_recv(m, buf, self.count, self.datatype, self.peer, self.tag, self.comm),
            Kind::Bsend => {
                crate::bsend::start(m, buf, self.count, self.datatype, self.peer, self.tag, self.comm)?;
                Ok(Req::Complete(MPI_Status::default()))
            }
        }
    }
}

impl Op {
    /// Lets go of the datatype the request held (MPI_Request_free of the request).
    pub(crate) fn release(&self, m: &mut Mpi) {
        m.types.release(self.datatype, &m.attrs);
    }
}

unsafe fn init(m: &mut Mpi, op: Op, request: *mut MPI_Request) -> Res {
    m.comm(op.comm).ok_or_else(|| bad_comm(op.comm))?;
    if op.count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("negative count {}", op.count)));
    }
    let request = out(request, "request")?;
    // The request holds its datatype: the program may free it and still start the request
    // (MPI 3.1 section 4.1.9; MPICH counts the reference too). Released by MPI_Request_free.
    m.types.retain(op.datatype);
    *request = m.add_request(Req::Persistent { op, active: None });
    Ok(())
}

macro_rules! send_init {
    ($name:ident, $cname:ident, $kind:expr) => {
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(
                buf: *const c_void,
                count: Count,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
                request: *mut MPI_Request,
            ) -> c_int {
                call(FUNCTION, comm, |m| {
                    let op = Op { kind: $kind, buf: buf as usize, count: count.into(), datatype, peer: dest, tag, comm };
                    init(m, op, request)
                })
            }
        }
    };
}

send_init!(PMPI_Send_init, PMPI_Send_init_c, Kind::Send(SendMode::Standard));
send_init!(PMPI_Ssend_init, PMPI_Ssend_init_c, Kind::Send(SendMode::Synchronous));
send_init!(PMPI_Rsend_init, PMPI_Rsend_init_c, Kind::Send(SendMode::Standard));
send_init!(PMPI_Bsend_init, PMPI_Bsend_init_c, Kind::Bsend);

counted! {
    [PMPI_Recv_init; Count = c_int] [PMPI_Recv_init_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        call(FUNCTION, comm, |m| {
            let op = Op { kind: Kind::Recv, buf: buf as usize, count: count.into(), datatype, peer: source, tag, comm };
            init(m, op, request)
        })
    }
}

unsafe fn start(m: &mut Mpi, h: MPI_Request) -> Res {
    let op = match m.request_mut(h) {
        Some(Req::Persistent { active: None, op }) => *op,
        Some(Req::Persistent { .. }) => {
            return Err(err(
                MPI_ERR_REQUEST,
                format!("persistent request {h:#x} is already active (started, not completed)"),
            ))
        }
        _ => {
            let h = crate::error::handle_name(h);
            return Err(err(MPI_ERR_REQUEST, format!("request {h} is not a persistent request")));
        }
    };
    let started = op.start(m)?;
    if let Some(Req::Persistent { active, .. }) = m.request_mut(h) {
        *active = Some(Box::new(started));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Start(request: *mut MPI_Request) -> c_int {
    call("MPI_Start", MPI_COMM_WORLD, |m| start(m, *out(request, "request")?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    call("MPI_Startall", MPI_COMM_WORLD, |m| {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("negative count {count}")));
        }
        if count > 0 && requests.is_null() {
            return Err(err(MPI_ERR_ARG, "null array_of_requests pointer"));
        }
        for i in 0..count as usize {
            start(m, *requests.add(i))?;
        }
        Ok(())
    })
}

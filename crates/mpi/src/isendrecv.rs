//! MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.0 section 3.10), with their `_c` twins: a
//! receive and a send started together behind one request, which completes when both have;
//! its status is the receive's.

use std::ffi::{c_int, c_void};

use billboard::SendMode;

use crate::abi::*;
use crate::error::{call, null_arg, Res};
use crate::p2p::{packed_copy, start_recv, start_send};
use crate::request::Ended;
use crate::state::{Mpi, Req};

/// The two operations of an MPI_Isendrecv, and the packed copy of the outgoing data that
/// MPI_Isendrecv_replace sends (its buffer is the receive's): it lives until the send is done.
pub(crate) struct Pair {
    pub recv: Req,
    pub send: Req,
    pub packed: Vec<u8>,
}

impl Pair {
    /// How the pair ended from how each part did: the receive's status, and the first error
    /// (the receive's, then the send's).
    pub fn ended(recv: Ended, send: Ended) -> Ended {
        match (recv.error.is_some(), send.error) {
            (false, Some(e)) => Ended { status: recv.status, error: Some(e), comm: send.comm },
            _ => recv,
        }
    }
}

/// Starts the receive, then the send, and stores the pair.
#[allow(clippy::too_many_arguments)]
unsafe fn start(
    m: &mut Mpi,
    send: (*const c_void, i64, MPI_Datatype, c_int, c_int),
    recv: (*mut c_void, i64, MPI_Datatype, c_int, c_int),
    comm: MPI_Comm,
    packed: Vec<u8>,
) -> Res<MPI_Request> {
    let (rbuf, rcount, rtype, source, rtag) = recv;
    let (sbuf, scount, stype, dest, stag) = send;
    let mut r = start_recv(m, rbuf, rcount, rtype, source, rtag, comm)?.holding(m, rtype);
    let s = match start_send(m, sbuf, scount, stype, dest, stag, comm, SendMode::Standard) {
        Ok(s) => s.holding(m, stype),
        Err(e) => {
            // The receive is posted: it is cancelled and completed before the error returns.
            if let Req::Active { req, .. } = &mut r {
                req.cancel();
            }
            crate::request::end(r);
            return Err(e);
        }
    };
    Ok(m.add_request(Req::Pair(Box::new(Pair { recv: r, send: s, packed }))))
}

counted! {
    [PMPI_Isendrecv; Count = c_int] [PMPI_Isendrecv_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        if request.is_null() {
            return null_arg(FUNCTION, comm, "request");
        }
        call(FUNCTION, comm, |m| {
            let send = (sendbuf, sendcount.into(), sendtype, dest, sendtag);
            let recv = (recvbuf, recvcount.into(), recvtype, source, recvtag);
            *request = start(m, send, recv, comm, Vec::new())?;
            Ok(())
        })
    }
}

counted! {
    [PMPI_Isendrecv_replace; Count = c_int] [PMPI_Isendrecv_replace_c; Count = MPI_Count]
    fn(
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        if request.is_null() {
            return null_arg(FUNCTION, comm, "request");
        }
        let count = i64::from(count);
        call(FUNCTION, comm, |m| {
            // Sent as bytes from a packed copy, which the request keeps.
            let packed = packed_copy(m, buf, count, datatype, dest)?;
            let send = (packed.as_ptr().cast(), packed.len() as i64, MPI_BYTE, dest, sendtag);
            *request = start(m, send, (buf, count, datatype, source, recvtag), comm, packed)?;
            Ok(())
        })
    }
}

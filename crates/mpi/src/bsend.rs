//! Buffered sends: MPI_Buffer_attach / detach and MPI_Bsend / MPI_Ibsend.
//!
//! A buffered send completes at once: its data is copied and the copy is sent. The copy lives
//! on our heap rather than in the attached buffer, but it is accounted against the attached
//! size (with MPI_BSEND_OVERHEAD per message) exactly as MPI specifies, so a program that
//! overruns its buffer gets MPI_ERR_BUFFER here as it would with MPICH.

use std::ffi::{c_int, c_void};

use billboard::{Request, SendMode};

use crate::abi::*;
use crate::datatype::{self, Dir};
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::state::{self, Mpi};

const OVERHEAD: usize = 96; // MPI_BSEND_OVERHEAD in mpi.h

#[derive(Default)]
pub(crate) struct Bsend {
    /// The attached buffer: address and size.
    attached: Option<(usize, usize)>,
    /// Copies still being sent, with the space each takes in the attached buffer.
    in_flight: Vec<(Vec<u8>, Request<'static>, usize)>,
    used: usize,
}

impl Bsend {
    /// Forgets the copies whose sends have completed, freeing their space.
    fn reap(&mut self) {
        let mut freed = 0;
        self.in_flight.retain_mut(|(_, req, space)| match req.test() {
            Ok(None) => true,
            _ => {
                freed += *space;
                false
            }
        });
        self.used -= freed;
    }
}

/// Copies the message and starts sending the copy.
pub(crate) unsafe fn start(
    m: &mut Mpi,
    buf: *const c_void,
    count: i64,
    t: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Res {
    let layout = datatype::layout_in(m, t)?;
    let len = layout.bytes(count)?;
    let c = m.comm(comm).ok_or_else(|| bad_comm(comm))?.comm.clone();
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    let b = &mut m.bsend;
    b.reap();
    let space = len + OVERHEAD;
    let Some((_, size)) = b.attached else {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("buffered send of {len} bytes with no buffer attached (MPI_Buffer_attach)"),
        ));
    };
    if b.used + space > size {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "buffered send of {len} bytes needs {space} bytes of the attached buffer (MPI_BSEND_OVERHEAD included); \
                 {} of {size} are free",
                size - b.used
            ),
        ));
    }
    let copy = datatype::view(&layout, buf, count, Dir::Read)?.bytes().to_vec();
    let dest = usize::try_from(dest).map_err(|_| err(MPI_ERR_RANK, format!("invalid destination rank {dest}")))?;
    // SAFETY: the copy's heap memory stays put while it is kept beside its request.
    let req = c.isend_raw(copy.as_ptr(), len, dest, tag, SendMode::Standard)?;
    b.in_flight.push((copy, req, space));
    b.used += space;
    Ok(())
}

counted! {
    [PMPI_Bsend; Count = c_int] [PMPI_Bsend_c; Count = MPI_Count]
    fn(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        call(FUNCTION, comm, |m| start(m, buf, count.into(), datatype, dest, tag, comm))
    }
}

counted! {
    [PMPI_Ibsend; Count = c_int] [PMPI_Ibsend_c; Count = MPI_Count]
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
            let request = out(request, "request")?;
            start(m, buf, count.into(), datatype, dest, tag, comm)?;
            *request = state::SENT; // complete at once: the data is copied
            Ok(())
        })
    }
}

counted! {
    [PMPI_Buffer_attach; Count = c_int] [PMPI_Buffer_attach_c; Count = MPI_Count]
    fn(buffer: *mut c_void, size: Count) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            let size = usize::try_from(size)
                .map_err(|_| err(MPI_ERR_ARG, format!("{FUNCTION}: negative size {size}")))?;
            if m.bsend.attached.is_some() {
                return Err(err(MPI_ERR_BUFFER, "a buffer is already attached (MPI_Buffer_detach it first)"));
            }
            m.bsend.attached = Some((buffer as usize, size));
            Ok(())
        })
    }
}

counted! {
    [PMPI_Buffer_detach; Count = c_int] [PMPI_Buffer_detach_c; Count = MPI_Count]
    fn(buffer_addr: *mut c_void, size: *mut Count) -> c_int {
        call_unlocked(FUNCTION, MPI_COMM_WORLD, || {
            // Detach waits until every buffered message has gone; wait without the tables.
            let (attached, in_flight) = state::with(|m| (m.bsend.attached.take(), std::mem::take(&mut m.bsend.in_flight)))
                .expect("MPI is running");
            state::with(|m| m.bsend.used = 0);
            for (_copy, req, _) in in_flight {
                req.wait()?;
            }
            let (addr, len) = attached.unwrap_or((0, 0));
            if !buffer_addr.is_null() {
                *(buffer_addr as *mut *mut c_void) = addr as *mut c_void;
            }
            if !size.is_null() {
                // Only a buffer attached by MPI_Buffer_attach_c can be too big for an int.
                *size = Count::try_from(len).unwrap_or(Count::MAX);
            }
            Ok(())
        })
    }
}

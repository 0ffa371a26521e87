//! The exported data-access functions (MPI 4.0 section 14.4), each family written once over
//! `access.rs`: blocking (a status), nonblocking (a request, which completes when the I/O
//! thread has moved the data: `background.rs`), and split collective (`_begin` does the access, `_end`
//! hands back its status). Every one with a count has its large-count (`_c`) twin.

use std::ffi::{c_int, c_void};

use super::access::{access, start, Access, Position};
use super::{call_file, call_no_file, file, MPI_File, Split};
use crate::abi::*;
use crate::error::{err, out};
use crate::state::{self, Req};

/// Copies a status out unless the program ignores it (`MPI_STATUS_IGNORE`; a null pointer is
/// taken as ignoring it too, as ROMIO never writes through it unchecked).
unsafe fn give_status(status: *mut MPI_Status, st: &MPI_Status) {
    if !status.is_null() {
        crate::request::fill_status(status, st);
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn blocking(
    function: &'static str,
    fh: MPI_File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
    collective: bool,
    status: *mut MPI_Status,
) -> c_int {
    call_file(function, fh, |f| {
        let st = access(f, pos, buf, count, datatype, what, collective)?;
        give_status(status, &st);
        Ok(())
    })
}

/// A nonblocking access, collective or not, starts now and moves its data in the background
/// (`background.rs`), each rank's its own: a nonblocking collective must not wait for the
/// others (they may start theirs after a message from this rank), and its completion promises
/// nothing about theirs.
#[allow(clippy::too_many_arguments)]
unsafe fn nonblocking(
    function: &'static str,
    fh: MPI_File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
    request: *mut MPI_Request,
) -> c_int {
    // Not `call_file`, which would wait for the file's accesses in flight: this one queues
    // behind them.
    call_no_file(function, fh, || {
        let f = file(fh)?;
        let request = out(request, "request")?;
        let pending = start(&f, fh, pos, buf, count, datatype, what)?;
        *request = state::with(|m| m.add_request(Req::File(pending))).expect("MPI is running");
        Ok(())
    })
}

unsafe fn begin(
    function: &'static str,
    fh: MPI_File,
    pos: Position,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: Access,
) -> c_int {
    call_file(function, fh, |f| {
        if let Some(s) = &f.state().split {
            return Err(err(
                MPI_ERR_IO,
                format!("{} is still in progress on {} (one at a time)", s.function, f.name()),
            ));
        }
        let status = access(f, pos, buf, count, datatype, what, true)?;
        f.state().split = Some(Split { function, status });
        Ok(())
    })
}

unsafe fn end(function: &'static str, begun: &'static str, fh: MPI_File, status: *mut MPI_Status) -> c_int {
    call_file(function, fh, |f| {
        let split = f.state().split.take();
        match split {
            Some(s) if s.function == begun => {
                give_status(status, &s.status);
                Ok(())
            }
            Some(s) => {
                let msg = format!("{function} does not end {}, which is in progress on {}", s.function, f.name());
                f.state().split = Some(s);
                Err(err(MPI_ERR_IO, msg))
            }
            None => Err(err(MPI_ERR_IO, format!("{function} without {begun} on {}", f.name()))),
        }
    })
}

/// `(fh, offset, buf, count, datatype, status)`: explicit offsets.
macro_rules! at_blocking {
    ($($name:ident $cname:ident $what:ident $coll:literal;)*) => { $(
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
                blocking(FUNCTION, fh, Position::At(offset), buf, count.into(), datatype, Access::$what, $coll, status)
            }
        }
    )* };
}

/// `(fh, buf, count, datatype, status)`: a file pointer.
macro_rules! pointer_blocking {
    ($($name:ident $cname:ident $pos:ident $what:ident $coll:literal;)*) => { $(
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
                blocking(FUNCTION, fh, Position::$pos, buf, count.into(), datatype, Access::$what, $coll, status)
            }
        }
    )* };
}

/// `(fh, offset, buf, count, datatype, request)`.
macro_rules! at_nonblocking {
    ($($name:ident $cname:ident $what:ident;)*) => { $(
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
                nonblocking(FUNCTION, fh, Position::At(offset), buf, count.into(), datatype, Access::$what, request)
            }
        }
    )* };
}

/// `(fh, buf, count, datatype, request)`.
macro_rules! pointer_nonblocking {
    ($($name:ident $cname:ident $pos:ident $what:ident;)*) => { $(
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
                nonblocking(FUNCTION, fh, Position::$pos, buf, count.into(), datatype, Access::$what, request)
            }
        }
    )* };
}

at_blocking! {
    PMPI_File_read_at PMPI_File_read_at_c Read false;
    PMPI_File_write_at PMPI_File_write_at_c Write false;
    PMPI_File_read_at_all PMPI_File_read_at_all_c Read true;
    PMPI_File_write_at_all PMPI_File_write_at_all_c Write true;
}

pointer_blocking! {
    PMPI_File_read PMPI_File_read_c Individual Read false;
    PMPI_File_write PMPI_File_write_c Individual Write false;
    PMPI_File_read_all PMPI_File_read_all_c Individual Read true;
    PMPI_File_write_all PMPI_File_write_all_c Individual Write true;
    PMPI_File_read_shared PMPI_File_read_shared_c Shared Read false;
    PMPI_File_write_shared PMPI_File_write_shared_c Shared Write false;
    PMPI_File_read_ordered PMPI_File_read_ordered_c Ordered Read true;
    PMPI_File_write_ordered PMPI_File_write_ordered_c Ordered Write true;
}

at_nonblocking! {
    PMPI_File_iread_at PMPI_File_iread_at_c Read;
    PMPI_File_iwrite_at PMPI_File_iwrite_at_c Write;
    PMPI_File_iread_at_all PMPI_File_iread_at_all_c Read;
    PMPI_File_iwrite_at_all PMPI_File_iwrite_at_all_c Write;
}

pointer_nonblocking! {
    PMPI_File_iread PMPI_File_iread_c Individual Read;
    PMPI_File_iwrite PMPI_File_iwrite_c Individual Write;
    PMPI_File_iread_all PMPI_File_iread_all_c Individual Read;
    PMPI_File_iwrite_all PMPI_File_iwrite_all_c Individual Write;
    PMPI_File_iread_shared PMPI_File_iread_shared_c Shared Read;
    PMPI_File_iwrite_shared PMPI_File_iwrite_shared_c Shared Write;
}

counted! {
    [PMPI_File_read_at_all_begin; Count = c_int] [PMPI_File_read_at_all_begin_c; Count = MPI_Count]
    fn(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        begin("MPI_File_read_at_all_begin", fh, Position::At(offset), buf, count.into(), datatype, Access::Read)
    }
}

counted! {
    [PMPI_File_write_at_all_begin; Count = c_int] [PMPI_File_write_at_all_begin_c; Count = MPI_Count]
    fn(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        begin("MPI_File_write_at_all_begin", fh, Position::At(offset), buf, count.into(), datatype, Access::Write)
    }
}

/// `(fh, buf, count, datatype)`: split collectives at a file pointer. Each begin is named
/// without `_c`, for its end to match either twin.
macro_rules! pointer_begin {
    ($($name:ident $cname:ident $begun:literal $pos:ident $what:ident;)*) => { $(
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
                begin($begun, fh, Position::$pos, buf, count.into(), datatype, Access::$what)
            }
        }
    )* };
}

pointer_begin! {
    PMPI_File_read_all_begin PMPI_File_read_all_begin_c "MPI_File_read_all_begin" Individual Read;
    PMPI_File_write_all_begin PMPI_File_write_all_begin_c "MPI_File_write_all_begin" Individual Write;
    PMPI_File_read_ordered_begin PMPI_File_read_ordered_begin_c "MPI_File_read_ordered_begin" Ordered Read;
    PMPI_File_write_ordered_begin PMPI_File_write_ordered_begin_c "MPI_File_write_ordered_begin" Ordered Write;
}

macro_rules! split_end {
    ($($name:ident $function:literal $begun:literal;)*) => { $(
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) -> c_int {
            let _ = buf;
            end($function, $begun, fh, status)
        }
    )* };
}

split_end! {
    PMPI_File_read_at_all_end "MPI_File_read_at_all_end" "MPI_File_read_at_all_begin";
    PMPI_File_write_at_all_end "MPI_File_write_at_all_end" "MPI_File_write_at_all_begin";
    PMPI_File_read_all_end "MPI_File_read_all_end" "MPI_File_read_all_begin";
    PMPI_File_write_all_end "MPI_File_write_all_end" "MPI_File_write_all_begin";
    PMPI_File_read_ordered_end "MPI_File_read_ordered_end" "MPI_File_read_ordered_begin";
    PMPI_File_write_ordered_end "MPI_File_write_ordered_end" "MPI_File_write_ordered_begin";
}

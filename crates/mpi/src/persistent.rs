//! Persistent requests: MPI_Send_init / Bsend_init / Ssend_init / Rsend_init / Recv_init and
//! MPI 4.0's persistent collectives (MPI_Barrier_init, MPI_Bcast_init, ... in `coll/`) record
//! an operation, MPI_Start / MPI_Startall start it, and completing it (wait, test) leaves the
//! request inactive for the next start. A collective is started as the schedule its
//! nonblocking form starts (a new instance each start), outside the state: building a
//! schedule reads datatypes and communicators through the state itself.

use std::ffi::{c_int, c_void};
use std::rc::Rc;

use billboard::{Communicator, SendMode};

use crate::abi::*;
use crate::coll::{Scheduled, Started};
use crate::error::{bad_comm, call, call_unlocked, err, out, Res};
use crate::p2p::{start_recv, start_send};
use crate::request_hook::{Hook, Hooked};
use crate::state::{self, Mpi, Req};

/// What starts one instance of a persistent collective on its communicator: the nonblocking
/// form's start, with the arguments of the `_init` call.
pub(crate) type CollectiveStart = dyn Fn(&Communicator) -> Res<Started>;

#[derive(Clone)]
enum Kind {
    Send(SendMode),
    Bsend,
    Recv,
    /// The start, and the datatypes the request holds (the program may free them meanwhile).
    Collective(Rc<CollectiveStart>, Rc<[MPI_Datatype]>),
    /// Partitioned communication: a send or a receive in `parts` parts of `count` elements.
    Partitioned {
        send: bool,
        parts: usize,
    },
}

/// The operation a persistent request starts.
#[derive(Clone)]
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
    /// The Fortran library's callback for the packed copies of array sections
    /// (`crate::request_hook`): run before each start, and at each completion.
    hook: Option<Hook>,
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
            Kind::Collective(..) => unreachable!("a collective starts outside the state"),
            Kind::Partitioned { send, parts } => {
                let args = (self.buf, self.count, self.datatype, self.peer, self.tag, self.comm);
                Ok(Req::Partitioned(Box::new(crate::partitioned::Partitions::start(m, send, parts, args)?)))
            }
        }
    }
}

impl Op {
    /// Attaches the Fortran library's callback (`crate::request_hook`).
    pub(crate) fn set_hook(&mut self, hook: Hook) -> Res {
        if self.hook.is_some() || self.partitioned() {
            // A partitioned request's parts are read and written while it is active.
            return Err(err(MPI_ERR_REQUEST, "bb_request_hook: not for this persistent request"));
        }
        self.hook = Some(hook);
        Ok(())
    }

    /// Runs the callback, if the request has one, for `phase`.
    pub(crate) fn hook_run(&self, phase: c_int) {
        if let Some(hook) = self.hook {
            hook.run(phase);
        }
    }

    pub(crate) fn partitioned(&self) -> bool {
        matches!(self.kind, Kind::Partitioned { .. })
    }

    /// Lets go of the datatype the request held (MPI_Request_free of the request).
    pub(crate) fn release(&self, m: &mut Mpi) {
        match &self.kind {
            Kind::Collective(_, types) => types.iter().for_each(|&t| m.types.release(t, &m.attrs)),
            _ => m.types.release(self.datatype, &m.attrs),
        }
    }
}

/// MPI_Psend_init / MPI_Precv_init: a persistent request whose starts are partitioned
/// (`crate::partitioned`).
pub(crate) unsafe fn partitioned_init(
    m: &mut Mpi,
    send: bool,
    parts: usize,
    (buf, count, datatype, peer, tag, comm): crate::partitioned::Args,
) -> Res<MPI_Request> {
    let op = Op { kind: Kind::Partitioned { send, parts }, buf, count, datatype, peer, tag, comm, hook: None };
    let mut request = MPI_REQUEST_NULL;
    init(m, op, &mut request)?;
    Ok(request)
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
                    let op = Op { kind: $kind, buf: buf as usize, count: count.into(), datatype, peer: dest, tag, comm, hook: None };
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
            let op = Op { kind: Kind::Recv, buf: buf as usize, count: count.into(), datatype, peer: source, tag, comm, hook: None };
            init(m, op, request)
        })
    }
}

/// Starts persistent request `h`: a point-to-point one under the state; a collective one's
/// schedule is built outside it, then recorded as the request's active operation.
unsafe fn start(h: MPI_Request) -> Res {
    let op = state::with(|m| -> Res<Op> {
        let op = match m.request_mut(h) {
            Some(Req::Persistent { active: None, op }) => op.clone(),
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
        op.hook_run(crate::request_hook::START);
        if !matches!(op.kind, Kind::Collective(..)) {
            let started = op.start(m)?;
            activate(m, h, started);
        }
        Ok(op)
    })
    .expect("MPI is running")?;
    if let Kind::Collective(begin, _) = &op.kind {
        let c = state::with(|m| m.comm(op.comm).map(|c| c.comm.clone())).flatten().ok_or_else(|| bad_comm(op.comm))?;
        let (coll, done) = begin(&c)?;
        let started = Req::Background { op: Box::new(Scheduled::new(coll, done)), comm: op.comm };
        state::with(|m| activate(m, h, started));
    }
    Ok(())
}

fn activate(m: &mut Mpi, h: MPI_Request, started: Req) {
    if let Some(Req::Persistent { active, op }) = m.request_mut(h) {
        let started = match op.hook {
            Some(hook) => Hooked::request(started, hook, true),
            None => started,
        };
        *active = Some(Box::new(started));
    }
}

/// The datatypes among a collective's arguments, given as (name, value) pairs: those named
/// like MPI's datatype parameters (`t`, `sendtype`, `recvtype`). Arrays of datatypes
/// (MPI_Alltoallw's) are read at each start and not held.
pub(crate) fn datatype_args(args: &[(&str, &dyn std::any::Any)]) -> Vec<MPI_Datatype> {
    let named = |n: &str| matches!(n, "t" | "sendtype" | "recvtype" | "datatype");
    args.iter().filter(|(n, _)| named(n)).filter_map(|(_, v)| v.downcast_ref::<MPI_Datatype>().copied()).collect()
}

/// MPI_Bcast_init and the other persistent collectives: a request that starts `begin` on
/// `comm` at each MPI_Start, holding `types` until it is freed (as MPICH's requests hold
/// theirs). The hints (`info`) change nothing here; they are checked.
pub(crate) unsafe fn collective_init(
    function: &'static str,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
    types: Vec<MPI_Datatype>,
    begin: Rc<CollectiveStart>,
) -> c_int {
    call(function, comm, |m| {
        m.comm(comm).ok_or_else(|| bad_comm(comm))?;
        m.check_info(info)?;
        let request = out(request, "request")?;
        for &t in &types {
            m.types.retain(t);
        }
        let op = Op {
            kind: Kind::Collective(begin, types.into()),
            buf: 0,
            count: 0,
            datatype: MPI_DATATYPE_NULL,
            peer: MPI_PROC_NULL,
            tag: 0,
            comm,
            hook: None,
        };
        *request = m.add_request(Req::Persistent { op, active: None });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Start(request: *mut MPI_Request) -> c_int {
    call_unlocked("MPI_Start", MPI_COMM_WORLD, || start(*out(request, "request")?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    call_unlocked("MPI_Startall", MPI_COMM_WORLD, || {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("negative count {count}")));
        }
        if count > 0 && requests.is_null() {
            return Err(err(MPI_ERR_ARG, "null array_of_requests pointer"));
        }
        for i in 0..count as usize {
            start(*requests.add(i))?;
        }
        Ok(())
    })
}

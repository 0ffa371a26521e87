//! The process-wide state behind MPI's integer handles, and how calls reach it.
//!
//! MPI is a C library of global functions, so the tables live in one static. Access goes
//! through [`with`]. At `MPI_THREAD_MULTIPLE` it is serialized by a mutex; at the lower levels
//! the program promises that no two threads call MPI at once, and taking a lock on every call
//! would only cost time (the level is fixed by `MPI_Init_thread`, so this choice is made once).
//! The tables are never held while a call blocks: blocking calls take what they need (a
//! communicator, a request) out under [`with`] and wait outside it, on the engine, which has
//! its own lock and releases it while waiting. `with` is not re-entrant.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

use billboard::{Communicator, Request, Universe};

use crate::abi::*;
use crate::datatype::Staging;

/// Where the library is in its life: MPI allows one init and one finalize per process.
pub(crate) const NOT_STARTED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const FINALIZED: u8 = 2;

pub(crate) struct Comm {
    pub comm: Communicator,
    pub errhandler: MPI_Errhandler,
    pub name: String,
}

/// What an `MPI_Request` handle stands for.
pub(crate) enum Req {
    /// An operation in the engine, on communicator `comm` (whose error handler applies), with
    /// the packed copy of non-contiguous data it sends or receives into (unpacked at completion).
    Active { req: Request<'static>, comm: MPI_Comm, staged: Option<Box<Staging>> },
    /// Already complete with this status (e.g. a receive from `MPI_PROC_NULL`).
    Complete(MPI_Status),
    /// A persistent request (MPI_Send_init, ...): what MPI_Start starts, and the operation it
    /// started last (`None`: inactive). Completing it leaves the handle for the next start.
    Persistent { op: crate::persistent::Op, active: Option<Box<Req>> },
    /// MPI_Comm_idup: the communicator being made in the background, and its reserved handle.
    Idup(Box<crate::comm_create::Idup>),
    /// A nonblocking collective in flight (MPI_Ibarrier, MPI_Ibcast, ...), on communicator
    /// `comm`.
    Background { op: Box<crate::coll::Scheduled>, comm: MPI_Comm },
}

impl Req {
    /// The communicator whose error handler applies to the request.
    pub fn comm(&self) -> MPI_Comm {
        match self {
            Req::Active { comm, .. } | Req::Background { comm, .. } => *comm,
            Req::Persistent { op, .. } => op.comm,
            Req::Idup(idup) => idup.parent,
            Req::Complete(_) => MPI_COMM_WORLD,
        }
    }
}

pub(crate) struct Mpi {
    pub universe: Universe,
    /// Communicators by table index: 0 is `MPI_COMM_WORLD`, 1 is `MPI_COMM_SELF`.
    pub comms: Vec<Option<Comm>>,
    /// Table indices held for communicators an MPI_Comm_idup is still making.
    pub reserved_comms: Vec<usize>,
    pub requests: Vec<Option<Req>>,
    /// What `SENT` stands for when a call asks for it by reference.
    pub sent: Req,
    pub free_requests: Vec<u32>,
    /// Operations whose handle `MPI_Request_free` released; they complete on their own.
    pub detached: Vec<Request<'static>>,
    /// Messages taken out of matching by MPI_Mprobe / MPI_Improbe, waiting for MPI_Mrecv.
    pub messages: Vec<Option<billboard::Message>>,
    /// Buffered sends' attached buffer and the sends still using it.
    pub bsend: crate::bsend::Bsend,
    /// Operators from `MPI_Op_create`: function and commutativity.
    pub user_ops: Vec<Option<(crate::ops::UserFunction, bool)>>,
    // Tables of the families still being written; each module fills its own.
    pub types: crate::datatype::Types,
    pub groups: crate::group::Groups,
    pub infos: crate::info::Infos,
    pub attrs: crate::attr::Attrs,
    pub topos: crate::topo::Topos,
    pub errhandlers: crate::errhandler::Errhandlers,
    pub wins: crate::win::Wins,
    pub thread_level: i32,
    pub main_thread: std::thread::ThreadId,
    pub world_rank: usize,
}

struct Global {
    state: UnsafeCell<Option<Mpi>>,
    lock: Mutex<()>,
    multiple: AtomicBool,
    phase: AtomicU8,
}

// SAFETY: every access to `state` goes through `with`, which holds `lock` whenever threads may
// call concurrently (MPI_THREAD_MULTIPLE); below that level the MPI standard forbids
// concurrent calls. The `Rc`s inside never leave the state.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global {
    state: UnsafeCell::new(None),
    lock: Mutex::new(()),
    multiple: AtomicBool::new(false),
    phase: AtomicU8::new(NOT_STARTED),
};

/// Puts `value` into a slot of a handle table, one that `free` lists if any, and returns its
/// index (each object family's table is a `Vec<Option<T>>` with such a free list).
#[inline]
pub(crate) fn store<T>(table: &mut Vec<Option<T>>, free: &mut Vec<u32>, value: T) -> u32 {
    match free.pop() {
        Some(i) => {
            table[i as usize] = Some(value);
            i
        }
        None => {
            table.push(Some(value));
            (table.len() - 1) as u32
        }
    }
}

pub(crate) fn phase() -> u8 {
    GLOBAL.phase.load(Ordering::Acquire)
}

/// Runs `f` on the state; `None` before `MPI_Init` or after `MPI_Finalize`.
pub(crate) fn with<R>(f: impl FnOnce(&mut Mpi) -> R) -> Option<R> {
    let _guard = GLOBAL.multiple.load(Ordering::Relaxed).then(|| GLOBAL.lock.lock().unwrap_or_else(|e| e.into_inner()));
    // SAFETY: see `Global`: exclusive access by lock or by the program's promise.
    let state = unsafe { &mut *GLOBAL.state.get() };
    state.as_mut().map(f)
}

/// Whether several threads may call MPI at once (MPI_THREAD_MULTIPLE): then a call must not
/// block while it holds the tables.
#[inline]
pub(crate) fn multiple() -> bool {
    GLOBAL.multiple.load(Ordering::Relaxed)
}

pub(crate) fn install(mpi: Mpi) {
    GLOBAL.multiple.store(mpi.thread_level == MPI_THREAD_MULTIPLE, Ordering::Relaxed);
    let _guard = GLOBAL.lock.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: MPI_Init runs before any other MPI call, on one thread.
    unsafe { *GLOBAL.state.get() = Some(mpi) };
    GLOBAL.phase.store(RUNNING, Ordering::Release);
}

/// Takes the state out for `MPI_Finalize`.
pub(crate) fn take() -> Option<Mpi> {
    let _guard = GLOBAL.lock.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: as in `with`; finalize is called once, by the main thread.
    let mpi = unsafe { (*GLOBAL.state.get()).take() };
    GLOBAL.phase.store(FINALIZED, Ordering::Release);
    mpi
}

/// Table index of a communicator handle.
pub(crate) fn comm_index(h: MPI_Comm) -> Option<usize> {
    match h {
        MPI_COMM_WORLD => Some(0),
        MPI_COMM_SELF => Some(1),
        _ if handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::COMM => {
            Some(handle_index(h) as usize)
        }
        _ => None,
    }
}

/// Handle of the communicator at table index `i`.
pub(crate) fn comm_handle(i: usize) -> MPI_Comm {
    match i {
        0 => MPI_COMM_WORLD,
        1 => MPI_COMM_SELF,
        _ => make_handle(HandleKind::Direct, object_type::COMM, i as u32),
    }
}

impl Mpi {
    pub fn comm(&self, h: MPI_Comm) -> Option<&Comm> {
        self.comms.get(comm_index(h)?)?.as_ref()
    }

    pub fn comm_mut(&mut self, h: MPI_Comm) -> Option<&mut Comm> {
        self.comms.get_mut(comm_index(h)?)?.as_mut()
    }

    /// Stores a new communicator and returns its handle.
    pub fn add_comm(&mut self, comm: Communicator) -> MPI_Comm {
        let i = self.free_comm_index();
        self.comms[i] = Some(Comm { comm, errhandler: MPI_ERRORS_ARE_FATAL, name: String::new() });
        comm_handle(i)
    }

    /// An empty table index that no idup holds (the table grows by one if there is none).
    fn free_comm_index(&mut self) -> usize {
        let reserved = &self.reserved_comms;
        match (2..self.comms.len()).find(|&i| self.comms[i].is_none() && !reserved.contains(&i)) {
            Some(i) => i,
            None => {
                self.comms.push(None);
                self.comms.len() - 1
            }
        }
    }

    /// Holds a handle for a communicator still being made: until [`Mpi::fill_reserved`], the
    /// handle is an invalid communicator to every call.
    pub fn reserve_comm(&mut self) -> MPI_Comm {
        let i = self.free_comm_index();
        self.reserved_comms.push(i);
        comm_handle(i)
    }

    /// Ends a reservation: with the communicator made (then it takes its parent's error
    /// handler), or with none (the creation failed).
    pub fn fill_reserved(&mut self, h: MPI_Comm, made: Option<(Communicator, MPI_Errhandler)>) {
        let i = comm_index(h).expect("a reserved handle");
        self.reserved_comms.retain(|&r| r != i);
        self.comms[i] = made.map(|(comm, errhandler)| Comm { comm, errhandler, name: String::new() });
    }

    /// Stores a request and returns its handle.
    #[inline(always)]
    pub fn add_request(&mut self, req: Req) -> MPI_Request {
        let i = store(&mut self.requests, &mut self.free_requests, req);
        make_handle(HandleKind::Direct, object_type::REQUEST, i)
    }

    /// Stores a send's request: one that completed as it started (an eager send of data that
    /// needed no packing) takes the shared [`SENT`] handle instead of a table entry.
    #[inline(always)]
    pub fn add_send(&mut self, req: Req) -> MPI_Request {
        match req {
            // Taken apart here, so that only the finished request is dropped (inline, nothing
            // to do), not a whole `Req`.
            Req::Active { req: r, staged: None, .. } if r.is_finished() => {
                drop(r);
                SENT
            }
            other => self.add_request(other),
        }
    }

    /// Takes a request out of the table (it is complete or being freed).
    pub fn take_request(&mut self, h: MPI_Request) -> Option<Req> {
        if h == SENT {
            return Some(Req::Complete(MPI_Status::default()));
        }
        let i = request_index(h)?;
        let req = self.requests.get_mut(i)?.take()?;
        self.free_requests.push(i as u32);
        Some(req)
    }

    /// Takes an operation in the engine (`Req::Active`) out of the table, with its
    /// communicator and staging; `None`, leaving the table as it was, for any other handle.
    pub fn take_active(&mut self, h: MPI_Request) -> Option<(Request<'static>, MPI_Comm, Option<Box<Staging>>)> {
        let i = request_index(h)?;
        let slot = self.requests.get_mut(i)?;
        if !matches!(slot, Some(Req::Active { .. })) {
            return None;
        }
        let Some(Req::Active { req, comm, staged }) = slot.take() else { unreachable!() };
        self.free_requests.push(i as u32);
        Some((req, comm, staged))
    }

    pub fn request_mut(&mut self, h: MPI_Request) -> Option<&mut Req> {
        if h == SENT {
            self.sent = Req::Complete(MPI_Status::default());
            return Some(&mut self.sent);
        }
        self.requests.get_mut(request_index(h)?)?.as_mut()
    }
}

impl Mpi {
    pub fn add_user_op(&mut self, f: crate::ops::UserFunction, commute: bool) -> MPI_Op {
        self.user_ops.push(Some((f, commute)));
        make_handle(HandleKind::Direct, object_type::OP, (self.user_ops.len() - 1) as u32)
    }

    pub fn user_op(&self, op: MPI_Op) -> Option<(crate::ops::UserFunction, bool)> {
        if handle_kind(op) != HandleKind::Direct || handle_object_type(op) != object_type::OP {
            return None;
        }
        *self.user_ops.get(handle_index(op) as usize)?
    }

    pub fn free_user_op(&mut self, op: MPI_Op) -> bool {
        if self.user_op(op).is_none() {
            return false;
        }
        self.user_ops[handle_index(op) as usize] = None;
        true
    }
}

/// The handle of every send that completed as it started (an eager send): it needs no table
/// entry, and waiting on it, testing it or freeing it finds it complete at once. The last
/// index of the direct request space, which the table never reaches.
pub(crate) const SENT: MPI_Request = make_handle(HandleKind::Direct, object_type::REQUEST, (1 << 26) - 1);

fn request_index(h: MPI_Request) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::REQUEST)
        .then_some(handle_index(h) as usize)
}

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
    /// Made by an MPI_Comm_idup still in flight: `comm` is then the parent's communicator
    /// (the same members and ranks), which answers local calls (size, rank, group, error
    /// handler, attributes, name: MPICH allows them at once) but must carry no traffic.
    pub pending: bool,
    /// The program freed it (MPI_Comm_free) while requests still used it: the entry stays for
    /// them until none does (see [`Mpi::release_comm`]).
    pub freed: bool,
}

impl Comm {
    pub fn new(comm: Communicator, errhandler: MPI_Errhandler, name: &str) -> Comm {
        Comm { comm, errhandler, name: name.into(), pending: false, freed: false }
    }
}

/// What an `MPI_Request` handle stands for.
pub(crate) enum Req {
    /// An operation in the engine, on communicator `comm` (whose error handler applies), with
    /// the packed copy of non-contiguous data it sends or receives into (unpacked at completion).
    Active { req: Request<'static>, comm: MPI_Comm, staged: Option<Box<Staging>> },
    /// Already complete with this status (e.g. a receive from `MPI_PROC_NULL`).
    Complete(MPI_Status),
    /// Ended in error (found by a test that must not free it): what the wait or test that
    /// frees it reports.
    Failed(Box<crate::request::Ended>),
    /// A persistent request (MPI_Send_init, ...): what MPI_Start starts, and the operation it
    /// started last (`None`: inactive). Completing it leaves the handle for the next start.
    Persistent { op: crate::persistent::Op, active: Option<Box<Req>> },
    /// MPI_Comm_idup: the communicator being made in the background, and its reserved handle.
    Idup(Box<crate::comm_create::Idup>),
    /// A nonblocking collective in flight (MPI_Ibarrier, MPI_Ibcast, ...), on communicator
    /// `comm`.
    Background { op: Box<crate::coll::Scheduled>, comm: MPI_Comm },
    /// A generalized request (MPI_Grequest_start), which the program completes.
    Generalized(std::sync::Arc<crate::grequest::Greq>),
    /// MPI_Isendrecv(_replace): a receive and a send, complete when both are.
    Pair(Box<crate::isendrecv::Pair>),
    /// A started partitioned request (MPI_Psend_init, MPI_Precv_init): the active operation of
    /// its `Persistent` entry.
    Partitioned(Box<crate::partitioned::Partitions>),
    /// An operation whose completion runs the Fortran library's callback (the packed copy of
    /// an array section: `crate::request_hook`).
    Hooked(Box<crate::request_hook::Hooked>),
    /// A nonblocking file access whose data the MPI-IO thread moves (`io/background.rs`); its
    /// error is raised on the file's error handler.
    File(std::sync::Arc<crate::io::Pending>),
}

impl Req {
    /// The request of a nonblocking operation on `datatype`: it holds a derived type until it
    /// ends ([`crate::datatype::held`]).
    pub fn holding(self, m: &mut Mpi, datatype: MPI_Datatype) -> Req {
        match self {
            Req::Active { req, comm, staged } => {
                Req::Active { req, comm, staged: crate::datatype::held(m, datatype, staged) }
            }
            other => other,
        }
    }

    /// The communicator whose error handler applies to the request.
    pub fn comm(&self) -> MPI_Comm {
        match self {
            Req::Active { comm, .. } | Req::Background { comm, .. } => *comm,
            Req::Persistent { op, .. } => op.comm,
            Req::Idup(idup) => idup.parent,
            Req::Failed(ended) => ended.comm,
            Req::Complete(_) | Req::Generalized(_) | Req::File(_) => MPI_COMM_WORLD,
            Req::Pair(pair) => pair.recv.comm(),
            Req::Partitioned(p) => p.comm(),
            Req::Hooked(h) => h.inner.comm(),
        }
    }
}

pub(crate) struct Mpi {
    pub universe: Universe,
    /// Communicators by table index: 0 is `MPI_COMM_WORLD`, 1 is `MPI_COMM_SELF`.
    pub comms: Vec<Option<Comm>>,
    /// MPI_COMM_WORLD's communicator, kept apart from the table for what any communicator of
    /// the engine can do (engine handles), and at a fixed address until MPI_Finalize.
    pub engine: Communicator,
    pub requests: Vec<Option<Req>>,
    /// Engine handles (see [`engine_handle`]) that a call needed as a `Req` in place (a test
    /// that must not free, a cancel): they stay here, by handle, until taken.
    pub promoted: std::collections::HashMap<MPI_Request, Req>,
    /// The communicator (table index) of the operation behind each engine handle given out,
    /// by engine id; an id's entry stays after its operation ends (see [`Mpi::comm_in_use`]).
    pub engine_comms: Vec<u16>,
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
    pub sessions: crate::session::Sessions,
    pub attrs: crate::attr::Attrs,
    pub topos: crate::topo::Topos,
    pub errhandlers: crate::errhandler::Errhandlers,
    pub wins: crate::win::Wins,
    pub files: crate::io::Files,
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
    with_inlined(f)
}

/// [`with`] inlined into its caller, for a path of a few dozen instructions
/// (`win/fast_atomic.rs`): out of line, its closure's captures went through memory, a store
/// and a load each (callgrind: 35 instructions of a compare-and-swap's 90).
#[inline(always)]
pub(crate) fn with_inlined<R>(f: impl FnOnce(&mut Mpi) -> R) -> Option<R> {
    let _guard = GLOBAL.multiple.load(Ordering::Relaxed).then(|| GLOBAL.lock.lock().unwrap_or_else(|e| e.into_inner()));
    // SAFETY: see `Global`: exclusive access by lock or by the program's promise.
    let state = unsafe { &mut *GLOBAL.state.get() };
    // Written out (not `Option::map`): the call of `f` here directly, so that a closure's
    // `#[inline(always)]` decides.
    #[allow(clippy::manual_map)]
    match state.as_mut() {
        Some(m) => Some(f(m)),
        None => None,
    }
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

thread_local! {
    /// The communicator [`Mpi::comm`] last refused because it was revoked, so that the error
    /// its caller then makes of the refusal (`error::bad_comm`, which has no access to the
    /// tables) is MPIX_ERR_REVOKED rather than MPI_ERR_COMM.
    static REVOKED: std::cell::Cell<MPI_Comm> = const { std::cell::Cell::new(MPI_COMM_NULL) };
}

#[cold]
fn revoked<'a>(h: MPI_Comm) -> Option<&'a Comm> {
    REVOKED.with(|r| r.set(h));
    None
}

/// Whether [`Mpi::comm`] refused `h` last because it was revoked (see `REVOKED`).
pub(crate) fn was_revoked(h: MPI_Comm) -> bool {
    h != MPI_COMM_NULL && REVOKED.with(|r| r.replace(MPI_COMM_NULL) == h)
}

impl Mpi {
    /// The communicator `h` names, for a call that communicates on it: one an MPI_Comm_idup
    /// is still making is not yet one (see [`Mpi::comm_local`]).
    #[inline]
    pub fn comm(&self, h: MPI_Comm) -> Option<&Comm> {
        let c = self.comms.get(comm_index(h)?)?.as_ref().filter(|c| !c.pending)?;
        if c.comm.is_revoked() {
            return revoked(h);
        }
        Some(c)
    }

    /// The communicator `h` names, for a local call (size, rank, group, error handler,
    /// attributes, name, topology): also one an MPI_Comm_idup is still making.
    pub fn comm_local(&self, h: MPI_Comm) -> Option<&Comm> {
        self.comms.get(comm_index(h)?)?.as_ref()
    }

    pub fn comm_local_mut(&mut self, h: MPI_Comm) -> Option<&mut Comm> {
        self.comms.get_mut(comm_index(h)?)?.as_mut()
    }

    /// Stores a new communicator and returns its handle.
    pub fn add_comm(&mut self, comm: Communicator) -> MPI_Comm {
        let i = self.free_comm_index();
        self.comms[i] = Some(Comm::new(comm, MPI_ERRORS_ARE_FATAL, ""));
        comm_handle(i)
    }

    /// An empty table index (the table grows by one if there is none).
    fn free_comm_index(&mut self) -> usize {
        self.reclaim_comms();
        match (2..self.comms.len()).find(|&i| self.comms[i].is_none()) {
            Some(i) => i,
            None => {
                self.comms.push(None);
                self.comms.len() - 1
            }
        }
    }

    /// MPI_Comm_free's end (after the attributes' delete callbacks): the handle is the
    /// program's no more, but the communicator lives on while requests use it (MPI 4.0
    /// section 6.4.3: pending operations complete normally, and persistent requests start on
    /// it), with its error handler, and its table index is not given to a new communicator, on
    /// which they would then run. Erroneous uses of the freed handle meanwhile find it, as in
    /// MPICH, which counts the references of requests the same way.
    pub fn release_comm(&mut self, h: MPI_Comm) {
        self.topos.remove(h);
        let Some(i) = comm_index(h) else { return };
        if let Some(c) = self.comms[i].as_mut() {
            c.freed = true;
        }
        if !self.comm_in_use(h) && !self.attrs.is_doomed(h) {
            self.comms[i] = None;
        }
    }

    /// Drops the freed communicators that requests no longer use. Done when a table index is
    /// needed rather than when a request completes: a completion raises its error on its
    /// communicator after it has left its handle, so the entry stays until the next creation.
    fn reclaim_comms(&mut self) {
        for i in 2..self.comms.len() {
            let h = comm_handle(i);
            if self.comms[i].as_ref().is_some_and(|c| c.freed) && !self.comm_in_use(h) && !self.attrs.is_doomed(h) {
                self.comms[i] = None;
            }
        }
    }

    /// Whether a request uses communicator `h`: one in the table (a persistent request, a
    /// nonblocking collective, an idup of it, a staged operation, one that failed), or an
    /// operation in flight behind an engine handle naming it. An engine id whose operation
    /// ended may have been taken since by an operation without a handle, on another
    /// communicator: that only keeps the entry a while longer.
    pub fn comm_in_use(&self, h: MPI_Comm) -> bool {
        let Some(i) = comm_index(h) else { return false };
        self.requests.iter().flatten().chain(self.promoted.values()).any(|r| r.comm() == h)
            || self
                .engine_comms
                .iter()
                .enumerate()
                .any(|(id, &c)| c as usize == i && self.engine.request_in_flight(id as u32))
    }

    /// The requests in the table (and promoted engine handles) whose communicator is `h`.
    pub fn table_requests_on(&self, h: MPI_Comm) -> Vec<MPI_Request> {
        let table = self.requests.iter().enumerate().filter(|(_, r)| r.as_ref().is_some_and(|r| r.comm() == h));
        let table = table.map(|(i, _)| make_handle(HandleKind::Direct, object_type::REQUEST, i as u32));
        table.chain(self.promoted.iter().filter(|(_, r)| r.comm() == h).map(|(&k, _)| k)).collect()
    }

    /// Whether an operation behind an engine handle naming communicator `h` has not completed.
    /// (An id whose operation ended may have been taken since by an operation without a
    /// handle, on another communicator: that only makes a wait on it last while that does.)
    pub fn engine_pending_on(&self, h: MPI_Comm) -> bool {
        let Some(i) = comm_index(h) else { return false };
        self.engine_comms.iter().enumerate().any(|(id, &c)| c as usize == i && self.engine.request_pending(id as u32))
    }

    /// Stores a communicator an MPI_Comm_idup of `parent` is making: until
    /// [`Mpi::fill_pending`], local calls may use its handle, communication may not.
    pub fn add_pending_comm(&mut self, parent: Communicator, errhandler: MPI_Errhandler) -> MPI_Comm {
        let i = self.free_comm_index();
        self.comms[i] = Some(Comm { pending: true, ..Comm::new(parent, errhandler, "") });
        comm_handle(i)
    }

    /// Ends the wait of a pending communicator: with the communicator made (keeping the
    /// error handler and name the program gave it meanwhile), or with none (the creation
    /// failed: the handle names nothing any more).
    pub fn fill_pending(&mut self, h: MPI_Comm, made: Option<Communicator>) {
        let i = comm_index(h).expect("a communicator handle");
        match (made, self.comms[i].as_mut()) {
            (Some(comm), Some(entry)) => {
                entry.comm = comm;
                entry.pending = false;
            }
            _ => self.comms[i] = None,
        }
    }

    /// Stores a request and returns its handle. An operation in the engine with nothing
    /// staged gets an engine handle, which needs no table entry, and a send that completed as
    /// it started (an eager send of data that needed no packing) the shared [`SENT`] handle.
    #[inline(always)]
    pub fn add_request(&mut self, req: Req) -> MPI_Request {
        match req {
            Req::Active { req, comm, staged: None } => self.add_engine(req, comm),
            other => self.add_table(other),
        }
    }

    fn add_table(&mut self, req: Req) -> MPI_Request {
        let i = store(&mut self.requests, &mut self.free_requests, req);
        make_handle(HandleKind::Direct, object_type::REQUEST, i)
    }

    /// The handle of operation `req` on `comm`: an engine handle where its id and the
    /// communicator fit one and no promoted handle has that value (its operation finished
    /// while the handle stays), a table entry otherwise.
    #[inline(always)]
    pub fn add_engine(&mut self, req: Request<'static>, comm: MPI_Comm) -> MPI_Request {
        // Only a send can be finished as it starts.
        let Some(id) = req.into_raw() else { return SENT };
        match engine_handle(id, comm) {
            Some(h) if !self.is_promoted(h) => {
                let c = ((handle_index(h) & !ENGINE_BIT) >> ENGINE_ID_BITS) as u16;
                match self.engine_comms.get_mut(id as usize) {
                    Some(slot) => *slot = c,
                    None => self.note_engine_comm(id, c),
                }
                h
            }
            _ => self.add_engine_in_table(id, comm),
        }
    }

    /// [`Mpi::add_engine`]'s record of an engine id's communicator when the id is new.
    #[cold]
    #[inline(never)]
    fn note_engine_comm(&mut self, id: u32, comm_index: u16) {
        self.engine_comms.resize(id as usize + 1, 0);
        self.engine_comms[id as usize] = comm_index;
    }

    #[cold]
    #[inline(never)]
    fn add_engine_in_table(&mut self, id: u32, comm: MPI_Comm) -> MPI_Request {
        let req = adopt(&self.engine, id).expect("an operation just started is in flight");
        self.add_table(Req::Active { req, comm, staged: None })
    }

    /// Takes a request out of the table (it is complete or being freed).
    pub fn take_request(&mut self, h: MPI_Request) -> Option<Req> {
        if h == SENT {
            return Some(Req::Complete(MPI_Status::default()));
        }
        if let Some((id, comm)) = engine_parts(h) {
            if let Some(req) = self.promoted.remove(&h) {
                return Some(req);
            }
            return adopt(&self.engine, id).map(|req| Req::Active { req, comm, staged: None });
        }
        let i = request_index(h)?;
        let req = self.requests.get_mut(i)?.take()?;
        self.free_requests.push(i as u32);
        Some(req)
    }

    /// Takes an operation in the engine (`Req::Active`) out of the table, with its
    /// communicator and staging; `None`, leaving the table as it was, for any other handle
    /// (an engine handle included).
    #[inline]
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

    /// Whether engine handle `h` is promoted (checked only when some handle is).
    #[inline(always)]
    fn is_promoted(&self, h: MPI_Request) -> bool {
        !self.promoted.is_empty() && self.promoted.contains_key(&h)
    }

    /// The engine id and communicator of `h` if it is an engine handle and not promoted, with
    /// whether its operation is in flight (false: a stale or garbage handle). The operation
    /// stays with the handle.
    #[inline(always)]
    pub fn engine_op(&self, h: MPI_Request) -> Option<(u32, MPI_Comm, bool)> {
        let (id, comm) = engine_parts(h).filter(|_| !self.is_promoted(h))?;
        Some((id, comm, self.engine.request_in_flight(id)))
    }

    /// The operation of engine handle `h` unless it is promoted: `None` for any other handle,
    /// `Some(None)` for one whose operation is not in flight (a stale or garbage handle).
    /// Hand it back with `into_raw` if it does not finish.
    #[inline]
    pub fn engine_request(&self, h: MPI_Request) -> Option<Option<Request<'static>>> {
        let (id, _) = engine_parts(h).filter(|_| !self.is_promoted(h))?;
        Some(adopt(&self.engine, id))
    }

    /// The request behind a table handle, in place; `None` for any other handle (an engine
    /// handle is not promoted for it).
    #[inline]
    pub fn table_request(&mut self, h: MPI_Request) -> Option<&mut Req> {
        self.requests.get_mut(request_index(h)?)?.as_mut()
    }

    /// Whether `h` is an inactive persistent request, which completion calls treat as null.
    #[inline]
    pub fn is_inactive(&mut self, h: MPI_Request) -> bool {
        matches!(self.table_request(h), Some(Req::Persistent { active: None, .. }))
    }

    /// The request behind `h`, in place; an engine handle is promoted for it.
    pub fn request_mut(&mut self, h: MPI_Request) -> Option<&mut Req> {
        if h == SENT {
            self.sent = Req::Complete(MPI_Status::default());
            return Some(&mut self.sent);
        }
        if let Some((id, comm)) = engine_parts(h) {
            return match self.promoted.entry(h) {
                std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let req = adopt(&self.engine, id)?;
                    Some(v.insert(Req::Active { req, comm, staged: None }))
                }
            };
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

/// Engine handles: an operation in the engine with nothing staged (the common MPI_Isend and
/// MPI_Irecv) needs no table entry; its handle carries the engine's request id (bits 15..0)
/// and its communicator's table index (bits 24..16, for the error handler). Indirect kind
/// with bit 25 set: MPI_Message handles, indirect requests too, stay below it.
const ENGINE_BIT: u32 = 1 << 25;
const ENGINE_ID_BITS: u32 = 16;
const ENGINE_COMM_LIMIT: usize = 1 << (25 - ENGINE_ID_BITS);

#[inline(always)]
pub(crate) fn engine_handle(id: u32, comm: MPI_Comm) -> Option<MPI_Request> {
    let c = comm_index(comm).filter(|&c| c < ENGINE_COMM_LIMIT)?;
    (id < 1 << ENGINE_ID_BITS).then(|| {
        make_handle(HandleKind::Indirect, object_type::REQUEST, ENGINE_BIT | (c as u32) << ENGINE_ID_BITS | id)
    })
}

/// The engine id and communicator an engine handle carries.
#[inline(always)]
pub(crate) fn engine_parts(h: MPI_Request) -> Option<(u32, MPI_Comm)> {
    let index = handle_index(h);
    (handle_kind(h) == HandleKind::Indirect && handle_object_type(h) == object_type::REQUEST && index & ENGINE_BIT != 0)
        .then(|| (index & ((1 << ENGINE_ID_BITS) - 1), comm_handle(((index & !ENGINE_BIT) >> ENGINE_ID_BITS) as usize)))
}

/// Takes back the operation of an engine handle; `None` if it is not in flight.
#[inline]
fn adopt(engine: &Communicator, id: u32) -> Option<Request<'static>> {
    // SAFETY: engine handles are made only from `into_raw` of this library's operations,
    // whose buffers MPI keeps valid until completion; the handle held the id alone, and it is
    // taken back once (a promoted handle is looked up first).
    unsafe { engine.adopt_request(id) }
}

fn request_index(h: MPI_Request) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::REQUEST)
        .then_some(handle_index(h) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_handles_round_trip_and_stay_apart_from_other_requests() {
        let last_comm = comm_handle(ENGINE_COMM_LIMIT - 1);
        for (id, comm) in [(0, MPI_COMM_WORLD), (7, MPI_COMM_SELF), ((1 << ENGINE_ID_BITS) - 1, last_comm)] {
            let h = engine_handle(id, comm).expect("fits");
            assert_eq!(engine_parts(h), Some((id, comm)));
            assert_ne!(h, MPI_REQUEST_NULL);
            assert_ne!(h, SENT);
            assert_eq!(request_index(h), None, "{h:#x} read as a table handle");
            assert_eq!(handle_object_type(h), object_type::REQUEST);
        }
        // Too large an id or communicator index: no engine handle (the table takes it).
        assert_eq!(engine_handle(1 << ENGINE_ID_BITS, MPI_COMM_WORLD), None);
        assert_eq!(engine_handle(0, comm_handle(ENGINE_COMM_LIMIT)), None);
        // Table handles, SENT, null and MPI_Message handles (indirect, below bit 25) are not.
        let message = make_handle(HandleKind::Indirect, object_type::REQUEST, 3);
        for h in [MPI_REQUEST_NULL, SENT, make_handle(HandleKind::Direct, object_type::REQUEST, 5), message] {
            assert_eq!(engine_parts(h), None, "{h:#x} read as an engine handle");
        }
    }
}

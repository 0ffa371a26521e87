//! Windows (MPI 3.1 chapter 11, one-sided communication): the window table, MPI_Win_free,
//! names, group, info, the predefined attributes, and window error handlers. Creation
//! (MPI_Win_create, MPI_Win_allocate, MPI_Win_create_dynamic with attach/detach) is in
//! `create.rs`, MPI_Win_allocate_shared in `shared.rs`. The RMA calls are in `rma.rs`;
//! each synchronisation has its file: `fence.rs`, `passive.rs` (lock, unlock, flush, sync),
//! `pscw.rs` (post, start, complete, wait, test); `origin.rs` is what they share at the
//! origin, `serve.rs` the target's handler, `target.rs` the operations' format and effect.
//!
//! Each window holds a private duplicate of its communicator, so its traffic never meets the
//! program's. How operations reach a target depends on where the window's memory is:
//!
//! - **In a node segment** (`segment.rs`): MPI_Win_allocate_shared, and MPI_Win_allocate when
//!   every member runs on one host. Every member maps every part; the origin does each
//!   operation itself (`direct.rs`: copies, CPU atomics, a lock word where no atomic fits)
//!   and synchronises through words in the segment (`shm_sync.rs`: MPI_Win_lock's
//!   reader-writer lock, post/complete counters; fence is a memory fence and a barrier). The
//!   target takes no part: a rank computing outside MPI stalls nobody.
//! - **The program's memory on one host, shared** (MPI_Win_create, every member on one host,
//!   the windows in private anonymous memory): each member moves its window's pages onto a
//!   memory file that every member maps (`remap.rs`); the segment holds the words only and
//!   points at those pages, and the window is reached as the above, by the origin alone.
//! - **The program's memory on one host, private** (pages that cannot be shared, or
//!   `BB_RMA_CREATE_MAP=0`): synchronised like the above through a node segment of words
//!   only; put and get by a single copy from the origin (`process_vm_writev/readv`,
//!   `single_copy.rs`); accumulates
//!   through the target's handler (below), which flush, unlock, fence and complete wait for
//!   before they act on the segment's words; in a passive epoch an origin applies those the
//!   handler is slow to take itself, by single copies under the target's accumulate lock
//!   (`withdraw.rs`).
//! - **Attached regions on one host** (MPI_Win_create_dynamic, every member on one host): the
//!   node segment's parts hold each member's table of attached regions (`attached.rs`). A
//!   region in MPI_Alloc_mem's memory file (`arena.rs`) is mapped by each origin on first
//!   reach and reached as a node window's part, by the origin alone (loads, stores, CPU
//!   atomics); any other region as the private pages above; operations on bytes the origin's
//!   copy of the table does not cover go to the handler (below), which checks them.
//! - **Anywhere else** (MPI_Win_create across hosts, MPI_Win_create_dynamic across hosts,
//!   MPI_Win_allocate across hosts): an active-message handler (`serve.rs`) that the engine
//!   runs in every round of progress. An RMA call sends its operation to the target at once,
//!   and the target applies it whenever it is inside any MPI call; synchronisation calls wait
//!   for the target's answers (flush, unlock) or for the ends of epochs it was sent (fence,
//!   wait). A target computing outside MPI is served by a progress thread while such a window
//!   has members on other hosts (`async_progress.rs`, `BB_ASYNC_PROGRESS`).
//!
//! Errors of window calls go through the window's error handler (MPI_ERRORS_ARE_FATAL unless
//! the program sets another; windows do not inherit their communicator's); errors of the
//! creating calls, before there is a window, through the communicator's.

pub(crate) mod arena;
mod async_progress;
mod attached;
mod create;
mod direct;
mod fast;
mod fast_atomic;
mod fence;
mod origin;
mod passive;
mod pscw;
mod remap;
mod rma;
mod segment;
mod serve;
mod shared;
mod shm_sync;
mod single_copy;
mod target;
mod withdraw;

pub(crate) use arena::ALLOC_MEM_SHARED;
pub(crate) use async_progress::{stop as stop_progress_thread, ASYNC_PROGRESS};
pub(crate) use create::SHM_WINDOWS;
use create::{check_shape, create, Memory};
pub(crate) use direct::BULK as ACC_BULK;
pub(crate) use remap::CREATE_MAP;
pub(crate) use single_copy::SINGLE_COPY;

/// `process_vm_writev/readv` calls of this process's RMA so far (MPI_T `bb_rma_single_copies`).
pub(crate) fn single_copy_count() -> u64 {
    single_copy::SINGLE_COPIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Operations on mapped regions of dynamic windows so far (MPI_T `bb_rma_mapped_operations`).
pub(crate) fn mapped_operation_count() -> u64 {
    attached::MAPPED_OPERATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Fetch-and-ops and compare-and-swaps by the prepared path so far (MPI_T
/// `bb_rma_prepared_atomics`).
pub(crate) fn prepared_atomic_count() -> u64 {
    fast_atomic::PREPARED.load(std::sync::atomic::Ordering::Relaxed)
}

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use billboard::Communicator;

use crate::abi::*;
use crate::error::{copy_out, err, out, MpiError, Res};
use crate::state::{self, Mpi};

/// Windows by handle (direct handles of object type [`object_type::WIN`]).
#[derive(Default)]
pub(crate) struct Wins {
    table: Vec<Option<Win>>,
    free: Vec<u32>,
}

/// Values of the predefined attributes: the program gets pointers to them, so they live in a
/// box that does not move when the table grows.
struct Predefined {
    size: MPI_Aint,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

/// Where a window is in its access epochs (as an origin).
#[derive(Clone, PartialEq, Eq, Debug)]
enum Epoch {
    /// No access epoch: before the first fence, after one with MPI_MODE_NOSUCCEED, after an
    /// unlock or a complete.
    Closed,
    /// Between fences.
    Fence,
    /// Passive target: locks taken one by one (MPI_Win_lock), or all at once (MPI_Win_lock_all).
    Lock { all: bool },
    /// MPI_Win_start to MPI_Win_complete: these targets (window ranks).
    Access(Vec<usize>),
}

pub(crate) struct Win {
    comm: Communicator,
    base: *mut u8,
    /// Every member's window: (size in bytes, displacement unit), by rank.
    peers: Vec<(usize, i64)>,
    attrs: Box<Predefined>,
    pub errhandler: MPI_Errhandler,
    name: String,
    epoch: Epoch,
    /// Operations issued since the last fence (a lock or start may follow a fence only if none).
    issued: bool,
    /// What this origin has going on with each target.
    targets: Vec<origin::Target>,
    /// The handler's count of epoch ends received, and those consumed here, per origin.
    counters: Arc<serve::Counters>,
    seen: Vec<usize>,
    /// MPI_Win_post's group (window ranks), until MPI_Win_wait or MPI_Win_test ends it.
    exposed: Option<Vec<usize>>,
    /// A dynamic window's attached regions (None: the window is `base`, `size`).
    regions: Option<serve::Regions>,
    /// The node segment holding every member's part, when all run on one host and the
    /// library allocated the memory (MPI_Win_allocate, MPI_Win_allocate_shared): then every
    /// operation and synchronisation is done by the origin in shared memory.
    node: Option<Arc<segment::Segment>>,
    /// MPI_Win_create on one host: where every member's window lies, for put and get by
    /// single copy (`single_copy.rs`); then `node` holds only the synchronisation words.
    reach: Option<single_copy::Reach>,
    /// Per target: MPI_Win_post's of it consumed by MPI_Win_start here (node windows).
    started: Vec<u64>,
    /// This window's claim on the process's progress thread (`async_progress.rs`).
    progress: Option<async_progress::Hold>,
    /// MPI_Win_create on one host: this member's window pages, and where shared, every
    /// member's mapped here (`remap.rs`; then `node` holds their addresses and the window is
    /// reached as a node window's).
    pages: Option<remap::Pages>,
    /// MPI_Win_create_dynamic on one host: this origin's copy of every member's table of
    /// attached regions (`attached.rs`), which `node` holds; `reach` has every base at 0.
    attached: Option<attached::Seen>,
    /// Fetch-and-op and compare-and-swap's path on a window reached by loads and stores,
    /// prepared at the first of them (`fast_atomic.rs`).
    prepared: Option<Box<fast_atomic::Prepared>>,
    _memory: Option<Memory>,
}

impl Win {
    /// Whether the origin does every operation itself in the node segment (the window's
    /// memory is there), so none waits for the target's handler.
    fn direct(&self) -> bool {
        self.node.is_some() && self.reach.is_none()
    }

    /// The window rank of each member of `group` (world ranks), or which is not a member.
    fn ranks_of(&self, group: &[billboard::Process]) -> Res<Vec<usize>> {
        crate::group::ranks_in(&self.comm, group, "the window's group")
    }

    /// Whether an access epoch may start: none is open, or only a fence's with nothing issued.
    fn may_start_epoch(&self, call: &str) -> Res {
        match self.epoch {
            Epoch::Closed => Ok(()),
            Epoch::Fence if !self.issued => Ok(()),
            ref e => Err(err(
                MPI_ERR_RMA_SYNC,
                format!("{call}: an access epoch is already open on this window ({})", epoch_name(e)),
            )),
        }
    }
}

/// The epoch for messages.
fn epoch_name(e: &Epoch) -> &'static str {
    match e {
        Epoch::Closed => "none",
        Epoch::Fence => "a fence epoch with operations issued",
        Epoch::Lock { all: false } => "MPI_Win_lock",
        Epoch::Lock { all: true } => "MPI_Win_lock_all",
        Epoch::Access(_) => "MPI_Win_start",
    }
}

fn win_index(h: MPI_Win) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::WIN)
        .then_some(handle_index(h) as usize)
}

pub(crate) fn bad_win(h: MPI_Win) -> MpiError {
    let what = if h == MPI_WIN_NULL { "MPI_WIN_NULL".to_string() } else { format!("{h:#x}") };
    err(MPI_ERR_WIN, format!("invalid window {what}"))
}

impl Mpi {
    pub fn win(&self, h: MPI_Win) -> Res<&Win> {
        self.wins.table.get(win_index(h).ok_or_else(|| bad_win(h))?).and_then(Option::as_ref).ok_or_else(|| bad_win(h))
    }

    pub fn win_mut(&mut self, h: MPI_Win) -> Res<&mut Win> {
        let i = win_index(h).ok_or_else(|| bad_win(h))?;
        self.wins.table.get_mut(i).and_then(Option::as_mut).ok_or_else(|| bad_win(h))
    }

    fn add_win(&mut self, w: Win) -> MPI_Win {
        let i = crate::state::store(&mut self.wins.table, &mut self.wins.free, w);
        make_handle(HandleKind::Direct, object_type::WIN, i)
    }

    fn take_win(&mut self, h: MPI_Win) -> Option<Win> {
        let i = win_index(h)?;
        let w = self.wins.table.get_mut(i)?.take()?;
        self.wins.free.push(i as u32);
        Some(w)
    }
}

/// Runs a window call's body on the tables with the window's error handler.
pub(crate) fn win_call(function: &'static str, win: MPI_Win, body: impl FnOnce(&mut Mpi) -> Res) -> c_int {
    crate::error::guard(function, || match state::with(body) {
        None => crate::error::not_running(function),
        Some(Ok(())) => MPI_SUCCESS,
        Some(Err(e)) => raise(function, win, e),
    })
}

/// Like [`win_call`] for bodies that block (they take the tables themselves).
pub(crate) fn win_call_unlocked(function: &'static str, win: MPI_Win, body: impl FnOnce() -> Res) -> c_int {
    crate::error::guard(function, || {
        if state::phase() != state::RUNNING {
            return crate::error::not_running(function);
        }
        match body() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => raise(function, win, e),
        }
    })
}

/// Applies `win`'s error handler to `e`; an invalid window raises it on MPI_COMM_WORLD (as
/// an invalid communicator does, MPI 3.1 section 8.3).
fn raise(function: &str, win: MPI_Win, e: MpiError) -> c_int {
    match state::with(|m| m.win(win).map(|w| w.errhandler).ok()).flatten() {
        Some(eh) => crate::error::raise(function, eh, win, e),
        None => crate::error::handle(function, MPI_COMM_WORLD, e),
    }
}

/// The value of predefined attribute `keyval` of `win` (as `MPI_Win_get_attr` returns it), if
/// `keyval` is one: the base address itself, the others by address.
pub(crate) fn predefined_attr(m: &Mpi, win: MPI_Win, keyval: c_int) -> Option<usize> {
    let w = m.win(win).ok()?;
    let a = &*w.attrs;
    Some(match keyval {
        MPI_WIN_BASE => w.base as usize,
        MPI_WIN_SIZE => &a.size as *const MPI_Aint as usize,
        MPI_WIN_DISP_UNIT => &a.disp_unit as *const c_int as usize,
        MPI_WIN_CREATE_FLAVOR => &a.flavor as *const c_int as usize,
        MPI_WIN_MODEL => &a.model as *const c_int as usize,
        _ => return None,
    })
}

pub(crate) fn predefined_key(keyval: c_int) -> bool {
    matches!(keyval, MPI_WIN_BASE | MPI_WIN_SIZE | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free(win: *mut MPI_Win) -> c_int {
    let h = if win.is_null() { MPI_WIN_NULL } else { *win };
    win_call_unlocked("MPI_Win_free", h, || {
        let win = out(win, "win")?;
        let (comm, limbo, stale) = state::with(|m| -> Res<(Communicator, Vec<origin::Wait>, Vec<usize>)> {
            let w = m.win_mut(h)?;
            let open = match &w.epoch {
                Epoch::Lock { .. } | Epoch::Access(_) => Some(epoch_name(&w.epoch)),
                _ if w.exposed.is_some() => Some("MPI_Win_post"),
                _ if w.targets.iter().any(|t| !t.waits.is_empty()) => Some("a fence epoch with operations issued"),
                _ => None,
            };
            if let Some(what) = open {
                return Err(err(MPI_ERR_RMA_SYNC, format!("MPI_Win_free with an epoch still open: {what}")));
            }
            let stale = w.reach.as_ref().map(|r| r.stale_targets()).unwrap_or_default();
            Ok((w.comm.clone(), w.reach.as_mut().map(|r| r.take_limbo()).unwrap_or_default(), stale))
        })
        .expect("MPI is running")?;
        crate::attr::delete_win_attrs(h)?;
        // Withdrawn requests still on their way end now, and a flush behind them makes sure
        // each target's handler has read them before it goes (every target is in this call):
        // a later window on a reused context must not get them (`withdraw.rs`).
        origin::finish_all(limbo)?;
        let mut waits = Vec::new();
        for t in stale {
            origin::ask(&comm, t, serve::Request::Flush, 0, &mut waits)?;
        }
        origin::finish_all(waits)?;
        // Collective: every member is done with the window before any frees its memory.
        comm.barrier()?;
        drop(comm.unregister_handler(serve::HANDLER)?);
        state::with(|m| m.take_win(h));
        *win = MPI_WIN_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    win_call_unlocked("MPI_Win_fence", win, || fence::fence(assert, win))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    win_call("MPI_Win_get_group", win, |m| {
        let group = out(group, "group")?;
        let c = &m.win(win)?.comm;
        *group = m.add_group(crate::group::members_of(c));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_name(win: MPI_Win, name: *const c_char) -> c_int {
    win_call("MPI_Win_set_name", win, |m| {
        if name.is_null() {
            return Err(err(MPI_ERR_ARG, "null window name"));
        }
        // SAFETY: a NUL-terminated string from the caller, checked non-null.
        let text = std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned();
        if text.len() >= MPI_MAX_OBJECT_NAME as usize {
            let msg =
                format!("window name of {} characters (MPI_MAX_OBJECT_NAME is {MPI_MAX_OBJECT_NAME})", text.len());
            return Err(err(MPI_ERR_ARG, msg));
        }
        m.win_mut(win)?.name = text;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_name(win: MPI_Win, name: *mut c_char, resultlen: *mut c_int) -> c_int {
    win_call("MPI_Win_get_name", win, |m| {
        if name.is_null() || resultlen.is_null() {
            return Err(err(MPI_ERR_ARG, "null win_name or resultlen pointer"));
        }
        copy_out(&m.win(win)?.name, name, resultlen, MPI_MAX_OBJECT_NAME);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    // No hint changes what this library does: checked and set aside.
    win_call("MPI_Win_set_info", win, |m| {
        m.win(win)?;
        m.check_info(info)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    win_call("MPI_Win_get_info", win, |m| {
        m.win(win)?;
        *out(info_used, "info_used")? = m.add_info(Vec::new());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_errhandler(
    function: Option<crate::errhandler::CommErrhandlerFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    crate::error::call("MPI_Win_create_errhandler", MPI_COMM_WORLD, |m| {
        let f = function.ok_or_else(|| err(MPI_ERR_ARG, "null error handler function"))?;
        *out(errhandler, "errhandler")? = m.add_errhandler(f, object_type::WIN);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    win_call("MPI_Win_set_errhandler", win, |m| {
        m.win(win)?;
        m.check_errhandler_for(errhandler, object_type::WIN)?;
        m.win_mut(win)?.errhandler = errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) -> c_int {
    win_call("MPI_Win_get_errhandler", win, |m| {
        *out(errhandler, "errhandler")? = m.win(win)?.errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    win_call_unlocked("MPI_Win_call_errhandler", win, || {
        let eh = state::with(|m| m.win(win).map(|w| w.errhandler)).expect("MPI is running")?;
        if eh != MPI_ERRORS_RETURN && crate::errhandler::invoke(eh, win, errorcode).is_none() {
            // MPI_ERRORS_ARE_FATAL (or ABORT): the predefined handler ends the job.
            crate::error::raise("MPI_Win_call_errhandler", eh, win, err(errorcode, "called by the program"));
        }
        Ok(())
    })
}

//! Windows (MPI 3.1 chapter 11, one-sided communication): creation (MPI_Win_create,
//! MPI_Win_allocate, MPI_Win_create_dynamic with attach/detach; MPI_Win_allocate_shared in
//! `shared.rs`), MPI_Win_free, names, group, info, the predefined attributes, and window
//! error handlers. The RMA calls are in `rma.rs`;
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
//! - **The program's memory on one host** (MPI_Win_create, every member on one host):
//!   synchronised like the above through a node segment of words only; put and get by a
//!   single copy from the origin (`process_vm_writev/readv`, `single_copy.rs`); accumulates
//!   through the target's handler (below), whose answers flush, unlock, fence and complete
//!   wait for before they act on the segment's words.
//! - **Anywhere else** (MPI_Win_create across hosts, MPI_Win_create_dynamic,
//!   MPI_Win_allocate across hosts): an active-message handler (`serve.rs`) that the engine
//!   runs in every round of progress. An RMA call sends its operation to the target at once,
//!   and the target applies it whenever it is inside any MPI call; synchronisation calls wait
//!   for the target's answers (flush, unlock) or for the ends of epochs it was sent (fence,
//!   wait). A target that never enters MPI serves nobody on these windows: a progress thread
//!   across hosts is still to come.
//!
//! Errors of window calls go through the window's error handler (MPI_ERRORS_ARE_FATAL unless
//! the program sets another; windows do not inherit their communicator's); errors of the
//! creating calls, before there is a window, through the communicator's.

mod direct;
mod fast;
mod fence;
mod origin;
mod passive;
mod pscw;
mod rma;
mod segment;
mod serve;
mod shared;
mod shm_sync;
mod single_copy;
mod target;

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use billboard::Communicator;

use crate::abi::*;
use crate::error::{call_unlocked, copy_out, err, out, MpiError, Res};
use crate::state::{self, Mpi};

/// Windows by handle (direct handles of object type [`object_type::WIN`]).
#[derive(Default)]
pub(crate) struct Wins {
    table: Vec<Option<Win>>,
    free: Vec<u32>,
}

/// Memory a window allocated itself (MPI_Win_allocate): zeroed, 64-byte aligned.
struct Memory {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Memory {
    fn new(bytes: usize) -> Res<Memory> {
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 64)
            .map_err(|_| err(MPI_ERR_SIZE, format!("cannot allocate a window of {bytes} bytes")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(err(MPI_ERR_NO_MEM, format!("cannot allocate a window of {bytes} bytes")));
        }
        Ok(Memory { ptr, layout })
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: allocated in `Memory::new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
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
    /// The handler's service id on `comm`.
    service: u32,
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
    _memory: Option<Memory>,
}

impl Win {
    /// Whether the origin does every operation itself in the node segment (the window's
    /// memory is there), so none waits for the target's handler.
    fn direct(&self) -> bool {
        self.node.is_some() && self.reach.is_none()
    }

    /// The window rank of each member of `group` (world ranks), or which is not a member.
    fn ranks_of(&self, group: &[usize]) -> Res<Vec<usize>> {
        let members: Vec<usize> = (0..self.comm.size()).map(|r| self.comm.world_rank(r)).collect();
        group
            .iter()
            .map(|w| {
                members.iter().position(|m| m == w).ok_or_else(|| {
                    err(MPI_ERR_GROUP, format!("world rank {w} of the group is not in the window's group"))
                })
            })
            .collect()
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

/// The collective part of window creation: a private communicator, every member's size
/// and displacement unit, and the handler that serves the window here.
#[allow(clippy::too_many_arguments)]
fn create(
    base: *mut u8,
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    flavor: c_int,
    memory: Option<Memory>,
    regions: Option<serve::Regions>,
) -> Res<MPI_Win> {
    let (parent, _) = crate::comm_create::take(comm)?;
    state::with(|m| m.check_info(info)).expect("MPI is running")?;
    let private = parent.dup()?;
    let n = private.size();
    let mine: Vec<u8> = [size, disp_unit as i64].iter().flat_map(|w| w.to_ne_bytes()).collect();
    let mut all = vec![0u8; 16 * n];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (16 * r, 16)).collect();
    private.allgatherv_bytes(&mine, &mut all, &layout)?;
    let word = |i: usize| i64::from_ne_bytes(all[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    let peers = (0..n).map(|r| (word(2 * r) as usize, word(2 * r + 1))).collect();
    let attrs = Box::new(Predefined { size, disp_unit, flavor, model: MPI_WIN_UNIFIED });
    let counters = Arc::new(serve::Counters::new(n));
    let place = match &regions {
        Some(r) => serve::Memory::Dynamic(r.clone()),
        None => serve::Memory::Fixed { base: base as usize, size: size as usize },
    };
    let exposure = serve::Exposure::new(place, counters.clone(), n, private.rank());
    let service = private.serve(serve::TAG_REQUEST, Box::new(exposure))?;
    let w = Win {
        comm: private,
        base,
        peers,
        attrs,
        errhandler: MPI_ERRORS_ARE_FATAL,
        name: String::new(),
        epoch: Epoch::Closed,
        issued: false,
        targets: (0..n).map(|_| origin::Target::default()).collect(),
        counters,
        seen: vec![0; n],
        exposed: None,
        service,
        regions,
        node: None,
        reach: None,
        started: vec![0; n],
        _memory: memory,
    };
    Ok(state::with(|m| m.add_win(w)).expect("MPI is running"))
}

/// The large-count window constructors (`MPI_Win_create_c`, ...) take the displacement unit
/// as an `MPI_Aint`; windows keep it as an int, as MPICH's do, so a larger one is refused.
macro_rules! aint_disp_unit {
    ($cname:ident => $name:path, $function:literal, ($($arg:ident: $ty:ty),*), $disp_unit:ident, $comm:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $cname($($arg: $ty),*) -> c_int {
            match c_int::try_from($disp_unit) {
                Ok($disp_unit) => $name($($arg),*),
                Err(_) => crate::error::call($function, $comm, |_| {
                    Err(err(MPI_ERR_DISP, format!("displacement unit {} is larger than an int", $disp_unit)))
                }),
            }
        }
    };
}

aint_disp_unit!(PMPI_Win_create_c => PMPI_Win_create, "MPI_Win_create_c",
    (base: *mut c_void, size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win),
    disp_unit, comm);
aint_disp_unit!(PMPI_Win_allocate_c => PMPI_Win_allocate, "MPI_Win_allocate_c",
    (size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win),
    disp_unit, comm);
aint_disp_unit!(PMPI_Win_allocate_shared_c => shared::PMPI_Win_allocate_shared, "MPI_Win_allocate_shared_c",
    (size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win),
    disp_unit, comm);

fn check_shape(size: MPI_Aint, disp_unit: c_int) -> Res {
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("negative window size {size}")));
    }
    if disp_unit <= 0 {
        return Err(err(MPI_ERR_DISP, format!("displacement unit {disp_unit}: it must be positive")));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    call_unlocked("MPI_Win_create", comm, || {
        let win = out(win, "win")?;
        check_shape(size, disp_unit)?;
        if base.is_null() && size > 0 {
            return Err(err(MPI_ERR_BASE, format!("NULL base for a window of {size} bytes")));
        }
        // On one host, a node segment of synchronisation words only (no data parts) and
        // everyone's window address for single copies; every member decides alike, as in
        // MPI_Win_allocate.
        let (parent, _) = crate::comm_create::take(comm)?;
        let mut needed = 0;
        let node = match SHM_WINDOWS.get() != 0 && segment::one_host(&parent)?.is_ok() {
            true => segment::allocate(0, &parent, &mut needed)?,
            false => None,
        };
        *win = create(base.cast(), size, disp_unit, info, comm, MPI_WIN_FLAVOR_CREATE, None, None)?;
        if let Some(seg) = node {
            let private = state::with(|m| m.win(*win).map(|w| w.comm.clone())).expect("MPI is running")?;
            let reach = single_copy::Reach::exchange(&private, base.cast())?;
            state::with(|m| {
                m.win_mut(*win).map(|w| {
                    w.node = Some(Arc::new(seg));
                    w.reach = Some(reach);
                })
            })
            .expect("MPI is running")?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    call_unlocked("MPI_Win_allocate", comm, || {
        let win = out(win, "win")?;
        let baseptr = out(baseptr as *mut *mut c_void, "baseptr")?;
        check_shape(size, disp_unit)?;
        let (parent, _) = crate::comm_create::take(comm)?;
        let mut needed = 0;
        // Every member decides alike: hosts are known to all, the variable is the job's, and
        // rank 0 tells all whether /dev/shm has room (if not, private memory as below).
        let seg = match SHM_WINDOWS.get() != 0 && segment::one_host(&parent)?.is_ok() {
            true => segment::allocate(size as usize, &parent, &mut needed)?,
            false => None,
        };
        if let Some(seg) = seg {
            let seg = Arc::new(seg);
            let base = if size == 0 { std::ptr::null_mut() } else { seg.part(parent.rank()).0 };
            *win = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_ALLOCATE, None, None)?;
            state::with(|m| m.win_mut(*win).map(|w| w.node = Some(seg))).expect("MPI is running")?;
            *baseptr = base.cast();
            return Ok(());
        }
        let memory = Memory::new(size as usize)?;
        let base = if size == 0 { std::ptr::null_mut() } else { memory.ptr };
        *win = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_ALLOCATE, Some(memory), None)?;
        *baseptr = base.cast();
        Ok(())
    })
}

/// Whether MPI_Win_allocate places a window whose members share a host in one node segment.
pub(crate) static SHM_WINDOWS: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_RMA_SHM",
    1,
    "MPI_Win_allocate on one host in shared memory, RMA done by the origin; MPI_Win_create on one host synchronised there (0: every operation through the target's handler)",
);

/// The windows' tunables, for `bbrun --info`.
pub(crate) fn tunables() -> [&'static billboard::tunables::Tunable; 2] {
    [&SHM_WINDOWS, &single_copy::SINGLE_COPY]
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free(win: *mut MPI_Win) -> c_int {
    let h = if win.is_null() { MPI_WIN_NULL } else { *win };
    win_call_unlocked("MPI_Win_free", h, || {
        let win = out(win, "win")?;
        let (comm, service) = state::with(|m| -> Res<(Communicator, u32)> {
            let w = m.win(h)?;
            let open = match &w.epoch {
                Epoch::Lock { .. } | Epoch::Access(_) => Some(epoch_name(&w.epoch)),
                _ if w.exposed.is_some() => Some("MPI_Win_post"),
                _ if w.targets.iter().any(|t| !t.waits.is_empty()) => Some("a fence epoch with operations issued"),
                _ => None,
            };
            if let Some(what) = open {
                return Err(err(MPI_ERR_RMA_SYNC, format!("MPI_Win_free with an epoch still open: {what}")));
            }
            Ok((w.comm.clone(), w.service))
        })
        .expect("MPI is running")?;
        crate::attr::delete_win_attrs(h)?;
        // Collective: every member is done with the window before any frees its memory.
        comm.barrier()?;
        comm.stop_serving(service);
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
        let members = (0..c.size()).map(|r| c.world_rank(r)).collect();
        *group = m.add_group(members);
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    call_unlocked("MPI_Win_create_dynamic", comm, || {
        let win = out(win, "win")?;
        let regions = serve::Regions::default();
        *win = create(std::ptr::null_mut(), 0, 1, info, comm, MPI_WIN_FLAVOR_DYNAMIC, None, Some(regions))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    win_call("MPI_Win_attach", win, |m| {
        let w = m.win(win)?;
        let regions = w
            .regions
            .as_ref()
            .ok_or_else(|| err(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach on a window not made by MPI_Win_create_dynamic"))?;
        if size < 0 {
            return Err(err(MPI_ERR_SIZE, format!("negative size {size} to attach")));
        }
        if base.is_null() && size > 0 {
            return Err(err(MPI_ERR_BASE, format!("NULL base for {size} bytes to attach")));
        }
        let (at, len) = (base as usize, size as usize);
        let mut list = regions.lock().unwrap_or_else(|e| e.into_inner());
        if list.iter().any(|&(a, l)| at < a + l && a < at + len) {
            return Err(err(MPI_ERR_BASE, format!("[{at:#x}, +{len}) overlaps a region already attached")));
        }
        list.push((at, len));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    win_call("MPI_Win_detach", win, |m| {
        let w = m.win(win)?;
        let regions = w
            .regions
            .as_ref()
            .ok_or_else(|| err(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach on a window not made by MPI_Win_create_dynamic"))?;
        let mut list = regions.lock().unwrap_or_else(|e| e.into_inner());
        let i = list.iter().position(|&(a, _)| a == base as usize).ok_or_else(|| {
            err(MPI_ERR_BASE, format!("{base:?} is not the base of a region attached to this window"))
        })?;
        list.swap_remove(i);
        Ok(())
    })
}

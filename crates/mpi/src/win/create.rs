//! Window creation: MPI_Win_create (on one host with a node segment of synchronisation
//! words and single copies, `single_copy.rs`), MPI_Win_allocate (on one host in a node
//! segment), their large-count forms, MPI_Win_create_dynamic with attach and detach (on one
//! host its attached regions published in a node segment, `attached.rs`); the
//! collective part every constructor shares (`create`), and the windows' tunables.
//! MPI_Win_allocate_shared is in `shared.rs`.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::{
    async_progress, attached, origin, remap, segment, serve, shared, single_copy, state, win_call, Epoch, Predefined,
    Win,
};
use crate::abi::*;
use crate::error::{call_unlocked, err, out, Res};

/// Memory a window allocated itself (MPI_Win_allocate): zeroed, 64-byte aligned.
pub(super) struct Memory {
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

/// The collective part of window creation: a private communicator, every member's size
/// and displacement unit, and the handler that serves the window here.
#[allow(clippy::too_many_arguments)]
pub(super) fn create(
    base: *mut u8,
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    flavor: c_int,
    memory: Option<Memory>,
    regions: Option<serve::Regions>,
    node: Option<Arc<segment::Segment>>,
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
    let exposure = serve::Exposure::new(place, counters.clone(), n, private.rank(), node.clone());
    private.register_handler(serve::HANDLER, exposure)?;
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
        regions,
        node,
        reach: None,
        started: vec![0; n],
        progress: None,
        pages: None,
        attached: None,
        prepared: None,
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

pub(super) fn check_shape(size: MPI_Aint, disp_unit: c_int) -> Res {
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
        let mut node = match SHM_WINDOWS.get() != 0 && segment::one_host(&parent)?.is_ok() {
            true => segment::allocate(0, &parent, &mut needed)?,
            false => None,
        };
        // Every member's pages mapped by all (`remap.rs`): then the window is reached like
        // MPI_Win_allocate's, by the origin alone.
        let pages = match node.as_mut() {
            Some(seg) => Some(remap::share(&parent, base.cast(), size as usize, seg)?),
            None => None,
        };
        let node = node.map(Arc::new);
        let on_one_host = node.clone().filter(|_| !pages.as_ref().is_some_and(remap::Pages::shared));
        *win = create(base.cast(), size, disp_unit, info, comm, MPI_WIN_FLAVOR_CREATE, None, None, node)?;
        if pages.is_some() {
            state::with(|m| m.win_mut(*win).map(|w| w.pages = pages)).expect("MPI is running")?;
        }
        if let Some(node) = on_one_host {
            let private = state::with(|m| m.win(*win).map(|w| w.comm.clone())).expect("MPI is running")?;
            let reach = single_copy::Reach::exchange(&private, base.cast(), &node)?;
            state::with(|m| m.win_mut(*win).map(|w| w.reach = Some(reach))).expect("MPI is running")?;
        }
        state::with(|m| m.win_mut(*win).and_then(async_progress::attach)).expect("MPI is running")
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
            *win = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_ALLOCATE, None, None, Some(seg))?;
            *baseptr = base.cast();
            return Ok(());
        }
        let memory = Memory::new(size as usize)?;
        let base = if size == 0 { std::ptr::null_mut() } else { memory.ptr };
        *win = create(base, size, disp_unit, info, comm, MPI_WIN_FLAVOR_ALLOCATE, Some(memory), None, None)?;
        *baseptr = base.cast();
        state::with(|m| m.win_mut(*win).and_then(async_progress::attach)).expect("MPI is running")
    })
}

/// Whether MPI_Win_allocate places a window whose members share a host in one node segment.
pub(crate) static SHM_WINDOWS: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_RMA_SHM",
    1,
    "MPI_Win_allocate on one host in shared memory, RMA done by the origin; MPI_Win_create on one host synchronised there (0: every operation through the target's handler)",
)
.read_at(billboard::tunables::Effect::EachCollective);

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    call_unlocked("MPI_Win_create_dynamic", comm, || {
        let win = out(win, "win")?;
        let regions = serve::Regions::default();
        // On one host, a node segment of synchronisation words whose parts are the members'
        // tables of attached regions (`attached.rs`): origins then reach those regions as a
        // created window's private pages, by single copy, with no help from the target.
        let (parent, _) = crate::comm_create::take(comm)?;
        let mut needed = 0;
        let node = match SHM_WINDOWS.get() != 0 && segment::one_host(&parent)?.is_ok() {
            true => segment::allocate(attached::TABLE_BYTES, &parent, &mut needed)?.map(Arc::new),
            false => None,
        };
        let flavor = MPI_WIN_FLAVOR_DYNAMIC;
        *win = create(std::ptr::null_mut(), 0, 1, info, comm, flavor, None, Some(regions), node.clone())?;
        if let Some(node) = node {
            let private = state::with(|m| m.win(*win).map(|w| w.comm.clone())).expect("MPI is running")?;
            // Displacements are addresses: every member's "window" starts at 0.
            let reach = single_copy::Reach::exchange(&private, std::ptr::null_mut(), &node)?;
            let seen = attached::Seen::new(private.size(), private.rank());
            state::with(|m| {
                m.win_mut(*win).map(|w| {
                    w.reach = Some(reach);
                    w.attached = Some(seen);
                })
            })
            .expect("MPI is running")?;
        }
        state::with(|m| m.win_mut(*win).and_then(async_progress::attach)).expect("MPI is running")
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
        if let Some(seg) = &w.node {
            attached::publish(seg, &list);
        }
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
        // Before the detach returns: no origin reaches the region by single copy after it.
        if let Some(seg) = &w.node {
            attached::publish(seg, &list);
        }
        Ok(())
    })
}

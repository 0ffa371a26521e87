//! The environment: init, finalize, thread levels, abort, names and clocks.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use crate::abi::*;
use crate::error::{call, copy_out, err, guard, handle, not_running, out, Res};
use crate::state::{self, Comm, Mpi, Req};

/// The world model's life (MPI_Init .. MPI_Finalize), apart from the library's
/// ([`state::phase`]): MPI 4.0's sessions start the library without MPI_Init, and keep it
/// after MPI_Finalize while one is open. MPI_Initialized and MPI_Finalized answer from this.
static WORLD: AtomicU8 = AtomicU8::new(state::NOT_STARTED);

pub(crate) fn world_phase() -> u8 {
    WORLD.load(Ordering::Acquire)
}

unsafe fn init(function: &'static str, required: c_int, provided: *mut c_int) -> c_int {
    match world_phase() {
        state::RUNNING => {
            return handle(function, MPI_COMM_WORLD, err(MPI_ERR_OTHER, format!("{function} called twice")));
        }
        state::FINALIZED => return not_running(function),
        _ => {}
    }
    // Started already by a session: the world model joins it, at the thread level in use.
    if let Some(level) = state::with(|m| m.thread_level) {
        WORLD.store(state::RUNNING, Ordering::Release);
        if !provided.is_null() {
            *provided = level;
        }
        return MPI_SUCCESS;
    }
    if state::phase() == state::FINALIZED {
        return not_running(function);
    }
    let level = start(function, required);
    WORLD.store(state::RUNNING, Ordering::Release);
    if !provided.is_null() {
        *provided = level;
    }
    MPI_SUCCESS
}

/// Starts the library (the job's wire-up, MPI_COMM_WORLD and MPI_COMM_SELF, the tables) for
/// MPI_Init or the first MPI_Session_init, at thread level `required`; the level provided.
pub(crate) fn start(function: &str, required: c_int) -> c_int {
    let universe = match billboard::init() {
        Ok(u) => u,
        // No communicator exists yet, so the default handler applies: MPI_ERRORS_ARE_FATAL.
        Err(e) => {
            eprintln!("billboard MPI: {function} failed: {e} (MPI_ERR_OTHER); aborting");
            std::process::exit(1)
        }
    };
    let world = universe.world();
    let level = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    if level < MPI_THREAD_MULTIPLE {
        // SAFETY: below MPI_THREAD_MULTIPLE the program promises what the engine needs: calls
        // never overlap, and at SERIALIZED it orders them itself. No other thread runs MPI yet.
        unsafe { world.assume_serialized() };
    }
    // SAFETY: MPI_Finalize drops every request (those of the table, freed ones, buffered
    // sends) before it finalizes the universe, and MPI calls end before it.
    unsafe { world.assume_operations_end_first() };
    let entry = |comm, name: &str| Some(Comm::new(comm, MPI_ERRORS_ARE_FATAL, name));
    let mpi = Mpi {
        comms: vec![entry(world.clone(), "MPI_COMM_WORLD"), entry(world.solo(), "MPI_COMM_SELF")],
        engine: world.clone(),
        world_rank: world.rank(),
        universe,
        requests: Vec::new(),
        promoted: Default::default(),
        engine_comms: Vec::new(),
        sent: Req::Complete(MPI_Status::default()),
        free_requests: Vec::new(),
        detached: Vec::new(),
        user_ops: Vec::new(),
        messages: Vec::new(),
        bsend: Default::default(),
        types: Default::default(),
        groups: Default::default(),
        sessions: Default::default(),
        attrs: Default::default(),
        topos: Default::default(),
        errhandlers: Default::default(),
        wins: Default::default(),
        files: Default::default(),
        thread_level: level,
        main_thread: std::thread::current().id(),
    };
    crate::info::started(world.size(), level);
    state::install(mpi);
    crate::spawn::started();
    start_clock();
    level
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    guard("MPI_Init", || init("MPI_Init", MPI_THREAD_SINGLE, std::ptr::null_mut()))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    guard("MPI_Init_thread", || init("MPI_Init_thread", required, provided))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Finalize() -> c_int {
    guard("MPI_Finalize", || finalize())
}

unsafe fn finalize() -> c_int {
    if world_phase() != state::RUNNING {
        eprintln!("billboard MPI: MPI_Finalize called without MPI_Init (or twice)");
        return MPI_ERR_OTHER;
    }
    // MPI_COMM_SELF's attributes are deleted first, as if it were freed (MPI 3.1 section
    // 8.7.1); their delete callbacks may still call MPI. Then MPI_COMM_WORLD's.
    let attrs =
        crate::attr::delete_comm_attrs(MPI_COMM_SELF).and_then(|()| crate::attr::delete_comm_attrs(MPI_COMM_WORLD));
    WORLD.store(state::FINALIZED, Ordering::Release);
    if crate::session::open_sessions() > 0 {
        // Sessions go on: the library stops when the process exits (see `session`).
        crate::session::stop_at_exit();
        return attrs.map_or_else(|e| e.class, |()| MPI_SUCCESS);
    }
    stop(attrs)
}

/// Stops the library: every request and communicator released, then the job's wire-up.
/// `attrs`: how the deletion of MPI_COMM_SELF's and MPI_COMM_WORLD's attributes went.
pub(crate) fn stop(attrs: Res) -> c_int {
    let Some(mpi) = state::take() else {
        eprintln!("billboard MPI: MPI_Finalize called without MPI_Init (or twice)");
        return MPI_ERR_OTHER;
    };
    // The windows' progress thread polls the engine: it ends first.
    crate::win::stop_progress_thread();
    let Mpi { universe, comms, engine, requests, promoted, detached, bsend, mut files, .. } = mpi;
    // Files left open are closed before the communicators they run on go.
    files.close_all();
    // Requests and communicators hold the engine; release them before it shuts down
    // (dropping a freed request waits for its operation, as finalize must). Requests hold it
    // by a plain pointer (`assume_operations_end_first`), so none may be left for later.
    drop(detached);
    drop(requests);
    drop(promoted);
    drop(bsend);
    drop(comms);
    drop(engine);
    match universe.finalize() {
        Ok(()) => match attrs {
            Ok(()) => MPI_SUCCESS,
            Err(e) => {
                eprintln!("billboard MPI: MPI_Finalize: {}", e.msg);
                e.class
            }
        },
        Err(e) => {
            eprintln!("billboard MPI: MPI_Finalize: {e}");
            MPI_ERR_OTHER
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Initialized(flag: *mut c_int) -> c_int {
    anytime("MPI_Initialized", || {
        *out(flag, "flag")? = (world_phase() != state::NOT_STARTED) as c_int;
        Ok(())
    })
}

/// Runs the body of a call allowed before MPI_Init and after MPI_Finalize: an error goes
/// through MPI_COMM_WORLD's handler while MPI runs, and is returned otherwise.
fn anytime(function: &'static str, body: impl FnOnce() -> Res) -> c_int {
    guard(function, || match body() {
        Ok(()) => MPI_SUCCESS,
        Err(e) if state::phase() == state::RUNNING => handle(function, MPI_COMM_WORLD, e),
        Err(e) => {
            eprintln!("billboard MPI: {function}: {}", e.msg);
            e.class
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Finalized(flag: *mut c_int) -> c_int {
    anytime("MPI_Finalized", || {
        *out(flag, "flag")? = (world_phase() == state::FINALIZED) as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Query_thread(provided: *mut c_int) -> c_int {
    call("MPI_Query_thread", MPI_COMM_WORLD, |m| {
        *out(provided, "provided")? = m.thread_level;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
    call("MPI_Is_thread_main", MPI_COMM_WORLD, |m| {
        *out(flag, "flag")? = (m.main_thread == std::thread::current().id()) as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let rank = state::with(|m| m.world_rank).unwrap_or(0);
    let comm = crate::error::handle_name(comm);
    eprintln!("billboard MPI: rank {rank} on {} called MPI_Abort({comm}, {errorcode})", host_name());
    state::with(|m| m.universe.abort(errorcode, "MPI_Abort"));
    std::process::exit(errorcode)
}

/// This host's name (`MPI_Get_processor_name`, error reports).
pub(crate) fn host_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(billboard::transport::tcp::addr::host_name)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    copy_out(host_name(), name, resultlen, MPI_MAX_PROCESSOR_NAME);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    anytime("MPI_Get_version", || {
        *out(version, "version")? = MPI_VERSION;
        *out(subversion, "subversion")? = MPI_SUBVERSION;
        Ok(())
    })
}

/// MPICH's version strings (`const char MPII_Version_*[]`, what `mpichversion` and
/// `MPI_Get_library_version` are made of in MPICH), for a program built for MPICH that reads
/// them: the MPICH version and library ABI ours is compatible with, and our own build's facts.
#[no_mangle]
pub static MPII_Version_string: [u8; 6] = *b"4.0.2\0";
#[no_mangle]
pub static MPII_Version_ABI: [u8; 7] = *b"14:2:2\0";
#[no_mangle]
pub static MPII_Version_date: [u8; 16] = *b"Billboard 0.1.0\0";
#[no_mangle]
pub static MPII_Version_device: [u8; 10] = *b"billboard\0";
#[no_mangle]
pub static MPII_Version_configure: [u8; 1] = *b"\0";
#[no_mangle]
pub static MPII_Version_custom: [u8; 1] = *b"\0";
#[no_mangle]
pub static MPII_Version_CC: [u8; 3] = *b"cc\0";
#[no_mangle]
pub static MPII_Version_CXX: [u8; 4] = *b"c++\0";
#[no_mangle]
pub static MPII_Version_F77: [u8; 9] = *b"gfortran\0";
#[no_mangle]
pub static MPII_Version_FC: [u8; 9] = *b"gfortran\0";

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    let text = concat!("Billboard MPI ", env!("CARGO_PKG_VERSION"), " (MPICH 4.0.2 ABI, MPI 4.0)");
    copy_out(text, version, resultlen, MPI_MAX_LIBRARY_VERSION_STRING);
    MPI_SUCCESS
}

static EPOCH: OnceLock<Instant> = OnceLock::new();

fn start_clock() {
    EPOCH.get_or_init(Instant::now);
}

#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> f64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> f64 {
    1e-9
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

/// MPI_Alloc_mem: from the memory file other processes of the host can map (`win/arena.rs`),
/// so a dynamic window's region in it is reached by loads and stores; `malloc` where the
/// arena is off (`BB_ALLOC_MEM_SHARED=0`, or the info key `bb_alloc_mem_shared` = `false`)
/// or the kernel refuses it.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut std::ffi::c_void) -> c_int {
    call("MPI_Alloc_mem", MPI_COMM_WORLD, |_| {
        if size < 0 {
            return Err(err(MPI_ERR_ARG, format!("MPI_Alloc_mem: negative size {size}")));
        }
        let baseptr = out(baseptr as *mut *mut std::ffi::c_void, "baseptr")?;
        let shared = info == MPI_INFO_NULL
            || crate::info::with_infos(|i| i.value(info, "bb_alloc_mem_shared"))?.is_none_or(|v| v.trim() != "false");
        if let Some(p) = shared.then(|| crate::win::arena::alloc(size as usize)).flatten() {
            *baseptr = p.cast();
            return Ok(());
        }
        let p = libc::malloc(size.max(1) as usize);
        if p.is_null() {
            return Err(err(MPI_ERR_NO_MEM, format!("MPI_Alloc_mem: cannot allocate {size} bytes")));
        }
        *baseptr = p;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Free_mem(base: *mut std::ffi::c_void) -> c_int {
    if !base.is_null() && !crate::win::arena::free(base.cast()) {
        libc::free(base);
    }
    MPI_SUCCESS
}

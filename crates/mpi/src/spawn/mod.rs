//! Dynamic processes (MPI 4.0 chapter 11): MPI_Comm_spawn(_multiple), MPI_Comm_get_parent,
//! MPI_Open_port/MPI_Close_port, MPI_Comm_accept/MPI_Comm_connect, MPI_Comm_join,
//! MPI_Comm_disconnect, and the name service (MPI_Publish_name, MPI_Unpublish_name,
//! MPI_Lookup_name). The work is `billboard`'s `api/dynamic.rs` (how groups join) and the
//! launcher's (bbrun starts the children, `crates/bbrun/src/job/spawn.rs`); here are the
//! handles, the C strings and the error classes.

mod ports;

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicI32, Ordering};

use billboard::SpawnCommand;

use crate::abi::*;
use crate::comm_create::{store_child, take};
use crate::error::{call_unlocked, err, out, rank_range, MpiError, Res};
use crate::state;

/// The handle of the intercommunicator to the parents (MPI_COMM_NULL when there is none, or
/// once it was disconnected or freed).
static PARENT: AtomicI32 = AtomicI32::new(MPI_COMM_NULL);

/// After MPI_Init: the parent intercommunicator gets its handle, and MPI_UNIVERSE_SIZE and
/// MPI_APPNUM their values.
pub(crate) fn started() {
    let found = state::with(|m| {
        let launcher = m.universe.launcher();
        let parent = m.universe.parent().map(|p| m.add_comm(p));
        (launcher, parent, m.universe.world().size())
    });
    if let Some((launcher, parent, world)) = found {
        PARENT.store(parent.unwrap_or(MPI_COMM_NULL), Ordering::Relaxed);
        // Hydra answers -1 (unknown) on one host: the world is the least the universe holds.
        let universe = launcher.universe_size().unwrap_or(0).max(world);
        crate::attr::set_universe(universe as c_int, launcher.appnum());
    }
}

/// MPI_Comm_free or MPI_Comm_disconnect of `comm`: if it was the parent, there is none now.
pub(crate) fn forget_parent(comm: MPI_Comm) {
    let _ = PARENT.compare_exchange(comm, MPI_COMM_NULL, Ordering::Relaxed, Ordering::Relaxed);
}

/// A C string argument, as text.
unsafe fn text(p: *const c_char, what: &str) -> Res<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: MPI's contract: a NUL-terminated string.
    Ok(CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// A NULL-terminated argument vector (MPI_ARGV_NULL: none).
unsafe fn argv(p: *mut *mut c_char) -> Res<Vec<String>> {
    let mut args = Vec::new();
    if p.is_null() {
        return Ok(args);
    }
    for i in 0.. {
        // SAFETY: MPI's contract: the array ends with a NULL entry.
        let a = *p.add(i);
        if a.is_null() {
            break;
        }
        args.push(text(a, "an argument")?);
    }
    Ok(args)
}

/// The keys and values of `info` (none for MPI_INFO_NULL).
fn info_entries(info: MPI_Info) -> Res<Vec<(String, String)>> {
    if info == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    state::with(|m| m.info(info)).unwrap_or_else(|| Err(err(MPI_ERR_OTHER, "MPI is not running")))
}

/// The commands of a spawn, read at the root.
unsafe fn commands(
    count: c_int,
    command: impl Fn(usize) -> *const c_char,
    args: impl Fn(usize) -> *mut *mut c_char,
    maxprocs: impl Fn(usize) -> c_int,
    info: impl Fn(usize) -> MPI_Info,
) -> Res<Vec<SpawnCommand>> {
    if count <= 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid count {count} of commands")));
    }
    (0..count as usize)
        .map(|i| {
            let command = text(command(i), "the command")?;
            let n = maxprocs(i);
            if n <= 0 {
                return Err(err(MPI_ERR_ARG, format!("invalid maxprocs {n} for command '{command}'")));
            }
            Ok(SpawnCommand { command, args: argv(args(i))?, nprocs: n as usize, info: info_entries(info(i))? })
        })
        .collect()
}

/// The work of both spawn calls: `read` gives the commands (called at the root only).
unsafe fn spawn(
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
    read: impl FnOnce() -> Res<Vec<SpawnCommand>>,
) -> Res {
    let intercomm = out(intercomm, "intercomm")?;
    let (c, eh) = take(comm)?;
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, "MPI_Comm_spawn on an intercommunicator"));
    }
    let root = usize::try_from(root)
        .ok()
        .filter(|&r| r < c.size())
        .ok_or_else(|| err(MPI_ERR_ROOT, format!("invalid root {root} ({})", rank_range(c.size()))))?;
    let commands = if c.rank() == root { read() } else { Ok(Vec::new()) };
    let total: usize = commands.as_ref().map_or(0, |cs| cs.iter().map(|c| c.nprocs).sum());
    let launcher = state::with(|m| m.universe.launcher()).ok_or_else(|| err(MPI_ERR_OTHER, "MPI is not running"))?;
    let commands = commands.map_err(|e| billboard::Error::Spawn(e.msg.clone()));
    let fill = |code: &dyn Fn(usize) -> c_int, n: usize| {
        if errcodes as isize != MPI_ERRCODES_IGNORE && !errcodes.is_null() {
            for i in 0..n {
                // SAFETY: MPI's contract: one entry per process asked for.
                *errcodes.add(i) = code(i);
            }
        }
    };
    let mut ended = Vec::new();
    match launcher.spawn(&c, root, commands, &mut ended) {
        Ok(children) => {
            fill(&|_| MPI_SUCCESS, children.peers());
            *intercomm = store_child(eh, Some(children));
            Ok(())
        }
        Err(e) => {
            *intercomm = MPI_COMM_NULL;
            // When some children ended before MPI_Init, their entries say MPI_ERR_SPAWN and
            // those of the others, which the launcher then stopped, MPI_ERR_PROC_ABORTED.
            fill(
                &|i| match ended.is_empty() || ended.contains(&i) {
                    true => MPI_ERR_SPAWN,
                    false => MPI_ERR_PROC_ABORTED,
                },
                total,
            );
            Err(MpiError::from(e))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn(
    command: *const c_char,
    args: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    call_unlocked("MPI_Comm_spawn", comm, || {
        spawn(root, comm, intercomm, array_of_errcodes, || commands(1, |_| command, |_| args, |_| maxprocs, |_| info))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    call_unlocked("MPI_Comm_spawn_multiple", comm, || {
        spawn(root, comm, intercomm, array_of_errcodes, || {
            if array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
                return Err(err(MPI_ERR_ARG, "a NULL array of commands, maxprocs or info"));
            }
            // SAFETY (each closure): MPI's contract: `count` entries in each array; a NULL
            // array of argv (MPI_ARGVS_NULL) means no arguments for any command.
            commands(
                count,
                |i| *array_of_commands.add(i),
                |i| if array_of_argv.is_null() { std::ptr::null_mut() } else { *array_of_argv.add(i) },
                |i| *array_of_maxprocs.add(i),
                |i| *array_of_info.add(i),
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    crate::error::call("MPI_Comm_get_parent", MPI_COMM_WORLD, |_| {
        *out(parent, "parent")? = PARENT.load(Ordering::Relaxed);
        Ok(())
    })
}

/// MPI_Comm_disconnect (MPI 4.0 section 11.10.4): waits until every operation on `comm` has
/// completed (the program's requests on it, those it freed with MPI_Request_free too), then for
/// the other side likewise (a barrier over it, as MPICH does), then frees it. So what this
/// process sent on it has been handed to its routes and what it receives has arrived before
/// the connections to another job close (their held-back bytes are written then: see
/// `TcpChannel::release`); a peer that dies meanwhile fails those operations, naming it.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    let handle = comm.as_ref().map_or(MPI_COMM_NULL, |c| *c);
    complete_pending(handle);
    let rc = crate::coll::PMPI_Barrier(handle);
    if rc != MPI_SUCCESS {
        return rc;
    }
    forget_parent(handle);
    crate::comm::PMPI_Comm_free(comm)
}

/// Makes progress until no operation on `comm` is pending. The requests stay the program's:
/// a later MPI_Wait or MPI_Test finds them complete. (A bad handle waits for nothing: the
/// barrier after reports it.)
fn complete_pending(comm: MPI_Comm) {
    let pending = || {
        state::with(|m| {
            let table = m.table_requests_on(comm);
            let table_pending = table.into_iter().any(|h| !matches!(crate::request::poll(m, h), Ok(true)));
            (table_pending || m.engine_pending_on(comm)).then(|| m.engine.clone())
        })
        .flatten()
    };
    while let Some(engine) = pending() {
        // One round of progress, and if it moved nothing a short sleep that an arrival ends (a
        // send waiting for room waits on the socket taking bytes).
        engine.nap(std::time::Duration::from_millis(1));
    }
}

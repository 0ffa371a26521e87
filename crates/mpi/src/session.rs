//! MPI 4.0's sessions (chapter 11.3): MPI_Session_init starts the library without MPI_Init (or
//! joins it when MPI_Init has started it), and a program makes its communicators from process
//! sets: a group from a set's name (MPI_Group_from_session_pset), then a communicator from the
//! group alone (MPI_Comm_create_from_group, MPI_Intercomm_create_from_groups), with no parent
//! communicator. The process sets are the two MPI 4.0 defines: "mpi://WORLD" (every process
//! of the job) and "mpi://SELF".
//!
//! When the library stops: MPI_Finalize stops it unless a session is open; otherwise it stops
//! when the process exits normally (an `on_exit` handler, registered by the first session or by
//! such an MPI_Finalize), so that a program may finalize its sessions and start new ones. A
//! process that exits with a non-zero status (an abort, an error) does not wait for the others
//! there.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::abi::*;
use crate::error::{err, guard, handle_name, out, raise, MpiError, Res};
use crate::state::{self, Mpi};

/// The process sets, by name, and whether each holds every process (else the caller alone).
const PSETS: [(&str, bool); 2] = [("mpi://WORLD", true), ("mpi://SELF", false)];

pub(crate) struct Session {
    errhandler: MPI_Errhandler,
    thread_level: c_int,
}

/// Sessions by handle (direct handles of object type SESSION indexing `table`).
#[derive(Default)]
pub(crate) struct Sessions {
    table: Vec<Option<Session>>,
    free: Vec<u32>,
}

/// How many sessions are open (readable without the state, for MPI_Finalize).
static OPEN: AtomicUsize = AtomicUsize::new(0);
static STOP_AT_EXIT: AtomicBool = AtomicBool::new(false);

pub(crate) fn open_sessions() -> usize {
    OPEN.load(Ordering::Acquire)
}

/// Arranges for the library to stop when the process exits normally (see the module's
/// comment); once.
pub(crate) fn stop_at_exit() {
    if !STOP_AT_EXIT.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a function with the C library, called once at exit.
        unsafe { on_exit(at_exit, std::ptr::null_mut()) };
    }
}

extern "C" {
    /// glibc's: like `atexit`, and the function is told the exit status.
    fn on_exit(function: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

extern "C" fn at_exit(status: c_int, _arg: *mut c_void) {
    // A failing process does not wait for the others in the job's last barrier.
    if status == 0 && state::phase() == state::RUNNING && crate::env::world_phase() != state::RUNNING {
        guard("MPI_Session_finalize", || crate::env::stop(Ok(())));
    }
}

fn bad_session(h: MPI_Session) -> MpiError {
    err(MPI_ERR_SESSION, format!("invalid session {}", handle_name(h)))
}

fn session_index(h: MPI_Session) -> Option<usize> {
    (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::SESSION)
        .then_some(handle_index(h) as usize)
}

impl Mpi {
    fn session(&self, h: MPI_Session) -> Res<&Session> {
        let i = session_index(h).ok_or_else(|| bad_session(h))?;
        self.sessions.table.get(i).and_then(|s| s.as_ref()).ok_or_else(|| bad_session(h))
    }

    fn session_mut(&mut self, h: MPI_Session) -> Res<&mut Session> {
        let i = session_index(h).ok_or_else(|| bad_session(h))?;
        self.sessions.table.get_mut(i).and_then(|s| s.as_mut()).ok_or_else(|| bad_session(h))
    }

    /// The members (world ranks) of the process set `name`.
    fn pset_members(&self, name: &str) -> Res<Vec<billboard::Process>> {
        let world = PSETS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, world)| world);
        match world {
            Some(true) => Ok((0..self.engine.size()).map(billboard::Process::world).collect()),
            Some(false) => Ok(vec![billboard::Process::world(self.world_rank)]),
            None => Err(err(
                MPI_ERR_ARG,
                format!("no process set named '{name}' (this library has \"mpi://WORLD\" and \"mpi://SELF\")"),
            )),
        }
    }
}

/// Runs a session call's body; an error goes to the session's error handler (MPI_ERRORS_RETURN
/// for a handle that names no session, so that the program hears of it).
fn session_call(function: &'static str, session: MPI_Session, body: impl FnOnce(&mut Mpi) -> Res) -> c_int {
    guard(function, || {
        let outcome =
            state::with(|m| body(m).map_err(|e| (e, m.session(session).map_or(MPI_ERRORS_RETURN, |s| s.errhandler))));
        match outcome {
            Some(Ok(())) => MPI_SUCCESS,
            Some(Err((e, eh))) => raise(function, eh, session, e),
            None => raise(function, MPI_ERRORS_RETURN, session, err(MPI_ERR_SESSION, "MPI is not running")),
        }
    })
}

/// A string argument from C, non-null.
unsafe fn text(p: *const c_char, what: &str) -> Res<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("null {what}")));
    }
    // SAFETY: a NUL-terminated string from the caller, checked non-null.
    Ok(CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// The thread level named by an info value ("MPI_THREAD_MULTIPLE", ...); `MPI_THREAD_SINGLE`
/// for none.
fn level_named(value: Option<&str>) -> c_int {
    LEVEL_NAMES.iter().position(|&n| Some(n) == value.map(str::trim)).map_or(MPI_THREAD_SINGLE, |i| i as c_int)
}

const LEVEL_NAMES: [&str; 4] =
    ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"];

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    let function = "MPI_Session_init";
    guard(function, || {
        if state::phase() == state::FINALIZED {
            return raise(function, errhandler, MPI_SESSION_NULL, err(MPI_ERR_OTHER, "the library has stopped"));
        }
        if state::phase() == state::NOT_STARTED {
            // The thread level the info asks for (info objects exist before the library).
            let level = if info == MPI_INFO_NULL {
                MPI_THREAD_SINGLE
            } else {
                match crate::info::with_infos(|i| i.value(info, "thread_level")) {
                    Ok(v) => level_named(v.as_deref()),
                    Err(e) => return raise(function, errhandler, MPI_SESSION_NULL, e),
                }
            };
            crate::env::start(function, level);
            stop_at_exit();
        }
        let made = state::with(|m| -> Res<MPI_Session> {
            let session = out(session, "session")?;
            if errhandler != MPI_ERRHANDLER_NULL {
                m.check_errhandler_for(errhandler, object_type::SESSION)?;
            }
            let asked = match info {
                MPI_INFO_NULL => MPI_THREAD_SINGLE,
                _ => level_named(crate::info::with_infos(|i| i.value(info, "thread_level"))?.as_deref()),
            };
            let s = Session {
                errhandler: if errhandler == MPI_ERRHANDLER_NULL { MPI_ERRORS_ARE_FATAL } else { errhandler },
                thread_level: asked.min(m.thread_level),
            };
            let i = state::store(&mut m.sessions.table, &mut m.sessions.free, s);
            *session = make_handle(HandleKind::Direct, object_type::SESSION, i);
            OPEN.fetch_add(1, Ordering::AcqRel);
            Ok(*session)
        });
        match made {
            Some(Ok(_)) => MPI_SUCCESS,
            Some(Err(e)) => raise(function, errhandler, MPI_SESSION_NULL, e),
            None => raise(function, errhandler, MPI_SESSION_NULL, err(MPI_ERR_OTHER, "the library did not start")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let h = if session.is_null() { MPI_SESSION_NULL } else { *session };
    session_call("MPI_Session_finalize", h, |m| {
        let session = out(session, "session")?;
        m.session(*session)?;
        let i = session_index(*session).expect("checked");
        m.sessions.table[i] = None;
        m.sessions.free.push(i as u32);
        OPEN.fetch_sub(1, Ordering::AcqRel);
        *session = MPI_SESSION_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_num_psets(
    session: MPI_Session,
    info: MPI_Info,
    npset_names: *mut c_int,
) -> c_int {
    session_call("MPI_Session_get_num_psets", session, |m| {
        m.session(session)?;
        m.check_info(info)?;
        *out(npset_names, "npset_names")? = PSETS.len() as c_int;
        Ok(())
    })
}

/// MPI_Session_get_nth_pset: with `*pset_len` 0, the length of the name (its NUL included) is
/// returned there; otherwise the name, cut to fit `*pset_len` bytes with its NUL.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    session_call("MPI_Session_get_nth_pset", session, |m| {
        m.session(session)?;
        m.check_info(info)?;
        let len = out(pset_len, "pset_len")?;
        let (name, _) = usize::try_from(n).ok().and_then(|i| PSETS.get(i)).ok_or_else(|| {
            err(MPI_ERR_ARG, format!("process set number {n}: valid numbers are 0 to {}", PSETS.len() - 1))
        })?;
        if *len <= 0 {
            *len = name.len() as c_int + 1;
            return Ok(());
        }
        if pset_name.is_null() {
            return Err(err(MPI_ERR_ARG, "null pset_name"));
        }
        crate::error::copy_out(name, pset_name, std::ptr::null_mut(), *len);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_pset_info(
    session: MPI_Session,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> c_int {
    session_call("MPI_Session_get_pset_info", session, |m| {
        m.session(session)?;
        let name = text(pset_name, "pset_name")?;
        let size = m.pset_members(&name)?.len();
        *out(info, "info")? = m.add_info(vec![("mpi_size".into(), size.to_string())]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_info(session: MPI_Session, info_used: *mut MPI_Info) -> c_int {
    session_call("MPI_Session_get_info", session, |m| {
        let level = m.session(session)?.thread_level;
        let entries = vec![("thread_level".into(), LEVEL_NAMES[level.clamp(0, 3) as usize].into())];
        *out(info_used, "info_used")? = m.add_info(entries);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_create_errhandler(
    function: Option<crate::errhandler::CommErrhandlerFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    session_call("MPI_Session_create_errhandler", MPI_SESSION_NULL, |m| {
        let f = function.ok_or_else(|| err(MPI_ERR_ARG, "null error handler function"))?;
        *out(errhandler, "errhandler")? = m.add_errhandler(f, object_type::SESSION);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_set_errhandler(session: MPI_Session, errhandler: MPI_Errhandler) -> c_int {
    session_call("MPI_Session_set_errhandler", session, |m| {
        m.session(session)?;
        m.check_errhandler_for(errhandler, object_type::SESSION)?;
        m.session_mut(session)?.errhandler = errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_errhandler(session: MPI_Session, errhandler: *mut MPI_Errhandler) -> c_int {
    session_call("MPI_Session_get_errhandler", session, |m| {
        *out(errhandler, "errhandler")? = m.session(session)?.errhandler;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> c_int {
    let function = "MPI_Session_call_errhandler";
    guard(function, || {
        let eh = state::with(|m| m.session(session).map(|s| s.errhandler)).unwrap_or_else(|| Err(bad_session(session)));
        match eh {
            Ok(MPI_ERRORS_RETURN) => MPI_SUCCESS,
            Ok(eh) => {
                if crate::errhandler::invoke(eh, session, errorcode).is_none() {
                    // MPI_ERRORS_ARE_FATAL (or ABORT): the predefined handler ends the job.
                    raise(function, eh, session, err(errorcode, "called by the program"));
                }
                MPI_SUCCESS
            }
            Err(e) => raise(function, MPI_ERRORS_RETURN, session, e),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> c_int {
    session_call("MPI_Group_from_session_pset", session, |m| {
        m.session(session)?;
        let name = text(pset_name, "pset_name")?;
        let members = m.pset_members(&name)?;
        *out(newgroup, "newgroup")? = m.add_group(members);
        Ok(())
    })
}

/// The engine tag of a string tag (MPI_Comm_create_from_group and
/// MPI_Intercomm_create_from_groups tell concurrent creations apart by string): FNV-1a, folded
/// into the tags a communicator's creation may use.
fn tag_of(stringtag: &str) -> c_int {
    let hash = stringtag.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    ((hash ^ (hash >> 32)) as u32 & billboard::TAG_UB as u32) as c_int
}

/// What a constructor from groups needs from the tables: MPI_COMM_WORLD's communicator (every
/// group's members are world ranks), the members of each group, the caller's world rank, and
/// the error handler the new communicator gets (checked; MPI_ERRHANDLER_NULL: fatal errors).
struct FromGroups {
    world: billboard::Communicator,
    groups: Vec<Vec<usize>>,
    me: usize,
    errhandler: MPI_Errhandler,
}

fn from_groups(groups: &[MPI_Group], info: MPI_Info, errhandler: MPI_Errhandler) -> Res<FromGroups> {
    state::with(|m| {
        m.check_info(info)?;
        let errhandler = match errhandler {
            MPI_ERRHANDLER_NULL => MPI_ERRORS_ARE_FATAL,
            eh => {
                m.check_errhandler_for(eh, object_type::COMM)?;
                eh
            }
        };
        let world = &m.engine;
        let peers = |members: &[billboard::Process]| -> Res<Vec<usize>> {
            members
                .iter()
                .map(|&p| match world.exists(p) {
                    true => Ok(p.peer),
                    false => Err(err(MPI_ERR_GROUP, format!("{p} of the group was disconnected: it no longer exists"))),
                })
                .collect()
        };
        let groups = groups.iter().map(|&g| peers(m.group(g)?)).collect::<Res<_>>()?;
        Ok(FromGroups { world: m.engine.clone(), groups, me: m.world_rank, errhandler })
    })
    .unwrap_or_else(|| Err(err(MPI_ERR_OTHER, "MPI is not running")))
}

/// Runs a constructor from groups: errors go to the error handler the call was given.
fn create_call(function: &'static str, errhandler: MPI_Errhandler, body: impl FnOnce() -> Res) -> c_int {
    guard(function, || {
        if state::phase() != state::RUNNING {
            return crate::error::not_running(function);
        }
        match body() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => {
                let eh = if errhandler == MPI_ERRHANDLER_NULL { MPI_ERRORS_ARE_FATAL } else { errhandler };
                raise(function, eh, MPI_COMM_NULL, e)
            }
        }
    })
}

/// The communicator of the members of a group, made by them alone: MPI_COMM_WORLD's subset.
fn subset_of(f: &FromGroups, members: &[usize], tag: c_int) -> Res<billboard::Communicator> {
    if !members.contains(&f.me) {
        return Err(err(
            MPI_ERR_GROUP,
            format!("the calling process (world rank {}) is not a member of the group", f.me),
        ));
    }
    f.world.subset(members, tag)?.ok_or_else(|| err(MPI_ERR_INTERN, "no communicator for a member of the group"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> c_int {
    create_call("MPI_Comm_create_from_group", errhandler, || {
        let newcomm = out(newcomm, "newcomm")?;
        let tag = tag_of(&text(stringtag, "stringtag")?);
        let f = from_groups(&[group], info, errhandler)?;
        let made = subset_of(&f, &f.groups[0], tag)?;
        *newcomm = crate::comm_create::store_child(f.errhandler, Some(made));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    create_call("MPI_Intercomm_create_from_groups", errhandler, || {
        let newintercomm = out(newintercomm, "newintercomm")?;
        let stringtag = text(stringtag, "stringtag")?;
        let f = from_groups(&[local_group, remote_group], info, errhandler)?;
        let (local, remote) = (&f.groups[0], &f.groups[1]);
        let leader = |rank: c_int, group: &[usize], which: &str| {
            usize::try_from(rank).ok().filter(|&r| r < group.len()).ok_or_else(|| {
                let range = crate::error::rank_range(group.len());
                err(MPI_ERR_RANK, format!("invalid {which} leader {rank} ({range} of the {which} group)"))
            })
        };
        let local_leader = leader(local_leader, local, "local")?;
        let remote_leader = remote[leader(remote_leader, remote, "remote")?];
        if local.iter().any(|r| remote.contains(r)) {
            return Err(err(MPI_ERR_GROUP, "the local and remote groups overlap"));
        }
        // The local communicator first (its own tag), then the two leaders meet over
        // MPI_COMM_WORLD, as MPI_Intercomm_create's do over the peer communicator.
        let within = subset_of(&f, local, tag_of(&format!("{stringtag}\0local")))?;
        let peer = (within.rank() == local_leader).then(|| f.world.clone());
        let made = within.intercomm_create(local_leader, peer.as_ref(), remote_leader, tag_of(&stringtag))?;
        *newintercomm = crate::comm_create::store_child(f.errhandler, Some(made));
        Ok(())
    })
}

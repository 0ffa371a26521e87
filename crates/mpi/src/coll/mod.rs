//! Collectives: argument checks, MPI_IN_PLACE, counts and displacements in elements turned
//! into byte layouts, then the engine's collectives (`billboard::coll`). This file holds what
//! they share and the barrier; `reduce.rs` the reductions and scans, `moves.rs` the
//! collectives that only move data (broadcast, gather, scatter, all-gather, all-to-all).
//!
//! Data goes through `datatype::View`/`Parted`: contiguous data is used in place, other data
//! is packed before and unpacked after. Reductions keep data in the type's own layout (the
//! operator reads elements one extent apart), so they take spans of `count * extent` bytes.

use std::ffi::{c_int, c_void};
use std::rc::Rc;

use billboard::{Communicator, InterRoot};

use crate::abi::*;
use crate::datatype::{self, parted, view, Dir, Parted, View};
use crate::error::{bad_comm, call_unlocked, err, Res};
use crate::ops;
use crate::state;

fn in_place(p: *const c_void) -> bool {
    p as isize == MPI_IN_PLACE
}

/// A buffer that must be memory: MPI_IN_PLACE stands only for the one argument the standard
/// names (a reduction's, gather's or all-to-all's send buffer, a scatter root's receive
/// buffer), never for both, and never for a broadcast's buffer.
fn not_in_place(p: *const c_void, what: &str) -> Res {
    if in_place(p) {
        return Err(err(MPI_ERR_BUFFER, format!("{what} is MPI_IN_PLACE, which this argument cannot take")));
    }
    Ok(())
}

/// Where the `len` bytes a reduction contributes lie: its send buffer, or with MPI_IN_PLACE
/// its receive buffer. The same buffer passed as both is an error (MPI_IN_PLACE is the way).
unsafe fn reduction_source(sendbuf: *const c_void, recvbuf: *mut c_void, len: usize) -> Res<*const u8> {
    if in_place(sendbuf) {
        return Ok(slice(recvbuf, len)?.as_ptr());
    }
    if len > 0 && std::ptr::eq(sendbuf, recvbuf) {
        return Err(err(
            MPI_ERR_BUFFER,
            "the send and receive buffers are the same: pass MPI_IN_PLACE as the send buffer",
        ));
    }
    Ok(slice(sendbuf, len)?.as_ptr())
}

thread_local! {
    /// The copy of an in-place reduction's contribution, kept for the next one: a reduction in
    /// steady use allocates nothing.
    static CONTRIBUTION: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` on the `len` bytes a blocking reduction contributes (see [`reduction_source`]):
/// its send buffer where it lies, or with MPI_IN_PLACE a copy, since the result overwrites
/// the receive buffer they lie in.
#[inline(always)]
unsafe fn with_contribution<R>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    len: usize,
    f: impl FnOnce(&[u8]) -> Res<R>,
) -> Res<R> {
    let source = std::slice::from_raw_parts(reduction_source(sendbuf, recvbuf, len)?, len);
    if !in_place(sendbuf) {
        return f(source);
    }
    // Taken, not borrowed: a user's operator that reduces again gets a buffer of its own.
    let mut copy = CONTRIBUTION.take();
    copy.clear();
    copy.extend_from_slice(source);
    let result = f(&copy);
    CONTRIBUTION.set(copy);
    result
}

/// Where a reduction's result lands: the program's buffer itself, or, for a type with holes, a
/// scratch buffer whose data bytes go into the program's buffer at the end, so that its holes
/// keep what the program left there (MPICH does so; the algorithms write whole spans).
struct Landing {
    user: *mut u8,
    len: usize,
    holes: Option<(datatype::Layout, i64, Vec<u8>)>,
}

impl Landing {
    /// The landing for `count` instances of `layout` at `recvbuf`, `len` = their `reduce_bytes`.
    unsafe fn new(layout: datatype::Layout, count: i64, recvbuf: *mut c_void, len: usize) -> Res<Landing> {
        let user = slice_mut(recvbuf, len)?.as_mut_ptr();
        let holes = layout.has_holes(count).then(|| (layout, count, vec![0u8; len]));
        Ok(Landing { user, len, holes })
    }

    fn ptr(&mut self) -> *mut u8 {
        match &mut self.holes {
            Some((_, _, scratch)) => scratch.as_mut_ptr(),
            None => self.user,
        }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is the scratch buffer or the program's, `len` bytes either way.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.len) }
    }

    /// Moves the result into the program's buffer (a nonblocking form runs this at completion).
    fn finish(self) {
        if let Some((layout, count, scratch)) = self.holes {
            // SAFETY: the program's buffer holds `len` bytes until the operation completes.
            let user = unsafe { std::slice::from_raw_parts_mut(self.user, self.len) };
            layout.copy_data(count, &scratch, user);
        }
    }

    /// [`Landing::finish`] as a nonblocking collective's completion step, if it has one.
    fn at_completion(self) -> Option<Box<dyn FnOnce()>> {
        self.holes.is_some().then(|| Box::new(move || self.finish()) as Box<dyn FnOnce()>)
    }
}

/// `len` bytes at `p` (NULL allowed when `len` is 0).
unsafe fn slice<'a>(p: *const c_void, len: usize) -> Res<&'a [u8]> {
    not_in_place(p, "the buffer")?;
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("NULL buffer for {len} bytes")));
    }
    Ok(std::slice::from_raw_parts(p.cast(), len))
}

unsafe fn slice_mut<'a>(p: *mut c_void, len: usize) -> Res<&'a mut [u8]> {
    not_in_place(p, "the receive buffer")?;
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("NULL buffer for {len} bytes")));
    }
    Ok(std::slice::from_raw_parts_mut(p.cast(), len))
}

/// The communicator behind a handle, taken out of the tables so that the collective runs
/// without holding them (other threads go on; the engine has its own lock).
/// Communicator `comm` of the table, for a collective that runs without holding the table.
fn comm_ref(comm: MPI_Comm) -> Res<CommRef> {
    let multiple = crate::state::multiple();
    crate::state::with(|m| {
        m.comm(comm).map(|c| {
            if multiple {
                CommRef::Counted(c.comm.clone())
            } else {
                // SAFETY: a copy of the table's handle that is never dropped, so it needs no
                // count of its own. Below MPI_THREAD_MULTIPLE no other call runs while this one
                // does, so nothing frees the communicator before the copy's last use.
                CommRef::Borrowed(std::mem::ManuallyDrop::new(unsafe { std::ptr::read(&c.comm) }))
            }
        })
    })
    .flatten()
    .ok_or_else(|| bad_comm(comm))
}

/// A communicator for one call: the table's handle itself where calls never overlap, else a
/// clone. Cloning touches the reference count, a locked instruction that waits for the stores
/// of messages just posted.
enum CommRef {
    Borrowed(std::mem::ManuallyDrop<Communicator>),
    Counted(Communicator),
}

impl std::ops::Deref for CommRef {
    type Target = Communicator;
    fn deref(&self) -> &Communicator {
        match self {
            CommRef::Borrowed(c) => c,
            CommRef::Counted(c) => c,
        }
    }
}

fn combiner(op: MPI_Op, t: MPI_Datatype) -> Res<ops::Combiner> {
    // A predefined operator on a builtin type needs none of the tables (their lock, lookups).
    if (MPI_MAX..=MPI_NO_OP).contains(&op) && builtin_datatype_size(t).is_some() {
        if let Some(c) = ops::predefined(op, t) {
            return Ok(c);
        }
    }
    crate::state::with(|m| ops::combiner(m, op, t)).expect("MPI is running")
}

/// `op` on `t` as a schedule applies it (elements of `layout`'s extent).
fn reduction(op: MPI_Op, t: MPI_Datatype, layout: &datatype::Layout) -> Res<billboard::Reduction> {
    let (elem, commutative) = elements(op, layout);
    crate::state::with(|m| Ok(billboard::Reduction { op: ops::combiner(m, op, t)?, elem, commutative }))
        .expect("MPI is running")
}

/// The elements `op` works on in a vector of `layout`: their size (its extent) and whether
/// their order may change (every predefined operator commutes; a user's says).
fn elements(op: MPI_Op, layout: &datatype::Layout) -> (usize, bool) {
    let predefined = (MPI_MAX..=MPI_NO_OP).contains(&op);
    let commutative = predefined || crate::state::with(|m| ops::commutative(m, op)).unwrap_or(false);
    (layout.extent().max(1) as usize, commutative)
}

/// The bytes of `count` elements of `t` where `t` is a builtin type (no holes, its size in its
/// handle) and `count` is not negative.
fn builtin_bytes(t: MPI_Datatype, count: i64) -> Option<usize> {
    usize::try_from(count).ok()?.checked_mul(builtin_datatype_size(t)?)
}

/// A blocking reduction (to `root`, or to all) of a builtin type run on the board where the
/// table gives it the board: a builtin type has no holes and needs no layout, so nothing else
/// is prepared. `Ok(false)` where it runs another way, with the combiner it made in `prepared`.
#[inline(always)]
unsafe fn builtin_on_board(
    c: &Communicator,
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    root: Option<usize>,
    prepared: &mut Option<ops::Combiner>,
) -> Res<bool> {
    let Some(len) = builtin_bytes(t, count).filter(|_| !c.is_inter()) else { return Ok(false) };
    let combine = &mut **prepared.insert(combiner(op, t)?);
    if root.is_some_and(|r| r != c.rank()) {
        // Only the root's receive buffer matters (and may take MPI_IN_PLACE).
        return Ok(c.reduce_on_board(slice(sendbuf, len)?, None, root, combine)?);
    }
    with_contribution(sendbuf, recvbuf, len, |send| {
        Ok(c.reduce_on_board(send, Some(slice_mut(recvbuf, len)?), root, combine)?)
    })
}

/// The layout of `t` and the bytes of `count` elements, where a blocking reduction of them (to a
/// root when `rooted`) runs the direct binomial tree or the board; `None` where it runs as its
/// schedule (start + wait): on an intercommunicator, and wherever the table chooses another
/// algorithm.
fn direct_reduction(
    c: &Communicator,
    count: i64,
    t: MPI_Datatype,
    rooted: bool,
) -> Res<Option<(datatype::Layout, usize)>> {
    if c.is_inter() {
        return Ok(None);
    }
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    Ok((!c.reduction_scheduled(len, rooted)?).then_some((layout, len)))
}

/// What a rooted collective's `root` makes of this process: the root (`Here`), a process that
/// sends to or receives from the root at rank r (`Remote(r)`, of the remote group on an
/// intercommunicator), or one that takes no part (MPI_PROC_NULL on an intercommunicator).
fn check_root(c: &Communicator, root: c_int) -> Res<InterRoot> {
    if c.is_inter() {
        return match root {
            MPI_ROOT => Ok(InterRoot::Here),
            MPI_PROC_NULL => Ok(InterRoot::Elsewhere),
            r if r >= 0 && (r as usize) < c.peers() => Ok(InterRoot::Remote(r as usize)),
            r => Err(err(
                MPI_ERR_ROOT,
                format!(
                    "invalid root {r} on an intercommunicator: MPI_ROOT, MPI_PROC_NULL or a remote rank ({})",
                    crate::error::rank_range(c.peers())
                ),
            )),
        };
    }
    let r = usize::try_from(root)
        .ok()
        .filter(|&r| r < c.size())
        .ok_or_else(|| err(MPI_ERR_ROOT, format!("invalid root {root} ({})", crate::error::rank_range(c.size()))))?;
    Ok(if r == c.rank() { InterRoot::Here } else { InterRoot::Remote(r) })
}

/// MPI_IN_PLACE is not an intercommunicator collective's buffer.
fn no_in_place_on_inter(c: &Communicator, p: *const c_void) -> Res {
    if c.is_inter() && in_place(p) {
        return Err(err(MPI_ERR_BUFFER, "MPI_IN_PLACE on an intercommunicator"));
    }
    Ok(())
}

/// Scans are not defined on intercommunicators (MPI 4.0 section 6.11).
fn no_scan_on_inter(c: &Communicator) -> Res {
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, "a scan on an intercommunicator (scans are for intracommunicators)"));
    }
    Ok(())
}

/// A pointer for no data (a process that sends or receives nothing).
fn no_data() -> *mut u8 {
    std::ptr::NonNull::dangling().as_ptr()
}

/// Runs an intercommunicator's form of a blocking collective: its schedule, waited for (the
/// blocking intracommunicator forms here are direct algorithms but for large reductions).
fn inter_blocking(c: &Communicator, start: impl FnOnce(&Communicator) -> Res<Started>) -> Option<Res> {
    c.is_inter().then(|| {
        let (coll, done) = start(c)?;
        Scheduled { coll, done }.wait()
    })
}

/// Byte parts of a reduction result scattered by `counts` elements of `extent` bytes each.
unsafe fn reduce_parts(n: usize, counts: Ints, extent: usize) -> Res<Vec<(usize, usize)>> {
    if n > 0 && counts.is_null() {
        return Err(err(MPI_ERR_ARG, "NULL recvcounts"));
    }
    let mut at = 0;
    (0..n)
        .map(|r| {
            let c = counts.at(r);
            if c < 0 {
                return Err(err(MPI_ERR_COUNT, format!("rank {r}: count {c}")));
            }
            let part = (at, c as usize * extent);
            at += part.1;
            Ok(part)
        })
        .collect()
}

/// A C array of counts or displacements: `int` in the MPI 3 functions, 64 bits (`MPI_Count`,
/// `MPI_Aint`) in the large-count `_c` ones.
#[derive(Clone, Copy)]
enum Ints {
    Int(*const c_int),
    Wide(*const i64),
}

impl Ints {
    fn is_null(self) -> bool {
        match self {
            Ints::Int(p) => p.is_null(),
            Ints::Wide(p) => p.is_null(),
        }
    }

    /// # Safety
    /// The array holds more than `i` entries.
    unsafe fn at(self, i: usize) -> i64 {
        match self {
            Ints::Int(p) => *p.add(i) as i64,
            Ints::Wide(p) => *p.add(i),
        }
    }
}

/// An element type of [`Ints`].
trait IntArray: Copy {
    fn ints(p: *const Self) -> Ints;
}

impl IntArray for c_int {
    fn ints(p: *const c_int) -> Ints {
        Ints::Int(p)
    }
}

impl IntArray for i64 {
    fn ints(p: *const i64) -> Ints {
        Ints::Wide(p)
    }
}

/// Counts and displacements (in elements) of a buffer's parts, one per rank, read where
/// they lie (nothing is copied per call).
#[derive(Clone, Copy)]
enum Shape {
    /// `n` parts of `count` elements, one after another.
    Uniform(usize, i64),
    /// The C arrays of a v-collective, `n` entries each (not NULL).
    Varying(usize, Ints, Ints),
}

impl Shape {
    /// # Safety
    /// Unless NULL, `counts` and `displs` hold `n` entries each and stay valid while the
    /// shape is used (the call's arguments).
    unsafe fn varying<C: IntArray, D: IntArray>(n: usize, counts: *const C, displs: *const D) -> Res<Shape> {
        let (counts, displs) = (C::ints(counts), D::ints(displs));
        if n > 0 && (counts.is_null() || displs.is_null()) {
            return Err(err(MPI_ERR_ARG, "NULL counts or displacements"));
        }
        Ok(Shape::Varying(n, counts, displs))
    }

    /// `(count, displacement)` per rank.
    fn parts(self) -> impl ExactSizeIterator<Item = (i64, i64)> + Clone {
        let n = match self {
            Shape::Uniform(n, _) | Shape::Varying(n, ..) => n,
        };
        (0..n).map(move |r| match self {
            Shape::Uniform(_, count) => (count, r as i64 * count),
            // SAFETY: `varying` checked the arrays, which hold `n` entries.
            Shape::Varying(_, counts, displs) => unsafe { (counts.at(r), displs.at(r)) },
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier(comm: MPI_Comm) -> c_int {
    call_unlocked("MPI_Barrier", comm, || Ok(comm_ref(comm)?.barrier()?))
}

/// A collective started as a schedule, and what is left to do when it ends (unpack staged
/// data, free the copies it reads).
pub(crate) type Started = (billboard::Collective, Option<Box<dyn FnOnce()>>);

/// A started collective and what its end must do (unpack, let go of the buffers' views): done
/// at once if it ended inside the call (a blocking form on the board), so the common small
/// case boxes no closure.
fn started(coll: billboard::Collective, at_end: impl FnOnce() + 'static) -> Started {
    if coll.ended() {
        at_end();
        return (coll, None);
    }
    (coll, Some(Box::new(at_end)))
}

/// A collective in flight: what a nonblocking collective's request holds, and what a blocking
/// one waits for. No collective needs a thread or a new communicator.
pub(crate) struct Scheduled {
    coll: billboard::Collective,
    done: Option<Box<dyn FnOnce()>>,
}

impl Scheduled {
    pub(crate) fn new(coll: billboard::Collective, done: Option<Box<dyn FnOnce()>>) -> Scheduled {
        Scheduled { coll, done }
    }

    /// Makes progress once; whether the operation has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.coll.test()
    }

    /// Waits for the operation (at once if [`Scheduled::is_done`]) and finishes it.
    pub(crate) fn wait(self) -> Res<()> {
        self.coll.wait()?;
        if let Some(done) = self.done {
            done();
        }
        Ok(())
    }
}

/// Starts a collective written as a schedule and stores its request (the I-forms).
unsafe fn scheduled(
    function: &'static str,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    start: impl FnOnce(&Communicator) -> Res<Started>,
) -> c_int {
    call_unlocked(function, comm, || {
        let request = crate::error::out(request, "request")?;
        let (coll, done) = start(&*comm_ref(comm)?)?;
        let op = Box::new(Scheduled { coll, done });
        *request = state::with(|m| m.add_request(state::Req::Background { op, comm })).expect("MPI is running");
        Ok(())
    })
}

/// Starts a collective written as a schedule and waits for it (the blocking forms): the
/// start knows it is waited for at once, so it may run on the board (`billboard::coll::blocking`).
unsafe fn blocking(function: &'static str, comm: MPI_Comm, start: impl FnOnce(&Communicator) -> Res<Started>) -> c_int {
    call_unlocked(function, comm, || {
        let c = comm_ref(comm)?;
        let (coll, done) = billboard::coll::blocking(true, || start(&c))?;
        Scheduled { coll, done }.wait()
    })
}

/// `$iname(args..., comm, request)` and `$pname(args..., comm, info, request)`, with their
/// large-count twins (see `counts.rs`: `Count` is `int` or `MPI_Count`, `Disp` `int` or
/// `MPI_Aint`): a collective written once, as `|c| start` (a schedule on communicator `c`),
/// started now and handed back as a request (the I-form), or started anew at each MPI_Start of a
/// persistent request (MPI 4.0's `_init` form).
macro_rules! nonblocking {
    ([$iname:ident, $icname:ident, $pname:ident, $pcname:ident], ($($arg:ident: $ty:ty),* $(,)?), |$c:ident| $start:expr) => {
        nonblocking!([$iname, $icname, $pname, $pcname], ($($arg: $ty),*), |$c, comm| $start);
    };
    // `$comm` names the communicator argument for a start that needs its handle.
    ([$iname:ident, $icname:ident, $pname:ident, $pcname:ident], ($($arg:ident: $ty:ty),* $(,)?), |$c:ident, $comm:ident| $start:expr) => {
        counted! {
            [$iname; Count = c_int, Disp = c_int] [$icname; Count = MPI_Count, Disp = MPI_Aint]
            fn($($arg: $ty,)* $comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
                scheduled(FUNCTION, $comm, request, |$c| $start)
            }
        }

        counted! {
            [$pname; Count = c_int, Disp = c_int] [$pcname; Count = MPI_Count, Disp = MPI_Aint]
            fn($($arg: $ty,)* $comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
                use $crate::coll::snapshot::Keep;
                // The start reads copies of the array arguments (see `snapshot.rs`).
                let snapshot = match $crate::coll::snapshot::Snapshot::of(FUNCTION, $comm) {
                    Ok(s) => s,
                    Err(e) => return crate::error::call(FUNCTION, $comm, |_| Err(e)),
                };
                $(let $arg = $arg.kept(stringify!($arg), &snapshot);)*
                let types = crate::persistent::datatype_args(&[$((stringify!($arg), &$arg as &dyn std::any::Any)),*]);
                let start = move |$c: &Communicator| {
                    let _ = &snapshot;
                    $start
                };
                crate::persistent::collective_init(FUNCTION, $comm, info, request, types, Rc::new(start))
            }
        }
    };
}

/// `$name(args..., comm)`, and the nonblocking and persistent forms of [`nonblocking!`], with
/// their large-count twins: the blocking form waits for the schedule the others start.
macro_rules! collective {
    ([$name:ident, $iname:ident, $cname:ident, $icname:ident, $pname:ident, $pcname:ident], ($($arg:ident: $ty:ty),* $(,)?), |$c:ident| $start:expr) => {
        collective!([$name, $iname, $cname, $icname, $pname, $pcname], ($($arg: $ty),*), |$c, comm| $start);
    };
    ([$name:ident, $iname:ident, $cname:ident, $icname:ident, $pname:ident, $pcname:ident], ($($arg:ident: $ty:ty),* $(,)?), |$c:ident, $comm:ident| $start:expr) => {
        counted! {
            [$name; Count = c_int, Disp = c_int] [$cname; Count = MPI_Count, Disp = MPI_Aint]
            fn($($arg: $ty,)* $comm: MPI_Comm) -> c_int {
                blocking(FUNCTION, $comm, |$c| $start)
            }
        }

        nonblocking!([$iname, $icname, $pname, $pcname], ($($arg: $ty),*), |$c, $comm| $start);
    };
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    scheduled("MPI_Ibarrier", comm, request, |c| Ok((c.ibarrier()?, None)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier_init(comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
    let start = Rc::new(|c: &Communicator| Ok((c.ibarrier()?, None)));
    crate::persistent::collective_init("MPI_Barrier_init", comm, info, request, Vec::new(), start)
}

mod moves;
mod neighbor;
mod reduce;
pub(crate) mod snapshot;

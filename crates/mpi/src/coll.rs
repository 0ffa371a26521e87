//! Collectives: argument checks, MPI_IN_PLACE, counts and displacements in elements turned
//! into byte layouts, then the engine's collectives (`billboard::coll`).
//!
//! Data goes through `datatype::View`/`Parted`: contiguous data is used in place, other data
//! is packed before and unpacked after. Reductions keep data in the type's own layout (the
//! operator reads elements one extent apart), so they take spans of `count * extent` bytes.

use std::ffi::{c_int, c_void};

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

/// A copy of the `len` bytes a reduction contributes (see [`reduction_source`]).
unsafe fn reduction_input(sendbuf: *const c_void, recvbuf: *mut c_void, len: usize) -> Res<Vec<u8>> {
    Ok(std::slice::from_raw_parts(reduction_source(sendbuf, recvbuf, len)?, len).to_vec())
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
    crate::state::with(|m| ops::combiner(m, op, t)).expect("MPI is running")
}

/// `op` on `t` as a schedule applies it (elements of `layout`'s extent).
fn reduction(op: MPI_Op, t: MPI_Datatype, layout: &datatype::Layout) -> Res<billboard::Reduction> {
    let elem = layout.extent().max(1) as usize;
    crate::state::with(|m| {
        Ok(billboard::Reduction { op: ops::combiner(m, op, t)?, elem, commutative: ops::commutative(m, op) })
    })
    .expect("MPI is running")
}

/// Whether a blocking reduction of `count` elements of `t` runs as its schedule (start +
/// wait), because the schedule cuts large vectors into blocks; small ones take the direct
/// binomial form, which allocates less.
fn scheduled_reduction(c: &Communicator, count: i64, t: MPI_Datatype) -> Res<bool> {
    Ok(c.reduction_splits(datatype::layout(t)?.reduce_bytes(count)?))
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

/// A collective in flight: what a nonblocking collective's request holds, and what a blocking
/// one waits for. No collective needs a thread or a new communicator.
pub(crate) struct Scheduled {
    coll: billboard::Collective,
    done: Option<Box<dyn FnOnce()>>,
}

impl Scheduled {
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

/// Starts a collective written as a schedule and waits for it (the blocking forms).
unsafe fn blocking(function: &'static str, comm: MPI_Comm, start: impl FnOnce(&Communicator) -> Res<Started>) -> c_int {
    call_unlocked(function, comm, || {
        let (coll, done) = start(&*comm_ref(comm)?)?;
        Scheduled { coll, done }.wait()
    })
}

/// `$name(args..., comm)` and `$iname(args..., comm, request)`, and their large-count twins
/// `$cname` and `$icname` (see `counts.rs`: `Count` is `int` or `MPI_Count`, `Disp` `int` or
/// `MPI_Aint`): one collective written once, as `|c| start` (a schedule on communicator `c`),
/// that the blocking forms wait for and the I-forms hand back as a request.
macro_rules! collective {
    ([$name:ident, $iname:ident, $cname:ident, $icname:ident], ($($arg:ident: $ty:ty),* $(,)?), |$c:ident| $start:expr) => {
        counted! {
            [$name; Count = c_int, Disp = c_int] [$cname; Count = MPI_Count, Disp = MPI_Aint]
            fn($($arg: $ty,)* comm: MPI_Comm) -> c_int {
                blocking(FUNCTION, comm, |$c| $start)
            }
        }

        counted! {
            [$iname; Count = c_int, Disp = c_int] [$icname; Count = MPI_Count, Disp = MPI_Aint]
            fn($($arg: $ty,)* comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
                scheduled(FUNCTION, comm, request, |$c| $start)
            }
        }
    };
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    scheduled("MPI_Ibarrier", comm, request, |c| Ok((c.ibarrier()?, None)))
}

counted! {
    [PMPI_Ibcast; Count = c_int] [PMPI_Ibcast_c; Count = MPI_Count]
    fn(buf: *mut c_void, count: Count, t: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        scheduled(FUNCTION, comm, request, |c| ibcast(buf, count.into(), t, root, c))
    }
}

/// Broadcast as a schedule.
unsafe fn ibcast(buf: *mut c_void, count: i64, t: MPI_Datatype, root: c_int, c: &Communicator) -> Res<Started> {
    let root = check_root(c, root)?;
    if root == InterRoot::Elsewhere {
        return Ok((c.inter_idle()?, None));
    }
    not_in_place(buf, "the buffer")?;
    let dir = if root == InterRoot::Here { Dir::Read } else { Dir::Write };
    // A staged view lives until the end: the root's packed copy is what goes out.
    let v = view(&datatype::layout(t)?, buf, count, dir)?;
    Ok((c.ibcast_at(v.ptr(), v.len(), root)?, Some(finish_view(v))))
}

counted! {
    [PMPI_Ireduce; Count = c_int] [PMPI_Ireduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        scheduled(FUNCTION, comm, request, |c| ireduce((sendbuf, recvbuf, count.into(), t, op), root, c))
    }
}

/// Reduce as a schedule (MPI_Ireduce, and MPI_Reduce on an intercommunicator or of large vectors).
unsafe fn ireduce(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    if root == InterRoot::Elsewhere {
        // Its arguments are not significant (mpi4py passes no datatype).
        return Ok((c.inter_idle()?, None));
    }
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let how = reduction(op, t, &layout)?;
    if root != InterRoot::Here {
        no_in_place_on_inter(c, sendbuf)?;
        return Ok((c.ireduce_at(slice(sendbuf, len)?.as_ptr(), std::ptr::null_mut(), len, root, how)?, None));
    }
    // An intercommunicator's root contributes nothing.
    let send = if c.is_inter() { no_data() } else { reduction_source(sendbuf, recvbuf, len)? };
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.ireduce_at(send, land.ptr(), len, root, how)?, land.at_completion()))
}

counted! {
    [PMPI_Iallreduce; Count = c_int] [PMPI_Iallreduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        scheduled(FUNCTION, comm, request, |c| iallreduce((sendbuf, recvbuf, count.into(), t, op), c))
    }
}

/// Allreduce as a schedule (MPI_Iallreduce, and MPI_Allreduce on an intercommunicator or of large
/// vectors).
unsafe fn iallreduce(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res<Started> {
    no_in_place_on_inter(c, sendbuf)?;
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let how = reduction(op, t, &layout)?;
    let send = reduction_source(sendbuf, recvbuf, len)?;
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.iallreduce_raw(send, land.ptr(), len, how)?, land.at_completion()))
}

counted! {
    [PMPI_Bcast; Count = c_int] [PMPI_Bcast_c; Count = MPI_Count]
    fn(buf: *mut c_void, count: Count, t: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            if let Some(done) = inter_blocking(&c, |c| ibcast(buf, count.into(), t, root, c)) {
                return done;
            }
            // On an intracommunicator the root is a rank: this one, or another.
            let (dir, root) = match check_root(&c, root)? {
                InterRoot::Remote(r) => (Dir::Write, r),
                _ => (Dir::Read, c.rank()),
            };
            not_in_place(buf, "the buffer")?;
            let mut v = view(&datatype::layout(t)?, buf, count, dir)?;
            c.bcast_bytes(v.bytes_mut(), root)?;
            let len = v.len();
            v.finish(len);
            Ok(())
        })
    }
}

counted! {
    [PMPI_Reduce; Count = c_int] [PMPI_Reduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int {
        let count = i64::from(count);
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            if let Some(done) = inter_blocking(&c, |c| ireduce((sendbuf, recvbuf, count, t, op), root, c)) {
                return done;
            }
            let at = match check_root(&c, root)? {
                InterRoot::Remote(r) => r,
                _ => c.rank(),
            };
            if scheduled_reduction(&c, count, t)? {
                let (coll, done) = ireduce((sendbuf, recvbuf, count, t, op), root, &c)?;
                return Scheduled { coll, done }.wait();
            }
            let layout = datatype::layout(t)?;
            let len = layout.reduce_bytes(count)?;
            let mut combine = combiner(op, t)?;
            let is_root = c.rank() == at;
            // Only the root's receive buffer matters (and may take MPI_IN_PLACE).
            let send = if is_root { reduction_input(sendbuf, recvbuf, len)? } else { slice(sendbuf, len)?.to_vec() };
            let mut land = if is_root { Some(Landing::new(layout, count, recvbuf, len)?) } else { None };
            c.reduce_bytes(&send, land.as_mut().map(Landing::bytes), at, &mut combine)?;
            if let Some(land) = land {
                land.finish();
            }
            Ok(())
        })
    }
}

counted! {
    [PMPI_Allreduce; Count = c_int] [PMPI_Allreduce_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        let count = i64::from(count);
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            if let Some(done) = inter_blocking(&c, |c| iallreduce((sendbuf, recvbuf, count, t, op), c)) {
                return done;
            }
            if scheduled_reduction(&c, count, t)? {
                let (coll, done) = iallreduce((sendbuf, recvbuf, count, t, op), &c)?;
                return Scheduled { coll, done }.wait();
            }
            let layout = datatype::layout(t)?;
            let len = layout.reduce_bytes(count)?;
            let mut combine = combiner(op, t)?;
            let send = reduction_input(sendbuf, recvbuf, len)?;
            let mut land = Landing::new(layout, count, recvbuf, len)?;
            c.allreduce_bytes(&send, land.bytes(), &mut combine)?;
            land.finish();
            Ok(())
        })
    }
}

counted! {
    [PMPI_Reduce_local; Count = c_int] [PMPI_Reduce_local_c; Count = MPI_Count]
    fn(inbuf: *const c_void, inoutbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op) -> c_int {
        call_unlocked(FUNCTION, MPI_COMM_WORLD, || {
            let layout = datatype::layout(t)?;
            let len = layout.reduce_bytes(count)?;
            let mut combine = combiner(op, t)?;
            combine(slice(inbuf, len)?, slice_mut(inoutbuf, len)?);
            Ok(())
        })
    }
}

/// Reduce-scatter as a schedule: this rank's `part` (byte offset, length) of the reduction of
/// every rank's `total` bytes.
unsafe fn reduce_scatter(
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    total: usize,
    part: (usize, usize),
    (t, op): (MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res<Started> {
    no_in_place_on_inter(c, sendbuf)?;
    let combine = combiner(op, t)?;
    let send = reduction_source(sendbuf, recvbuf, total)?;
    let mut land = Landing::new(datatype::layout(t)?, instances(t, part.1)?, recvbuf, part.1)?;
    Ok((c.ireduce_scatter_raw(send, total, land.ptr(), part, combine)?, land.at_completion()))
}

/// How many instances of `t` a reduction span of `len` bytes holds.
fn instances(t: MPI_Datatype, len: usize) -> Res<i64> {
    let extent = datatype::layout(t)?.extent().max(1) as usize;
    Ok((len / extent) as i64)
}

/// This rank's part of MPI_Reduce_scatter_block's result, and the result's length.
fn block_part(c: &Communicator, recvcount: i64, t: MPI_Datatype) -> Res<((usize, usize), usize)> {
    let part = datatype::layout(t)?.reduce_bytes(recvcount)?;
    Ok(((c.rank() * part, part), part * c.size()))
}

/// This rank's part of MPI_Reduce_scatter's result, and the result's length.
unsafe fn varying_part(c: &Communicator, recvcounts: Ints, t: MPI_Datatype) -> Res<((usize, usize), usize)> {
    let layout = datatype::layout(t)?;
    layout.reduce_bytes(0)?;
    let parts = reduce_parts(c.size(), recvcounts, layout.extent() as usize)?;
    Ok((parts[c.rank()], parts.last().map_or(0, |&(d, l)| d + l)))
}

/// Reduce-scatter, blocking: the reduction's `total` bytes everywhere, this rank's `part` kept.
/// (A direct form: the schedule's allocations cost more than the whole operation here.)
unsafe fn reduce_scatter_now(
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    ((d, l), total): ((usize, usize), usize),
    (t, op): (MPI_Datatype, MPI_Op),
    c: &Communicator,
) -> Res {
    if let Some(done) = inter_blocking(c, |c| reduce_scatter((sendbuf, recvbuf), total, (d, l), (t, op), c)) {
        return done;
    }
    let mut combine = combiner(op, t)?;
    let send = reduction_input(sendbuf, recvbuf, total)?;
    let mut all = vec![0u8; total];
    c.allreduce_bytes(&send, &mut all, &mut combine)?;
    datatype::layout(t)?.copy_data(instances(t, l)?, &all[d..d + l], slice_mut(recvbuf, l)?);
    Ok(())
}

counted! {
    [PMPI_Reduce_scatter_block; Count = c_int] [PMPI_Reduce_scatter_block_c; Count = MPI_Count]
    fn(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, t: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            reduce_scatter_now((sendbuf, recvbuf), block_part(&c, recvcount.into(), t)?, (t, op), &c)
        })
    }
}

counted! {
    [PMPI_Ireduce_scatter_block; Count = c_int] [PMPI_Ireduce_scatter_block_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        scheduled(FUNCTION, comm, request, |c| {
            let (part, total) = block_part(c, recvcount.into(), t)?;
            reduce_scatter((sendbuf, recvbuf), total, part, (t, op), c)
        })
    }
}

counted! {
    [PMPI_Reduce_scatter; Count = c_int] [PMPI_Reduce_scatter_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        call_unlocked(FUNCTION, comm, || {
            let c = comm_ref(comm)?;
            reduce_scatter_now((sendbuf, recvbuf), varying_part(&c, Count::ints(recvcounts), t)?, (t, op), &c)
        })
    }
}

counted! {
    [PMPI_Ireduce_scatter; Count = c_int] [PMPI_Ireduce_scatter_c; Count = MPI_Count]
    fn(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        t: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) -> c_int {
        scheduled(FUNCTION, comm, request, |c| {
            let (part, total) = varying_part(c, Count::ints(recvcounts), t)?;
            reduce_scatter((sendbuf, recvbuf), total, part, (t, op), c)
        })
    }
}

/// Scan and exscan as a schedule.
unsafe fn scan(
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    c: &Communicator,
    exclusive: bool,
) -> Res<Started> {
    no_scan_on_inter(c)?;
    let layout = datatype::layout(t)?;
    let len = layout.reduce_bytes(count)?;
    let combine = combiner(op, t)?;
    let send = reduction_source(sendbuf, recvbuf, len)?;
    let mut land = Landing::new(layout, count, recvbuf, len)?;
    Ok((c.iscan_raw(send, land.ptr(), len, combine, exclusive)?, land.at_completion()))
}

/// Scan and exscan, blocking (a direct form, as for reduce-scatter).
unsafe fn scan_now(
    function: &'static str,
    (sendbuf, recvbuf, count, t, op): (*const c_void, *mut c_void, i64, MPI_Datatype, MPI_Op),
    comm: MPI_Comm,
    exclusive: bool,
) -> c_int {
    call_unlocked(function, comm, || {
        let c = comm_ref(comm)?;
        no_scan_on_inter(&c)?;
        let layout = datatype::layout(t)?;
        let len = layout.reduce_bytes(count)?;
        let mut combine = combiner(op, t)?;
        let send = reduction_input(sendbuf, recvbuf, len)?;
        let mut land = Landing::new(layout, count, recvbuf, len)?;
        c.scan_bytes(&send, land.bytes(), &mut combine, exclusive)?;
        land.finish();
        Ok(())
    })
}

/// `$name(sendbuf, recvbuf, count, t, op, comm)`, its I-form and their large-count twins, for
/// scan (`false`) or exscan (`true`).
macro_rules! scans {
    ([$name:ident, $iname:ident, $cname:ident, $icname:ident], $exclusive:expr) => {
        counted! {
            [$name; Count = c_int] [$cname; Count = MPI_Count]
            fn(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, t: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
                scan_now(FUNCTION, (sendbuf, recvbuf, count.into(), t, op), comm, $exclusive)
            }
        }

        counted! {
            [$iname; Count = c_int] [$icname; Count = MPI_Count]
            fn(
                sendbuf: *const c_void,
                recvbuf: *mut c_void,
                count: Count,
                t: MPI_Datatype,
                op: MPI_Op,
                comm: MPI_Comm,
                request: *mut MPI_Request,
            ) -> c_int {
                scheduled(FUNCTION, comm, request, |c| scan((sendbuf, recvbuf, count.into(), t, op), c, $exclusive))
            }
        }
    };
}

scans!([PMPI_Scan, PMPI_Iscan, PMPI_Scan_c, PMPI_Iscan_c], false);
scans!([PMPI_Exscan, PMPI_Iexscan, PMPI_Exscan_c, PMPI_Iexscan_c], true);

/// Where a rank's contribution lies: its send view, or in place its part of the receive
/// buffer (`part` of `recv`).
unsafe fn contribution(send: &Option<View>, recv: &Parted, part: usize) -> (*const u8, usize) {
    match send {
        Some(v) => (v.ptr(), v.len()),
        None => {
            let (d, l) = recv.parts()[part];
            (recv.ptr().add(d), l)
        }
    }
}

/// Gather with per-rank counts and displacements (in elements of `recvtype`) at the root.
unsafe fn gatherv(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    recvbuf: *mut c_void,
    shape: impl FnOnce(&Communicator) -> Res<Shape>,
    recvtype: MPI_Datatype,
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    let send = || view(&datatype::layout(sendtype)?, sendbuf, sendcount, Dir::Read);
    match root {
        InterRoot::Here => {}
        InterRoot::Elsewhere => return Ok((c.inter_idle()?, None)),
        InterRoot::Remote(_) => {
            no_in_place_on_inter(c, sendbuf)?;
            let send = send()?;
            let coll = c.igatherv_at(send.ptr(), send.len(), None, root)?;
            return Ok((coll, Some(Box::new(move || drop(send)))));
        }
    }
    not_in_place(recvbuf, "recvbuf")?;
    // An intercommunicator's root sends nothing (its send buffer is not read).
    let in_place = in_place(sendbuf) && !c.is_inter();
    let dir = if in_place { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, shape(c)?.parts(), dir)?;
    // In place, the root's part is already where it goes.
    let send = if in_place || c.is_inter() { None } else { Some(send()?) };
    let (from, len) = if c.is_inter() { (no_data() as *const u8, 0) } else { contribution(&send, &recv, c.rank()) };
    let coll = c.igatherv_at(from, len, Some((recv.ptr(), recv.len(), recv.parts())), root)?;
    Ok((coll, Some(Box::new(move || finish_parted(recv, send)))))
}

/// Ends the use of a parted receive buffer (unpacking it if staged) and of a send view.
fn finish_parted(recv: Parted, send: Option<View>) {
    drop(send);
    // SAFETY: the collective has ended; MPI keeps the user's buffer valid until then.
    unsafe { recv.finish() }
}

/// Ends the use of a receive view: what it staged is unpacked.
fn finish_view(v: View) -> Box<dyn FnOnce()> {
    Box::new(move || {
        let len = v.len();
        // SAFETY: as in `finish_parted`.
        unsafe { v.finish(len) }
    })
}

collective!([PMPI_Gather, PMPI_Igather, PMPI_Gather_c, PMPI_Igather_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Ok(Shape::Uniform(c.peers(), recvcount.into()));
    gatherv((sendbuf, sendcount.into(), sendtype), recvbuf, shape, recvtype, root, c)
});

collective!([PMPI_Gatherv, PMPI_Igatherv, PMPI_Gatherv_c, PMPI_Igatherv_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Shape::varying(c.peers(), recvcounts, displs);
    gatherv((sendbuf, sendcount.into(), sendtype), recvbuf, shape, recvtype, root, c)
});

/// Scatter with per-rank counts and displacements (in elements of `sendtype`) at the root.
unsafe fn scatterv(
    sendbuf: *const c_void,
    shape: impl FnOnce(&Communicator) -> Res<Shape>,
    sendtype: MPI_Datatype,
    (recvbuf, recvcount, recvtype): (*mut c_void, i64, MPI_Datatype),
    root: c_int,
    c: &Communicator,
) -> Res<Started> {
    let root = check_root(c, root)?;
    let recv = || {
        not_in_place(recvbuf, "recvbuf (in place only at the root)")?;
        view(&datatype::layout(recvtype)?, recvbuf, recvcount, Dir::Write)
    };
    match root {
        InterRoot::Here => {}
        InterRoot::Elsewhere => return Ok((c.inter_idle()?, None)),
        InterRoot::Remote(_) => {
            let v = recv()?;
            let coll = c.iscatterv_at(None, v.ptr(), v.len(), root)?;
            return Ok((coll, Some(finish_view(v))));
        }
    }
    not_in_place(sendbuf, "sendbuf")?;
    let send = parted(&datatype::layout(sendtype)?, sendbuf, shape(c)?.parts(), Dir::Read)?;
    let whole = Some((send.ptr() as *const u8, send.len(), send.parts()));
    // In place (or on an intercommunicator, where the root receives nothing), the root's own
    // part stays where it is.
    if in_place(recvbuf) || c.is_inter() {
        let coll = c.iscatterv_at(whole, no_data(), 0, root)?;
        return Ok((coll, Some(Box::new(move || drop(send)))));
    }
    let v = recv()?;
    let coll = c.iscatterv_at(whole, v.ptr(), v.len(), root)?;
    let unpack = finish_view(v);
    Ok((
        coll,
        Some(Box::new(move || {
            drop(send);
            unpack()
        })),
    ))
}

collective!([PMPI_Scatter, PMPI_Iscatter, PMPI_Scatter_c, PMPI_Iscatter_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Ok(Shape::Uniform(c.peers(), sendcount.into()));
    scatterv(sendbuf, shape, sendtype, (recvbuf, recvcount.into(), recvtype), root, c)
});

collective!([PMPI_Scatterv, PMPI_Iscatterv, PMPI_Scatterv_c, PMPI_Iscatterv_c], (
    sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int
), |c| {
    let shape = |c: &Communicator| Shape::varying(c.peers(), sendcounts, displs);
    scatterv(sendbuf, shape, sendtype, (recvbuf, recvcount.into(), recvtype), root, c)
});

unsafe fn allgatherv(
    (sendbuf, sendcount, sendtype): (*const c_void, i64, MPI_Datatype),
    recvbuf: *mut c_void,
    shape: Shape,
    recvtype: MPI_Datatype,
    c: &Communicator,
) -> Res<Started> {
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let dir = if in_place(sendbuf) { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, shape.parts(), dir)?;
    let send =
        if in_place(sendbuf) { None } else { Some(view(&datatype::layout(sendtype)?, sendbuf, sendcount, Dir::Read)?) };
    let (from, len) = contribution(&send, &recv, c.rank());
    let coll = c.iallgatherv_raw(from, len, recv.ptr(), recv.len(), recv.parts())?;
    Ok((coll, Some(Box::new(move || finish_parted(recv, send)))))
}

collective!([PMPI_Allgather, PMPI_Iallgather, PMPI_Allgather_c, PMPI_Iallgather_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c| {
    allgatherv((sendbuf, sendcount.into(), sendtype), recvbuf, Shape::Uniform(c.peers(), recvcount.into()), recvtype, c)
});

collective!([PMPI_Allgatherv, PMPI_Iallgatherv, PMPI_Allgatherv_c, PMPI_Iallgatherv_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype
), |c| {
    allgatherv((sendbuf, sendcount.into(), sendtype), recvbuf, Shape::varying(c.peers(), recvcounts, displs)?, recvtype, c)
});

unsafe fn alltoallv(
    (sendbuf, send_shape, sendtype): (*const c_void, Shape, MPI_Datatype),
    (recvbuf, recv_shape, recvtype): (*mut c_void, Shape, MPI_Datatype),
    c: &Communicator,
) -> Res<Started> {
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let dir = if in_place(sendbuf) { Dir::Both } else { Dir::Write };
    let recv = parted(&datatype::layout(recvtype)?, recvbuf, recv_shape.parts(), dir)?;
    let into = (recv.ptr(), recv.len(), recv.parts());
    if in_place(sendbuf) {
        // A copy to send from: the receives overwrite the buffer.
        let send = recv.bytes().to_vec();
        let coll = c.ialltoallv_raw((send.as_ptr(), send.len(), recv.parts()), into)?;
        return Ok((
            coll,
            Some(Box::new(move || {
                drop(send);
                finish_parted(recv, None)
            })),
        ));
    }
    let send = parted(&datatype::layout(sendtype)?, sendbuf, send_shape.parts(), Dir::Read)?;
    let coll = c.ialltoallv_raw((send.ptr(), send.len(), send.parts()), into)?;
    Ok((
        coll,
        Some(Box::new(move || {
            drop(send);
            finish_parted(recv, None)
        })),
    ))
}

/// Alltoallv's counts and displacements: the send side's (none in place), the receive side's.
unsafe fn alltoall_shapes(
    c: &Communicator,
    sendbuf: *const c_void,
    send: impl FnOnce(usize) -> Res<Shape>,
    recv: impl FnOnce(usize) -> Res<Shape>,
) -> Res<(Shape, Shape)> {
    let n = c.peers();
    let send = if in_place(sendbuf) { Shape::Uniform(0, 0) } else { send(n)? };
    Ok((send, recv(n)?))
}

collective!([PMPI_Alltoall, PMPI_Ialltoall, PMPI_Alltoall_c, PMPI_Ialltoall_c], (
    sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype
), |c| {
    let n = c.peers();
    let (send, recv) = (Shape::Uniform(n, sendcount.into()), Shape::Uniform(n, recvcount.into()));
    alltoallv((sendbuf, send, sendtype), (recvbuf, recv, recvtype), c)
});

collective!([PMPI_Alltoallv, PMPI_Ialltoallv, PMPI_Alltoallv_c, PMPI_Ialltoallv_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype
), |c| {
    let (send, recv) =
        alltoall_shapes(c, sendbuf, |n| Shape::varying(n, sendcounts, sdispls), |n| Shape::varying(n, recvcounts, rdispls))?;
    alltoallv((sendbuf, send, sendtype), (recvbuf, recv, recvtype), c)
});

/// One rank's part in Alltoallw: count, byte displacement, type.
type WPart = (i64, i64, MPI_Datatype);

/// Parts packed one after another, and their byte layout.
type Packed = (Vec<u8>, Vec<(usize, usize)>);

/// Alltoallw's per-rank parts `(count, byte displacement, type)` of a buffer, packed one
/// after another: the bytes and their byte layout.
unsafe fn pack_w(buf: *const c_void, parts: &[WPart]) -> Res<Packed> {
    let (mut bytes, mut layout) = (Vec::new(), Vec::with_capacity(parts.len()));
    for &(count, disp, t) in parts {
        let v =
            view(&datatype::layout(t)?, (buf as *const u8).wrapping_offset(disp as isize).cast(), count, Dir::Read)?;
        layout.push((bytes.len(), v.len()));
        bytes.extend_from_slice(v.bytes());
    }
    Ok((bytes, layout))
}

/// `(count, byte displacement, type)` per rank from Alltoallw's C arrays.
unsafe fn w_parts(n: usize, counts: Ints, displs: Ints, types: *const MPI_Datatype) -> Res<Vec<WPart>> {
    if n > 0 && (counts.is_null() || displs.is_null() || types.is_null()) {
        return Err(err(MPI_ERR_ARG, "NULL counts, displacements or types"));
    }
    Ok((0..n).map(|r| (counts.at(r), displs.at(r), *types.add(r))).collect())
}

/// Alltoallw's C arrays: counts, displacements (in bytes) and types, per rank.
type WArrays = (Ints, Ints, *const MPI_Datatype);

/// Alltoallw as a schedule: each side packed into one buffer, part after part, and the
/// received parts unpacked into their places when it ends.
unsafe fn alltoallw(
    (sendbuf, send): (*const c_void, WArrays),
    (recvbuf, (counts, displs, types)): (*mut c_void, WArrays),
    c: &Communicator,
) -> Res<Started> {
    let n = c.peers();
    not_in_place(recvbuf, "recvbuf")?;
    no_in_place_on_inter(c, sendbuf)?;
    let recv_parts = w_parts(n, counts, displs, types)?;
    let (send, send_layout) = if in_place(sendbuf) {
        pack_w(recvbuf, &recv_parts)?
    } else {
        pack_w(sendbuf, &w_parts(n, send.0, send.1, send.2)?)?
    };
    // Where each received part goes, made now so that a bad part is an error of the call.
    let mut places = Vec::with_capacity(n);
    let mut recv_layout = Vec::with_capacity(n);
    let mut total = 0;
    for &(count, disp, t) in &recv_parts {
        let dst = (recvbuf as *mut u8).wrapping_offset(disp as isize);
        let v = view(&datatype::layout(t)?, dst.cast(), count, Dir::Write)?;
        recv_layout.push((total, v.len()));
        total += v.len();
        places.push(v);
    }
    let mut recv = vec![0u8; total];
    let coll = c.ialltoallv_raw((send.as_ptr(), send.len(), &send_layout), (recv.as_mut_ptr(), total, &recv_layout))?;
    let done = move || {
        drop(send);
        for (mut v, &(at, len)) in places.into_iter().zip(&recv_layout) {
            v.bytes_mut().copy_from_slice(&recv[at..at + len]);
            // SAFETY: the collective has ended; MPI keeps the user's buffer valid until then.
            unsafe { v.finish(len) };
        }
    };
    Ok((coll, Some(Box::new(done))))
}

collective!([PMPI_Alltoallw, PMPI_Ialltoallw, PMPI_Alltoallw_c, PMPI_Ialltoallw_c], (
    sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype
), |c| {
    let send = (sendbuf, (Count::ints(sendcounts), Disp::ints(sdispls), sendtypes));
    alltoallw(send, (recvbuf, (Count::ints(recvcounts), Disp::ints(rdispls), recvtypes)), c)
});

//! Datatypes: predefined and derived, and how data described by them moves.
//!
//! * `typemap`: the pure representation (a shape: a small tree of regular repetitions, and the
//!   bounds) and every constructor's index arithmetic, unit-tested on its own; `array`: the
//!   subarray and darray constructors over it;
//! * `pack`: user buffer <-> packed bytes (walking the shape), and external32;
//! * `create`: the `MPI_Type_*` constructors (int and large-count forms); `contents`: what
//!   `MPI_Type_get_envelope`/`MPI_Type_get_contents` (and `_c`) report about them;
//! * `query`: sizes, extents, commit/free, counts and elements, `MPI_Pack` and friends;
//! * `f90`: the predefined parameterized Fortran 90 types (`MPI_Type_create_f90_*`);
//! * `names`: MPI_Type_set_name / MPI_Type_get_name, and MPICH's names of predefined types;
//! * `table`: the derived types by handle, their references and destruction.
//!
//! A predefined type's size is in its handle (bits 15..8, see `abi`), so the common case never
//! touches the table; the five pair types (`MPI_FLOAT_INT` ..) are small structs built once.
//! Derived types live in [`Types`], indexed by handle from `abi::FIRST_USER_DATATYPE`.
//!
//! Point-to-point and collectives see data through a [`View`]: the user's memory itself when
//! the data is one contiguous block (no copy, no allocation), else a packed staging buffer,
//! filled before a send and unpacked into the user's memory when a receive completes.

mod array;
mod contents;
mod create;
mod f90;
mod names;
mod pack;
mod query;
mod table;
mod typemap;

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use crate::abi::*;
use crate::error::{err, Res};
use crate::state::Mpi;
pub(crate) use create::PMPI_Type_dup;
pub(crate) use f90::predefined_base;
pub(crate) use query::PMPI_Type_free;
use table::TypeHold;
pub(crate) use table::{Envelope, Types};
pub(crate) use typemap::Basics;
use typemap::TypeMap;

/// A datatype resolved for moving data: a predefined contiguous type needs only its size.
#[derive(Clone)]
pub(crate) enum Layout {
    Dense(usize),
    Map(Arc<TypeMap>),
}

/// Alignment of a predefined type on x86-64: complex numbers and the `MPI_2*` types align
/// like their halves.
fn align_of(t: MPI_Datatype, size: usize) -> usize {
    match pack::external32(t, size) {
        (_, unit) if unit > 1 && unit < size && t != MPI_LONG && t != MPI_UNSIGNED_LONG => unit,
        _ => size.max(1),
    }
}

/// The type map of a predefined datatype, or None if `t` is not one.
fn predefined_map(t: MPI_Datatype) -> Option<TypeMap> {
    if is_pair_type(t) {
        return Some((*pair_maps()[(t as u32 - MPI_FLOAT_INT as u32) as usize]).clone());
    }
    if t == MPI_DATATYPE_NULL {
        return None;
    }
    match t {
        MPI_LB => Some(TypeMap::marker(false)),
        MPI_UB => Some(TypeMap::marker(true)),
        _ => builtin_datatype_size(t).map(|size| TypeMap::basic(t, size, align_of(t, size))),
    }
}

/// The pair types as MPICH builds them: `struct { T value; int index; }`.
fn pair_maps() -> &'static [Arc<TypeMap>; 5] {
    static MAPS: OnceLock<[Arc<TypeMap>; 5]> = OnceLock::new();
    MAPS.get_or_init(|| {
        let int = Arc::new(TypeMap::basic(MPI_INT, 4, 4));
        [(MPI_FLOAT, 4), (MPI_DOUBLE, 8), (MPI_LONG, 8), (MPI_SHORT, 2), (MPI_LONG_DOUBLE, 16)].map(|(t, size)| {
            let value = Arc::new(TypeMap::basic(t, size, size));
            Arc::new(typemap::structure(&[(1, 0, &value), (1, size.max(4) as i64, &int)]).expect("small"))
        })
    })
}

fn bad_type(t: MPI_Datatype) -> crate::error::MpiError {
    if t == MPI_DATATYPE_NULL {
        err(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a datatype")
    } else {
        err(MPI_ERR_TYPE, format!("invalid datatype {}", crate::error::handle_name(t)))
    }
}

/// The type map of any valid datatype (committed or not).
pub(crate) fn map_of(m: &Mpi, t: MPI_Datatype) -> Res<Arc<TypeMap>> {
    match m.types.get(t) {
        Some(e) => Ok(e.map.clone()),
        None => predefined_map(t).map(Arc::new).ok_or_else(|| bad_type(t)),
    }
}

/// The size of a predefined datatype whose data is its bytes, one after the other (no pair
/// type, not MPI_DATATYPE_NULL): known from the handle alone, without the state.
#[inline]
pub(crate) fn dense_size(t: MPI_Datatype) -> Option<usize> {
    if is_pair_type(t) || t == MPI_DATATYPE_NULL {
        return None;
    }
    builtin_datatype_size(t)
}

/// The layout of a datatype used to move data: it must be committed.
#[inline]
pub(crate) fn layout_in(m: &Mpi, t: MPI_Datatype) -> Res<Layout> {
    if let Some(size) = dense_size(t) {
        return Ok(Layout::Dense(size));
    }
    if is_pair_type(t) {
        return Ok(Layout::Map(pair_maps()[(t as u32 - MPI_FLOAT_INT as u32) as usize].clone()));
    }
    match m.types.get(t) {
        Some(e) if e.committed => Ok(Layout::Map(e.map.clone())),
        Some(_) => Err(err(MPI_ERR_TYPE, format!("datatype {t:#x} is not committed (MPI_Type_commit)"))),
        None => Err(bad_type(t)),
    }
}

/// [`layout_in`] for callers that do not hold the state: predefined types need no lookup.
pub(crate) fn layout(t: MPI_Datatype) -> Res<Layout> {
    if !is_pair_type(t) && t != MPI_DATATYPE_NULL {
        if let Some(size) = builtin_datatype_size(t) {
            return Ok(Layout::Dense(size));
        }
    }
    crate::state::with(|m| layout_in(m, t)).expect("MPI is running")
}

impl Layout {
    pub fn size(&self) -> usize {
        match self {
            Layout::Dense(s) => *s,
            Layout::Map(m) => m.size,
        }
    }

    pub fn extent(&self) -> i64 {
        match self {
            Layout::Dense(s) => *s as i64,
            Layout::Map(m) => m.extent(),
        }
    }

    /// Calls `f(offset, len)` for each piece of memory of `count` instances, in packed order,
    /// until `f` returns false (file views list their filetype's data blocks with it).
    pub fn for_each_piece(&self, count: usize, mut f: impl FnMut(i64, usize) -> bool) {
        match self {
            Layout::Dense(s) => {
                if count > 0 && *s > 0 {
                    f(0, s * count);
                }
            }
            Layout::Map(m) => pack::for_each_piece(m, count, f),
        }
    }

    fn true_lb(&self) -> i64 {
        match self {
            Layout::Dense(..) => 0,
            Layout::Map(m) => m.true_lb,
        }
    }

    /// Whether `buf` is a missing buffer for `len` bytes of this layout: NULL where data
    /// start at offset 0. NULL is MPI_BOTTOM, a buffer, for a type of absolute addresses
    /// (MPI_Get_address), as MPICH allows: ARMCI-MPI's direct I/O vectors move separate pieces
    /// so.
    pub(crate) fn missing(&self, buf: *const c_void, len: usize) -> bool {
        buf.is_null() && len > 0 && self.true_lb() == 0
    }

    /// Byte offset of `count` instances when they are one block of memory.
    pub(crate) fn contiguous(&self, count: usize) -> Option<i64> {
        match self {
            Layout::Dense(..) => Some(0),
            Layout::Map(m) => m.contiguous(count),
        }
    }

    /// Packed bytes of `count` instances, the count checked.
    #[inline]
    pub fn bytes(&self, count: impl Into<i64>) -> Res<usize> {
        let count = count.into();
        if count < 0 {
            return Err(negative_count(count));
        }
        let bytes = count as u128 * self.size() as u128;
        if bytes > isize::MAX as u128 {
            return Err(too_big(count));
        }
        Ok(bytes as usize)
    }

    /// Whether the `reduce_bytes` span of `count` instances has bytes that are not data
    /// (holes): a reduction must then write only the data into the program's buffer.
    pub fn has_holes(&self, count: impl Into<i64>) -> bool {
        let count = count.into();
        match self {
            Layout::Dense(..) => false,
            Layout::Map(m) => count > 0 && (m.contiguous(1) != Some(0) || m.size as i64 != m.extent()),
        }
    }

    /// Copies the data bytes of `count` instances from `src` into `dst` (reduction buffers:
    /// `reduce_bytes` long, lower bound 0), leaving `dst`'s holes as they are.
    pub fn copy_data(&self, count: impl Into<i64>, src: &[u8], dst: &mut [u8]) {
        let count = count.into();
        match self {
            Layout::Dense(..) => dst.copy_from_slice(src),
            Layout::Map(m) => pack::for_each_piece(m, count.max(0) as usize, |off, len| {
                let at = off as usize;
                dst[at..at + len].copy_from_slice(&src[at..at + len]);
                true
            }),
        }
    }

    /// Bytes `count` instances span in a reduction buffer, where data stays in the type's own
    /// layout (the operator reads elements `extent` apart).
    pub fn reduce_bytes(&self, count: impl Into<i64>) -> Res<usize> {
        let count = count.into();
        self.bytes(count)?;
        if let Layout::Map(m) = self {
            if m.lb != 0 || m.true_lb < 0 {
                return Err(err(MPI_ERR_TYPE, format!("reductions need a lower bound of 0, not {}", m.lb)));
            }
        }
        (count as usize).checked_mul(self.extent() as usize).ok_or_else(|| too_big(count))
    }
}

#[cold]
fn negative_count(count: i64) -> crate::error::MpiError {
    err(MPI_ERR_COUNT, format!("negative count {count}"))
}

#[cold]
fn too_big(count: i64) -> crate::error::MpiError {
    err(MPI_ERR_COUNT, format!("count {count}: the data would be more bytes than memory holds"))
}

/// Bytes from one element to the next (the extent) of `t`, as reduction operators see them.
pub(crate) fn extent_in(m: &Mpi, t: MPI_Datatype) -> Res<usize> {
    Ok(layout_in(m, t)?.extent().max(0) as usize)
}

/// Bytes of `count` instances of `t` in external32 (MPI-IO's "external32" views).
pub(crate) fn external32_bytes(m: &Mpi, t: MPI_Datatype, count: i64) -> Res<usize> {
    if count < 0 {
        return Err(negative_count(count));
    }
    let map = map_of(m, t)?;
    pack::external32_size(&map, count as usize)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("count {count}: more external32 bytes than memory holds")))
}

/// Packed native bytes of `count` instances of `t` to external32 (`ext` holds
/// [`external32_bytes`]).
pub(crate) fn to_external32(t: MPI_Datatype, count: i64, native: &[u8], ext: &mut [u8]) -> Res {
    let map = crate::state::with(|m| map_of(m, t)).expect("MPI is running")?;
    pack::native_to_external(&map, count.max(0) as usize, native, ext);
    Ok(())
}

/// The inverse of [`to_external32`].
pub(crate) fn from_external32(t: MPI_Datatype, count: i64, ext: &[u8], native: &mut [u8]) -> Res {
    let map = crate::state::with(|m| map_of(m, t)).expect("MPI is running")?;
    pack::external_to_native(&map, count.max(0) as usize, ext, native);
    Ok(())
}

/// How a [`View`] is used: read (packed before a send), written (unpacked after a receive),
/// or both.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
    Both,
}

/// A packed copy of non-contiguous user data, unpacked into the user's memory on completion
/// of a receive. Boxed so that the staging bytes stay put while the engine uses them.
pub(crate) struct Staging {
    buf: Vec<u8>,
    base: *mut u8,
    count: usize,
    map: Arc<TypeMap>,
    unpack: bool,
    /// The operation's reference on its derived datatype ([`held`]).
    hold: Option<TypeHold>,
}

impl Staging {
    /// Completes the operation: a receive's first `bytes` bytes go into the user's buffer.
    ///
    /// # Safety
    /// The user buffer given when the view was made must still be valid.
    pub unsafe fn complete(self, bytes: usize) {
        if self.unpack {
            pack::unpack(&self.map, &self.buf[..bytes.min(self.buf.len())], self.base, self.count);
        }
    }
}

/// What a nonblocking operation on `t` keeps until it ends: its staging, and a reference on
/// `t` if it is a derived type, as MPICH's requests hold one, so that a type the program frees
/// meanwhile keeps its attributes until the call that ends the operation (whose
/// [`crate::attr::reap`] then runs their delete callbacks). Predefined types add nothing;
/// blocking calls need no reference (the type cannot be freed while they run).
pub(crate) fn held(m: &mut Mpi, t: MPI_Datatype, staging: Option<Box<Staging>>) -> Option<Box<Staging>> {
    let Some(map) = m.types.get(t).map(|e| e.map.clone()) else { return staging };
    let hold = Some(m.types.hold(t));
    match staging {
        Some(mut s) => {
            s.hold = hold;
            Some(s)
        }
        None => {
            Some(Box::new(Staging { buf: Vec::new(), base: std::ptr::null_mut(), count: 0, map, unpack: false, hold }))
        }
    }
}

/// Data of `count` instances of a layout at a user buffer, as one run of bytes.
pub(crate) struct View {
    ptr: *mut u8,
    len: usize,
    staging: Option<Box<Staging>>,
}

/// Smallest average block (bytes) for which a non-contiguous receive goes straight into the
/// user's pieces, and a send straight out of them: below it, the list of pieces would cost more
/// than the staging copy saves.
const SCATTER_MIN_BLOCK: usize = 64;

/// The pieces of `count` instances of a non-contiguous layout at `buf`, in packed order, when
/// receiving straight into them pays (see [`SCATTER_MIN_BLOCK`]); `None` to stage instead.
///
/// # Safety
/// `buf` must hold `count` instances of the layout, as MPI requires of the program.
pub(crate) unsafe fn scatter_blocks(
    l: &Layout,
    buf: *mut c_void,
    count: impl Into<i64>,
) -> Option<Box<[(*mut u8, usize)]>> {
    let Layout::Map(map) = l else { return None };
    let count = usize::try_from(count.into()).ok()?;
    if map.contiguous(count).is_some() || map.size == 0 || count == 0 {
        return None;
    }
    // The engine counts a message's blocks in 32 bits; more is staged.
    let pieces = map.pieces().checked_mul(count).filter(|&p| u32::try_from(p).is_ok())?;
    if map.size * count / pieces < SCATTER_MIN_BLOCK {
        return None;
    }
    let base = buf as *mut u8;
    let mut blocks: Vec<(*mut u8, usize)> = Vec::with_capacity(pieces);
    pack::for_each_piece(map, count, |off, len| {
        let at = base.wrapping_offset(off as isize);
        match blocks.last_mut() {
            Some(last) if last.0.wrapping_add(last.1) == at => last.1 += len,
            _ => blocks.push((at, len)),
        }
        true
    });
    Some(blocks.into_boxed_slice())
}

/// Pieces of user memory, in the order of the packed data, as the engine takes them.
pub(crate) type Blocks = Box<[billboard::engine::scatter::Block]>;

/// The pieces of `count` instances of a non-contiguous layout at `buf` to send without packing
/// them, by the rule of [`scatter_blocks`]; `None` to pack instead. Checks the count and the
/// buffer as [`view`] does.
///
/// # Safety
/// `buf` must hold `count` instances of the layout, as MPI requires of the program.
pub(crate) unsafe fn gather_blocks(l: &Layout, buf: *const c_void, count: impl Into<i64>) -> Res<Option<Blocks>> {
    let count = count.into();
    let len = l.bytes(count)?;
    if l.missing(buf, len) {
        return Err(null_buffer(count, len));
    }
    Ok(scatter_blocks(l, buf as *mut c_void, count))
}

/// A view of `count` instances of `l` at `buf` (`MPI_BOTTOM` = NULL with absolute addresses).
///
/// # Safety
/// `buf` must hold `count` instances of the layout, as MPI requires of the program.
#[inline(always)]
pub(crate) unsafe fn view(l: &Layout, buf: *const c_void, count: impl Into<i64>, dir: Dir) -> Res<View> {
    let count = count.into();
    let len = l.bytes(count)?;
    let base = buf as *mut u8;
    if l.missing(buf, len) {
        return Err(null_buffer(count, len));
    }
    if let Some(off) = l.contiguous(count as usize) {
        let ptr = base.wrapping_offset(off as isize);
        let ptr = if ptr.is_null() { std::ptr::NonNull::dangling().as_ptr() } else { ptr };
        return Ok(View { ptr, len, staging: None });
    }
    Ok(staged_view(l, base, count as usize, len, dir))
}

#[cold]
fn null_buffer(count: i64, len: usize) -> crate::error::MpiError {
    err(MPI_ERR_BUFFER, format!("NULL buffer for {count} elements ({len} bytes)"))
}

/// The slow path of [`view`]: a packed copy of non-contiguous data.
#[inline(never)]
unsafe fn staged_view(l: &Layout, base: *mut u8, count: usize, len: usize, dir: Dir) -> View {
    let Layout::Map(map) = l else { unreachable!("dense layouts are contiguous") };
    // Zeroed memory comes from the kernel untouched: a receive into a huge type of which the
    // message fills little costs the pages it fills.
    let mut staged = vec![0u8; len];
    if dir != Dir::Write {
        // SAFETY: the caller of `view` vouches for the user buffer.
        pack::pack(map, base, count, &mut staged);
    }
    let mut staging =
        Box::new(Staging { buf: staged, base, count, map: map.clone(), unpack: dir != Dir::Read, hold: None });
    View { ptr: staging.buf.as_mut_ptr(), len, staging: Some(staging) }
}

impl View {
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is the user's buffer or the staging one, `len` bytes either way.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// What must outlive the operation: the staging buffer, if any.
    pub fn into_staging(self) -> Option<Box<Staging>> {
        self.staging
    }

    /// Ends the use of the view: `bytes` bytes received are unpacked if staged.
    ///
    /// # Safety
    /// As for [`Staging::complete`].
    pub unsafe fn finish(self, bytes: usize) {
        if let Some(s) = self.staging {
            s.complete(bytes);
        }
    }
}

/// A buffer holding one part per rank (the v-collectives): part r is `counts[r]` instances at
/// `displs[r]` extents from `buf`. Dense layouts are used in place, others staged packed.
pub(crate) struct Parted {
    view: View,
    parts: Vec<(usize, usize)>,
    /// (byte displacement in the user buffer, count) per part, to pack and unpack staged data.
    places: Vec<(i64, usize)>,
}

/// # Safety
/// `buf` must hold the parts, as MPI requires of the program.
pub(crate) unsafe fn parted(
    l: &Layout,
    buf: *const c_void,
    shape: impl ExactSizeIterator<Item = (i64, i64)> + Clone,
    dir: Dir,
) -> Res<Parted> {
    let (size, extent) = (l.size(), l.extent());
    if let Some((r, (c, _))) = shape.clone().enumerate().find(|&(_, (c, _))| c < 0) {
        return Err(err(MPI_ERR_COUNT, format!("rank {r}: negative count {c}")));
    }
    let places = shape.map(|(c, d)| (d.wrapping_mul(extent), c as usize));
    if let Layout::Dense(..) = l {
        // Parts may lie before `buf` (negative displacements): the engine's byte layout starts
        // at the lowest one.
        let low = places.clone().filter(|p| p.1 > 0).map(|p| p.0).min().unwrap_or(0).min(0);
        // Empty parts are put at 0: they may name any displacement.
        let parts: Vec<_> = places.map(|(d, c)| if c == 0 { (0, 0) } else { ((d - low) as usize, c * size) }).collect();
        let span = parts.iter().map(|&(d, l)| d + l).max().unwrap_or(0);
        let base = (buf as *mut u8).wrapping_offset(low as isize);
        if buf.is_null() && span > 0 {
            return Err(err(MPI_ERR_BUFFER, format!("NULL buffer for {span} bytes")));
        }
        let ptr = if base.is_null() { std::ptr::NonNull::dangling().as_ptr() } else { base };
        // Dense parts are used where they lie: nothing to unpack, so no places.
        return Ok(Parted { view: View { ptr, len: span, staging: None }, parts, places: Vec::new() });
    }
    let places: Vec<_> = places.collect();
    let Layout::Map(map) = l else { unreachable!() };
    let mut parts = Vec::with_capacity(places.len());
    let mut total: usize = 0;
    for &(_, c) in &places {
        let len = l.bytes(c as i64)?;
        parts.push((total, len));
        total = total.checked_add(len).ok_or_else(|| too_big(c as i64))?;
    }
    let mut staged = vec![0u8; total];
    let base = buf as *mut u8;
    if dir != Dir::Write {
        for (&(d, c), &(at, len)) in places.iter().zip(&parts) {
            // SAFETY: the caller vouches for the user buffer.
            pack::pack(map, base.wrapping_offset(d as isize), c, &mut staged[at..at + len]);
        }
    }
    let mut staging =
        Box::new(Staging { buf: staged, base, count: 0, map: map.clone(), unpack: dir != Dir::Read, hold: None });
    let view = View { ptr: staging.buf.as_mut_ptr(), len: total, staging: Some(staging) };
    Ok(Parted { view, parts, places })
}

impl Parted {
    pub fn ptr(&self) -> *mut u8 {
        self.view.ptr()
    }

    pub fn len(&self) -> usize {
        self.view.len()
    }

    pub fn parts(&self) -> &[(usize, usize)] {
        &self.parts
    }

    pub fn bytes(&self) -> &[u8] {
        self.view.bytes()
    }

    #[cfg(test)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.view.bytes_mut()
    }

    /// Unpacks every part into the user's buffer if staged for writing.
    ///
    /// # Safety
    /// The user buffer must still be valid.
    pub unsafe fn finish(self) {
        let Some(s) = self.view.staging else { return };
        if !s.unpack {
            return;
        }
        for (&(d, c), &(at, len)) in self.places.iter().zip(&self.parts) {
            pack::unpack(&s.map, &s.buf[at..at + len], s.base.wrapping_offset(d as isize), c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Arc<TypeMap> {
        Arc::new(TypeMap::basic(MPI_INT, 4, 4))
    }

    fn ints(bytes: &[u8]) -> Vec<i32> {
        bytes.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn contiguous_views_are_the_user_memory() {
        let data = [1i32, 2, 3, 4];
        let v = unsafe { view(&Layout::Dense(4), data.as_ptr().cast(), 4, Dir::Read) }.unwrap();
        assert_eq!(v.ptr() as *const i32, data.as_ptr());
        assert!(v.into_staging().is_none(), "no copy for contiguous data");
        let null = unsafe { view(&Layout::Dense(4), std::ptr::null(), 1, Dir::Read) };
        assert_eq!(null.err().map(|e| e.class), Some(MPI_ERR_BUFFER));
    }

    #[test]
    fn strided_views_pack_and_unpack() {
        let vector = Layout::Map(Arc::new(typemap::hvector(3, 1, 8, &int()).unwrap()));
        let src = [0i32, 1, 2, 3, 4];
        let v = unsafe { view(&vector, src.as_ptr().cast(), 1, Dir::Read) }.unwrap();
        assert_eq!(ints(v.bytes()), [0, 2, 4]);
        let mut dst = [-1i32; 5];
        let mut w = unsafe { view(&vector, dst.as_mut_ptr().cast(), 1, Dir::Write) }.unwrap();
        w.bytes_mut().copy_from_slice(&[7i32, 8, 9].map(i32::to_ne_bytes).concat());
        unsafe { w.finish(8) };
        assert_eq!(dst, [7, -1, 8, -1, -1], "only the bytes received are unpacked");
    }

    #[test]
    fn large_pieces_are_sent_from_where_they_are() {
        let int = int();
        // 3 blocks of 20 ints (80 bytes) every 30 ints: sent in place.
        let big = Layout::Map(Arc::new(typemap::hvector(3, 20, 120, &int).unwrap()));
        let src = [0i32; 80];
        let blocks =
            unsafe { gather_blocks(&big, src.as_ptr().cast(), 1) }.unwrap().expect("80-byte pieces go in place");
        let base = src.as_ptr() as usize;
        let got: Vec<(usize, usize)> = blocks.iter().map(|&(p, n)| (p as usize - base, n)).collect();
        assert_eq!(got, [(0, 80), (120, 80), (240, 80)]);
        // 4-byte pieces are packed; contiguous data needs no blocks; errors as for a view.
        let small = Layout::Map(Arc::new(typemap::hvector(3, 1, 8, &int).unwrap()));
        assert!(unsafe { gather_blocks(&small, src.as_ptr().cast(), 4) }.unwrap().is_none());
        assert!(unsafe { gather_blocks(&Layout::Dense(4), src.as_ptr().cast(), 4) }.unwrap().is_none());
        let null = unsafe { gather_blocks(&big, std::ptr::null(), 1) };
        assert_eq!(null.err().map(|e| e.class), Some(MPI_ERR_BUFFER));
        assert!(unsafe { gather_blocks(&big, src.as_ptr().cast(), -1) }.is_err());
    }

    #[test]
    fn parted_buffers_stage_each_rank_part() {
        let pair = Layout::Map(Arc::new(typemap::resized(&int(), 0, 8).unwrap()));
        let mut dst = [-1i32; 8];
        let mut p =
            unsafe { parted(&pair, dst.as_mut_ptr().cast(), [(1, 3), (2, 0)].into_iter(), Dir::Write) }.unwrap();
        assert_eq!(p.parts(), [(0, 4), (4, 8)]);
        p.bytes_mut().copy_from_slice(&[5i32, 6, 7].map(i32::to_ne_bytes).concat());
        unsafe { p.finish() };
        assert_eq!(dst, [6, -1, 7, -1, -1, -1, 5, -1]);
        // Dense parts may start before the buffer pointer.
        let p =
            unsafe { parted(&Layout::Dense(4), dst.as_ptr().add(2).cast(), [(1, -2), (1, 1)].into_iter(), Dir::Read) }
                .unwrap();
        assert_eq!(p.parts(), [(0, 4), (12, 4)]);
    }
}

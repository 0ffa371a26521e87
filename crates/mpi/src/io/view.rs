//! File views (MPI 4.0 section 14.3): the file as a process sees it, `disp` bytes in, then the
//! filetype tiled over and over; only the filetype's data bytes are visible, counted in etypes.
//! A view turns a range of its data bytes into `(file offset, length)` runs: the filetype's
//! pieces (its data blocks, listed once by the datatype engine at MPI_File_set_view) are
//! repeated every extent. MPI requires a filetype's displacements to be monotonically
//! nondecreasing, so the pieces are in file order.
//!
//! Data representations: "native" and "internal" (the same here: the bytes of memory);
//! "external32" (big-endian, MPI's fixed sizes) for filetypes whose data has the same size
//! in both (the conversion of the data itself is in `access.rs`); the program's own,
//! registered by `MPI_Register_datarep`, for a predefined etype (`datarep.rs`). Where such a
//! representation makes the etype longer or shorter in the file than in memory, the view is
//! laid out in the file's sizes (MPI 4.0 section 14.5.3: the extent function gives a type's
//! extent in the file): every displacement, length and extent of the filetype, in whole
//! etypes, is scaled by the file's etype size over the memory's.

use std::ffi::{c_char, c_int, CStr};

use super::{call_file, MPI_File};
use crate::abi::*;
use crate::datatype::{layout_in, Layout};
use crate::error::{copy_out, err, out, Res};
use crate::state;

/// One instance of the filetype, as the view repeats it.
#[derive(Clone, Debug)]
enum Tile {
    /// The data is one block starting `start` bytes after the tile's origin, as long as the
    /// extent: the view is the file from `disp + start` on.
    Contiguous { start: i64 },
    /// Data blocks `(offset, length)` in file order, and where each begins in the data.
    Pieces { size: usize, extent: i64, pieces: Vec<(i64, usize)>, starts: Vec<usize> },
}

#[derive(Clone, Debug)]
pub(crate) struct FileView {
    pub disp: i64,
    /// The types as MPI_File_get_view reports them: predefined ones, or the library's own
    /// duplicates of the program's derived ones (freed with the view).
    pub etype: MPI_Datatype,
    pub filetype: MPI_Datatype,
    /// Shared, as the tile: an access copies the view (a String's copy was a third of the
    /// library's allocations of a small write).
    pub datarep: std::sync::Arc<str>,
    /// Bytes of one etype in the file.
    pub esize: usize,
    /// Bytes of one etype in memory: `esize` but where a user representation changes the size.
    pub mem_esize: usize,
    /// Shared, so that an access's copy of the view costs no copy of a long filetype's pieces
    /// (a vector of 262,144 blocks: 6 MB copied, and faulted in, per access).
    tile: std::sync::Arc<Tile>,
}

impl Default for FileView {
    /// What a file is opened with: the bytes of the file, from 0, natively.
    fn default() -> FileView {
        FileView {
            disp: 0,
            etype: MPI_BYTE,
            filetype: MPI_BYTE,
            datarep: "native".into(),
            esize: 1,
            mem_esize: 1,
            tile: std::sync::Arc::new(Tile::Contiguous { start: 0 }),
        }
    }
}

impl FileView {
    /// Whether the view has holes: data that is not one stretch of the file, so that an access
    /// may be many pieces.
    pub fn has_holes(&self) -> bool {
        matches!(*self.tile, Tile::Pieces { .. })
    }

    /// Whether the view shows the file's bytes as they are in memory, in one stretch: no holes,
    /// the native (or internal) representation. An access through it is one pread or pwrite
    /// of the memory itself (`access::plain`).
    #[inline]
    pub fn plain(&self) -> bool {
        matches!(*self.tile, Tile::Contiguous { .. }) && matches!(&*self.datarep, "native" | "internal")
    }

    /// Whether the file data is in external32.
    pub fn external32(&self) -> bool {
        &*self.datarep == "external32"
    }

    /// Calls `f(file offset, data offset, length)` for the runs of the view's data bytes
    /// `pos .. pos + len`, in order, adjacent runs merged (the data offset counts from `pos`).
    // Always inlined: in the small-write path (`access::prepare`) LLVM outlined it once prepare
    // grew, 18 of a 64-byte MPI_File_write_at's ~900 instructions (callgrind).
    #[inline(always)]
    pub fn runs(&self, pos: u64, len: usize, mut f: impl FnMut(u64, usize, usize) -> Res) -> Res {
        if len == 0 {
            return Ok(());
        }
        let file_offset = |at: i64| -> Res<u64> {
            u64::try_from(at).map_err(|_| err(MPI_ERR_ARG, format!("the view maps data to file offset {at} (< 0)")))
        };
        let (size, extent, pieces, starts) = match &*self.tile {
            Tile::Contiguous { start } => {
                let at = self.disp.saturating_add(*start).saturating_add(pos as i64);
                return f(file_offset(at)?, 0, len);
            }
            Tile::Pieces { size, extent, pieces, starts } => (*size as u64, *extent, pieces, starts),
        };
        if size == 0 {
            return Err(err(MPI_ERR_IO, "the file view's filetype has no data: nothing can be accessed"));
        }
        let (mut tile, within) = (pos / size, (pos % size) as usize);
        let mut i = starts.partition_point(|&s| s <= within) - 1;
        let mut skip = within - starts[i];
        let mut pending: Option<(u64, usize, usize)> = None;
        let mut done = 0;
        while done < len {
            let (off, plen) = pieces[i];
            let take = (plen - skip).min(len - done);
            let at = self.disp as i128 + tile as i128 * extent as i128 + off as i128 + skip as i128;
            let at = file_offset(i64::try_from(at).unwrap_or(-1))?;
            pending = match pending {
                Some((f0, d0, l0)) if f0 + l0 as u64 == at => Some((f0, d0, l0 + take)),
                Some(run) => {
                    f(run.0, run.1, run.2)?;
                    Some((at, done, take))
                }
                None => Some((at, done, take)),
            };
            done += take;
            skip = 0;
            i += 1;
            if i == pieces.len() {
                i = 0;
                tile += 1;
            }
        }
        match pending {
            Some((f0, d0, l0)) => f(f0, d0, l0),
            None => Ok(()),
        }
    }

    /// The absolute byte position of etype `offset` of the view (MPI_File_get_byte_offset).
    pub fn byte_offset(&self, offset: i64) -> Res<i64> {
        let pos = self.data_bytes(offset)?;
        if let Tile::Contiguous { start } = *self.tile {
            return Ok(self.disp + start + pos as i64);
        }
        // The byte's own run; a position at the very end of a tile is the next tile's start.
        let mut first = None;
        self.runs(pos, 1, |at, _, _| {
            first.get_or_insert(at);
            Ok(())
        })?;
        Ok(first.unwrap_or(self.disp as u64) as i64)
    }

    /// Data bytes before etype `offset`.
    pub fn data_bytes(&self, offset: i64) -> Res<u64> {
        if offset < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative file offset {offset}")));
        }
        (offset as u64)
            .checked_mul(self.esize as u64)
            .ok_or_else(|| err(MPI_ERR_ARG, format!("file offset {offset} is beyond any file")))
    }

    /// The view's size in etypes of a file of `file_size` bytes: the etypes of data before
    /// the end of the file, a partial last one counted (MPI_SEEK_END, MPI_MODE_APPEND).
    pub fn etypes_in(&self, file_size: u64) -> i64 {
        let size = file_size as i64;
        let data = match &*self.tile {
            Tile::Contiguous { start } => (size - self.disp - start).max(0),
            Tile::Pieces { size: tsize, extent, pieces, .. } => {
                if *extent <= 0 {
                    return 0;
                }
                let tiles = ((size - self.disp) / extent).max(0);
                let base = self.disp + tiles * extent;
                let partial: i64 = pieces.iter().map(|&(off, len)| (size - (base + off)).clamp(0, len as i64)).sum();
                tiles * *tsize as i64 + partial
            }
        };
        let e = self.esize.max(1) as i64;
        (data + e - 1) / e
    }
}

/// The data representations a view may name, and those registered by the program: the bytes
/// of one etype in the file where a registered representation makes it other than in memory.
pub(crate) fn check_datarep(
    name: &str,
    etype: MPI_Datatype,
    etype_size: usize,
    filetype: &Layout,
    native_size: usize,
    ext_size: usize,
) -> Res<Option<usize>> {
    match name {
        "native" | "internal" => Ok(None),
        "external32" if native_size == ext_size => Ok(None),
        "external32" => Err(err(
            MPI_ERR_UNSUPPORTED_DATAREP,
            format!(
                "external32 views of a filetype whose data changes size ({} native bytes, {ext_size} in external32) \
                 are not supported",
                filetype.size()
            ),
        )),
        other => match super::datarep::lookup(other) {
            Some(rep) => {
                if !is_builtin(etype) {
                    return Err(err(
                        MPI_ERR_UNSUPPORTED_DATAREP,
                        format!(
                            "data representation \"{other}\": Billboard converts views whose etype is a predefined type \
                             (the extent function answers for those)"
                        ),
                    ));
                }
                let extent = rep.file_extent(etype)?;
                if extent == etype_size as i64 {
                    return Ok(None);
                }
                if extent <= 0 || !rep.converts_both() {
                    return Err(err(
                        MPI_ERR_UNSUPPORTED_DATAREP,
                        format!(
                            "data representation \"{other}\": the etype is {etype_size} bytes in memory and {extent} \
                             in the file{}",
                            if extent <= 0 { "" } else { ", but a null conversion function cannot change sizes" }
                        ),
                    ));
                }
                Ok(Some(extent as usize))
            }
            None => Err(err(MPI_ERR_UNSUPPORTED_DATAREP, format!("unknown data representation \"{other}\""))),
        },
    }
}

/// Builds the view's tile from the filetype's layout, in the file's sizes: `scale` is (bytes
/// of an etype in the file, in memory) where those differ.
fn tile_of(filetype: &Layout, scale: Option<(usize, usize)>) -> Res<Tile> {
    let mut pieces: Vec<(i64, usize)> = Vec::new();
    filetype.for_each_piece(1, |off, len| {
        match pieces.last_mut() {
            Some(last) if last.0 + last.1 as i64 == off => last.1 += len,
            _ => pieces.push((off, len)),
        }
        true
    });
    Tile::of_pieces(pieces, filetype.size(), filetype.extent(), scale)
}

impl Tile {
    /// The tile of a filetype's data blocks `pieces` (in file order, adjacent ones merged),
    /// `size` data bytes in `extent`; scaled by `scale` (file, memory bytes of an etype),
    /// which needs every displacement, length and the extent in whole etypes.
    fn of_pieces(mut pieces: Vec<(i64, usize)>, size: usize, extent: i64, scale: Option<(usize, usize)>) -> Res<Tile> {
        let (mut size, mut extent) = (size, extent);
        if let Some((file, mem)) = scale {
            let whole = |b: i64| b % mem as i64 == 0;
            if !whole(extent) || pieces.iter().any(|&(off, len)| !whole(off) || !whole(len as i64)) {
                return Err(err(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    format!(
                        "the filetype's data and extent are not laid out in whole etypes ({mem} bytes), so they cannot \
                         be scaled to the etype's {file} bytes in the file"
                    ),
                ));
            }
            let to_file = |b: i64| b / mem as i64 * file as i64;
            for piece in &mut pieces {
                *piece = (to_file(piece.0), to_file(piece.1 as i64) as usize);
            }
            (size, extent) = (to_file(size as i64) as usize, to_file(extent));
        }
        if let [(start, len)] = pieces[..] {
            if len as i64 == extent {
                return Ok(Tile::Contiguous { start });
            }
        }
        let mut starts = Vec::with_capacity(pieces.len());
        let mut at = 0;
        for &(_, len) in &pieces {
            starts.push(at);
            at += len;
        }
        Ok(Tile::Pieces { size, extent, pieces, starts })
    }
}

/// Whether `t` is a predefined datatype (returned as is by MPI_File_get_view).
fn predefined(t: MPI_Datatype) -> bool {
    is_pair_type(t) || (t != MPI_DATATYPE_NULL && builtin_datatype_size(t).is_some())
}

/// A copy of `t` the view keeps (the program may free its own): predefined types as they are.
fn keep(t: MPI_Datatype) -> Res<MPI_Datatype> {
    if predefined(t) {
        return Ok(t);
    }
    let mut copy = MPI_DATATYPE_NULL;
    // SAFETY: an exported function of this library, called with a valid output pointer.
    match unsafe { crate::datatype::PMPI_Type_dup(t, &mut copy) } {
        MPI_SUCCESS => Ok(copy),
        class => Err(err(class, format!("cannot keep datatype {t:#x} for the view"))),
    }
}

/// Frees the library's copies of a view's types.
pub(crate) fn release(view: &FileView) {
    for mut t in [view.etype, view.filetype] {
        if !predefined(t) {
            // SAFETY: as in `keep`; the copy is the view's own.
            unsafe { crate::datatype::PMPI_Type_free(&mut t) };
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_view(
    fh: MPI_File,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
    datarep: *const c_char,
    info: MPI_Info,
) -> c_int {
    call_file("MPI_File_set_view", fh, |f| {
        if datarep.is_null() {
            return Err(err(MPI_ERR_ARG, "null datarep pointer"));
        }
        // SAFETY: a NUL-terminated string from the caller, checked non-null.
        let rep = CStr::from_ptr(datarep).to_string_lossy().into_owned();
        let (el, fl, e_ext, f_ext) = state::with(|m| -> Res<_> {
            m.check_info(info)?;
            let el = layout_in(m, etype)?;
            let fl = layout_in(m, filetype)?;
            let e_ext = crate::datatype::external32_bytes(m, etype, 1)?;
            let f_ext = crate::datatype::external32_bytes(m, filetype, 1)?;
            Ok((el, fl, e_ext, f_ext))
        })
        .expect("MPI is running")?;
        let file_esize = check_datarep(&rep, etype, el.size(), &fl, fl.size(), f_ext)?;
        let esize = match file_esize {
            Some(e) => e,
            None if rep == "external32" => e_ext,
            None => el.size(),
        };
        if esize == 0 || fl.size() % el.size().max(1) != 0 {
            return Err(err(
                MPI_ERR_ARG,
                format!("the filetype ({} bytes) is not made of whole etypes ({} bytes)", fl.size(), el.size()),
            ));
        }
        let disp = if disp == MPI_DISPLACEMENT_CURRENT as MPI_Offset {
            if !f.sequential() {
                return Err(err(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT needs a file opened MPI_MODE_SEQUENTIAL"));
            }
            let st = f.state();
            st.view.byte_offset(f.shared.get()?)?
        } else if disp < 0 {
            return Err(err(MPI_ERR_ARG, format!("negative displacement {disp}")));
        } else {
            disp
        };
        if f.state().split.is_some() {
            return Err(err(MPI_ERR_IO, format!("MPI_File_set_view on {} during a split collective", f.name())));
        }
        let view = FileView {
            disp,
            etype: keep(etype)?,
            filetype: keep(filetype)?,
            datarep: rep.into(),
            esize,
            mem_esize: el.size(),
            tile: tile_of(&fl, file_esize.map(|e| (e, el.size())))?.into(),
        };
        let old = {
            let mut st = f.state();
            st.pointer = 0;
            std::mem::replace(&mut st.view, view)
        };
        release(&old);
        super::open::set_hints(f, info)?;
        // Collective, once every rank is done with the old view: whether any rank's new one
        // has holes (then writes may sieve, and plain writes lock against it: `sieve.rs`), and
        // the shared pointer back to 0 before any rank uses the new view.
        let mine = f.state().view.has_holes();
        let holes = super::allgather_words(&f.comm, &[mine as i64])?.iter().any(|&h| h != 0);
        f.state().holes_anywhere = holes;
        super::access::reset_shared(f)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_view(
    fh: MPI_File,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> c_int {
    call_file("MPI_File_get_view", fh, |f| {
        let (disp, etype, filetype) = (out(disp, "disp")?, out(etype, "etype")?, out(filetype, "filetype")?);
        if datarep.is_null() {
            return Err(err(MPI_ERR_ARG, "null datarep pointer"));
        }
        let view = f.state().view.clone();
        *disp = view.disp;
        // Derived types are returned as new types the program frees (MPI 4.0 section 14.3).
        *etype = keep(view.etype)?;
        *filetype = keep(view.filetype)?;
        copy_out(&view.datarep, datarep, std::ptr::null_mut(), MPI_MAX_DATAREP_STRING);
        Ok(())
    })
}

counted! {
    [PMPI_File_get_type_extent; Extent = MPI_Aint] [PMPI_File_get_type_extent_c; Extent = MPI_Count]
    fn(fh: MPI_File, datatype: MPI_Datatype, extent: *mut Extent) -> c_int {
        call_file(FUNCTION, fh, |f| {
            let extent = out(extent, "extent")?;
            let rep = f.state().view.datarep.clone();
            if let Some(rep) = super::datarep::lookup(&rep).filter(|_| is_builtin(datatype)) {
                *extent = rep.file_extent(datatype)? as Extent;
                return Ok(());
            }
            let external = &*rep == "external32";
            *extent = state::with(|m| -> Res<i64> {
                if external {
                    crate::datatype::external32_bytes(m, datatype, 1).map(|b| b as i64)
                } else {
                    Ok(crate::datatype::map_of(m, datatype)?.extent())
                }
            })
            .expect("MPI is running")?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(disp: i64, pieces: &[(i64, usize)], extent: i64) -> FileView {
        let size = pieces.iter().map(|p| p.1).sum();
        let mut starts = vec![];
        let mut at = 0;
        for p in pieces {
            starts.push(at);
            at += p.1;
        }
        let tile = Tile::Pieces { size, extent, pieces: pieces.to_vec(), starts }.into();
        FileView { disp, tile, ..FileView::default() }
    }

    fn runs(v: &FileView, pos: u64, len: usize) -> Vec<(u64, usize, usize)> {
        let mut got = vec![];
        v.runs(pos, len, |a, b, c| {
            got.push((a, b, c));
            Ok(())
        })
        .unwrap();
        got
    }

    #[test]
    fn a_strided_view_maps_data_to_runs_every_extent() {
        // 4 bytes of every 16, from byte 100: rank 1 of 4 writing ints round-robin.
        let v = view(100, &[(4, 4)], 16);
        assert_eq!(runs(&v, 0, 12), [(104, 0, 4), (120, 4, 4), (136, 8, 4)]);
        // Starting inside a piece.
        assert_eq!(runs(&v, 6, 4), [(122, 0, 2), (136, 2, 2)]);
        assert_eq!(v.byte_offset(2).unwrap(), 106);
        assert_eq!(v.etypes_in(124), 8, "bytes 104..108 and 120..124 are before the end");
    }

    #[test]
    fn a_view_whose_etype_is_longer_in_the_file_is_scaled() {
        // 2 ints of every 4 (rank 1 of 2), ints of 8 bytes in the file, after a 16-byte header.
        let tile = Tile::of_pieces(vec![(8, 8)], 8, 16, Some((8, 4))).unwrap();
        let v = FileView { disp: 16, esize: 8, mem_esize: 4, tile: tile.into(), ..FileView::default() };
        assert_eq!(runs(&v, 0, 48), [(32, 0, 16), (64, 16, 16), (96, 32, 16)]);
        assert_eq!(v.byte_offset(3).unwrap(), 72, "int 3 is the second of the second block");
        assert_eq!(v.etypes_in(80), 4, "blocks at 32 and 64 end before 80");
        // Shorter in the file; a contiguous filetype stays one stretch.
        let half = Tile::of_pieces(vec![(0, 16)], 16, 16, Some((4, 8))).unwrap();
        assert!(matches!(half, Tile::Contiguous { start: 0 }));
        let v = FileView {
            esize: 4,
            mem_esize: 8,
            tile: Tile::of_pieces(vec![(8, 8)], 8, 24, Some((4, 8))).unwrap().into(),
            ..FileView::default()
        };
        assert_eq!(runs(&v, 0, 8), [(4, 0, 4), (16, 4, 4)]);
        // Blocks that are not whole etypes cannot be scaled.
        let e = Tile::of_pieces(vec![(2, 4)], 4, 8, Some((8, 4))).unwrap_err();
        assert_eq!(e.class, MPI_ERR_UNSUPPORTED_DATAREP);
    }

    #[test]
    fn pieces_that_meet_across_tiles_are_one_run() {
        // Data at the end of one tile and the start of the next: one run.
        let v = view(0, &[(0, 2), (6, 2)], 8);
        assert_eq!(runs(&v, 0, 8), [(0, 0, 2), (6, 2, 4), (14, 6, 2)]);
        let c = FileView { disp: 10, ..FileView::default() };
        assert_eq!(runs(&c, 5, 3), [(15, 0, 3)]);
        assert_eq!(c.etypes_in(8), 0);
    }
}

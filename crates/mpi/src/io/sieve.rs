//! Data sieving, as ROMIO does it (Thakur, Gropp and Lusk, "Data Sieving and Collective I/O in
//! ROMIO", 1999; `ad_read_str.c`, `ad_write_str.c`): an independent access of many small
//! pieces moves their whole span through a buffer instead of one system call per piece. A read
//! reads each buffer-sized stretch once and copies the pieces out (`ind_rd_buffer_size`, 4 MiB);
//! a write reads the stretch, copies the pieces in and writes it back, under an exclusive fcntl
//! lock on the stretch (`ind_wr_buffer_size`, 512 KiB), so that another rank's pieces in the
//! gaps are not overwritten with stale bytes. For the same reason a plain write holds a shared
//! lock on its span while writes may sieve (`access.rs`, `two_phase.rs`). Hints `romio_ds_read`
//! / `romio_ds_write`: "enable", "disable", "automatic" (the rule of [`worth_sieving`]). A write
//! sieves only where the descriptor can read: a file opened MPI_MODE_WRONLY is opened for
//! reading too where the permissions allow (`open.rs`), as ROMIO does.
//!
//! ROMIO locks the whole span of a sieving write at once instead (`ADIOI_GEN_WriteStrided`,
//! seen with strace), so two ranks' interleaved writes run one after the other. A lock per
//! stretch lets them overlap: rank 1's stretch k-1 ends where rank 0's stretch k begins (2
//! ranks x 262,144 x 64 B under chrt -f 10: 3,400 MB/s a stretch at a time, 2,300 with the
//! whole span, MPICH 3,000).
//!
//! The shared locks of plain writes cost two system calls each, which many small writes (HDF5's
//! metadata) feel; they are taken only where a sieving write may run: where some rank's view
//! has holes (agreed at MPI_File_set_view: with none, every access is one piece and no write
//! sieves) and some rank can read.

use std::os::unix::fs::FileExt;

use super::access::{read_full, Access};
use super::shared::RangeLock;
use super::{io_error, File};
use crate::error::Res;

/// Bytes a sieving write reads and writes at once unless `ind_wr_buffer_size` says (ROMIO's
/// default).
const SIEVE_WRITE_BUFFER: usize = 512 << 10;

/// The buffer size to sieve `runs` with, or None to move each piece by itself.
pub(crate) fn choose(f: &File, runs: &[(u64, usize, usize)], what: Access) -> Option<usize> {
    let (key, size, default) = match what {
        Access::Read => ("romio_ds_read", "ind_rd_buffer_size", SIEVE_BUFFER),
        Access::Write => ("romio_ds_write", "ind_wr_buffer_size", SIEVE_WRITE_BUFFER),
    };
    // One piece (every access of a view without holes) has nothing to sieve.
    if runs.len() < 2 || (what == Access::Write && !f.fd_reads) {
        return None;
    }
    let sieve = match mode(f, key) {
        "disable" => false,
        "enable" => true,
        _ => worth_sieving(runs),
    };
    sieve.then(|| f.hint_number(size).unwrap_or(default))
}

/// A `romio_ds_*` hint's value: "enable", "disable", or "automatic" (also for any other).
fn mode(f: &File, key: &str) -> &'static str {
    match f.state().hints.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()) {
        Some("enable") => "enable",
        Some("disable") => "disable",
        _ => "automatic",
    }
}

/// Whether any rank's write may sieve on this file now (the hints are the same on every rank,
/// and the rest was agreed), so that plain writes must lock their span against
/// read-modify-writes.
pub(crate) fn may_sieve_writes(f: &File) -> bool {
    f.any_fd_reads && f.state().holes_anywhere && mode(f, "romio_ds_write") != "disable"
}

/// Bytes a sieving read reads at once unless the hint `ind_rd_buffer_size` says (ROMIO's
/// default).
const SIEVE_BUFFER: usize = 4 << 20;

/// Whether a read of `runs` should sieve: many small pieces (under 4 KiB on average) that
/// fill at least a quarter of their span, so reading the gaps too costs less than a system
/// call per piece (ROMIO's data sieving, Thakur, Gropp and Lusk 1999).
fn worth_sieving(runs: &[(u64, usize, usize)]) -> bool {
    let (Some(first), Some(last)) = (runs.first(), runs.last()) else { return false };
    let data: usize = runs.iter().map(|r| r.2).sum();
    let span = last.0 + last.2 as u64 - first.0;
    runs.len() > 2 && data / runs.len() < 4096 && span <= 4 * data as u64
}

/// Reads `runs` by reading their span in `buffer`-byte stretches and copying the pieces out;
/// returns the bytes read (up to the first piece the end of the file cuts).
pub(crate) fn read(
    fd: &std::fs::File,
    name: &str,
    runs: &[(u64, usize, usize)],
    data: &mut [u8],
    buffer: usize,
) -> Res<usize> {
    let read = |buf: &mut [u8], at: u64| read_full(fd, buf, at).map_err(|e| io_error(&e, "cannot read", name));
    let mut stretch = vec![0u8; buffer.max(1)];
    let (mut i, mut done) = (0, 0);
    while i < runs.len() {
        let lo = runs[i].0;
        let fits =
            runs[i..].iter().take_while(|&&(at, _, len)| (at + len as u64 - lo) as usize <= stretch.len()).count();
        if fits == 0 {
            // One piece larger than the buffer: straight into place.
            let (at, from, len) = runs[i];
            let got = read(&mut data[from..from + len], at)?;
            done += got;
            if got < len {
                return Ok(done);
            }
            i += 1;
            continue;
        }
        let (at, _, len) = runs[i + fits - 1];
        let hi = (at + len as u64 - lo) as usize;
        let got = read(&mut stretch[..hi], lo)?;
        for &(at, from, len) in &runs[i..i + fits] {
            let off = (at - lo) as usize;
            let here = got.saturating_sub(off).min(len);
            data[from..from + here].copy_from_slice(&stretch[off..off + here]);
            done += here;
            if here < len {
                return Ok(done);
            }
        }
        i += fits;
    }
    Ok(done)
}

/// Writes `runs` by reading their span in `buffer`-byte stretches, copying the pieces in and
/// writing each stretch back whole, under an exclusive lock on it when `lock` (the caller
/// holds none over the span already); returns the bytes written.
pub(crate) fn write(
    fd: &std::fs::File,
    name: &str,
    runs: &[(u64, usize, usize)],
    data: &[u8],
    buffer: usize,
    lock: bool,
) -> Res<usize> {
    let mut stretch = vec![0u8; buffer.max(1)];
    let mut i = 0;
    while i < runs.len() {
        let lo = runs[i].0;
        let fits =
            runs[i..].iter().take_while(|&&(at, _, len)| (at + len as u64 - lo) as usize <= stretch.len()).count();
        if fits <= 1 {
            // One piece (larger than the buffer, or alone in it): straight from the data.
            let (at, from, len) = runs[i];
            let _lock = if lock { Some(RangeLock::take(fd, Access::Read, at, at + len as u64)?) } else { None };
            fd.write_all_at(&data[from..from + len], at).map_err(|e| io_error(&e, "cannot write", name))?;
            i += 1;
            continue;
        }
        let (at, _, len) = runs[i + fits - 1];
        let hi = at + len as u64;
        let block = &mut stretch[..(hi - lo) as usize];
        let _lock = if lock { Some(RangeLock::take(fd, Access::Write, lo, hi)?) } else { None };
        // The gaps keep what the file holds; past its end they are zeros (a hole, as a
        // piece-by-piece write would leave).
        let got = read_full(fd, block, lo).map_err(|e| io_error(&e, "cannot read", name))?;
        block[got..].fill(0);
        for &(at, from, len) in &runs[i..i + fits] {
            let off = (at - lo) as usize;
            block[off..off + len].copy_from_slice(&data[from..from + len]);
        }
        fd.write_all_at(block, lo).map_err(|e| io_error(&e, "cannot write", name))?;
        i += fits;
    }
    Ok(runs.iter().map(|r| r.2).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sieving_reads_pick_the_pieces_out_of_stretches_and_stop_at_the_end() {
        let path = std::env::temp_dir().join(format!("bb-sieve-{}", std::process::id()));
        let bytes: Vec<u8> = (0..100u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let fd = std::fs::File::open(&path).unwrap();
        // 4 pieces of 3 bytes every 10, the last past the end of the file (at 98: 2 bytes).
        let runs = [(8, 0, 3), (18, 3, 3), (28, 6, 3), (98, 9, 3)];
        assert!(worth_sieving(&runs[..3]) && !worth_sieving(&runs[..2]));
        for buffer in [1, 12, 25, 1 << 20] {
            let mut data = [0u8; 12];
            let got = read(&fd, "f", &runs, &mut data, buffer).unwrap();
            assert_eq!(got, 11, "buffer {buffer}");
            assert_eq!(data, [8, 9, 10, 18, 19, 20, 28, 29, 30, 98, 99, 0], "buffer {buffer}");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn sieving_writes_keep_the_gaps_and_leave_zeros_past_the_end() {
        let path = std::env::temp_dir().join(format!("bb-sieve-write-{}", std::process::id()));
        // 3 pieces of 2 bytes every 4 from 2, the last past the end of the 8-byte file.
        let runs = [(2, 0, 2), (6, 2, 2), (12, 4, 2)];
        let data = [b'a', b'b', b'c', b'd', b'e', b'f'];
        for (buffer, lock) in [(1, true), (6, false), (8, true), (1 << 20, true)] {
            std::fs::write(&path, b"01234567").unwrap();
            let fd = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
            assert_eq!(write(&fd, "f", &runs, &data, buffer, lock).unwrap(), 6, "buffer {buffer}");
            assert_eq!(std::fs::read(&path).unwrap(), b"01ab45cd\0\0\0\0ef", "buffer {buffer}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

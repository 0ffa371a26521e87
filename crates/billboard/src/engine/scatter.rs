//! Receiving into and sending from a list of blocks (a non-contiguous datatype's pieces)
//! without staging the message in an intermediate buffer: the bytes go from the ring, the slot
//! or the sender's memory straight to where they belong, and from where they are straight into
//! the ring, the slot, the socket or the receiver's memory.

/// A piece of a receive or send buffer: its address and length. A send only reads it.
///
/// A sender's block list is read by the receiver with `process_vm_readv` (a gathered single
/// copy), so its layout is pinned to `struct iovec`'s: address at byte 0, length at byte 8.
pub type Block = (*mut u8, usize);

const _: () = {
    assert!(std::mem::size_of::<Block>() == std::mem::size_of::<libc::iovec>());
    assert!(std::mem::offset_of!(Block, 0) == std::mem::offset_of!(libc::iovec, iov_base));
    assert!(std::mem::offset_of!(Block, 1) == std::mem::offset_of!(libc::iovec, iov_len));
};

/// The parts of `blocks` covering logical bytes `offset..offset + len` of their
/// concatenation, as (address, length); stops early where the blocks end.
fn parts(blocks: &[Block], mut offset: usize, mut len: usize) -> impl Iterator<Item = (*mut u8, usize)> + '_ {
    blocks
        .iter()
        .map_while(move |&(ptr, blen)| {
            if len == 0 {
                return None;
            }
            if offset >= blen {
                offset -= blen;
                return Some((ptr, 0));
            }
            let n = (blen - offset).min(len);
            let part = (ptr.wrapping_add(offset), n);
            len -= n;
            offset = 0;
            Some(part)
        })
        .filter(|p| p.1 > 0)
}

/// Where a logical offset lies in a list of blocks: the index of its block and the logical
/// offset at which that block starts. A message moved front to back in chunks (the pipeline)
/// keeps one, so finding each chunk's blocks costs O(blocks) in all, not O(blocks) per chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    block: usize,
    start: usize,
}

impl Cursor {
    /// The blocks from the one holding logical byte `offset` on, and `offset` within them
    /// (moving forward from where the cursor is, or from the first block if `offset` lies
    /// behind it).
    pub(crate) fn seek<'b>(&mut self, blocks: &'b [Block], offset: usize) -> (&'b [Block], usize) {
        if offset < self.start || self.block > blocks.len() {
            *self = Cursor::default();
        }
        while self.block < blocks.len() && offset >= self.start + blocks[self.block].1 {
            self.start += blocks[self.block].1;
            self.block += 1;
        }
        (&blocks[self.block..], offset - self.start)
    }
}

/// A reusable list of byte slices for gathered sends, so a send allocates nothing once the
/// list has grown to its largest piece count.
#[derive(Default)]
pub(crate) struct Pieces(Vec<&'static [u8]>);

impl Pieces {
    /// Calls `f` with the parts of `blocks` covering logical bytes `offset..offset + len`,
    /// as slices (the channel's gathered send takes them), and forgets them after.
    ///
    /// # Safety
    /// Every block is valid for reads of its length for the duration of the call.
    pub(crate) unsafe fn with<R>(
        &mut self,
        blocks: &[Block],
        offset: usize,
        len: usize,
        f: impl FnOnce(&[&[u8]]) -> R,
    ) -> R {
        self.0.clear();
        for (ptr, n) in parts(blocks, offset, len) {
            // The 'static is not true: the slices live only until `clear` below (or the next
            // call's, should `f` panic), and `f` cannot keep them.
            self.0.push(std::slice::from_raw_parts(ptr, n));
        }
        let r = f(&self.0);
        self.0.clear();
        r
    }
}

/// Copies `data` to logical offset `offset` of the concatenation of `blocks` (whatever does
/// not fit is dropped: the caller reports truncation).
///
/// # Safety
/// Every block is valid for writes of its length.
pub(crate) unsafe fn copy_into(blocks: &[Block], mut offset: usize, mut data: &[u8]) {
    for &(ptr, len) in blocks {
        if data.is_empty() {
            return;
        }
        if offset >= len {
            offset -= len;
            continue;
        }
        let n = (len - offset).min(data.len());
        crate::copy::copy_bulk(data.as_ptr(), ptr.add(offset), n);
        data = &data[n..];
        offset = 0;
    }
}

/// The parts of `blocks` covering logical bytes `offset..offset + len`, as I/O vectors. The
/// blocks may lie in another process (a sender's, for `process_vm_readv`): they are only
/// counted here, never touched.
pub(crate) fn iovecs(blocks: &[Block], offset: usize, len: usize) -> Vec<libc::iovec> {
    parts(blocks, offset, len).map(|(ptr, n)| libc::iovec { iov_base: ptr.cast(), iov_len: n }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_land_across_block_boundaries() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 5];
        let blocks = [(a.as_mut_ptr(), 3), (b.as_mut_ptr(), 5)];
        // SAFETY: the blocks are our locals.
        unsafe {
            copy_into(&blocks, 0, &[1, 2]);
            copy_into(&blocks, 2, &[3, 4, 5, 6]);
            copy_into(&blocks, 7, &[8, 9, 9]);
        }
        assert_eq!(a, [1, 2, 3]);
        assert_eq!(b, [4, 5, 6, 0, 8]);
        let v = iovecs(&blocks, 2, 4);
        assert_eq!(v.iter().map(|i| i.iov_len).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(v[1].iov_base as *mut u8, b.as_mut_ptr());
    }

    #[test]
    fn pieces_cover_the_range_asked_for() {
        let a = [1u8, 2, 3];
        let b = [4u8, 5, 6, 7, 8];
        let c = [9u8; 4];
        let blocks = [
            (a.as_ptr() as *mut u8, 3),
            (b.as_ptr() as *mut u8, 0),
            (b.as_ptr() as *mut u8, 5),
            (c.as_ptr() as *mut u8, 4),
        ];
        let mut pieces = Pieces::default();
        let mut joined = |offset, len| {
            // SAFETY: the blocks are our locals.
            unsafe { pieces.with(&blocks, offset, len, |p| (p.len(), p.concat())) }
        };
        assert_eq!(joined(0, 12), (3, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9]), "empty blocks are left out");
        assert_eq!(joined(2, 3), (2, vec![3, 4, 5]));
        assert_eq!(joined(3, 5), (1, vec![4, 5, 6, 7, 8]), "starts at a block boundary");
        assert_eq!(joined(7, 0), (0, vec![]));
        assert_eq!(joined(10, 100), (1, vec![9, 9]), "stops where the blocks end");
        assert_eq!(joined(20, 1), (0, vec![]));
    }

    #[test]
    fn cursors_find_the_same_bytes_as_a_walk_from_the_start() {
        let src: Vec<u8> = (0..60).collect();
        let cuts = [0usize, 7, 7, 20, 33, 59, 60];
        let blocks: Vec<Block> = cuts.windows(2).map(|w| (src[w[0]..].as_ptr() as *mut u8, w[1] - w[0])).collect();
        let mut cursor = Cursor::default();
        let mut pieces = Pieces::default();
        // Forward in chunks of every size, then backward (a restart), then past the end.
        let offsets = (0..=60).chain((0..=60).step_by(7)).chain((0..=60).rev().step_by(5)).chain([61, 3]);
        for offset in offsets {
            let (from, at) = cursor.seek(&blocks, offset);
            let len = 60usize.saturating_sub(offset).min(9);
            // SAFETY: the blocks are our locals.
            let got = unsafe { pieces.with(from, at, len, |p| p.concat()) };
            assert_eq!(got, src[offset.min(60)..offset.min(60) + len], "offset {offset}");
        }
    }

    #[test]
    fn pieces_mirror_copy_into() {
        // Gathering a range from one list of blocks and scattering it into another at the same
        // offset moves exactly those bytes, for every range.
        let src: Vec<u8> = (0..60).collect();
        let cuts = [0usize, 7, 7, 20, 33, 59, 60];
        let blocks: Vec<Block> = cuts.windows(2).map(|w| (src[w[0]..].as_ptr() as *mut u8, w[1] - w[0])).collect();
        let mut pieces = Pieces::default();
        for offset in 0..60 {
            for len in 0..=60 - offset {
                let mut dst = [0u8; 60];
                let out = [(dst.as_mut_ptr(), 25), (dst[25..].as_mut_ptr(), 35)];
                // SAFETY: the blocks are our locals.
                unsafe { pieces.with(&blocks, offset, len, |p| copy_into(&out, offset, &p.concat())) };
                let mut want = [0u8; 60];
                want[offset..offset + len].copy_from_slice(&src[offset..offset + len]);
                assert_eq!(dst, want, "offset {offset}, len {len}");
            }
        }
    }
}

//! Receiving into a list of blocks (a non-contiguous datatype's pieces) without staging the
//! message in an intermediate buffer: the bytes go from the ring, the slot or the sender's
//! memory straight to where they belong.

/// A piece of the receive buffer: its address and length.
pub type Block = (*mut u8, usize);

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
        std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.add(offset), n);
        data = &data[n..];
        offset = 0;
    }
}

/// The parts of `blocks` covering logical bytes `offset..offset + len`, as I/O vectors.
pub(crate) fn iovecs(blocks: &[Block], mut offset: usize, mut len: usize) -> Vec<libc::iovec> {
    let mut out = Vec::new();
    for &(ptr, blen) in blocks {
        if len == 0 {
            break;
        }
        if offset >= blen {
            offset -= blen;
            continue;
        }
        let n = (blen - offset).min(len);
        // SAFETY: within the block (offset < blen, offset + n <= blen).
        out.push(libc::iovec { iov_base: unsafe { ptr.add(offset) }.cast(), iov_len: n });
        len -= n;
        offset = 0;
    }
    out
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
}

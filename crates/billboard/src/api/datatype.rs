//! Typed buffers: what may be sent as raw bytes.

/// A type whose values are plain bytes: any bit pattern of its size is a valid value, and it
/// has no padding, pointers or drop glue, so it can be sent as bytes and received into.
///
/// # Safety
/// Implement only for such types (`#[repr(C)]` structs of such fields with no padding).
pub unsafe trait Equivalence: Copy + 'static {}

macro_rules! plain {
    ($($t:ty)*) => { $(
        // SAFETY: primitive numbers: every bit pattern is valid, no padding.
        unsafe impl Equivalence for $t {}
    )* };
}
plain!(u8 i8 u16 i16 u32 i32 u64 i64 u128 i128 usize isize f32 f64);
// SAFETY: an array of plain elements is plain.
unsafe impl<T: Equivalence, const N: usize> Equivalence for [T; N] {}

/// Something that can be sent: a contiguous run of plain elements.
///
/// # Safety
/// `as_bytes` covers exactly the buffer's elements.
pub unsafe trait Buffer {
    fn as_bytes(&self) -> &[u8];
}

/// Something that can be received into.
///
/// # Safety
/// `as_bytes_mut` covers exactly the buffer's elements, and every byte pattern written there
/// leaves valid elements (guaranteed by `Equivalence`).
pub unsafe trait BufferMut {
    fn as_bytes_mut(&mut self) -> &mut [u8];
    /// Size of one element, to count received elements.
    fn element_size(&self) -> usize;
}

// SAFETY: T is plain; the slice covers exactly the value.
unsafe impl<T: Equivalence> Buffer for T {
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: T is plain data of size_of::<T>() bytes.
        unsafe { std::slice::from_raw_parts((self as *const T).cast(), std::mem::size_of::<T>()) }
    }
}

// SAFETY: as above, for each element.
unsafe impl<T: Equivalence> Buffer for [T] {
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: a slice of plain data is contiguous plain bytes.
        unsafe { std::slice::from_raw_parts(self.as_ptr().cast(), std::mem::size_of_val(self)) }
    }
}

// SAFETY: delegates to the slice.
unsafe impl<T: Equivalence> Buffer for Vec<T> {
    fn as_bytes(&self) -> &[u8] {
        self.as_slice().as_bytes()
    }
}

// SAFETY: T is plain; any bytes written leave a valid T.
unsafe impl<T: Equivalence> BufferMut for T {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: T is plain data of size_of::<T>() bytes; any bit pattern is valid.
        unsafe { std::slice::from_raw_parts_mut((self as *mut T).cast(), std::mem::size_of::<T>()) }
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

// SAFETY: as above, for each element.
unsafe impl<T: Equivalence> BufferMut for [T] {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: a slice of plain data; any bit pattern is valid.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr().cast(), std::mem::size_of_val(self)) }
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

// SAFETY: delegates to the slice.
unsafe impl<T: Equivalence> BufferMut for Vec<T> {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice().as_bytes_mut()
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_expose_exactly_their_bytes() {
        assert_eq!(7u32.as_bytes(), &7u32.to_ne_bytes());
        assert_eq!([1.0f64, 2.0][..].as_bytes().len(), 16);
        assert_eq!(vec![0u16; 5].as_bytes().len(), 10);
        let mut v = vec![0u32; 3];
        v.as_bytes_mut()[4..8].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(v, [0, 9, 0]);
        assert_eq!(v.element_size(), 4);
        assert_eq!([[0u8; 3]; 2].as_bytes().len(), 6);
    }
}

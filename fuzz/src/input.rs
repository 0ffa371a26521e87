//! Reading structure out of fuzz bytes, and cutting a byte stream into the chunks a socket might
//! deliver.

/// A cursor over fuzz bytes. Past the end every read gives zeros, so a short input is still a
/// complete (if dull) description.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// Little-endian integer of `N` bytes (zeros past the end).
    fn le<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        for x in &mut b {
            *x = self.byte();
        }
        b
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.le())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.le())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.le())
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Most chunks one stream is cut into.
pub const MAX_CHUNKS: usize = 2048;

/// Chunk sizes in which to deliver a stream: read from the input as a count byte (0..=15) and
/// that many size bytes, used in turn and cycling. A size byte below 0xF0 means 1..=240 bytes;
/// 0xF0..=0xFF mean 1..=16 times 64 KiB, so one chunk can hold a largest frame. No sizes at
/// all delivers the stream in one piece.
pub struct Chunker {
    sizes: Vec<usize>,
    next: usize,
}

impl Chunker {
    pub fn read(input: &mut Input<'_>) -> Chunker {
        let count = input.byte() % 16;
        let sizes = (0..count)
            .map(|_| match input.byte() {
                b @ 0..=0xEF => b as usize + 1,
                b => (b as usize - 0xEF) << 16,
            })
            .collect();
        Chunker { sizes, next: 0 }
    }

    /// The next chunk's size.
    pub fn next_len(&mut self) -> usize {
        if self.sizes.is_empty() {
            return usize::MAX;
        }
        let n = self.sizes[self.next];
        self.next = (self.next + 1) % self.sizes.len();
        n
    }

    /// Cuts `bytes` into chunks of the chosen sizes, but into at most [`MAX_CHUNKS`] (so a
    /// megabyte frame is not fed byte by byte: a fuzz run must stay short).
    pub fn split<'b>(&mut self, mut bytes: &'b [u8]) -> Vec<&'b [u8]> {
        let least = bytes.len().div_ceil(MAX_CHUNKS);
        let mut chunks = Vec::new();
        while !bytes.is_empty() {
            let (head, rest) = bytes.split_at(self.next_len().max(least).min(bytes.len()));
            chunks.push(head);
            bytes = rest;
        }
        chunks
    }
}

/// Copies `bytes` and XORs in up to three (position, value) flips read from `input`: the
/// tampering a forger or a broken peer could do. Returns the bytes and whether they differ from
/// the originals (two flips of one byte can cancel).
pub fn tamper(bytes: &[u8], input: &mut Input<'_>) -> (Vec<u8>, bool) {
    let mut out = bytes.to_vec();
    if !out.is_empty() {
        for _ in 0..input.byte() % 4 {
            let at = input.byte() as usize % out.len();
            out[at] ^= input.byte();
        }
    }
    let changed = out != bytes;
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_zero() {
        let mut i = Input::new(&[1, 2, 3]);
        assert_eq!(i.u16(), 0x0201);
        assert_eq!(i.u32(), 3);
        assert_eq!(i.byte(), 0);
        assert!(i.is_empty());
    }

    #[test]
    fn chunker_cycles_and_scales() {
        let mut i = Input::new(&[2, 0, 0xF0]);
        let mut c = Chunker::read(&mut i);
        assert_eq!([c.next_len(), c.next_len(), c.next_len()], [1, 64 << 10, 1]);
        let mut none = Chunker::read(&mut Input::new(&[]));
        assert_eq!(none.split(&[1, 2, 3]), vec![&[1u8, 2, 3][..]]);
    }
}

//! One-sided operations as they travel to their target, and how the target applies them to its
//! window memory. Pure: bytes in, bytes out, no MPI state, so it is unit-tested on its own.
//!
//! # Wire format
//!
//! Each operation travels to its target in one request (`serve.rs`), encoded as
//! (native-endian 8-byte words; the ranks of one job share a byte order):
//!
//! ```text
//! word 0  kind (1 put, 2 get, 3 accumulate, 4 get-accumulate, 5 compare-and-swap)
//! word 1  MPI_Op of an accumulate (low 32 bits)
//! word 2  element datatype of an accumulate or compare-and-swap (a predefined handle, the
//!         same number in every process)
//! word 3  byte offset in the target window of the target buffer (displacement × disp_unit)
//! word 4  count: instances of the target layout
//! word 5  extent of the target layout (bytes from one instance to the next)
//! word 6  n: blocks of one instance
//! word 7  data bytes that follow the blocks
//! 2n words: each block's (byte offset from the instance, length)
//! data    put / accumulate: the origin data, packed; compare-and-swap: origin then compare
//! ```
//!
//! The target answers a get-type operation (get, get-accumulate, compare-and-swap) with the
//! packed target data it read. The tests below also encode several operations back to back.

use crate::abi::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Put = 1,
    Get = 2,
    Accumulate = 3,
    GetAccumulate = 4,
    CompareAndSwap = 5,
}

impl Kind {
    /// Whether the target answers with data.
    pub fn fetches(self) -> bool {
        matches!(self, Kind::Get | Kind::GetAccumulate | Kind::CompareAndSwap)
    }

    pub(crate) fn from_word(w: u64) -> Option<Kind> {
        Some(match w {
            1 => Kind::Put,
            2 => Kind::Get,
            3 => Kind::Accumulate,
            4 => Kind::GetAccumulate,
            5 => Kind::CompareAndSwap,
            _ => return None,
        })
    }
}

/// Where the target data lies: `count` instances, `extent` bytes apart, of `blocks`
/// (offset, length) relative to `offset` bytes into the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub offset: i64,
    pub count: usize,
    pub extent: i64,
    pub blocks: Vec<(i64, usize)>,
}

impl Shape {
    /// Packed bytes of the data.
    pub fn bytes(&self) -> usize {
        self.count * self.blocks.iter().map(|b| b.1).sum::<usize>()
    }

    /// The lowest and one past the highest window byte the data touches (`None`: no bytes).
    pub fn span(&self) -> Option<(i64, i64)> {
        let used = self.blocks.iter().filter(|b| b.1 > 0);
        let lo = used.clone().map(|b| b.0).min()?;
        let hi = used.map(|b| b.0 + b.1 as i64).max()?;
        if self.count == 0 {
            return None;
        }
        let last = (self.count as i64 - 1) * self.extent;
        Some((self.offset + lo + last.min(0), self.offset + hi + last.max(0)))
    }

    /// The window byte ranges of the data, in packed order.
    pub(crate) fn regions(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.count as i64).flat_map(move |i| {
            self.blocks
                .iter()
                .filter(|b| b.1 > 0)
                .map(move |&(off, len)| ((self.offset + i * self.extent + off) as usize, len))
        })
    }

    /// Copies the data out of `window` into packed bytes.
    fn pack(&self, window: &[u8], out: &mut Vec<u8>) {
        for (at, len) in self.regions() {
            out.extend_from_slice(&window[at..at + len]);
        }
    }

    /// Copies packed bytes into the data's place in `window`.
    fn unpack(&self, packed: &[u8], window: &mut [u8]) {
        let mut pos = 0;
        for (at, len) in self.regions() {
            window[at..at + len].copy_from_slice(&packed[pos..pos + len]);
            pos += len;
        }
    }
}

/// One operation on a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    pub kind: Kind,
    pub op: MPI_Op,
    pub elem: MPI_Datatype,
    pub target: Shape,
    pub data: Vec<u8>,
}

const HEADER_WORDS: usize = 8;

impl Access {
    /// Appends the encoded operation to `out`.
    #[cfg(test)]
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_header(self.data.len(), out);
        out.extend_from_slice(&self.data);
    }

    /// Appends the operation without its data, which is `data_len` bytes the caller appends
    /// next (straight from the origin's buffers, with no copy in between).
    pub fn encode_header(&self, data_len: usize, out: &mut Vec<u8>) {
        let t = &self.target;
        let header = [
            self.kind as u64,
            self.op as u32 as u64,
            self.elem as u32 as u64,
            t.offset as u64,
            t.count as u64,
            t.extent as u64,
            t.blocks.len() as u64,
            data_len as u64,
        ];
        for w in header {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        for &(off, len) in &t.blocks {
            out.extend_from_slice(&(off as u64).to_ne_bytes());
            out.extend_from_slice(&(len as u64).to_ne_bytes());
        }
    }

    /// Decodes a batch: every operation in it, or what is wrong with it.
    #[cfg(test)]
    pub fn decode_all(mut bytes: &[u8]) -> Result<Vec<Access>, String> {
        let mut all = Vec::new();
        while !bytes.is_empty() {
            let (a, rest) = Access::decode(bytes)?;
            all.push(a);
            bytes = rest;
        }
        Ok(all)
    }

    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Result<(Access, &[u8]), String> {
        let (mut access, data, rest) = Access::decode_parts(bytes)?;
        access.data = data.to_vec();
        Ok((access, rest))
    }

    /// Decodes the one operation `bytes` hold: the operation, its data left in place.
    pub fn decode_one(bytes: &[u8]) -> Result<(Access, &[u8]), String> {
        match Access::decode_parts(bytes)? {
            (a, data, []) => Ok((a, data)),
            (_, _, rest) => Err(format!("{} bytes after the operation", rest.len())),
        }
    }

    /// The operation (without its data), its data, and the bytes after it.
    fn decode_parts(bytes: &[u8]) -> Result<(Access, &[u8], &[u8]), String> {
        let word = |b: &[u8], i: usize| -> Result<u64, String> {
            let w = b
                .get(8 * i..8 * i + 8)
                .ok_or_else(|| format!("a batch ends inside an operation ({} bytes)", b.len()))?;
            Ok(u64::from_ne_bytes(w.try_into().expect("8 bytes")))
        };
        let kind = Kind::from_word(word(bytes, 0)?)
            .ok_or_else(|| format!("unknown operation kind {}", word(bytes, 0).unwrap_or(0)))?;
        let nblocks = word(bytes, 6)? as usize;
        let data_len = word(bytes, 7)? as usize;
        let mut blocks = Vec::with_capacity(nblocks.min(1 << 16));
        for b in 0..nblocks {
            let at = HEADER_WORDS + 2 * b;
            blocks.push((word(bytes, at)? as i64, word(bytes, at + 1)? as usize));
        }
        let start = 8 * (HEADER_WORDS + 2 * nblocks);
        let data = bytes.get(start..start.saturating_add(data_len)).ok_or("a batch ends inside an operation's data")?;
        let access = Access {
            kind,
            op: word(bytes, 1)? as u32 as MPI_Op,
            elem: word(bytes, 2)? as u32 as MPI_Datatype,
            target: Shape {
                offset: word(bytes, 3)? as i64,
                count: word(bytes, 4)? as usize,
                extent: word(bytes, 5)? as i64,
                blocks,
            },
            data: Vec::new(),
        };
        Ok((access, data, &bytes[start + data_len..]))
    }

    /// Bytes the target answers with.
    pub fn reply_bytes(&self) -> usize {
        if self.kind.fetches() {
            self.target.bytes()
        } else {
            0
        }
    }
}

/// The element-wise operation of an accumulate on packed data: `inout = in op inout`.
pub(crate) type Combine<'a> = &'a mut dyn FnMut(&[u8], &mut [u8]);

/// Applies `a` to `window`, appending what it reads to `reply`; `combine` is the accumulate's
/// operation (unused by put and get). On error (data outside the window, sizes that disagree)
/// nothing is written, and a get-type operation still appends its reply size in zeros, so the
/// origin's reply stays in step.
#[cfg(test)]
pub(crate) fn apply(window: &mut [u8], a: &Access, combine: Combine<'_>, reply: &mut Vec<u8>) -> Result<(), String> {
    apply_data(window, a, &a.data, combine, reply)
}

/// [`apply`] with the operation's data given apart (left where it arrived).
pub(crate) fn apply_data(
    window: &mut [u8],
    a: &Access,
    data: &[u8],
    combine: Combine<'_>,
    reply: &mut Vec<u8>,
) -> Result<(), String> {
    if let Err(e) = check(window.len(), a, data.len()) {
        reply.resize(reply.len() + a.reply_bytes(), 0);
        return Err(e);
    }
    let t = &a.target;
    match a.kind {
        Kind::Put => t.unpack(data, window),
        Kind::Get => t.pack(window, reply),
        Kind::Accumulate | Kind::GetAccumulate => {
            let mut current = Vec::with_capacity(t.bytes());
            t.pack(window, &mut current);
            if a.kind == Kind::GetAccumulate {
                reply.extend_from_slice(&current);
            }
            if a.op != MPI_NO_OP {
                combine(data, &mut current);
                t.unpack(&current, window);
            }
        }
        Kind::CompareAndSwap => {
            let mut current = Vec::with_capacity(t.bytes());
            t.pack(window, &mut current);
            reply.extend_from_slice(&current);
            let (origin, compare) = data.split_at(t.bytes());
            if current == compare {
                t.unpack(origin, window);
            }
        }
    }
    Ok(())
}

/// What the target checks before touching its memory (the origin checked it too, with the
/// window sizes it learned at creation, so this fails only on a bug).
fn check(window: usize, a: &Access, data_len: usize) -> Result<(), String> {
    if let Some((lo, hi)) = a.target.span() {
        if lo < 0 || hi > window as i64 {
            return Err(format!("bytes [{lo}, {hi}) are outside the {window}-byte window"));
        }
    }
    let want = match a.kind {
        Kind::Get => 0,
        Kind::GetAccumulate if a.op == MPI_NO_OP => data_len,
        Kind::CompareAndSwap => 2 * a.target.bytes(),
        _ => a.target.bytes(),
    };
    if data_len != want {
        return Err(format!("{} bytes of data for a target buffer of {} bytes", data_len, a.target.bytes()));
    }
    Ok(())
}

/// The operation name for messages.
pub(crate) fn op_name(op: MPI_Op) -> String {
    let name = match op {
        MPI_MAX => "MPI_MAX",
        MPI_MIN => "MPI_MIN",
        MPI_SUM => "MPI_SUM",
        MPI_PROD => "MPI_PROD",
        MPI_LAND => "MPI_LAND",
        MPI_BAND => "MPI_BAND",
        MPI_LOR => "MPI_LOR",
        MPI_BOR => "MPI_BOR",
        MPI_LXOR => "MPI_LXOR",
        MPI_BXOR => "MPI_BXOR",
        MPI_MINLOC => "MPI_MINLOC",
        MPI_MAXLOC => "MPI_MAXLOC",
        MPI_REPLACE => "MPI_REPLACE",
        MPI_NO_OP => "MPI_NO_OP",
        _ => return format!("{op:#x}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_i32(i: &[u8], io: &mut [u8]) {
        for (a, b) in i.chunks_exact(4).zip(io.chunks_exact_mut(4)) {
            let s = i32::from_ne_bytes(a.try_into().unwrap()) + i32::from_ne_bytes((&*b).try_into().unwrap());
            b.copy_from_slice(&s.to_ne_bytes());
        }
    }

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn dense(offset: i64, bytes: usize) -> Shape {
        Shape { offset, count: 1, extent: bytes as i64, blocks: vec![(0, bytes)] }
    }

    fn access(kind: Kind, target: Shape, data: Vec<u8>) -> Access {
        Access { kind, op: MPI_SUM, elem: MPI_INT, target, data }
    }

    #[test]
    fn a_batch_decodes_to_what_was_encoded() {
        let a = access(Kind::Put, Shape { offset: 8, count: 3, extent: 12, blocks: vec![(0, 4), (8, 4)] }, vec![7; 24]);
        let b = Access {
            kind: Kind::CompareAndSwap,
            op: MPI_REPLACE,
            elem: MPI_LONG,
            target: dense(0, 8),
            data: vec![1; 16],
        };
        let mut bytes = Vec::new();
        a.encode(&mut bytes);
        b.encode(&mut bytes);
        assert_eq!(Access::decode_all(&bytes).unwrap(), vec![a, b]);
        assert!(Access::decode_all(&bytes[..bytes.len() - 1]).unwrap_err().contains("ends inside"));
        assert!(
            Access::decode_all(&9u64.to_ne_bytes()).unwrap_err().contains("unknown operation kind 9"),
            "a bad kind"
        );
    }

    #[test]
    fn put_and_get_follow_a_strided_target_layout() {
        let mut window = vec![0u8; 32];
        // Two instances of { int at 0, int at 8 }, 12 bytes apart, starting at byte 4.
        let shape = Shape { offset: 4, count: 2, extent: 12, blocks: vec![(0, 4), (8, 4)] };
        apply(&mut window, &access(Kind::Put, shape.clone(), ints(&[1, 2, 3, 4])), &mut sum_i32, &mut Vec::new())
            .unwrap();
        let mut expect = vec![0u8; 32];
        for (at, v) in [(4, 1i32), (12, 2), (16, 3), (24, 4)] {
            expect[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(window, expect);
        let mut reply = Vec::new();
        apply(&mut window, &access(Kind::Get, shape, Vec::new()), &mut sum_i32, &mut reply).unwrap();
        assert_eq!(reply, ints(&[1, 2, 3, 4]));
    }

    #[test]
    fn accumulate_get_accumulate_and_compare_and_swap() {
        let mut window = ints(&[10, 20, 30]);
        let mut reply = Vec::new();
        apply(&mut window, &access(Kind::Accumulate, dense(4, 8), ints(&[1, 2])), &mut sum_i32, &mut reply).unwrap();
        assert_eq!(window, ints(&[10, 21, 32]));
        apply(&mut window, &access(Kind::GetAccumulate, dense(0, 4), ints(&[5])), &mut sum_i32, &mut reply).unwrap();
        assert_eq!((window.clone(), reply.clone()), (ints(&[15, 21, 32]), ints(&[10])));
        let fetch = Access { op: MPI_NO_OP, ..access(Kind::GetAccumulate, dense(8, 4), Vec::new()) };
        apply(&mut window, &fetch, &mut sum_i32, &mut reply).unwrap();
        assert_eq!(reply, ints(&[10, 32]), "MPI_NO_OP only reads");
        let swap = access(Kind::CompareAndSwap, dense(4, 4), ints(&[99, 21]));
        apply(&mut window, &swap, &mut sum_i32, &mut reply).unwrap();
        let miss = access(Kind::CompareAndSwap, dense(8, 4), ints(&[77, 0]));
        apply(&mut window, &miss, &mut sum_i32, &mut reply).unwrap();
        assert_eq!(window, ints(&[15, 99, 32]), "swapped where equal only");
        assert_eq!(reply, ints(&[10, 32, 21, 32]));
    }

    #[test]
    fn data_outside_the_window_is_refused_and_replies_stay_in_step() {
        let mut window = vec![0u8; 8];
        let e =
            apply(&mut window, &access(Kind::Put, dense(4, 8), vec![1; 8]), &mut sum_i32, &mut Vec::new()).unwrap_err();
        assert!(e.contains("[4, 12)") && e.contains("8-byte window"), "{e}");
        assert_eq!(window, vec![0; 8], "nothing written");
        let mut reply = Vec::new();
        assert!(apply(&mut window, &access(Kind::Get, dense(-4, 8), Vec::new()), &mut sum_i32, &mut reply).is_err());
        assert_eq!(reply, vec![0; 8], "zeros in place of the data");
    }

    #[test]
    fn spans_cover_negative_extents_and_empty_data() {
        let s = Shape { offset: 40, count: 3, extent: -8, blocks: vec![(0, 4)] };
        assert_eq!(s.span(), Some((24, 44)));
        assert_eq!(Shape { count: 0, ..s.clone() }.span(), None);
        assert_eq!(Shape { blocks: vec![], ..s }.span(), None);
    }
}

//! Reduction operators: the predefined ones on the types MPI allows them on, and user
//! operators from `MPI_Op_create`. Each becomes a byte-level combiner with MPI's contract
//! `combine(invec, inoutvec)`: `inoutvec[i] = invec[i] op inoutvec[i]`.

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::error::{call, err, out, Res};
use crate::state::Mpi;

/// `typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *type)`.
pub(crate) type IntUserFunction = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);

/// `typedef void MPI_User_function_c(void *, void *, MPI_Count *, MPI_Datatype *)` (MPI 4.0).
pub(crate) type LargeUserFunction = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);

/// A program's operator function, from MPI_Op_create or MPI_Op_create_c.
#[derive(Clone, Copy)]
pub(crate) enum UserFunction {
    Int(IntUserFunction),
    Large(LargeUserFunction),
}

impl UserFunction {
    /// Runs the function on `len` elements of `t` (`elem` bytes apart): an int one in runs
    /// of at most INT_MAX elements.
    ///
    /// # Safety
    /// `inv` and `inout` hold `len` elements of `t`, as the function expects.
    unsafe fn apply(self, inv: &[u8], inout: &mut [u8], elem: usize, mut t: MPI_Datatype) {
        let len = inout.len() / elem.max(1);
        match self {
            UserFunction::Large(f) => {
                let mut n = len as MPI_Count;
                f(inv.as_ptr() as *mut c_void, inout.as_mut_ptr().cast(), &mut n, &mut t);
            }
            UserFunction::Int(f) => {
                let mut done = 0;
                loop {
                    let run = (len - done).min(c_int::MAX as usize);
                    let mut n = run as c_int;
                    let at = done * elem;
                    f(inv.as_ptr().add(at) as *mut c_void, inout.as_mut_ptr().add(at).cast(), &mut n, &mut t);
                    done += run;
                    if done >= len {
                        break;
                    }
                }
            }
        }
    }
}

pub(crate) type Combiner = Box<dyn FnMut(&[u8], &mut [u8]) + Send>;

/// Element types the predefined operators work on.
#[derive(Clone, Copy)]
enum Num {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

/// The numeric kind of a predefined datatype; `bitwise_only` for MPI_BYTE.
fn num(t: MPI_Datatype) -> Option<(Num, bool)> {
    use Num::*;
    Some(match t {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 => (I8, false),
        MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_C_BOOL | MPI_CXX_BOOL => (U8, false),
        MPI_BYTE => (U8, true),
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => (I16, false),
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => (U16, false),
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => (I32, false),
        MPI_UNSIGNED | MPI_UINT32_T | MPI_WCHAR => (U32, false),
        MPI_LONG | MPI_LONG_LONG | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET | MPI_COUNT => (I64, false),
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => (U64, false),
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => (F32, false),
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => (F64, false),
        _ => return None,
    })
}

/// Whether `t` is an integer type that the arithmetic operators take, and then whether it is
/// signed (RMA does such operators with the CPU's own atomic instructions, `win/direct.rs`).
#[inline]
pub(crate) fn integer_sign(t: MPI_Datatype) -> Option<bool> {
    use Num::*;
    match num(t)? {
        (_, true) => None,
        (I8 | I16 | I32 | I64, _) => Some(true),
        (U8 | U16 | U32 | U64, _) => Some(false),
        (F32 | F64, _) => None,
    }
}

/// Applies `f(in, inout)` element-wise; buffers may be unaligned. `f` is a type of its own
/// for each operator (not a function pointer), so the loop is compiled per operator and
/// vectorised: a call per element made a 1 MiB sum cost several times the memory traffic.
#[inline(always)]
fn zip<T: Copy>(inv: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    let n = std::mem::size_of::<T>();
    let aligned = |p: usize| p.is_multiple_of(std::mem::align_of::<T>());
    if aligned(inv.as_ptr() as usize) && aligned(inout.as_ptr() as usize) {
        let len = inv.len().min(inout.len()) / n;
        // SAFETY: both are aligned for T and hold `len` whole elements; `inv` and `inout` are
        // distinct slices (one shared, one exclusive), so they do not overlap.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(inv.as_ptr() as *const T, len),
                std::slice::from_raw_parts_mut(inout.as_mut_ptr() as *mut T, len),
            )
        };
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = f(*x, *y);
        }
        return;
    }
    for (a, b) in inv.chunks_exact(n).zip(inout.chunks_exact_mut(n)) {
        // SAFETY: each chunk holds exactly one T; read/write_unaligned allow any alignment.
        unsafe {
            let x = (a.as_ptr() as *const T).read_unaligned();
            let y = (b.as_ptr() as *const T).read_unaligned();
            (b.as_mut_ptr() as *mut T).write_unaligned(f(x, y));
        }
    }
}

/// The combiner applying `f` element-wise on elements of type `T`.
fn elementwise<T: Copy + 'static>(f: impl Fn(T, T) -> T + Send + Copy + 'static) -> Option<Combiner> {
    Some(Box::new(move |i: &[u8], io: &mut [u8]| zip::<T>(i, io, f)))
}

macro_rules! int_op {
    ($t:ty, $op:expr, $bitwise_only:expr) => {
        match ($op, $bitwise_only) {
            (MPI_BAND, _) => elementwise(|a: $t, b| a & b),
            (MPI_BOR, _) => elementwise(|a: $t, b| a | b),
            (MPI_BXOR, _) => elementwise(|a: $t, b| a ^ b),
            (_, true) => None,
            (MPI_MAX, _) => elementwise(|a: $t, b| a.max(b)),
            (MPI_MIN, _) => elementwise(|a: $t, b| a.min(b)),
            (MPI_SUM, _) => elementwise(|a: $t, b| a.wrapping_add(b)),
            (MPI_PROD, _) => elementwise(|a: $t, b| a.wrapping_mul(b)),
            (MPI_LAND, _) => elementwise(|a: $t, b| ((a != 0) && (b != 0)) as $t),
            (MPI_LOR, _) => elementwise(|a: $t, b| ((a != 0) || (b != 0)) as $t),
            (MPI_LXOR, _) => elementwise(|a: $t, b| ((a != 0) != (b != 0)) as $t),
            _ => None,
        }
    };
}

macro_rules! float_op {
    ($t:ty, $op:expr) => {
        match $op {
            MPI_MAX => elementwise(|a: $t, b| a.max(b)),
            MPI_MIN => elementwise(|a: $t, b| a.min(b)),
            MPI_SUM => elementwise(|a: $t, b| a + b),
            MPI_PROD => elementwise(|a: $t, b| a * b),
            _ => None,
        }
    };
}

/// MINLOC / MAXLOC on `struct { V value; int index; }` pairs of `stride` bytes.
fn loc<V: Copy + PartialOrd>(stride: usize, min: bool) -> Combiner {
    // The int follows the value, aligned to 4 (short: 2 bytes of padding).
    let off = std::mem::size_of::<V>().max(4);
    Box::new(move |inv: &[u8], inout: &mut [u8]| {
        for (a, b) in inv.chunks_exact(stride).zip(inout.chunks_exact_mut(stride)) {
            // SAFETY: each chunk is one pair: V at 0, int at `off`.
            unsafe {
                let (va, ia) =
                    ((a.as_ptr() as *const V).read_unaligned(), (a.as_ptr().add(off) as *const i32).read_unaligned());
                let (vb, ib) =
                    ((b.as_ptr() as *const V).read_unaligned(), (b.as_ptr().add(off) as *const i32).read_unaligned());
                let a_wins = if min { va < vb } else { va > vb };
                let (v, i) = if a_wins {
                    (va, ia)
                } else if va == vb {
                    (va, ia.min(ib))
                } else {
                    (vb, ib)
                };
                (b.as_mut_ptr() as *mut V).write_unaligned(v);
                (b.as_mut_ptr().add(off) as *mut i32).write_unaligned(i);
            }
        }
    })
}

pub(crate) fn predefined(op: MPI_Op, t: MPI_Datatype) -> Option<Combiner> {
    if matches!(op, MPI_MINLOC | MPI_MAXLOC) {
        let min = op == MPI_MINLOC;
        return Some(match t {
            MPI_FLOAT_INT => loc::<f32>(8, min),
            MPI_DOUBLE_INT => loc::<f64>(16, min),
            MPI_LONG_INT => loc::<i64>(16, min),
            MPI_SHORT_INT => loc::<i16>(8, min),
            MPI_2INT | MPI_2INTEGER => loc::<i32>(8, min),
            MPI_2REAL => loc::<f32>(8, min),
            MPI_2DOUBLE_PRECISION => loc::<f64>(16, min),
            #[cfg(target_arch = "x86_64")]
            MPI_LONG_DOUBLE_INT => long_double_loc(min),
            _ => return None,
        });
    }
    if let Some(c) = complex_or_long_double(op, t) {
        return Some(c);
    }
    let (kind, bitwise_only) = num(t)?;
    match kind {
        Num::I8 => int_op!(i8, op, bitwise_only),
        Num::U8 => int_op!(u8, op, bitwise_only),
        Num::I16 => int_op!(i16, op, bitwise_only),
        Num::U16 => int_op!(u16, op, bitwise_only),
        Num::I32 => int_op!(i32, op, bitwise_only),
        Num::U32 => int_op!(u32, op, bitwise_only),
        Num::I64 => int_op!(i64, op, bitwise_only),
        Num::U64 => int_op!(u64, op, bitwise_only),
        Num::F32 => float_op!(f32, op),
        Num::F64 => float_op!(f64, op),
    }
}

/// Complex sums and products: `(a + bi) op (c + di)` per element, parts of type `T`.
fn complex<T: Copy + 'static + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>>(
    op: MPI_Op,
) -> Option<Combiner> {
    match op {
        MPI_SUM => elementwise(|x: [T; 2], y: [T; 2]| [x[0] + y[0], x[1] + y[1]]),
        MPI_PROD => elementwise(|x: [T; 2], y: [T; 2]| [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]]),
        _ => None,
    }
}

/// Operators on `long double` (x87, 16-byte slots) and the complex types.
fn complex_or_long_double(op: MPI_Op, t: MPI_Datatype) -> Option<Combiner> {
    match t {
        MPI_C_FLOAT_COMPLEX | MPI_COMPLEX | MPI_CXX_FLOAT_COMPLEX | MPI_COMPLEX8 => complex::<f32>(op),
        MPI_C_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_COMPLEX16 => complex::<f64>(op),
        #[cfg(target_arch = "x86_64")]
        MPI_LONG_DOUBLE => long_double(op),
        #[cfg(target_arch = "x86_64")]
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => long_double_complex(op),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn ld_max(i: *const u8, io: *mut u8) {
    if crate::x87::greater(i, io) {
        std::ptr::copy_nonoverlapping(i, io, 16)
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn ld_min(i: *const u8, io: *mut u8) {
    if crate::x87::greater(io, i) {
        std::ptr::copy_nonoverlapping(i, io, 16)
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn ldc_sum(i: *const u8, io: *mut u8) {
    crate::x87::add(i, io);
    crate::x87::add(i.add(16), io.add(16));
}

#[cfg(target_arch = "x86_64")]
fn long_double(op: MPI_Op) -> Option<Combiner> {
    use crate::x87;
    // SAFETY (all arms): each chunk is one 16-byte `long double` slot.
    let f: unsafe fn(*const u8, *mut u8) = match op {
        MPI_SUM => x87::add,
        MPI_PROD => x87::mul,
        MPI_MAX => ld_max,
        MPI_MIN => ld_min,
        _ => return None,
    };
    Some(Box::new(move |i: &[u8], io: &mut [u8]| {
        for (a, b) in i.chunks_exact(16).zip(io.chunks_exact_mut(16)) {
            // SAFETY: see above.
            unsafe { f(a.as_ptr(), b.as_mut_ptr()) }
        }
    }))
}

#[cfg(target_arch = "x86_64")]
fn long_double_complex(op: MPI_Op) -> Option<Combiner> {
    use crate::x87;
    let f: unsafe fn(*const u8, *mut u8) = match op {
        MPI_SUM => ldc_sum,
        MPI_PROD => x87::complex_mul,
        _ => return None,
    };
    Some(Box::new(move |i: &[u8], io: &mut [u8]| {
        for (a, b) in i.chunks_exact(32).zip(io.chunks_exact_mut(32)) {
            // SAFETY: each chunk is one 32-byte `long double _Complex`.
            unsafe { f(a.as_ptr(), b.as_mut_ptr()) }
        }
    }))
}

/// MINLOC / MAXLOC on `struct { long double value; int index; }` (32 bytes, int at 16).
#[cfg(target_arch = "x86_64")]
fn long_double_loc(min: bool) -> Combiner {
    use crate::x87;
    Box::new(move |inv: &[u8], inout: &mut [u8]| {
        for (a, b) in inv.chunks_exact(32).zip(inout.chunks_exact_mut(32)) {
            // SAFETY: each chunk is one pair; the value is 16 bytes, the index an int at 16.
            unsafe {
                let (pa, pb) = (a.as_ptr(), b.as_mut_ptr());
                let a_wins = if min { x87::greater(pb, pa) } else { x87::greater(pa, pb) };
                let tie = !x87::greater(pa, pb) && !x87::greater(pb, pa);
                let (ia, ib) =
                    ((pa.add(16) as *const i32).read_unaligned(), (pb.add(16) as *const i32).read_unaligned());
                if a_wins {
                    std::ptr::copy_nonoverlapping(pa, pb, 16);
                    (pb.add(16) as *mut i32).write_unaligned(ia);
                } else if tie {
                    (pb.add(16) as *mut i32).write_unaligned(ia.min(ib));
                }
            }
        }
    })
}

/// The combiner for `op` on `datatype`, or the MPI error naming what does not fit.
pub(crate) fn combiner(m: &mut Mpi, op: MPI_Op, datatype: MPI_Datatype) -> Res<Combiner> {
    let elem = crate::datatype::extent_in(m, datatype)?;
    if let Some((f, _)) = m.user_op(op) {
        // The function is handed the type's handle: it must stay valid (not be reused) while
        // the operation is pending, even if the program frees the type meanwhile.
        let hold = m.types.hold(datatype);
        return Ok(Box::new(move |inv: &[u8], inout: &mut [u8]| {
            // SAFETY: the user function reads the elements of `t` in `inv` and updates
            // `inout` in place, as MPI specifies.
            unsafe { f.apply(inv, inout, elem, hold.handle()) };
        }));
    }
    predefined_combiner(m, op, datatype)
}

/// The combiner of predefined operator `op` on `datatype` (RMA accumulates take no other).
pub(crate) fn predefined_combiner(m: &Mpi, op: MPI_Op, datatype: MPI_Datatype) -> Res<Combiner> {
    if !(MPI_MAX..=MPI_NO_OP).contains(&op) {
        return Err(err(MPI_ERR_OP, format!("invalid operator {}", crate::error::handle_name(op))));
    }
    // A Fortran 90 parameterized type is predefined: operators act on its sized type.
    predefined(op, crate::datatype::predefined_base(m, datatype)).ok_or_else(|| {
        err(
            MPI_ERR_OP,
            format!(
                "operator {} is not defined on datatype {}",
                crate::error::handle_name(op),
                crate::error::handle_name(datatype)
            ),
        )
    })
}

/// Whether `op` is commutative (predefined ones all are).
pub(crate) fn commutative(m: &Mpi, op: MPI_Op) -> bool {
    m.user_op(op).is_none_or(|(_, commute)| commute)
}

counted! {
    [PMPI_Op_create; Function = IntUserFunction] [PMPI_Op_create_c; Function = LargeUserFunction]
    fn(function: Option<Function>, commute: c_int, op: *mut MPI_Op) -> c_int {
        call(FUNCTION, MPI_COMM_WORLD, |m| {
            let f = function.ok_or_else(|| err(MPI_ERR_ARG, format!("{FUNCTION}: NULL function")))?;
            *out(op, "op")? = m.add_user_op(UserFunction::from(f), commute != 0);
            Ok(())
        })
    }
}

impl From<IntUserFunction> for UserFunction {
    fn from(f: IntUserFunction) -> Self {
        UserFunction::Int(f)
    }
}

impl From<LargeUserFunction> for UserFunction {
    fn from(f: LargeUserFunction) -> Self {
        UserFunction::Large(f)
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_free(op: *mut MPI_Op) -> c_int {
    call("MPI_Op_free", MPI_COMM_WORLD, |m| {
        let op = out(op, "op")?;
        if !m.free_user_op(*op) {
            return Err(err(MPI_ERR_OP, format!("cannot free operator {}", crate::error::handle_name(*op))));
        }
        *op = MPI_OP_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    call("MPI_Op_commutative", MPI_COMM_WORLD, |m| {
        *out(commute, "commute")? = commutative(m, op) as c_int;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: MPI_Op, t: MPI_Datatype, a: &[u8], b: &mut [u8]) {
        predefined(op, t).expect("defined")(a, b);
    }

    #[test]
    fn sums_and_extremes_on_ints_and_doubles() {
        let (a, mut b) = ([1i32, -5].map(i32::to_ne_bytes).concat(), [2i32, 7].map(i32::to_ne_bytes).concat());
        run(MPI_SUM, MPI_INT, &a, &mut b);
        assert_eq!(b, [3i32, 2].map(i32::to_ne_bytes).concat());
        let (a, mut b) = (2.5f64.to_ne_bytes(), 1.5f64.to_ne_bytes());
        run(MPI_MAX, MPI_DOUBLE, &a, &mut b);
        assert_eq!(f64::from_ne_bytes(b), 2.5);
        assert!(predefined(MPI_BAND, MPI_DOUBLE).is_none(), "no bitwise ops on floats");
        assert!(predefined(MPI_SUM, MPI_BYTE).is_none(), "MPI_BYTE takes bitwise ops only");
    }

    #[test]
    fn aligned_and_unaligned_buffers_combine_alike() {
        let words: Vec<u8> = (0..67i64).flat_map(|w| (w * 3 - 50).to_ne_bytes()).collect();
        let mut base = vec![0u8; words.len() + 16];
        for shift in [0, 1, 3] {
            // `base` is 8-aligned (its allocator's minimum on this target), so `shift` decides.
            let at = (8 - base.as_ptr() as usize % 8) % 8 + shift;
            let mut inout = vec![0u8; words.len() + 16];
            let io_at = (8 - inout.as_ptr() as usize % 8) % 8;
            base[at..at + words.len()].copy_from_slice(&words);
            inout[io_at..io_at + words.len()].copy_from_slice(&words);
            run(MPI_SUM, MPI_LONG, &base[at..at + words.len()], &mut inout[io_at..io_at + words.len()]);
            for (w, got) in inout[io_at..io_at + words.len()].chunks_exact(8).enumerate() {
                assert_eq!(i64::from_ne_bytes(got.try_into().unwrap()), 2 * (w as i64 * 3 - 50), "shift {shift}");
            }
        }
    }

    #[test]
    fn minloc_keeps_the_lower_index_on_ties() {
        let pair = |v: f64, i: i32| [v.to_ne_bytes().to_vec(), i.to_ne_bytes().to_vec(), vec![0; 4]].concat();
        let mut b = pair(1.0, 5);
        run(MPI_MINLOC, MPI_DOUBLE_INT, &pair(1.0, 3), &mut b);
        assert_eq!(b, pair(1.0, 3));
        run(MPI_MINLOC, MPI_DOUBLE_INT, &pair(2.0, 0), &mut b);
        assert_eq!(b, pair(1.0, 3));
        let mut s = [7i16.to_ne_bytes().to_vec(), vec![0; 2], 1i32.to_ne_bytes().to_vec()].concat();
        let t = [9i16.to_ne_bytes().to_vec(), vec![0; 2], 4i32.to_ne_bytes().to_vec()].concat();
        run(MPI_MAXLOC, MPI_SHORT_INT, &t, &mut s);
        assert_eq!(s, t);
    }
}

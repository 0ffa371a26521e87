//! The group calls (`libgpvm3`): membership and barriers are the agent's (`groups.rs`);
//! broadcast, reduce, gather and scatter move their data directly between the members, with
//! the root in the middle: one message per member each way.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::encoding::Encoding;
use crate::error::PvmError;
use crate::groups::op;
use crate::sendrecv::{items, type_size};
use crate::state::{call, Lib};
use crate::wire::Frame;

/// Reads a group name (null or empty: `PvmNullGroup`).
///
/// # Safety
/// `name` is null or a C string.
unsafe fn group_name(name: *const c_char) -> Result<String, PvmError> {
    if name.is_null() {
        return Err(PvmError::NullGroup);
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
    if s.is_empty() {
        return Err(PvmError::NullGroup);
    }
    Ok(s)
}

fn group_op(lib: &mut Lib, op: i32, name: &str, arg: i32) -> Result<i32, PvmError> {
    lib.task()?.request_status(&Frame::Group { op, name: name.to_string(), arg })
}

/// Every member's tid by instance (0 for a free instance).
fn members(lib: &mut Lib, name: &str) -> Result<Vec<i32>, PvmError> {
    match lib.task()?.request(&Frame::Group { op: op::MEMBERS, name: name.to_string(), arg: 0 })? {
        Frame::Status { code, .. } if code < 0 => Err(PvmError::from_code(code)),
        Frame::Status { list, .. } => Ok(list),
        _ => Err(PvmError::SysErr),
    }
}

macro_rules! name_call {
    ($f:ident, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $f(name: *mut c_char) -> c_int {
            call(stringify!($f), |lib| {
                // SAFETY: C's contract: a group name.
                let name = unsafe { group_name(name)? };
                group_op(lib, $op, &name, 0)
            })
        }
    };
    ($f:ident, $op:expr, arg) => {
        #[no_mangle]
        pub unsafe extern "C" fn $f(name: *mut c_char, arg: c_int) -> c_int {
            call(stringify!($f), |lib| {
                // SAFETY: C's contract: a group name.
                let name = unsafe { group_name(name)? };
                group_op(lib, $op, &name, arg)
            })
        }
    };
}

name_call!(pvm_joingroup, op::JOIN);
name_call!(pvm_lvgroup, op::LEAVE);
name_call!(pvm_gsize, op::SIZE);
name_call!(pvm_gettid, op::TID, arg);
name_call!(pvm_getinst, op::INST, arg);
name_call!(pvm_barrier, op::BARRIER, arg);
name_call!(pvm_freezegroup, op::FREEZE, arg);

/// Sends the active send buffer to every member but the caller.
#[no_mangle]
pub unsafe extern "C" fn pvm_bcast(name: *mut c_char, tag: c_int) -> c_int {
    call("pvm_bcast", |lib| {
        // SAFETY: C's contract: a group name.
        let name = unsafe { group_name(name)? };
        if tag < 0 {
            return Err(PvmError::BadParam);
        }
        let tids = members(lib, &name)?;
        let me = lib.task()?.tid;
        let others: Vec<i32> = tids.into_iter().filter(|&t| t != 0 && t != me).collect();
        crate::sendrecv::send_active(lib, &others, tag)
    })
}

/// The root's tid and the caller's instance.
fn roles(lib: &mut Lib, tids: &[i32], root: c_int) -> Result<(i32, usize), PvmError> {
    let me = lib.task()?.tid;
    let root_tid =
        usize::try_from(root).ok().and_then(|r| tids.get(r)).copied().filter(|&t| t != 0).ok_or(PvmError::NoInst)?;
    let mine = tids.iter().position(|&t| t == me).ok_or(PvmError::NotInGroup)?;
    Ok((root_tid, mine))
}

/// A reduction function as PVM calls it: (datatype, x in/out, y, count, info).
type ReduceFn = unsafe extern "C" fn(*mut c_int, *mut c_void, *mut c_void, *mut c_int, *mut c_int);

/// Combines every member's `count` items into the root's `data` with `func`.
#[no_mangle]
pub unsafe extern "C" fn pvm_reduce(
    func: Option<ReduceFn>,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *mut c_char,
    root: c_int,
) -> c_int {
    call("pvm_reduce", |lib| {
        // SAFETY: C's contract: a group name.
        let name = unsafe { group_name(name)? };
        let func = func.ok_or(PvmError::BadParam)?;
        // SAFETY: C's contract: count items of datatype at data.
        let mine = unsafe { items(data, count, datatype)? }.to_vec();
        let tids = members(lib, &name)?;
        let (root_tid, _) = roles(lib, &tids, root)?;
        let t = lib.task()?;
        if t.tid != root_tid {
            t.send(root_tid, tag, Encoding::Raw.code(), &mine)?;
            return Ok(0);
        }
        for &src in tids.iter().filter(|&&s| s != 0 && s != root_tid) {
            let mut m = t.receive(src, tag, None).ok_or(PvmError::SysErr)?;
            if m.data.len() != mine.len() {
                return Err(PvmError::Mismatch);
            }
            let (mut dt, mut n, mut info) = (datatype, count, 0);
            // SAFETY: data holds count items; m.data as many; func is the caller's reducer.
            unsafe { func(&mut dt, data, m.data.as_mut_ptr().cast(), &mut n, &mut info) };
            if info < 0 {
                return Err(PvmError::from_code(info));
            }
        }
        Ok(0)
    })
}

/// The root collects every member's `count` items into `result`, by instance.
#[no_mangle]
pub unsafe extern "C" fn pvm_gather(
    result: *mut c_void,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *mut c_char,
    root: c_int,
) -> c_int {
    call("pvm_gather", |lib| {
        // SAFETY: C's contract: a group name; count items of datatype at data.
        let (name, mine) = unsafe { (group_name(name)?, items(data, count, datatype)?.to_vec()) };
        let tids = members(lib, &name)?;
        let (root_tid, _) = roles(lib, &tids, root)?;
        let t = lib.task()?;
        if t.tid != root_tid {
            t.send(root_tid, tag, Encoding::Raw.code(), &mine)?;
            return Ok(0);
        }
        if result.is_null() && !mine.is_empty() {
            return Err(PvmError::BadParam);
        }
        for (inst, &src) in tids.iter().enumerate().filter(|(_, &s)| s != 0) {
            let part =
                if src == root_tid { mine.clone() } else { t.receive(src, tag, None).ok_or(PvmError::SysErr)?.data };
            if part.len() != mine.len() {
                return Err(PvmError::Mismatch);
            }
            // SAFETY: C's contract: result holds count items per instance at the root.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), result.cast::<u8>().add(inst * mine.len()), part.len())
            };
        }
        Ok(0)
    })
}

/// The root hands each member its `count` items of `data`, by instance, into `result`.
#[no_mangle]
pub unsafe extern "C" fn pvm_scatter(
    result: *mut c_void,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *mut c_char,
    root: c_int,
) -> c_int {
    call("pvm_scatter", |lib| {
        // SAFETY: C's contract: a group name.
        let name = unsafe { group_name(name)? };
        let each = usize::try_from(count).map_err(|_| PvmError::BadParam)? * type_size(datatype)?;
        if each > 0 && result.is_null() {
            return Err(PvmError::BadParam);
        }
        let tids = members(lib, &name)?;
        let (root_tid, _) = roles(lib, &tids, root)?;
        let t = lib.task()?;
        let part = if t.tid != root_tid {
            t.receive(root_tid, tag, None).ok_or(PvmError::SysErr)?.data
        } else {
            let mut own = Vec::new();
            for (inst, &dst) in tids.iter().enumerate().filter(|(_, &d)| d != 0) {
                // SAFETY: C's contract: data holds count items per instance at the root.
                let slice = unsafe { items(data.cast::<u8>().add(inst * each).cast(), count, datatype)? };
                if dst == root_tid {
                    own = slice.to_vec();
                } else {
                    t.send(dst, tag, Encoding::Raw.code(), slice)?;
                }
            }
            own
        };
        if part.len() != each {
            return Err(PvmError::Mismatch);
        }
        // SAFETY: C's contract: result holds count items.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), result.cast::<u8>(), each) };
        Ok(0)
    })
}

/// Applies `f` item by item: `x[i] = f(x[i], y[i])` for `n` items of the C type `T`.
///
/// # Safety
/// `x` and `y` hold `n` items of `T`.
unsafe fn fold<T: Copy>(x: *mut c_void, y: *const c_void, n: usize, f: impl Fn(T, T) -> T) {
    let (x, y) = (x.cast::<T>(), y.cast::<T>());
    for i in 0..n {
        // SAFETY: the caller's contract.
        unsafe { x.add(i).write_unaligned(f(x.add(i).read_unaligned(), y.add(i).read_unaligned())) };
    }
}

/// One predefined reduction over every PVM type it applies to.
macro_rules! reduction {
    ($name:ident, $int:expr, $float:expr, $cplx:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dt: *mut c_int,
            x: *mut c_void,
            y: *mut c_void,
            num: *mut c_int,
            info: *mut c_int,
        ) {
            // SAFETY: PVM's contract for a reduction: all pointers valid, x and y hold num items.
            unsafe {
                let n = usize::try_from(*num).unwrap_or(0);
                let ok = match *dt {
                    2 => {
                        fold::<i16>(x, y, n, $int);
                        true
                    }
                    3 => {
                        fold::<i32>(x, y, n, $int);
                        true
                    }
                    8 => {
                        fold::<i64>(x, y, n, $int);
                        true
                    }
                    9 => {
                        fold::<u16>(x, y, n, $int);
                        true
                    }
                    10 => {
                        fold::<u32>(x, y, n, $int);
                        true
                    }
                    11 => {
                        fold::<u64>(x, y, n, $int);
                        true
                    }
                    4 => {
                        fold::<f32>(x, y, n, $float);
                        true
                    }
                    6 => {
                        fold::<f64>(x, y, n, $float);
                        true
                    }
                    5 => $cplx(x, y, n, 0f32),
                    7 => $cplx(x, y, n, 0f64),
                    _ => false,
                };
                *info = if ok { 0 } else { PvmError::BadParam.code() };
            }
        }
    };
}

/// Complex reductions: sum and product are defined, max and min are not (as in PVM).
unsafe fn cplx_sum<T: Copy + std::ops::Add<Output = T>>(x: *mut c_void, y: *mut c_void, n: usize, _: T) -> bool {
    // SAFETY: x and y hold n complex numbers, 2n parts.
    unsafe { fold::<T>(x, y, 2 * n, |a, b| a + b) };
    true
}

unsafe fn cplx_product<T>(x: *mut c_void, y: *mut c_void, n: usize, _: T) -> bool
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
{
    let (x, y) = (x.cast::<[T; 2]>(), y.cast::<[T; 2]>());
    for i in 0..n {
        // SAFETY: x and y hold n complex numbers.
        unsafe {
            let [a, b] = x.add(i).read_unaligned();
            let [c, d] = y.add(i).read_unaligned();
            x.add(i).write_unaligned([a * c - b * d, a * d + b * c]);
        }
    }
    true
}

unsafe fn no_cplx<T>(_: *mut c_void, _: *mut c_void, _: usize, _: T) -> bool {
    false
}

/// Integer and float helpers the reductions share.
trait Num: Copy + PartialOrd {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}
macro_rules! num_int {
    ($($t:ty)*) => {$(impl Num for $t {
        fn add(self, o: Self) -> Self { self.wrapping_add(o) }
        fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
    })*};
}
num_int!(i16 i32 i64 u16 u32 u64);
impl Num for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}
impl Num for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}
fn sum<T: Num>(a: T, b: T) -> T {
    a.add(b)
}
fn product<T: Num>(a: T, b: T) -> T {
    a.mul(b)
}
fn max<T: Num>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}
fn min<T: Num>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

reduction!(PvmSum, sum, sum, cplx_sum);
reduction!(PvmProduct, product, product, cplx_product);
reduction!(PvmMax, max, max, no_cplx);
reduction!(PvmMin, min, min, no_cplx);

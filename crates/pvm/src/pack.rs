//! The pack and unpack routines (`pvm_pk*`, `pvm_upk*`) and the buffer calls
//! (`pvm_initsend`, `pvm_mkbuf`, `pvm_freebuf`, `pvm_setsbuf`, `pvm_setrbuf`, `pvm_getsbuf`,
//! `pvm_getrbuf`, `pvm_bufinfo`), and whole messages packed into others (`pvm_pkmesg`,
//! `pvm_pkmesgbody`, `pvm_upkmesg`). `pvm_packf`/`pvm_unpackf` are in `packf.c` on top of
//! these.

use std::ffi::{c_char, c_int, c_long, c_short, c_uint, c_ulong, c_ushort, CStr};

use crate::buffer::Buffer;
use crate::encoding::{Encoding, Item};
use crate::error::PvmError;
use crate::state::{call, call_once, Lib};
use crate::trace::{self, Datum};

extern "C" {
    fn pvm_packf(fmt: *const c_char, ...) -> c_int;
    fn pvm_unpackf(fmt: *const c_char, ...) -> c_int;
}

/// Keeps the C object of `pvm_packf`/`pvm_unpackf` in the library (nothing in Rust calls them).
#[used]
static PACKF: [unsafe extern "C" fn(*const c_char, ...) -> c_int; 2] = [pvm_packf, pvm_unpackf];

/// Checks a C array argument: `cnt` items `std` apart from `ptr`.
fn checked(ptr_null: bool, cnt: c_int, std: c_int) -> Result<(usize, usize), PvmError> {
    let cnt = usize::try_from(cnt).map_err(|_| PvmError::BadParam)?;
    let std = usize::try_from(std).ok().filter(|&s| s >= 1).ok_or(PvmError::BadParam)?;
    if ptr_null && cnt > 0 {
        return Err(PvmError::BadParam);
    }
    Ok((cnt, std))
}

/// What the tracer hears at a pack or unpack routine's entry: the program's array (address,
/// count, stride), as Debian's `lpvmpack.c` packs it.
fn array_entry<T>(ptr: *const T, cnt: c_int, std: c_int) -> impl FnOnce() -> [(i32, Datum<'static>); 3] {
    move || {
        [
            (trace::DID_PDA, Datum::Address(ptr as usize)),
            (trace::DID_PC, Datum::Int(cnt)),
            (trace::DID_PSD, Datum::Int(std)),
        ]
    }
}

/// Packs `cnt` items of `T`, `std` apart, into the active send buffer.
///
/// # Safety
/// `ptr` points to `cnt` items `std` apart (C's contract of every pack routine).
unsafe fn pk<T: Item>(name: &str, kind: i32, ptr: *const T, cnt: c_int, std: c_int) -> c_int {
    call_once(name, |lib| {
        trace::around(lib, kind, array_entry(ptr, cnt, std), trace::DID_CC, |lib| {
            let (cnt, std) = checked(ptr.is_null(), cnt, std)?;
            let b = lib.bufs.send_buffer()?;
            if b.enc == Encoding::InPlace && std == 1 {
                // SAFETY: the caller's contract above; PvmDataInPlace keeps it valid until send.
                unsafe { b.pack_in_place(ptr.cast(), cnt * std::mem::size_of::<T>()) };
            } else {
                // SAFETY: the caller's contract above: item i is at ptr + i * std.
                b.pack((0..cnt).map(|i| unsafe { ptr.add(i * std).read_unaligned() }))?;
            }
            Ok(0)
        })
    })
}

/// Unpacks `cnt` items of `T` from the active receive buffer to `ptr`, `std` apart.
///
/// # Safety
/// `ptr` points to room for `cnt` items `std` apart.
unsafe fn upk<T: Item>(name: &str, kind: i32, ptr: *mut T, cnt: c_int, std: c_int) -> c_int {
    call_once(name, |lib| {
        trace::around(lib, kind, array_entry(ptr.cast_const(), cnt, std), trace::DID_CC, |lib| {
            let (cnt, std) = checked(ptr.is_null(), cnt, std)?;
            // SAFETY: the caller's contract above: item i goes to ptr + i * std.
            lib.bufs.recv_buffer()?.unpack(cnt, |i, v: T| unsafe { ptr.add(i * std).write_unaligned(v) })?;
            Ok(0)
        })
    })
}

macro_rules! pack_routines {
    ($($pk:ident $upk:ident $c:ty => $t:ty, $pk_kind:ident $upk_kind:ident;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $pk(ptr: *mut $c, cnt: c_int, std: c_int) -> c_int {
            // SAFETY: same layout ($c is $t on this ABI); the C caller's array contract.
            unsafe { pk::<$t>(stringify!($pk), trace::$pk_kind, ptr.cast_const().cast(), cnt, std) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $upk(ptr: *mut $c, cnt: c_int, std: c_int) -> c_int {
            // SAFETY: as above.
            unsafe { upk::<$t>(stringify!($upk), trace::$upk_kind, ptr.cast(), cnt, std) }
        }
    )*};
}

pack_routines! {
    pvm_pkshort pvm_upkshort c_short => i16, TEV_PKSHORT TEV_UPKSHORT;
    pvm_pkushort pvm_upkushort c_ushort => u16, TEV_PKUSHORT TEV_UPKUSHORT;
    pvm_pkint pvm_upkint c_int => i32, TEV_PKINT TEV_UPKINT;
    pvm_pkuint pvm_upkuint c_uint => u32, TEV_PKUINT TEV_UPKUINT;
    pvm_pklong pvm_upklong c_long => i64, TEV_PKLONG TEV_UPKLONG;
    pvm_pkulong pvm_upkulong c_ulong => u64, TEV_PKULONG TEV_UPKULONG;
    pvm_pkfloat pvm_upkfloat f32 => f32, TEV_PKFLOAT TEV_UPKFLOAT;
    pvm_pkdouble pvm_upkdouble f64 => f64, TEV_PKDOUBLE TEV_UPKDOUBLE;
    pvm_pkcplx pvm_upkcplx f32 => [f32; 2], TEV_PKCPLX TEV_UPKCPLX;
    pvm_pkdcplx pvm_upkdcplx f64 => [f64; 2], TEV_PKDCPLX TEV_UPKDCPLX;
}

#[no_mangle]
pub unsafe extern "C" fn pvm_pkbyte(ptr: *mut c_char, cnt: c_int, std: c_int) -> c_int {
    // The direct way (`state::plain`): contiguous bytes into a buffer that copies them.
    if let Ok(n) = usize::try_from(cnt) {
        if std == 1 && (n == 0 || !ptr.is_null()) {
            // SAFETY: C's contract: cnt bytes at ptr (checked non-null when cnt > 0).
            let bytes =
                if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(ptr.cast_const().cast(), n) } };
            let packed = crate::state::plain(|lib| {
                let b = lib.bufs.send_buffer().ok().filter(|b| b.enc != Encoding::InPlace)?;
                b.pack_bytes(bytes);
                Some(0)
            });
            if let Some(r) = packed {
                return r;
            }
        }
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { pkbyte_general(ptr, cnt, std) }
}

/// `pvm_pkbyte` the general way: traced, in place, by stride, or failing.
///
/// # Safety
/// C's contract of `pvm_pkbyte`.
#[inline(never)]
unsafe fn pkbyte_general(ptr: *mut c_char, cnt: c_int, std: c_int) -> c_int {
    call_once("pvm_pkbyte", |lib| {
        trace::around(lib, trace::TEV_PKBYTE, array_entry(ptr, cnt, std), trace::DID_CC, |lib| {
            let (cnt, std) = checked(ptr.is_null(), cnt, std)?;
            let b = lib.bufs.send_buffer()?;
            let ptr = ptr.cast_const().cast::<u8>();
            if b.enc == Encoding::InPlace && std == 1 {
                // SAFETY: C's contract: cnt bytes at ptr, valid until send (PvmDataInPlace).
                unsafe { b.pack_in_place(ptr, cnt) };
            } else if std == 1 {
                // SAFETY: C's contract: cnt bytes at ptr (checked non-null when cnt > 0).
                b.pack_bytes(if cnt == 0 { &[] } else { unsafe { std::slice::from_raw_parts(ptr, cnt) } });
            } else {
                // SAFETY: C's contract: byte i is at ptr + i * std.
                let gathered: Vec<u8> = (0..cnt).map(|i| unsafe { *ptr.add(i * std) }).collect();
                b.pack_bytes(&gathered);
            }
            Ok(0)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_upkbyte(ptr: *mut c_char, cnt: c_int, std: c_int) -> c_int {
    // The direct way (`state::plain`): contiguous bytes out of a message packed here or held
    // in its ring cell.
    if let Ok(n) = usize::try_from(cnt) {
        if std == 1 && n > 0 && !ptr.is_null() {
            // SAFETY: C's contract: room for cnt bytes at ptr.
            let dst = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), n) };
            if let Some(r) = crate::state::plain(|lib| lib.bufs.recv_buffer().ok()?.unpack_bytes_plain(dst).map(|()| 0))
            {
                return r;
            }
        }
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { upkbyte_general(ptr, cnt, std) }
}

/// `pvm_upkbyte` the general way: traced, from the sender's memory, by stride, or failing.
///
/// # Safety
/// C's contract of `pvm_upkbyte`.
#[inline(never)]
unsafe fn upkbyte_general(ptr: *mut c_char, cnt: c_int, std: c_int) -> c_int {
    call_once("pvm_upkbyte", |lib| {
        trace::around(lib, trace::TEV_UPKBYTE, array_entry(ptr, cnt, std), trace::DID_CC, |lib| {
            let (cnt, std) = checked(ptr.is_null(), cnt, std)?;
            let ptr = ptr.cast::<u8>();
            let b = lib.bufs.recv_buffer()?;
            if std == 1 && cnt > 0 {
                // SAFETY: C's contract: room for cnt bytes at ptr.
                let dst = unsafe { std::slice::from_raw_parts_mut(ptr, cnt) };
                if let Some(r) = b.unpack_bytes_direct(dst) {
                    return r.map(|()| 0);
                }
            }
            let bytes = b.unpack_bytes(cnt)?;
            if std == 1 && cnt > 0 {
                // SAFETY: C's contract: room for cnt bytes at ptr.
                crate::small_copy::copy(unsafe { std::slice::from_raw_parts_mut(ptr, cnt) }, bytes);
            } else {
                for (i, &v) in bytes.iter().enumerate() {
                    // SAFETY: C's contract: byte i goes to ptr + i * std.
                    unsafe { *ptr.add(i * std) = v };
                }
            }
            Ok(0)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvm_pkstr(s: *mut c_char) -> c_int {
    let entry = || [(trace::DID_PDA, Datum::Address(s as usize))];
    call("pvm_pkstr", |lib| {
        trace::around(lib, trace::TEV_PKSTR, entry, trace::DID_CC, |lib| {
            if s.is_null() {
                return Err(PvmError::BadParam);
            }
            // SAFETY: C's contract: a NUL-terminated string.
            let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
            let b = lib.bufs.send_buffer()?;
            if b.enc == Encoding::InPlace {
                b.pack([i32::try_from(bytes.len() + 1).map_err(|_| PvmError::Overflow)?])?;
                // SAFETY: the string and its NUL, valid until send (PvmDataInPlace).
                unsafe { b.pack_in_place(s.cast_const().cast(), bytes.len() + 1) };
            } else {
                b.pack_str(bytes)?;
            }
            Ok(0)
        })
    })
}

/// Unpacks a string into `s` (the caller's buffer must hold it and its NUL, as in PVM).
#[no_mangle]
pub unsafe extern "C" fn pvm_upkstr(s: *mut c_char) -> c_int {
    let entry = || [(trace::DID_PDA, Datum::Address(s as usize))];
    call("pvm_upkstr", |lib| {
        trace::around(lib, trace::TEV_UPKSTR, entry, trace::DID_CC, |lib| {
            if s.is_null() {
                return Err(PvmError::BadParam);
            }
            let bytes = lib.bufs.recv_buffer()?.unpack_str()?;
            let text = bytes.strip_suffix(&[0]).unwrap_or(bytes);
            // SAFETY: C's contract: room for the packed string and its NUL.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), s.cast::<u8>(), text.len());
                *s.add(text.len()) = 0;
            }
            Ok(0)
        })
    })
}

/// The buffer calls, each traced with its argument (`TEV_DID_ME`: an encoding, `_MB`: a
/// buffer) or none, and its result (`around`).
#[no_mangle]
pub extern "C" fn pvm_initsend(enc: c_int) -> c_int {
    // The direct way (`state::plain`); a bad encoding goes the general way to fail there.
    if let Some(id) = crate::state::plain(|lib| lib.bufs.initsend(enc).ok()) {
        return id;
    }
    initsend_general(enc)
}

#[inline(never)]
fn initsend_general(enc: c_int) -> c_int {
    let entry = || [(trace::DID_ME, Datum::Int(enc))];
    call_once("pvm_initsend", |lib| {
        trace::around(lib, trace::TEV_INITSEND, entry, trace::DID_MSB, |lib| lib.bufs.initsend(enc))
    })
}

#[no_mangle]
pub extern "C" fn pvm_mkbuf(enc: c_int) -> c_int {
    let entry = || [(trace::DID_ME, Datum::Int(enc))];
    call("pvm_mkbuf", |lib| trace::around(lib, trace::TEV_MKBUF, entry, trace::DID_MB, |lib| lib.bufs.mkbuf(enc)))
}

#[no_mangle]
pub extern "C" fn pvm_freebuf(id: c_int) -> c_int {
    let entry = || [(trace::DID_MB, Datum::Int(id))];
    call("pvm_freebuf", |lib| {
        trace::around(lib, trace::TEV_FREEBUF, entry, trace::DID_CC, |lib| lib.bufs.free(id).map(|()| 0))
    })
}

#[no_mangle]
pub extern "C" fn pvm_setsbuf(id: c_int) -> c_int {
    let entry = || [(trace::DID_MB, Datum::Int(id))];
    call("pvm_setsbuf", |lib| {
        trace::around(lib, trace::TEV_SETSBUF, entry, trace::DID_MSB, |lib| lib.bufs.set_active(id, true))
    })
}

#[no_mangle]
pub extern "C" fn pvm_setrbuf(id: c_int) -> c_int {
    let entry = || [(trace::DID_MB, Datum::Int(id))];
    call("pvm_setrbuf", |lib| {
        trace::around(lib, trace::TEV_SETRBUF, entry, trace::DID_MRB, |lib| lib.bufs.set_active(id, false))
    })
}

#[no_mangle]
pub extern "C" fn pvm_getsbuf() -> c_int {
    call("pvm_getsbuf", |lib| trace::around(lib, trace::TEV_GETSBUF, || [], trace::DID_MSB, |lib| Ok(lib.bufs.sbuf)))
}

#[no_mangle]
pub extern "C" fn pvm_getrbuf() -> c_int {
    call("pvm_getrbuf", |lib| trace::around(lib, trace::TEV_GETRBUF, || [], trace::DID_MRB, |lib| Ok(lib.bufs.rbuf)))
}

/// Length in bytes, tag and source of a buffer; any out-pointer may be null.
#[no_mangle]
pub unsafe extern "C" fn pvm_bufinfo(id: c_int, bytes: *mut c_int, tag: *mut c_int, tid: *mut c_int) -> c_int {
    call("pvm_bufinfo", |lib| {
        let b = lib.bufs.get(id)?;
        let len = i32::try_from(b.len()).map_err(|_| PvmError::Overflow)?;
        // SAFETY: C's contract: each pointer is null or points to an int.
        unsafe {
            crate::state::put(bytes, len);
            crate::state::put(tag, b.tag);
            crate::state::put(tid, b.src);
        }
        Ok(0)
    })
}

/// `pvm_getminfo`: a buffer's header fields.
#[no_mangle]
pub unsafe extern "C" fn pvm_getminfo(id: c_int, info: *mut MsgInfo) -> c_int {
    call("pvm_getminfo", |lib| {
        if info.is_null() {
            return Err(PvmError::BadParam);
        }
        let b = lib.bufs.get(id)?;
        let m = MsgInfo {
            len: i32::try_from(b.len()).map_err(|_| PvmError::Overflow)?,
            ctx: b.ctx,
            tag: b.tag,
            wid: 0,
            enc: b.enc.on_wire().code(),
            crc: 0,
            src: b.src,
            dst: lib.task.as_ref().map_or(0, |t| t.tid),
        };
        // SAFETY: checked non-null; C's contract: it points to a struct pvmminfo.
        unsafe { info.write(m) };
        Ok(0)
    })
}

/// `struct pvmminfo`.
#[repr(C)]
pub struct MsgInfo {
    pub len: c_int,
    pub ctx: c_int,
    pub tag: c_int,
    pub wid: c_int,
    pub enc: c_int,
    pub crc: c_int,
    pub src: c_int,
    pub dst: c_int,
}

/// What `pvm_pkmesg` packs before a message's body, laid out as Debian's library does for a
/// message in one fragment: eight ints (length, context, tag, wait id, encoding, checksum,
/// source, destination), then the body's length again; the body follows as `pvm_pkbyte`
/// packs bytes, in its own encoding (carried, not converted).
fn header_of(b: &Buffer, dst: i32) -> Result<[i32; 9], PvmError> {
    let len = i32::try_from(b.len()).map_err(|_| PvmError::Overflow)?;
    Ok([len, b.ctx, b.tag, 0, b.enc.on_wire().code(), 0, b.src, dst, len])
}

/// The message `id` that `pvm_pkmesg` or `pvm_pkmesgbody` packs into the active send buffer:
/// its encoding on the wire, header and bytes. It may not be the send buffer itself.
fn inner_message(lib: &mut Lib, id: c_int) -> Result<(Encoding, [i32; 9], Vec<u8>), PvmError> {
    if id <= 0 {
        return Err(PvmError::BadParam);
    }
    let sbuf = lib.bufs.sbuf;
    lib.bufs.send_buffer()?;
    if id == sbuf {
        return Err(PvmError::BadParam);
    }
    let dst = lib.task.as_ref().map_or(0, |t| t.tid);
    let b = lib.bufs.get(id)?;
    Ok((b.enc.on_wire(), header_of(b, dst)?, b.wire_bytes().into_owned()))
}

/// Packs message `id` whole (header and body) into the active send buffer.
#[no_mangle]
pub extern "C" fn pvm_pkmesg(id: c_int) -> c_int {
    call("pvm_pkmesg", |lib| {
        let (_, header, body) = inner_message(lib, id)?;
        let out = lib.bufs.send_buffer()?;
        out.pack(header)?;
        out.pack_bytes(&body);
        Ok(0)
    })
}

/// Appends message `id`'s body to the active send buffer as it is: the encodings must match
/// (`PvmMismatch`), and nothing marks where it began.
#[no_mangle]
pub extern "C" fn pvm_pkmesgbody(id: c_int) -> c_int {
    call("pvm_pkmesgbody", |lib| {
        let (enc, _, body) = inner_message(lib, id)?;
        let out = lib.bufs.send_buffer()?;
        if out.enc.on_wire() != enc {
            return Err(PvmError::Mismatch);
        }
        out.append_encoded(&body);
        Ok(0)
    })
}

/// Unpacks a message that `pvm_pkmesg` packed from the active receive buffer into a new
/// buffer (not made active), with its tag, context and source: its id.
#[no_mangle]
pub extern "C" fn pvm_upkmesg() -> c_int {
    call("pvm_upkmesg", |lib| {
        let b = lib.bufs.recv_buffer()?;
        let mut h = [0i32; 9];
        b.unpack(9, |i, v: i32| h[i] = v)?;
        let [len, ctx, tag, _wid, enc, _crc, src, _dst, body_len] = h;
        let enc = Encoding::from_code(enc).map_err(|_| PvmError::BadMsg)?;
        let n = usize::try_from(body_len).ok().filter(|_| len == body_len).ok_or(PvmError::BadMsg)?;
        let body = b.unpack_bytes(n)?.to_vec();
        Ok(lib.bufs.insert(Buffer::received(enc, body, src, tag, ctx)))
    })
}

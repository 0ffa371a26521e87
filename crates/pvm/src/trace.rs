//! Tracing as Debian's library does it (lpvm's `tev.c`, the format of `pvmtev.h`): a task
//! whose trace destination (`PvmSelfTraceTid`, `PvmSelfTraceCode`, `PvmSelfTraceContext`) is
//! another task, and whose trace mask (`pvm_settmask(PvmTaskSelf)`) names an event, sends
//! that task one message per event, at the call's entry and at its exit (`PvmTraceBuffer`
//! 0), or each wrapped in buffer markers (any other size). Children inherit the settings
//! `PvmTraceTid`, `PvmTraceCode`, `PvmTraceContext`, `PvmTraceBuffer`, `PvmTraceOptions` and
//! `pvm_settmask(PvmTaskChild)` give (through their environment, as Debian's `PVMTMASK`).
//!
//! A trace message, in XDR ints (`pvm_pkint`) and strings (`pvm_pkstr`):
//!
//! ```text
//! [TEV_MARK_EVENT_BUFFER -1]                              when buffered
//! TEV_MARK_EVENT_DESC -5 | event | name                   the first of its event and end
//!     then for each datum: data id, its type, value; TEV_MARK_EVENT_DESC_END -6
//! TEV_MARK_EVENT_RECORD -7 | event                        every later one
//!     then each datum's value, in the descriptor's order; TEV_MARK_EVENT_RECORD_END -8
//! [TEV_MARK_EVENT_BUFFER_END -2]
//! ```
//!
//! `event` is the event's number or'ed with `TEV_EVENT_ENTRY` (0x4000) or `TEV_EVENT_EXIT`
//! (0x8000); the data are the time (`TEV_DID_TS`, `TEV_DID_TU`), the task (`TEV_DID_TID`),
//! then the call's own, as Debian's `lpvm.c` and `lpvmpack.c` pack them (see `send_entry`,
//! `around` and the others). A datum is an int (`TEV_DATA_INT`), an address as a long
//! (`TEV_DATA_LONG`, its low 32 bits in one XDR int, as Debian's `pvm_pklong` packs it), a
//! string (`TEV_DATA_STRING`, as `pvm_pkstr` packs it), or a list of ints (`TEV_DATA_INT |
//! TEV_DATA_ARRAY`: its count, then its values, in descriptors and records alike).
//!
//! As in Debian's library, a call made while a traced call runs is not traced itself
//! (`TEV_EXCLUSIVE`: `Tracing::inside`).
//!
//! Traced: `pvm_send`, `pvm_recv`, `pvm_nrecv`, `pvm_trecv`, `pvm_mcast`, `pvm_psend`,
//! `pvm_precv`, the pack and unpack routines (`pvm_pk*`, `pvm_upk*`), the buffer calls
//! (`pvm_initsend`, `pvm_mkbuf`, `pvm_freebuf`, `pvm_setsbuf`, `pvm_getsbuf`, `pvm_setrbuf`,
//! `pvm_getrbuf`), `pvm_packf`/`pvm_unpackf` (one event each, not one per item), `pvm_spawn`
//! and `pvm_exit`. With `PvmTraceTime`/`PvmTraceCount` the same events are counted and sent
//! as one summary (`trace_summary.rs`). Not yet: the other calls' events, and pvmd's own
//! events (newtask, spntask, endtask) from the agent.

use std::ffi::c_int;

use crate::encoding::{pack_str, Encoding};
use crate::error::PvmError;
use crate::state::Lib;
use crate::trace_summary::{self, Summary};

pub const TEV_EXIT: i32 = 7;
pub const TEV_FREEBUF: i32 = 8;
pub const TEV_GETRBUF: i32 = 12;
pub const TEV_GETSBUF: i32 = 13;
pub const TEV_INITSEND: i32 = 17;
pub const TEV_MCAST: i32 = 23;
pub const TEV_MKBUF: i32 = 24;
pub const TEV_PKBYTE: i32 = 31;
pub const TEV_PKCPLX: i32 = 32;
pub const TEV_PKDCPLX: i32 = 33;
pub const TEV_PKDOUBLE: i32 = 34;
pub const TEV_PKFLOAT: i32 = 35;
pub const TEV_PKINT: i32 = 36;
pub const TEV_PKUINT: i32 = 37;
pub const TEV_PKLONG: i32 = 38;
pub const TEV_PKULONG: i32 = 39;
pub const TEV_PKSHORT: i32 = 40;
pub const TEV_PKUSHORT: i32 = 41;
pub const TEV_PKSTR: i32 = 42;
pub const TEV_SETRBUF: i32 = 50;
pub const TEV_SETSBUF: i32 = 51;
pub const TEV_SPAWN: i32 = 52;
pub const TEV_UPKBYTE: i32 = 58;
pub const TEV_UPKCPLX: i32 = 59;
pub const TEV_UPKDCPLX: i32 = 60;
pub const TEV_UPKDOUBLE: i32 = 61;
pub const TEV_UPKFLOAT: i32 = 62;
pub const TEV_UPKINT: i32 = 63;
pub const TEV_UPKUINT: i32 = 64;
pub const TEV_UPKLONG: i32 = 65;
pub const TEV_UPKULONG: i32 = 66;
pub const TEV_UPKSHORT: i32 = 67;
pub const TEV_UPKUSHORT: i32 = 68;
pub const TEV_UPKSTR: i32 = 69;
pub const TEV_NRECV: i32 = 28;
pub const TEV_PRECV: i32 = 84;
pub const TEV_PSEND: i32 = 85;
pub const TEV_RECV: i32 = 45;
pub const TEV_SEND: i32 = 47;
pub const TEV_TRECV: i32 = 57;
pub const TEV_PACKF: i32 = 83;
pub const TEV_UNPACKF: i32 = 89;
const ENTRY: i32 = 0x4000;
const EXIT: i32 = 0x8000;
const MARK_BUFFER: i32 = -1;
const MARK_BUFFER_END: i32 = -2;
pub(crate) const MARK_DESC: i32 = -5;
pub(crate) const MARK_DESC_END: i32 = -6;
const MARK_RECORD: i32 = -7;
const MARK_RECORD_END: i32 = -8;
pub(crate) const DATA_INT: i32 = 6;
const DATA_LONG: i32 = 8;
pub(crate) const DATA_STRING: i32 = 12;
pub(crate) const DATA_ARRAY: i32 = 0x80;
/// Data ids (`TEV_DID_*`).
pub const DID_CC: i32 = 4;
const DID_MC: i32 = 45;
const DID_MCX: i32 = 46;
pub const DID_MB: i32 = 47;
const DID_MNB: i32 = 48;
const DID_SRC: i32 = 49;
const DID_DST: i32 = 50;
const DID_MDL: i32 = 51;
pub const DID_MRB: i32 = 55;
pub const DID_MSB: i32 = 56;
pub const DID_ME: i32 = 57;
pub const DID_PDA: i32 = 71;
const DID_PDT: i32 = 72;
pub const DID_PC: i32 = 73;
pub const DID_PSD: i32 = 74;
pub const DID_MTS: i32 = 52;
pub const DID_MTU: i32 = 53;
const DID_RST: i32 = 78;
const DID_RMC: i32 = 79;
const DID_RCX: i32 = 80;
const DID_PF: i32 = 76;
const DID_SE: i32 = 82;
const DID_SF: i32 = 83;
const DID_SW: i32 = 84;
const DID_SC: i32 = 85;
const DID_STL: i32 = 86;
pub(crate) const DID_TID: i32 = 88;
pub(crate) const DID_TS: i32 = 106;
pub(crate) const DID_TU: i32 = 107;
/// `PvmTraceFull`: every event as a message (`PvmTraceTime`, `PvmTraceCount`: summaries,
/// `trace_summary.rs`).
pub(crate) const TRACE_FULL: i32 = 1;

/// `pvm_setopt` numbers: a task's own trace destination, and its children's.
pub(crate) const SELF: Options = Options { tid: 14, code: 15, buffer: 16, options: 17, context: 24 };
const CHILD: Options = Options { tid: 6, code: 7, buffer: 8, options: 9, context: 22 };

pub(crate) struct Options {
    pub tid: usize,
    pub code: usize,
    pub buffer: usize,
    pub options: usize,
    pub context: usize,
}

/// Bytes of a trace mask (`Pvmtmask`): 35 characters, 4 events each in the low bits of `@`,
/// and a NUL.
pub const MASK_BYTES: usize = 36;
/// Where children's trace settings come in (`tid,code,context,buffer,options`).
const TRACE_ENV: &str = "BB_PVM_TRACE";
/// Debian's name for the mask a child inherits.
const MASK_ENV: &str = "PVMTMASK";

/// A task's trace masks and which descriptors it has sent (to which tracer).
pub struct Tracing {
    /// `PvmTaskSelf`'s and `PvmTaskChild`'s.
    pub masks: [[u8; MASK_BYTES]; 2],
    /// Per event, bit 1: its entry's descriptor sent, bit 2: its exit's, to `described_to`.
    described: [u8; 128],
    described_to: i32,
    /// A traced call is running (`around`): the calls it makes are not traced.
    inside: bool,
    /// `PvmTraceTime`/`PvmTraceCount`: what each event added up to since the last summary.
    pub(crate) summary: Summary,
}

impl Tracing {
    pub const fn new() -> Tracing {
        Tracing {
            masks: [empty_mask(); 2],
            described: [0; 128],
            described_to: 0,
            inside: false,
            summary: Summary::new(),
        }
    }
}

impl Default for Tracing {
    fn default() -> Self {
        Self::new()
    }
}

/// `TEV_MASK_INIT`: no event.
const fn empty_mask() -> [u8; MASK_BYTES] {
    let mut m = [b'@'; MASK_BYTES];
    m[MASK_BYTES - 1] = 0;
    m
}

fn masked(mask: &[u8; MASK_BYTES], kind: i32) -> bool {
    let k = kind as usize;
    k / 4 < MASK_BYTES - 1 && mask[k / 4] & (1 << (k & 3)) != 0
}

/// Whether this task traces anything: one look on every traced call's way.
pub fn on(lib: &Lib) -> bool {
    lib.opts[SELF.tid] > 0
}

/// The environment a child gets from its spawner's children's settings (empty when they
/// trace nothing).
pub fn child_env(lib: &Lib) -> Vec<String> {
    if lib.opts[CHILD.tid] <= 0 {
        return Vec::new();
    }
    let o = &lib.opts;
    let mask = &lib.tracing.masks[1];
    vec![
        format!(
            "{TRACE_ENV}={},{},{},{},{}",
            o[CHILD.tid], o[CHILD.code], o[CHILD.context], o[CHILD.buffer], o[CHILD.options]
        ),
        format!("{MASK_ENV}={}", String::from_utf8_lossy(&mask[..MASK_BYTES - 1])),
    ]
}

/// A spawned task's trace settings, from its spawner: its own, and by default its
/// children's. The variables are dropped, as the tid is.
pub fn inherit(lib: &mut Lib) {
    let Ok(text) = std::env::var(TRACE_ENV) else { return };
    std::env::remove_var(TRACE_ENV);
    let got: Vec<i32> = text.split(',').filter_map(|v| v.parse().ok()).collect();
    let [tid, code, context, buffer, options] = got[..] else { return };
    for o in [SELF, CHILD] {
        let slots = [o.tid, o.code, o.context, o.buffer, o.options];
        for (s, v) in slots.into_iter().zip([tid, code, context, buffer, options]) {
            lib.opts[s] = v;
        }
    }
    if let Ok(m) = std::env::var(MASK_ENV) {
        std::env::remove_var(MASK_ENV);
        let mut mask = empty_mask();
        for (d, s) in mask.iter_mut().zip(m.bytes().take(MASK_BYTES - 1)) {
            *d = s;
        }
        lib.tracing.masks = [mask; 2];
    }
}

/// One datum of an event (see the top).
#[derive(Clone, Copy)]
pub enum Datum<'a> {
    Int(i32),
    Address(usize),
    Ints(&'a [i32]),
    Str(&'a [u8]),
}

impl Datum<'_> {
    fn data_type(&self) -> i32 {
        match self {
            Datum::Int(_) => DATA_INT,
            Datum::Address(_) => DATA_LONG,
            Datum::Ints(_) => DATA_INT | DATA_ARRAY,
            Datum::Str(_) => DATA_STRING,
        }
    }

    fn pack(&self, out: &mut Vec<u8>) {
        let mut int = |v: i32| out.extend_from_slice(&v.to_be_bytes());
        match *self {
            Datum::Int(v) => int(v),
            Datum::Address(a) => int(a as i32),
            Datum::Ints(vs) => {
                int(vs.len() as i32);
                vs.iter().for_each(|&v| int(v));
            }
            Datum::Str(s) => {
                let _ = pack_str(Encoding::Xdr, out, s);
            }
        }
    }
}

/// Sends the tracer one event of `kind` (`entry` or exit) with `data` (ints: id, value) after
/// the header, when this task's settings and mask ask for it.
fn event(lib: &mut Lib, kind: i32, entry: bool, data: &[(i32, i32)]) {
    let data: Vec<(i32, Datum<'_>)> = data.iter().map(|&(d, v)| (d, Datum::Int(v))).collect();
    event_of(lib, kind, entry, &data)
}

/// As [`event`], with data of any kind. A trace message that cannot go is dropped, as
/// Debian's library drops it: tracing never fails a call.
pub fn event_of(lib: &mut Lib, kind: i32, entry: bool, data: &[(i32, Datum<'_>)]) {
    let tracer = lib.opts[SELF.tid];
    let options = lib.opts[SELF.options];
    if tracer <= 0 || lib.tracing.inside || !masked(&lib.tracing.masks[0], kind) {
        return;
    }
    let (code, context, buffered) = (lib.opts[SELF.code], lib.opts[SELF.context], lib.opts[SELF.buffer] != 0);
    let Some(task) = lib.task.as_mut() else { return };
    if task.tid == tracer {
        return;
    }
    if trace_summary::summarizes(options) {
        trace_summary::tally(&mut lib.tracing.summary, options, kind, entry);
        return;
    }
    if options != 0 && options != TRACE_FULL {
        return;
    }
    let t = &mut lib.tracing;
    if t.described_to != tracer {
        t.described = [0; 128];
        t.described_to = tracer;
    }
    let end = if entry { 1 } else { 2 };
    let desc = t.described[kind as usize & 127] & end == 0;
    t.described[kind as usize & 127] |= end;

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut out = Vec::with_capacity(256);
    let int = |out: &mut Vec<u8>, v: i32| out.extend_from_slice(&v.to_be_bytes());
    if buffered {
        int(&mut out, MARK_BUFFER);
    }
    int(&mut out, if desc { MARK_DESC } else { MARK_RECORD });
    int(&mut out, kind | if entry { ENTRY } else { EXIT });
    if desc {
        let _ = pack_str(Encoding::Xdr, &mut out, name(kind).as_bytes());
    }
    let header = [
        (DID_TS, Datum::Int(now.as_secs() as i32)),
        (DID_TU, Datum::Int(now.subsec_micros() as i32)),
        (DID_TID, Datum::Int(task.tid)),
    ];
    for (did, v) in header.iter().chain(data) {
        if desc {
            int(&mut out, *did);
            int(&mut out, v.data_type());
        }
        v.pack(&mut out);
    }
    int(&mut out, if desc { MARK_DESC_END } else { MARK_RECORD_END });
    if buffered {
        int(&mut out, MARK_BUFFER_END);
    }
    send_to_tracer(task, tracer, code, context, &out);
}

/// Sends a trace message, in the trace context; one that cannot go is dropped, as Debian's
/// library drops it: tracing never fails a call.
pub(crate) fn send_to_tracer(task: &mut crate::task::Task, tracer: i32, code: i32, context: i32, out: &[u8]) {
    let ctx = std::mem::replace(&mut task.ctx, context);
    let _ = task.send(tracer, code, Encoding::Xdr.code(), out);
    task.ctx = ctx;
}

/// The event's name as Debian's tracers know it (`pvmtevinfo`).
pub(crate) fn name(kind: i32) -> &'static str {
    match kind {
        TEV_NRECV => "nrecv",
        TEV_RECV => "recv",
        TEV_SEND => "send",
        TEV_TRECV => "trecv",
        TEV_INITSEND => "initsend",
        TEV_MCAST => "mcast",
        TEV_PRECV => "precv",
        TEV_PSEND => "psend",
        TEV_EXIT => "exit",
        TEV_FREEBUF => "freebuf",
        TEV_GETRBUF => "getrbuf",
        TEV_GETSBUF => "getsbuf",
        TEV_MKBUF => "mkbuf",
        TEV_SETRBUF => "setrbuf",
        TEV_SETSBUF => "setsbuf",
        TEV_SPAWN => "spawn",
        TEV_PKBYTE => "pkbyte",
        TEV_PKCPLX => "pkcplx",
        TEV_PKDCPLX => "pkdcplx",
        TEV_PKDOUBLE => "pkdouble",
        TEV_PKFLOAT => "pkfloat",
        TEV_PKINT => "pkint",
        TEV_PKUINT => "pkuint",
        TEV_PKLONG => "pklong",
        TEV_PKULONG => "pkulong",
        TEV_PKSHORT => "pkshort",
        TEV_PKUSHORT => "pkushort",
        TEV_PKSTR => "pkstr",
        TEV_UPKBYTE => "upkbyte",
        TEV_UPKCPLX => "upkcplx",
        TEV_UPKDCPLX => "upkdcplx",
        TEV_UPKDOUBLE => "upkdouble",
        TEV_UPKFLOAT => "upkfloat",
        TEV_UPKINT => "upkint",
        TEV_UPKUINT => "upkuint",
        TEV_UPKLONG => "upklong",
        TEV_UPKULONG => "upkulong",
        TEV_UPKSHORT => "upkshort",
        TEV_UPKUSHORT => "upkushort",
        TEV_UPKSTR => "upkstr",
        TEV_PACKF => "packf",
        TEV_UNPACKF => "unpackf",
        _ => "",
    }
}

/// Runs call `f` of event `kind` as Debian's library traces it when this task traces: its
/// entry with the data `entry` gives, then, with the calls it makes untraced, its exit with
/// one datum, its result or error code as data id `exit` (`TEV_DID_CC`, `_MB`, `_MSB`,
/// `_MRB`). Not tracing, one look at the settings and `f`: `f` is called in one place only,
/// so that it is inlined here (called twice, a pack routine's body stayed a call of its own
/// and cost ~55 instructions more).
#[inline(always)]
pub fn around<const N: usize>(
    lib: &mut Lib,
    kind: i32,
    entry: impl FnOnce() -> [(i32, Datum<'static>); N],
    exit: i32,
    f: impl FnOnce(&mut Lib) -> Result<c_int, PvmError>,
) -> Result<c_int, PvmError> {
    let traced = on(lib) && enter(lib, kind, &entry());
    let r = f(lib);
    if traced {
        leave(lib, kind, exit, &r);
    }
    r
}

/// A traced call's entry event, unless it runs inside another traced call: whether it was
/// traced (and the calls it makes are not).
#[cold]
#[inline(never)]
fn enter(lib: &mut Lib, kind: i32, entry: &[(i32, Datum<'_>)]) -> bool {
    if lib.tracing.inside {
        return false;
    }
    event_of(lib, kind, true, entry);
    lib.tracing.inside = true;
    true
}

/// A traced call's exit event: its result as data id `exit`.
#[cold]
#[inline(never)]
fn leave(lib: &mut Lib, kind: i32, exit: i32, r: &Result<c_int, PvmError>) {
    lib.tracing.inside = false;
    let cc = match r {
        Ok(v) => *v,
        Err(e) => e.code(),
    };
    event_of(lib, kind, false, &[(exit, Datum::Int(cc))]);
}

/// `pvm_spawn`'s entry: the program, where, the flags, the count.
pub fn spawn_entry(lib: &mut Lib, file: &[u8], place: &[u8], flags: i32, count: i32) {
    let data = [
        (DID_SE, Datum::Str(file)),
        (DID_SW, Datum::Str(place)),
        (DID_SF, Datum::Int(flags)),
        (DID_SC, Datum::Int(count)),
    ];
    event_of(lib, TEV_SPAWN, true, &data);
}

/// `pvm_spawn`'s exit: its result, then the tids of the tasks it started.
pub fn spawn_exit(lib: &mut Lib, cc: i32, tids: &[i32]) {
    let started = &tids[..usize::try_from(cc).unwrap_or(0).min(tids.len())];
    event_of(lib, TEV_SPAWN, false, &[(DID_CC, Datum::Int(cc)), (DID_STL, Datum::Ints(started))]);
}

fn context(lib: &Lib) -> i32 {
    lib.task.as_ref().map_or(0, |t| t.ctx)
}

/// `pvm_send`'s entry: the send buffer's bytes, the destination, the tag, the context.
#[cold]
#[inline(never)]
pub fn send_entry(lib: &mut Lib, dst: i32, tag: i32) {
    let bytes = lib.bufs.send_buffer().map_or(-1, |b| b.len() as i32);
    let ctx = context(lib);
    event(lib, TEV_SEND, true, &[(DID_MNB, bytes), (DID_DST, dst), (DID_MC, tag), (DID_MCX, ctx)]);
}

/// `pvm_send`'s exit: its result.
#[cold]
#[inline(never)]
pub fn send_exit(lib: &mut Lib, cc: i32) {
    event(lib, TEV_SEND, false, &[(DID_CC, cc)]);
}

/// A receive's entry (`kind`: `pvm_recv`, `pvm_nrecv`, `pvm_trecv`): the source and tag
/// asked for, the context, then `more` (`pvm_trecv`'s timeout).
#[cold]
#[inline(never)]
pub fn recv_entry(lib: &mut Lib, kind: i32, src: i32, tag: i32, more: &[(i32, i32)]) {
    let ctx = context(lib);
    let mut data = vec![(DID_RST, src), (DID_RMC, tag), (DID_RCX, ctx)];
    data.extend_from_slice(more);
    event(lib, kind, true, &data);
}

/// A receive's exit: the buffer (or 0, or an error), its bytes, tag, the context, its
/// source.
#[cold]
#[inline(never)]
pub fn recv_exit(lib: &mut Lib, kind: i32, cc: i32) {
    let (bytes, tag, src) = match lib.bufs.get(cc) {
        Ok(b) if cc > 0 => (b.len() as i32, b.tag, b.src),
        _ => (-1, -1, -1),
    };
    let ctx = context(lib);
    event(lib, kind, false, &[(DID_MB, cc), (DID_MNB, bytes), (DID_MC, tag), (DID_MCX, ctx), (DID_SRC, src)]);
}

/// A call's exit that says only its result (`TEV_DID_CC`).
pub fn result_exit(lib: &mut Lib, kind: i32, cc: i32) {
    event(lib, kind, false, &[(DID_CC, cc)]);
}

/// `pvm_mcast`'s entry: the send buffer's bytes, the tag, the context, the tids as given.
pub fn mcast_entry(lib: &mut Lib, tids: &[i32], tag: i32) {
    let bytes = lib.bufs.send_buffer().map_or(-1, |b| b.len() as i32);
    let ctx = context(lib);
    let data = [
        (DID_MNB, Datum::Int(bytes)),
        (DID_MC, Datum::Int(tag)),
        (DID_MCX, Datum::Int(ctx)),
        (DID_MDL, Datum::Ints(tids)),
    ];
    event_of(lib, TEV_MCAST, true, &data);
}

/// `pvm_psend`'s entry: the destination, tag, context, and the program's array (address,
/// count, type).
pub fn psend_entry(lib: &mut Lib, dst: i32, tag: i32, addr: usize, count: i32, datatype: i32) {
    let ctx = context(lib);
    let data = [
        (DID_DST, Datum::Int(dst)),
        (DID_MC, Datum::Int(tag)),
        (DID_MCX, Datum::Int(ctx)),
        (DID_PDA, Datum::Address(addr)),
        (DID_PC, Datum::Int(count)),
        (DID_PDT, Datum::Int(datatype)),
    ];
    event_of(lib, TEV_PSEND, true, &data);
}

/// `pvm_precv`'s entry: the source and tag asked for, the context, the program's array.
pub fn precv_entry(lib: &mut Lib, src: i32, tag: i32, addr: usize, count: i32, datatype: i32) {
    let ctx = context(lib);
    let data = [
        (DID_RST, Datum::Int(src)),
        (DID_RMC, Datum::Int(tag)),
        (DID_RCX, Datum::Int(ctx)),
        (DID_PDA, Datum::Address(addr)),
        (DID_PC, Datum::Int(count)),
        (DID_PDT, Datum::Int(datatype)),
    ];
    event_of(lib, TEV_PRECV, true, &data);
}

/// `pvm_precv`'s exit: its result, then what came (bytes, tag, context, source; -1 each when
/// nothing did).
pub fn precv_exit(lib: &mut Lib, cc: i32, got: Option<(usize, i32, i32)>) {
    let ctx = context(lib);
    let (bytes, tag, src) = got.map_or((-1, -1, -1), |(n, tag, src)| (n as i32, tag, src));
    event(lib, TEV_PRECV, false, &[(DID_CC, cc), (DID_MNB, bytes), (DID_MC, tag), (DID_MCX, ctx), (DID_SRC, src)]);
}

/// `pvm_packf`'s and `pvm_unpackf`'s entry (`packf.c`): the format, as Debian's library
/// traces it (`TEV_DID_PF`); the pack routines they call are not traced, so that the tracer
/// sees one event a call. Returns whether it was traced, for [`bb_pvm_trace_format_exit`].
///
/// # Safety
/// `fmt` is a C string.
#[no_mangle]
pub unsafe extern "C" fn bb_pvm_trace_format_entry(kind: c_int, fmt: *const std::ffi::c_char) -> c_int {
    let name = if kind == TEV_UNPACKF { "pvm_unpackf" } else { "pvm_packf" };
    crate::state::call(name, |lib| {
        if !on(lib) || (kind != TEV_PACKF && kind != TEV_UNPACKF) {
            return Ok(0);
        }
        // SAFETY: the caller's contract; packf.c refuses a null format before.
        let f = unsafe { std::ffi::CStr::from_ptr(fmt) }.to_bytes();
        Ok(c_int::from(enter(lib, kind, &[(DID_PF, Datum::Str(f))])))
    })
}

/// `pvm_packf`'s and `pvm_unpackf`'s exit: their result, when their entry was traced.
#[no_mangle]
pub extern "C" fn bb_pvm_trace_format_exit(kind: c_int, traced: c_int, cc: c_int) {
    if traced == 0 {
        return;
    }
    let name = if kind == TEV_UNPACKF { "pvm_unpackf" } else { "pvm_packf" };
    let _ = crate::state::call(name, |lib| {
        leave(lib, kind, DID_CC, &Ok(cc));
        Ok(0)
    });
}

/// `pvm_settmask` (`who` 0: this task's, 1: its children's).
pub fn set_mask(lib: &mut Lib, who: i32, mask: &[u8; MASK_BYTES]) -> Result<(), crate::error::PvmError> {
    let slot = usize::try_from(who).ok().filter(|&w| w < 2).ok_or(crate::error::PvmError::BadParam)?;
    lib.tracing.masks[slot] = *mask;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_names_four_events_a_character() {
        let mut m = empty_mask();
        assert!(!masked(&m, TEV_SEND));
        m[TEV_SEND as usize / 4] |= 1 << (TEV_SEND & 3);
        assert!(masked(&m, TEV_SEND));
        assert!(!masked(&m, TEV_RECV) && !masked(&m, TEV_SEND - 1) && !masked(&m, TEV_SEND + 1));
        assert!(!masked(&m, 1000), "an event beyond the mask is not traced");
    }
}

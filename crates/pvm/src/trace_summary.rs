//! `PvmTraceTime` and `PvmTraceCount` (`pvm_setopt(PvmSelfTraceOptions)`, or
//! `PvmTraceOptions` for children): instead of a message per event, the task keeps, for each
//! traced event, how many times it happened (and with `PvmTraceTime`, the time spent in the
//! call) and sends its tracer one summary when it leaves (`pvm_exit`) or changes its trace
//! buffering or options, as Debian's library does (lpvm's `tev.c`, `tev_flush`). The summary
//! is one event descriptor, in XDR ints and strings as every trace message:
//!
//! ```text
//! TEV_MARK_EVENT_DESC -5 | TEV_TIMING 106 or TEV_PROFILING 107 | "timing" or "profiling"
//!     TEV_DID_TS 106, TEV_DATA_INT 6, seconds      TEV_DID_TU 107, 6, microseconds
//!     TEV_DID_TID 88, 6, this task
//!     TEV_DID_VCT 120, 6, n                          the events that happened, in event order
//!     TEV_DID_VID 121, TEV_DATA_STRING|ARRAY 140, n, each event's name (as pvm_pkstr)
//!     [TEV_DID_TGS 108, 134, n, seconds each         PvmTraceTime only: time in the call
//!      TEV_DID_TGU 109, 134, n, microseconds each]
//!     TEV_DID_PRF 77, 134, n, count each
//! TEV_MARK_EVENT_DESC_END -6
//! ```
//!
//! The event ids carry no entry/exit bit and no buffer markers surround them (Debian's
//! `tev_flush` packs none). A summary goes even when nothing was counted (n = 0), as Debian's.
//!
//! A count counts trace events, as Debian's does: a call traced at its entry and its exit
//! counts 2, `pvm_exit` (entry only) 1; so a tool that reads either library sees the same
//! numbers. The time differs on purpose: Debian's library keeps only the span of the last
//! event's own tracing (its `tev_fin` overwrites the total with the time since that event's
//! `tev_begin`), which says nothing about the call; this one adds up, over every call, the
//! time from its entry to its exit, what `PvmTraceTime` is documented to give ("PVM routine
//! timings").

use crate::encoding::{pack_str, Encoding};
use crate::state::Lib;

/// `PvmTraceTime`, `PvmTraceCount` (pvm3.h's trace options).
pub const TRACE_TIME: i32 = 2;
pub const TRACE_COUNT: i32 = 3;
const TEV_TIMING: i32 = 106;
const TEV_PROFILING: i32 = 107;
const DID_PRF: i32 = 77;
const DID_TGS: i32 = 108;
const DID_TGU: i32 = 109;
const DID_VCT: i32 = 120;
const DID_VID: i32 = 121;
/// Event numbers run to `TEV_MAX` (108).
const EVENTS: usize = 128;

/// What one event adds up to between summaries.
#[derive(Clone, Copy)]
struct Tally {
    count: i32,
    /// Microseconds inside the call, over all its calls.
    total_us: u64,
    /// When its running call entered (microseconds since the epoch), 0 when none runs.
    entered_us: u64,
}

/// Every event's tally (inside `Tracing`).
pub struct Summary {
    tallies: [Tally; EVENTS],
}

impl Summary {
    pub const fn new() -> Summary {
        Summary { tallies: [Tally { count: 0, total_us: 0, entered_us: 0 }; EVENTS] }
    }
}

impl Default for Summary {
    fn default() -> Self {
        Self::new()
    }
}

fn now_us() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_micros() as u64
}

/// Whether `options` (a task's `PvmSelfTraceOptions`) is a summary mode.
pub fn summarizes(options: i32) -> bool {
    options == TRACE_TIME || options == TRACE_COUNT
}

/// Counts one event of `kind` (its entry or its exit); with `PvmTraceTime`, an exit adds the
/// time since its entry.
pub fn tally(summary: &mut Summary, options: i32, kind: i32, entry: bool) {
    let Some(t) = usize::try_from(kind).ok().and_then(|k| summary.tallies.get_mut(k)) else { return };
    t.count = t.count.saturating_add(1);
    if options != TRACE_TIME {
        return;
    }
    let now = now_us();
    if entry {
        t.entered_us = now;
    } else if t.entered_us != 0 {
        t.total_us += now.saturating_sub(t.entered_us);
        t.entered_us = 0;
    }
}

/// Sends the tracer the summary of what was counted since the last one, and starts again
/// (when this task summarizes, to a tracer other than itself). A summary that cannot go is
/// dropped: tracing never fails a call.
pub fn flush(lib: &mut Lib, tracer: i32, code: i32, context: i32, options: i32, name: fn(i32) -> &'static str) {
    if tracer <= 0 || !summarizes(options) {
        return;
    }
    let Some(task) = lib.task.as_mut() else { return };
    if task.tid == tracer {
        return;
    }
    let timed = options == TRACE_TIME;
    let mut kinds = Vec::new();
    for (k, t) in lib.tracing.summary.tallies.iter_mut().enumerate() {
        if t.count > 0 {
            kinds.push((k as i32, t.count, t.total_us));
            t.count = 0;
            t.total_us = 0;
        }
    }
    let mut out = Vec::with_capacity(256);
    let int = |out: &mut Vec<u8>, v: i32| out.extend_from_slice(&v.to_be_bytes());
    let ints = |out: &mut Vec<u8>, did: i32, vs: &mut dyn Iterator<Item = i32>| {
        int(out, did);
        int(out, crate::trace::DATA_INT | crate::trace::DATA_ARRAY);
        int(out, kinds.len() as i32);
        vs.for_each(|v| int(out, v));
    };
    let (event, event_name) = if timed { (TEV_TIMING, "timing") } else { (TEV_PROFILING, "profiling") };
    int(&mut out, crate::trace::MARK_DESC);
    int(&mut out, event);
    let _ = pack_str(Encoding::Xdr, &mut out, event_name.as_bytes());
    let now = now_us();
    for (did, v) in [
        (crate::trace::DID_TS, (now / 1_000_000) as i32),
        (crate::trace::DID_TU, (now % 1_000_000) as i32),
        (crate::trace::DID_TID, task.tid),
    ] {
        int(&mut out, did);
        int(&mut out, crate::trace::DATA_INT);
        int(&mut out, v);
    }
    int(&mut out, DID_VCT);
    int(&mut out, crate::trace::DATA_INT);
    int(&mut out, kinds.len() as i32);
    int(&mut out, DID_VID);
    int(&mut out, crate::trace::DATA_STRING | crate::trace::DATA_ARRAY);
    int(&mut out, kinds.len() as i32);
    for &(k, _, _) in &kinds {
        let _ = pack_str(Encoding::Xdr, &mut out, name(k).as_bytes());
    }
    if timed {
        ints(&mut out, DID_TGS, &mut kinds.iter().map(|&(_, _, us)| (us / 1_000_000) as i32));
        ints(&mut out, DID_TGU, &mut kinds.iter().map(|&(_, _, us)| (us % 1_000_000) as i32));
    }
    ints(&mut out, DID_PRF, &mut kinds.iter().map(|&(_, n, _)| n));
    int(&mut out, crate::trace::MARK_DESC_END);
    crate::trace::send_to_tracer(task, tracer, code, context, &out);
}

/// Sends this task's tracer the summary of its events when it traces by `PvmTraceTime` or
/// `PvmTraceCount` (`trace_summary.rs`): at `pvm_exit`, and before its trace buffering or
/// options change.
pub fn flush_summary(lib: &mut Lib) {
    let o = &lib.opts;
    let (tracer, code, context, options) = (
        o[crate::trace::SELF.tid],
        o[crate::trace::SELF.code],
        o[crate::trace::SELF.context],
        o[crate::trace::SELF.options],
    );
    flush(lib, tracer, code, context, options, crate::trace::name);
}

/// `pvm_setopt` of this task's own trace buffering or options, as Debian's library does it:
/// what was summarized under the old settings goes first, and an option other than
/// `PvmTraceFull`, `PvmTraceTime`, `PvmTraceCount` is refused. `None`: not one of these.
pub fn set_own_option(lib: &mut Lib, what: usize, val: i32) -> Option<Result<i32, crate::error::PvmError>> {
    if what != crate::trace::SELF.buffer && what != crate::trace::SELF.options {
        return None;
    }
    flush_summary(lib);
    if what == crate::trace::SELF.options && val != crate::trace::TRACE_FULL && !summarizes(val) {
        return Some(Err(crate::error::PvmError::BadParam));
    }
    Some(Ok(std::mem::replace(&mut lib.opts[what], val)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_counts_its_entry_and_its_exit_and_times_between_them() {
        let mut s = Summary::new();
        tally(&mut s, TRACE_TIME, 47, true);
        std::thread::sleep(std::time::Duration::from_millis(2));
        tally(&mut s, TRACE_TIME, 47, false);
        assert_eq!(s.tallies[47].count, 2);
        assert!(s.tallies[47].total_us >= 2000, "{} us", s.tallies[47].total_us);
        tally(&mut s, TRACE_COUNT, 7, true);
        assert_eq!((s.tallies[7].count, s.tallies[7].total_us), (1, 0));
        tally(&mut s, TRACE_COUNT, 1000, true); // beyond every event: ignored
    }
}

//! Two-phase collective I/O, as ROMIO does it (Thakur, Gropp and Lusk, "Data Sieving and
//! Collective I/O in ROMIO", 1999; `ad_write_coll.c`): a few ranks, the aggregators, each own
//! one contiguous domain of the span the collective access covers; in rounds of
//! `cb_buffer_size` bytes of its domain, every rank sends each aggregator the pieces of its data
//! that fall in the aggregator's window (an all-to-all), and the aggregator writes the window
//! with a few large pwrites; a read runs the other way (the aggregator reads the covered part of
//! its window once and sends each rank its pieces). Many small interleaved pieces from many
//! ranks become few large file accesses, which is what a parallel file system wants.
//!
//! When (hints `romio_cb_write` / `romio_cb_read`): "enable" always, "disable" never,
//! "automatic" (the default) when the ranks' accesses interleave and the ranks span several
//! hosts; on one host the page cache already merges them, and the exchange would only add
//! copies (bench/peers/mpiio.sh measures both). Aggregators: `cb_nodes` of them (default one per
//! host), the first ranks of distinct hosts, then others.

use std::os::unix::fs::FileExt;

use super::access::{read_full, Access};
use super::shared::RangeLock;
use super::{allgather_words, io_error, File};
use crate::error::Res;

/// A piece of one rank's access: file offset, data offset, length.
type Piece = (u64, usize, usize);

/// One rank's access: its pieces in file order.
pub(crate) type Runs = [Piece];

/// How a collective access is spread over the aggregators.
pub(crate) struct Plan {
    /// The aggregators' ranks, in domain order.
    aggregators: Vec<usize>,
    /// The span every rank's access lies in, cut into equal domains.
    start: u64,
    domain: u64,
    /// Bytes of its domain an aggregator handles per round.
    window: u64,
}

impl Plan {
    /// Aggregator `a`'s whole domain, or None when it is empty.
    fn domain_of(&self, a: usize, end: u64) -> Option<(u64, u64)> {
        let lo = self.start + a as u64 * self.domain;
        let hi = (lo + self.domain).min(end);
        (lo < hi).then_some((lo, hi))
    }

    /// Aggregator `a`'s window in round `k`, or None past the end of its domain.
    fn window(&self, a: usize, k: u64, end: u64) -> Option<(u64, u64)> {
        let lo = self.start + a as u64 * self.domain + k * self.window;
        let hi = (lo + self.window).min(self.start + (a as u64 + 1) * self.domain).min(end);
        (lo < hi).then_some((lo, hi))
    }
}

/// Whether and how to aggregate a collective access (collective: every rank calls it, also one
/// whose access failed before, with `runs` None, so that the ranks agree; then none aggregates).
pub(crate) fn agree(f: &File, runs: Option<&Runs>, what: Access) -> Res<Option<(Plan, u64)>> {
    let key = if what == Access::Write { "romio_cb_write" } else { "romio_cb_read" };
    let mode = f.state().hints.iter().find(|(k, _)| k == key).map_or_else(|| "automatic".into(), |(_, v)| v.clone());
    let cb_nodes = f.hint_number("cb_nodes").unwrap_or(1);
    let cb_buffer = f.hint_number("cb_buffer_size").unwrap_or(16 << 20) as u64;
    let hosts = host_order(f);
    let several_hosts = hosts.iter().any(|&(h, _)| h != hosts[0].0);
    // Every rank decides these alike without asking the others.
    if mode == "disable" || f.comm.size() == 1 || (mode != "enable" && !several_hosts) {
        return Ok(None);
    }
    let (lo, hi) = match runs {
        Some(r) if !r.is_empty() => {
            (r[0].0 as i64, r.iter().map(|&(at, _, len)| (at + len as u64) as i64).max().unwrap_or(0))
        }
        Some(_) => (i64::MAX, -1),
        None => (-2, -2),
    };
    let all = allgather_words(&f.comm, &[lo, hi])?;
    let ranges: Vec<(i64, i64)> = all.chunks(2).map(|w| (w[0], w[1])).collect();
    if ranges.iter().any(|&(l, _)| l == -2) {
        return Ok(None);
    }
    let mut busy: Vec<(i64, i64)> = ranges.iter().copied().filter(|&(l, h)| l < h).collect();
    if busy.is_empty() {
        return Ok(None);
    }
    busy.sort_unstable();
    let interleaved = busy.windows(2).any(|w| w[1].0 < w[0].1);
    if mode != "enable" && !interleaved {
        return Ok(None);
    }
    let start = busy[0].0 as u64;
    let end = busy.iter().map(|r| r.1).max().unwrap_or(0) as u64;
    let aggregators = pick_aggregators(&hosts, cb_nodes.clamp(1, f.comm.size()));
    let domain = (end - start).div_ceil(aggregators.len() as u64).max(1);
    Ok(Some((Plan { aggregators, start, domain, window: cb_buffer.max(1) }, end)))
}

/// Every rank's host, as (host, rank), in rank order.
fn host_order(f: &File) -> Vec<(usize, usize)> {
    (0..f.comm.size()).map(|r| (f.comm.host_of(r).unwrap_or(0), r)).collect()
}

/// `n` aggregators: the first rank of each host in turn, then the second of each, and so on,
/// so that they spread over the hosts (ROMIO's `cb_config_list` "*:1" and more as asked).
fn pick_aggregators(hosts: &[(usize, usize)], n: usize) -> Vec<usize> {
    let mut by_host: Vec<(usize, Vec<usize>)> = Vec::new();
    for &(h, r) in hosts {
        match by_host.iter_mut().find(|(host, _)| *host == h) {
            Some((_, ranks)) => ranks.push(r),
            None => by_host.push((h, vec![r])),
        }
    }
    let mut picked = Vec::with_capacity(n);
    for level in 0.. {
        let before = picked.len();
        for (_, ranks) in &by_host {
            if picked.len() < n {
                if let Some(&r) = ranks.get(level) {
                    picked.push(r);
                }
            }
        }
        if picked.len() == n || picked.len() == before {
            break;
        }
    }
    picked.sort_unstable();
    picked
}

/// The pieces of `runs` inside `[lo, hi)`, clipped: `(file offset, data offset, length)`.
fn clip<'a>(runs: &'a Runs, lo: u64, hi: u64) -> impl Iterator<Item = Piece> + 'a {
    let first = runs.partition_point(|&(at, _, len)| at + len as u64 <= lo);
    runs[first..].iter().take_while(move |&&(at, _, _)| at < hi).map(move |&(at, from, len)| {
        let a = at.max(lo);
        let b = (at + len as u64).min(hi);
        (a, from + (a - at) as usize, (b - a) as usize)
    })
}

/// Byte strings, one per rank, in one buffer: what an all-to-all sends or received. Parts are
/// written in rank order, so each is one range of the buffer (no copy to gather them).
struct Parts {
    bytes: Vec<u8>,
    layout: Vec<(usize, usize)>,
}

impl Parts {
    fn new(n: usize) -> Parts {
        Parts { bytes: Vec::new(), layout: vec![(0, 0); n] }
    }

    /// Appends `data` to rank `r`'s part (no part of a higher rank written yet).
    fn push(&mut self, r: usize, data: &[u8]) {
        let (at, len) = &mut self.layout[r];
        if *len == 0 {
            *at = self.bytes.len();
        }
        debug_assert_eq!(*at + *len, self.bytes.len(), "parts are written in rank order");
        self.bytes.extend_from_slice(data);
        *len += data.len();
    }

    fn get(&self, r: usize) -> &[u8] {
        let (at, len) = self.layout[r];
        &self.bytes[at..at + len]
    }

    fn is_empty(&self, r: usize) -> bool {
        self.layout[r].1 == 0
    }
}

/// Sends `parts` (rank r its part r) and returns what each rank sent this one (an all-to-all
/// of byte strings whose lengths are exchanged first).
fn exchange(f: &File, parts: &Parts) -> Res<Parts> {
    let n = f.comm.size();
    let sizes: Vec<u8> = parts.layout.iter().flat_map(|p| (p.1 as u64).to_ne_bytes()).collect();
    let mut got_sizes = vec![0u8; 8 * n];
    let eight: Vec<(usize, usize)> = (0..n).map(|r| (8 * r, 8)).collect();
    f.comm.alltoallv_bytes(&sizes, &eight, &mut got_sizes, &eight)?;
    let incoming: Vec<usize> =
        got_sizes.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")) as usize).collect();
    exchange_sized(f, parts, &incoming)
}

/// [`exchange`] when this rank knows how many bytes each rank sends it (`incoming[r]`).
fn exchange_sized(f: &File, parts: &Parts, incoming: &[usize]) -> Res<Parts> {
    let mut layout = Vec::with_capacity(incoming.len());
    let mut at = 0;
    for &len in incoming {
        layout.push((at, len));
        at += len;
    }
    let mut bytes = vec![0u8; at];
    f.comm.alltoallv_bytes(&parts.bytes, &parts.layout, &mut bytes, &layout)?;
    Ok(Parts { bytes, layout })
}

fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_ne_bytes());
}

fn u64_at(buf: &[u8], i: usize) -> u64 {
    u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().expect("8 bytes"))
}

/// In atomic mode, an aggregator's lock on its whole domain, the same fcntl lock an
/// independent access takes on its span (`access.rs`), held from before the first exchange to
/// after the last: every aggregator holds its lock at the first exchange (an all-to-all, which
/// no rank leaves before all have entered it), so the collective access takes effect at once
/// with respect to any other atomic access, as MPI 4.0 section 14.6.1 asks.
fn atomic_lock<'a>(
    f: &'a File,
    plan: &Plan,
    mine: Option<usize>,
    end: u64,
    what: Access,
) -> Res<Option<RangeLock<'a>>> {
    if !f.state().atomic {
        return Ok(None);
    }
    match mine.and_then(|a| plan.domain_of(a, end)) {
        Some((lo, hi)) => Ok(Some(RangeLock::take(&f.fd, what, lo, hi)?)),
        None => Ok(None),
    }
}

/// Writes this rank's `data` at `runs` through the aggregators; returns the bytes written.
pub(crate) fn write(f: &File, plan: &Plan, end: u64, runs: &Runs, data: &[u8]) -> Res<usize> {
    let n = f.comm.size();
    let me = f.comm.rank();
    let rounds = plan.domain.div_ceil(plan.window);
    let mine = plan.aggregators.iter().position(|&r| r == me);
    let atomic = atomic_lock(f, plan, mine, end, Access::Write)?;
    let mut buffer = vec![0u8; if mine.is_some() { plan.window.min(plan.domain) as usize } else { 0 }];
    for k in 0..rounds {
        // To each aggregator (in rank order): piece count, (offset, length) pairs, the bytes.
        let mut parts = Parts::new(n);
        for (a, &agg) in plan.aggregators.iter().enumerate() {
            let Some((lo, hi)) = plan.window(a, k, end) else { continue };
            let pieces: Vec<_> = clip(runs, lo, hi).collect();
            if pieces.is_empty() {
                continue;
            }
            let mut header = Vec::with_capacity(8 * (1 + 2 * pieces.len()));
            put_u64(&mut header, pieces.len() as u64);
            for &(at, _, len) in &pieces {
                put_u64(&mut header, at);
                put_u64(&mut header, len as u64);
            }
            parts.push(agg, &header);
            for &(_, from, len) in &pieces {
                parts.push(agg, &data[from..from + len]);
            }
        }
        let received = exchange(f, &parts)?;
        let Some(a) = mine else { continue };
        let Some((lo, _)) = plan.window(a, k, end) else { continue };
        let mut covered: Vec<(u64, u64)> = Vec::new();
        for msg in (0..n).filter(|&r| !received.is_empty(r)).map(|r| received.get(r)) {
            let count = u64_at(msg, 0) as usize;
            let mut pos = 8 * (1 + 2 * count);
            for i in 0..count {
                let (at, len) = (u64_at(msg, 1 + 2 * i), u64_at(msg, 2 + 2 * i) as usize);
                let into = (at - lo) as usize;
                buffer[into..into + len].copy_from_slice(&msg[pos..pos + len]);
                pos += len;
                covered.push((at, at + len as u64));
            }
        }
        // The window's covered stretches, each one pwrite (holes between them are left as the
        // file has them: no read-modify-write needed).
        covered.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (a0, b0) in covered {
            match merged.last_mut() {
                Some(last) if a0 <= last.1 => last.1 = last.1.max(b0),
                _ => merged.push((a0, b0)),
            }
        }
        for (a0, b0) in merged {
            let part = &buffer[(a0 - lo) as usize..(b0 - lo) as usize];
            // As a plain independent write: no sieving read-modify-write over it meanwhile.
            let _shared = match atomic {
                None if super::sieve::may_sieve_writes(f) => Some(RangeLock::take(&f.fd, Access::Read, a0, b0)?),
                _ => None,
            };
            f.fd.write_all_at(part, a0).map_err(|e| io_error(&e, "cannot write", &f.name()))?;
        }
    }
    Ok(runs.iter().map(|r| r.2).sum())
}

/// Reads this rank's `runs` into `data` through the aggregators; returns the bytes read (up
/// to the end of the file).
pub(crate) fn read(f: &File, plan: &Plan, end: u64, runs: &Runs, data: &mut [u8]) -> Res<usize> {
    let n = f.comm.size();
    let me = f.comm.rank();
    let rounds = plan.domain.div_ceil(plan.window);
    let mine = plan.aggregators.iter().position(|&r| r == me);
    let _lock = atomic_lock(f, plan, mine, end, Access::Read)?;
    let mut buffer = vec![0u8; if mine.is_some() { plan.window.min(plan.domain) as usize } else { 0 }];
    for k in 0..rounds {
        // Requests: to each aggregator, the pieces wanted from its window.
        let mut parts = Parts::new(n);
        let mut wanted: Vec<(usize, Vec<Piece>)> = Vec::new();
        for (a, &agg) in plan.aggregators.iter().enumerate() {
            let Some((lo, hi)) = plan.window(a, k, end) else { continue };
            let pieces: Vec<_> = clip(runs, lo, hi).collect();
            if pieces.is_empty() {
                continue;
            }
            let mut request = Vec::with_capacity(16 * pieces.len());
            for &(at, _, len) in &pieces {
                put_u64(&mut request, at);
                put_u64(&mut request, len as u64);
            }
            parts.push(agg, &request);
            wanted.push((agg, pieces));
        }
        let received = exchange(f, &parts)?;
        let requests: Vec<&[u8]> = (0..n).map(|r| received.get(r)).collect();
        // An aggregator reads the covered span of its window once and answers each request.
        let mut answers = Parts::new(n);
        if let (Some(a), true) = (mine, requests.iter().any(|r| !r.is_empty())) {
            if let Some((lo, _)) = plan.window(a, k, end) {
                let asked = |r: &&[u8]| {
                    (0..r.len() / 16).map(|i| (u64_at(r, 2 * i), u64_at(r, 2 * i + 1) as usize)).collect::<Vec<_>>()
                };
                let all: Vec<(u64, usize)> = requests.iter().flat_map(asked).collect();
                let first = all.iter().map(|p| p.0).min().unwrap_or(lo);
                let last = all.iter().map(|p| p.0 + p.1 as u64).max().unwrap_or(lo);
                let span = &mut buffer[(first - lo) as usize..(last - lo) as usize];
                let got = read_full(&f.fd, span, first).map_err(|e| io_error(&e, "cannot read", &f.name()))?;
                span[got..].fill(0);
                for (src, r) in requests.iter().enumerate() {
                    for (at, len) in asked(r) {
                        let from = (at - lo) as usize;
                        answers.push(src, &buffer[from..from + len]);
                    }
                }
            }
        }
        // A rank knows what it asked of each aggregator: the replies' sizes need no exchange.
        let mut expected = vec![0; n];
        for (agg, pieces) in &wanted {
            expected[*agg] = pieces.iter().map(|p| p.2).sum();
        }
        let replies = exchange_sized(f, &answers, &expected)?;
        for (agg, pieces) in wanted {
            let (reply, mut pos) = (replies.get(agg), 0);
            for (_, from, len) in pieces {
                data[from..from + len].copy_from_slice(&reply[pos..pos + len]);
                pos += len;
            }
        }
    }
    // Bytes read: up to the end of the file, stopping at the first piece it cuts.
    let size = f.fd.metadata().map_err(|e| io_error(&e, "cannot stat", &f.name()))?.len();
    let mut done = 0;
    for &(at, _, len) in runs {
        let here = size.saturating_sub(at).min(len as u64) as usize;
        done += here;
        if here < len {
            break;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregators_spread_over_hosts_first() {
        // Ranks 0, 1 on host 0; 2, 3 on host 1.
        let hosts = [(0, 0), (0, 1), (1, 2), (1, 3)];
        assert_eq!(pick_aggregators(&hosts, 1), [0]);
        assert_eq!(pick_aggregators(&hosts, 2), [0, 2]);
        assert_eq!(pick_aggregators(&hosts, 3), [0, 1, 2]);
        assert_eq!(pick_aggregators(&hosts, 9), [0, 1, 2, 3]);
    }

    #[test]
    fn windows_cut_domains_into_rounds() {
        let plan = Plan { aggregators: vec![0, 2], start: 100, domain: 50, window: 20 };
        assert_eq!(plan.window(0, 0, 190), Some((100, 120)));
        assert_eq!(plan.window(0, 2, 190), Some((140, 150)), "the last round stops at the domain's end");
        assert_eq!(plan.window(1, 2, 190), Some((190, 190)).filter(|_| false), "past the end: nothing");
        assert_eq!(plan.window(1, 1, 190), Some((170, 190)));
        assert_eq!(plan.domain_of(0, 190), Some((100, 150)), "atomic mode locks a whole domain");
        assert_eq!(plan.domain_of(1, 190), Some((150, 190)), "up to the access's end");
        assert_eq!(plan.domain_of(2, 190), None);
    }

    #[test]
    fn clipping_keeps_the_data_offsets() {
        let runs = [(10, 0, 10), (30, 10, 10), (50, 20, 10)];
        let got: Vec<_> = clip(&runs, 15, 35).collect();
        assert_eq!(got, [(15, 5, 5), (30, 10, 5)]);
        assert_eq!(clip(&runs, 60, 70).count(), 0);
    }
}

//! Rank program for the active-message tests: `bbrun -n N bb-am <case>`.
//! Each case checks its own results and panics (non-zero exit) on any mismatch; rank 0 prints
//! one `ok <case> on N ranks` line at the end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use billboard::{ActiveHandler, ActiveMessage, Communicator, Outbox};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Deterministic content for message `seq` of `len` bytes from `src`.
fn pattern(src: usize, seq: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ seq.wrapping_mul(7) ^ src.wrapping_mul(13)) as u8).collect()
}

/// Sizes across every protocol: inline, slot, rendezvous (single copy, shared, pipeline).
const LENS: [usize; 9] = [0, 5, 40, 3000, 20_000, 70_000, 17, 300_000, 1 << 20];

/// Makes progress until `done` holds; a rank with nothing to do yields its core.
fn progress_until(w: &Communicator, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        if !w.progress() {
            std::thread::yield_now();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "rank {}: no {what} after 60 s", w.rank());
    }
}

/// Checks each message against what its sender sent, in order; counts them.
struct Checker {
    seen: Arc<AtomicUsize>,
    next: Vec<usize>,
}

impl ActiveHandler for Checker {
    fn on_message(&mut self, msg: ActiveMessage<'_>, _: &mut Outbox<'_>) {
        let k = self.next[msg.source];
        self.next[msg.source] += 1;
        assert_eq!(msg.header, &(k as u64).to_le_bytes()[..], "message {k} from rank {} overtaken", msg.source);
        let want = pattern(msg.source, k, LENS[k % LENS.len()]);
        assert!(msg.payload == &want[..], "content of message {k} from rank {}", msg.source);
        self.seen.fetch_add(1, Ordering::Release);
    }
}

/// Every rank sends a stream of mixed sizes to the next; each arrives whole and in order.
fn order(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let count = 60;
    let seen = Arc::new(AtomicUsize::new(0));
    w.register_handler(1, Checker { seen: seen.clone(), next: vec![0; n] })?;
    let to = (me + 1) % n;
    let outgoing: Vec<(u64, Vec<u8>)> = (0..count).map(|k| (k as u64, pattern(me, k, LENS[k % LENS.len()]))).collect();
    let headers: Vec<[u8; 8]> = outgoing.iter().map(|(k, _)| k.to_le_bytes()).collect();
    let mut sends = Vec::new();
    for (h, (_, payload)) in headers.iter().zip(&outgoing) {
        sends.push(w.send_active(to, 1, h, &payload[..])?);
    }
    billboard::wait_all(sends)?;
    progress_until(w, "stream", || seen.load(Ordering::Acquire) == count);
    w.barrier()?;
    w.unregister_handler(1)?;
    Ok(())
}

/// Answers with the payload, reversed, to handler 3 of the sender.
struct Echo;

impl ActiveHandler for Echo {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        let back: Vec<u8> = msg.payload.iter().rev().copied().collect();
        out.send(msg.source, 3, msg.header, &back).expect("a reply to the sender");
    }
}

/// Messages kept: (source, header, payload).
type Kept = Arc<Mutex<Vec<(usize, Vec<u8>, Vec<u8>)>>>;

/// Keeps the replies.
struct Collect(Kept);

impl ActiveHandler for Collect {
    fn on_message(&mut self, msg: ActiveMessage<'_>, _: &mut Outbox<'_>) {
        self.0.lock().unwrap().push((msg.source, msg.header.to_vec(), msg.payload.to_vec()));
    }
}

/// Every rank asks every rank (itself too), small and large; every reply comes back right.
fn replies(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    w.register_handler(2, Echo)?;
    let got = Arc::new(Mutex::new(Vec::new()));
    w.register_handler(3, Collect(got.clone()))?;
    let asks: Vec<Vec<u8>> = (0..n).map(|to| pattern(me, to, [8, 100_000][to % 2])).collect();
    let headers: Vec<[u8; 2]> = (0..n).map(|to| [me as u8, to as u8]).collect();
    let mut sends = Vec::new();
    for to in 0..n {
        sends.push(w.send_active(to, 2, &headers[to], &asks[to][..])?);
    }
    billboard::wait_all(sends)?;
    progress_until(w, "replies", || got.lock().unwrap().len() == n);
    for (source, header, payload) in got.lock().unwrap().iter() {
        assert_eq!(header[..], [me as u8, *source as u8]);
        let want: Vec<u8> = asks[*source].iter().rev().copied().collect();
        assert!(*payload == want, "reply from rank {source}");
    }
    w.barrier()?;
    Ok(())
}

/// A fetch-and-add counter that serves one request per round of progress: what it has not
/// served yet it keeps (never blocking), as a target that must queue work does.
#[derive(Default)]
struct Counter {
    value: u64,
    queue: std::collections::VecDeque<(usize, u64)>,
}

impl ActiveHandler for Counter {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        let add = u64::from_le_bytes(msg.header.try_into().expect("an 8-byte addend"));
        self.queue.push_back((msg.source, add));
        out.later();
    }

    fn on_progress(&mut self, out: &mut Outbox<'_>) {
        if let Some((source, add)) = self.queue.pop_front() {
            out.send(source, 5, &self.value.to_le_bytes(), &[]).expect("a reply to the sender");
            self.value += add;
        }
        if !self.queue.is_empty() {
            out.later();
        }
    }
}

/// Every rank adds 1..=k to a counter at rank 0, one round trip each: the old values it is
/// told are all distinct, and rank 0 sees the exact sum.
fn counter(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let per = 50u64;
    if me == 0 {
        w.register_handler(4, Counter::default())?;
    }
    let got = Arc::new(Mutex::new(Vec::new()));
    w.register_handler(5, Collect(got.clone()))?;
    let mut olds = Vec::new();
    for k in 1..=per {
        let add = k.to_le_bytes();
        w.send_active(0, 4, &add, &[0u8; 0][..])?.wait()?;
        progress_until(w, "counter reply", || !got.lock().unwrap().is_empty());
        let (_, old, _) = got.lock().unwrap().pop().unwrap();
        olds.push(u64::from_le_bytes(old[..].try_into()?));
    }
    w.barrier()?;
    // The old values every rank was told: distinct, and the last one plus its addend is the sum.
    let bytes: Vec<u8> = olds.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut gathered = vec![0u8; bytes.len() * n];
    let layout: Vec<(usize, usize)> = (0..n).map(|r| (r * bytes.len(), bytes.len())).collect();
    w.allgatherv_bytes(&bytes, &mut gathered, &layout)?;
    let all: Vec<u64> = gathered.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), all.len(), "every fetch-and-add saw its own old value");
    if me == 0 {
        let counter = w.unregister_handler(4)?;
        drop(counter);
        let total = n as u64 * per * (per + 1) / 2;
        assert!(sorted.last().copied().unwrap_or(0) < total, "old values stay below the sum {total}");
    }
    Ok(())
}

/// Messages sent before their handler is registered are handed over once it is.
fn early(w: &Communicator) -> Res {
    let (n, me) = (w.size(), w.rank());
    let to = (me + 1) % n;
    let payloads: Vec<Vec<u8>> = (0..3).map(|k| pattern(me, k, LENS[k * 3 + 1])).collect();
    let headers: Vec<[u8; 8]> = (0..3u64).map(|k| k.to_le_bytes()).collect();
    let mut sends = Vec::new();
    for k in 0..3 {
        sends.push(w.send_active(to, 6, &headers[k], &payloads[k][..])?);
    }
    // Rendezvous sends complete only once received: in flight while the handler is missing.
    w.barrier()?;
    let seen = Arc::new(AtomicUsize::new(0));
    let mut next = vec![0; n];
    next[(me + n - 1) % n] = 0;
    w.register_handler(6, EarlyChecker { seen: seen.clone(), next })?;
    billboard::wait_all(sends)?;
    progress_until(w, "early messages", || seen.load(Ordering::Acquire) == 3);
    w.barrier()?;
    Ok(())
}

/// As [`Checker`], with the sizes of [`early`].
struct EarlyChecker {
    seen: Arc<AtomicUsize>,
    next: Vec<usize>,
}

impl ActiveHandler for EarlyChecker {
    fn on_message(&mut self, msg: ActiveMessage<'_>, _: &mut Outbox<'_>) {
        let k = self.next[msg.source];
        self.next[msg.source] += 1;
        assert_eq!(msg.header, &(k as u64).to_le_bytes()[..]);
        assert!(msg.payload == &pattern(msg.source, k, LENS[k * 3 + 1])[..], "early message {k}");
        self.seen.fetch_add(1, Ordering::Release);
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bb-am: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res {
    let case = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let universe = billboard::init()?;
    let w = universe.world();
    match case.as_str() {
        "order" => order(&w)?,
        "replies" => replies(&w)?,
        "counter" => counter(&w)?,
        "early" => early(&w)?,
        "all" => {
            order(&w)?;
            replies(&w)?;
            counter(&w)?;
            early(&w)?;
        }
        other => return Err(format!("unknown case {other}").into()),
    }
    w.barrier()?;
    if w.rank() == 0 {
        println!("ok {case} on {} ranks", w.size());
    }
    universe.finalize()?;
    Ok(())
}

//! Active messages between engines over the in-memory channel (`active.rs`): order across
//! sizes and routes, replies, large payloads by every protocol, handlers that keep work,
//! messages that come before their handler, and a sender that dies mid-transfer.

use std::sync::{Arc, Mutex};

use super::*;

/// What a handler saw: (source, header, payload), in order.
type Log = Arc<Mutex<Vec<(usize, Vec<u8>, Vec<u8>)>>>;

/// Logs every message; replies with the payload's length to `reply_to` if set.
struct Recorder {
    log: Log,
    reply_to: Option<u16>,
}

impl ActiveHandler for Recorder {
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
        self.log.lock().unwrap().push((msg.source, msg.header.to_vec(), msg.payload.to_vec()));
        if let Some(id) = self.reply_to {
            out.send(msg.source, id, &(msg.payload.len() as u64).to_le_bytes(), &[]).unwrap();
        }
    }
}

fn recorder(reply_to: Option<u16>) -> (Box<dyn ActiveHandler>, Log) {
    let log = Log::default();
    (Box::new(Recorder { log: log.clone(), reply_to }), log)
}

impl Sim {
    fn register(&mut self, at: usize, id: u16, handler: Box<dyn ActiveHandler>) {
        let world: Box<[usize]> = (0..self.ranks.len()).collect();
        self.ranks[at].register_active(0, id, world, at, handler).unwrap();
    }

    /// Starts an active message; the test keeps both buffers until it completes.
    fn am(&mut self, from: usize, to: usize, id: u16, header: &[u8], payload: &[u8]) -> Option<ReqId> {
        // SAFETY: every test keeps its buffers alive and unchanged until its requests finish.
        unsafe { self.ranks[from].send_active(to, 0, from as u32, id, header, payload) }
    }

    fn all_idle(&self) -> bool {
        self.ranks.iter().all(|e| e.active_idle())
    }
}

fn routes() -> [(Caps, &'static str); 3] {
    [(shm(), "shared"), (single_only(), "single"), (records_only(), "pipeline")]
}

/// Messages of every size from two senders, interleaved with held links, reach the handler
/// whole and, per sender, in the order sent; the eager ones never meet the matcher.
#[test]
fn active_messages_arrive_whole_and_in_order() {
    let sizes = [0, 1, 100, 20_000, 3, 5 * claims::PAGE + 17, 0, 64, 100_000, 7];
    for (caps, name) in routes() {
        let mut s = sim(3, caps);
        let (handler, log) = recorder(None);
        s.register(0, 9, handler);
        s.net.borrow_mut().hold(2, 0);
        let msgs: Vec<(usize, Vec<u8>, Vec<u8>)> = (0..2 * sizes.len())
            .map(|k| {
                let from = 1 + k % 2;
                (from, data(from, k, k % 9), data(from, k + 50, sizes[k / 2]))
            })
            .collect();
        let mut reqs = Vec::new();
        for (from, header, payload) in &msgs {
            reqs.push((*from, s.am(*from, 0, 9, header, payload)));
            s.rounds(&[0]);
        }
        s.net.borrow_mut().release(2, 0, usize::MAX);
        for out in s.complete(&reqs) {
            out.unwrap();
        }
        s.run_until(|s| log.lock().unwrap().len() == msgs.len() && s.all_idle());
        let log = log.lock().unwrap();
        for from in [1, 2] {
            let got: Vec<_> = log.iter().filter(|m| m.0 == from).collect();
            let sent: Vec<_> = msgs.iter().filter(|m| m.0 == from).collect();
            assert!(got == sent, "{name}: messages of rank {from} whole and in order");
        }
        assert_eq!(s.ranks[0].unexpected_messages(), 0, "{name}: nothing reached the matcher");
    }
}

/// A handler's replies reach the sender's handler; 4 ranks each ask every other.
#[test]
fn handlers_reply() {
    for (caps, name) in routes() {
        let n = 4;
        let mut s = sim(n, caps);
        let mut logs = Vec::new();
        for r in 0..n {
            let (ask, _) = recorder(Some(2));
            s.register(r, 1, ask);
            let (answers, log) = recorder(None);
            s.register(r, 2, answers);
            logs.push(log);
        }
        let payloads: Vec<Vec<u8>> = (0..n).map(|r| data(r, 0, 1000 * r + 20_000 * (r % 2))).collect();
        let mut reqs = Vec::new();
        for (r, payload) in payloads.iter().enumerate() {
            for to in (0..n).filter(|&t| t != r) {
                reqs.push((r, s.am(r, to, 1, b"ask", payload)));
            }
        }
        s.complete(&reqs);
        s.run_until(|s| logs.iter().all(|l| l.lock().unwrap().len() == n - 1) && s.all_idle());
        for (r, log) in logs.iter().enumerate() {
            for (source, header, payload) in log.lock().unwrap().iter() {
                assert_eq!(header[..], (payloads[r].len() as u64).to_le_bytes(), "{name}: {source} answers {r}");
                assert!(payload.is_empty());
            }
        }
    }
}

/// Messages that come before their handler is registered are kept, in order, and handed
/// over once it is; a header too long for the wire is refused with the handler's id.
#[test]
fn messages_wait_for_their_handler() {
    let mut s = sim(2, shm());
    let payloads = [data(1, 0, 10), data(1, 1, 30_000), data(1, 2, 5)];
    let reqs: Vec<_> = payloads.iter().map(|p| (1, s.am(1, 0, 4, b"h", p))).collect();
    s.complete(&reqs);
    s.rounds(&[0, 0, 0]);
    assert!(!s.ranks[0].active_idle(), "kept for a handler not yet there");
    let (handler, log) = recorder(None);
    s.register(0, 4, handler);
    s.run_until(|s| s.all_idle());
    let got: Vec<Vec<u8>> = log.lock().unwrap().iter().map(|m| m.2.clone()).collect();
    assert_eq!(got, payloads.to_vec());
    let (again, _) = recorder(None);
    let twice = s.ranks[0].register_active(0, 4, vec![0, 1].into(), 0, again);
    assert!(matches!(twice, Err(Error::InvalidArgument(why)) if why.contains("handler 4")));
    // A handler's bad sends are errors that name the rank or the handler.
    struct Misbehaving(Arc<Mutex<Vec<String>>>);
    impl ActiveHandler for Misbehaving {
        fn on_message(&mut self, _: ActiveMessage<'_>, out: &mut Outbox<'_>) {
            let long = [0u8; HEADER_MAX + 1];
            for e in [out.send(5, 3, &[], &[]), out.send(1, 3, &long, &[])] {
                self.0.lock().unwrap().push(e.unwrap_err().to_string());
            }
        }
    }
    let errors = Arc::new(Mutex::new(Vec::new()));
    s.register(0, 6, Box::new(Misbehaving(errors.clone())));
    s.am(1, 0, 6, &[], &[]);
    s.run_until(|s| errors.lock().unwrap().len() == 2 && s.all_idle());
    let errors = errors.lock().unwrap();
    assert!(errors[0].contains("invalid rank 5"), "{}", errors[0]);
    assert!(errors[1].contains("handler 3") && errors[1].contains("65 bytes"), "{}", errors[1]);
}

/// Messages for a handler that was taken out are dropped, not kept forever (eager ones and
/// large ones, once whole), until its context is free again: then a message that
/// comes before the next registration is kept for it, as for any handler not there yet.
#[test]
fn messages_for_an_unregistered_handler_are_dropped_until_the_context_is_reopened() {
    let mut s = sim(2, shm());
    let (handler, log) = recorder(None);
    s.register(0, 4, handler);
    s.am(1, 0, 4, &[], b"first");
    s.run_until(|_| log.lock().unwrap().len() == 1);
    assert!(s.ranks[0].unregister_active(0, 4).is_some());
    let big = data(1, 0, 30_000);
    for p in [&b"late"[..], &big] {
        let r = s.am(1, 0, 4, &[], p);
        s.complete(&[(1, r)]);
        for _ in 0..20 {
            s.rounds(&[0, 1]);
        }
        assert!(s.ranks[0].active_idle(), "a message of {} bytes for a handler gone is kept", p.len());
    }
    assert_eq!(log.lock().unwrap().len(), 1, "nothing reached the old handler");
    // The context is free again: the next communicator's messages wait for their handler.
    s.ranks[0].reopen_active(0);
    s.am(1, 0, 4, &[], b"next");
    s.rounds(&[0, 0, 0]);
    assert!(!s.ranks[0].active_idle(), "kept for the next registration");
    let (handler, next) = recorder(None);
    s.register(0, 4, handler);
    s.run_until(|s| s.all_idle());
    assert_eq!(next.lock().unwrap().iter().map(|m| m.2.clone()).collect::<Vec<_>>(), vec![b"next".to_vec()]);
}

/// A handler that cannot grant a request at once (a lock held by another) keeps it and
/// grants it in a later round, from `on_progress`, never blocking.
#[test]
fn a_handler_keeps_work_for_later() {
    /// Grants one lock at a time; a release frees it for the next one queued.
    struct Lock {
        holder: Option<usize>,
        queue: VecDeque<usize>,
        progress_calls: usize,
    }
    impl ActiveHandler for Lock {
        fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>) {
            match msg.header {
                b"acquire" => self.queue.push_back(msg.source),
                _ => self.holder = None,
            }
            out.later();
        }
        fn on_progress(&mut self, out: &mut Outbox<'_>) {
            self.progress_calls += 1;
            if self.holder.is_none() {
                if let Some(next) = self.queue.pop_front() {
                    self.holder = Some(next);
                    out.send(next, 2, b"granted", &[]).unwrap();
                }
            }
        }
    }
    let n = 4;
    let mut s = sim(n, records_only());
    let lock = Box::new(Lock { holder: None, queue: VecDeque::new(), progress_calls: 0 });
    s.register(0, 1, lock);
    let mut grants = Vec::new();
    for r in 1..n {
        let (g, log) = recorder(None);
        s.register(r, 2, g);
        grants.push(log);
    }
    for r in 1..n {
        assert!(s.am(r, 0, 1, b"acquire", &[]).is_none());
    }
    let granted = |grants: &[Log]| grants.iter().filter(|l| !l.lock().unwrap().is_empty()).count();
    let mut released = Vec::new();
    for count in 1..n {
        s.run_until(|s| granted(&grants) == count && s.all_idle());
        s.rounds(&[0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(granted(&grants), count, "one holder at a time");
        let holder = (1..n).find(|&r| !grants[r - 1].lock().unwrap().is_empty() && !released.contains(&r)).unwrap();
        assert!(s.am(holder, 0, 1, b"release", &[]).is_none());
        released.push(holder);
    }
    s.run_until(|s| granted(&grants) == n - 1 && s.all_idle());
    let back = s.ranks[0].unregister_active(0, 1).expect("registered");
    drop(back);
    assert!(s.ranks[0].unregister_active(0, 1).is_none());
}

/// A sender dies while its large message is being copied: the target hands nothing over for
/// it, keeps nothing, and still serves another rank; a message to the dead rank fails naming it.
#[test]
fn a_sender_dying_mid_transfer_loses_only_its_message() {
    for (caps, name) in routes() {
        let mut s = sim(3, caps);
        let (handler, log) = recorder(None);
        s.register(0, 1, handler);
        let big = data(1, 0, 40 * claims::PAGE);
        let send = s.am(1, 0, 1, b"big", &big);
        assert!(send.is_some());
        s.rounds(&[0, 1, 0]);
        s.net.borrow_mut().kill(1, "killed by the test");
        s.run_until(|s| s.ranks[0].active_idle());
        assert!(log.lock().unwrap().is_empty(), "{name}: nothing handed over from the dead sender");
        let small = data(2, 0, 100);
        let ok = s.am(2, 0, 1, &[], &small);
        s.complete(&[(2, ok)]);
        s.run_until(|s| log.lock().unwrap().len() == 1 && s.all_idle());
        let to_dead = s.am(0, 1, 1, &[], &small).expect("a failed request");
        assert!(matches!(s.ranks[0].finish(to_dead), Err(Error::PeerGone { rank: 1, .. })), "{name}");
    }
}

/// A rank that only probes (a program computing between MPI_Iprobe calls, as NWChem's targets
/// do) still runs its handlers when a message matching the probe is already queued: every
/// probe makes progress, as MPI's progress rule asks (it made none once it found a match).
#[test]
fn probing_runs_handlers_even_with_a_match_queued() {
    let mut s = sim(2, records_only());
    let (handler, log) = recorder(None);
    s.register(0, 3, handler);
    let queued = data(1, 0, 8);
    let sent = s.send(1, 0, 5, &queued);
    s.rounds(&[1, 0]);
    assert!(s.ranks[0].iprobe(&pattern(None, None)).is_some(), "the message waits unexpected");
    let payload = data(1, 1, 16);
    let am = s.am(1, 0, 3, b"h", &payload);
    for _ in 0..50 {
        s.rounds(&[1]);
        assert!(s.ranks[0].iprobe(&pattern(None, None)).is_some());
    }
    assert_eq!(log.lock().unwrap().len(), 1, "the handler ran inside the probes");
    for out in s.complete(&[(1, sent), (1, am)]) {
        out.unwrap();
    }
}

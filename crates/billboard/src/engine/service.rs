//! Active messages (seed 002: a handler runs at the receiver on arrival, GAM style): a
//! *service* runs a handler inside this process's progress for every message that arrives on
//! one context with one tag, so the work a peer asks for (one-sided operations on a window, a
//! lock) is done whenever this process is in any call that makes progress (a wait, a receive,
//! a barrier, a test), not only when it asks for messages.
//!
//! Messages reach the handler in arrival order, which keeps each sender's order (messages of
//! one sender in one context are never overtaken). An eager message is handed over as the
//! engine kept it; a larger one (a rendezvous offer) is first received whole, by the engine's
//! own protocols, and the messages behind it wait for it, so order holds across sizes too.
//! A handler never blocks: what it cannot do yet it keeps, and does on a later message.
//! Replies it asks for go out as ordinary sends from the service's rank, their buffers kept
//! until sent.

use super::*;

/// The code a service runs at the receiver.
pub trait Handler: Send {
    /// Handles one message from `source` (a rank of the service's communicator). Runs inside
    /// progress, with the engine held: it must not call the library; it asks for sends in
    /// `out`.
    fn handle(&mut self, source: usize, payload: &[u8], out: &mut Replies);
}

/// Sends a handler asks for: (destination rank, tag, bytes).
#[derive(Default)]
pub struct Replies {
    list: Vec<(usize, i32, Vec<u8>)>,
}

impl Replies {
    /// Sends `data` to rank `dest` of the service's communicator with `tag`, on its context.
    pub fn send(&mut self, dest: usize, tag: i32, data: Vec<u8>) {
        self.list.push((dest, tag, data));
    }
}

/// One registered handler and what it has in flight.
pub(crate) struct Service {
    pub id: u32,
    /// Context and tag it serves, from any source.
    pattern: Pattern,
    /// World rank of each rank of the communicator, and this process's rank in it.
    world: Box<[usize]>,
    rank: u32,
    handler: Box<dyn Handler>,
    /// A large message being received before it is handled: (request, buffer, source).
    receiving: Option<(ReqId, Vec<u8>, usize)>,
    /// Replies in flight and the bytes they send.
    sending: Vec<(ReqId, Vec<u8>)>,
    replies: Replies,
}

impl Service {
    pub(crate) fn new(
        id: u32,
        context: u32,
        tag: i32,
        world: Box<[usize]>,
        rank: usize,
        handler: Box<dyn Handler>,
    ) -> Service {
        Service {
            id,
            pattern: Pattern { context, source: None, tag: Some(tag) },
            world,
            rank: rank as u32,
            handler,
            receiving: None,
            sending: Vec::new(),
            replies: Replies::default(),
        }
    }

    /// Handles what has arrived; returns whether anything happened.
    fn run<C: Channel>(&mut self, e: &mut Engine<C>) -> bool {
        let mut busy = false;
        if !self.sending.is_empty() {
            self.sending.retain(|&(id, _)| {
                let done = e.core.reqs.is_done(id);
                if done {
                    // A reply to a rank that failed: that rank's own calls report it.
                    let _ = e.finish(id);
                }
                !done
            });
        }
        loop {
            if let Some((id, _, _)) = self.receiving {
                if !e.core.reqs.is_done(id) {
                    break;
                }
                let (id, data, source) = self.receiving.take().expect("checked above");
                if e.finish(id).is_ok() {
                    self.handler.handle(source, &data, &mut self.replies);
                }
                busy = true;
                continue;
            }
            if e.core.matcher.unexpected_len() == 0 {
                break;
            }
            let Some((env, msg)) = e.core.matcher.take(&self.pattern) else { break };
            busy = true;
            match msg {
                Pending::Eager(data) => self.handler.handle(env.source as usize, &data, &mut self.replies),
                offer => {
                    let mut buf = vec![0u8; offer.bytes()];
                    // SAFETY: the buffer's heap block stays put (the Vec is only moved) and is
                    // kept in `receiving` until the request completes.
                    let id = unsafe { e.irecv_taken(env, offer, buf.as_mut_ptr(), buf.len()) };
                    self.receiving = Some((id, buf, env.source as usize));
                }
            }
        }
        for (dest, tag, data) in self.replies.list.drain(..) {
            let Some(&peer) = self.world.get(dest) else { continue };
            // SAFETY: the bytes are kept in `sending` until the send completes.
            let id = unsafe { e.isend(peer, self.pattern.context, self.rank, tag, data.as_ptr(), data.len(), false) };
            if let Some(id) = id {
                self.sending.push((id, data));
            }
            busy = true;
        }
        busy
    }

    /// Nothing in flight: the service may go.
    fn idle(&self) -> bool {
        self.receiving.is_none() && self.sending.is_empty()
    }
}

impl<C: Channel> Engine<C> {
    /// Starts serving: from now on `service` runs in every round of progress.
    pub(crate) fn add_service(&mut self, service: Service) {
        self.services.push(service);
    }

    /// Stops service `id` if it has nothing in flight (true); false: progress, then ask again.
    pub(crate) fn remove_service(&mut self, id: u32) -> bool {
        match self.services.iter().position(|s| s.id == id) {
            Some(i) if self.services[i].idle() => {
                self.services.swap_remove(i);
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// One round of every service (only called while there is one).
    #[cold]
    #[inline(never)]
    pub(super) fn run_services(&mut self) -> bool {
        // One poll of every peer first: the round's own poll may have looked at the awaited
        // peer only (a hint), and a call whose answer comes at once (a lock of one's own
        // window, polled in a loop by OpenCoarrays' event wait) would then never see the
        // requests of the others.
        let core = &mut self.core;
        let mut busy = self.chan.poll(None, |peer, h, payload| core.on_record(peer, h, payload)) > 0;
        let mut services = std::mem::take(&mut self.services);
        for s in &mut services {
            busy |= s.run(self);
        }
        self.services = services;
        busy
    }
}

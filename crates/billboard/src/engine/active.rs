//! Active messages (seed 002, GAM style): a handler registered under an id on a communicator
//! runs at the target, inside its progress, for every message sent to that id; it may send
//! (reply) and may keep work for later rounds, and never blocks.
//!
//! On the wire an active message is an ordinary EAGER record or rendezvous offer, so it takes
//! every route and every large-message protocol the engine has; what marks it is its context:
//!
//! | field   | value                                                                  |
//! |---------|------------------------------------------------------------------------|
//! | context | the communicator's point-to-point context with [`ACTIVE`] set          |
//! | source  | the sender's rank in the communicator                                  |
//! | tag     | handler id (bits 0..16) and header bytes (bits 16..24, at most [`HEADER_MAX`]) |
//! | payload | the header bytes, then the payload bytes                               |
//!
//! No receive can match such a record (contexts with [`ACTIVE`] are past every communicator's),
//! so it never meets the matcher. An eager one is handed to its handler as the channel holds it:
//! no copy. A larger one is received whole into a buffer of the engine's first (by whatever
//! protocol its route uses), then handed over. Order: a sender's messages on one communicator
//! reach their handlers in the order sent, across sizes and handler ids. A message that cannot
//! be handed over yet (one before it from the same sender is still arriving, or its handler is
//! not registered yet) is kept, copied, and handed over in order once it can. A message for a
//! handler that was unregistered, while its communicator's context is not yet free for another
//! communicator, is dropped (said under `BB_VERBOSE`): no handler can come for it.

use super::*;

/// The context bit of active messages. Communicator contexts stay below
/// [`matching::MAX_CONTEXTS`](super::super::matching::MAX_CONTEXTS), far under it.
pub(crate) const ACTIVE: u32 = 1 << 31;
/// Largest handler id: it travels in 16 bits of the tag.
pub const HANDLER_MAX: u16 = u16::MAX;
/// Largest header, in bytes: its length travels in 8 bits of the tag, kept below the sign bit.
pub const HEADER_MAX: usize = 64;

/// The tag that carries handler `id` and a header of `header` bytes.
pub(crate) fn tag_of(id: u16, header: usize) -> i32 {
    debug_assert!(header <= HEADER_MAX);
    (id as i32) | ((header as i32) << 16)
}

/// Handler id and header bytes from a tag; `None` if the tag is not one [`tag_of`] makes.
fn split_tag(tag: i32) -> Option<(u16, usize)> {
    let header = (tag >> 16) as usize;
    (tag >= 0 && header <= HEADER_MAX).then_some((tag as u16, header))
}

/// One active message, as its handler sees it. `header` and `payload` may live in the
/// channel (shared memory): they are valid only during the call.
pub struct ActiveMessage<'a> {
    /// The sender's rank in the communicator.
    pub source: usize,
    pub header: &'a [u8],
    pub payload: &'a [u8],
}

/// The code run at the target.
pub trait ActiveHandler: Send {
    /// Handles one message. Runs inside progress with the engine held: it must not call the
    /// library and must not block; it sends through `out`, and what it cannot finish now it
    /// keeps and asks `out.later()` for a call of [`ActiveHandler::on_progress`].
    fn on_message(&mut self, msg: ActiveMessage<'_>, out: &mut Outbox<'_>);

    /// Work the handler kept: called in the next round of progress after `out.later()`.
    fn on_progress(&mut self, _out: &mut Outbox<'_>) {}
}

/// What a handler sends, and whether it wants another call.
pub struct Outbox<'a> {
    world: &'a [usize],
    context: u32,
    rank: u32,
    sink: &'a mut Sink,
    later: &'a mut bool,
}

/// Sends handlers asked for, and byte buffers of sent ones kept for reuse: a reply costs no
/// allocation once the first few are made.
#[derive(Default)]
pub(crate) struct Sink {
    outgoing: Vec<Outgoing>,
    spare: Vec<Vec<u8>>,
}

impl Sink {
    /// Buffers kept for reuse, and the largest kept (bigger ones are freed).
    const SPARE: usize = 16;
    const SPARE_BYTES: usize = 64 << 10;

    fn give_back(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < Self::SPARE && bytes.capacity() <= Self::SPARE_BYTES {
            bytes.clear();
            self.spare.push(bytes);
        }
    }
}

/// A send a handler asked for: world rank, context, own rank, tag, header and payload bytes.
pub(crate) struct Outgoing {
    peer: usize,
    context: u32,
    rank: u32,
    tag: i32,
    bytes: Vec<u8>,
}

impl Outbox<'_> {
    /// Sends an active message to handler `id` at rank `dest` of the communicator (its
    /// bytes are copied; they go out at the end of this round of progress).
    pub fn send(&mut self, dest: usize, id: u16, header: &[u8], payload: &[u8]) -> Result<()> {
        let Some(&peer) = self.world.get(dest) else {
            return Err(Error::InvalidRank { rank: dest, size: self.world.len() });
        };
        check_header(id, header)?;
        let mut bytes = self.sink.spare.pop().unwrap_or_default();
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(payload);
        let tag = tag_of(id, header.len());
        self.sink.outgoing.push(Outgoing { peer, context: self.context | ACTIVE, rank: self.rank, tag, bytes });
        Ok(())
    }

    /// Sends `bytes` to rank `dest` as an ordinary message with `tag` on the communicator
    /// (for a receive `dest` posted: an answer that lands straight in the asker's buffer).
    pub fn send_message(&mut self, dest: usize, tag: i32, bytes: Vec<u8>) -> Result<()> {
        let Some(&peer) = self.world.get(dest) else {
            return Err(Error::InvalidRank { rank: dest, size: self.world.len() });
        };
        self.sink.outgoing.push(Outgoing { peer, context: self.context, rank: self.rank, tag, bytes });
        Ok(())
    }

    /// Asks for a call of [`ActiveHandler::on_progress`] in the next round of progress.
    pub fn later(&mut self) {
        *self.later = true;
    }

    /// Ranks in the communicator.
    pub fn size(&self) -> usize {
        self.world.len()
    }
}

/// A header the wire can carry.
pub(crate) fn check_header(id: u16, header: &[u8]) -> Result<()> {
    if header.len() > HEADER_MAX {
        return Err(Error::InvalidArgument(format!(
            "active message to handler {id}: a header of {} bytes (at most {HEADER_MAX})",
            header.len()
        )));
    }
    Ok(())
}

/// A registered handler.
struct Registered {
    /// The communicator's point-to-point context, and the id on it.
    context: u32,
    id: u16,
    /// World rank of each rank of the communicator, and this process's rank in it.
    world: Box<[usize]>,
    rank: u32,
    handler: Box<dyn ActiveHandler>,
    later: bool,
}

impl Registered {
    fn deliver(&mut self, msg: ActiveMessage<'_>, sink: &mut Sink) {
        let mut out =
            Outbox { world: &self.world, context: self.context, rank: self.rank, sink, later: &mut self.later };
        self.handler.on_message(msg, &mut out);
    }
}

/// A message kept until it can be handed over in order.
struct Kept {
    context: u32,
    peer: usize,
    source: usize,
    id: u16,
    header: usize,
    bytes: Vec<u8>,
    /// The receive of a large message, until it completes.
    arriving: Option<ReqId>,
}

/// The active messages of one engine: handlers, kept messages, sends in flight.
#[derive(Default)]
pub(crate) struct ActiveMessages {
    handlers: Vec<Registered>,
    kept: VecDeque<Kept>,
    /// Sends handlers asked for, to go out at the end of the round.
    sink: Sink,
    /// Handlers' sends that did not complete at once, and their bytes.
    sending: Vec<(ReqId, Vec<u8>)>,
    /// Some handler asked for `on_progress`.
    later: bool,
    /// Handlers taken out (context, id) whose communicator's context is not free yet: a
    /// message for one can never be handled, so it is dropped, not kept forever. A context
    /// that becomes free again ([`Engine::reopen_active`]) leaves this list.
    retired: Vec<(u32, u16)>,
}

impl ActiveMessages {
    /// Something for [`Engine::advance_active_messages`] to do: a registered handler (whose
    /// messages every round looks for), or work kept or in flight.
    #[inline]
    pub(super) fn has_work(&self) -> bool {
        !self.handlers.is_empty()
            || self.later
            || !self.kept.is_empty()
            || !self.sink.outgoing.is_empty()
            || !self.sending.is_empty()
    }

    fn find(&mut self, context: u32, id: u16) -> Option<&mut Registered> {
        self.handlers.iter_mut().find(|r| r.context == context && r.id == id)
    }

    /// Whether messages for handler `id` on `context` can no longer be handled.
    fn retired(&self, context: u32, id: u16) -> bool {
        self.retired.contains(&(context, id))
    }

    /// Whether a message from `peer` on `context` must wait behind one kept before it.
    fn blocked(&self, context: u32, peer: usize) -> bool {
        self.kept.iter().any(|k| k.context == context && k.peer == peer)
    }
}

impl Core {
    /// An EAGER record with [`ACTIVE`] in its context: handed to its handler in place.
    #[cold]
    #[inline(never)]
    pub(super) fn on_active(&mut self, peer: usize, h: &Header, payload: &[u8]) {
        let context = h.context & !ACTIVE;
        let Some((id, header)) = split_tag(h.tag).filter(|&(_, n)| n <= payload.len()) else {
            return self
                .malformed(peer, format_args!("an active message of {} bytes, tag {:#x}", payload.len(), h.tag));
        };
        let source = h.source as usize;
        let am = &mut self.am;
        if am.retired(context, id) {
            return dropped(context, source, id, payload.len());
        }
        if !am.blocked(context, peer) {
            if let Some(r) = am.handlers.iter_mut().find(|r| r.context == context && r.id == id) {
                if source >= r.world.len() {
                    let size = r.world.len();
                    return self.malformed(peer, format_args!("an active message from rank {source} of {size}"));
                }
                let msg = ActiveMessage { source, header: &payload[..header], payload: &payload[header..] };
                r.deliver(msg, &mut am.sink);
                am.later |= r.later;
                return;
            }
        }
        am.kept.push_back(Kept { context, peer, source, id, header, bytes: payload.to_vec(), arriving: None });
    }

    /// A rendezvous offer with [`ACTIVE`] in its context: received whole, then handed over.
    #[cold]
    #[inline(never)]
    pub(super) fn on_active_rts(&mut self, peer: usize, h: &Header, rts: Rts, len: usize) {
        let Some((id, header)) = split_tag(h.tag).filter(|&(_, n)| n <= len) else {
            return self.malformed(peer, format_args!("an active message offer of {len} bytes, tag {:#x}", h.tag));
        };
        let env = Envelope { context: h.context, source: h.source, tag: h.tag };
        let mut bytes = vec![0u8; len];
        let request = self.reqs.insert(State::RecvPosted { buf: bytes.as_mut_ptr(), cap: len }, Some(peer));
        // The buffer's heap block stays put while `bytes` moves into `kept`, until it completes.
        self.start_rendezvous(request, env, peer, rts, len);
        let context = h.context & !ACTIVE;
        let source = h.source as usize;
        self.am.kept.push_back(Kept { context, peer, source, id, header, bytes, arriving: Some(request) });
    }
}

impl<C: Channel> Engine<C> {
    /// Registers `handler` as `id` on the communicator with point-to-point context `context`,
    /// whose ranks are the world ranks `world` (this process is `rank`). Messages that came
    /// for it before are handed over in the next round of progress.
    pub(crate) fn register_active(
        &mut self,
        context: u32,
        id: u16,
        world: Box<[usize]>,
        rank: usize,
        handler: Box<dyn ActiveHandler>,
    ) -> Result<()> {
        if self.core.am.find(context, id).is_some() {
            return Err(Error::InvalidArgument(format!(
                "active-message handler {id} is already registered on communicator context {context}"
            )));
        }
        let rank = rank as u32;
        self.core.am.handlers.push(Registered { context, id, world, rank, handler, later: false });
        Ok(())
    }

    /// Takes handler `id` of `context` out; messages for it from now on are kept until one is
    /// registered again.
    pub(crate) fn unregister_active(&mut self, context: u32, id: u16) -> Option<Box<dyn ActiveHandler>> {
        let am = &mut self.core.am;
        let i = am.handlers.iter().position(|r| r.context == context && r.id == id)?;
        am.retired.push((context, id));
        // Kept ones wait for a handler that will not come (those still arriving are dropped
        // when whole: their transfer is under way).
        am.kept.retain(|k| {
            let keep = k.context != context || k.id != id || k.arriving.is_some();
            if !keep {
                dropped(k.context, k.source, k.id, k.bytes.len());
            }
            keep
        });
        Some(am.handlers.swap_remove(i).handler)
    }

    /// The communicator context `context` is free again in this process (no communicator
    /// holds it): handlers taken out of it no longer make their messages dropped, since the
    /// next communicator on it may register them again, and its first messages may come before.
    pub(crate) fn reopen_active(&mut self, context: u32) {
        self.core.am.retired.retain(|&(c, _)| c != context);
    }

    /// Starts an active message to handler `id` at world rank `peer`: `header` then `payload`,
    /// gathered without copying. `None`: complete at once.
    ///
    /// # Safety
    /// Both buffers stay valid and unchanged until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn send_active(
        &mut self,
        peer: usize,
        context: u32,
        rank: u32,
        id: u16,
        header: &[u8],
        payload: &[u8],
    ) -> Option<ReqId> {
        let (ctx, tag) = (context | ACTIVE, tag_of(id, header.len()));
        match (header.is_empty(), payload.is_empty()) {
            (true, _) => self.isend(peer, ctx, rank, tag, payload.as_ptr(), payload.len(), false),
            (false, true) => self.isend(peer, ctx, rank, tag, header.as_ptr(), header.len(), false),
            (false, false) => {
                let blocks: Box<[Block]> = Box::new([
                    (header.as_ptr() as *mut u8, header.len()),
                    (payload.as_ptr() as *mut u8, payload.len()),
                ]);
                self.isend_blocks(peer, ctx, rank, tag, blocks, false)
            }
        }
    }

    /// Nothing kept, asked for or in flight.
    #[cfg(test)]
    pub(crate) fn active_idle(&self) -> bool {
        let am = &self.core.am;
        !am.later && am.kept.is_empty() && am.sink.outgoing.is_empty() && am.sending.is_empty()
    }

    /// Polls every peer once more if `poll_all` (and a handler is registered), hands kept
    /// messages over in order, runs handlers that asked for it, sends what they asked for.
    /// Returns whether anything happened.
    #[cold]
    #[inline(never)]
    pub(super) fn advance_active_messages(&mut self, poll_all: bool) -> bool {
        let mut busy = false;
        if poll_all && !self.core.am.handlers.is_empty() {
            // One poll of every peer: the round's own poll may have looked at the awaited peer
            // only (a hint), or drained the peer heard from last only, and a call whose answer
            // comes at once (a lock of one's own window, polled in a loop by OpenCoarrays'
            // event wait) would then never see the requests of the others.
            let core = &mut self.core;
            busy |= self.chan.poll(None, |peer, h, payload| core.on_record(peer, h, payload)) > 0;
        }
        let reqs = &mut self.core.reqs;
        self.core.am.sending.retain(|&(id, _)| {
            let done = reqs.is_done(id);
            if done {
                busy = true;
                // A send to a rank that failed: that rank's own calls report it.
                let _ = finish_request(reqs, id);
            }
            !done
        });
        if !self.core.am.kept.is_empty() {
            busy |= self.hand_over_kept();
        }
        let am = &mut self.core.am;
        if std::mem::take(&mut am.later) {
            busy = true;
            for r in am.handlers.iter_mut().filter(|r| r.later) {
                r.later = false;
                let mut out = Outbox {
                    world: &r.world,
                    context: r.context,
                    rank: r.rank,
                    sink: &mut am.sink,
                    later: &mut r.later,
                };
                r.handler.on_progress(&mut out);
            }
        }
        // The list is put back (empty, its room kept): sending runs no handler, so nothing
        // joins it meanwhile.
        let mut outgoing = std::mem::take(&mut self.core.am.sink.outgoing);
        for o in outgoing.drain(..) {
            busy = true;
            // SAFETY: the bytes are kept in `sending` until the send completes (a Vec's heap
            // block does not move with it).
            let id = unsafe { self.isend(o.peer, o.context, o.rank, o.tag, o.bytes.as_ptr(), o.bytes.len(), false) };
            match id {
                Some(id) => self.core.am.sending.push((id, o.bytes)),
                None => self.core.am.sink.give_back(o.bytes),
            }
        }
        self.core.am.sink.outgoing = outgoing;
        let am = &mut self.core.am;
        am.later = am.handlers.iter().any(|r| r.later);
        // Registered handlers alone are no activity: a waiting rank may sleep.
        busy
    }

    /// Hands over every kept message whose data is whole, whose handler is registered and
    /// that nothing kept before it from the same sender (and communicator) holds back.
    fn hand_over_kept(&mut self) -> bool {
        let mut busy = false;
        let mut held_back: Vec<(u32, usize)> = Vec::new();
        let mut kept = std::mem::take(&mut self.core.am.kept);
        let mut left = VecDeque::with_capacity(kept.len());
        while let Some(mut k) = kept.pop_front() {
            if held_back.contains(&(k.context, k.peer)) {
                left.push_back(k);
                continue;
            }
            if let Some(id) = k.arriving {
                if !self.core.reqs.is_done(id) {
                    held_back.push((k.context, k.peer));
                    left.push_back(k);
                    continue;
                }
                k.arriving = None;
                busy = true;
                if let Err(e) = finish_request(&mut self.core.reqs, id) {
                    // Its sender failed mid-transfer: the message never was (its later ones
                    // cannot come either).
                    verbose(format_args!("active message to handler {} lost: {e}", k.id));
                    continue;
                }
            }
            let am = &mut self.core.am;
            if am.retired(k.context, k.id) {
                dropped(k.context, k.source, k.id, k.bytes.len());
                busy = true;
                continue;
            }
            let Some(r) = am.handlers.iter_mut().find(|r| r.context == k.context && r.id == k.id) else {
                held_back.push((k.context, k.peer));
                left.push_back(k);
                continue;
            };
            if k.source >= r.world.len() {
                let why = format!("an active message from rank {} of {}", k.source, r.world.len());
                self.core.malformed(k.peer, format_args!("{why}"));
                continue;
            }
            let msg = ActiveMessage { source: k.source, header: &k.bytes[..k.header], payload: &k.bytes[k.header..] };
            r.deliver(msg, &mut am.sink);
            busy = true;
        }
        self.core.am.kept = left;
        self.core.am.later |= self.core.am.handlers.iter().any(|r| r.later);
        busy
    }
}

/// Says (under `BB_VERBOSE`) that a message for a handler taken out was dropped.
#[cold]
fn dropped(context: u32, source: usize, id: u16, bytes: usize) {
    verbose(format_args!(
        "active message of {bytes} bytes from rank {source} to handler {id} on communicator context {context} dropped: \
         that handler was unregistered (its window or communicator freed here) and none will come"
    ));
}

/// Frees a completed request of the engine's own, with its outcome.
fn finish_request(reqs: &mut Slab, id: ReqId) -> Result<Completion> {
    let req = reqs.get_mut(id);
    let outcome = match req.error.take() {
        Some(e) => Err(e),
        None => Ok(req.completion),
    };
    reqs.remove(id);
    outcome
}

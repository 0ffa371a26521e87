//! A task's receives: the first queued message that matches a source, a tag and the task's
//! context, else one taken straight from the front of a ring, waiting as `spin.rs` says
//! (spin on the rings, then sleep in the progress loop, `task_progress.rs`).

use std::time::{Duration, Instant};

use crate::link::Front;
use crate::spin;
use crate::task::Task;
use crate::task_progress::Arrived;

/// Where a wait found its message: in the queue, taken straight from a ring, or left at the
/// front of inbound link `.0`'s ring (a receive that holds it there, `held_message.rs`).
enum Found {
    Queued(usize),
    Taken(Arrived),
    Front(usize, Front),
}

/// What [`Task::receive_in_place`] got: a message taken in, or one left at the front of
/// inbound link `.0`'s ring for the caller to hold there (`Link::hold_front`) before it calls
/// anything else of the task's.
pub(crate) enum Received {
    Whole(Arrived),
    Front(usize, Front),
}

impl Task {
    /// Takes the first waiting message from `src` with `tag` (-1: any) in the current context,
    /// waiting up to `timeout` (`None`: for ever, `Some(0)`: not at all).
    pub fn receive(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<Arrived> {
        match self.wait_matching(src, tag, timeout, false)? {
            Found::Queued(i) => self.queue.remove(i),
            Found::Taken(m) => Some(m),
            Found::Front(..) => unreachable!("a wait that takes messages leaves none at a front"),
        }
    }

    /// As [`Task::receive`], but a large message may still be in its sender's memory
    /// (`Arrived::remote`): for a receive whose buffer copies it out itself. With `hold`, a
    /// small message that comes to the front of a ring while it waits is left there
    /// (`Received::Front`) rather than copied out: the caller holds it in its cell.
    pub(crate) fn receive_in_place(
        &mut self,
        src: i32,
        tag: i32,
        timeout: Option<Duration>,
        hold: bool,
    ) -> Option<Received> {
        // A ping-pong's receive: nothing queued, nothing for a handler, the message at the
        // front of its ring. What `wait_matching`'s first look would find, without its
        // bookkeeping (the queue's settling, the clock, the count of rings). (A holding
        // receive looked there already: `held_message::receive`.)
        if !hold && self.queue.is_empty() && self.for_handlers.is_empty() {
            if let Some(m) = self.take_direct(src, tag, self.ctx) {
                return Some(Received::Whole(m));
            }
        }
        self.lazy_ok = true;
        let found = self.wait_matching(src, tag, timeout, hold);
        self.lazy_ok = false;
        let i = match found {
            Some(Found::Taken(m)) => {
                self.settle_queue(None);
                return Some(Received::Whole(m));
            }
            Some(Found::Front(link, f)) => {
                self.settle_queue(None);
                return Some(Received::Front(link, f));
            }
            Some(Found::Queued(i)) => Some(i),
            None => None,
        };
        self.settle_queue(i);
        self.queue.remove(i?).map(Received::Whole)
    }

    /// Where the first matching message waits in the queue, waiting as `receive` does.
    pub fn wait_for(&mut self, src: i32, tag: i32, timeout: Option<Duration>) -> Option<usize> {
        match self.wait_matching(src, tag, timeout, false)? {
            Found::Queued(i) => Some(i),
            Found::Taken(m) => {
                // Newer than all queued from its sender, and the first that matches.
                self.queue.push_back(m);
                Some(self.queue.len() - 1)
            }
            Found::Front(..) => unreachable!("a wait that takes messages leaves none at a front"),
        }
    }

    /// A message that matches, straight from the front of a ring (`Link::take_message`),
    /// where no message handler might want it instead.
    fn take_direct(&mut self, src: i32, tag: i32, ctx: i32) -> Option<Arrived> {
        if !self.handlers.is_empty() {
            return None;
        }
        let wanted = |t: i32, c: i32| (tag == -1 || t == tag) && c == ctx;
        let spare = &mut self.spare;
        self.inbound.iter_mut().filter(|l| src == -1 || l.peer == Some(src)).find_map(|l| l.take_message(wanted, spare))
    }

    /// As [`Task::take_direct`], the message left at the front of its ring: the index of its
    /// link, and where it lies.
    #[inline]
    pub(crate) fn front_direct(&self, src: i32, tag: i32, ctx: i32) -> Option<(usize, Front)> {
        if !self.handlers.is_empty() {
            return None;
        }
        let wanted = |t: i32, c: i32| (tag == -1 || t == tag) && c == ctx;
        self.inbound
            .iter()
            .enumerate()
            .filter(|(_, l)| src == -1 || l.peer == Some(src))
            .find_map(|(i, l)| Some((i, l.front_message(wanted)?)))
    }

    /// The first message that matches, waiting up to `timeout`; with `hold`, a small one that
    /// comes to the front of a ring is left there (`Found::Front`), else it is taken out.
    fn wait_matching(&mut self, src: i32, tag: i32, timeout: Option<Duration>, hold: bool) -> Option<Found> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut first = true;
        loop {
            if !self.for_handlers.is_empty() {
                // The caller (state::call) runs the handlers, then this wait again.
                self.cut_short = true;
                return None;
            }
            let ctx = self.ctx;
            if let Some(i) = self
                .queue
                .iter()
                .position(|m| (src == -1 || m.src == src) && (tag == -1 || m.tag == tag) && m.ctx == ctx)
            {
                return Some(Found::Queued(i));
            }
            // What does not match is copied in before this task waits: its senders go on.
            self.settle_queue(None);
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) && !first {
                return None;
            }
            first = false;
            // A message on a ring comes sooner than a sleeping process wakes: poll the rings
            // a while (no system call) before sleeping, as long as `spin.rs` says.
            let mut spun_out = false;
            let rings = self.inbound.iter().filter(|l| l.ring.is_some()).count();
            if left != Some(Duration::ZERO) && rings > 0 {
                // Yielding between looks lets a peer that shares this core run (the engine's
                // ladder: spin, then yield, then sleep); with more tasks than cores, at once.
                let spin_looks = if spin::oversubscribed(rings + 1) { 0 } else { 1024 };
                let mut until = None;
                let mut looks = 0u32;
                // While spinning, the clock is read every 256th look: a look is a few loads, a
                // clock read in a VM as long as several looks (a tenth of a ping-pong's
                // samples, at every 16th), and a message that lands meanwhile waits for it.
                // The spin's end is set at the first of those reads, not before the first
                // look: a message already there costs no clock read.
                loop {
                    // A small message that matches is taken whole from its ring (or, held, left
                    // in its cell); anything
                    // else goes the general way (frames, the queue) and is matched above.
                    if hold {
                        if let Some((i, f)) = self.front_direct(src, tag, ctx) {
                            return Some(Found::Front(i, f));
                        }
                    } else if let Some(m) = self.take_direct(src, tag, ctx) {
                        return Some(Found::Taken(m));
                    }
                    if self.drain_rings() {
                        break;
                    }
                    looks += 1;
                    if looks < spin_looks {
                        std::hint::spin_loop();
                        if !looks.is_multiple_of(256) {
                            continue;
                        }
                    } else {
                        std::thread::yield_now();
                    }
                    let now = Instant::now();
                    // Never past a timed receive's deadline (the spin may reach 1 ms).
                    let end = *until.get_or_insert_with(|| {
                        deadline.map_or(now + self.spin.now(), |d| d.min(now + self.spin.now()))
                    });
                    if now >= end {
                        spun_out = true;
                        break;
                    }
                }
                if self.queue.iter().any(|m| (src == -1 || m.src == src) && (tag == -1 || m.tag == tag) && m.ctx == ctx)
                {
                    continue;
                }
            }
            let slept = spun_out.then(Instant::now);
            self.progress(left, None);
            if let Some(t) = slept {
                self.spin.slept(t.elapsed());
            }
        }
    }

    /// Takes in what has arrived, waiting up to `timeout` (`None`: until something comes)
    /// while nothing has: the wait of a receive that matches by the program's function.
    pub fn take_in(&mut self, timeout: Option<Duration>) {
        self.progress(timeout, None)
    }
}

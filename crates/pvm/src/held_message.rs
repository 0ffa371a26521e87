//! A small received message left in its ring cell until it is unpacked: `pvm_recv` finds it
//! at the front of a ring (there already, or come while it waited: `Task::receive_in_place`)
//! and makes it the active receive buffer without copying it or giving its cell back;
//! `pvm_upk*` copy out of the cell itself. The cell goes back to its
//! sender (the ring's `head` moves past it) when the next receive frees this buffer, or at
//! the first call that might wait or touch the buffer otherwise (all but those `keeps_held`
//! names), which first copies the message into the buffer's own memory (`settle`): a program
//! that keeps the buffer (`pvm_setrbuf`, `pvm_getrbuf`) keeps a copy, and no sender waits on
//! a cell while its receiver waits for anything. While a cell is held the ring's later records are read as usual,
//! and the sender may fill the rest of the ring but never writes over it (`Ring::hold_record`).
//!
//! One message is held at a time: the active receive buffer's, named in `Buffers::held`. The
//! calls that keep it (`keeps_held`) touch no link: links come and go only in the progress
//! loop, so the link index it names stays valid while it is held.

use crate::link::Front;
use crate::state::Lib;

/// The receive calls' small-message path: a message that matches (`src`, `tag`, -1 any; the
/// task's context) at the front of a ring, with nothing queued, no message handler and no
/// handler's message waiting, becomes the active receive buffer in its cell; its id. The
/// message held before is let go unread (the receive frees its buffer). `None`: the receive
/// goes the general way, after [`settle`].
#[inline(always)]
pub(crate) fn receive(lib: &mut Lib, src: i32, tag: i32) -> Option<i32> {
    let t = lib.task.as_mut()?;
    if !t.queue.is_empty() || !t.for_handlers.is_empty() {
        return None;
    }
    let (i, front) = t.front_direct(src, tag, t.ctx)?;
    Some(hold(lib, i, &front))
}

/// Message `front`, at the front of inbound link `link`'s ring (found by [`receive`], or by
/// a receive that waited for it, `Task::receive_in_place`), becomes the active receive
/// buffer in its cell: its id. The message held before is let go unread.
#[inline(always)]
pub(crate) fn hold(lib: &mut Lib, link: usize, front: &Front) -> i32 {
    let Lib { bufs, task, .. } = lib;
    let t = task.as_mut().expect("a message came to this task");
    if let Some(h) = bufs.held.take() {
        if h.id != bufs.rbuf {
            // Not the buffer this receive frees (it cannot be: kept buffers are settled).
            if let Ok(b) = bufs.get_mut(h.id) {
                b.own_view();
            }
        }
        if let Some(l) = t.inbound.get_mut(h.link) {
            l.release_front();
        }
    }
    t.inbound[link].hold_front(front);
    bufs.deliver_held(front, link)
}

/// The held message, if any, is copied into its buffer's own memory and its cell given
/// back to its sender.
#[cold]
#[inline(never)]
pub(crate) fn settle(lib: &mut Lib) {
    let Some(h) = lib.bufs.held.take() else { return };
    if let Ok(b) = lib.bufs.get_mut(h.id) {
        b.own_view();
    }
    if let Some(l) = lib.task.as_mut().and_then(|t| t.inbound.get_mut(h.link)) {
        l.release_front();
    }
}

/// Whether call `name` leaves a held message in its cell: the unpack calls and the look at
/// its header that often comes between (`pvm_bufinfo`, `pvm_getminfo`) read it there; the
/// calls that fill the send buffer (`pvm_initsend`, `pvm_pk*` but `pvm_pkmesg*`, which read
/// another buffer whole) touch neither it nor a link; and the receives and `pvm_send` let it
/// go themselves before they might wait ([`receive`], else [`settle`]). A ping-pong's side
/// (receive, unpack, initsend, pack, send) so never copies its message in.
#[inline(always)]
pub(crate) fn keeps_held(name: &str) -> bool {
    name.starts_with("pvm_upk")
        || (name.starts_with("pvm_pk") && !name.starts_with("pvm_pkmesg"))
        || matches!(
            name,
            "pvm_bufinfo" | "pvm_getminfo" | "pvm_recv" | "pvm_nrecv" | "pvm_trecv" | "pvm_initsend" | "pvm_send"
        )
}

//! The UDP channel: the socket layer over the sans-IO [`Endpoint`].
//!
//! One non-blocking UDP socket per address the rank offers (all on one port) carries the
//! datagrams to and from every peer; a timer descriptor sits in an epoll set. A sleeping rank
//! waits on that set (or a set holding it) and on the receiving sockets, watched for the sleep
//! alone (`ppoll`, [`sockets::sleep_watching`]): a datagram or a due retransmission wakes it.
//! No socket is ever in an epoll set: a socket in one runs the set's callback for each datagram
//! that arrives at it or leaves it, and a polled ping-pong of raw sockets took 1.54-1.59 us one
//! way with both kinds in a set, 1.50-1.51 with the senders alone there and 1.46-1.49 with
//! neither (`bench/udp/kernel_paths.c`, settings ESARF, SARF, SAR); joining the set for each
//! sleep cost two `epoll_ctl` (`bench/udp/sleep_paths.c`). What a
//! peer's host reports (ICMP, in a sender socket's error queue) is looked at before a sleep,
//! at most every [`ERRORS_EVERY_US`] (a send that the host refused says so at once).
//!
//! `poll` reads what the socket holds, runs the timers that are due and sends what the protocol
//! queued; `try_send` sends at once, and when the window to the peer is
//! full it first takes what the socket holds (the acknowledgements that open it), keeping any
//! records for the next `poll`. A peer that acknowledges nothing for `BB_UDP_TIMEOUT_MS` while
//! datagrams to it wait is reported through [`UdpChannel::take_failure`], named by rank and host;
//! so is, within about a second, a peer whose socket is gone (its process died): its host
//! answers our datagrams, or our keepalive probes, with ICMP port unreachable ([`super::icmp`]).

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};

use super::endpoint::Endpoint;
use super::faults::Faults;
use super::peer::Config;
pub use super::sockets::Bound;
use super::sockets::{self, Batch, Segments, SOCKET_BUFFER};
use super::wire::{self, Key};
use crate::transport::loopback::Loopback;
use crate::transport::tcp::handshake::Secret;
use crate::transport::{Caps, Channel, Header, ReceiveCalls, WouldBlock};
use crate::tunables::{Origin, Tunable};
use crate::{Error, Result};

pub static MTU: Tunable = Tunable::new(
    "BB_UDP_MTU",
    1472,
    "bytes of one datagram of the UDP route (BB_ROUTES=udp), its 56 bytes of header and MAC included; unset: the largest that leaves unfragmented towards every peer (65507 over loopback, 1472 over Ethernet), or this default where the kernel cannot say",
);
pub static WINDOW: Tunable = Tunable::new(
    "BB_UDP_WINDOW",
    512,
    "datagrams in flight to one peer over UDP, at most: a sender with that many unacknowledged is told to wait (back-pressure); chosen by bench/udp/rounds.sh window (1 MiB streaming, 1472-byte datagrams, loopback, chrt, 3 rounds, load 11-17), GB/s loss-free / under 5 % loss: 256: 1.31 / 0.70, 512: 1.41 / 0.83, 1024: 1.44 / 0.78, 2048: 1.43 / 0.65 (acknowledgements list ranges: with only a bitmap of 64, 512 was 1.38 / 0.47)",
);
pub static DEADLINE_MS: Tunable = Tunable::new(
    "BB_UDP_TIMEOUT_MS",
    300_000,
    "a UDP peer that acknowledges nothing this long while datagrams to it wait is reported dead (ms); unlike TCP's kernel, a rank acknowledges only when it calls the library, so this must exceed the longest stretch a rank computes without doing so",
);
pub static EAGER_MAX: Tunable =
    Tunable::new("BB_UDP_EAGER_MAX", 64 << 10, "largest eager message over UDP; above it rendezvous");

/// Largest record payload over UDP (the engine's rendezvous chunks above it).
const MAX_RECORD: usize = 256 << 10;
/// Batched receives per socket per poll at most, so a flood cannot hold a poll forever.
const READ_BATCHES: usize = 4;
/// Polls that find nothing between two readings of the clock (timers are due no sooner than
/// some tens of µs, and an empty poll takes about half a µs): a reading cost ~60 ns and its
/// conversion to µs as much again, on every poll of a rank spinning for its next message.
const CLOCK_EVERY: u32 = 16;
/// Refused datagrams logged per process, at most.
const LOG_REFUSED: u64 = 5;

/// How long a closing channel waits for its last acknowledgements.
const DROP_LINGER: Duration = Duration::from_millis(200);

const TIMER: u64 = 1;

/// A peer heard nothing from this long is probed (µs): how soon a dead peer is noticed while
/// nothing is in flight to it.
const KEEPALIVE_US: u64 = 500_000;

/// The error queues are read before a sleep at most this often (µs): a read per socket (one
/// per peer) before every sleep cost two ranks on one core that sleep for each message ~0.6 µs
/// a message (two empty `recvmsg`). A report missed here is read before a later sleep, or at
/// once when a send to that peer (a retransmission, the keepalive) is refused: a dead peer is
/// still named within about a second.
const ERRORS_EVERY_US: u64 = 100_000;

pub struct UdpChannel {
    me: usize,
    nranks: usize,
    ep: Endpoint,
    /// The sockets datagrams arrive on.
    socks: Vec<UdpSocket>,
    /// The socket each peer's datagrams leave from, connected to it (`None`: not over UDP).
    senders: Vec<Option<UdpSocket>>,
    /// Datagrams to one peer waiting to leave in one system call.
    segments: Segments,
    /// A socket reported an error: its error queue may hold ICMP reports.
    errors: bool,
    /// Where each peer listens; `None` for ranks reached another way.
    addrs: Vec<Option<SocketAddr>>,
    hosts: Vec<String>,
    epoll: Arc<OwnedFd>,
    /// The receiving sockets again (`dup`), which a sleeper watches beside `epoll`: it may
    /// sleep without a borrow of the channel ([`UdpChannel::watch`]).
    watch: Arc<[OwnedFd]>,
    timer: OwnedFd,
    /// When `timer` fires (µs since `origin`; `u64::MAX`: disarmed).
    timer_at: u64,
    /// When the error queues were last read before a sleep (µs since `origin`).
    errors_read: Option<u64>,
    /// Reads of the error queues before a sleep, and settings of the timer (for tests).
    error_reads: u64,
    timer_sets: u64,
    faults: Option<Faults>,
    /// The monotonic clock's reading at creation (µs): times are taken from here.
    origin: u64,
    /// Records sent to ourselves: only the conformance suite's, which drives a bare channel
    /// (the engine's self route is the billboard: see `transport/routes.rs`).
    loopback: Loopback,
    /// Records read while a send waited for acknowledgements, for the next poll.
    stash: VecDeque<(usize, Header, Vec<u8>)>,
    batch: Batch,
    /// When the earliest timer is due (µs since `origin`), or earlier (see `progress`).
    due: u64,
    /// Polls that found nothing since the clock was last read ([`CLOCK_EVERY`]).
    idle: u32,
    /// The last two receives found datagrams, so more are likely: the next receives a batch.
    busy: bool,
    /// The last receive found datagrams.
    found: bool,
    /// A record left since the last receive found datagrams: what came was answered (a
    /// ping-pong), so the next arrival comes alone.
    replied: bool,
    refused: u64,
    /// The next receive may wait in the kernel ([`Channel::poll_blocking`]).
    block: bool,
    /// The receiving sockets block (`BB_WAIT_BLOCK`, `sockets::prepare`).
    can_block: bool,
    /// The receive calls made so far.
    calls: ReceiveCalls,
}

impl UdpChannel {
    /// This rank's receiving sockets, on the `offered` addresses ([`Bound::new`]).
    pub(crate) fn bind(offered: &[std::net::Ipv4Addr]) -> Result<Bound> {
        Bound::new(offered)
    }

    /// Takes over `bound` to reach the ranks of `addrs` (by rank; `None`: not over UDP).
    pub(crate) fn new(
        me: usize,
        hosts: Vec<String>,
        bound: Bound,
        secret: &Secret,
        addrs: Vec<Option<SocketAddr>>,
    ) -> Result<UdpChannel> {
        let nranks = hosts.len();
        let os = |call| move |e: rustix::io::Errno| Error::Os { call, errno: e.into() };
        let faults = Faults::from_env(me).map_err(Error::InvalidArgument)?;
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(os("epoll_create"))?;
        let timer =
            rustix::time::timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                .map_err(os("timerfd_create"))?;
        let socks = bound.0;
        let watch = socks
            .iter()
            .map(|s| s.try_clone().map(OwnedFd::from))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| Error::Os { call: "dup (UDP socket)", errno: e })?;
        // To a peer: from an address beside the socket on a loopback address if the peer's is
        // one, else beside the first socket on another (the kernel routes either way; the peer's
        // MAC check does not care where a datagram came from).
        let on_loopback = |s: &UdpSocket| s.local_addr().is_ok_and(|l| l.ip().is_loopback());
        let mut senders = Vec::with_capacity(nranks);
        for (peer, a) in addrs.iter().enumerate() {
            let sender = match a {
                Some(to) if peer != me => {
                    let beside = socks.iter().find(|s| on_loopback(s) == to.ip().is_loopback()).unwrap_or(&socks[0]);
                    Some(sockets::sender(beside, *to)?)
                }
                _ => None,
            };
            senders.push(sender);
        }
        epoll::add(&epoll, &timer, epoll::EventData::new_u64(TIMER), epoll::EventFlags::IN).map_err(os("epoll_ctl"))?;
        let mtu = match MTU.get_with_origin() {
            (set, Origin::Environment | Origin::Tool) => set,
            (default, Origin::Default) => {
                let paths = addrs.iter().flatten().map(|&to| super::path::datagram_max(to));
                paths.min().flatten().unwrap_or(default)
            }
        };
        let mtu = mtu.clamp(wire::HEAD + wire::MAC + wire::RECORD_HEAD + 64, 65_507);
        let mut segments = Segments::new(mtu);
        for s in senders.iter().flatten() {
            segments.enable(s);
        }
        let rcvbuf = rustix::net::sockopt::socket_recv_buffer_size(&socks[0]).unwrap_or(SOCKET_BUFFER);
        // No more in flight than the receive buffer the kernel gave holds (peers ask for the
        // same): a larger window only overflows the peer's.
        let window = WINDOW.get().min(rcvbuf / mtu).max(8);
        let cfg = Config {
            body: mtu - wire::HEAD - wire::MAC,
            window,
            max_record: MAX_RECORD,
            rto_initial: 5_000,
            rto_min: 1_000,
            rto_max: 200_000,
            deadline: DEADLINE_MS.get() as u64 * 1000,
            ack_every: (window / 8).max(1),
            ack_delay: 200,
            keepalive: KEEPALIVE_US,
        };
        Ok(UdpChannel {
            me,
            nranks,
            ep: Endpoint::new(me, nranks, Key::new(secret), cfg),
            socks,
            senders,
            segments,
            errors: false,
            addrs,
            hosts,
            epoll: Arc::new(epoll),
            watch: watch.into(),
            timer,
            timer_at: u64::MAX,
            errors_read: None,
            error_reads: 0,
            timer_sets: 0,
            faults,
            origin: monotonic_us(),
            loopback: Loopback::default(),
            stash: VecDeque::new(),
            batch: Batch::new(),
            // Due at once: the first look runs the timers and takes every peer's deadline
            // (a keepalive's, before anything moved it).
            due: 0,
            idle: 0,
            busy: false,
            found: false,
            replied: false,
            refused: 0,
            block: false,
            can_block: crate::transport::WAIT_BLOCK.get() != 0,
            calls: ReceiveCalls::default(),
        })
    }

    fn now(&self) -> u64 {
        monotonic_us().saturating_sub(self.origin)
    }

    /// Whether `peer` is reached through this channel.
    pub fn reaches(&self, peer: usize) -> bool {
        self.addrs.get(peer).is_some_and(Option::is_some)
    }

    /// The epoll set a sleeper waits on, beside the sockets of [`watch`](Self::watch). Fails the peers whose hosts reported them gone, sends
    /// every acknowledgement owed (a sleeping rank's peers should not wait for them) and arms
    /// the timer for the next retransmission.
    pub(crate) fn waker(&mut self) -> Arc<OwnedFd> {
        let now = self.now();
        // ICMP reports wait in the sockets' error queues, which wake no one: look before a
        // sleep, now and then (ERRORS_EVERY_US).
        if self.errors_read.is_none_or(|last| now >= last + ERRORS_EVERY_US) {
            self.errors_read = Some(now);
            self.error_reads += 1;
            self.read_errors();
        }
        // The next poll is after a wake-up, maybe by the timer: it reads the clock.
        self.idle = CLOCK_EVERY;
        self.ep.ack_all();
        self.flush(now, true);
        self.due = self.ep.next_deadline().unwrap_or(u64::MAX);
        self.set_timer(now);
        Arc::clone(&self.epoll)
    }

    /// Makes the timer fire by `due`. A timer still to come that fires no later stays as it is:
    /// firing early costs a wake-up and a poll that finds nothing due, where setting it again
    /// cost a system call before every sleep (a ping-pong's next deadline moves later with each
    /// message). One that fired is set again: it stays ready until then.
    fn set_timer(&mut self, now: u64) {
        if self.timer_at <= self.due && self.timer_at > now {
            return;
        }
        self.timer_at = self.due;
        self.timer_sets += 1;
        let value = match self.due {
            u64::MAX => Timespec { tv_sec: 0, tv_nsec: 0 }, // disarmed
            due => {
                // Absolute, on the clock `now` reads: the time it takes to get here is no delay.
                let at = self.origin + due.max(now + 1);
                Timespec { tv_sec: (at / 1_000_000) as i64, tv_nsec: (at % 1_000_000 * 1000) as i64 }
            }
        };
        let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
        let _ = rustix::time::timerfd_settime(
            &self.timer,
            TimerfdTimerFlags::ABSTIME,
            &Itimerspec { it_interval: zero, it_value: value },
        );
    }

    /// The receiving sockets, which a sleeper watches beside the epoll set ([`waker`](Self::waker)).
    pub(crate) fn watch(&self) -> Arc<[OwnedFd]> {
        Arc::clone(&self.watch)
    }

    /// Reads what the sockets hold into the protocol; records go to `f`. Returns the records
    /// handed, and the time it read the clock at if any datagram came.
    ///
    /// A socket found empty last time is asked with `recvfrom` for one datagram, where a
    /// `recvmmsg` asks for a batch: for a socket that holds nothing, the batch call costs
    /// ~560 ns on this machine and `recvfrom` ~420 (it copies no message headers in), and a
    /// rank waiting for its next message polls an empty socket over and over. Once two polls in
    /// a row found datagrams with no record sent between them (a stream), or one receive found
    /// several, the next receive is a batch: after one alone (a ping-pong's message) a batch
    /// call would only find the socket empty, the system call a rank sharing its core with its
    /// peer makes before it yields. A rank that answered what came is in a ping-pong even when
    /// every poll finds a datagram (it yields before polling, on a crowded core): a batch
    /// call there cost ~0.15 µs more per message than `recvfrom`.
    fn read<F: FnMut(usize, &Header, &[u8])>(&mut self, f: &mut F) -> (usize, Option<u64>) {
        let (mut handled, mut read, mut datagrams) = (0, None, 0);
        for k in 0..self.socks.len() {
            for _ in 0..READ_BATCHES {
                // A blocking poll's first receive waits for one datagram, batch or not.
                let wait = std::mem::take(&mut self.block);
                let got = if self.busy && !wait {
                    self.batch.receive(&self.socks[k])
                } else {
                    self.batch.receive_one(&self.socks[k], wait)
                };
                self.calls.count(got.is_ok(), wait);
                // The error's number, not its kind: an empty socket is the common case of every
                // spinning poll, and `io::Error::kind` decodes the number through a table.
                let n = match got {
                    Ok(n) => n,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => {
                        // EAGAIN, or an error the host reported (IP_RECVERR): see the queue.
                        self.errors |= e.raw_os_error() != Some(libc::EAGAIN);
                        break;
                    }
                };
                // A single receive stops here, so that a rank that got its message answers it
                // without a second system call first; the next poll takes a batch.
                let more = self.busy && n == self.batch.capacity();
                let now = self.now();
                read = Some(now);
                datagrams += n;
                for d in 0..n {
                    let mut count = |s: usize, h: &Header, p: &[u8]| {
                        handled += 1;
                        f(s, h, p)
                    };
                    match self.ep.receive(now, self.batch.datagram(d), &mut count) {
                        // Only the sender's timers may have moved earlier: no look at every peer's.
                        Ok(from) => self.due = self.due.min(self.ep.deadline_of(from).unwrap_or(u64::MAX)),
                        Err(why) => {
                            self.refused += 1;
                            if self.refused <= LOG_REFUSED {
                                let from = self.batch.sender(d);
                                eprintln!("billboard: rank {}: dropped a UDP datagram from {from}: {why:?}", self.me);
                            }
                        }
                    }
                    if self.ep.has_output() {
                        // An acknowledgement leaves at once, not after the rest of the batch:
                        // the sender's window reopens while this side works through what came.
                        self.flush(now, false);
                    }
                }
                if !more {
                    break; // what the socket held fit one batch: no second call to find it empty
                }
            }
        }
        if read.is_some() {
            self.busy = datagrams > 1 || (self.found && !self.replied);
            self.replied = false;
        } else {
            self.busy = false;
        }
        self.found = read.is_some();
        if std::mem::take(&mut self.errors) {
            self.read_errors();
        }
        (handled, read)
    }

    /// Fails the peers whose hosts said nothing listens at their address any more.
    #[cold]
    fn read_errors(&mut self) {
        let mut gone = Vec::new();
        for sock in self.socks.iter().chain(self.senders.iter().flatten()) {
            super::icmp::drain(sock, &mut |to| gone.extend(self.addrs.iter().position(|a| *a == Some(to))));
        }
        for peer in gone {
            let why = format!(
                "its UDP socket is gone (ICMP port unreachable from {}): the process exited or was killed",
                self.addrs[peer].expect("found by its address")
            );
            self.ep.fail(peer, why);
        }
    }

    /// Sends what the protocol queued (`all`: and what the fault injection holds back).
    fn flush(&mut self, now: u64, all: bool) {
        let (senders, addrs, faults, errors) = (&self.senders, &self.addrs, &mut self.faults, &mut self.errors);
        let segments = &mut self.segments;
        // What the fault injection lets through, by address.
        let by_address = |errors: &mut bool, segments: &mut Segments, d: &[u8], to: SocketAddr| {
            if let Some(peer) = addrs.iter().position(|a| *a == Some(to)) {
                leave(senders, segments, errors, peer, d);
            }
        };
        self.ep.transmit(|peer, d| match faults {
            Some(f) => {
                if let Some(to) = addrs[peer] {
                    f.apply(now, to, d, &mut |to, d| by_address(errors, segments, d, to));
                }
                true
            }
            None => leave(senders, segments, errors, peer, d),
        });
        if let Some(f) = faults.as_mut().filter(|f| f.holds()) {
            f.release(now, &mut |to, d| by_address(errors, segments, d, to), all);
        }
        segments.send(|p, b, segment| {
            let _ = send_on(senders, errors, p, b, segment);
        });
    }

    /// Reads, runs due timers and sends: what a poll does besides handing records over.
    ///
    /// A poll that read nothing, has nothing waiting to leave and no fault injection holding
    /// datagrams back changes no timer: it reads the clock only every [`CLOCK_EVERY`] times to
    /// see whether one is due. `due` is never later than the true next deadline: what moves a
    /// peer's timers earlier is a datagram from it or a send to it, and each lowers `due` to
    /// that peer's deadline; only when timers ran is it computed afresh over every peer. A
    /// `due` left early by an acknowledgement (which stops timers) costs one run of the timers
    /// that finds nothing, where recomputing it after every datagram looked at every peer.
    fn progress<F: FnMut(usize, &Header, &[u8])>(&mut self, f: &mut F) -> usize {
        let (handled, read) = self.read(f);
        let quiet = read.is_none() && !self.ep.has_output() && self.faults.is_none();
        if quiet {
            self.idle += 1;
            if self.idle < CLOCK_EVERY {
                return handled;
            }
        }
        self.idle = 0;
        let now = read.unwrap_or_else(|| self.now());
        let timers = now >= self.due;
        if timers {
            self.ep.on_timer(now);
        }
        if !quiet || timers {
            self.flush(now, false);
        }
        if timers {
            self.due = self.ep.next_deadline().unwrap_or(u64::MAX);
        }
        handled
    }

    /// [`progress`](Self::progress) from a send: records read are kept for the next poll.
    fn progress_keeping(&mut self) {
        let mut stash = std::mem::take(&mut self.stash);
        self.progress(&mut |s, h: &Header, p: &[u8]| stash.push_back((s, *h, p.to_vec())));
        self.stash = stash;
    }

    fn send(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        let now = self.now();
        if self.ep.send(now, peer, header, pieces).is_err() {
            // The window is full: take what acknowledgements came, keeping records for later.
            self.progress_keeping();
            self.ep.send(self.now(), peer, header, pieces)?;
        }
        self.flush(now, false);
        self.replied = true;
        // A flight that just started is due for its probe (peer.rs), which may come before
        // the minimum timeout: the next poll must see it.
        self.due = self.due.min(self.ep.deadline_of(peer).unwrap_or(u64::MAX));
        Ok(())
    }
}

/// The monotonic clock in µs: `clock_gettime` straight (the C library's, through the vDSO),
/// where `Instant::elapsed` and `Duration::as_micros` added a subtraction of timespecs and a
/// 128-bit division. Not rustix's: its own vDSO lookup faults under valgrind, which counts
/// this path's instructions (`examples/udp_path_cost`).
fn monotonic_us() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the live local `t`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}

/// Sends datagram `d` to `peer`, in the batch being gathered if it can go in one: whether it
/// left or will (false: the socket buffer is full, try again later). A batch that does not leave
/// (the buffer is full) is lost, and any other error loses the datagram: the protocol sends
/// them again, or fails the peer.
fn leave(senders: &[Option<UdpSocket>], segments: &mut Segments, errors: &mut bool, peer: usize, d: &[u8]) -> bool {
    if segments.batches(d) {
        if !segments.fits(peer, d) {
            segments.send(|p, b, segment| {
                let _ = send_on(senders, errors, p, b, segment);
            });
        }
        segments.push(peer, d);
        return true;
    }
    !matches!(send_on(senders, errors, peer, d, None), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Sends `d` to `peer` on its connected socket (cut into datagrams of `segment` bytes if
/// given); notes in `errors` that its host refused one.
fn send_on(
    senders: &[Option<UdpSocket>],
    errors: &mut bool,
    peer: usize,
    d: &[u8],
    segment: Option<usize>,
) -> std::io::Result<usize> {
    let Some(s) = &senders[peer] else { return Ok(0) };
    let r = match segment {
        Some(size) => sockets::send_segmented(s, d, size),
        None => s.send(d),
    };
    // The peer's host said nothing listens there (ICMP): the error queue says which address.
    *errors |= matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused);
    r
}

impl Drop for UdpChannel {
    /// Waits a little (the engine's finalize has polled until [`Channel::flushed`] already)
    /// for peers to acknowledge everything sent, then tells them this rank is done, so a lost
    /// last acknowledgement does not leave them retrying.
    fn drop(&mut self) {
        let deadline = Instant::now() + DROP_LINGER;
        while !self.ep.flushed() && Instant::now() < deadline {
            self.progress(&mut |_, _, _| {});
            let epoll = self.waker();
            sockets::sleep_watching(&*epoll, &self.watch, Duration::from_millis(1));
        }
        self.ep.ack_all();
        for _ in 0..3 {
            self.ep.finish();
        }
        let now = self.now();
        self.flush(now, true);
        let st = self.ep.stats;
        crate::verbose(format_args!(
            "rank {}: UDP route: {} datagrams sent, {} sent again on a timeout, {} on a loss seen in acknowledgements, {} duplicates received, {} refused",
            self.me, st.sent, st.timeouts, st.repairs, st.duplicates, self.refused
        ));
    }
}

impl Channel for UdpChannel {
    /// The next failed peer not yet reported: the peer and what happened, naming its host.
    fn take_failure(&mut self) -> Option<(usize, String)> {
        let (peer, why) = self.ep.take_failure()?;
        Some((peer, format!("on host {}, {why}", self.hosts[peer])))
    }

    #[inline]
    fn has_failure(&self) -> bool {
        self.ep.has_failure()
    }

    /// Stops taking records from `peer` (the engine failed it already: not reported again).
    fn close(&mut self, peer: usize, _why: &str) {
        self.ep.close(peer);
    }

    fn caps(&self) -> Caps {
        Caps {
            max_inline: MAX_RECORD,
            max_record: MAX_RECORD,
            single_copy: false,
            claim_words: 0,
            multicast: false,
            eager_max: Some(EAGER_MAX.get()),
        }
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    #[inline]
    fn try_send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        if peer == self.me {
            self.loopback.push(header, &[payload]);
            return Ok(());
        }
        assert!(self.reaches(peer), "no UDP route to rank {peer}");
        self.send(peer, header, &[payload])
    }

    fn try_send_gather(&mut self, peer: usize, header: &Header, pieces: &[&[u8]]) -> Result<(), WouldBlock> {
        if peer == self.me {
            self.loopback.push(header, pieces);
            return Ok(());
        }
        assert!(self.reaches(peer), "no UDP route to rank {peer}");
        self.send(peer, header, pieces)
    }

    fn try_multicast(&mut self, peers: &[usize], header: &Header, payload: &[u8]) -> Result<(), WouldBlock> {
        // No shared post over UDP: all or none, so check room first.
        let needed = self.ep.datagrams_for(payload.len());
        if peers.iter().any(|&p| p != self.me && !self.ep.has_room(p, needed)) {
            self.progress_keeping();
            if peers.iter().any(|&p| p != self.me && !self.ep.has_room(p, needed)) {
                return Err(WouldBlock);
            }
        }
        for &p in peers {
            self.try_send(p, header, payload)?;
        }
        Ok(())
    }

    /// Waits in the kernel on the receiving socket, where every peer's datagrams arrive (so a
    /// record from any peer ends the wait), when there is one such socket and nothing else to
    /// do: nothing left to send or held back by fault injection, no record kept. Acknowledgements
    /// owed leave first, as before a sleep, so the peer's probe does not fire meanwhile (in a
    /// ping-pong the reply carried them: none is owed). A timer due meanwhile runs at most
    /// [`BLOCK_BOUND`](crate::transport::BLOCK_BOUND) late.
    fn poll_blocking<F: FnMut(usize, &Header, &[u8])>(&mut self, _peer: usize, mut f: F) -> Option<usize> {
        if !self.can_block
            || self.socks.len() != 1
            || self.faults.is_some()
            || !self.loopback.is_empty()
            || !self.stash.is_empty()
        {
            return None;
        }
        self.ep.ack_all();
        if self.ep.has_output() {
            let now = self.now();
            self.flush(now, false);
            if self.ep.has_output() {
                return None; // the socket is full: the caller polls on
            }
        }
        self.block = true;
        let handled = self.progress(&mut f);
        self.block = false;
        Some(handled)
    }

    fn receive_calls(&self) -> ReceiveCalls {
        self.calls
    }

    fn poll<F: FnMut(usize, &Header, &[u8])>(&mut self, _hint: Option<usize>, mut f: F) -> usize {
        let mut handled = 0;
        if !self.loopback.is_empty() {
            let me = self.me;
            handled += self.loopback.drain(|h, p| f(me, h, p));
        }
        while let Some((s, h, p)) = self.stash.pop_front() {
            f(s, &h, &p);
            handled += 1;
        }
        handled + self.progress(&mut f)
    }

    fn read_remote(&self, peer: usize, _addr: u64, _dst: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("rank {peer} is reached over UDP: no single copy"),
        ))
    }

    /// Sleeps until a datagram comes, the next timer is due, or `timeout` passes.
    fn sleep(&self, timeout: Duration) {
        let now = self.now();
        let timeout = match self.ep.next_deadline() {
            Some(due) => timeout.min(Duration::from_micros(due.saturating_sub(now))),
            None => timeout,
        };
        sockets::sleep_watching(&*self.epoll, &self.watch, timeout);
    }

    fn flushed(&self) -> bool {
        self.ep.flushed()
    }
}

/// `n` endpoints in this process over loopback: for the conformance suite, and for
/// `examples/udp_path_cost`, which counts the route's instructions per round trip.
#[doc(hidden)]
pub fn endpoints(n: usize) -> Vec<UdpChannel> {
    let secret = Secret::generate().unwrap();
    let socks: Vec<Bound> = (0..n).map(|_| UdpChannel::bind(&[std::net::Ipv4Addr::LOCALHOST]).unwrap()).collect();
    let addrs: Vec<Option<SocketAddr>> = socks.iter().map(|s| Some(s.local_addr().unwrap())).collect();
    let hosts = vec!["localhost".to_string(); n];
    socks
        .into_iter()
        .enumerate()
        .map(|(me, s)| UdpChannel::new(me, hosts.clone(), s, &secret, addrs.clone()).unwrap())
        .collect()
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod socket_tests;

//! The route's system calls: the sockets a rank receives on, the connected socket it sends to
//! each peer from, and batched receives.
//!
//! A rank receives every peer's datagrams on one socket per offered address (all on the port it
//! publishes). It sends to each peer from a socket of its own, connected to the peer's address
//! on an ephemeral port: the kernel then keeps the route to the peer instead of looking it up
//! for every `sendto` of an unconnected socket (about a fifth of a small datagram's cost, and
//! the largest part of what the route added to a raw UDP ping-pong). Nothing is ever sent to
//! those ports, so they only hold what the peer's host reports (ICMP errors, `IP_RECVERR`).
//! Receives are batched (`recvmmsg`): one system call takes what a poll finds, where reading
//! until `EAGAIN` cost a second call for every datagram.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use crate::transport::{BLOCK_BOUND, WAIT_BLOCK};
use crate::{Error, Result};

/// Socket buffers asked for (the kernel caps them at `net.core.[rw]mem_max` unless privileged).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// This rank's receiving sockets: one per address offered, all bound to the same port.
pub struct Bound(pub(super) Vec<UdpSocket>);

impl Bound {
    /// This rank's sockets: one on each of the `offered` addresses, all on one free port (the
    /// port the rank publishes). Binding only those keeps the route off other interfaces.
    pub fn new(offered: &[Ipv4Addr]) -> Result<Bound> {
        let os = |call| move |e| Error::Os { call, errno: e };
        let mut last = None;
        // Another process may hold the first socket's port on a later address: try a few ports.
        for _ in 0..16 {
            let first = UdpSocket::bind((offered[0], 0)).map_err(os("bind (UDP socket)"))?;
            let port = first.local_addr().map_err(os("getsockname"))?.port();
            let rest: std::io::Result<Vec<UdpSocket>> =
                offered[1..].iter().map(|&ip| UdpSocket::bind((ip, port))).collect();
            match rest {
                Ok(rest) => {
                    let socks: Vec<UdpSocket> = std::iter::once(first).chain(rest).collect();
                    socks.iter().try_for_each(|s| prepare(s, true))?;
                    return Ok(Bound(socks));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(Error::Os { call: "bind (UDP socket, one port on every address)", errno: last.expect("tried") })
    }

    /// The first socket's address (the port is every socket's).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0[0].local_addr()
    }
}

/// ICMP errors queued, large buffers; non-blocking, or (`receiving`, with `BB_WAIT_BLOCK`) blocking for at most
/// [`BLOCK_BOUND`]: every receive but a blocking poll's passes `MSG_DONTWAIT`, and that one may
/// then wait in the kernel ([`Batch::receive_one`]).
fn prepare(s: &UdpSocket, receiving: bool) -> Result<()> {
    let os = |call| move |e| Error::Os { call, errno: e };
    let receiving = receiving && WAIT_BLOCK.get() != 0;
    s.set_nonblocking(!receiving).map_err(os("fcntl (UDP socket)"))?;
    if receiving {
        s.set_read_timeout(Some(BLOCK_BOUND)).map_err(os("setsockopt (SO_RCVTIMEO)"))?;
    }
    super::icmp::enable(s).map_err(|e| Error::Os { call: "setsockopt (IP_RECVERR)", errno: e })?;
    use rustix::net::sockopt;
    for (force, plain) in [
        (
            sockopt::set_socket_recv_buffer_size_force as fn(_, _) -> _,
            sockopt::set_socket_recv_buffer_size as fn(_, _) -> _,
        ),
        (sockopt::set_socket_send_buffer_size_force, sockopt::set_socket_send_buffer_size),
    ] {
        if force(s, SOCKET_BUFFER).is_err() {
            let _ = plain(s, SOCKET_BUFFER);
        }
    }
    Ok(())
}

/// A socket that sends to `to` only: bound to an ephemeral port of `local`'s address, connected.
pub fn sender(local: &UdpSocket, to: SocketAddr) -> Result<UdpSocket> {
    let os = |call| move |e| Error::Os { call, errno: e };
    let ip = local.local_addr().map_err(os("getsockname"))?.ip();
    let s = UdpSocket::bind((ip, 0)).map_err(os("bind (UDP socket to a peer)"))?;
    s.connect(to).map_err(os("connect (UDP socket to a peer)"))?;
    prepare(&s, false)?;
    Ok(s)
}

/// Buffers for one batched receive: [`BATCH`] datagrams of any size UDP carries, and the
/// headers `recvmmsg` takes, set up once.
pub struct Batch {
    bytes: Vec<u8>,
    /// Owned here for the headers, which point at it.
    _iov: Box<[libc::iovec; BATCH]>,
    /// Where each came from.
    names: Box<[libc::sockaddr_in; BATCH]>,
    msgs: Box<[libc::mmsghdr; BATCH]>,
    count: usize,
}

// SAFETY: the raw pointers in `_iov` and `msgs` point into the heap blocks of `bytes`, `iov` and
// `names`, which the Batch owns and never reallocates: moving it to another thread moves them too.
unsafe impl Send for Batch {}

/// Datagrams one receive takes at most.
const BATCH: usize = 16;
/// The length of a sender's address, which the kernel overwrites with the one it wrote.
const NAME_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
/// A slot holds the largest UDP payload (peers may have chosen another datagram size).
const SLOT: usize = 65_536;

impl Batch {
    pub fn new() -> Batch {
        let mut bytes = vec![0u8; BATCH * SLOT];
        let mut iov: Box<[libc::iovec; BATCH]> = Box::new(std::array::from_fn(|k| libc::iovec {
            iov_base: bytes[k * SLOT..].as_mut_ptr().cast(),
            iov_len: SLOT,
        }));
        // SAFETY: sockaddr_in and mmsghdr are plain C data for which all-zero is valid.
        let (mut names, mut msgs): (Box<[libc::sockaddr_in; BATCH]>, Box<[libc::mmsghdr; BATCH]>) =
            unsafe { (Box::new(std::mem::zeroed()), Box::new(std::mem::zeroed())) };
        for k in 0..BATCH {
            let h = &mut msgs[k].msg_hdr;
            h.msg_iov = &mut iov[k];
            h.msg_iovlen = 1;
            h.msg_name = (&mut names[k] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = NAME_LEN;
        }
        Batch { bytes, _iov: iov, names, msgs, count: 0 }
    }

    /// Datagrams one receive takes at most.
    pub fn capacity(&self) -> usize {
        BATCH
    }

    /// Receives what `sock` holds now, up to a batch, in one system call: the count, or the
    /// error (`WouldBlock` when it holds nothing).
    pub fn receive(&mut self, sock: &UdpSocket) -> std::io::Result<usize> {
        for m in &mut self.msgs[..self.count] {
            // The kernel wrote the last names' lengths here; the rest are as set up.
            m.msg_hdr.msg_namelen = NAME_LEN;
        }
        // SAFETY: every header points at its own iovec, slot of `bytes` (of the length given)
        // and name, all alive as long as `self`; the kernel writes only there and into `msgs`.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            self.count = 0;
            return Err(std::io::Error::last_os_error());
        }
        self.count = n as usize;
        Ok(self.count)
    }

    /// Receives one datagram, if `sock` holds any, into the batch's first slot (`recvfrom`, the
    /// cheaper call): 1, or the error (`WouldBlock` when it holds nothing). `wait`: a receiving
    /// socket with none waits for one in the kernel, up to [`BLOCK_BOUND`].
    pub fn receive_one(&mut self, sock: &UdpSocket, wait: bool) -> std::io::Result<usize> {
        self.msgs[0].msg_hdr.msg_namelen = NAME_LEN;
        let h = &mut self.msgs[0].msg_hdr;
        // SAFETY: the slot and the name are the batch's own, of the lengths given, alive as long
        // as `self`; the kernel writes only there and into `msg_namelen`.
        let n = unsafe {
            libc::recvfrom(
                sock.as_raw_fd(),
                self.bytes.as_mut_ptr().cast(),
                SLOT,
                if wait { 0 } else { libc::MSG_DONTWAIT },
                h.msg_name.cast(),
                &mut h.msg_namelen,
            )
        };
        if n < 0 {
            self.count = 0;
            return Err(std::io::Error::last_os_error());
        }
        self.msgs[0].msg_len = n as u32;
        self.count = 1;
        Ok(1)
    }

    /// Datagram `k` of the last receive.
    pub fn datagram(&mut self, k: usize) -> &mut [u8] {
        assert!(k < self.count);
        let len = self.msgs[k].msg_len as usize;
        &mut self.bytes[k * SLOT..k * SLOT + len]
    }

    /// Where datagram `k` of the last receive came from.
    pub fn sender(&self, k: usize) -> SocketAddr {
        let n = &self.names[k];
        SocketAddr::from((Ipv4Addr::from(u32::from_be(n.sin_addr.s_addr)), u16::from_be(n.sin_port)))
    }
}

/// Datagrams to one peer joined into one buffer and sent by one system call (UDP generic
/// segmentation offload: the send carries `UDP_SEGMENT`, the datagram size, so the kernel cuts
/// the buffer into datagrams of that size, the last one shorter). A record's full datagrams all
/// have that size, so a batch ends where a record does.
///
/// The size goes with each send of several datagrams (a control message), never on the socket:
/// with `UDP_SEGMENT` set on the socket every send, a lone small datagram too, took the kernel's
/// segmentation path (its payload in page fragments the receiver copies out of), and a polled
/// ping-pong of 108-byte datagrams between two processes took 1.81 us one way where it takes 1.49
/// without (`bench/udp/kernel_paths.c`, settings SARG and SAR, 2026-11-27).
pub struct Segments {
    /// The datagram size, or `None` where the kernel cannot segment (each datagram alone).
    size: Option<usize>,
    peer: usize,
    bytes: Vec<u8>,
    /// The last datagram was shorter than `size`: nothing may follow it in this batch.
    closed: bool,
}

/// Bytes one segmented send carries at most (the kernel's limit is an IP packet's 64 KiB).
const SEGMENTED_MAX: usize = 63 << 10;

impl Segments {
    /// Batches for datagrams of `size` bytes; none where two of them do not fit one send.
    pub fn new(size: usize) -> Segments {
        let size = (2 * size <= SEGMENTED_MAX).then_some(size);
        Segments { size, peer: 0, bytes: Vec::with_capacity(SEGMENTED_MAX), closed: false }
    }

    /// Finds whether the kernel segments what `sock` sends (setting the option and clearing it
    /// again: sends ask for it one by one); where it cannot, the batches stop.
    pub fn enable(&mut self, sock: &UdpSocket) {
        let Some(size) = self.size else { return };
        let set = |value: libc::c_int| {
            // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live local.
            unsafe {
                libc::setsockopt(
                    sock.as_raw_fd(),
                    libc::SOL_UDP,
                    libc::UDP_SEGMENT,
                    (&value as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            }
        };
        if set(size as libc::c_int) != 0 || set(0) != 0 {
            self.size = None;
        }
    }

    /// Whether datagram `d` can go in a batch ([`fits`](Self::fits) says whether in this one);
    /// false: send it alone.
    pub fn batches(&self, d: &[u8]) -> bool {
        self.size.is_some_and(|size| d.len() <= size)
    }

    /// Whether `d` to `peer` fits the batch as it stands (else send the batch first).
    pub fn fits(&self, peer: usize, d: &[u8]) -> bool {
        self.bytes.is_empty() || (self.peer == peer && !self.closed && self.bytes.len() + d.len() <= SEGMENTED_MAX)
    }

    pub fn push(&mut self, peer: usize, d: &[u8]) {
        self.peer = peer;
        self.bytes.extend_from_slice(d);
        self.closed = Some(d.len()) != self.size;
    }

    /// Hands the batch, if any, to `send(peer, bytes, segment)` and empties it; `segment`: the
    /// datagram size to cut `bytes` into, `None` where they are one datagram.
    pub fn send(&mut self, send: impl FnOnce(usize, &[u8], Option<usize>)) {
        if !self.bytes.is_empty() {
            let segment = self.size.filter(|&size| self.bytes.len() > size);
            send(self.peer, &self.bytes, segment);
            self.bytes.clear();
            self.closed = false;
        }
    }
}

/// Sends `bytes` on the connected `sock` as datagrams of `segment` bytes (the last one
/// shorter), cut by the kernel: one `sendmsg` with a `UDP_SEGMENT` control message.
pub fn send_segmented(sock: &UdpSocket, bytes: &[u8], segment: usize) -> std::io::Result<usize> {
    // A cmsghdr and one u16, aligned as the kernel reads them.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let mut control = Control([0; 32]);
    // SAFETY: CMSG_SPACE is arithmetic on a constant.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as usize;
    assert!(space <= control.0.len(), "a u16 control message fits its buffer");
    let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
    // SAFETY: msghdr is plain C data for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the header points at `control` (aligned, `space` bytes): its first cmsghdr is
    // there, with room for a u16 after it; the kernel reads `bytes` through `iov` only.
    let n = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment as u16);
        libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_DONTWAIT)
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Sleeps until `set` (an epoll set) or one of the sockets of `watch` is readable, or `timeout`
/// passes: one `ppoll`, which watches the sockets for this call alone. Receiving sockets kept in
/// an epoll set run its callback for every datagram that arrives (a one-core ping-pong went
/// 2.151 -> 2.216 us a message that way, bench/README.md), and adding them for a sleep and
/// removing them after cost two `epoll_ctl` (~540 ns a sleep, where this `ppoll` costs ~110 ns
/// more than an empty `epoll_pwait`: `bench/udp/sleep_paths.c`, 2026-11-27).
pub fn sleep_watching(set: &impl AsRawFd, watch: &[std::os::fd::OwnedFd], timeout: std::time::Duration) {
    /// Receiving sockets beside the set that fit on the stack (one per address a rank offers);
    /// more take a heap block.
    const ON_STACK: usize = 7;
    let pollfd = |fd: std::os::fd::RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let all = std::iter::once(set.as_raw_fd()).chain(watch.iter().map(|s| s.as_raw_fd())).map(pollfd);
    let mut stack = [pollfd(-1); ON_STACK + 1];
    let mut heap = Vec::new();
    let fds: &mut [libc::pollfd] = if watch.len() <= ON_STACK {
        let n = watch.len() + 1;
        stack.iter_mut().zip(all).for_each(|(slot, p)| *slot = p);
        &mut stack[..n]
    } else {
        heap.extend(all);
        &mut heap
    };
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: `fds` holds initialised pollfds of descriptors that outlive the call, and `ts` a
    // live timespec; the kernel writes only the `revents` fields.
    let _ = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
}

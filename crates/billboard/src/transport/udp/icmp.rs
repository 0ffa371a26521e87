//! A peer whose socket is gone, told by its host: with `IP_RECVERR` set, an ICMP
//! port-unreachable that answers one of our datagrams is queued on the socket's error queue with
//! the datagram's destination, and wakes `epoll` (`EPOLLERR`). A rank whose process died or was
//! killed has no socket any more, so its host answers the next datagram sent to it (a
//! retransmission, or a keepalive probe while nothing is in flight) within a round trip. A live
//! rank that computes for minutes without calling the library still has its socket: the kernel
//! takes its datagrams and nothing comes back.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Asks the kernel to queue ICMP errors on `sock` (IPv4 `IP_RECVERR`).
pub fn enable(sock: &UdpSocket) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live local.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVERR,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Reads `sock`'s error queue empty; hands `f` the destination of every datagram its host
/// refused (ICMP port unreachable: nothing listens there any more).
pub fn drain(sock: &UdpSocket, f: &mut dyn FnMut(SocketAddr)) {
    loop {
        // SAFETY: sockaddr_in and msghdr are plain C data for which all-zero is valid.
        let mut name: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut control = [0u64; 32]; // u64: cmsg headers need their alignment
        let mut byte = [0u8; 64];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: byte.len() };
        // SAFETY: as above.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut name as *mut libc::sockaddr_in).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every pointer in `msg` points at a live local of the length given.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            return; // EAGAIN: the queue is empty
        }
        // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/NXTHDR stay within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !c.is_null() {
            // SAFETY: a non-null header from CMSG_FIRSTHDR/NXTHDR lies within `control`.
            let (level, kind) = unsafe { ((*c).cmsg_level, (*c).cmsg_type) };
            if level == libc::IPPROTO_IP && kind == libc::IP_RECVERR {
                // SAFETY: an IP_RECVERR message carries a sock_extended_err (read unaligned).
                let e: libc::sock_extended_err = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c).cast()) };
                if e.ee_origin == libc::SO_EE_ORIGIN_ICMP && e.ee_errno == libc::ECONNREFUSED as u32 {
                    let ip = Ipv4Addr::from(u32::from_be(name.sin_addr.s_addr));
                    f(SocketAddr::from((ip, u16::from_be(name.sin_port))));
                }
            }
            // SAFETY: as for CMSG_FIRSTHDR.
            c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
        }
    }
}

//! What the kernel knows of the path to a peer: the largest datagram that leaves in one IP
//! packet, unfragmented (the route's MTU less the IPv4 and UDP headers).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// IPv4 (20) and UDP (8) header bytes.
const HEADERS: usize = 28;

/// The largest unfragmented datagram payload towards `to`, if the kernel can say: 65,507 over
/// loopback (MTU 65,536, capped by the UDP length), 1,472 over Ethernet.
pub fn datagram_max(to: SocketAddr) -> Option<usize> {
    let probe = UdpSocket::bind(("0.0.0.0", 0)).ok()?;
    probe.connect(to).ok()?; // no datagram leaves: this only picks the route
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live local `mtu`.
    let rc = unsafe {
        libc::getsockopt(
            probe.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && mtu as usize > HEADERS).then(|| (mtu as usize - HEADERS).min(65_507))
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_takes_the_largest_datagram() {
        assert_eq!(super::datagram_max("127.0.0.1:9".parse().unwrap()), Some(65_507));
    }
}

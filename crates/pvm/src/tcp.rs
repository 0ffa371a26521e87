//! Messages between tasks of different hosts go over TCP: each task listens on one address
//! that other hosts reach (the engine's choice: `BB_TCP_IF`, else the first interface that is
//! up and not loopback or a container bridge) and tells its agent where (`Frame::Listening`);
//! a sender asks its agent (`Frame::Where`) and connects. Frames go on the connection as on a
//! Unix socket (`link.rs`), with `TCP_NODELAY` so a small message leaves at once.
//!
//! Not yet: the secret every connection's hello proves travels in the clear, as pvmd's
//! messages do; the engine's TCP route's challenge would keep it off the wire.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::time::Duration;

use billboard::transport::tcp::addr::{interfaces, offered, IfChoice};

use crate::error::PvmError;

/// How long a connection to a task of another host may take to open.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// A listener on the address other hosts reach, and that address as `ip:port`; `None` where
/// this host offers none (then only tasks of this host reach this one).
pub(crate) fn listen() -> Option<(TcpListener, String)> {
    let choice = IfChoice::parse(&std::env::var("BB_TCP_IF").unwrap_or_default()).ok()?;
    let ip = *offered(&choice, &interfaces().ok()?).ok()?.first()?;
    let l = TcpListener::bind((ip, 0)).ok()?;
    l.set_nonblocking(true).ok()?;
    let addr = l.local_addr().ok()?.to_string();
    Some((l, addr))
}

/// A connection to task `tid` at `addr` (what its agent said), ready for frames.
pub(crate) fn connect(addr: &str, tid: i32) -> Result<OwnedFd, PvmError> {
    let to: SocketAddr = addr.parse().map_err(|_| PvmError::SysErr)?;
    let s = TcpStream::connect_timeout(&to, CONNECT_WAIT).map_err(|e| {
        crate::state::say(format_args!("libpvm: cannot connect to t{tid:x} at {addr}: {e}"));
        PvmError::NoTask
    })?;
    s.set_nodelay(true).map_err(|_| PvmError::SysErr)?;
    Ok(s.into())
}

/// A connection another host's task made to this one.
pub(crate) fn accepted(s: TcpStream) -> Option<OwnedFd> {
    s.set_nodelay(true).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s.into())
}

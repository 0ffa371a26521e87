//! Which addresses a rank offers its peers on other hosts, and which host it is on.
//!
//! By default every IPv4 address of an interface that is up, except loopback (useless to a
//! remote peer) and virtual bridges of containers and VMs (`docker0`, `virbr0`, `br-…`,
//! `lxcbr0`: reachable from this host only). `BB_TCP_IF` narrows that to one interface by name
//! (`eth1`), to one address (`10.1.0.7`) or to the addresses inside a CIDR block (`10.1.0.0/16`);
//! if nothing matches, the error names what was asked and what this host has. A rank listens on
//! exactly the addresses it offers (loopback alone where it offers none), never on every
//! interface.

use std::net::Ipv4Addr;

use crate::{Error, Result};

/// Interface names never offered by default: bridges that only this host reaches.
const VIRTUAL_BRIDGES: [&str; 4] = ["docker", "virbr", "br-", "lxcbr"];

/// One IPv4 address of one interface of this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub addr: Ipv4Addr,
    pub loopback: bool,
}

/// What `BB_TCP_IF` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfChoice {
    /// Unset: every non-loopback, non-bridge interface.
    Default,
    Name(String),
    Cidr {
        net: Ipv4Addr,
        prefix: u8,
    },
}

impl IfChoice {
    /// Parses `BB_TCP_IF`'s value: empty = default, `a.b.c.d/n` = CIDR, `a.b.c.d` = that address
    /// (a /32), anything else a name.
    pub fn parse(text: &str) -> Result<IfChoice> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(IfChoice::Default);
        }
        let Some((net, prefix)) = t.split_once('/') else {
            return Ok(match t.parse::<Ipv4Addr>() {
                Ok(net) => IfChoice::Cidr { net, prefix: 32 },
                Err(_) => IfChoice::Name(t.to_string()),
            });
        };
        let bad = || Error::InvalidArgument(format!("BB_TCP_IF={t:?}: expected an interface name or a.b.c.d/n"));
        let net: Ipv4Addr = net.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().ok().filter(|&p| p <= 32).ok_or_else(bad)?;
        Ok(IfChoice::Cidr { net, prefix })
    }

    fn admits(&self, i: &Interface) -> bool {
        match self {
            IfChoice::Default => !i.loopback && !VIRTUAL_BRIDGES.iter().any(|b| i.name.starts_with(b)),
            IfChoice::Name(n) => i.name == *n,
            IfChoice::Cidr { net, prefix } => {
                let mask = if *prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
                u32::from(i.addr) & mask == u32::from(*net) & mask
            }
        }
    }
}

/// The addresses to offer peers on other hosts, in order of preference. Empty is allowed with
/// the default choice (a host whose ranks all share it needs none); a named interface or CIDR
/// that matches nothing is an error naming what this host has.
pub fn offered(choice: &IfChoice, all: &[Interface]) -> Result<Vec<Ipv4Addr>> {
    let picked: Vec<Ipv4Addr> = all.iter().filter(|i| choice.admits(i)).map(|i| i.addr).collect();
    if picked.is_empty() && *choice != IfChoice::Default {
        let have: Vec<String> = all.iter().map(|i| format!("{} {}", i.name, i.addr)).collect();
        return Err(Error::InvalidArgument(format!(
            "BB_TCP_IF={choice}: no IPv4 address on this host ({}) matches; it has: {}",
            host_name(),
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        )));
    }
    Ok(picked)
}

impl std::fmt::Display for IfChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IfChoice::Default => f.write_str("(default)"),
            IfChoice::Name(n) => f.write_str(n),
            IfChoice::Cidr { net, prefix } => write!(f, "{net}/{prefix}"),
        }
    }
}

/// Every IPv4 address of every interface that is up.
pub fn interfaces() -> Result<Vec<Interface>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(Error::Os { call: "getifaddrs", errno: std::io::Error::last_os_error() });
    }
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` walks the list getifaddrs returned, which stays valid until freed.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
        // SAFETY: a non-null ifa_addr points to a sockaddr whose family tells its real type.
        if !up || ifa.ifa_addr.is_null() || unsafe { (*ifa.ifa_addr).sa_family } != libc::AF_INET as u16 {
            continue;
        }
        // SAFETY: AF_INET, so the sockaddr is a sockaddr_in.
        let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        out.push(Interface {
            name,
            addr: Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
            loopback: ifa.ifa_flags & libc::IFF_LOOPBACK as u32 != 0,
        });
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// This host's name, for messages.
pub fn host_name() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// Which host this process is on, as ranks compare it: `BB_HOST` where the launcher sets it,
/// else the host name and the network namespace (two namespaces of one machine are two hosts
/// to the routes, as they are to a test that builds a cluster out of namespaces).
pub fn host_key() -> String {
    if let Ok(h) = std::env::var("BB_HOST") {
        if !h.is_empty() {
            return h;
        }
    }
    let netns = std::fs::read_link("/proc/self/ns/net").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let inode: String = netns.chars().filter(char::is_ascii_digit).collect();
    if inode.is_empty() {
        host_name()
    } else {
        format!("{}~{inode}", host_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, addr: [u8; 4], loopback: bool) -> Interface {
        Interface { name: name.into(), addr: Ipv4Addr::from(addr), loopback }
    }

    fn host() -> Vec<Interface> {
        vec![
            iface("lo", [127, 0, 0, 1], true),
            iface("docker0", [172, 17, 0, 1], false),
            iface("eth0", [10, 0, 0, 5], false),
            iface("eth1", [192, 168, 7, 2], false),
        ]
    }

    #[test]
    fn default_skips_loopback_and_bridges() {
        let got = offered(&IfChoice::parse("").unwrap(), &host()).unwrap();
        assert_eq!(got, [Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(192, 168, 7, 2)]);
    }

    #[test]
    fn a_name_or_a_cidr_picks_addresses() {
        assert_eq!(offered(&IfChoice::parse("eth1").unwrap(), &host()).unwrap(), [Ipv4Addr::new(192, 168, 7, 2)]);
        assert_eq!(offered(&IfChoice::parse("10.0.0.0/8").unwrap(), &host()).unwrap(), [Ipv4Addr::new(10, 0, 0, 5)]);
        assert_eq!(
            offered(&IfChoice::parse("192.168.7.2").unwrap(), &host()).unwrap(),
            [Ipv4Addr::new(192, 168, 7, 2)]
        );
        assert!(offered(&IfChoice::parse("192.168.7.3").unwrap(), &host()).is_err());
        assert_eq!(offered(&IfChoice::parse("lo").unwrap(), &host()).unwrap(), [Ipv4Addr::LOCALHOST]);
        assert_eq!(offered(&IfChoice::parse("0.0.0.0/0").unwrap(), &host()).unwrap().len(), 4);
    }

    #[test]
    fn nothing_matching_names_the_choice_and_the_interfaces() {
        let e = offered(&IfChoice::parse("eth9").unwrap(), &host()).unwrap_err().to_string();
        assert!(e.contains("BB_TCP_IF=eth9") && e.contains("eth0 10.0.0.5"), "{e}");
        let e = IfChoice::parse("10.0.0.0/40").unwrap_err().to_string();
        assert!(e.contains("10.0.0.0/40"), "{e}");
    }

    #[test]
    fn this_host_has_loopback() {
        assert!(interfaces().unwrap().iter().any(|i| i.loopback && i.addr == Ipv4Addr::LOCALHOST));
        assert!(!host_key().is_empty());
    }
}

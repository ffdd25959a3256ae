//! Which NICs a process uses: socket inodes → local addresses in
//! `/proc/<pid>/net/{tcp,udp,tcp6,udp6}` → interface (IPv6 from `if_inet6`,
//! IPv4 by longest connected route), and AF_PACKET bindings by ifindex.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::sys::sysroot::Sysroot;

#[derive(Debug, Clone)]
pub(super) struct Route {
    pub iface: String,
    pub dest: Ipv4Addr,
    pub prefix: u8,
    pub gateway_zero: bool,
}

/// `/proc/net/route` prints addresses as the host-order u32 of the
/// network-order bytes.
fn hex_v4(h: &str) -> Option<Ipv4Addr> {
    u32::from_str_radix(h, 16)
        .ok()
        .map(|v| Ipv4Addr::from(v.to_le_bytes()))
}

/// `/proc/net/tcp6` prints four host-order u32 words.
fn hex_v6_words(h: &str) -> Option<Ipv6Addr> {
    if h.len() != 32 {
        return None;
    }
    let mut b = [0u8; 16];
    for w in 0..4 {
        let v = u32::from_str_radix(&h[w * 8..w * 8 + 8], 16).ok()?;
        b[w * 4..w * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    Some(Ipv6Addr::from(b))
}

/// `if_inet6` prints the 16 bytes in network order.
fn hex_v6_bytes(h: &str) -> Option<Ipv6Addr> {
    if h.len() != 32 {
        return None;
    }
    let mut b = [0u8; 16];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&h[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(Ipv6Addr::from(b))
}

pub(super) fn routes(root: &Sysroot, abs: &str) -> Vec<Route> {
    let Some(text) = root.read_opt(abs) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let iface = f.first()?.to_string();
            let dest = hex_v4(f.get(1)?)?;
            let gw = hex_v4(f.get(2)?)?;
            let mask = u32::from_be_bytes(hex_v4(f.get(7)?)?.octets());
            Some(Route {
                iface,
                dest,
                prefix: mask.count_ones() as u8,
                gateway_zero: gw.is_unspecified(),
            })
        })
        .collect()
}

pub(super) fn if_inet6(root: &Sysroot, abs: &str) -> Vec<(Ipv6Addr, String)> {
    let Some(text) = root.read_opt(abs) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((hex_v6_bytes(f.first()?)?, f.get(5)?.to_string()))
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Local {
    V4(Ipv4Addr),
    V6(Ipv6Addr),
    Packet(u32),
}

/// Socket tables and addressing of one network namespace.
#[derive(Debug, Default)]
pub(super) struct NetNs {
    sockets: HashMap<u64, Local>,
    routes: Vec<Route>,
    v6: Vec<(Ipv6Addr, String)>,
}

impl NetNs {
    /// Reads the tables as seen by `pid` (its own namespace).
    pub(super) fn load(root: &Sysroot, pid: u32) -> Self {
        let base = format!("/proc/{pid}/net");
        let mut ns = NetNs {
            routes: routes(root, &format!("{base}/route")),
            v6: if_inet6(root, &format!("{base}/if_inet6")),
            ..Default::default()
        };
        for (file, v6) in [
            ("tcp", false),
            ("udp", false),
            ("tcp6", true),
            ("udp6", true),
        ] {
            let Some(text) = root.read_opt(format!("{base}/{file}")) else {
                continue;
            };
            for l in text.lines().skip(1) {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (Some(local), Some(inode)) = (f.get(1), f.get(9)) else {
                    continue;
                };
                let Ok(inode) = inode.parse::<u64>() else {
                    continue;
                };
                let addr = local.split(':').next().unwrap_or("");
                let l = if v6 {
                    hex_v6_words(addr).map(|a| match a.to_ipv4_mapped() {
                        Some(v4) => Local::V4(v4),
                        None => Local::V6(a),
                    })
                } else {
                    hex_v4(addr).map(Local::V4)
                };
                if let Some(l) = l {
                    ns.sockets.insert(inode, l);
                }
            }
        }
        if let Some(text) = root.read_opt(format!("{base}/packet")) {
            for l in text.lines().skip(1) {
                let f: Vec<&str> = l.split_whitespace().collect();
                if let (Some(ifi), Some(inode)) = (
                    f.get(4).and_then(|s| s.parse::<u32>().ok()),
                    f.get(8).and_then(|s| s.parse::<u64>().ok()),
                ) {
                    ns.sockets.insert(inode, Local::Packet(ifi));
                }
            }
        }
        ns
    }

    fn iface_of(&self, l: Local, ifindex: &BTreeMap<u32, String>) -> Option<String> {
        match l {
            Local::Packet(0) => None,
            Local::Packet(i) => ifindex.get(&i).cloned(),
            Local::V6(a) => {
                if a.is_unspecified() || a.is_loopback() {
                    return None;
                }
                self.v6
                    .iter()
                    .find(|(x, _)| *x == a)
                    .map(|(_, n)| n.clone())
            }
            Local::V4(a) => {
                if a.is_unspecified() || a.is_loopback() {
                    return None;
                }
                let av = u32::from_be_bytes(a.octets());
                self.routes
                    .iter()
                    .filter(|r| r.gateway_zero && r.iface != "lo")
                    .filter(|r| {
                        let mask = if r.prefix == 0 {
                            0
                        } else {
                            u32::MAX << (32 - u32::from(r.prefix))
                        };
                        av & mask == u32::from_be_bytes(r.dest.octets()) & mask
                    })
                    .max_by_key(|r| r.prefix)
                    .map(|r| r.iface.clone())
            }
        }
    }
}

/// Socket inodes of a process, from its fd links (`socket:[123]`).
pub(super) fn socket_inodes(root: &Sysroot, pid: u32) -> Vec<u64> {
    let Ok(rd) = std::fs::read_dir(root.path(format!("/proc/{pid}/fd"))) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let t = std::fs::read_link(e.path()).ok()?;
            let t = t.to_str()?;
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// NICs a process's sockets are tied to; empty when none can be told.
pub(super) fn nics_of(ns: &NetNs, inodes: &[u64], ifindex: &BTreeMap<u32, String>) -> Vec<String> {
    let set: BTreeSet<String> = inodes
        .iter()
        .filter_map(|i| ns.sockets.get(i))
        .filter_map(|l| ns.iface_of(*l, ifindex))
        .collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_hex_addresses_decode() {
        assert_eq!(hex_v4("0501000A"), Some(Ipv4Addr::new(10, 0, 1, 5)));
        assert_eq!(
            hex_v6_bytes("fe800000000000000000000000000001"),
            Some("fe80::1".parse().unwrap())
        );
        // tcp6 words: 2001:db8::5 as four little-endian u32s.
        assert_eq!(
            hex_v6_words("B80D0120000000000000000005000000"),
            Some("2001:db8::5".parse().unwrap())
        );
    }
}

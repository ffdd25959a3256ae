//! Network device counters from one rtnetlink `RTM_GETLINK` dump
//! (`IFLA_STATS64` of every link), instead of six sysfs files per device:
//! a container host with 1,000 veths would otherwise open 6,000 files per
//! frame (BENCHMARKS.md, "Device counters" has the cost of both).
//!
//! Both sources read the same kernel figures (`dev_get_stats`), so they
//! agree to the packet; `tests/live/netdev_live.rs` checks it on live veths.
//!
//! The sysfs reader (`procfiles::read_devices`) stays for `--sysroot` trees
//! (the live kernel would describe another machine) and as the fallback
//! when the dump fails; the sample then carries a note saying so.
//!
//! Namespace: the dump lists the links of nettop's network namespace,
//! sysfs those of the namespace /sys was mounted for (`crate::sys::rtnl`).

use anyhow::{anyhow, bail};
use netlink_packet_core::NlasIterator;
use netlink_packet_route::link::Stats64;

use super::procfiles;
use crate::sample::{GapCause, RawDevice};
use crate::sys::rtnl::{self, RtnlError, Stats};
use crate::sys::sysroot::Sysroot;

/// Attribute types from include/uapi/linux/if_link.h.
const IFLA_IFNAME: u16 = 3;
const IFLA_STATS64: u16 = 23;
/// `struct ifinfomsg` precedes the attributes.
const IFINFOMSG: usize = 16;
/// `rtnl_link_stats64` up to `rx_dropped` (the 7th u64), the last field
/// nettop uses.
const STATS64_USED: usize = 7 * 8;

/// One link's name, index and counters from its `RTM_NEWLINK` payload.
/// Only `IFLA_IFNAME` and `IFLA_STATS64` are looked at: decoding every
/// attribute of a link (AF_SPEC, link info...) with `netlink-packet-route`
/// would cost more than the kernel's work of building the dump.
pub fn decode_link(payload: &[u8]) -> anyhow::Result<RawDevice> {
    let attrs = payload
        .get(IFINFOMSG..)
        .ok_or_else(|| anyhow!("{} bytes, shorter than ifinfomsg", payload.len()))?;
    let ifindex = rtnl::payload_ifindex(payload);
    let mut name = None;
    let mut stats = None;
    for nla in NlasIterator::new(attrs) {
        let nla = nla.map_err(|e| anyhow!("{e}"))?;
        match nla.kind() {
            IFLA_IFNAME => {
                let v = nla.value();
                let v = v.strip_suffix(&[0]).unwrap_or(v);
                name = Some(String::from_utf8_lossy(v).into_owned());
            }
            IFLA_STATS64 => {
                let v = nla.value();
                if v.len() < STATS64_USED {
                    bail!("IFLA_STATS64 of {} bytes", v.len());
                }
                stats = Some(Stats64::parse(v).map_err(|e| anyhow!("{e}"))?);
            }
            _ => {}
        }
    }
    let name = name.ok_or_else(|| anyhow!("no IFLA_IFNAME"))?;
    let s = stats.ok_or_else(|| anyhow!("{name}: no IFLA_STATS64"))?;
    Ok(RawDevice {
        name,
        ifindex: u32::try_from(ifindex).unwrap_or(0),
        rx_packets: s.rx_packets,
        rx_bytes: s.rx_bytes,
        tx_packets: s.tx_packets,
        tx_bytes: s.tx_bytes,
        rx_dropped: s.rx_dropped,
        ..Default::default()
    })
}

/// Every link of nettop's network namespace with its counters, sorted by
/// name (as the sysfs reader lists them), plus descriptions of link
/// messages that could not be decoded.
pub fn read_netlink() -> Result<(Vec<RawDevice>, Vec<String>), RtnlError> {
    let (mut devs, bad) = rtnl::dump_links(Stats::Include, decode_link)?;
    devs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((devs, bad))
}

/// Whether a namespace reader failed because the namespace's file is gone
/// (the namespace went away since the list was made).
fn is_not_found(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    })
}

/// Device counters of one sample, and why they are incomplete or came from
/// the fallback, if they did.
#[derive(Debug, Default)]
pub struct DeviceRead {
    pub devices: Vec<RawDevice>,
    pub note: Option<String>,
    /// Set when `devices` leaves out devices that exist (the note says
    /// which); the sysfs fallback alone is complete.
    pub gap: Option<GapCause>,
}

/// Live: one netlink dump, sysfs if it fails. A `--sysroot` tree: sysfs.
/// Never fails: what went wrong is in the note.
pub fn read_devices(root: &Sysroot) -> DeviceRead {
    read_devices_with(root, read_netlink)
}

/// [`read_devices`] with the dump passed in, so the fallback can be tested
/// against the real sysfs without breaking the host's netlink.
fn read_devices_with(
    root: &Sysroot,
    netlink: impl FnOnce() -> Result<(Vec<RawDevice>, Vec<String>), RtnlError>,
) -> DeviceRead {
    let sysfs = |why: Option<String>| match procfiles::read_devices(root) {
        Ok(devices) => DeviceRead {
            devices,
            note: why.map(|w| format!("device counters from sysfs: {w}")),
            gap: None,
        },
        Err(e) => DeviceRead {
            devices: Vec::new(),
            note: Some(match why {
                Some(w) => format!("no device counters: {w}; sysfs: {e:#}"),
                None => format!("no device counters: {e:#}"),
            }),
            gap: Some(GapCause::Unreadable),
        },
    };
    if !root.is_live() {
        return sysfs(None);
    }
    match netlink() {
        Ok((devices, bad)) if bad.is_empty() => DeviceRead {
            devices,
            note: None,
            gap: None,
        },
        Ok((devices, bad)) => DeviceRead {
            devices,
            note: Some(format!(
                "device counters: {} link(s) left out: {}",
                bad.len(),
                bad.join("; ")
            )),
            gap: Some(GapCause::LinksLeftOut),
        },
        Err(e) => sysfs(Some(e.to_string())),
    }
}

/// How many samples a list of network namespaces is reused: walking every
/// process's `ns/net` link costs a readlink per process.
const NETNS_REFRESH: u64 = 10;

/// Device counters of every network namespace but nettop's own (see
/// `sys::netns`): one rtnetlink dump per namespace per sample, on a
/// helper thread that entered it (a socket answers for its opener's
/// namespace). The namespace list is re-read every [`NETNS_REFRESH`]
/// samples; nettop keeps no descriptor open on a namespace between samples,
/// so it never keeps a dead container's namespace alive.
#[derive(Default)]
pub struct OtherNamespaces {
    found: Vec<crate::sys::netns::Found>,
    /// Namespaces that exist but could not be listed (`netns::enumerate_live_and_hidden`).
    hidden: usize,
    read_at: Option<u64>,
    own_inode: u64,
}

impl OtherNamespaces {
    /// Devices of the other namespaces (fixture directories on a fake
    /// root), and a note when some could not be read. Also stamps
    /// `own`'s devices with nettop's namespace inode, so napi instances
    /// (which carry the inode) find them.
    /// `processes`: every process on the host, when the caller has them
    /// (`netns::enumerate_live`).
    pub fn read(
        &mut self,
        root: &Sysroot,
        seq: u64,
        own: &mut [RawDevice],
        processes: impl FnOnce() -> Option<Vec<u32>>,
    ) -> DeviceRead {
        use crate::sys::netns;
        let mut out = DeviceRead::default();
        if !root.is_live() {
            for (info, sub) in netns::enumerate_fixture(root) {
                match procfiles::read_devices(&sub) {
                    Ok(mut devs) => {
                        for d in &mut devs {
                            d.netns = info.name.clone();
                            d.netns_inode = info.inode;
                        }
                        out.devices.extend(devs);
                    }
                    Err(e) => {
                        out.note = Some(format!("netns {}: no device counters: {e:#}", info.name));
                        out.gap = Some(GapCause::NetnsFailed);
                    }
                }
            }
            return out;
        }
        if self.read_at.is_none_or(|at| seq >= at + NETNS_REFRESH) {
            (self.found, self.hidden) = netns::enumerate_live_and_hidden(processes().as_deref());
            self.own_inode = netns::own_inode().unwrap_or(0);
            self.read_at = Some(seq);
        }
        for d in own.iter_mut() {
            d.netns_inode = self.own_inode;
        }
        let mut failed = Vec::new();
        let mut gone = false;
        for f in &self.found {
            match netns::with_netns_sockets(&f.path, read_netlink) {
                Ok(Ok((mut devs, _bad))) => {
                    for d in &mut devs {
                        d.netns = f.info.name.clone();
                        d.netns_inode = f.info.inode;
                    }
                    out.devices.extend(devs);
                }
                // The namespace went away since the list was made.
                Err(e) if is_not_found(&e) => gone = true,
                Ok(Err(e)) => failed.push(format!("{}: {e}", f.info.name)),
                Err(e) => failed.push(format!("{}: {e:#}", f.info.name)),
            }
        }
        if gone {
            self.read_at = None;
        }
        let denied = failed
            .iter()
            .filter(|f| f.contains("not permitted"))
            .count();
        if (denied > 0 || self.hidden > 0) && denied == failed.len() {
            // Not root: one short line, not one per namespace.
            let n = denied + self.hidden;
            let find = if self.hidden > 0 {
                ", and CAP_SYS_PTRACE to find them"
            } else {
                ""
            };
            out.note = Some(format!(
                "device counters of {n} other network namespace(s) not read: \
                 entering them needs CAP_SYS_ADMIN{find}"
            ));
            out.gap = Some(GapCause::NetnsDenied);
        } else if !failed.is_empty() {
            out.note = Some(format!(
                "device counters of network namespaces missing: {}",
                failed.join("; ")
            ));
            out.gap = Some(GapCause::NetnsFailed);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::rtnl::testing::{assert_never_panics, link, nla};

    /// A namespace whose file vanished since the list was made reads as
    /// gone (the list is redone), not as a failure; a refusal does not.
    #[test]
    fn a_vanished_namespace_is_gone_not_failed() {
        let dir = tempfile::tempdir().unwrap();
        let e = crate::sys::netns::with_netns_sockets(&dir.path().join("net"), || ()).unwrap_err();
        assert!(is_not_found(&e), "{e:#}");
        assert!(format!("{e:#}").contains("No such file"), "{e:#}");
        let denied = anyhow::Error::new(std::io::Error::from_raw_os_error(libc::EPERM))
            .context("setns(CLONE_NEWNET)");
        assert!(!is_not_found(&denied));
    }

    /// An RTM_NEWLINK payload as the kernel builds it: ifinfomsg, the name,
    /// an unrelated attribute (IFLA_MTU), then `rtnl_link_stats64` of
    /// `stats_len` bytes whose i-th u64 is `(i + 1) * 10`.
    fn payload(ifindex: i32, name: &str, stats_len: Option<usize>) -> Vec<u8> {
        let mut p = link(ifindex, name);
        nla(&mut p, 4, &1500u32.to_ne_bytes());
        if let Some(len) = stats_len {
            let s: Vec<u8> = (0..len / 8)
                .flat_map(|i| ((i as u64 + 1) * 10).to_ne_bytes())
                .collect();
            nla(&mut p, IFLA_STATS64, &s);
        }
        p
    }

    #[test]
    fn decodes_name_index_and_the_right_counters() {
        // 6.9+ sends 25 u64s, older kernels 24: both decode alike.
        for len in [25 * 8, 24 * 8, STATS64_USED] {
            let d = decode_link(&payload(7, "veth0", Some(len))).unwrap();
            // rx_packets, tx_packets, rx_bytes, tx_bytes, .., rx_dropped
            assert_eq!(
                (
                    d.name.as_str(),
                    d.ifindex,
                    d.rx_packets,
                    d.tx_packets,
                    d.rx_bytes,
                    d.tx_bytes,
                    d.rx_dropped
                ),
                ("veth0", 7, 10, 20, 30, 40, 70)
            );
        }
    }

    #[test]
    fn missing_or_short_attributes_are_errors() {
        assert!(
            decode_link(&payload(3, "x", None))
                .unwrap_err()
                .to_string()
                .contains("no IFLA_STATS64")
        );
        assert!(
            decode_link(&payload(3, "x", Some(48)))
                .unwrap_err()
                .to_string()
                .contains("48 bytes")
        );
        assert!(decode_link(&[0u8; 8]).is_err());
        let mut p = payload(3, "x", Some(200));
        // An attribute length that overruns the message.
        let at = IFINFOMSG;
        p[at..at + 2].copy_from_slice(&4000u16.to_ne_bytes());
        assert!(decode_link(&p).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let good = payload(4, "eth1", Some(200));
        assert_never_panics(400, &good, decode_link);
    }

    /// Live, a failed dump falls back to the real sysfs and says so; a
    /// partly undecodable one keeps what decoded and says what was left out.
    #[test]
    fn live_fallback_to_sysfs_is_announced() {
        let live = Sysroot::default();
        let r = read_devices_with(&live, || {
            Err(RtnlError::Socket(std::io::Error::from_raw_os_error(
                libc::EACCES,
            )))
        });
        let note = r.note.unwrap();
        assert!(
            note.starts_with("device counters from sysfs: rtnetlink socket:"),
            "{note}"
        );
        assert!(r.devices.iter().any(|d| d.name == "lo" && d.ifindex == 1));
        let r = read_devices_with(&live, || {
            Ok((
                vec![RawDevice::default()],
                vec!["undecodable (ifindex 9)".into()],
            ))
        });
        assert_eq!(r.devices.len(), 1);
        assert!(
            r.note
                .unwrap()
                .contains("1 link(s) left out: undecodable (ifindex 9)")
        );
        // The real dump of this namespace: loopback, nothing left out.
        let r = read_devices(&live);
        assert_eq!(r.note, None);
        assert!(r.devices.iter().any(|d| d.name == "lo" && d.ifindex == 1));
    }

    /// A fake tree never reaches netlink: its devices are its own.
    #[test]
    fn sysroot_reads_sysfs_and_says_why_when_it_cannot() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("sys/class/net/fake0");
        std::fs::create_dir_all(d.join("statistics")).unwrap();
        std::fs::write(d.join("ifindex"), "42\n").unwrap();
        for f in [
            "rx_packets",
            "rx_bytes",
            "tx_packets",
            "tx_bytes",
            "rx_dropped",
        ] {
            std::fs::write(d.join("statistics").join(f), "5\n").unwrap();
        }
        let r = read_devices(&Sysroot::new(dir.path()));
        assert_eq!(r.note, None);
        assert_eq!(r.devices.len(), 1);
        assert_eq!(
            (r.devices[0].name.as_str(), r.devices[0].ifindex),
            ("fake0", 42)
        );
        std::fs::write(d.join("statistics/rx_bytes"), "lots\n").unwrap();
        let r = read_devices(&Sysroot::new(dir.path()));
        assert!(r.devices.is_empty());
        let note = r.note.unwrap();
        assert!(note.contains("rx_bytes") && note.contains("lots"), "{note}");
    }
}

//! One rtnetlink `RTM_GETLINK` dump, shared by the topology's XDP modes
//! (`topology::xdp`) and the collector's device counters
//! (`collector::netdev`): one socket, request, receive loop and message
//! framing, with a caller-supplied decoder for each link message.
//!
//! Scope: a `NETLINK_ROUTE` socket sees the links of the network namespace
//! of the *calling thread*, not of the host nor of the namespace /sys was
//! mounted for (the two agree unless nettop runs in a different network
//! namespace from its /sys mount; `ip netns exec` keeps them in step).
//!
//! Robustness: every recv has a timeout, a datagram too big for the buffer
//! is detected (`MSG_TRUNC`) and the dump redone with room for it, a dump
//! raced by link changes (`NLM_F_DUMP_INTR`) is retried, and framing is
//! bounds-checked so no byte sequence can panic.

use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkExtentMask, LinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::sys::bytes::field;

#[derive(Debug, thiserror::Error)]
pub enum RtnlError {
    #[error("rtnetlink socket: {0}")]
    Socket(#[source] std::io::Error),
    #[error("rtnetlink RTM_GETLINK dump: {0}")]
    Io(#[source] std::io::Error),
    #[error("rtnetlink RTM_GETLINK dump refused by the kernel: errno {0}")]
    Kernel(i32),
    #[error("rtnetlink RTM_GETLINK dump: {0}")]
    Malformed(String),
    #[error("rtnetlink RTM_GETLINK dump kept changing under us (NLM_F_DUMP_INTR)")]
    Interrupted,
    #[error("rtnetlink datagram of {0} bytes exceeds the receive buffer")]
    Truncated(usize),
}

/// How long one recv may block: a dump answers in microseconds, so a stuck
/// socket must cost the caller a bounded delay, never a hang.
const RECV_TIMEOUT: Duration = Duration::from_millis(500);
/// Dumps raced by link changes are retried this many times in total.
const DUMP_TRIES: usize = 3;
const SEQ: u32 = 0x6e74_7864; // "ntxd"

/// `nlmsghdr` length; message types from include/uapi/linux/netlink.h and
/// rtnetlink.h.
const HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const RTM_NEWLINK: u16 = 16;
/// `struct ifinfomsg`: family, pad, type, index, flags, change.
const IFINFOMSG: usize = 16;

/// Whether the kernel includes per-link counters (`IFLA_STATS`,
/// `IFLA_STATS64`, ...) in the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stats {
    /// `RTEXT_FILTER_SKIP_STATS` (kernels from 4.x honour it, older ones
    /// ignore the bit): no counters to build or decode.
    Skip,
    Include,
}

/// What one received datagram held.
#[derive(Debug, PartialEq, Eq)]
pub struct DumpChunk<T> {
    pub links: Vec<T>,
    /// `NLMSG_DONE` seen: the dump is complete.
    pub done: bool,
    /// Some message carried `NLM_F_DUMP_INTR`: links changed mid-dump.
    pub interrupted: bool,
    /// Messages that could not be decoded (the rest still are).
    pub bad: Vec<String>,
}

impl<T> Default for DumpChunk<T> {
    fn default() -> Self {
        Self {
            links: Vec::new(),
            done: false,
            interrupted: false,
            bad: Vec::new(),
        }
    }
}

/// Interface index of an `RTM_NEWLINK` payload (`ifinfomsg.ifi_index`), for
/// naming a message that could not be decoded; 0 when too short.
pub fn payload_ifindex(payload: &[u8]) -> i32 {
    field(payload, 4).map_or(0, i32::from_ne_bytes)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    field(b, at).map(u32::from_ne_bytes)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    field(b, at).map(u16::from_ne_bytes)
}

/// Splits one datagram into netlink messages and hands each `RTM_NEWLINK`
/// payload (`ifinfomsg` and attributes) to `decode`. Bounds-checked:
/// lengths that overrun the buffer end the chunk with a `bad` entry, a
/// payload `decode` rejects becomes a `bad` entry naming its ifindex; never
/// a panic.
pub fn parse_chunk<T>(
    buf: &[u8],
    decode: &mut impl FnMut(&[u8]) -> anyhow::Result<T>,
) -> Result<DumpChunk<T>, RtnlError> {
    let mut out = DumpChunk::default();
    let mut off = 0usize;
    while off < buf.len() {
        let rest = &buf[off..];
        let (Some(len), Some(ty), Some(flags)) =
            (u32_at(rest, 0), u16_at(rest, 4), u16_at(rest, 6))
        else {
            out.bad
                .push(format!("{} trailing bytes at offset {off}", rest.len()));
            break;
        };
        let len = len as usize;
        if len < HDR || len > rest.len() {
            out.bad.push(format!(
                "message at offset {off} claims {len} bytes, {} left",
                rest.len()
            ));
            break;
        }
        if flags & NLM_F_DUMP_INTR != 0 {
            out.interrupted = true;
        }
        let payload = &rest[HDR..len];
        match ty {
            RTM_NEWLINK => {
                let decoded = if payload.len() < IFINFOMSG {
                    Err(anyhow::anyhow!(
                        "{} bytes, shorter than ifinfomsg",
                        payload.len()
                    ))
                } else {
                    decode(payload)
                };
                match decoded {
                    Ok(l) => out.links.push(l),
                    Err(e) => out.bad.push(format!(
                        "undecodable link message (ifindex {}): {e:#}",
                        payload_ifindex(payload)
                    )),
                }
            }
            // The payload is the dump's return value; negative is an
            // errno (a dump that failed part way).
            NLMSG_DONE => {
                let code = u32_at(payload, 0).map_or(0, |v| v as i32);
                if code < 0 {
                    return Err(RtnlError::Kernel(code.saturating_neg()));
                }
                out.done = true;
                return Ok(out);
            }
            NLMSG_ERROR => {
                let code = u32_at(payload, 0).map_or(0, |v| v as i32);
                // 0 is an acknowledgement, not an error.
                if code != 0 {
                    return Err(RtnlError::Kernel(code.saturating_neg()));
                }
            }
            NLMSG_OVERRUN => {
                return Err(RtnlError::Malformed("receive buffer overrun".into()));
            }
            _ => {}
        }
        // Messages are 4-byte aligned (NLMSG_ALIGN).
        off = off.saturating_add((len + 3) & !3);
    }
    Ok(out)
}

fn open_socket() -> Result<Socket, RtnlError> {
    let mut sock = Socket::new(NETLINK_ROUTE).map_err(RtnlError::Socket)?;
    sock.bind_auto().map_err(RtnlError::Socket)?;
    sock.connect(&SocketAddr::new(0, 0))
        .map_err(RtnlError::Socket)?;
    let tv = libc::timeval {
        tv_sec: RECV_TIMEOUT.as_secs() as libc::time_t,
        tv_usec: RECV_TIMEOUT.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: the fd is a socket owned by `sock`, alive for this call; `tv`
    // is a valid timeval and the length passed is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const tv).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(RtnlError::Socket(std::io::Error::last_os_error()));
    }
    Ok(sock)
}

fn dump_once<T>(
    sock: &Socket,
    rx_size: usize,
    stats: Stats,
    decode: &mut impl FnMut(&[u8]) -> anyhow::Result<T>,
) -> Result<(Vec<T>, Vec<String>), RtnlError> {
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    hdr.sequence_number = SEQ;
    let mut get = LinkMessage::default();
    if stats == Stats::Skip {
        get.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::SkipStats]));
    }
    let mut req = NetlinkMessage::new(hdr, NetlinkPayload::from(RouteNetlinkMessage::GetLink(get)));
    req.finalize();
    let mut buf = vec![0u8; req.header.length as usize];
    req.serialize(&mut buf[..]);
    sock.send(&buf, 0).map_err(RtnlError::Io)?;

    let mut links = Vec::new();
    let mut bad = Vec::new();
    let mut interrupted = false;
    let mut rx: Vec<u8> = Vec::with_capacity(rx_size);
    loop {
        rx.clear();
        // MSG_TRUNC: the return value is the datagram's real size, so a
        // datagram too big for the buffer is detected, not half-parsed.
        let n = sock.recv(&mut rx, libc::MSG_TRUNC).map_err(RtnlError::Io)?;
        if n == 0 {
            return Err(RtnlError::Malformed(
                "socket closed before NLMSG_DONE".into(),
            ));
        }
        if n > rx.len() {
            return Err(RtnlError::Truncated(n));
        }
        let chunk = parse_chunk(&rx, decode)?;
        links.extend(chunk.links);
        bad.extend(chunk.bad);
        interrupted |= chunk.interrupted;
        if chunk.done {
            break;
        }
    }
    if interrupted {
        return Err(RtnlError::Interrupted);
    }
    Ok((links, bad))
}

/// Every link of the calling thread's network namespace, each decoded by
/// `decode` from its `RTM_NEWLINK` payload, plus descriptions of messages
/// that could not be decoded.
pub fn dump_links<T>(
    stats: Stats,
    mut decode: impl FnMut(&[u8]) -> anyhow::Result<T>,
) -> Result<(Vec<T>, Vec<String>), RtnlError> {
    // Dump datagrams are at most 32 KiB unless one link message alone is
    // bigger (many SR-IOV VFs); then the dump is redone with room for it on
    // a fresh socket (the rest of the old dump is still queued on the old).
    let mut rx_size = 64 * 1024;
    let mut last = RtnlError::Interrupted;
    for _ in 0..DUMP_TRIES {
        let sock = open_socket()?;
        match dump_once(&sock, rx_size, stats, &mut decode) {
            Err(RtnlError::Interrupted) => last = RtnlError::Interrupted,
            Err(RtnlError::Truncated(n)) => {
                rx_size = n.next_multiple_of(4096);
                last = RtnlError::Truncated(n);
            }
            r => return r,
        }
    }
    Err(last)
}

/// Kernel-shaped netlink bytes and a fuzz check, for the tests of every
/// decoder of a link dump (here, `topology::xdp`, `collector::netdev`).
#[cfg(test)]
pub(crate) mod testing {
    use super::{IFINFOMSG, SEQ};

    pub const IFLA_IFNAME: u16 = 3;

    /// Appends one attribute (type, payload) with NLA_ALIGN padding.
    pub fn nla(buf: &mut Vec<u8>, ty: u16, payload: &[u8]) {
        buf.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        buf.extend_from_slice(&ty.to_ne_bytes());
        buf.extend_from_slice(payload);
        while !buf.len().is_multiple_of(4) {
            buf.push(0);
        }
    }

    /// One netlink message: nlmsghdr with our sequence number, then `body`.
    pub fn msg(ty: u16, flags: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&SEQ.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m
    }

    /// `struct ifinfomsg` for `ifindex`, all else zero.
    pub fn ifinfo(ifindex: i32) -> Vec<u8> {
        let mut b = vec![0u8; IFINFOMSG];
        b[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        b
    }

    /// An RTM_NEWLINK payload's start: ifinfomsg, then IFLA_IFNAME.
    pub fn link(ifindex: i32, name: &str) -> Vec<u8> {
        let mut p = ifinfo(ifindex);
        let mut n = name.as_bytes().to_vec();
        n.push(0);
        nla(&mut p, IFLA_IFNAME, &n);
        p
    }

    /// A decoder of kernel bytes must answer, never panic: on arbitrary
    /// bytes shorter than `max_len`, and on `good` (a message it decodes)
    /// with any one byte changed.
    pub fn assert_never_panics<T>(max_len: usize, good: &[u8], decode: impl Fn(&[u8]) -> T) {
        use proptest::prelude::*;
        proptest!(|(bytes in proptest::collection::vec(any::<u8>(), 0..max_len))| {
            let _ = decode(&bytes);
        });
        proptest!(|(pos in 0..good.len(), val in any::<u8>())| {
            let mut b = good.to_vec();
            b[pos] = val;
            let _ = decode(&b);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{assert_never_panics, ifinfo, msg};
    use super::*;

    fn index_decoder(p: &[u8]) -> anyhow::Result<i32> {
        match payload_ifindex(p) {
            99 => Err(anyhow::anyhow!("bad link")),
            i => Ok(i),
        }
    }

    #[test]
    fn framing_done_error_and_bad_messages() {
        let mut buf = msg(RTM_NEWLINK, 2, &ifinfo(1));
        buf.extend(msg(RTM_NEWLINK, 2, &ifinfo(99)));
        buf.extend(msg(RTM_NEWLINK, 2, &[0u8; 4]));
        buf.extend(msg(RTM_NEWLINK, 2, &ifinfo(7)));
        buf.extend(msg(NLMSG_DONE, 2, &0i32.to_ne_bytes()));
        let c = parse_chunk(&buf, &mut index_decoder).unwrap();
        assert_eq!(c.links, vec![1, 7]);
        assert!(c.done && !c.interrupted);
        assert_eq!(c.bad.len(), 2, "{:?}", c.bad);
        assert!(c.bad[0].contains("ifindex 99") && c.bad[0].contains("bad link"));
        assert!(c.bad[1].contains("shorter than ifinfomsg"));

        // A dump that failed part way reports the errno.
        let done_err = msg(NLMSG_DONE, 2, &(-90i32).to_ne_bytes());
        assert!(matches!(
            parse_chunk(&done_err, &mut index_decoder),
            Err(RtnlError::Kernel(90))
        ));
        // The most negative code there is: an error, not an overflow.
        let done_min = msg(NLMSG_DONE, 2, &i32::MIN.to_ne_bytes());
        assert!(matches!(
            parse_chunk(&done_min, &mut index_decoder),
            Err(RtnlError::Kernel(i32::MAX))
        ));
        let intr = msg(RTM_NEWLINK, NLM_F_DUMP_INTR, &ifinfo(3));
        assert!(parse_chunk(&intr, &mut index_decoder).unwrap().interrupted);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut good = msg(RTM_NEWLINK, 2, &ifinfo(3));
        good.extend(msg(NLMSG_DONE, 2, &0i32.to_ne_bytes()));
        assert_never_panics(256, &good, |b| parse_chunk(b, &mut index_decoder));
    }
}

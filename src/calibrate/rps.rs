//! RPS interruptions for the calibration: an IPI that carries a NET_RX
//! softirq in its tail, as on a host where RPS steers receive work.
//!
//! The calling thread moves into its own network and mount namespaces (the
//! rest of nettop stays where it is), brings that namespace's loopback up,
//! points loopback's `rps_cpus` at the spinner's CPU and sends itself tiny
//! UDP datagrams. Each one is queued to the spinner CPU's backlog, which
//! takes a `call_function_single` IPI whose handler raises NET_RX there, run
//! in the IPI's tail: exactly what RPS does to a victim. Nothing of the
//! host's configuration is touched, no traffic leaves the namespace, and
//! both namespaces vanish with the thread. Needs CAP_SYS_ADMIN (unshare,
//! mounting sysfs for the new namespace); without it the softirq's cost
//! stays unmeasured and the table says so.

use std::io;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

fn os_err(what: &str) -> anyhow::Error {
    anyhow::Error::new(io::Error::last_os_error()).context(what.to_string())
}

/// `rps_cpus` text for one CPU: hex, comma-separated 32-bit groups, most
/// significant first (the kernel's bitmap format).
pub fn rps_mask(cpu: u32) -> String {
    let groups = cpu / 32 + 1;
    (0..groups)
        .rev()
        .map(|g| {
            if g == cpu / 32 {
                format!("{:08x}", 1u32 << (cpu % 32))
            } else {
                "00000000".to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Brings `lo` of the current network namespace up.
fn loopback_up() -> Result<()> {
    let sock = UdpSocket::bind("0.0.0.0:0").context("socket for SIOCSIFFLAGS")?;
    // SAFETY: ifreq is plain data for which all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    // SAFETY: fd is a live socket; ifr is a valid ifreq naming "lo", which
    // SIOCGIFFLAGS fills and SIOCSIFFLAGS reads.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) } != 0 {
        return Err(os_err("SIOCGIFFLAGS lo"));
    }
    // SAFETY: ifru_flags is the active member after SIOCGIFFLAGS.
    unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: as above.
    if unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) } != 0 {
        return Err(os_err("SIOCSIFFLAGS lo up"));
    }
    Ok(())
}

/// The loopback RPS set-up of the calling thread (see the module docs).
pub struct LoopbackRps {
    tx: UdpSocket,
    stop: Arc<AtomicBool>,
    receiver: Option<std::thread::JoinHandle<u64>>,
}

impl LoopbackRps {
    /// Moves the calling thread into fresh namespaces and steers loopback
    /// receive work to `cpu`. Call from the (pinned) sender thread only.
    pub fn new(cpu: u32) -> Result<LoopbackRps> {
        use crate::sys::netns;
        netns::new_netns()
            .and_then(|()| netns::private_mounts())
            .and_then(|()| netns::mount_sysfs(std::path::Path::new("/sys")))
            .context("the calibration's loopback namespace")?;
        loopback_up()?;
        let path = "/sys/class/net/lo/queues/rx-0/rps_cpus";
        if !std::path::Path::new(path).exists() {
            bail!("{path} is missing (kernel without CONFIG_RPS)");
        }
        std::fs::write(path, rps_mask(cpu)).with_context(|| format!("writing {path}"))?;
        let rx = UdpSocket::bind("127.0.0.1:0").context("binding the receiver")?;
        rx.set_read_timeout(Some(Duration::from_millis(20)))
            .context("receiver timeout")?;
        let tx = UdpSocket::bind("127.0.0.1:0").context("binding the sender")?;
        tx.connect(rx.local_addr().context("receiver address")?)
            .context("connecting to the receiver")?;
        // A receiver asleep in recv() on the sender's CPU (threads inherit
        // this thread's namespaces and affinity), as a real server is: each
        // datagram then also wakes it from the spinner CPU's softirq.
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let receiver = std::thread::Builder::new()
            .name("nettop-cal-rx".into())
            .spawn(move || {
                let c0 = crate::sys::clock::thread_cputime_ns();
                let mut buf = [0u8; 2048];
                while !flag.load(Ordering::Relaxed) {
                    let _ = rx.recv(&mut buf);
                }
                crate::sys::clock::thread_cputime_ns().saturating_sub(c0)
            })
            .context("starting the loopback receiver")?;
        Ok(LoopbackRps {
            tx,
            stop,
            receiver: Some(receiver),
        })
    }

    /// One MTU-sized datagram: one RPS IPI with a NET_RX softirq on the
    /// spinner's CPU, delivering to a sleeping receiver.
    pub fn kick(&self) -> Result<()> {
        self.tx
            .send(&[0u8; 1400])
            .context("sending over loopback")?;
        Ok(())
    }
}

impl LoopbackRps {
    /// Stops the receiver and returns the CPU time it used, ns (part of
    /// what the calibration costs).
    pub fn finish(mut self) -> u64 {
        self.stop_receiver()
    }

    fn stop_receiver(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.receiver
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or(0)
    }
}

impl Drop for LoopbackRps {
    fn drop(&mut self) {
        self.stop_receiver();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_in_kernel_bitmap_format() {
        assert_eq!(rps_mask(0), "00000001");
        assert_eq!(rps_mask(1), "00000002");
        assert_eq!(rps_mask(31), "80000000");
        assert_eq!(rps_mask(33), "00000002,00000000");
    }
}

//! What sysinfo(2) tells and the header meters show: `/proc/meminfo`,
//! `/proc/loadavg` and `/proc/uptime`. Each file is read on its own and a
//! file that is missing or does not parse is `None` (the meter says `n/a`):
//! a container without a full /proc, or a fake tree without these files,
//! still gives every other figure.

use crate::sample::{LoadAvg, MemInfo, RawSystem};
use crate::sys::sysroot::Sysroot;

/// The three files under `root`.
pub fn read_system(root: &Sysroot) -> RawSystem {
    RawSystem {
        mem: root
            .read("/proc/meminfo")
            .ok()
            .and_then(|t| parse_meminfo(&t)),
        load: root
            .read("/proc/loadavg")
            .ok()
            .and_then(|t| parse_loadavg(&t)),
        uptime_s: root
            .read("/proc/uptime")
            .ok()
            .and_then(|t| parse_uptime(&t)),
    }
}

/// `Key:   1234 kB` lines. `MemTotal` is required (without it no share
/// can be drawn); the other fields read as 0 when absent, as the kernels
/// that lack them have none of that memory to show.
pub fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let mut m = MemInfo::default();
    let mut total = None;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(v) = rest
            .split_ascii_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        match key {
            "MemTotal" => total = Some(v),
            "MemFree" => m.free_kib = v,
            "MemAvailable" => m.available_kib = Some(v),
            "Buffers" => m.buffers_kib = v,
            "Cached" => m.cached_kib = v,
            "SReclaimable" => m.sreclaimable_kib = v,
            "Shmem" => m.shmem_kib = v,
            "SwapTotal" => m.swap_total_kib = v,
            "SwapFree" => m.swap_free_kib = v,
            "SwapCached" => m.swap_cached_kib = v,
            _ => {}
        }
    }
    m.total_kib = total?;
    Some(m)
}

/// `0.08 0.12 0.10 1/234 5678`: loads, runnable/all tasks, last PID.
pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut it = text.split_ascii_whitespace();
    let mut load = || -> Option<f64> {
        it.next()?
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let (one, five, fifteen) = (load()?, load()?, load()?);
    let (running, threads) = it.next()?.split_once('/')?;
    Some(LoadAvg {
        one,
        five,
        fifteen,
        running: running.parse().ok()?,
        threads: threads.parse().ok()?,
    })
}

/// `12345.67 23456.78`: seconds since boot, then idle seconds.
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_ascii_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:        8048576 kB\nMemFree:         1000000 kB\n\
        MemAvailable:    5000000 kB\nBuffers:          200000 kB\nCached:          3000000 kB\n\
        SwapCached:         1024 kB\nShmem:            100000 kB\nSReclaimable:     300000 kB\n\
        SwapTotal:       2097148 kB\nSwapFree:        2000000 kB\nHugePages_Total:       0\n";

    #[test]
    fn meminfo_fields() {
        let m = parse_meminfo(MEMINFO).unwrap();
        assert_eq!(m.total_kib, 8_048_576);
        assert_eq!(m.available_kib, Some(5_000_000));
        assert_eq!(m.sreclaimable_kib, 300_000);
        assert_eq!(m.swap_cached_kib, 1024);
        assert_eq!(m.swap_free_kib, 2_000_000);
        // Old kernels: no MemAvailable, no Shmem; still a meter.
        let old = parse_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n").unwrap();
        assert_eq!((old.available_kib, old.shmem_kib), (None, 0));
        // Without a total there is nothing to draw a share of.
        assert_eq!(parse_meminfo("MemFree: 10 kB\ngarbage\n"), None);
        assert_eq!(parse_meminfo("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn loadavg_and_uptime() {
        let l = parse_loadavg("0.08 0.12 1.50 3/234 5678\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen), (0.08, 0.12, 1.5));
        assert_eq!((l.running, l.threads), (3, 234));
        assert_eq!(parse_loadavg("0.08 0.12\n"), None);
        assert_eq!(parse_loadavg("0.08 0.12 nan 1/2 3\n"), None);
        assert_eq!(parse_loadavg("0.08 0.12 0.1 12 3\n"), None);
        assert_eq!(parse_uptime("350735.47 234388.90\n"), Some(350_735.47));
        assert_eq!(parse_uptime("-1 0\n"), None);
        assert_eq!(parse_uptime(""), None);
    }
}

//! System-wide files: per-CPU times from `/proc/stat`, `softnet_stat`,
//! the online/present CPU lists and `/sys/class/net` device counters,
//! joined into one row per CPU by [`read_cpus`].

use std::collections::BTreeMap;
use std::io;

use anyhow::{Context, Result, anyhow, bail};

use super::task::find_ksoftirqd;
use crate::sample::{CpuTimes, RawCpu, RawDevice, RawTask, Softnet};
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::{MAX_FILE, Sysroot, read_string_bounded};

/// Per-CPU lines of /proc/stat ("cpuN ..."), clock ticks. Missing trailing
/// columns (old kernels) read as 0. Only online CPUs are listed by the kernel.
pub fn read_cpu_times(root: &Sysroot) -> Result<Vec<(u32, CpuTimes)>> {
    let path = root.path("/proc/stat");
    let text = root
        .read("/proc/stat")
        .with_context(|| format!("reading {}", path.display()))?;
    parse_proc_stat(&text).with_context(|| path.display().to_string())
}

pub fn parse_proc_stat(text: &str) -> Result<Vec<(u32, CpuTimes)>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        // The aggregate line is "cpu  <numbers>": no index after "cpu".
        if rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let mut it = rest.split_ascii_whitespace();
        let Some(Ok(cpu)) = it.next().map(str::parse::<u32>) else {
            bail!("bad cpu line '{line}'");
        };
        let mut v = [0u64; 10];
        for (slot, s) in v.iter_mut().zip(it) {
            *slot = s
                .parse()
                .map_err(|_| anyhow!("bad number '{s}' in '{line}'"))?;
        }
        out.push((
            cpu,
            CpuTimes {
                user: v[0],
                nice: v[1],
                system: v[2],
                idle: v[3],
                iowait: v[4],
                irq: v[5],
                softirq: v[6],
                steal: v[7],
                guest: v[8],
                guest_nice: v[9],
            },
        ));
    }
    Ok(out)
}

fn read_cpu_list(root: &Sysroot, abs: &str) -> Result<CpuSet> {
    let path = root.path(abs);
    let text = root
        .read(abs)
        .with_context(|| format!("reading {}", path.display()))?;
    CpuSet::parse_list(&text).with_context(|| path.display().to_string())
}

/// `/sys/devices/system/cpu/online`.
pub fn read_online(root: &Sysroot) -> Result<CpuSet> {
    read_cpu_list(root, "/sys/devices/system/cpu/online")
}

/// `/proc/net/softnet_stat`, mapped to CPUs. Kernels since 5.10 print the CPU
/// index in column 12; older ones print one row per online CPU in order, so
/// row i belongs to the i-th online CPU.
pub fn read_softnet(root: &Sysroot) -> Result<Vec<(u32, Softnet)>> {
    let path = root.path("/proc/net/softnet_stat");
    let text = root
        .read("/proc/net/softnet_stat")
        .with_context(|| format!("reading {}", path.display()))?;
    let needs_online = text
        .lines()
        .any(|l| !l.trim().is_empty() && l.split_ascii_whitespace().count() < 13);
    let online = if needs_online {
        Some(read_online(root)?)
    } else {
        None
    };
    parse_softnet(&text, online.as_ref()).with_context(|| path.display().to_string())
}

pub fn parse_softnet(text: &str, online: Option<&CpuSet>) -> Result<Vec<(u32, Softnet)>> {
    let mut online_iter = online
        .map(|o| o.iter().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<u64> = line
            .split_ascii_whitespace()
            .map(|s| u64::from_str_radix(s, 16).map_err(|_| anyhow!("bad hex '{s}' in '{line}'")))
            .collect::<Result<_, _>>()?;
        if cols.len() < 3 {
            bail!("too few columns in '{line}'");
        }
        let col = |i: usize| cols.get(i).copied().unwrap_or(0);
        let cpu = if cols.len() >= 13 {
            u32::try_from(col(12)).map_err(|_| anyhow!("cpu index out of range in '{line}'"))?
        } else {
            online_iter
                .next()
                .ok_or_else(|| anyhow!("more rows than online CPUs at '{line}'"))?
        };
        out.push((
            cpu,
            Softnet {
                processed: col(0),
                dropped: col(1),
                time_squeeze: col(2),
                received_rps: col(9),
                flow_limit: col(10),
            },
        ));
    }
    Ok(out)
}

/// `/sys/class/net/*`: ifindex and statistics. A device deleted while we read
/// it (veth pairs come and go) is skipped.
pub fn read_devices(root: &Sysroot) -> Result<Vec<RawDevice>> {
    let dir = root.path("/sys/class/net");
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        // No /sys/class/net (minimal container): no devices, not an error.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow!(e).context(format!("listing {}", dir.display()))),
    };
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let d = dir.join(&name);
        // Files like "bonding_masters" live here too: no ifindex, not a device.
        let read_num = |rel: &str| -> Result<Option<u64>> {
            let p = d.join(rel);
            match read_string_bounded(&p, MAX_FILE) {
                Ok(s) => s
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| anyhow!("{}: '{}' is not a number", p.display(), s.trim())),
                Err(e)
                    if e.kind() == io::ErrorKind::NotFound
                        || e.kind() == io::ErrorKind::NotADirectory =>
                {
                    Ok(None)
                }
                Err(e) => Err(anyhow!(e).context(format!("reading {}", p.display()))),
            }
        };
        let Some(ifindex) = read_num("ifindex")? else {
            continue;
        };
        let stat =
            |s: &str| -> Result<u64> { Ok(read_num(&format!("statistics/{s}"))?.unwrap_or(0)) };
        out.push(RawDevice {
            ifindex: u32::try_from(ifindex).unwrap_or(0),
            rx_packets: stat("rx_packets")?,
            rx_bytes: stat("rx_bytes")?,
            tx_packets: stat("tx_packets")?,
            tx_bytes: stat("tx_bytes")?,
            rx_dropped: stat("rx_dropped")?,
            name,
            ..Default::default()
        });
    }
    Ok(out)
}

/// CPUs that exist: `present`, else `possible`, else none (the caller then
/// falls back to what /proc/stat and `online` list).
fn read_present(root: &Sysroot) -> CpuSet {
    read_cpu_list(root, "/sys/devices/system/cpu/present")
        .or_else(|_| read_cpu_list(root, "/sys/devices/system/cpu/possible"))
        .unwrap_or_default()
}

/// One row per present CPU with /proc/stat times, softnet counters, online
/// state and ksoftirqd TID. `irq`/`net` stay `None`: the BPF collector fills
/// them. An offline CPU keeps its row (`online: false`, no times) so deltas
/// across a hotplug are shown as "offline" rather than as zeros.
pub fn read_cpus(root: &Sysroot, tasks: &[RawTask]) -> Result<Vec<RawCpu>> {
    let online = read_online(root)?;
    let times: BTreeMap<u32, CpuTimes> = read_cpu_times(root)?.into_iter().collect();
    // softnet_stat is absent without CONFIG_NET; that is not an error.
    let softnet: BTreeMap<u32, Softnet> = if root.path("/proc/net/softnet_stat").exists() {
        read_softnet(root)?.into_iter().collect()
    } else {
        BTreeMap::new()
    };
    let ksoftirqd = find_ksoftirqd(tasks);
    let all = read_present(root)
        .union(&online)
        .union(&CpuSet::from_cpus(times.keys().copied()));
    Ok(all
        .iter()
        .map(|cpu| RawCpu {
            cpu,
            online: online.contains(cpu),
            times: times.get(&cpu).cloned(),
            softnet: softnet.get(&cpu).cloned(),
            irq: None,
            net: None,
            ksoftirqd_tid: ksoftirqd.get(&cpu).copied(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_short_lines() {
        let v = parse_proc_stat("cpu  1 2 3 4\ncpu0 1 2 3 4 5 6 7\nintr 5\n").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].1.softirq, 7);
        assert_eq!(v[0].1.steal, 0);
        assert!(parse_proc_stat("cpu0 1 x\n").is_err());
        assert!(parse_proc_stat("cpuX 1 2\n").is_err());
    }
}

//! Static host facts, read once: names, clock tick, CPU/NUMA layout and, above
//! all, the interrupt accounting regime, which decides the model's arithmetic.

use std::io::{BufRead, BufReader, Read};

use crate::sample::{HostInfo, Regime};
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::{MAX_FILE, Sysroot, open_nonblocking, read_bounded, read_string_bounded};

const OPTION: &str = "CONFIG_IRQ_TIME_ACCOUNTING";

/// Detects everything in [`HostInfo`]. Never fails: a fact that cannot be
/// read is left empty (or `Regime::Unknown`), never guessed.
pub fn detect(root: &Sysroot) -> HostInfo {
    let kernel = root
        .read_opt("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let (regime, regime_source) = detect_regime(root, &kernel);
    let nr_cpus = root
        .read_opt("/sys/devices/system/cpu/possible")
        .and_then(|s| CpuSet::parse_list(&s).ok())
        .and_then(|s| s.iter().last())
        .map(|max| max + 1)
        .unwrap_or(0);
    HostInfo {
        hostname: root
            .read_opt("/proc/sys/kernel/hostname")
            .unwrap_or_default(),
        boot_id: root
            .read_opt("/proc/sys/kernel/random/boot_id")
            .unwrap_or_default(),
        regime,
        regime_source,
        clk_tck: clk_tck(),
        nr_cpus,
        cpu_node: cpu_nodes(root, nr_cpus),
        kernel,
        calibration: None,
        calibration_missing: String::new(),
        mem_total_bytes: root.read_opt("/proc/meminfo").and_then(|t| mem_total(&t)),
    }
}

/// `MemTotal` of a /proc/meminfo text, in bytes (the file says kB, which
/// the kernel means as KiB). `None` when the line is missing or garbled.
pub fn mem_total(meminfo: &str) -> Option<u64> {
    let v = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let mut it = v.split_ascii_whitespace();
    let kib: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => kib.checked_mul(1024),
        Some(_) => None,
    }
}

/// USER_HZ of this process's kernel; /proc tick counts are in these units.
/// A recording carries its own value, so this only matters live.
fn clk_tck() -> u64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

/// Looks for the option in a kernel config text. `None` when the text says
/// nothing about it at all (not a config file, or truncated).
pub fn regime_from_config(text: impl BufRead) -> Option<Regime> {
    for line in text.lines() {
        let Ok(line) = line else { return None };
        let line = line.trim();
        if line == format!("{OPTION}=y") {
            return Some(Regime::IrqTimeAccounting);
        }
        if line == format!("# {OPTION} is not set") {
            return Some(Regime::TickBased);
        }
    }
    None
}

/// `/proc/config.gz` (CONFIG_IKCONFIG_PROC), else `/boot/config-<release>`.
/// A config that exists but does not mention the option at all (the
/// architecture cannot select it) is not trusted either way: Unknown.
fn detect_regime(root: &Sysroot, release: &str) -> (Regime, String) {
    let gz = root.path("/proc/config.gz");
    if let Ok(f) = open_nonblocking(&gz) {
        // Bounded like every read under the root: a decompressed config is
        // ~300 KB, and a truncated one only means "Unknown".
        let dec = flate2::read::GzDecoder::new(f).take(MAX_FILE);
        if let Some(r) = regime_from_config(BufReader::new(dec)) {
            return (r, "/proc/config.gz".into());
        }
    }
    if !release.is_empty() && !release.contains('/') {
        let abs = format!("/boot/config-{release}");
        let mut text = Vec::new();
        if read_bounded(&root.path(&abs), &mut text, MAX_FILE).is_ok()
            && let Some(r) = regime_from_config(&text[..])
        {
            return (r, abs);
        }
    }
    (Regime::Unknown, String::new())
}

/// NUMA node of each CPU from `/sys/devices/system/node/node*/cpulist`, then
/// the `cpuN/nodeM` links for CPUs the lists missed. Empty when any CPU's node
/// stays unknown on a multi-node host (we do not guess); on a single-node host
/// every CPU is on that node.
fn cpu_nodes(root: &Sysroot, nr_cpus: u32) -> Vec<u32> {
    let n = nr_cpus as usize;
    let mut map: Vec<Option<u32>> = vec![None; n];
    let mut nodes_seen = std::collections::BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir(root.path("/sys/devices/system/node")) {
        for e in rd.filter_map(|e| e.ok()) {
            let name = e.file_name();
            let Some(node) = name
                .to_str()
                .and_then(|s| s.strip_prefix("node"))
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            nodes_seen.insert(node);
            let Ok(list) = read_string_bounded(&e.path().join("cpulist"), MAX_FILE) else {
                continue;
            };
            if let Ok(set) = CpuSet::parse_list(&list) {
                for cpu in set.iter() {
                    if let Some(slot) = map.get_mut(cpu as usize) {
                        *slot = Some(node);
                    }
                }
            }
        }
    }
    for (cpu, slot) in map.iter_mut().enumerate() {
        if slot.is_some() {
            continue;
        }
        let dir = root.path(format!("/sys/devices/system/cpu/cpu{cpu}"));
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            if let Some(node) = e
                .file_name()
                .to_str()
                .and_then(|s| s.strip_prefix("node"))
                .and_then(|s| s.parse::<u32>().ok())
            {
                nodes_seen.insert(node);
                *slot = Some(node);
            }
        }
    }
    if map.iter().all(Option::is_some) {
        return map.into_iter().flatten().collect();
    }
    if nodes_seen.len() == 1 {
        let only = nodes_seen.into_iter().next().unwrap_or(0);
        return map.into_iter().map(|s| s.unwrap_or(only)).collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_in_bytes() {
        let t = "MemFree:  10 kB\nMemTotal:       16315444 kB\nBuffers: 1 kB\n";
        assert_eq!(mem_total(t), Some(16_315_444 * 1024));
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(
            mem_total("MemTotal: 5 MB\n"),
            None,
            "a unit it does not know"
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn config_lines() {
        assert_eq!(
            regime_from_config(&b"CONFIG_A=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\n"[..]),
            Some(Regime::IrqTimeAccounting)
        );
        assert_eq!(
            regime_from_config(&b"# CONFIG_IRQ_TIME_ACCOUNTING is not set\n"[..]),
            Some(Regime::TickBased)
        );
        assert_eq!(
            regime_from_config(&b"CONFIG_IRQ_TIME_ACCOUNTING_X=y\n"[..]),
            None
        );
    }
}

//! Boot parameters, IRQs and NICs from /proc and /sys.

use std::collections::BTreeMap;

use anyhow::Context;

use super::hw::NicLocality;
use super::{HostConfig, Irq, IrqBalance, Nic, RxQueue, TxQueue, XdpMode};
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::Sysroot;

fn parse_list_at(root: &Sysroot, abs: &str, s: &str) -> anyhow::Result<CpuSet> {
    CpuSet::parse_list(s).with_context(|| root.path(abs).display().to_string())
}

/// `isolcpus=` takes optional flags before the list ("managed_irq,domain,2-5").
pub(super) fn parse_isolcpus(v: &str) -> (CpuSet, Vec<String>) {
    let mut flags = Vec::new();
    let mut list = Vec::new();
    for tok in v.split(',') {
        if tok.starts_with(|c: char| c.is_ascii_digit()) {
            list.push(tok);
        } else if !tok.is_empty() {
            flags.push(tok.to_string());
        }
    }
    (
        CpuSet::parse_list(&list.join(",")).unwrap_or_default(),
        flags,
    )
}

pub(super) fn load_host(root: &Sysroot, notes: &mut Vec<String>) -> anyhow::Result<HostConfig> {
    let mut h = HostConfig::default();
    match root.read_opt("/proc/cmdline") {
        Some(c) => h.cmdline = c,
        None => notes.push("/proc/cmdline unreadable: boot-time isolation unknown".into()),
    }
    for arg in h.cmdline.clone().split_whitespace() {
        let Some((k, v)) = arg.split_once('=') else {
            continue;
        };
        match k {
            "isolcpus" => {
                let (cpus, flags) = parse_isolcpus(v);
                h.isolcpus = h.isolcpus.union(&cpus);
                h.isolcpus_flags = flags;
            }
            "nohz_full" => h.nohz_full = parse_list_at(root, "/proc/cmdline", v)?,
            "rcu_nocbs" => h.rcu_nocbs = parse_list_at(root, "/proc/cmdline", v)?,
            "irqaffinity" => h.irqaffinity = Some(parse_list_at(root, "/proc/cmdline", v)?),
            _ => {}
        }
    }
    for (f, field) in [
        ("/sys/devices/system/cpu/isolated", 0),
        ("/sys/devices/system/cpu/nohz_full", 1),
    ] {
        if let Some(s) = root.read_opt(f) {
            // "(null)" is what the kernel prints for an empty nohz_full mask.
            if s.is_empty() || s == "(null)" {
                continue;
            }
            let set = parse_list_at(root, f, &s)?;
            if field == 0 {
                h.isolcpus = h.isolcpus.union(&set);
            } else {
                h.nohz_full = h.nohz_full.union(&set);
            }
        }
    }
    h.default_smp_affinity = root
        .read_opt("/proc/irq/default_smp_affinity")
        .map(|s| {
            CpuSet::parse_mask(&s).with_context(|| {
                root.path("/proc/irq/default_smp_affinity")
                    .display()
                    .to_string()
            })
        })
        .transpose()?;
    Ok(h)
}

pub(super) fn load_irqbalance(root: &Sysroot, pid: u32) -> IrqBalance {
    let mut ib = IrqBalance {
        pid,
        ..Default::default()
    };
    if let Ok(env) = root.read_bytes(format!("/proc/{pid}/environ")) {
        ib.environ_readable = true;
        for kv in env.split(|b| *b == 0) {
            let kv = String::from_utf8_lossy(kv);
            if let Some(v) = kv.strip_prefix("IRQBALANCE_BANNED_CPULIST=") {
                ib.banned_cpus = CpuSet::parse_list(v).ok();
            } else if let Some(v) = kv.strip_prefix("IRQBALANCE_BANNED_CPUS=") {
                // CPULIST wins when both are set, as in irqbalance itself.
                if ib.banned_cpus.is_none() {
                    ib.banned_cpus = CpuSet::parse_mask(v).ok();
                }
            }
        }
    }
    if let Ok(cmd) = root.read_bytes(format!("/proc/{pid}/cmdline")) {
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).to_string())
            .collect();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if let Some(v) = a.strip_prefix("--banirq=") {
                ib.banned_irqs.extend(v.parse::<u32>().ok());
            } else if (a == "--banirq" || a == "-i") && i + 1 < args.len() {
                ib.banned_irqs.extend(args[i + 1].parse::<u32>().ok());
                i += 1;
            }
            i += 1;
        }
    }
    ib
}

/// `/proc/interrupts` plus each IRQ's affinity files.
pub(super) fn load_irqs(root: &Sysroot, notes: &mut Vec<String>) -> anyhow::Result<Vec<Irq>> {
    let text = match root.read_large("/proc/interrupts") {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!(
                "/proc/interrupts unreadable ({e}): IRQ placement not checked"
            ));
            return Ok(Vec::new());
        }
    };
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut out = Vec::new();
    for line in lines {
        let Some((num, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(irq) = num.parse::<u32>() else {
            continue;
        };
        let toks: Vec<&str> = rest.split_whitespace().collect();
        let mut counts = BTreeMap::new();
        for (i, cpu) in cpus.iter().enumerate() {
            if let Some(n) = toks.get(i).and_then(|t| t.parse::<u64>().ok())
                && n > 0
            {
                counts.insert(*cpu, n);
            }
        }
        // After the counts: chip, hwirq, trigger ("edge"/"level", sometimes
        // joined as "0-edge"), then the action names.
        let tail: Vec<&str> = toks.iter().skip(cpus.len()).copied().collect();
        let name_start = tail
            .iter()
            .position(|t| t.ends_with("edge") || t.ends_with("level") || t.ends_with("fasteoi"))
            .map(|p| p + 1)
            .unwrap_or(tail.len().saturating_sub(1));
        let name = tail.get(name_start..).unwrap_or(&[]).join(" ");
        let dir = format!("/proc/irq/{irq}");
        let smp_affinity = root
            .read_opt(format!("{dir}/smp_affinity_list"))
            .map(|s| parse_list_at(root, &format!("{dir}/smp_affinity_list"), &s))
            .transpose()?;
        let effective = root
            .read_opt(format!("{dir}/effective_affinity_list"))
            .map(|s| parse_list_at(root, &format!("{dir}/effective_affinity_list"), &s))
            .transpose()?;
        out.push(Irq {
            irq,
            name,
            nic: None,
            smp_affinity,
            effective,
            counts,
        });
    }
    Ok(out)
}

fn read_dir_names(root: &Sysroot, abs: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.path(abs))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Queue index from an IRQ name ("eth0-TxRx-3", "mlx5_comp3", "virtio0-input.1").
fn names_nic(irq_name: &str, nic: &str) -> bool {
    irq_name
        .split([' ', ','])
        .any(|a| a == nic || a.starts_with(&format!("{nic}-")) || a.starts_with(&format!("{nic}@")))
}

/// Which namespace `load_nics` reads, and how.
pub(super) struct NicScope<'a> {
    /// `/proc/net`, or `/proc/thread-self/net` on a namespace helper thread
    /// (`/proc/net` follows the thread group leader's namespace).
    pub proc_net: &'a str,
    /// The namespace's name ("" for nettop's own).
    pub netns: &'a str,
}

impl NicScope<'static> {
    pub(super) const OWN: NicScope<'static> = NicScope {
        proc_net: "/proc/net",
        netns: "",
    };
}

pub(super) fn load_nics(
    root: &Sysroot,
    irqs: &mut [Irq],
    hw: &NicLocality,
    scope: &NicScope,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Nic>> {
    let names = read_dir_names(root, "/sys/class/net");
    if names.is_empty() && scope.netns.is_empty() {
        notes.push("/sys/class/net is empty or unreadable: no NICs checked".into());
    }
    let ipv6 = super::net::if_inet6(root, &format!("{}/if_inet6", scope.proc_net));
    let routes = super::net::routes(root, &format!("{}/route", scope.proc_net));
    let mut nics = Vec::new();
    for name in names {
        if name == "lo" || name == "bonding_masters" {
            continue;
        }
        let base = format!("/sys/class/net/{name}");
        let dev = format!("{base}/device");
        let dev_path = root.path(&dev);
        let is_virtual = !dev_path.exists();
        let mut nic = Nic {
            name: name.clone(),
            ifindex: root
                .read_opt(format!("{base}/ifindex"))
                .and_then(|s| s.parse().ok()),
            is_virtual,
            netns: scope.netns.to_string(),
            driver: std::fs::read_link(dev_path.join("driver"))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string())),
            xdp: XdpMode::Unknown,
            ..Default::default()
        };
        if !is_virtual {
            // virtio-net: the net device hangs off virtio<N>, whose parent is
            // the PCI function that owns the MSI vectors and locality.
            let mut pci_dir = dev.clone();
            let canon = std::fs::canonicalize(&dev_path).ok();
            let leaf = canon
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default();
            if leaf.starts_with("virtio") {
                pci_dir = format!("{dev}/..");
            }
            nic.pci = std::fs::canonicalize(root.path(&pci_dir))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()))
                .filter(|f| f.contains(':'));
            if let Some(n) = root
                .read_opt(format!("{pci_dir}/numa_node"))
                .and_then(|s| s.parse::<i64>().ok())
                && n >= 0
            {
                nic.numa_node = Some(n as u32);
                nic.locality_source = "sysfs".into();
            }
            if let Some(s) = root.read_opt(format!("{pci_dir}/local_cpulist")) {
                nic.local_cpus = Some(parse_list_at(
                    root,
                    &format!("{pci_dir}/local_cpulist"),
                    &s,
                )?);
                nic.locality_source = "sysfs".into();
            }
            for irq in read_dir_names(root, &format!("{pci_dir}/msi_irqs")) {
                if let Ok(n) = irq.parse::<u32>() {
                    nic.irqs.push(n);
                }
            }
        }
        if nic.locality_source.is_empty()
            && let Some((node, cpus)) = hw.get(&name)
        {
            nic.numa_node = *node;
            nic.local_cpus = cpus.clone();
            nic.locality_source = "hwloc".into();
        }
        // IRQ names are host-wide and a pod's "eth0" is not the host's:
        // other namespaces match IRQs by their device's MSI vectors only.
        for irq in irqs.iter().filter(|_| scope.netns.is_empty()) {
            if names_nic(&irq.name, &name) && !nic.irqs.contains(&irq.irq) {
                nic.irqs.push(irq.irq);
            }
        }
        nic.irqs.sort_unstable();
        for irq in irqs.iter_mut() {
            if nic.irqs.contains(&irq.irq) {
                irq.nic = Some(nic.label());
            }
        }
        for q in read_dir_names(root, &format!("{base}/queues")) {
            if let Some(i) = q.strip_prefix("rx-").and_then(|i| i.parse::<u32>().ok()) {
                let f = format!("{base}/queues/{q}/rps_cpus");
                let rps_cpus = match root.read_opt(&f) {
                    Some(s) => CpuSet::parse_mask(&s)
                        .with_context(|| root.path(&f).display().to_string())?,
                    None => CpuSet::new(),
                };
                nic.rx_queues.push(RxQueue { queue: i, rps_cpus });
            } else if let Some(i) = q.strip_prefix("tx-").and_then(|i| i.parse::<u32>().ok()) {
                let f = format!("{base}/queues/{q}/xps_cpus");
                let xps_cpus = root
                    .read_opt(&f)
                    .map(|s| {
                        CpuSet::parse_mask(&s).with_context(|| root.path(&f).display().to_string())
                    })
                    .transpose()?;
                nic.tx_queues.push(TxQueue { queue: i, xps_cpus });
            }
        }
        nic.rx_queues.sort_by_key(|q| q.queue);
        nic.tx_queues.sort_by_key(|q| q.queue);
        nic.addrs.extend(
            ipv6.iter()
                .filter(|(_, ifn)| *ifn == name)
                .map(|(a, _)| a.to_string()),
        );
        nic.addrs.extend(
            routes
                .iter()
                .filter(|r| r.iface == name && r.gateway_zero)
                .map(|r| format!("{}/{}", r.dest, r.prefix)),
        );
        nics.push(nic);
    }
    Ok(nics)
}

//! The writes `--apply` and `--revert` make: IRQ affinity, RPS and XPS
//! files, in nettop's own network namespace or entered into another one.
//!
//! Only three file shapes are ever written, each checked before use
//! ([`validate`]): `/proc/irq/N/smp_affinity_list` with a CPU list, and
//! `/sys/class/net/DEV/queues/{rx,tx}-N/{rps,xps}_cpus` with a hex mask. A
//! plan or revert file cannot name any other path, so a hand-edited one
//! cannot make nettop write elsewhere as root.

use anyhow::{Context, bail};

use super::Kind;
use crate::sys::cpuset::CpuSet;
use crate::sys::netns;

fn digits(s: &str) -> bool {
    !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit())
}

/// A Linux interface name: 1–15 bytes, no `/`, no whitespace, not `.`/`..`.
fn ifname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
}

/// Checks that `path` is a file of `kind`'s one shape and `value` a CPU
/// list (IRQs) or mask (RPS/XPS).
pub fn validate(kind: Kind, path: &str, value: &str) -> anyhow::Result<()> {
    match kind {
        Kind::IrqAffinity => {
            let ok = path
                .strip_prefix("/proc/irq/")
                .and_then(|s| s.strip_suffix("/smp_affinity_list"))
                .is_some_and(digits);
            if !ok {
                bail!("{path:?} is not /proc/irq/N/smp_affinity_list");
            }
            let set = CpuSet::parse_list(value)
                .map_err(|e| anyhow::anyhow!("{path}: {value:?} is not a CPU list: {e}"))?;
            if set.is_empty() {
                bail!("{path}: an empty CPU list is not an affinity");
            }
        }
        Kind::Rps | Kind::Xps => {
            let (dir, file) = if kind == Kind::Rps {
                ("rx-", "/rps_cpus")
            } else {
                ("tx-", "/xps_cpus")
            };
            let ok = path
                .strip_prefix("/sys/class/net/")
                .and_then(|s| s.strip_suffix(file))
                .and_then(|s| s.split_once("/queues/"))
                .is_some_and(|(dev, q)| ifname(dev) && q.strip_prefix(dir).is_some_and(digits));
            if !ok {
                bail!("{path:?} is not /sys/class/net/DEV/queues/{dir}N{file}");
            }
            // The kernel prints "0" for no CPUs; an empty value is a
            // damaged file, not a mask (parse_mask would read it as none).
            if value.trim().is_empty() {
                bail!("{path}: an empty value is not a CPU mask");
            }
            CpuSet::parse_mask(value)
                .map_err(|e| anyhow::anyhow!("{path}: {value:?} is not a CPU mask: {e}"))?;
        }
        other => bail!("{} changes are not written by nettop", other.as_str()),
    }
    Ok(())
}

/// Runs `f` where the file lives: here, or on a helper thread inside the
/// named network namespace with its own /sys.
fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
    if ns.is_empty() {
        return f();
    }
    let found = netns::enumerate_live(None)
        .into_iter()
        .find(|n| n.info.name == ns)
        .ok_or_else(|| anyhow::anyhow!("network namespace {ns:?} is gone"))?;
    netns::with_netns(&found.path, f)
        .with_context(|| format!("entering network namespace {ns:?}"))?
}

/// The file's current value, trimmed, as the kernel prints it.
pub fn read(ns: &str, path: &str) -> anyhow::Result<String> {
    let p = path.to_string();
    in_ns(ns, move || {
        std::fs::read_to_string(&p)
            .map(|s| s.trim().to_string())
            .with_context(|| format!("cannot read {p}"))
    })
    .with_context(|| where_(ns))
}

/// What a write of `value` to `path` needs, checked without writing:
/// the value's shape, the namespace, and the file readable and writable
/// now. Returns the file's current value, trimmed.
pub fn preflight(kind: Kind, ns: &str, path: &str, value: &str) -> anyhow::Result<String> {
    validate(kind, path, value)?;
    let p = path.to_string();
    in_ns(ns, move || {
        let now = std::fs::read_to_string(&p).with_context(|| format!("cannot read {p}"))?;
        // Opening a kernel file for writing changes nothing; only a write
        // reaches its handler.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .with_context(|| format!("cannot open {p} for writing"))?;
        Ok(now.trim().to_string())
    })
    .with_context(|| where_(ns))
}

/// Writes `value` to the (validated) kernel file.
pub fn write(kind: Kind, ns: &str, path: &str, value: &str) -> anyhow::Result<()> {
    validate(kind, path, value)?;
    let (p, v) = (path.to_string(), format!("{value}\n"));
    in_ns(ns, move || {
        use std::io::Write;
        // A kernel file: opened for writing as it is, never created.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .with_context(|| format!("cannot open {p}"))?;
        f.write_all(v.as_bytes())
            .with_context(|| format!("the kernel refused {:?} for {p}", v.trim()))
    })
    .with_context(|| where_(ns))
}

/// " (netns NS)" after a path, or nothing for nettop's own namespace: how
/// every line of the plan, the apply and the revert names where a file is.
pub fn ns_note(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!(" (netns {ns})")
    }
}

fn where_(ns: &str) -> String {
    if ns.is_empty() {
        "in nettop's network namespace".into()
    } else {
        format!("in network namespace {ns}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_three_shapes_with_good_values_pass() {
        let ok = [
            (Kind::IrqAffinity, "/proc/irq/38/smp_affinity_list", "0-3,8"),
            (Kind::Rps, "/sys/class/net/eth0/queues/rx-3/rps_cpus", "0"),
            (
                Kind::Xps,
                "/sys/class/net/veth1/queues/tx-0/xps_cpus",
                "ff,00000001",
            ),
        ];
        for (k, p, v) in ok {
            validate(k, p, v).unwrap();
        }
        let bad = [
            (Kind::IrqAffinity, "/proc/irq/38/../../sys/kernel/x", "1"),
            (Kind::IrqAffinity, "/proc/irq/38/smp_affinity_list", ""),
            (Kind::IrqAffinity, "/proc/irq/38/smp_affinity_list", "1; rm"),
            (
                Kind::Rps,
                "/sys/class/net/../../kernel/queues/rx-0/rps_cpus",
                "0",
            ),
            (Kind::Rps, "/sys/class/net/eth0/queues/tx-0/rps_cpus", "0"),
            (Kind::Rps, "/sys/class/net/eth0/queues/rx-0/rps_cpus", "zz"),
            (Kind::Rps, "/sys/class/net/eth0/queues/rx-0/rps_cpus", ""),
            (Kind::Xps, "/sys/class/net/eth0/queues/tx-0/xps_cpus", " "),
            (Kind::Xps, "/etc/passwd", "0"),
            (Kind::Cmdline, "kernel command line", "isolcpus=1"),
        ];
        for (k, p, v) in bad {
            assert!(validate(k, p, v).is_err(), "{k:?} {p} {v}");
        }
    }
}

//! The calibration cache: one JSON file per host, valid for one kernel, CPU
//! model, hypervisor, boot and nettop build. Calibrating costs a few hundred
//! milliseconds of CPU; doing it once per boot rather than at every start
//! keeps nettop's start-up light.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::sample::HostInfo;
use crate::sample::calibration::{Calibration, CalibrationKey};
use crate::sys::sysroot::Sysroot;

/// Overrides the cache directory (tests must never write the real one).
pub const DIR_ENV: &str = "NETTOP_CACHE_DIR";
pub const DEFAULT_DIR: &str = "/var/cache/nettop";
const FILE: &str = "calibration.json";

/// `--cache-dir`, else `$NETTOP_CACHE_DIR`, else /var/cache/nettop.
pub fn dir(flag: Option<&Path>) -> PathBuf {
    if let Some(d) = flag {
        return d.to_path_buf();
    }
    match std::env::var_os(DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(DEFAULT_DIR),
    }
}

pub fn file(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

fn cpuinfo_field(text: &str, field: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim().to_string())
    })
}

/// Names the hypervisor as far as sysfs tells: Xen's /sys/hypervisor, else
/// the DMI vendor and product, else the CPU's "hypervisor" flag alone.
fn hypervisor(root: &Sysroot, cpuinfo: &str) -> String {
    if let Some(t) = root.read_opt("/sys/hypervisor/type") {
        return t;
    }
    let flags = cpuinfo_field(cpuinfo, "flags").unwrap_or_default();
    let virt = flags.split_whitespace().any(|f| f == "hypervisor");
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| root.read_opt(format!("/sys/devices/virtual/dmi/id/{f}")))
        .filter(|s| !s.is_empty())
        .collect();
    match (virt, dmi.is_empty()) {
        (false, _) => "none".into(),
        (true, false) => dmi.join(" "),
        (true, true) => "unidentified (cpu flag)".into(),
    }
}

/// What this host's calibration is valid for.
pub fn key(root: &Sysroot, host: &HostInfo, attach_mode: &str) -> CalibrationKey {
    let cpuinfo = root.read_opt("/proc/cpuinfo").unwrap_or_default();
    CalibrationKey {
        kernel: host.kernel.clone(),
        kernel_build: root
            .read_opt("/proc/sys/kernel/version")
            .unwrap_or_default(),
        cpu_model: cpuinfo_field(&cpuinfo, "model name").unwrap_or_default(),
        hypervisor: hypervisor(root, &cpuinfo),
        boot_id: host.boot_id.clone(),
        nettop: format!("{} {attach_mode}", env!("CARGO_PKG_VERSION")),
        classes: crate::sample::calibration::class_key(),
    }
}

/// The cached calibration if there is one for exactly this key. A missing,
/// unreadable or stale file is simply no cache.
pub fn load(dir: &Path, key: &CalibrationKey) -> Option<Calibration> {
    let path = file(dir);
    let text = std::fs::read_to_string(&path).ok()?;
    let mut c: Calibration = serde_json::from_str(&text).ok()?;
    if &c.key != key {
        return None;
    }
    c.origin = format!("cache {}", path.display());
    Some(c)
}

/// Writes the calibration atomically (a reader never sees half a file),
/// with the states the cached table for the same key knew
/// ([`super::states::merge`]): `c` gets them too.
pub fn store(dir: &Path, c: &mut Calibration) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = file(dir);
    let old = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Calibration>(&t).ok())
        .filter(|o| o.key == c.key);
    if let Some(old) = old {
        super::states::merge(c, &old);
    }
    let text = serde_json::to_string_pretty(c).context("encoding the calibration")?;
    // Only an empty file or JSON (an older nettop's cache) is replaced.
    crate::sys::safefile::replace(&path, text.as_bytes(), |old| {
        if old.is_empty() {
            return Ok(());
        }
        serde_json::from_slice::<serde_json::Value>(old)
            .map(drop)
            .context("not JSON")
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::states::tests::{cal_at, handlers};

    #[test]
    fn stale_keys_are_no_cache() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = CalibrationKey {
            kernel: "6.18".into(),
            boot_id: "a".into(),
            ..Default::default()
        };
        let c = Calibration {
            key: k.clone(),
            cpu: 1,
            ..Default::default()
        };
        assert!(load(d.path(), &k).is_none(), "empty dir");
        let p = store(d.path(), &mut c.clone()).expect("store");
        let got = load(d.path(), &k).expect("same key loads");
        assert_eq!(got.cpu, 1);
        assert_eq!(got.origin, format!("cache {}", p.display()));
        let other = CalibrationKey {
            boot_id: "b".into(),
            ..k
        };
        assert!(load(d.path(), &other).is_none(), "another boot");
        std::fs::write(file(d.path()), "{not json").expect("write");
        assert!(load(d.path(), &other).is_none(), "corrupt file");
    }

    #[test]
    fn the_cache_keeps_each_state_the_host_was_seen_in() {
        let d = tempfile::tempdir().expect("tempdir");
        // The first state, then the second: the second's table knows the
        // first.
        store(d.path(), &mut cal_at(1, 270.0, 5_600.0)).expect("store");
        let mut b = cal_at(2, 480.0, 7_000.0);
        store(d.path(), &mut b).expect("store");
        assert_eq!(
            handlers(&b),
            [270.0],
            "the stored copy's caller has them too"
        );
        let got = load(d.path(), &CalibrationKey::default()).expect("loads");
        assert_eq!(handlers(&got), [270.0]);
        assert_eq!(got.states[0].ipi.hidden_ns, 5_600.0);
        // The first state measured again replaces its older costs and
        // keeps the second's.
        let mut a2 = cal_at(3, 285.0, 5_500.0);
        store(d.path(), &mut a2).expect("store");
        assert_eq!(handlers(&a2), [480.0]);
        // A third state: all three, newest first.
        let mut c = cal_at(4, 900.0, 9_000.0);
        store(d.path(), &mut c).expect("store");
        assert_eq!(handlers(&c), [285.0, 480.0]);
        // Another boot's table gives nothing.
        let mut other = cal_at(5, 480.0, 7_000.0);
        other.key.boot_id = "b".into();
        store(d.path(), &mut other).expect("store");
        assert!(other.states.is_empty());
    }

    #[test]
    fn flag_wins_over_environment() {
        assert_eq!(dir(Some(Path::new("/x"))), PathBuf::from("/x"));
    }
}

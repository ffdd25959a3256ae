//! The header meters' memory, swap, load and uptime, from one sample's
//! [`RawSystem`]: no interval, so no previous sample. Memory is split the
//! way htop splits it, so its Mem bar and nettop's agree on one host:
//! `used = total − free − buffers − cached − reclaimable slab`, `cache =
//! cached + reclaimable slab − shmem`, `shared = shmem`; swap `used =
//! total − free − swap cache`. Every figure saturates: a corrupt recording
//! gives a full or empty bar, never a negative or a wrapped one.

use serde::{Deserialize, Serialize};

use crate::sample::RawSystem;

/// Memory and load for the header; each part `None` when its file could
/// not be read.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SystemView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<MemView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapView>,
    /// 1, 5 and 15 minute load averages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<[f64; 3]>,
    /// Tasks runnable at the sample (the kernel's count, `/proc/loadavg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
}

/// Physical memory, KiB. `used + buffers + shared + cache ≤ total`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MemView {
    pub total_kib: u64,
    pub used_kib: u64,
    pub buffers_kib: u64,
    pub shared_kib: u64,
    pub cache_kib: u64,
    /// The kernel's estimate of what a new workload could get
    /// (`MemAvailable`, since 3.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_kib: Option<u64>,
}

/// Swap, KiB. `used + cache ≤ total`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SwapView {
    pub total_kib: u64,
    pub used_kib: u64,
    pub cache_kib: u64,
}

fn fin(x: f64) -> Option<f64> {
    (x.is_finite() && x >= 0.0).then_some(x)
}

/// The view of one sample's system figures.
pub fn system_view(raw: &RawSystem) -> SystemView {
    let mem = raw.mem.as_ref().map(|m| {
        let total = m.total_kib;
        // Each part is capped by what is left, so the bar never overflows.
        let mut left = total.saturating_sub(m.free_kib);
        let mut take = |v: u64| {
            let v = v.min(left);
            left -= v;
            v
        };
        let buffers = take(m.buffers_kib);
        let shared = take(m.shmem_kib);
        let cache = take(
            m.cached_kib
                .saturating_add(m.sreclaimable_kib)
                .saturating_sub(m.shmem_kib),
        );
        let used = left;
        (
            MemView {
                total_kib: total,
                used_kib: used,
                buffers_kib: buffers,
                shared_kib: shared,
                cache_kib: cache,
                available_kib: m.available_kib.map(|a| a.min(total)),
            },
            {
                let total = m.swap_total_kib;
                let cache = m.swap_cached_kib.min(total);
                let used = total.saturating_sub(m.swap_free_kib).saturating_sub(cache);
                SwapView {
                    total_kib: total,
                    used_kib: used,
                    cache_kib: cache,
                }
            },
        )
    });
    let load = raw.load.as_ref();
    SystemView {
        swap: mem.as_ref().map(|(_, s)| s.clone()),
        mem: mem.map(|(m, _)| m),
        load: load.and_then(|l| Some([fin(l.one)?, fin(l.five)?, fin(l.fifteen)?])),
        running: load.map(|l| l.running),
        uptime_s: raw.uptime_s.and_then(fin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{LoadAvg, MemInfo};

    #[test]
    fn memory_splits_as_htop_does() {
        let raw = RawSystem {
            mem: Some(MemInfo {
                total_kib: 8000,
                free_kib: 1000,
                available_kib: Some(5000),
                buffers_kib: 200,
                cached_kib: 3000,
                sreclaimable_kib: 300,
                shmem_kib: 100,
                swap_total_kib: 2000,
                swap_free_kib: 1500,
                swap_cached_kib: 100,
            }),
            load: Some(LoadAvg {
                one: 0.5,
                five: 0.25,
                fifteen: 0.125,
                running: 3,
                threads: 300,
            }),
            uptime_s: Some(90.5),
        };
        let v = system_view(&raw);
        let m = v.mem.unwrap();
        // htop: used = total - free - buffers - cached - sreclaimable.
        assert_eq!(m.used_kib, 8000 - 1000 - 200 - 3000 - 300);
        assert_eq!((m.buffers_kib, m.shared_kib, m.cache_kib), (200, 100, 3200));
        let s = v.swap.unwrap();
        assert_eq!((s.used_kib, s.cache_kib, s.total_kib), (400, 100, 2000));
        assert_eq!(v.load, Some([0.5, 0.25, 0.125]));
        assert_eq!((v.running, v.uptime_s), (Some(3), Some(90.5)));
    }

    /// A recording's garbage never makes a part larger than the whole.
    #[test]
    fn garbage_saturates() {
        let raw = RawSystem {
            mem: Some(MemInfo {
                total_kib: 100,
                free_kib: 10,
                buffers_kib: u64::MAX,
                cached_kib: u64::MAX,
                swap_total_kib: 5,
                swap_free_kib: 50,
                swap_cached_kib: 9,
                ..Default::default()
            }),
            load: Some(LoadAvg {
                one: -1.0,
                ..Default::default()
            }),
            uptime_s: Some(f64::INFINITY),
        };
        let v = system_view(&raw);
        let m = v.mem.unwrap();
        assert_eq!(m.buffers_kib + m.shared_kib + m.cache_kib + m.used_kib, 90);
        let s = v.swap.unwrap();
        assert!(s.used_kib + s.cache_kib <= s.total_kib);
        assert_eq!((v.load, v.running, v.uptime_s), (None, Some(0), None));
    }
}

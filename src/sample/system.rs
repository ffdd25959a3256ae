//! Host-wide figures top's and htop's header show beside the CPU times:
//! memory, swap, load average, runnable tasks and uptime, as the kernel
//! reports them at the sample. Each part is optional on its own: a file
//! that could not be read is `None` (shown as unknown, never as 0), and a
//! recording made before these were collected has no [`RawSystem`] at all.

use serde::{Deserialize, Serialize};

/// `/proc/meminfo`, `/proc/loadavg` and `/proc/uptime` at the sample.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RawSystem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<MemInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadAvg>,
    /// Seconds since boot (`/proc/uptime`'s first field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
}

/// The `/proc/meminfo` fields htop's Mem and Swp bars are made of, KiB as
/// the file gives them. A field the kernel does not print reads as 0
/// (`SReclaimable` before 2.6.19, `Shmem` before 2.6.32); `MemTotal`
/// missing makes the whole file unknown.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MemInfo {
    pub total_kib: u64,
    pub free_kib: u64,
    #[serde(default)]
    pub available_kib: Option<u64>,
    pub buffers_kib: u64,
    pub cached_kib: u64,
    pub sreclaimable_kib: u64,
    pub shmem_kib: u64,
    pub swap_total_kib: u64,
    pub swap_free_kib: u64,
    pub swap_cached_kib: u64,
}

/// `/proc/loadavg`: the three load averages, the tasks runnable now and
/// every task (thread) on the host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    pub running: u32,
    pub threads: u32,
}

//! Where the calibration may run: two CPUs that are online, allowed to
//! nettop, not isolated, and not where a busy pinned thread runs. Spinning
//! for a few hundred milliseconds next to a data-plane thread, or on a CPU
//! set apart for one, would be exactly the intrusion nettop warns about.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::collector::procfs;
use crate::cpuset::CpuSet;
use crate::sysroot::Sysroot;

/// How long pinned threads' CPU use is sampled.
const SAMPLE: Duration = Duration::from_millis(100);
/// CPU use above which a pinned thread counts as busy (as in the pinning lint).
const BUSY_FRACTION: f64 = 0.2;

/// The two CPUs chosen, and why the others were not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Where the spinner runs (and the IPIs land).
    pub spinner: u32,
    /// Where the IPIs are sent from.
    pub sender: u32,
    /// CPUs left out, with the reason.
    pub excluded: BTreeMap<u32, String>,
}

/// A thread pinned to part of the machine, as seen at the first look.
struct Pinned {
    tgid: u32,
    tid: u32,
    comm: String,
    cpus: CpuSet,
    on_cpu_ns: u64,
}

fn schedstat_ns(root: &Sysroot, tgid: u32, tid: u32) -> Option<u64> {
    let text = root.read_opt(format!("/proc/{tgid}/task/{tid}/schedstat"))?;
    procfs::parse_schedstat(&text).ok().map(|(run, _)| run)
}

/// Picks the spinner's and the sender's CPU. Among the eligible CPUs the
/// least busy ones over the sampling interval win, higher numbers first on a
/// tie (CPU 0 usually carries the housekeeping).
pub fn choose(root: &Sysroot) -> Result<Placement> {
    let online = procfs::read_online(root).context("reading the online CPUs")?;
    // SAFETY: getpid(2) has no arguments and cannot fail.
    let own_pid = unsafe { libc::getpid() } as u32;
    let allowed = procfs::live_affinity(own_pid).unwrap_or_else(|| online.clone());
    let isolated = crate::topology::isolated_cpus(root).unwrap_or_default();
    let mut excluded: BTreeMap<u32, String> = BTreeMap::new();
    for cpu in online.iter() {
        if isolated.contains(cpu) {
            excluded.insert(cpu, "isolated (isolcpus/nohz_full)".into());
        } else if !allowed.contains(cpu) {
            excluded.insert(cpu, "outside nettop's own CPU affinity".into());
        }
    }

    let tasks = procfs::read_tasks(root, &[]).context("listing threads")?;
    let pinned: Vec<Pinned> = tasks
        .iter()
        .filter(|t| t.tgid != own_pid)
        .filter_map(|t| {
            let cpus = CpuSet::parse_list(&t.affinity).ok()?.intersection(&online);
            (!cpus.is_empty() && cpus != online).then(|| Pinned {
                tgid: t.tgid,
                tid: t.tid,
                comm: t.comm.clone(),
                cpus,
                on_cpu_ns: t.on_cpu_ns,
            })
        })
        .collect();
    let times0 = procfs::read_cpu_times(root).unwrap_or_default();
    let t0 = Instant::now();
    std::thread::sleep(SAMPLE);
    let elapsed = t0.elapsed().as_nanos() as f64;
    let times1 = procfs::read_cpu_times(root).unwrap_or_default();
    for p in &pinned {
        let Some(now) = schedstat_ns(root, p.tgid, p.tid) else {
            continue;
        };
        let used = now.saturating_sub(p.on_cpu_ns) as f64 / elapsed;
        if used >= BUSY_FRACTION {
            for cpu in p.cpus.iter() {
                excluded.entry(cpu).or_insert_with(|| {
                    format!(
                        "busy pinned thread {} ({}) at {:.0}% CPU",
                        p.tid,
                        p.comm,
                        used * 100.0
                    )
                });
            }
        }
    }

    // Busy ticks per CPU over the sample, to prefer quiet CPUs.
    let busy: BTreeMap<u32, u64> = times1
        .iter()
        .map(|(cpu, c)| {
            let p = times0
                .iter()
                .find(|(k, _)| k == cpu)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            let b = |t: &crate::model::raw::CpuTimes| {
                t.user + t.nice + t.system + t.irq + t.softirq + t.steal
            };
            (*cpu, b(c).saturating_sub(b(&p)))
        })
        .collect();
    let mut eligible: Vec<u32> = online
        .iter()
        .filter(|c| !excluded.contains_key(c))
        .collect();
    eligible.sort_by_key(|c| (busy.get(c).copied().unwrap_or(0), std::cmp::Reverse(*c)));
    match eligible[..] {
        [spinner, sender, ..] => Ok(Placement {
            spinner,
            sender,
            excluded,
        }),
        _ => {
            let why: Vec<String> = excluded
                .iter()
                .map(|(c, r)| format!("CPU {c}: {r}"))
                .collect();
            bail!(
                "needs two CPUs that are not isolated and run no busy pinned thread, found {} ({})",
                eligible.len(),
                if why.is_empty() {
                    "only one CPU online".to_string()
                } else {
                    why.join("; ")
                }
            )
        }
    }
}

//! Where the calibration may run: two CPUs that are online, allowed to
//! nettop, not isolated, and not where a busy pinned thread runs. Spinning
//! for a few hundred milliseconds next to a data-plane thread, or on a CPU
//! set apart for one, would be exactly the intrusion nettop warns about.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::collector::procfiles;
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::Sysroot;

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
    procfiles::parse_schedstat(text.as_bytes())
        .ok()
        .map(|(run, _)| run)
}

/// Picks the spinner's and the sender's CPU. Among the eligible CPUs the
/// least busy ones over the sampling interval win, higher numbers first on a
/// tie (CPU 0 usually carries the housekeeping).
pub fn choose(root: &Sysroot) -> Result<Placement> {
    let online = procfiles::read_online(root).context("reading the online CPUs")?;
    // SAFETY: getpid(2) has no arguments and cannot fail.
    let own_pid = unsafe { libc::getpid() } as u32;
    let allowed = crate::sys::cpuset::live_affinity(own_pid).unwrap_or_else(|| online.clone());
    let isolated = crate::topology::isolated_cpus(root).unwrap_or_default();

    let tasks = procfiles::read_tasks(root, &[]).context("listing threads")?;
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
    let times0 = procfiles::read_cpu_times(root).unwrap_or_default();
    let t0 = Instant::now();
    std::thread::sleep(SAMPLE);
    let elapsed = t0.elapsed().as_nanos() as f64;
    let times1 = procfiles::read_cpu_times(root).unwrap_or_default();
    let mut busy_threads = Vec::new();
    for p in &pinned {
        let Some(now) = schedstat_ns(root, p.tgid, p.tid) else {
            continue;
        };
        let used = now.saturating_sub(p.on_cpu_ns) as f64 / elapsed;
        if used >= BUSY_FRACTION {
            busy_threads.push((
                p.cpus.clone(),
                format!(
                    "busy pinned thread {} ({}) at {:.0}% CPU",
                    p.tid,
                    p.comm,
                    used * 100.0
                ),
            ));
        }
    }
    // Busy ticks per CPU over the sample, to prefer quiet CPUs.
    let load: BTreeMap<u32, u64> = times1
        .iter()
        .map(|(cpu, c)| {
            let p = times0
                .iter()
                .find(|(k, _)| k == cpu)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            let b = |t: &crate::sample::CpuTimes| {
                t.user + t.nice + t.system + t.irq + t.softirq + t.steal
            };
            (*cpu, b(c).saturating_sub(b(&p)))
        })
        .collect();
    pick(&online, &allowed, &isolated, &busy_threads, &load)
}

/// The choice itself, from the facts [`choose`] gathered: `busy_threads`
/// are the CPU sets of busy pinned threads with a description, `load` the
/// busy ticks per CPU.
pub fn pick(
    online: &CpuSet,
    allowed: &CpuSet,
    isolated: &CpuSet,
    busy_threads: &[(CpuSet, String)],
    load: &BTreeMap<u32, u64>,
) -> Result<Placement> {
    let mut excluded: BTreeMap<u32, String> = BTreeMap::new();
    for cpu in online.iter() {
        if isolated.contains(cpu) {
            excluded.insert(cpu, "isolated (isolcpus/nohz_full)".into());
        } else if !allowed.contains(cpu) {
            excluded.insert(cpu, "outside nettop's own CPU affinity".into());
        } else if let Some((_, why)) = busy_threads.iter().find(|(s, _)| s.contains(cpu)) {
            excluded.insert(cpu, why.clone());
        }
    }
    let mut eligible: Vec<u32> = online
        .iter()
        .filter(|c| !excluded.contains_key(c))
        .collect();
    eligible.sort_by_key(|c| (load.get(c).copied().unwrap_or(0), std::cmp::Reverse(*c)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).expect("cpu list")
    }

    #[test]
    fn never_isolated_never_next_to_a_busy_pinned_thread() {
        let online = set("0-5");
        let busy = vec![(set("3"), "busy pinned thread 7 (dpdk)".to_string())];
        let load: BTreeMap<u32, u64> = [(0, 0), (1, 9), (2, 0), (3, 0), (4, 1), (5, 0)].into();
        let p = pick(&online, &set("0-4"), &set("2"), &busy, &load).expect("placement");
        // Quietest eligible CPUs, higher numbers first on a tie (CPU 0 last).
        assert_eq!((p.spinner, p.sender), (0, 4));
        assert!(p.excluded[&2].contains("isolated"));
        assert!(p.excluded[&3].contains("dpdk"));
        assert!(p.excluded[&5].contains("affinity"));
        assert!(!p.excluded.contains_key(&1));

        let load: BTreeMap<u32, u64> = BTreeMap::new();
        let p = pick(&set("0-3"), &set("0-3"), &CpuSet::new(), &[], &load).expect("placement");
        assert_eq!((p.spinner, p.sender), (3, 2));
    }

    #[test]
    fn too_few_cpus_is_an_error_that_says_why() {
        let busy = vec![(set("1"), "busy pinned thread 9 (victim)".to_string())];
        let e = pick(
            &set("0-1"),
            &set("0-1"),
            &CpuSet::new(),
            &busy,
            &BTreeMap::new(),
        )
        .expect_err("one CPU left");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("found 1") && msg.contains("CPU 1: busy pinned thread 9"),
            "{msg}"
        );
        let e =
            pick(&set("0"), &set("0"), &CpuSet::new(), &[], &BTreeMap::new()).expect_err("one CPU");
        assert!(format!("{e:#}").contains("only one CPU online"));
    }
}

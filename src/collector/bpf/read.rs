//! The read side of the collector: flushing the per-CPU batches, reading
//! the maps (batched, never per task) and the task sampler's pass, and
//! decoding the kernel's bytes into the model's raw counters. Loading and
//! attaching are in the parent module.

use super::*;

impl BpfCollector {
    /// Runs the flush program on each CPU so batches held in per-CPU slots
    /// reach the task hash before it is read.
    pub fn flush(&self, cpus: &CpuSet) {
        for cpu in cpus.iter() {
            let input = libbpf_rs::ProgramInput {
                cpu,
                flags: BPF_F_TEST_RUN_ON_CPU,
                ..Default::default()
            };
            // A CPU that just went offline refuses the run: its slots are
            // flushed on the next sample it is back, nothing is lost.
            let _ = self.skel.progs.nettop_flush.test_run(input);
        }
    }

    /// Reads all counters. `online` are the CPUs to flush first.
    pub fn read(&self, online: &CpuSet) -> Result<Readout> {
        self.flush(online);
        self.read_counters(true)
    }

    /// Reads the counters without flushing first; the task hash only with
    /// `with_tasks` (the task sampler joins it in the kernel instead).
    pub fn read_counters(&self, with_tasks: bool) -> Result<Readout> {
        let mut out = Readout {
            cpus: self.read_cpus()?,
            tasks: if with_tasks {
                self.read_tasks()?
            } else {
                HashMap::new()
            },
            napi: self.read_napi()?,
            traffic: self.read_traffic()?,
            ..Default::default()
        };
        let (exited_lost, exited_lost_ns) = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .map_or((0, 0), |b| (b.exited_lost, b.exited_lost_ns));
        let mut h = BpfHealth {
            attach_mode: self.mode.prefix().to_string(),
            missing_tracepoints: self.missing.clone(),
            exited_lost,
            exited_lost_ns,
            ..Default::default()
        };
        for c in &out.cpus {
            h.map_full += c.health.map_full;
            h.map_full_ns += c.health.map_full_ns;
            h.napi_map_full += c.health.napi_map_full;
            h.unmatched_exits += c.health.unmatched_exits;
            h.unattributed += c.health.unattributed;
            h.unattributed_ns += c.health.unattributed_ns;
            h.flush_deferred += c.health.flush_deferred;
            h.unknown_raise += c.health.unknown_raise;
        }
        h.programs = self.prog_stats();
        h.recursion_misses = self.recursion_misses();
        // Per-CPU runs only while BPF stats are on (held by --bpf-stats or
        // switched on by someone else): without run time there is nothing
        // to share out, and recordings stay as small as before.
        let stats_on = self.stats_fd.is_some() || h.programs.iter().any(|p| p.run_time_ns > 0);
        if stats_on {
            for p in &mut h.programs {
                if let Some(i) = run_index(&p.name) {
                    p.cpu_runs = out.cpus.iter().map(|c| c.runs[i]).collect();
                }
            }
        }
        out.health = h;
        Ok(out)
    }

    /// The socket maps: victim x beneficiary pairs and per-cgroup
    /// receive processing, in batches.
    fn read_traffic(&self) -> Result<RawTraffic> {
        if let Some(why) = &self.traffic_why {
            return Ok(RawTraffic {
                available: false,
                why: why.clone(),
                ..Default::default()
            });
        }
        let robbed = self
            .skel
            .maps
            .robbed
            .lookup_batch(1024, MapFlags::ANY, MapFlags::ANY)
            .context("reading the robbed-by map")?
            .filter_map(|(k, v)| {
                let k = from_bytes::<types::nt_rob_key>(&k)?;
                let v = from_bytes::<types::nt_rob>(&v)?;
                Some(RawRob {
                    victim_tid: k.victim,
                    victim_pid: v.victim_tgid,
                    beneficiary_tid: k.beneficiary,
                    beneficiary_pid: v.beneficiary_tgid,
                    beneficiary_cgroup: v.beneficiary_cgroup,
                    ns: v.ns,
                    pkts: v.pkts,
                })
            })
            .collect();
        let cgroups = self
            .skel
            .maps
            .cg_caused
            .lookup_batch(1024, MapFlags::ANY, MapFlags::ANY)
            .context("reading the per-cgroup receive map")?
            .filter_map(|(k, v)| {
                let id = u64::from_ne_bytes(k.get(..8)?.try_into().ok()?);
                let v = from_bytes::<types::nt_cg_caused>(&v)?;
                Some(RawCgCaused {
                    cgroup_id: id,
                    ns: v.ns,
                    pkts: v.pkts,
                    ipis_milli: v.ipis_milli,
                })
            })
            .collect();
        Ok(RawTraffic {
            available: true,
            why: String::new(),
            robbed,
            cgroups,
        })
    }

    fn read_cpus(&self) -> Result<Vec<CpuCounters>> {
        let key = 0u32.to_ne_bytes();
        let values = self
            .skel
            .maps
            .pcpus
            .lookup_percpu(&key, MapFlags::ANY)
            .context("reading per-CPU counters")?
            .unwrap_or_default();
        Ok(values.iter().map(|b| cpu_counters_from(b)).collect())
    }

    /// The whole task hash in batches (the /proc path joins it by TID).
    fn task_entries(&self) -> Result<Vec<(u32, types::nt_task)>> {
        let map = &self.skel.maps.tasks;
        Ok(map
            .lookup_batch(4096, MapFlags::ANY, MapFlags::ANY)
            .context("reading the task map")?
            .filter_map(|(k, v)| Some((u32_from(&k)?, from_bytes::<types::nt_task>(&v)?)))
            .collect())
    }

    fn read_tasks(&self) -> Result<HashMap<u32, TaskCounters>> {
        Ok(self
            .task_entries()?
            .into_iter()
            .map(|(tid, v)| {
                let c = TaskCounters {
                    tgid: v.tgid,
                    start_boottime_ns: v.start_boottime,
                    acct: acct_from(&v.acct),
                };
                (tid, c)
            })
            .collect())
    }

    /// One task's record in the task hash: for a task the sampler's walk
    /// did not yield, whose record the kernel never joins. `None` when it
    /// has none (never interrupted) or the map cannot be read.
    pub fn task_counters(&self, tid: u32) -> Option<TaskCounters> {
        let v = self
            .skel
            .maps
            .tasks
            .lookup(&tid.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let v = from_bytes::<types::nt_task>(&v)?;
        Some(TaskCounters {
            tgid: v.tgid,
            start_boottime_ns: v.start_boottime,
            acct: acct_from(&v.acct),
        })
    }

    /// Exited threads' interrupt accounting per process: (TGID, leader's
    /// start time in ns, accounting). One batch read of a small map.
    pub fn read_exited(&self) -> Result<Vec<(u32, u64, IrqAcct)>> {
        Ok(self
            .skel
            .maps
            .exited
            .lookup_batch(1024, MapFlags::ANY, MapFlags::ANY)
            .context("reading the exited-thread map")?
            .filter_map(|(k, v)| {
                let v = from_bytes::<types::nt_task>(&v)?;
                Some((u32_from(&k)?, v.start_boottime, acct_from(&v.acct)))
            })
            .collect())
    }

    /// Whether tasks come from the in-kernel sampler, and if not, why.
    pub fn sampler_status(&self) -> Result<()> {
        match (&self.sampler, &self.sampler_error) {
            (Some(_), _) => Ok(()),
            (None, Some(e)) => Err(anyhow::Error::msg(e.clone())),
            (None, None) => Err(anyhow::anyhow!("not loaded")),
        }
    }

    /// Deletes task records nobody owns any more. Exits are handled in the
    /// kernel (sched_process_exit), so this only catches strays: a batch
    /// flushed after its task's tomb fell out, or a TID reused in between.
    /// An entry is deleted when two sweeps in a row find it not live, so a
    /// task created between a pass and a sweep is never mistaken for one.
    /// With the sampler, live = seen by a recent pass or in `unseen` (live
    /// tasks the walk does not yield, read through /proc); otherwise
    /// `live_tids`.
    pub fn sweep(
        &mut self,
        live_tids: Option<&std::collections::HashSet<u32>>,
        unseen: &std::collections::HashSet<u32>,
    ) -> Result<usize> {
        let pass = self.sample_gen;
        let sampled = self.sampler.is_some();
        let stale: Vec<u32> = self
            .task_entries()?
            .into_iter()
            .filter(|(tid, v)| {
                *tid != 0
                    && !unseen.contains(tid)
                    && if sampled {
                        v.seen_gen.saturating_add(2) < pass
                    } else {
                        live_tids.is_some_and(|l| !l.contains(tid))
                    }
            })
            .map(|(tid, _)| tid)
            .collect();
        let prev: std::collections::HashSet<u32> =
            std::mem::take(&mut self.stale).into_iter().collect();
        let (gone, keep): (Vec<u32>, Vec<u32>) = stale.into_iter().partition(|t| prev.contains(t));
        self.stale = keep;
        if !gone.is_empty() {
            let map = &self.skel.maps.tasks;
            let keys: Vec<u8> = gone.iter().flat_map(|t| t.to_ne_bytes()).collect();
            let n = u32::try_from(gone.len()).unwrap_or(u32::MAX);
            // A batch delete stops at the first key that is already gone
            // (its task exited meanwhile); then the rest go one by one.
            if map
                .delete_batch(&keys, n, MapFlags::ANY, MapFlags::ANY)
                .is_err()
            {
                for t in &gone {
                    let _ = map.delete(&t.to_ne_bytes());
                }
            }
        }
        Ok(gone.len())
    }

    fn read_napi(&self) -> Result<Vec<RawNapi>> {
        let map = &self.skel.maps.napis;
        let mut out = Vec::new();
        for key in map.keys() {
            let Some(per_cpu) = map
                .lookup_percpu(&key, MapFlags::ANY)
                .context("reading the napi map")?
            else {
                continue;
            };
            let vals: Vec<types::nt_napi> = per_cpu.iter().filter_map(|b| from_bytes(b)).collect();
            // Only the CPU that inserted the entry has the name.
            let name = vals
                .iter()
                .map(|v| c_str(&v.dev))
                .find(|n| !n.is_empty())
                .unwrap_or_default();
            let napi_id = vals.iter().map(|v| v.napi_id).max().unwrap_or(0);
            let ifindex = vals.iter().map(|v| v.ifindex).max().unwrap_or(0);
            let netns = vals.iter().map(|v| v.netns).max().unwrap_or(0);
            for (cpu, v) in vals.iter().enumerate() {
                if v.polls == 0 {
                    continue;
                }
                out.push(RawNapi {
                    dev: name.clone(),
                    napi_id,
                    cpu: cpu as u32,
                    polls: v.polls,
                    work: v.work,
                    budget_exhausted: v.budget_exhausted,
                    budget: v.budget,
                    ifindex,
                    netns_inode: u64::from(netns),
                });
            }
        }
        out.sort_by(|a, b| (&a.dev, a.napi_id, a.cpu).cmp(&(&b.dev, b.napi_id, b.cpu)));
        Ok(out)
    }

    fn prog_infos(&self) -> Vec<(String, libbpf_sys::bpf_prog_info)> {
        let mut out = Vec::new();
        for prog in self.skel.object().progs() {
            if !prog.autoload() {
                continue;
            }
            let mut info = libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
            // SAFETY: info is a properly sized, writable bpf_prog_info and len says so;
            // the fd is a live program fd borrowed from the skeleton.
            let rc = unsafe {
                libbpf_sys::bpf_prog_get_info_by_fd(prog.as_fd().as_raw_fd(), &mut info, &mut len)
            };
            if rc == 0 {
                out.push((prog.name().to_string_lossy().into_owned(), info));
            }
        }
        out
    }

    /// Run count and time per program (time stays 0 unless stats are on).
    pub fn prog_stats(&self) -> Vec<ProgStat> {
        self.prog_infos()
            .into_iter()
            .filter(|(name, _)| {
                name != "nettop_flush" && !sampler::PROGRAMS.contains(&name.as_str())
            })
            .map(|(name, i)| ProgStat {
                name,
                run_cnt: i.run_cnt,
                run_time_ns: i.run_time_ns,
                cpu_runs: Vec::new(),
            })
            .collect()
    }

    fn recursion_misses(&self) -> u64 {
        self.prog_infos()
            .iter()
            .map(|(_, i)| i.recursion_misses)
            .sum()
    }
}

pub(super) fn cpu_counters_from(bytes: &[u8]) -> CpuCounters {
    let v: types::nt_cpu = from_bytes::<types::pcpu>(bytes)
        .map(|p| p.stats)
        .unwrap_or_default();
    CpuCounters {
        acct: acct_from(&v.acct),
        net: CpuNet {
            net_rx_actions: v.net_rx_actions,
            net_rx_ns: v.net_rx_ns,
            net_rx_restarts: v.net_rx_restarts,
            net_rx_max_ns: v.net_rx_max_ns,
            napi_polls: v.napi_polls,
            napi_work: v.napi_work,
            napi_budget_exhausted: v.napi_budget_exhausted,
            rx: RxSplit {
                ns: v.rx_ns,
                units: v.rx_units,
                lost_ns: v.caused_lost_ns,
                rps_ipi_ns: v.rps_ipi_ns,
                rps_ipis: v.rps_ipis,
            },
        },
        health: CpuHealth {
            map_full: v.map_full,
            map_full_ns: v.map_full_ns,
            napi_map_full: v.napi_map_full,
            unmatched_exits: v.unmatched_exits,
            unattributed: v.unattributed,
            unattributed_ns: v.unattributed_ns,
            flush_deferred: v.flush_deferred,
            unknown_raise: v.unknown_raise,
        },
        runs: v.runs,
    }
}

pub(in crate::collector) fn acct_from(a: &types::nt_acct) -> IrqAcct {
    let mut softirq_ns = [[0u64; NR_SOFTIRQS]; SOFTIRQ_CTX];
    for (dst, src) in softirq_ns.iter_mut().zip(a.softirq_ns.iter()) {
        dst.copy_from_slice(src);
    }
    // The kernel side counts by class (sample::INTR_CLASSES); the account
    // keeps the totals and the IPI family a recording has always held.
    let [device, timer, ipi, other, tlb, resched] = a.intr.map(|c| c.count);
    let [device_ns, timer_ns, ipi_ns, other_ns, tlb_ns, resched_ns] = a.intr.map(|c| c.ns);
    IrqAcct {
        hardirq_ns: device_ns,
        hardirq_count: device,
        sysvec_ns: timer_ns
            .saturating_add(ipi_ns)
            .saturating_add(other_ns)
            .saturating_add(tlb_ns)
            .saturating_add(resched_ns),
        sysvec_count: timer
            .saturating_add(ipi)
            .saturating_add(other)
            .saturating_add(tlb)
            .saturating_add(resched),
        softirq_ns,
        softirq_count: a.softirq_count,
        timer_count: timer,
        ipi_count: ipi.saturating_add(tlb).saturating_add(resched),
        softirq_stolen_count: a.softirq_stolen_count,
        in_softirq_count: a.in_softirq,
        tlb_count: tlb,
        resched_count: resched,
        ipi_ns,
        tlb_ns,
        timer_ns,
        sock: SockAcct {
            rx_bytes: a.io.rx_bytes,
            rx_calls: a.io.rx_calls,
            tx_bytes: a.io.tx_bytes,
            tx_calls: a.io.tx_calls,
            caused_ns: a.caused_ns,
            caused_pkts: a.caused_pkts,
            caused_ipis_milli: a.caused_ipis_milli,
        },
    }
}

/// Plain-old-data read of a map value. `None` when the buffer is short (a
/// mismatch between bpf/nettop.h and the skeleton would show up here).
pub(in crate::collector) fn from_bytes<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the buffer holds at least size_of::<T>() bytes, read_unaligned
    // has no alignment requirement, and T is only ever one of the skeleton's
    // #[repr(C)] integer-only structs, for which every bit pattern is valid.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

pub(super) fn u32_from(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
}

pub(in crate::collector) fn c_str(raw: &[i8]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel counts by class; the account's totals and IPI family are
    /// sums of classes, each class in its one place.
    #[test]
    fn classes_make_the_account() {
        let mut a = types::nt_acct::default();
        // device, timer, ipi, other, tlb, resched
        for (k, (n, ns)) in [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)]
            .into_iter()
            .enumerate()
        {
            a.intr[k].count = n;
            a.intr[k].ns = ns;
        }
        a.in_softirq = [0, 1, 0, 0, 2, 0];
        let acct = acct_from(&a);
        assert_eq!((acct.hardirq_count, acct.hardirq_ns), (1, 10));
        assert_eq!(
            (acct.sysvec_count, acct.sysvec_ns),
            (2 + 3 + 4 + 5 + 6, 200)
        );
        assert_eq!((acct.timer_count, acct.timer_ns), (2, 20));
        assert_eq!(
            acct.ipi_count,
            3 + 5 + 6,
            "IPIs are plain, TLB and reschedule"
        );
        assert_eq!((acct.tlb_count, acct.tlb_ns), (5, 50));
        assert_eq!(acct.resched_count, 6);
        assert_eq!(acct.ipi_ns, 30, "the plain IPIs' own time");
        assert_eq!(acct.in_softirq_count, [0, 1, 0, 0, 2, 0]);
        assert_eq!(
            crate::model::hidden::class_counts(&acct),
            [1, 2, 3, 4, 5, 6],
            "the model reads back the classes the kernel counted"
        );
    }
}

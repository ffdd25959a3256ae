//! napi instances and devices over the interval, and the collector's health.

use super::*;

pub(super) fn napi_views(
    ctx: &Ctx,
    prev: &[RawNapi],
    cur: &[RawNapi],
    costs: &BTreeMap<u32, CpuCost>,
) -> Vec<NapiView> {
    let pm: HashMap<(&str, u32, u32), &RawNapi> = prev
        .iter()
        .map(|n| ((n.dev.as_str(), n.napi_id, n.cpu), n))
        .collect();
    #[derive(Default)]
    struct Acc {
        polls: u64,
        work: u64,
        exhausted: u64,
        budget: u32,
        cpus: Vec<u32>,
        work_by_cpu: BTreeMap<u32, u64>,
        ifindex: u32,
        netns_inode: u64,
    }
    let mut acc: BTreeMap<(&str, u32), Acc> = BTreeMap::new();
    for n in cur {
        let z = RawNapi::default();
        let p = pm
            .get(&(n.dev.as_str(), n.napi_id, n.cpu))
            .copied()
            .unwrap_or(&z);
        let a = acc.entry((n.dev.as_str(), n.napi_id)).or_default();
        let polls = d(p.polls, n.polls);
        a.polls = a.polls.saturating_add(polls);
        a.work = a.work.saturating_add(d(p.work, n.work));
        a.exhausted = a
            .exhausted
            .saturating_add(d(p.budget_exhausted, n.budget_exhausted));
        a.budget = a.budget.max(n.budget);
        a.ifindex = a.ifindex.max(n.ifindex);
        a.netns_inode = a.netns_inode.max(n.netns_inode);
        if polls > 0 {
            a.cpus.push(n.cpu);
            *a.work_by_cpu.entry(n.cpu).or_default() += d(p.work, n.work);
        }
    }
    acc.into_iter()
        .map(|((dev, napi_id), mut a)| {
            a.cpus.sort_unstable();
            a.cpus.dedup();
            let (per_packet, charged_ns) = cost::napi_charge(&a.work_by_cpu, costs);
            NapiView {
                ifindex: a.ifindex,
                netns_inode: a.netns_inode,
                net_rx_ns_per_packet: per_packet.map(fin),
                net_rx_pct: ctx.pct_ns(charged_ns),
                dev: dev.to_string(),
                napi_id,
                polls_per_s: ctx.rate(a.polls as f64),
                packets_per_s: ctx.rate(a.work as f64),
                work_per_poll: if a.polls == 0 {
                    0.0
                } else {
                    fin(a.work as f64 / a.polls as f64)
                },
                budget: a.budget,
                budget_exhausted_per_s: ctx.rate(a.exhausted as f64),
                cpus: a.cpus,
            }
        })
        .collect()
}

pub(super) fn device_views(ctx: &Ctx, prev: &[RawDevice], cur: &[RawDevice]) -> Vec<DeviceView> {
    let pm: HashMap<(&str, &str), &RawDevice> = prev
        .iter()
        .map(|x| ((x.netns.as_str(), x.name.as_str()), x))
        .collect();
    let z = RawDevice::default();
    cur.iter()
        .map(|c| {
            // Same name, new ifindex: the device was recreated, counters restarted.
            let p = pm
                .get(&(c.netns.as_str(), c.name.as_str()))
                .copied()
                .filter(|p| p.ifindex == c.ifindex)
                .unwrap_or(&z);
            DeviceView {
                name: c.name.clone(),
                netns: c.netns.clone(),
                ifindex: c.ifindex,
                netns_inode: c.netns_inode,
                rx_packets_per_s: ctx.rate(d(p.rx_packets, c.rx_packets) as f64),
                rx_bytes_per_s: ctx.rate(d(p.rx_bytes, c.rx_bytes) as f64),
                tx_packets_per_s: ctx.rate(d(p.tx_packets, c.tx_packets) as f64),
                tx_bytes_per_s: ctx.rate(d(p.tx_bytes, c.tx_bytes) as f64),
                rx_dropped_per_s: ctx.rate(d(p.rx_dropped, c.rx_dropped) as f64),
                ..Default::default()
            }
        })
        .collect()
}

pub(super) fn health_view(ctx: &Ctx, prev: &RawSample, cur: &RawSample) -> HealthView {
    let Some(c) = &cur.health else {
        return HealthView::default();
    };
    let z = Default::default();
    let p = prev.health.as_ref().unwrap_or(&z);
    let prev_progs: HashMap<&str, u64> = p
        .programs
        .iter()
        .map(|x| (x.name.as_str(), x.run_time_ns))
        .collect();
    // run_time_ns stays 0 unless kernel BPF stats are on: no figure then
    // rather than a misleading 0 %.
    let stats_on = c.programs.iter().any(|x| x.run_time_ns > 0);
    let bpf_ns = c.programs.iter().fold(0u64, |s, x| {
        s.saturating_add(d(
            prev_progs.get(x.name.as_str()).copied().unwrap_or(0),
            x.run_time_ns,
        ))
    });
    HealthView {
        map_full: d(p.map_full, c.map_full),
        napi_map_full: d(p.napi_map_full, c.napi_map_full),
        unmatched_exits: d(p.unmatched_exits, c.unmatched_exits),
        recursion_misses: d(p.recursion_misses, c.recursion_misses),
        vanished_tasks: 0,
        missing_tracepoints: c.missing_tracepoints.clone(),
        attach_mode: c.attach_mode.clone(),
        bpf_cpu_pct: stats_on.then(|| ctx.pct_ns(bpf_ns as f64)),
        task_source: c.task_source.clone(),
        exited_lost: d(p.exited_lost, c.exited_lost),
        bad_records: c.bad_records,
        unattributed: d(p.unattributed, c.unattributed),
        flush_deferred: d(p.flush_deferred, c.flush_deferred),
        unknown_raise: d(p.unknown_raise, c.unknown_raise),
        notes: Vec::new(),
    }
}

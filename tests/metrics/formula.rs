//! docs/metrics.md's series count, family by family, written from the doc
//! and not from the exporter, so a family that grows a label or a series
//! the doc does not know about fails the tests that compare against it.
//! Shared by tests/pure/metrics_series.rs (a 256-CPU fixture) and
//! tests/live/metrics_live.rs (a real Prometheus scraping `--serve`).

#![allow(dead_code)]

use std::collections::BTreeMap;

/// The symbols of the doc's table. `units` is C, or N per node; `softirq`
/// is S, or S_N per node; `units_with_packets` is P.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub units: usize,
    pub softirq: usize,
    pub units_with_packets: usize,
    pub bpf: bool,
    pub hidden: bool,
    pub calibration_classes: usize,
    pub napi: usize,
    pub devices: usize,
    pub devices_per_packet: usize,
    pub devices_per_byte: usize,
    pub xdp: usize,
    pub queues: usize,
    pub rss: usize,
    pub flow_rules: usize,
    pub tasks: usize,
    pub tasks_bpf: usize,
    /// T_m: task rows with an address space.
    pub tasks_mem: usize,
    /// G; `None` when there are no cgroup families (no cgroups, or the
    /// first sample).
    pub cgroup_rows: Option<usize>,
    /// G_m: cgroup rows a memory controller counts.
    pub cgroup_mem_rows: usize,
    pub programs: usize,
    /// O: nettop's own BPF cost per CPU was measured (BPF stats on, with
    /// per-CPU runs, from the second sample on).
    pub own_bpf: bool,
    pub host_packets: bool,
    pub host_bytes: bool,
    /// u: the host's cost per byte is unknown (its device counters leave
    /// out devices); then `host_bytes` is false.
    pub host_bytes_unknown: bool,
    /// A: socket traffic is counted (BPF with the socket tracepoints).
    pub traffic: bool,
    /// Y: cgroup victim x beneficiary pairs, at most `--top-cgroups`.
    pub cgroup_pairs: usize,
}

/// The sample names `--metrics-exclude node-exporter` leaves out (the
/// doc's ⁿ rows).
pub const NODE_EXPORTER: [&str; 11] = [
    "nettop_cpu_online",
    "nettop_cpu_seconds_total",
    "nettop_softnet_processed_packets_total",
    "nettop_softnet_dropped_packets_total",
    "nettop_softnet_time_squeeze_total",
    "nettop_softnet_rps_received_total",
    "nettop_network_receive_bytes_total",
    "nettop_network_transmit_bytes_total",
    "nettop_network_receive_packets_total",
    "nettop_network_transmit_packets_total",
    "nettop_network_receive_dropped_packets_total",
];

fn b(x: bool) -> usize {
    usize::from(x)
}

/// Series per sample name, families with none left out, `excluded`
/// (sample names) removed.
pub fn expected(x: &Inputs, excluded: &[&str]) -> BTreeMap<&'static str, usize> {
    let c = x.units;
    let bc = b(x.bpf) * c;
    let hc = b(x.hidden) * c;
    let a = b(x.traffic);
    let mut m: Vec<(&'static str, usize)> = vec![
        ("nettop_host_info", 1),
        ("nettop_sample_timestamp_seconds", 1),
        ("nettop_tasks", 1),
        ("nettop_calibration_hidden_seconds", x.calibration_classes),
        ("nettop_calibration_spread_seconds", x.calibration_classes),
        ("nettop_calibration_disturbed", b(x.calibration_classes > 0)),
        ("nettop_cpu_online", c),
        ("nettop_cpu_seconds_total", 8 * c),
        ("nettop_cpu_traced_hardirq_seconds_total", bc),
        ("nettop_cpu_traced_sysvec_seconds_total", bc),
        ("nettop_cpu_traced_softirq_seconds_total", x.softirq),
        ("nettop_cpu_interruptions_total", 2 * bc),
        ("nettop_cpu_hidden_seconds_total", hc),
        ("nettop_cpu_hidden_band_seconds_total", hc),
        ("nettop_cpu_net_rx_seconds_total", bc),
        ("nettop_cpu_net_rx_split_seconds_total", 7 * a * c),
        ("nettop_cpu_net_rx_actions_total", bc),
        ("nettop_cpu_net_rx_restarts_total", bc),
        ("nettop_cpu_net_rx_max_seconds", bc),
        ("nettop_cpu_napi_polls_total", bc),
        ("nettop_cpu_napi_packets_total", bc),
        ("nettop_cpu_napi_budget_exhausted_total", bc),
        ("nettop_softnet_processed_packets_total", c),
        ("nettop_softnet_dropped_packets_total", c),
        ("nettop_softnet_time_squeeze_total", c),
        ("nettop_softnet_rps_received_total", c),
        ("nettop_napi_polls_total", x.napi),
        ("nettop_napi_packets_total", x.napi),
        ("nettop_napi_budget_exhausted_total", x.napi),
        ("nettop_network_receive_bytes_total", x.devices),
        ("nettop_network_transmit_bytes_total", x.devices),
        ("nettop_network_receive_packets_total", x.devices),
        ("nettop_network_transmit_packets_total", x.devices),
        ("nettop_network_receive_dropped_packets_total", x.devices),
        ("nettop_task_cpu_seconds_total", 2 * x.tasks),
        ("nettop_task_on_cpu_seconds_total", x.tasks),
        ("nettop_task_stolen_seconds_total", x.tasks_bpf),
        (
            "nettop_task_hidden_seconds_total",
            b(x.hidden) * x.tasks_bpf,
        ),
        (
            "nettop_task_hidden_band_seconds_total",
            b(x.hidden) * x.tasks_bpf,
        ),
        (
            "nettop_task_rebilled_seconds_total",
            b(x.hidden) * x.tasks_bpf,
        ),
        ("nettop_task_softirq_inline_seconds_total", x.tasks_bpf),
        ("nettop_task_interruptions_total", x.tasks_bpf),
        ("nettop_task_caused_seconds_total", a * x.tasks),
        ("nettop_task_socket_receive_bytes_total", a * x.tasks),
        ("nettop_task_socket_transmit_bytes_total", a * x.tasks),
        ("nettop_task_resident_bytes", x.tasks_mem),
        ("nettop_bpf_map_full_total", b(x.bpf)),
        ("nettop_bpf_map_full_lost_seconds_total", b(x.bpf)),
        ("nettop_bpf_napi_map_full_total", b(x.bpf)),
        ("nettop_bpf_unmatched_exits_total", b(x.bpf)),
        ("nettop_bpf_recursion_misses_total", b(x.bpf)),
        ("nettop_bpf_program_run_seconds_total", x.programs),
        ("nettop_bpf_program_runs_total", x.programs),
        ("nettop_cpu_own_bpf_ratio", b(x.own_bpf) * c),
        ("nettop_net_rx_per_packet_seconds", b(x.host_packets)),
        ("nettop_net_rx_per_byte_seconds", b(x.host_bytes)),
        (
            "nettop_net_rx_per_byte_unknown_info",
            b(x.host_bytes_unknown),
        ),
        ("nettop_cpu_net_rx_per_packet_seconds", x.units_with_packets),
        (
            "nettop_device_net_rx_per_packet_seconds",
            x.devices_per_packet,
        ),
        ("nettop_device_net_rx_per_byte_seconds", x.devices_per_byte),
        ("nettop_device_xdp_info", x.xdp),
        ("nettop_device_rx_queue_info", x.queues),
        ("nettop_device_rx_queue_rss_weight", x.rss),
        ("nettop_device_flow_rule_info", x.flow_rules),
    ];
    if let Some(g) = x.cgroup_rows {
        m.push(("nettop_cgroups", 1));
        m.push(("nettop_cgroup_info", g));
        m.push(("nettop_cgroup_memory_bytes", x.cgroup_mem_rows));
        for n in [
            "nettop_cgroup_processes",
            "nettop_cgroup_top_cpu_ratio",
            "nettop_cgroup_on_cpu_ratio",
            "nettop_cgroup_stolen_cpu_ratio",
            "nettop_cgroup_net_rx_stolen_cpu_ratio",
            "nettop_cgroup_hidden_cpu_ratio",
            "nettop_cgroup_inline_cpu_ratio",
            "nettop_cgroup_true_cpu_ratio",
            "nettop_cgroup_rx_on_allowed_cpus_ratio",
        ] {
            m.push((n, g));
        }
        m.push(("nettop_cgroup_caused_cpu_ratio", a * g));
        m.push(("nettop_cgroup_robbed_by_cpu_ratio", x.cgroup_pairs));
    }
    m.into_iter()
        .filter(|(n, v)| *v > 0 && !excluded.contains(n))
        .collect()
}

/// The doc's closed form for a BPF host with a calibration, traffic on
/// every CPU or node, every task row BPF-accounted and cgroups present:
/// `(26 + 7A + O)·C + S + 3I + 5D + Dₚ + D_b + (8 + 3A)·T + T_m + (10 + A)·G + G_m + Y + 2K + 2R + X + Q + W + F + 11`,
/// less `13·C + 5D` with the node-exporter preset.
pub fn closed_form(x: &Inputs, node_exporter: bool) -> usize {
    let (per_unit, per_device) = if node_exporter { (14, 0) } else { (27, 5) };
    let a = b(x.traffic);
    (per_unit + 7 * a + b(x.own_bpf)) * x.units
        + x.softirq
        + 3 * x.napi
        + per_device * x.devices
        + x.devices_per_packet
        + x.devices_per_byte
        + (9 + 3 * a) * x.tasks
        + x.tasks_mem
        + (10 + a) * x.cgroup_rows.unwrap_or(0)
        + x.cgroup_pairs
        + x.cgroup_mem_rows
        + 2 * x.calibration_classes
        + 2 * x.programs
        + x.xdp
        + x.queues
        + x.rss
        + x.flow_rules
        + 12
}

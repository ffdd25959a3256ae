//! The planner on the fixture machines (tests/fixtures/machines, made by
//! make_fixtures.py): exact plans for the 2-socket, 4-NIC SMT machine and
//! the others, the plan applied to the topology leaving the lint without
//! interrupt findings, the load steering IRQ placement, the "no good
//! layout" machine, and the three formats.

use crate::common;

use std::process::Command;

use common::machine;
use nettop::pinning::{self, Evidence};
use nettop::plan::{self, Kind, Load, Plan};
use nettop::sys::cpuset::CpuSet;
use nettop::topology::HostTopology;

fn plan_with(t: &HostTopology, load: &Load) -> Plan {
    let ev = Evidence::default();
    plan::compute(t, &pinning::check(t, &ev), &ev, load)
}

fn plan_of(t: &HostTopology) -> Plan {
    plan_with(t, &Load::default())
}

/// (kind, target, from, to, resolves) per change.
fn rows(p: &Plan) -> Vec<(Kind, String, String, String, String)> {
    p.changes
        .iter()
        .map(|c| {
            let r: Vec<&str> = c.resolves.iter().map(|r| r.code()).collect();
            (
                c.kind,
                c.target.clone(),
                c.from.clone(),
                c.to.clone(),
                r.join(","),
            )
        })
        .collect()
}

fn row(
    k: Kind,
    target: &str,
    from: &str,
    to: &str,
    res: &str,
) -> (Kind, String, String, String, String) {
    (k, target.into(), from.into(), to.into(), res.into())
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

#[test]
fn four_nic_two_socket_smt_machine_gets_the_expected_plan() {
    let t = machine("four_nic");
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(t.nics.len(), 4);
    assert_eq!(t.pu(4).unwrap().siblings, set("4-5"));
    let p = plan_of(&t);
    assert!(p.feasible, "{:?}", p.impossible);
    assert_eq!(p.protected, set("4,20,22"));
    let want = vec![
        // dp0's SMT sibling 5 leaves eth0 rx-0's RPS; CPU 10 stays.
        row(
            Kind::Rps,
            "/sys/class/net/eth0/queues/rx-0/rps_cpus",
            "00000420",
            "00000400",
            "NT004",
        ),
        row(
            Kind::Xps,
            "/sys/class/net/eth0/queues/tx-3/xps_cpus",
            "01000100",
            "00000100",
            "NT015",
        ),
        // RPS onto dp1's CPU: off.
        row(
            Kind::Rps,
            "/sys/class/net/eth2/queues/rx-2/rps_cpus",
            "00100000",
            "0",
            "NT003",
        ),
        // Off dp0's CPU, onto a node-0 CPU with no queue IRQ yet.
        row(
            Kind::IrqAffinity,
            "/proc/irq/101/smp_affinity_list",
            "4",
            "1",
            "NT002",
        ),
        // eth1 is on node 0; its queue 0 IRQ was on node 1.
        row(
            Kind::IrqAffinity,
            "/proc/irq/110/smp_affinity_list",
            "17",
            "7",
            "NT010",
        ),
        // Off dp2's CPU, and not onto 17 (rx-1's RPS target) although
        // 17 has no queue IRQ: 19 instead.
        row(
            Kind::IrqAffinity,
            "/proc/irq/123/smp_affinity_list",
            "22",
            "19",
            "NT002",
        ),
        // The flow rule's queue out of RSS.
        row(
            Kind::Rss,
            "ethtool -X eth3",
            "weight 64 64",
            "weight 64 0",
            "",
        ),
        row(
            Kind::Cmdline,
            "kernel command line",
            "isolcpus=(unset) nohz_full=(unset) irqaffinity=(unset)",
            "isolcpus=managed_irq,domain,4,20,22 nohz_full=4,20,22 irqaffinity=0-3,5-19,21,23-31",
            "",
        ),
    ];
    assert_eq!(rows(&p), want, "{}", plan::render_text(&p));
    let victims: Vec<u32> = p.victims.iter().map(|v| v.tid).collect();
    assert_eq!(victims, vec![1000, 1100, 1200]);
    assert!(p.unaddressed.is_empty(), "{:?}", p.unaddressed);
}

/// Writes a plan's IRQ/RPS/XPS changes into the topology, as the kernel
/// would hold them after `--apply`.
fn applied(t: &HostTopology, p: &Plan) -> HostTopology {
    let mut t = t.clone();
    for c in p.applied() {
        if let Some(irq) = c
            .target
            .strip_prefix("/proc/irq/")
            .and_then(|s| s.split('/').next())
            .and_then(|s| s.parse::<u32>().ok())
        {
            let i = t.irqs.iter_mut().find(|i| i.irq == irq).unwrap();
            i.smp_affinity = Some(set(&c.to));
            i.effective = Some(set(&c.to));
            continue;
        }
        let rest = c.target.strip_prefix("/sys/class/net/").unwrap();
        let (dev, q) = rest.split_once("/queues/").unwrap();
        let nic = t
            .nics
            .iter_mut()
            .find(|n| n.name == dev && n.netns == c.netns)
            .unwrap();
        let mask = CpuSet::parse_mask(&c.to).unwrap();
        let num = |s: &str| s.split('/').next().unwrap()[3..].parse::<u32>().unwrap();
        if q.starts_with("rx-") {
            nic.rx_queues
                .iter_mut()
                .find(|x| x.queue == num(q))
                .unwrap()
                .rps_cpus = mask;
        } else {
            nic.tx_queues
                .iter_mut()
                .find(|x| x.queue == num(q))
                .unwrap()
                .xps_cpus = Some(mask);
        }
    }
    t
}

#[test]
fn the_applied_plan_leaves_no_interrupt_finding_and_a_second_plan_is_empty() {
    for m in ["four_nic", "two_socket", "rss_wrong", "isolcpus"] {
        let t = machine(m);
        let p = plan_of(&t);
        let after = applied(&t, &p);
        let report = pinning::check(&after, &Evidence::default());
        let left: Vec<String> = report
            .findings
            .iter()
            .filter(|f| {
                ["NT002", "NT003", "NT004", "NT007", "NT010", "NT013"]
                    .iter()
                    .any(|r| f.rule == *r)
            })
            .map(|f| format!("{} {}", f.rule, f.summary))
            .collect();
        assert!(left.is_empty(), "{m}: after the plan: {left:?}");
        let again = plan_of(&after);
        assert_eq!(
            again.applied().count(),
            0,
            "{m}: {}",
            plan::render_text(&again)
        );
    }
}

#[test]
fn measured_load_moves_an_irq_off_a_busy_cpu() {
    let t = machine("four_nic");
    let mut load = Load::default();
    load.cpu_busy_pct.insert(1, 80.0);
    load.measured = Some("measured 1.0 s".into());
    let p = plan_with(&t, &load);
    let c = p
        .changes
        .iter()
        .find(|c| c.target == "/proc/irq/101/smp_affinity_list")
        .unwrap();
    // CPU 1 (the idle pick) is busy now: the next free node-0 CPU.
    assert_eq!(c.to, "7");
    assert_eq!(p.load, "measured 1.0 s");
}

#[test]
fn two_socket_rss_wrong_and_clean() {
    let p = plan_of(&machine("two_socket"));
    let r = rows(&p);
    assert!(
        r.contains(&row(
            Kind::IrqAffinity,
            "/proc/irq/102/smp_affinity_list",
            "26",
            "28",
            "NT002"
        )),
        "{r:?}"
    );
    assert!(
        r.contains(&row(
            Kind::IrqAffinity,
            "/proc/irq/103/smp_affinity_list",
            "5",
            "29",
            "NT004,NT010"
        )),
        "{r:?}"
    );
    // rx-1's RPS was on node 0 only: a node-1 CPU instead.
    assert!(
        r.contains(&row(
            Kind::Rps,
            "/sys/class/net/eth0/queues/rx-1/rps_cpus",
            "00000004",
            "01000000",
            "NT015"
        )),
        "{r:?}"
    );
    assert!(p.unaddressed.iter().any(|u| u.rule == "NT001"));

    let p = plan_of(&machine("rss_wrong"));
    let rps = p.changes.iter().find(|c| c.kind == Kind::Rps).unwrap();
    assert_eq!(rps.netns, "pod1");
    assert_eq!(
        rps.command,
        "ip netns exec pod1 sh -c 'echo 0 > /sys/class/net/eth0/queues/rx-0/rps_cpus'"
    );
    let nt = p.changes.iter().find(|c| c.kind == Kind::Ntuple).unwrap();
    assert_eq!(nt.to, "udp4 dst-port 53 action 4");
    assert_eq!(
        nt.command,
        "ethtool -N eth0 delete 1023 && ethtool -N eth0 flow-type udp4 dst-port 53 action 4 loc 1023"
    );
    // The retargeted rule's new queue is already out of RSS: no RSS change.
    assert!(!p.changes.iter().any(|c| c.kind == Kind::Rss));

    let p = plan_of(&machine("clean"));
    assert!(p.changes.is_empty(), "{}", plan::render_text(&p));
    assert!(p.feasible);
}

#[test]
fn every_cpu_pinned_has_no_good_layout_and_says_why() {
    let p = plan_of(&machine("all_pinned"));
    assert!(!p.feasible);
    assert!(p.changes.is_empty(), "{}", plan::render_text(&p));
    assert_eq!(p.impossible.len(), 3, "{:?}", p.impossible);
    assert!(
        p.impossible[0].starts_with("no CPU for IRQ 40 (eth0 queue 0): every online CPU (0-7)")
    );
    assert!(p.impossible[2].starts_with("kernel command line: every online CPU (0-7)"));
    let text = plan::render_text(&p);
    assert!(text.contains("no good layout for:"), "{text}");
}

#[test]
fn text_json_and_sh_carry_the_same_changes() {
    let p = plan_of(&machine("four_nic"));
    let text = plan::render_text(&p);
    for (i, c) in p.changes.iter().enumerate() {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{:>3}. ", i + 1)))
            .unwrap();
        assert!(
            line.contains(&c.target) && line.contains(&format!("-> {}", c.to)),
            "{line}"
        );
    }
    assert!(text.contains("resolves NT002"));
    let back: Plan = serde_json::from_str(&plan::render_json(&p)).unwrap();
    assert_eq!(back, p);
    let sh = plan::render_sh(&p);
    assert!(sh.starts_with("#!/bin/sh\n"));
    for c in &p.changes {
        assert!(sh.contains(&format!("\n{}\n", c.command)), "{}", c.command);
    }
    assert!(sh.contains("\n# kernel command line (never applied by nettop)"));
}

fn nettop(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_binary_prints_each_format_and_refuses_bad_combinations() {
    let root = "tests/fixtures/machines/four_nic";
    let out = nettop(&["--plan", "--sysroot", root, "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Plan = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        p,
        plan_of(&machine("four_nic")).clone_with_source(&p.source)
    );
    let out = nettop(&["--plan", "--sysroot", root, "--format", "sh"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("echo 19 > /proc/irq/123/smp_affinity_list")
    );

    for (args, says) in [
        (vec!["--pinning-check", "--format", "sh"], "--format sh"),
        (
            vec!["--plan", "--apply", "--sysroot", root, "--yes"],
            "--sysroot",
        ),
        (vec!["--apply"], "--plan"),
        (vec!["--plan", "--measure", "5s"], "--apply"),
        (vec!["--calibrate", "--nic", "eth0"], "shapes an apply"),
        // `--plan` alone reads the state directory (unfinished applies).
        (
            vec!["--calibrate", "--state-dir", "/tmp"],
            "shapes an apply",
        ),
        (
            vec!["--plan", "--apply", "--measure", "0.5s"],
            "at least 1s",
        ),
        (vec!["--yes"], "--apply"),
    ] {
        let out = nettop(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

trait WithSource {
    fn clone_with_source(&self, s: &str) -> Plan;
}

impl WithSource for Plan {
    /// The library names a fixture by the path it was given; the binary
    /// by the same path: equal, but keep the comparison about the plan.
    fn clone_with_source(&self, s: &str) -> Plan {
        Plan {
            source: s.to_string(),
            ..self.clone()
        }
    }
}

/// A robbery on the busy host's eth0 rx-0 RPS target (CPU 10): `pct` of a
/// CPU stolen from pid 700 there for the sockets of pid 800 on `to_cpu`.
fn robbed_load(to_cpu: u32, pct: f64) -> Load {
    Load {
        measured: Some("measured 1.0 s".into()),
        robbed: vec![plan::Robbery {
            victim_pid: 700,
            victim_comm: "victim".into(),
            victim_cpu: 10,
            victim_affinity: set("10"),
            beneficiary_pid: 800,
            beneficiary_comm: "receiver".into(),
            beneficiary_cpu: to_cpu,
            pct,
        }],
        ..Default::default()
    }
}

fn rps_of(p: &Plan, queue: &str) -> Option<String> {
    p.changes
        .iter()
        .find(|c| c.kind == Kind::Rps && c.target == queue)
        .map(|c| c.to.clone())
}

/// Receive work stolen from one process for another's sockets is steered
/// to where the receiver runs, and the robbed process is measured before
/// and after; a trickle, or a receiver on a protected CPU, leaves the
/// mask as the other rules make it.
#[test]
fn receive_work_is_steered_to_the_cpus_of_those_it_is_for() {
    let t = machine("four_nic");
    let q = "/sys/class/net/eth0/queues/rx-0/rps_cpus";
    let p = plan_with(&t, &robbed_load(6, 5.0));
    assert_eq!(
        rps_of(&p, q).as_deref(),
        Some("00000040"),
        "{:#?}",
        p.changes
    );
    let c = p.changes.iter().find(|c| c.target == q).unwrap();
    assert!(
        c.why.contains("receiver 800") && c.why.contains("victim 700"),
        "{}",
        c.why
    );
    assert!(p.victims.iter().any(|v| v.pid == 700), "{:?}", p.victims);
    // Below the threshold: as without a load (CPU 10 kept, 5 dropped).
    assert_eq!(
        rps_of(&plan_with(&t, &robbed_load(6, 0.5)), q).as_deref(),
        Some("00000400")
    );
    // The receiver on a busy pinned thread's CPU: not offered.
    assert_eq!(
        rps_of(&plan_with(&t, &robbed_load(4, 5.0)), q).as_deref(),
        Some("00000400")
    );
}

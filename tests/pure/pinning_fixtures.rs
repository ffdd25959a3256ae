//! The fixture machines (tests/fixtures/machines, made by make_fixtures.py):
//! exact rule sets, snapshots of both renderers, and one positive plus one
//! negative case per rule (negatives mutate the topology just enough to fix
//! the one mistake, so each rule is shown to react to its own cause).

use crate::common;

use std::collections::BTreeSet;

use common::machine;
use nettop::app::cli::FailOn;
use nettop::pinning::{self, Evidence, Report, Severity};
use nettop::sys::cpuset::CpuSet;
use nettop::topology::HostTopology;

fn lint(t: &HostTopology) -> Report {
    pinning::check(t, &Evidence::default())
}

fn rules(r: &Report) -> BTreeSet<String> {
    r.findings.iter().map(|f| f.rule.to_string()).collect()
}

fn has(r: &Report, rule: &str) -> bool {
    r.findings.iter().any(|f| f.rule == rule)
}

fn tids(r: &Report, rule: &str) -> Vec<u32> {
    r.findings
        .iter()
        .filter(|f| f.rule == rule)
        .flat_map(|f| f.threads.iter().map(|t| t.tid))
        .collect()
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn thread(t: &mut HostTopology, tid: u32) -> &mut nettop::topology::ThreadInfo {
    t.threads.iter_mut().find(|x| x.tid == tid).unwrap()
}

fn irq_eff(t: &mut HostTopology, irq: u32, cpus: &str) {
    let i = t.irqs.iter_mut().find(|i| i.irq == irq).unwrap();
    i.effective = Some(set(cpus));
    i.smp_affinity = Some(set(cpus));
}

fn ids(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn topology_of_the_two_socket_fixture() {
    let t = machine("two_socket");
    assert_eq!(t.online, set("0-47"));
    assert_eq!(t.pus.len(), 48);
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(t.node_cpus(1), Some(&set("24-47")));
    assert_eq!(t.pu(4).unwrap().siblings, set("4-5"));
    assert_eq!(t.caches.iter().filter(|c| c.level == 3).count(), 2);
    let eth0 = t.nic("eth0").unwrap();
    assert_eq!(eth0.numa_node, Some(1));
    assert_eq!(eth0.local_cpus, Some(set("24-47")));
    assert_eq!(eth0.pci.as_deref(), Some("0000:81:00.0"));
    assert_eq!(eth0.driver.as_deref(), Some("ice"));
    assert_eq!(eth0.irqs, vec![100, 101, 102, 103]);
    assert_eq!(eth0.rx_queues[0].rps_cpus, set("40"));
    assert_eq!(eth0.addrs, vec!["10.0.1.0/24".to_string()]);
    assert_eq!(t.irq(103).unwrap().effective, Some(set("5")));
    assert_eq!(t.irq(103).unwrap().nic.as_deref(), Some("eth0"));
    assert_eq!(t.irq(100).unwrap().counts.get(&24), Some(&90000));
    // tcp socket by connected route, AF_PACKET by ifindex.
    let rx = t.threads.iter().find(|x| x.tid == 1001).unwrap();
    assert_eq!(rx.nics, vec!["eth0".to_string()]);
    assert_eq!(rx.last_cpu, Some(4));
    assert_eq!(rx.mem_kib.as_ref().unwrap().get(&1), Some(&360000));
    let fwd = t.threads.iter().find(|x| x.tid == 1100).unwrap();
    assert_eq!(fwd.nics, vec!["eth0".to_string()]);
    assert!(t.threads.iter().find(|x| x.tid == 2).unwrap().kthread);
    // Unpinned threads get no enrichment.
    assert!(
        t.threads
            .iter()
            .find(|x| x.tid == 1000)
            .unwrap()
            .nics
            .is_empty()
    );
}

#[test]
fn topology_of_container_and_isolcpus_fixtures() {
    let c = machine("container");
    assert!(c.cpu_source.starts_with("hwloc xml"));
    assert_eq!(c.pus.len(), 8);
    let vpp = c.threads.iter().find(|x| x.tid == 300).unwrap();
    assert_eq!(vpp.cpuset, Some(set("4-7")));
    assert!(c.nic("eth0").unwrap().is_virtual);
    let i = machine("isolcpus");
    assert_eq!(i.host.isolcpus, set("2-7,10-15"));
    assert_eq!(i.host.isolcpus_flags, vec!["managed_irq", "domain"]);
    assert_eq!(i.host.nohz_full, set("2-7,10-15"));
    assert_eq!(i.host.rcu_nocbs, set("2-7,10-15"));
    assert_eq!(i.host.irqaffinity, Some(set("0-1,4,8-9")));
    let ib = i.host.irqbalance.as_ref().unwrap();
    assert_eq!(ib.pid, 500);
    assert_eq!(ib.banned_cpus, Some(set("2-7")));
    // numa_node -1: unknown, not node 0.
    assert_eq!(i.nic("eth0").unwrap().numa_node, None);
}

#[test]
fn exact_rule_sets_per_machine() {
    assert_eq!(
        rules(&lint(&machine("two_socket"))),
        ids(&[
            "NT001", "NT002", "NT004", "NT005", "NT010", "NT011", "NT012", "NT015", "NT016",
            "NT018"
        ])
    );
    assert_eq!(rules(&lint(&machine("container"))), ids(&["NT006"]));
    assert_eq!(
        rules(&lint(&machine("isolcpus"))),
        ids(&["NT007", "NT008", "NT013", "NT014", "NT017"])
    );
    let clean = lint(&machine("clean"));
    assert!(
        clean.findings.is_empty(),
        "{}",
        pinning::render_text(&clean)
    );
    assert_eq!(clean.exit_code(FailOn::Info.severity()), 0);
}

#[test]
fn snapshots_of_text_and_json() {
    for m in ["two_socket", "container", "isolcpus", "clean"] {
        let r = lint(&machine(m));
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("pinning_{m}_text"), pinning::render_text(&r));
            insta::assert_snapshot!(format!("pinning_{m}_json"), pinning::render_json(&r));
        });
    }
}

#[test]
fn json_is_versioned_and_parses_back() {
    let r = lint(&machine("two_socket"));
    let v: serde_json::Value = serde_json::from_str(&pinning::render_json(&r)).unwrap();
    assert_eq!(v["schema"], "nettop.pinning/1");
    assert_eq!(v["counts"]["warning"], 8);
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn saved_topology_round_trips_to_the_same_report() {
    let t = machine("isolcpus");
    let json = serde_json::to_string(&t).unwrap();
    let back: HostTopology = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
    assert_eq!(lint(&back), lint(&t));
}

#[test]
fn exit_codes_follow_fail_on() {
    let r = lint(&machine("isolcpus")); // warnings + info, no error
    assert_eq!(r.exit_code(FailOn::Warning.severity()), 1);
    assert_eq!(r.exit_code(FailOn::Error.severity()), 0);
    assert_eq!(r.exit_code(FailOn::Never.severity()), 0);
    assert_eq!(
        lint(&machine("container")).exit_code(FailOn::Error.severity()),
        1
    );
}

// ---- one positive and one negative per rule ----

#[test]
fn nt001_thread_on_other_node_than_its_nic() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT001"), vec![1001]);
    // fwd uses eth0 from node 1: not flagged.
    thread(&mut t, 1001).affinity = set("28");
    assert!(!has(&lint(&t), "NT001"));
}

#[test]
fn nt002_irq_on_pinned_cpu_and_stolen_evidence() {
    let mut t = machine("two_socket");
    let r = lint(&t);
    assert_eq!(tids(&r, "NT002"), vec![1100]);
    let f = r.findings.iter().find(|f| f.rule == "NT002").unwrap();
    assert_eq!(f.irqs, vec![102]);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.fix[0].ends_with("/proc/irq/102/smp_affinity_list"),
        "{:?}",
        f.fix
    );
    let ev = Evidence {
        stolen_pct: [(1100, 35.0)].into_iter().collect(),
    };
    let f2 = pinning::check(&t, &ev)
        .findings
        .into_iter()
        .find(|f| f.rule == "NT002")
        .unwrap();
    assert_eq!(f2.severity, Severity::Error);
    assert_eq!(f2.threads[0].stolen_pct, Some(35.0));
    irq_eff(&mut t, 102, "27");
    assert!(!has(&lint(&t), "NT002"));
}

#[test]
fn nt003_rps_on_pinned_cpu() {
    let mut t = machine("clean");
    assert!(!has(&lint(&t), "NT003"));
    t.nics[0].rx_queues[0].rps_cpus = set("28");
    let r = lint(&t);
    assert_eq!(tids(&r, "NT003"), vec![1001]);
    let f = r.findings.iter().find(|f| f.rule == "NT003").unwrap();
    assert_eq!(
        f.fix,
        vec!["echo 0 > /sys/class/net/eth0/queues/rx-0/rps_cpus"]
    );
}

#[test]
fn nt004_interrupts_on_smt_sibling() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT004"), vec![1001]);
    irq_eff(&mut t, 103, "29");
    let r = lint(&t);
    assert!(!has(&r, "NT004"));
    assert!(!has(&r, "NT010"));
    // RPS on the sibling counts too.
    t.nics[0].rx_queues[1].rps_cpus = set("5");
    assert_eq!(tids(&lint(&t), "NT004"), vec![1001]);
}

#[test]
fn nt005_dataplane_on_cpu0() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT005"), vec![1200]);
    // Measured idle: not a data-plane thread.
    thread(&mut t, 1200).cpu_pct = Some(0.5);
    assert!(!has(&lint(&t), "NT005"));
    thread(&mut t, 1200).cpu_pct = Some(99.0);
    assert!(has(&lint(&t), "NT005"));
    thread(&mut t, 1200).affinity = set("1");
    assert!(!has(&lint(&t), "NT005"));
}

#[test]
fn nt006_affinity_outside_cpuset() {
    let mut t = machine("container");
    let r = lint(&t);
    assert_eq!(tids(&r, "NT006"), vec![300]);
    let f = &r.findings[0];
    assert_eq!(f.severity, Severity::Error);
    assert!(f.fix[0].starts_with("taskset -pc 4-7 300"), "{:?}", f.fix);
    thread(&mut t, 300).affinity = set("4-5");
    assert!(!has(&lint(&t), "NT006"));
}

#[test]
fn nt007_irq_on_isolated_cpu() {
    let mut t = machine("isolcpus");
    let r = lint(&t);
    let f = r.findings.iter().find(|f| f.rule == "NT007").unwrap();
    assert_eq!(f.irqs, vec![42]);
    assert_eq!(f.cpus, set("3"));
    irq_eff(&mut t, 42, "1");
    assert!(!has(&lint(&t), "NT007"));
}

#[test]
fn nt008_irqaffinity_includes_isolated() {
    let mut t = machine("isolcpus");
    assert!(has(&lint(&t), "NT008"));
    t.host.irqaffinity = Some(set("0-1,8-9"));
    assert!(!has(&lint(&t), "NT008"));
}

#[test]
fn nt009_isolated_cpus_unprotected() {
    let mut t = machine("isolcpus");
    assert!(!has(&lint(&t), "NT009"));
    t.host.irqaffinity = None;
    t.host.irqbalance = None;
    t.host.isolcpus_flags.clear();
    assert!(has(&lint(&t), "NT009"));
    // A default_smp_affinity that already avoids the isolated CPUs is enough.
    t.host.default_smp_affinity = Some(set("0-1,8-9"));
    assert!(!has(&lint(&t), "NT009"));
}

#[test]
fn nt010_nic_irq_on_remote_node() {
    let t = machine("two_socket");
    let r = lint(&t);
    let f = r.findings.iter().find(|f| f.rule == "NT010").unwrap();
    assert_eq!(f.irqs, vec![103]);
    assert!(!has(&lint(&machine("clean")), "NT010"));
}

#[test]
fn nt011_busy_threads_share_a_cpu() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT011"), vec![1300, 1301]);
    thread(&mut t, 1301).cpu_pct = Some(1.0);
    assert!(!has(&lint(&t), "NT011"));
}

#[test]
fn nt012_busy_threads_on_smt_siblings() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT012"), vec![1400, 1401]);
    thread(&mut t, 1401).affinity = set("35");
    assert!(!has(&lint(&t), "NT012"));
}

#[test]
fn nt013_nt014_rps_on_isolated_and_cpu0() {
    let mut t = machine("isolcpus");
    let r = lint(&t);
    assert_eq!(
        r.findings.iter().find(|f| f.rule == "NT013").unwrap().cpus,
        set("12")
    );
    assert!(has(&r, "NT014"));
    t.nics[0].rx_queues[0].rps_cpus = set("8");
    t.nics[0].rx_queues[1].rps_cpus = set("9");
    let r = lint(&t);
    assert!(!has(&r, "NT013"));
    assert!(!has(&r, "NT014"));
}

#[test]
fn nt015_steering_off_node() {
    let mut t = machine("two_socket");
    assert_eq!(
        lint(&t)
            .findings
            .iter()
            .find(|f| f.rule == "NT015")
            .unwrap()
            .cpus,
        set("2")
    );
    t.nics[0].rx_queues[1].rps_cpus = set("41");
    assert!(!has(&lint(&t), "NT015"));
    t.nics[0].tx_queues[0].xps_cpus = Some(set("3"));
    assert!(has(&lint(&t), "NT015"));
}

#[test]
fn nt016_memory_on_remote_node() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT016"), vec![1001]);
    thread(&mut t, 1001).mem_kib = Some([(0, 300000), (1, 100000)].into_iter().collect());
    assert!(!has(&lint(&t), "NT016"));
}

#[test]
fn nt017_irqbalance_ban_misses_isolated() {
    let mut t = machine("isolcpus");
    assert_eq!(
        lint(&t)
            .findings
            .iter()
            .find(|f| f.rule == "NT017")
            .unwrap()
            .cpus,
        set("10-15")
    );
    t.host.irqbalance.as_mut().unwrap().banned_cpus = None;
    assert!(!has(&lint(&t), "NT017"));
    t.host.irqbalance.as_mut().unwrap().banned_cpus = Some(set("2-7,10-15"));
    assert!(!has(&lint(&t), "NT017"));
}

#[test]
fn nt018_pinned_across_nodes() {
    let mut t = machine("two_socket");
    assert_eq!(tids(&lint(&t), "NT018"), vec![1500]);
    thread(&mut t, 1500).affinity = set("10-13");
    assert!(!has(&lint(&t), "NT018"));
}

#[test]
fn many_threads_with_one_mistake_make_one_finding() {
    let mut t = machine("two_socket");
    let tmpl = t.threads.iter().find(|x| x.tid == 1100).unwrap().clone();
    for i in 0..63 {
        let mut c = tmpl.clone();
        c.tid = 2000 + i;
        t.threads.push(c);
    }
    let r = lint(&t);
    let f: Vec<_> = r.findings.iter().filter(|f| f.rule == "NT002").collect();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].threads.len(), 64);
}

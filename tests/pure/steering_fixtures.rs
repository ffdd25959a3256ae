//! Receive steering in fixture machines (tests/fixtures/machines/rss_right
//! and rss_wrong, made by make_fixtures.py): the RSS table and flow rules
//! ethtool answered (`sys/class/net/<dev>/ethtool.json`), a pod's namespace
//! (`netns/<name>/`), and that batch JSON, recordings and their replays
//! carry the same configuration.

use crate::common;

use std::time::Duration;

use common::run::{nettop, output_within};
use nettop::sys::sysroot::Sysroot;
use nettop::topology::{self, HostTopology, LoadOptions, NetnsKind, Support, XdpMode};
use serde_json::Value;

const RIGHT: &str = "tests/fixtures/machines/rss_right";
const WRONG: &str = "tests/fixtures/machines/rss_wrong";

fn machine(root: &str) -> HostTopology {
    topology::load(&LoadOptions::new(Sysroot::new(root), None, None)).unwrap()
}

#[test]
fn cloudflare_queue_isolation_is_read_from_the_fixture() {
    let t = machine(RIGHT);
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    let eth0 = t.nic("eth0").unwrap();
    assert_eq!(eth0.driver.as_deref(), Some("ixgbe"));
    let st = eth0.steering.as_ref().unwrap();
    assert_eq!(
        (st.rss.clone(), st.ntuple.clone()),
        (Support::Supported, Support::Supported)
    );
    assert_eq!(st.indir.len(), 128);
    // `ethtool -X eth0 weight 1 1 1 1 0 1 1 1`: 128 entries over 7 queues.
    assert_eq!(st.weights(), vec![18, 18, 18, 19, 0, 18, 18, 19]);
    assert_eq!(eth0.rss_weight(4), Some(0));
    assert_eq!(eth0.rss_weight(3), Some(19));
    let to4 = eth0.rules_to(4);
    assert_eq!(to4.len(), 1);
    assert_eq!(to4[0].flow, "udp4 dst-port 53");
    // Queue → IRQ from the IRQ names, → where it lands.
    let qi = eth0.queue_irqs(&t.irqs);
    assert_eq!(qi.get(&4), Some(&104));
    assert_eq!(t.irq(104).unwrap().lands_on().to_string(), "24");
    assert!(t.netns.is_empty());
}

#[test]
fn pod_namespace_of_the_wrong_setup_is_read() {
    let t = machine(WRONG);
    assert_eq!(t.netns.len(), 1);
    let ns = &t.netns[0];
    assert_eq!((ns.name.as_str(), ns.inode), ("pod1", 4026532999));
    assert_eq!(ns.kind, NetnsKind::Fixture);
    assert_eq!(
        ns.workload.as_deref(),
        Some("pod:8c2f0a5e/containerd:4b1e2f3a9c7d")
    );
    // Two eth0s: the host's and the pod's, told apart by namespace.
    let pod = t.nic("eth0 (netns pod1)").unwrap();
    assert_eq!(pod.netns, "pod1");
    assert_eq!(pod.driver.as_deref(), Some("veth"));
    assert_eq!(pod.xdp, XdpMode::Generic);
    assert_eq!(pod.rx_queues[0].rps_cpus.to_string(), "26");
    let st = pod.steering.as_ref().unwrap();
    assert_eq!(
        (st.rss.clone(), st.ntuple.clone()),
        (Support::NotSupported, Support::NotSupported)
    );
    assert_eq!(pod.rss_weight(0), None);
    // Host IRQ names never attach to the pod's eth0.
    assert!(pod.irqs.is_empty());
    assert_eq!(t.nic("eth0").unwrap().irqs.len(), 8);
    assert_eq!(t.exec_prefix(pod), "ip netns exec pod1 ");
}

fn devices(frame: &Value) -> &Vec<Value> {
    frame["devices"].as_array().unwrap()
}

fn check_config(frame: &Value) {
    let devs = devices(frame);
    let eth0 = devs
        .iter()
        .find(|d| d["name"] == "eth0" && d.get("netns").is_none())
        .unwrap_or_else(|| panic!("host eth0 missing: {devs:#?}"));
    let c = &eth0["config"];
    assert_eq!(c["rss"], "supported", "{c:#}");
    assert_eq!(c["rx_queues"][4]["rss_weight"], 0);
    assert_eq!(c["rx_queues"][5]["rss_weight"], 18);
    assert_eq!(c["rx_queues"][5]["irq"], 105);
    assert_eq!(c["rx_queues"][5]["irq_cpus"], "26");
    assert_eq!(c["rx_queues"][5]["flow_rules"], serde_json::json!([1023]));
    assert_eq!(c["flow_rules"][0]["flow"], "udp4 dst-port 53");
    assert_eq!(c["xdp"], "none");
    let pod = devs
        .iter()
        .find(|d| d["name"] == "eth0" && d["netns"] == "pod1")
        .unwrap_or_else(|| panic!("pod eth0 missing: {devs:#?}"));
    assert_eq!(pod["config"]["xdp"], "generic");
    assert_eq!(
        pod["config"]["workload"],
        "pod:8c2f0a5e/containerd:4b1e2f3a9c7d"
    );
    assert_eq!(pod["config"]["xdp_progs"][0]["id"], 42);
    assert_eq!(pod["config"]["rss"], "not_supported");
    assert_eq!(pod["config"]["rx_queues"][0]["rps_cpus"], "26");
}

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Batch JSON of the fixture, and a recording of it replayed on its own:
/// the same configuration in both (the recording carries the topology).
#[test]
fn batch_json_and_replays_carry_the_device_configuration() {
    let live = json_lines(&output_within(
        nettop().args([
            "--sysroot",
            WRONG,
            "--no-bpf",
            "-b",
            "--json",
            "-n",
            "1",
            "-d",
            "0.1",
        ]),
        Duration::from_secs(30),
        "nettop -b --json --sysroot",
    ));
    check_config(&live[0]);

    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("steer.rec");
    let out = output_within(
        nettop()
            .args([
                "--sysroot",
                WRONG,
                "--no-bpf",
                "-d",
                "0.1",
                "-n",
                "2",
                "--record",
            ])
            .arg(&rec),
        Duration::from_secs(30),
        "nettop --record --sysroot",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Replayed from another directory: nothing but the file is read.
    let replay = json_lines(&output_within(
        nettop()
            .current_dir(dir.path())
            .args(["-b", "--json", "--replay"])
            .arg(&rec),
        Duration::from_secs(30),
        "nettop --replay -b --json",
    ));
    assert!(!replay.is_empty());
    check_config(&replay[0]);
    let export = json_lines(&output_within(
        nettop().args(["--export", "json", "--replay"]).arg(&rec),
        Duration::from_secs(30),
        "nettop --replay --export json",
    ));
    check_config(&export[0]);
    let metrics = output_within(
        nettop()
            .args(["--export", "openmetrics", "--replay"])
            .arg(&rec),
        Duration::from_secs(30),
        "nettop --replay --export openmetrics",
    );
    let m = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        m.contains(r#"nettop_device_rx_queue_rss_weight{device="eth0",netns="",queue="4"} 0"#),
        "{m}"
    );
    assert!(
        m.contains(
            r#"nettop_device_xdp_info{device="eth0",netns="pod1",mode="generic",prog_id="42"} 1"#
        ),
        "{m}"
    );
    assert!(
        m.contains(r#"flow="udp4 dst-port 53",action="queue 5""#),
        "{m}"
    );
}

// ------------------------------------------------------------- the lint

use nettop::pinning::{self, Evidence, Report};
use nettop::sys::cpuset::CpuSet;
use std::collections::BTreeSet;

fn lint(t: &HostTopology) -> Report {
    pinning::check(t, &Evidence::default())
}

fn codes(r: &Report, prefix: &str) -> Vec<String> {
    r.findings
        .iter()
        .map(|f| f.rule.to_string())
        .filter(|c| c.starts_with(prefix))
        .collect()
}

fn summaries(r: &Report, code: &str) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| f.rule == code)
        .map(|f| f.summary.clone())
        .collect()
}

fn move_irq(t: &mut HostTopology, irq: u32, cpus: &str) {
    let i = t.irqs.iter_mut().find(|i| i.irq == irq).unwrap();
    i.effective = Some(CpuSet::parse_list(cpus).unwrap());
    i.smp_affinity = Some(CpuSet::parse_list(cpus).unwrap());
}

#[test]
fn the_right_setup_is_clean_and_the_wrong_one_has_each_mistake_once() {
    assert!(
        lint(&machine(RIGHT)).findings.is_empty(),
        "{:#?}",
        lint(&machine(RIGHT))
    );
    let r = lint(&machine(WRONG));
    let new: BTreeSet<String> = codes(&r, "NT01")
        .into_iter()
        .chain(codes(&r, "NT02"))
        .collect();
    let want: BTreeSet<String> = ["NT019", "NT020", "NT021", "NT022"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(want.is_subset(&new), "{new:?}");
    // rx-2 (IRQ on node 0, consumer on node 1). rx-5 (IRQ on the
    // consumer's CPU) and rx-6 (on the busy worker's CPU) are NT002's, which
    // NT019 completes instead of repeating (see the next test).
    assert_eq!(
        summaries(&r, "NT019").len(),
        1,
        "{:#?}",
        summaries(&r, "NT019")
    );
    assert_eq!(summaries(&r, "NT020").len(), 1);
    assert_eq!(summaries(&r, "NT021").len(), 1);
    assert_eq!(summaries(&r, "NT022").len(), 1);
    // Every finding about the pod's device names its namespace and runs
    // its fix there.
    for f in r
        .findings
        .iter()
        .filter(|f| f.nics.iter().any(|n| n.contains("pod1")))
    {
        assert!(f.nics.contains(&"eth0 (netns pod1)".to_string()), "{f:#?}");
        assert!(
            f.fix.iter().all(|c| c.starts_with("ip netns exec pod1 ")),
            "{f:#?}"
        );
    }
}

#[test]
fn nt019_rss_queue_irq_remote_or_on_a_pinned_cpu() {
    let t = machine(WRONG);
    let f = lint(&t)
        .findings
        .into_iter()
        .find(|f| f.rule == "NT019" && f.irqs == [102])
        .unwrap();
    assert!(
        f.summary.contains("node 0") && f.summary.contains("node 1"),
        "{f:#?}"
    );
    assert_eq!(
        f.fix[0],
        "echo 16-25,27,29-31 > /proc/irq/102/smp_affinity_list"
    );
    assert!(
        f.fix[1].contains("ethtool -X eth0 weight 18 18 0 19 0 18 18 19"),
        "{f:#?}"
    );
    // IRQ 106 lands on the worker's pinned CPU 28: one finding for it,
    // the IRQ rule's, carrying what RSS adds.
    let r = lint(&t);
    let about106: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.irqs.contains(&106))
        .collect();
    assert_eq!(about106.len(), 1, "{about106:#?}");
    let on28 = about106[0];
    assert!(on28.rule == "NT002" || on28.rule == "NT003", "{on28:#?}");
    assert!(on28.cpus.contains(28), "{on28:#?}");
    assert!(
        on28.threads.iter().any(|th| th.comm == "worker"),
        "{on28:#?}"
    );
    assert!(
        on28.evidence.iter().any(|e| e.contains("rx-6: RSS sends")),
        "{on28:#?}"
    );
    assert!(
        on28.fix
            .iter()
            .any(|c| c.starts_with("# or take eth0 rx-6 out of RSS: ")
                && c.contains("ethtool -X eth0 weight")),
        "{on28:#?}"
    );
    // Moved to a quiet node-1 CPU: gone.
    let mut t = machine(WRONG);
    move_irq(&mut t, 102, "18");
    move_irq(&mut t, 106, "23");
    move_irq(&mut t, 105, "25");
    assert!(
        summaries(&lint(&t), "NT019").is_empty(),
        "{:#?}",
        summaries(&lint(&t), "NT019")
    );
}

#[test]
fn nt020_flow_rule_to_a_queue_on_the_consumers_cpu() {
    let t = machine(WRONG);
    let s = summaries(&lint(&t), "NT020");
    assert!(s[0].contains("rx-5") && s[0].contains("own CPU"), "{s:?}");
    let mut t = machine(WRONG);
    move_irq(&mut t, 105, "25");
    assert!(summaries(&lint(&t), "NT020").is_empty());
    // On the other node: flagged again, as remote.
    move_irq(&mut t, 105, "5");
    let s = summaries(&lint(&t), "NT020");
    assert!(s.len() == 1 && s[0].contains("node 0"), "{s:?}");
}

#[test]
fn nt021_queue_out_of_rss_with_nothing_steered() {
    let t = machine(WRONG);
    let f = lint(&t)
        .findings
        .into_iter()
        .find(|f| f.rule == "NT021")
        .unwrap();
    assert!(f.summary.contains("rx-4"));
    // A rule exists but names queue 5: a likely typo, so a warning.
    assert_eq!(f.severity, nettop::pinning::Severity::Warning);
    assert_eq!(f.fix[0], "ethtool -X eth0 weight 18 18 18 19 19 18 18 19");
    // The rule fixed to steer to queue 4: gone.
    let mut t = machine(WRONG);
    let eth0 = t.nics.iter_mut().find(|n| n.netns.is_empty()).unwrap();
    eth0.steering.as_mut().unwrap().rules[0].queue = Some(4);
    assert!(summaries(&lint(&t), "NT021").is_empty());
}

#[test]
fn nt022_generic_xdp_where_the_driver_has_native() {
    let t = machine(WRONG);
    let f = lint(&t)
        .findings
        .into_iter()
        .find(|f| f.rule == "NT022")
        .unwrap();
    assert_eq!(
        f.fix,
        vec![
            "ip netns exec pod1 sh -c 'bpftool net detach xdpgeneric dev eth0 && bpftool net attach xdpdrv id 42 dev eth0'"
        ]
    );
    let mut t = machine(WRONG);
    let pod = t.nics.iter_mut().find(|n| n.netns == "pod1").unwrap();
    pod.xdp = XdpMode::Native;
    pod.xdp_progs[0].mode = XdpMode::Native;
    assert!(summaries(&lint(&t), "NT022").is_empty());
    // A driver without native XDP: nothing to switch to.
    let mut t = machine(WRONG);
    t.nics
        .iter_mut()
        .find(|n| n.netns == "pod1")
        .unwrap()
        .driver = Some("dummy".into());
    assert!(summaries(&lint(&t), "NT022").is_empty());
}

/// True for a command whose CPU list is empty ("echo  > …", "taskset -pc  N").
fn empty_list(cmd: &str) -> bool {
    let words: Vec<&str> = cmd.split(' ').collect();
    words
        .windows(2)
        .any(|w| w[0] == "echo" && (w[1].is_empty() || w[1] == ">"))
        || cmd.contains("taskset -pc  ")
        || cmd.contains("irqaffinity= ")
        || cmd.trim_end().ends_with('=')
}

/// Every CPU taken by a busy pinned thread: no fix may move an IRQ or RPS
/// mask onto an empty CPU list; the findings say there is no CPU instead.
#[test]
fn no_fix_command_has_an_empty_cpu_list() {
    let mut t = machine(WRONG);
    let template = t
        .threads
        .iter()
        .find(|th| th.comm == "worker")
        .unwrap()
        .clone();
    for c in 0..32u32 {
        let mut th = template.clone();
        th.tid = 5000 + c;
        th.pid = 5000 + c;
        th.comm = format!("dp{c}");
        th.affinity = CpuSet::from_cpus([c]);
        t.threads.push(th);
    }
    let r = lint(&t);
    let mut said = 0;
    for f in &r.findings {
        for c in &f.fix {
            assert!(!empty_list(c), "{}: empty CPU list in {c:?}", f.rule);
        }
        said += f
            .evidence
            .iter()
            .filter(|e| e.starts_with("no CPU to move IRQ"))
            .count();
    }
    assert!(
        said > 0,
        "no finding said the IRQs have nowhere to go: {r:#?}"
    );
    // And the fixtures as they are.
    for m in [
        RIGHT,
        WRONG,
        "tests/fixtures/machines/two_socket",
        "tests/fixtures/machines/isolcpus",
    ] {
        for f in &lint(&machine(m)).findings {
            for c in &f.fix {
                assert!(!empty_list(c), "{m}: {}: {c:?}", f.rule);
            }
        }
    }
}

//! Receive steering in fixture machines (tests/fixtures/machines/rss_right
//! and rss_wrong, made by make_fixtures.py): the RSS table and flow rules
//! ethtool answered (`sys/class/net/<dev>/ethtool.json`), a pod's namespace
//! (`netns/<name>/`), and that batch JSON, recordings and their replays
//! carry the same configuration.

mod common;

use std::time::Duration;

use common::run::{nettop, output_within};
use nettop::cli::Cli;
use nettop::topology::{self, HostTopology, LoadOptions, NetnsKind, Support, XdpMode};
use serde_json::Value;

const RIGHT: &str = "tests/fixtures/machines/rss_right";
const WRONG: &str = "tests/fixtures/machines/rss_wrong";

fn machine(root: &str) -> HostTopology {
    let cli = Cli {
        sysroot: root.into(),
        ..Default::default()
    };
    topology::load(&LoadOptions::from_cli(&cli)).unwrap()
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

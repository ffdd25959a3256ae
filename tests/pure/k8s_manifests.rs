//! The Kubernetes packaging (packaging/k8s/): the chart lints, every
//! rendering decodes strictly into the real API types (an unknown or
//! misspelt field fails, as the API server's strict field validation
//! would), the DaemonSet asks for no more than it should, the rendered
//! manifests and the chart's copies of fleet/ are what their generator
//! makes of today's sources, the seccomp profile is the runtime's default
//! plus exactly bpf(2) and perf_event_open(2), and the docs explain every
//! capability the chart can grant.
//!
//! tests/system/k8s_image.rs runs the image with the same rendering's container.

use crate::common;

use std::collections::BTreeSet;

use crate::common::tier::Need;
use common::k8s::{self, container, render, repo, validate};
use serde_json::Value;

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn tools(test: &str) -> bool {
    match k8s::tools_missing() {
        None => true,
        Some(why) => {
            common::skip(test, &why);
            false
        }
    }
}

/// The container runtime's default seccomp profile, which nettop's extends.
fn containers_seccomp_missing() -> Option<String> {
    (!std::path::Path::new("/usr/share/containers/seccomp.json").exists()).then(|| {
        "no /usr/share/containers/seccomp.json (golang-github-containers-common)".to_string()
    })
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// No drift between fleet/ and the chart's embedded copies.
#[test]
fn the_chart_embeds_the_fleet_files_unchanged() {
    for (fleet, chart) in [
        (
            "fleet/prometheus/nettop.rules.yml",
            "files/nettop.rules.yml",
        ),
        ("fleet/grafana/nettop.json", "files/nettop.json"),
    ] {
        assert!(
            read(fleet) == read(&format!("{}/{chart}", k8s::CHART)),
            "{}/{chart} differs from {fleet}: run scripts/k8s-manifests.sh",
            k8s::CHART
        );
    }
}

case!(
    the_seccomp_profile_is_the_default_plus_bpf_and_perf_event_open,
    [Need::Custom(containers_seccomp_missing)]
);
/// The profile is containers-common's default with bpf and
/// perf_event_open allowed unconditionally, and nothing else changed.
fn the_seccomp_profile_is_the_default_plus_bpf_and_perf_event_open() {
    const T: &str = "the_seccomp_profile_is_the_default_plus_bpf_and_perf_event_open";
    let base = std::path::Path::new("/usr/share/containers/seccomp.json");
    let ours: Value = serde_json::from_str(&read("packaging/k8s/seccomp/nettop.json")).unwrap();
    // Whatever the base: default deny, and the two syscalls allowed
    // without conditions, in no rule that still denies them.
    assert_eq!(ours["defaultAction"], "SCMP_ACT_ERRNO");
    let rules = ours["syscalls"].as_array().unwrap();
    let mentions = |name: &str| -> Vec<&Value> {
        rules
            .iter()
            .filter(|r| strs(&r["names"]).iter().any(|n| n == name))
            .collect()
    };
    for sc in ["bpf", "perf_event_open"] {
        let m = mentions(sc);
        assert_eq!(m.len(), 1, "{sc}: {m:?}");
        assert_eq!(m[0]["action"], "SCMP_ACT_ALLOW");
        assert_eq!(m[0]["includes"], serde_json::json!({}));
        assert_eq!(m[0]["excludes"], serde_json::json!({}));
    }
    if !base.exists() {
        common::skip(
            T,
            "no /usr/share/containers/seccomp.json (golang-github-containers-common)",
        );
        return;
    }
    let base: Value = serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    // The same transformation as scripts/seccomp-profile.sh.
    let mut want = base.clone();
    let mut kept: Vec<Value> = Vec::new();
    for r in base["syscalls"].as_array().unwrap() {
        let mut r = r.clone();
        let names: Vec<Value> = strs(&r["names"])
            .into_iter()
            .filter(|n| n != "bpf" && n != "perf_event_open")
            .map(Value::String)
            .collect();
        if !names.is_empty() {
            r["names"] = Value::Array(names);
            kept.push(r);
        }
    }
    kept.push(rules.last().unwrap().clone());
    want["syscalls"] = Value::Array(kept);
    assert!(
        ours == want,
        "packaging/k8s/seccomp/nettop.json is not this runtime's default plus bpf and \
         perf_event_open: run scripts/seccomp-profile.sh"
    );
}

case!(
    the_chart_lints_and_every_rendering_decodes_strictly,
    [Need::Custom(k8s::tools_missing)]
);
fn the_chart_lints_and_every_rendering_decodes_strictly() {
    const T: &str = "the_chart_lints_and_every_rendering_decodes_strictly";
    if !tools(T) {
        return;
    }
    let helm = k8s::helm().unwrap();
    let out = std::process::Command::new(&helm)
        .args(["lint", "--strict", "--kube-version", k8s::KUBE_VERSION])
        .arg(repo(k8s::CHART))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "helm lint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mon = ["--api-versions", "monitoring.coreos.com/v1"];
    let cases: [(&[&str], &[&str], &[&str]); 5] = [
        (
            &[],
            &[],
            &["DaemonSet", "ConfigMap", "PriorityClass", "ServiceAccount"],
        ),
        (&[], &mon, &["PodMonitor", "PrometheusRule"]),
        (
            &["createNamespace=true", "podMonitor.enabled=true"],
            &[],
            &["Namespace", "PodMonitor"],
        ),
        (
            &[
                "calibrationCacheHostPath=/var/cache/nettop",
                "extraCapabilities={SYS_ADMIN,SYS_PTRACE}",
                "extraArgs={--top-cgroups,100}",
                "priorityClass.create=false",
                "dashboard.enabled=false",
            ],
            &[],
            &["DaemonSet"],
        ),
        (
            &["podMonitor.enabled=false", "prometheusRule.enabled=false"],
            &mon,
            &["DaemonSet"],
        ),
    ];
    for (sets, extra, kinds) in cases {
        let text = render(sets, extra).unwrap();
        let summary = validate(&text, false).unwrap_or_else(|e| panic!("{sets:?} {extra:?}: {e}"));
        for k in kinds {
            assert!(summary.contains(k), "{sets:?} {extra:?}: {summary}");
        }
    }
    let off = render(
        &["podMonitor.enabled=false", "prometheusRule.enabled=false"],
        &mon,
    )
    .unwrap();
    assert!(!off.contains("kind: PodMonitor") && !off.contains("kind: PrometheusRule"));
    // The validator is strict: a misspelt field, even in the wrong case
    // only, and a duplicated key are errors.
    let good = render(&[], &mon).unwrap();
    for (from, to) in [
        ("      hostPID: true", "      hostPId: true"),
        ("      honorLabels: true", "      honourLabels: true"),
        (
            "            readOnlyRootFilesystem: true",
            "            readOnlyRootFilesystem: true\n            readOnlyRootFilesystem: false",
        ),
    ] {
        assert!(good.contains(from), "{from}");
        let bad = good.replacen(from, to, 1);
        let err = validate(&bad, false).expect_err(to);
        assert!(err.contains("validate:"), "{err}");
    }
}

case!(
    the_daemonset_asks_for_the_least_it_needs,
    [Need::Custom(k8s::tools_missing)]
);
/// What the DaemonSet may do, read from the rendering the podman test
/// runs: two capabilities, everything else shut.
fn the_daemonset_asks_for_the_least_it_needs() {
    const T: &str = "the_daemonset_asks_for_the_least_it_needs";
    if !tools(T) {
        return;
    }
    let c = container(&render(&[], &[]).unwrap()).unwrap();
    assert_eq!(strs(&c["capAdd"]), ["BPF", "PERFMON"]);
    assert_eq!(strs(&c["capDrop"]), ["ALL"]);
    for (k, want) in [
        ("privileged", false),
        ("allowPrivilegeEscalation", false),
        ("readOnlyRootFilesystem", true),
        ("hostPID", true),
        ("hostNetwork", true),
        ("hostIPC", false),
    ] {
        assert_eq!(c[k], want, "{k}");
    }
    assert_eq!(c["seccompType"], "Localhost");
    assert_eq!(c["seccompLocalhostProfile"], "nettop.json");
    let mounts = c["mounts"].as_array().unwrap();
    for m in mounts {
        if m["hostPath"].is_string() {
            assert_eq!(m["readOnly"], true, "a writable hostPath: {m}");
            assert!(
                !m["hostPath"].as_str().unwrap().contains("debug"),
                "debugfs: {m}"
            );
        }
    }
    let paths: BTreeSet<&str> = mounts
        .iter()
        .filter_map(|m| m["mountPath"].as_str())
        .collect();
    for p in [
        "/sys/fs/cgroup",
        "/var/log/pods",
        "/var/log/containers",
        "/etc/passwd",
        "/var/cache/nettop",
    ] {
        assert!(paths.contains(p), "{p} not mounted: {paths:?}");
    }
    let env: Vec<(&str, &str)> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["fieldRef"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(env.contains(&("NODE_NAME", "spec.nodeName")), "{env:?}");
    // The calibration cache on the node is an opt-in, and then the only
    // writable hostPath.
    let c =
        container(&render(&["calibrationCacheHostPath=/var/cache/nettop"], &[]).unwrap()).unwrap();
    let writable: Vec<&Value> = c["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["hostPath"].is_string() && m["readOnly"] == false)
        .collect();
    assert_eq!(writable.len(), 1, "{writable:?}");
    assert_eq!(writable[0]["hostPath"], "/var/cache/nettop");
}

case!(
    the_rendered_manifests_are_current,
    [Need::Custom(k8s::tools_missing)]
);
/// packaging/k8s/nettop.yaml and nettop-monitoring.yaml are what
/// scripts/k8s-manifests.sh renders from today's chart.
fn the_rendered_manifests_are_current() {
    const T: &str = "the_rendered_manifests_are_current";
    if !tools(T) {
        return;
    }
    let core = render(
        &[
            "createNamespace=true",
            "podMonitor.enabled=false",
            "prometheusRule.enabled=false",
        ],
        &[],
    )
    .unwrap();
    let committed = read("packaging/k8s/nettop.yaml");
    assert!(
        committed.ends_with(&core),
        "packaging/k8s/nettop.yaml is stale: run scripts/k8s-manifests.sh"
    );
    let mon = render(
        &["podMonitor.enabled=true", "prometheusRule.enabled=true"],
        &[
            "--show-only",
            "templates/podmonitor.yaml",
            "--show-only",
            "templates/prometheusrule.yaml",
        ],
    )
    .unwrap();
    let committed_mon = read("packaging/k8s/nettop-monitoring.yaml");
    assert!(
        committed_mon.ends_with(&mon),
        "packaging/k8s/nettop-monitoring.yaml is stale: run scripts/k8s-manifests.sh"
    );
    let all = validate(&format!("{committed}\n---\n{committed_mon}"), false).unwrap();
    assert!(
        all.contains("Namespace") && all.contains("PrometheusRule"),
        "{all}"
    );
}

/// One line per capability the chart grants or offers, saying why it is
/// needed and what is lost without it, in packaging/README.md.
#[test]
fn every_capability_is_explained() {
    let doc = read("packaging/README.md");
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("On Kubernetes"))
        .expect("packaging/README.md has no \"On Kubernetes\" section");
    for cap in ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_SYS_PTRACE"] {
        let start = format!("- **{cap}**");
        let mut lines = section.lines().skip_while(|l| !l.starts_with(&start));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no \"{start}\" item in packaging/README.md"));
        // The item with its wrapped lines.
        let item: String = std::iter::once(first)
            .chain(lines.take_while(|l| l.starts_with("  ")))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            item.contains("without it"),
            "{cap}: say what is lost without it: {item}"
        );
    }
    let values = read(&format!("{}/values.yaml", k8s::CHART));
    assert!(
        values.contains("extraCapabilities: []"),
        "opt-ins stay opt-in"
    );
}

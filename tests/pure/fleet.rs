//! The fleet files (issues 13 and 23): Prometheus rules that promtool
//! accepts and whose alerts fire as their names promise, each alert with a
//! unit test and a runbook section whose commands the real command line
//! accepts, a Grafana dashboard that Grafana can load and whose every query
//! names a metric nettop exports or one of those rules, and a real
//! Prometheus that loads the rules, scrapes `nettop --serve` and answers a
//! query on a recording rule.

use crate::common;
use crate::common::tier::Need;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use clap::error::ErrorKind;
use common::calibration;
use common::run::nettop;
use nettop::app::cli::Cli;
use nettop::metrics::openmetrics::{self, Options};
use nettop::record::synth;
use serde_json::Value;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn fleet(rel: &str) -> PathBuf {
    repo("fleet").join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const RULES: &str = "prometheus/nettop.rules.yml";
const RULE_TESTS: &str = "prometheus/nettop.rules.test.yml";
const RUNBOOKS: &str = "docs/runbooks.md";
/// Alertmanager and Grafana show `runbook_url` as a link, and a relative
/// path means nothing in a notification, so it is absolute: the runbook on
/// the default branch, the alert's own section as the anchor.
const RUNBOOK_BASE: &str = "https://github.com/nettop/nettop/blob/main/docs/runbooks.md#";

fn promtool(args: &[&str]) -> Result<String, String> {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(fleet("prometheus"))
        .output()
        .map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// The value after `key:` on a YAML line, unquoted.
fn yaml_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let v = line.trim().strip_prefix(key)?.trim();
    Some(v.trim_matches(|c| c == '"' || c == '\''))
}

/// Names of the recording rules in the rules file.
fn recording_rules() -> BTreeSet<String> {
    read(&fleet(RULES))
        .lines()
        .filter_map(|l| yaml_value(l, "- record:"))
        .map(str::to_string)
        .collect()
}

/// Every alert of the rules file with its `runbook_url` (None: has none).
/// The file's layout is fixed (promtool checks it), so lines suffice: an
/// annotation belongs to the last `- alert:` above it.
fn alerts() -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for l in read(&fleet(RULES)).lines() {
        if let Some(name) = yaml_value(l, "- alert:") {
            out.insert(name.to_string(), None);
            current = Some(name.to_string());
        } else if yaml_value(l, "- record:").is_some() {
            current = None;
        } else if let (Some(a), Some(url)) = (&current, yaml_value(l, "runbook_url:")) {
            out.insert(a.clone(), Some(url.to_string()));
        }
    }
    out
}

/// Every sample name nettop's renderer can export (families exist whether
/// or not this snapshot fills them; the cgroup families only with cgroups
/// in the sample, so it has some).
fn exported_metrics() -> BTreeSet<String> {
    let mut host = synth::host(2);
    host.calibration = Some(calibration::from_ipi(calibration::measured(
        10, 100.0, 1000.0, 10.0,
    )));
    let prev = synth::sample_with_cgroups(1, 8, 2, 3);
    let cur = synth::sample_with_cgroups(2, 8, 2, 3);
    openmetrics::families(&host, Some(&prev), &cur, &Options::default())
        .iter()
        .map(|f| f.sample_name())
        .collect()
}

/// Metric-like identifiers (`nettop_…`, `nettop:…`) in a PromQL expression.
fn referenced(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("nettop") {
        let start = i + pos;
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b':')
        {
            end += 1;
        }
        if boundary && matches!(b.get(start + 6), Some(b'_' | b':')) {
            out.push(expr[start..end].to_string());
        }
        i = end.max(start + 1);
    }
    out
}

/// Template variables an expression or query uses: `$name` and `${name}`.
fn variables(text: &str) -> Vec<String> {
    text.split('$')
        .skip(1)
        .map(|v| {
            v.trim_start_matches('{')
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// Grafana's own variables, defined by no dashboard.
const BUILTIN_VARS: [&str; 3] = ["__rate_interval", "__interval", "__range"];

/// The anchor GitHub gives a Markdown heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The runbook's headings (outside code blocks) and its code lines.
fn runbook() -> (Vec<String>, Vec<String>) {
    let (mut headings, mut code) = (Vec::new(), Vec::new());
    let mut in_code = false;
    for l in read(&repo(RUNBOOKS)).lines() {
        if l.starts_with("```") {
            in_code = !in_code;
        } else if in_code {
            code.push(l.to_string());
        } else if l.starts_with('#') {
            headings.push(l.trim_start_matches('#').trim().to_string());
        }
    }
    (headings, code)
}

case!(
    rules_pass_promtool_and_their_unit_tests,
    [Need::Tool("promtool", "--version")]
);
fn rules_pass_promtool_and_their_unit_tests() {
    if !common::tool_runs("promtool", "--version") {
        common::skip("rules_pass_promtool", "promtool not installed");
        return;
    }
    let checked = promtool(&["check", "rules", "nettop.rules.yml"]).unwrap();
    assert!(checked.contains("SUCCESS"), "{checked}");
    promtool(&["test", "rules", "nettop.rules.test.yml"]).unwrap();
}

/// An alert nobody has seen fire, or seen stay quiet, promises nothing: the
/// unit tests must show both for each one.
#[test]
fn every_alert_has_unit_tests_that_fire_it_and_keep_it_quiet() {
    let alerts = alerts();
    assert!(alerts.len() >= 8, "{alerts:?}");
    // alertname → (a case expecting no alert, a case expecting one).
    let mut seen: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    let text = read(&fleet(RULE_TESTS));
    let mut current: Option<String> = None;
    for l in text.lines() {
        if let Some(name) = yaml_value(l, "- alertname:") {
            current = Some(name.to_string());
        } else if let (Some(name), Some(v)) = (&current, yaml_value(l, "exp_alerts:")) {
            let e = seen.entry(name.clone()).or_default();
            if v == "[]" {
                e.0 = true;
            } else {
                e.1 = true;
            }
            current = None;
        }
    }
    for name in alerts.keys() {
        match seen.get(name) {
            None => panic!("{name}: no alert_rule_test in {RULE_TESTS}"),
            Some((false, _)) => panic!("{name}: no test where it stays quiet"),
            Some((_, false)) => panic!("{name}: no test where it fires"),
            Some(_) => {}
        }
    }
    for name in seen.keys() {
        assert!(
            alerts.contains_key(name),
            "{RULE_TESTS} tests {name}, no such alert"
        );
    }
}

#[test]
fn every_alert_links_its_own_runbook_section() {
    let (headings, _) = runbook();
    let anchors: BTreeSet<String> = headings.iter().map(|h| anchor(h)).collect();
    let alerts = alerts();
    for (name, url) in &alerts {
        let url = url
            .as_deref()
            .unwrap_or_else(|| panic!("{name}: no runbook_url"));
        let a = url
            .strip_prefix(RUNBOOK_BASE)
            .unwrap_or_else(|| panic!("{name}: runbook_url {url} is not {RUNBOOK_BASE}…"));
        assert!(
            anchors.contains(a),
            "{name}: no heading in {RUNBOOKS} for #{a}"
        );
        assert_eq!(a, anchor(name), "{name}: links another alert's section");
    }
    // And no section for an alert that no longer exists.
    let named: BTreeSet<String> = alerts.keys().map(|n| anchor(n)).collect();
    for h in headings.iter().filter(|h| h.starts_with("Nettop")) {
        assert!(named.contains(&anchor(h)), "{RUNBOOKS}: {h} is no alert");
    }
}

/// The runbook's `nettop` commands are ones the current binary accepts
/// (`$PID`-style placeholders stand for a number, which every flag that
/// takes one accepts), and the metric names it quotes are exported.
#[test]
fn runbook_commands_and_metrics_are_real() {
    let (_, code) = runbook();
    let mut commands = 0;
    for l in &code {
        let l = l.trim();
        if !(l == "nettop" || l.starts_with("nettop ")) {
            continue;
        }
        let cmd = l.split('|').next().unwrap().trim();
        let words: Vec<String> = cmd
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .map(|w| if w.starts_with('$') { "1" } else { w }.to_string())
            .collect();
        match Cli::try_parse_from(&words) {
            Ok(cli) => {
                if let Err(e) = cli.check() {
                    panic!("{cmd}: {e}");
                }
            }
            // clap answers --version and --help with an "error" that
            // prints them.
            Err(e) if e.kind() == ErrorKind::DisplayVersion => {}
            Err(e) => panic!("{cmd}:\n{e}"),
        }
        commands += 1;
    }
    assert!(
        commands >= 10,
        "only {commands} nettop commands in {RUNBOOKS}"
    );

    let exported = exported_metrics();
    let text = read(&repo(RUNBOOKS));
    // "nettop:" ending a sentence is a word, not a name.
    let names: Vec<String> = referenced(&text)
        .into_iter()
        .filter(|n| n.len() > "nettop_".len())
        .collect();
    assert!(!names.is_empty());
    for n in names {
        // A name cut short is a prefix, as in `grep '^nettop_bpf_(…)'`.
        let known = if n.ends_with('_') {
            exported.iter().any(|e| e.starts_with(&n))
        } else {
            exported.contains(&n)
        };
        assert!(known, "{RUNBOOKS}: {n} is not exported");
    }
}

#[test]
fn every_query_names_an_exported_metric_or_a_rule() {
    let exported = exported_metrics();
    let rules = recording_rules();
    assert!(rules.len() >= 5, "{rules:?}");
    let known = |name: &str| exported.contains(name) || rules.contains(name);
    // The rules themselves only read what nettop exports.
    let rules_text = read(&fleet(RULES));
    for l in rules_text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
    {
        let expr = l
            .trim()
            .trim_start_matches("- record:")
            .trim_start_matches("expr:");
        for name in referenced(expr) {
            assert!(
                known(&name) || name == "nettop",
                "rules: {name} is neither exported nor recorded ({l})"
            );
        }
    }
    let dash: Value = serde_json::from_str(&read(&fleet("grafana/nettop.json"))).unwrap();
    let vars: BTreeSet<&str> = dash["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    let panels = dash["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    let mut used = BTreeSet::new();
    for p in panels {
        let title = p["title"].as_str().expect("panel title");
        for t in p["targets"].as_array().expect("targets") {
            let expr = t["expr"].as_str().expect("expr");
            let names = referenced(expr);
            assert!(!names.is_empty(), "{title}: {expr} reads no nettop metric");
            for n in names {
                assert!(known(&n), "{title}: {n} is neither exported nor recorded");
                used.insert(n);
            }
            for var in variables(expr) {
                assert!(
                    vars.contains(var.as_str()) || BUILTIN_VARS.contains(&var.as_str()),
                    "{title}: ${var} not defined"
                );
            }
            // Ranges follow the panel's resolution and the scrape
            // interval; only a baseline spans a fixed day.
            for range in expr.split('[').skip(1) {
                let range = range.split(']').next().unwrap();
                assert!(
                    range == "$__rate_interval" || range == "1d",
                    "{title}: [{range}] in {expr}: use [$__rate_interval]"
                );
            }
            // Every query follows the job and host pickers.
            for var in ["$job", "$instance"] {
                assert!(expr.contains(var), "{title}: {expr} ignores {var}");
            }
            // And a cgroup series follows the cgroup and pod pickers.
            for sel in expr.split("nettop_cgroup_").skip(1) {
                let sel = sel.split('}').next().unwrap();
                for var in ["$cgroup", "$pod_uid"] {
                    assert!(sel.contains(var), "{title}: {expr} ignores {var}");
                }
            }
        }
    }
    // What issues 13 and 23 ask the dashboard to show.
    for want in [
        "nettop:task_interrupt_cpu:rate5m",
        "nettop:cpu_softirq_stolen_seconds:rate5m",
        "nettop:cpu_net_rx_seconds:rate5m",
        "nettop:cpu_napi_budget_exhausted:rate5m",
        "nettop:softnet_dropped:rate5m",
        "nettop_cgroup_stolen_cpu_ratio",
        "nettop_cgroup_hidden_cpu_ratio",
        "nettop_cgroup_true_cpu_ratio",
        "nettop_cgroup_top_cpu_ratio",
        "nettop_calibration_hidden_seconds",
        "nettop_cpu_hidden_seconds_total",
    ] {
        assert!(used.contains(want), "no panel shows {want}");
    }
    // Every cost-of-a-packet family (per host, CPU and device; per packet
    // and per unit of bandwidth), whatever it is called.
    let cost: Vec<&String> = exported
        .iter()
        .filter(|n| n.contains("net_rx_per_") || n.contains("net_rx_cpu_"))
        .collect();
    assert!(cost.len() >= 5, "{cost:?}");
    for n in cost {
        assert!(used.contains(n), "no panel shows {n}");
    }
}

/// What Grafana needs to import the file (its JSON model's essentials) and
/// what keeps it usable: panels that do not overlap on the 24-column grid,
/// queries bound to the dashboard's data source, variables that resolve in
/// order and are all used.
#[test]
fn dashboard_is_a_loadable_grafana_dashboard() {
    let text = read(&fleet("grafana/nettop.json"));
    let dash: Value = serde_json::from_str(&text).unwrap();
    assert!(dash["uid"].is_string() && dash["title"].is_string());
    assert!(
        dash["schemaVersion"].as_u64().unwrap_or(0) >= 30,
        "schemaVersion"
    );
    assert!(dash["time"]["from"].is_string() && dash["time"]["to"].is_string());
    let ds = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});

    let vars = dash["templating"]["list"]
        .as_array()
        .expect("templating.list");
    let mut defined: Vec<&str> = Vec::new();
    for v in vars {
        let name = v["name"].as_str().expect("variable name");
        assert!(!defined.contains(&name), "variable {name} twice");
        match v["type"].as_str() {
            Some("datasource") => {
                assert_eq!(v["query"], "prometheus", "{name}");
            }
            Some("query") => {
                let q = v["query"]["query"].as_str();
                assert!(q.is_some(), "{name}: no query.query");
                assert_eq!(v["definition"].as_str(), q, "{name}: definition ≠ query");
                assert_eq!(v["datasource"], ds, "{name}");
                assert!(v["refresh"].is_u64(), "{name}: refresh");
                // Grafana resolves variables in order.
                for var in variables(q.unwrap()) {
                    assert!(
                        defined.contains(&var.as_str()),
                        "{name} uses ${var} before it is defined"
                    );
                }
                if v["includeAll"] == true {
                    assert!(v["multi"] == true, "{name}: All without multi");
                }
            }
            t => panic!("{name}: variable type {t:?}"),
        }
        defined.push(name);
    }

    let panels = dash["panels"].as_array().expect("panels");
    let mut ids = BTreeSet::new();
    let mut boxes: Vec<(&str, [u64; 4])> = Vec::new();
    let mut used_vars = BTreeSet::new();
    for p in panels {
        let title = p["title"].as_str().expect("panel title");
        assert!(
            ids.insert(p["id"].as_u64().expect("panel id")),
            "{title}: id reused"
        );
        assert!(
            matches!(
                p["type"].as_str(),
                Some("timeseries" | "table" | "stat" | "bargauge")
            ),
            "{title}: type {}",
            p["type"]
        );
        assert_eq!(p["datasource"], ds, "{title}: datasource");
        let g = &p["gridPos"];
        let pos = ["x", "y", "w", "h"].map(|k| {
            g[k].as_u64()
                .unwrap_or_else(|| panic!("{title}: gridPos.{k}"))
        });
        let [x, _, w, h] = pos;
        assert!(w >= 1 && h >= 1 && x + w <= 24, "{title}: gridPos {g}");
        for (other, o) in &boxes {
            let apart = pos[0] + pos[2] <= o[0]
                || o[0] + o[2] <= pos[0]
                || pos[1] + pos[3] <= o[1]
                || o[1] + o[3] <= pos[1];
            assert!(apart, "{title} overlaps {other}");
        }
        boxes.push((title, pos));
        assert!(
            p["fieldConfig"]["defaults"]["unit"].is_string(),
            "{title}: unit"
        );
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no queries");
        let mut refs = BTreeSet::new();
        for t in targets {
            let r = t["refId"].as_str().expect("refId");
            assert!(refs.insert(r), "{title}: refId {r} twice");
            assert_eq!(t["datasource"], ds, "{title} {r}: datasource");
            let expr = t["expr"].as_str().expect("expr");
            used_vars.extend(variables(expr));
        }
    }
    for v in vars {
        if let Some(q) = v["query"]["query"].as_str() {
            used_vars.extend(variables(q));
        }
    }
    used_vars.insert("datasource".into());
    for name in defined {
        assert!(
            used_vars.contains(name),
            "variable {name} is used by nothing"
        );
    }
}

/// The dashboard's queries with its variables filled in as Grafana does
/// with "All" picked (the job is the test's).
fn dashboard_queries() -> Vec<String> {
    let dash: Value = serde_json::from_str(&read(&fleet("grafana/nettop.json"))).unwrap();
    let mut out = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            out.push(
                expr.replace("$__rate_interval", "1m")
                    .replace("$job", "nettop")
                    .replace("$instance", ".*")
                    .replace("$cgroup", ".*")
                    .replace("$pod_uid", ".*"),
            );
            assert!(
                !out.last().unwrap().contains('$'),
                "{expr}: a variable left"
            );
        }
    }
    out
}

/// A query string's value, percent-encoded.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

case!(
    prometheus_loads_the_rules_and_records_from_serve,
    [Need::Root, Need::Tool("prometheus", "--version")]
);
fn prometheus_loads_the_rules_and_records_from_serve() {
    const T: &str = "prometheus_loads_the_rules_and_records_from_serve";
    if !common::tool_runs("prometheus", "--version") {
        common::skip(T, "prometheus not installed");
        return;
    }
    if !common::is_root() {
        common::skip(T, "needs root: the recorded rule reads BPF-traced metrics");
        return;
    }
    let target = common::prom::free_addr();
    let _serve = common::run::Guard(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args(["--serve", &target, "-d", "0.5"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: nettop\n    static_configs:\n      - targets: ['{target}']\n",
        fleet(RULES).display()
    );
    let (_prom, web) = common::prom::start_prometheus(dir.path(), &config);
    let q = "/api/v1/query?query=nettop%3Acpu_irq_seconds%3Arate5m";
    let in_file = recording_rules().len() + alerts().len();
    let t0 = Instant::now();
    let mut last = String::new();
    while t0.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(500));
        let Some((200, body)) = common::prom::get(&web, q) else {
            continue;
        };
        let v: Value = serde_json::from_str(&body).unwrap();
        last = body;
        let Some(res) = v["data"]["result"].as_array().filter(|a| !a.is_empty()) else {
            continue;
        };
        assert_eq!(res[0]["metric"]["job"], "nettop", "{last}");
        assert!(res[0]["metric"]["cpu"].is_string(), "{last}");
        let rate: f64 = res[0]["value"][1].as_str().unwrap().parse().unwrap();
        // Seconds of interrupt work per second on one CPU.
        assert!((0.0..=1.0).contains(&rate), "{last}");
        let (_, rules) = common::prom::get(&web, "/api/v1/rules").unwrap();
        let rv: Value = serde_json::from_str(&rules).unwrap();
        let mut n = 0;
        for g in rv["data"]["groups"].as_array().unwrap() {
            for r in g["rules"].as_array().unwrap() {
                n += 1;
                assert_eq!(r["health"], "ok", "{r}");
            }
        }
        assert_eq!(n, in_file, "{rules}");
        // Every dashboard query is one this Prometheus evaluates (syntax,
        // vector matching) with the variables as Grafana fills them.
        let queries = dashboard_queries();
        for expr in &queries {
            let path = format!("/api/v1/query?query={}", percent_encode(expr));
            let (code, body) = common::prom::get(&web, &path).expect("Prometheus answers");
            assert!(
                code == 200 && body.contains("\"success\""),
                "{expr}:\n{body}"
            );
        }
        common::report(&format!(
            "{T}: {n} rules loaded, {} dashboard queries evaluated, \
             nettop:cpu_irq_seconds:rate5m = {rate:.5} after {:?}\n",
            queries.len(),
            t0.elapsed()
        ));
        return;
    }
    panic!("Prometheus never returned nettop:cpu_irq_seconds:rate5m; last answer: {last}");
}

//! OpenMetrics/Prometheus export: the pure renderer, `promtool` on its
//! output, backfilling an exported recording, and a real Prometheus scraping
//! `nettop --serve`.

use crate::common;
use crate::common::tier::Need;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::calibration;
use nettop::metrics::openmetrics::{self, Flavor, Options};
use nettop::record::synth;

/// Kills and reaps a child on drop, so a failing test leaves nothing behind.
struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http_get(addr: &str, path: &str, accept: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_string())
}

fn promtool_check(text: &str) -> Result<(), String> {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("promtool: {e}"))?;
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn synth_families() -> Vec<openmetrics::Family> {
    let mut host = synth::host(2);
    // Every interruption class at 3 µs untraced, IPIs measured.
    host.calibration = Some(calibration::from_ipi(calibration::measured(
        100, 500.0, 3_000.0, 50.0,
    )));
    let prev = synth::sample(1, 12, 2);
    let mut cur = synth::sample(2, 12, 2);
    // A label value that needs escaping.
    cur.tasks[0].comm = "we\"ird\\name\n".into();
    cur.devices[0].name = "eth0".into();
    openmetrics::families(
        &host,
        Some(&prev),
        &cur,
        &Options {
            top_tasks: 3,
            threads: false,
            top_cgroups: 50,
            ..Options::default()
        },
    )
}

#[test]
fn renderer_output_is_pinned() {
    let om = openmetrics::render(&synth_families(), Flavor::OpenMetrics);
    assert!(om.ends_with("# EOF\n"));
    insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("export_openmetrics_synth", om);
    });
}

#[test]
fn renderer_follows_conventions_and_bounds_cardinality() {
    let fams = synth_families();
    let om = openmetrics::render(&fams, Flavor::OpenMetrics);
    for f in &fams {
        assert!(f.name.starts_with("nettop_"), "{}", f.name);
        if let Some(u) = f.unit {
            assert!(f.name.ends_with(&format!("_{u}")), "{} unit {u}", f.name);
            assert!(om.contains(&format!("# UNIT {} {u}\n", f.name)));
        }
        if f.kind == openmetrics::Kind::Counter {
            assert!(f.sample_name().ends_with("_total"));
        }
    }
    // Top-3 processes by stolen time only (12 threads = 3 processes here,
    // of which only pid 1000 and 1004 ... have irq time), at most 3 pids.
    let pids: std::collections::BTreeSet<&str> = om
        .lines()
        .filter(|l| l.starts_with("nettop_task_on_cpu_seconds_total"))
        .filter_map(|l| l.split("pid=\"").nth(1)?.split('"').next())
        .collect();
    assert!(!pids.is_empty() && pids.len() <= 3, "{pids:?}");
    assert!(om.contains(r#"comm="we\"ird\\name\n""#), "label escaping");
    // HIDDEN~ as counters (interruptions × calibrated cost) and the table.
    for name in [
        "nettop_task_hidden_seconds_total{",
        "nettop_cpu_hidden_seconds_total{cpu=\"0\"}",
        "nettop_calibration_hidden_seconds{class=\"ipi\",basis=\"measured\"} 0.000003",
    ] {
        assert!(om.contains(name), "{name} missing");
    }
    // Busiest first when truncating devices.
    let host = synth::host(1);
    let mut s = synth::sample(1, 1, 1);
    s.devices = (0..200)
        .map(|i| nettop::sample::RawDevice {
            name: format!("veth{i}"),
            rx_bytes: i,
            ..Default::default()
        })
        .collect();
    let f = openmetrics::families(&host, None, &s, &Options::default());
    let rb = f
        .iter()
        .find(|f| f.name == "nettop_network_receive_bytes")
        .unwrap();
    assert_eq!(rb.samples.len(), openmetrics::MAX_DEVICES);
    assert!(rb.samples.iter().all(|(_, v)| *v >= (200 - 64) as f64));
}

case!(
    promtool_accepts_rendered_metrics,
    [Need::Tool("promtool", "--version")]
);
fn promtool_accepts_rendered_metrics() {
    if !common::tool_runs("promtool", "--version") {
        common::skip(
            "promtool_accepts_rendered_metrics",
            "promtool not installed",
        );
        return;
    }
    let prom = openmetrics::render(&synth_families(), Flavor::Prometheus);
    promtool_check(&prom).unwrap();
}

/// 500 cgroups (pods of each QoS class, docker, systemd, v1 paths) on a
/// 2-CPU host, exported with the default bound.
fn cgroup_families(top: usize) -> Vec<openmetrics::Family> {
    let host = synth::host(2);
    let prev = synth::sample_with_cgroups(1, 2000, 2, 500);
    let cur = synth::sample_with_cgroups(2, 2000, 2, 500);
    assert_eq!(cur.cgroups.len(), 500);
    openmetrics::families(
        &host,
        Some(&prev),
        &cur,
        &Options {
            top_cgroups: top,
            ..Options::default()
        },
    )
}

#[test]
fn cgroup_metrics_are_bounded_with_the_rest_summed_into_other() {
    let fams = cgroup_families(Options::default().top_cgroups);
    let cg: Vec<&openmetrics::Family> = fams
        .iter()
        .filter(|f| f.name.starts_with("nettop_cgroup"))
        .collect();
    assert!(
        cg.len() >= 10,
        "{:?}",
        cg.iter().map(|f| f.name).collect::<Vec<_>>()
    );
    let count = cg.iter().find(|f| f.name == "nettop_cgroups").unwrap();
    assert_eq!(count.samples[0].1, 500.0);
    // Memory only where a controller counts it (synth: two cgroups in
    // three), "other" included, as the sum of the known ones.
    let mem = cg
        .iter()
        .find(|f| f.name == "nettop_cgroup_memory_bytes")
        .unwrap();
    assert!(
        (30..51).contains(&mem.samples.len()),
        "{}",
        mem.samples.len()
    );
    assert!(
        mem.samples
            .iter()
            .any(|(l, _)| l.iter().any(|(k, v)| *k == "cgroup" && v == "other"))
    );
    // Pairs are bounded by the same number, without an "other".
    let robbed = cg
        .iter()
        .find(|f| f.name == "nettop_cgroup_robbed_by_cpu_ratio")
        .unwrap();
    assert!(robbed.samples.len() <= 50, "{}", robbed.samples.len());
    for f in cg.iter().filter(|f| {
        f.name != "nettop_cgroups"
            && f.name != "nettop_cgroup_memory_bytes"
            && f.name != "nettop_cgroup_robbed_by_cpu_ratio"
    }) {
        // 50 cgroups of their own plus one "other": never 500 series.
        assert_eq!(f.samples.len(), 51, "{}", f.name);
        assert!(
            f.samples
                .iter()
                .filter(|(l, _)| l.iter().any(|(k, v)| *k == "cgroup" && v == "other"))
                .count()
                == 1,
            "{}",
            f.name
        );
    }
    // Nothing is lost by the bound: the series sum to the whole roll-up.
    let stolen = |fams: &[openmetrics::Family]| -> f64 {
        fams.iter()
            .find(|f| f.name == "nettop_cgroup_stolen_cpu_ratio")
            .unwrap()
            .samples
            .iter()
            .map(|(_, v)| v)
            .sum()
    };
    let all = cgroup_families(500);
    assert!(stolen(&all) > 0.0);
    assert!((stolen(&fams) - stolen(&all)).abs() < 1e-9);
    // Identity labels from the paths.
    let om = openmetrics::render(&fams, Flavor::OpenMetrics);
    assert!(om.contains("qos=\"burstable\""), "{om:.2000}");
    assert!(om.contains("runtime=\"containerd\""));
    assert!(
        om.lines()
            .any(|l| l.starts_with("nettop_cgroup_stolen_cpu_ratio{")
                && l.contains("pod_uid=\"0")
                && !l.contains("container_id=\"\""))
    );
}

case!(
    promtool_accepts_cgroup_metrics,
    [Need::Tool("promtool", "--version")]
);
fn promtool_accepts_cgroup_metrics() {
    if !common::tool_runs("promtool", "--version") {
        common::skip("promtool_accepts_cgroup_metrics", "promtool not installed");
        return;
    }
    let fams = cgroup_families(Options::default().top_cgroups);
    promtool_check(&openmetrics::render(&fams, Flavor::Prometheus)).unwrap();
}

case!(
    exported_recording_backfills_into_prometheus_tsdb,
    [Need::Tool("promtool", "--version")]
);
fn exported_recording_backfills_into_prometheus_tsdb() {
    if !common::tool_runs("promtool", "--version") {
        common::skip("exported_recording_backfills", "promtool not installed");
        return;
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1.rec.zst");
    let out = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args([
            "--replay",
            golden.to_str().unwrap(),
            "--export",
            "openmetrics",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let om = dir.path().join("g.om");
    std::fs::write(&om, &out.stdout).unwrap();
    let r = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om)
        .arg(dir.path().join("blocks"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        r.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // 3 samples, timestamps 1700000001000..3000.
    assert!(
        text.contains("1700000001000") && text.contains("1700000003"),
        "{text}"
    );
}

/// Starts `nettop --serve` on a free port, BPF when root.
fn start_serve() -> (Kill, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nettop"));
    cmd.args(["--serve", &addr, "-d", "0.5"])
        .env("NETTOP_CACHE_DIR", common::cache_dir());
    if !common::is_root() {
        cmd.arg("--no-bpf");
    }
    let child = Kill(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if http_get(&addr, "/metrics", "text/plain").is_some_and(|b| b.contains("nettop_")) {
            return (child, addr);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("nettop --serve did not answer on {addr} within 30 s");
}

case!(
    serve_output_passes_promtool_in_both_formats,
    [Need::Tool("promtool", "--version")]
);
fn serve_output_passes_promtool_in_both_formats() {
    if !common::tool_runs("promtool", "--version") {
        common::skip("serve_output_passes_promtool", "promtool not installed");
        return;
    }
    let (_serve, addr) = start_serve();
    let prom = http_get(&addr, "/metrics", "text/plain").unwrap();
    promtool_check(&prom).unwrap();
    assert!(prom.contains("nettop_cpu_seconds_total{cpu=\"0\",mode=\"user\"}"));
    let om = http_get(
        &addr,
        "/metrics",
        "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
    )
    .unwrap();
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# UNIT nettop_cpu_seconds seconds"));
    assert!(
        http_get(&addr, "/nope", "*/*")
            .unwrap()
            .contains("not found")
    );
}

case!(
    real_prometheus_scrapes_serve,
    [Need::Tool("prometheus", "--version")]
);
fn real_prometheus_scrapes_serve() {
    if !common::tool_runs("prometheus", "--version") {
        common::skip("real_prometheus_scrapes_serve", "prometheus not installed");
        return;
    }
    let (_serve, target) = start_serve();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: nettop\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let web = format!("127.0.0.1:{}", free_port());
    let _prom = Kill(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let q = "/api/v1/query?query=rate(nettop_cpu_seconds_total%7Bmode%3D%22idle%22%7D%5B10s%5D)";
    let t0 = Instant::now();
    let mut last = String::new();
    while t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        let Some(body) = http_get(&web, q, "application/json") else {
            continue;
        };
        last = body.clone();
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else {
            continue;
        };
        let res = &v["data"]["result"];
        if res.as_array().is_some_and(|a| !a.is_empty()) {
            let m = &res[0]["metric"];
            assert_eq!(m["job"], "nettop");
            assert!(m["cpu"].is_string());
            let rate: f64 = res[0]["value"][1].as_str().unwrap().parse().unwrap();
            // Idle seconds per second of one CPU: between 0 and 1.
            assert!((0.0..=1.5).contains(&rate), "{body}");
            common::report(&format!(
                "real_prometheus_scrapes_serve: idle rate {rate:.3} after {:?}\n",
                t0.elapsed()
            ));
            // And the scrape used OpenMetrics without errors.
            let up = http_get(&web, "/api/v1/query?query=up", "application/json").unwrap();
            assert!(up.contains("\"1\""), "{up}");
            return;
        }
    }
    panic!("Prometheus never returned nettop_cpu_seconds_total; last answer: {last}");
}

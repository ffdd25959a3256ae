//! The real recorder under real traffic: SIGKILL midway loses at most the
//! snapshot being written; SIGTERM closes the file cleanly.

use crate::common;
use crate::common::tier::Need;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::NetnsPair;
use nettop::record::{Recording, WarningKind};
use nettop::sample::{NET_RX, Source};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn recorder(file: &Path, extra: &[&str]) -> Kill {
    Kill(
        Command::new(env!("CARGO_BIN_EXE_nettop"))
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .arg("--record")
            .arg(file)
            .args(["-d", "0.25"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Waits until the file holds at least `n` samples.
fn wait_samples(file: &Path, n: usize) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if Recording::open(file).is_ok_and(|r| r.len() >= n) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never reached {n} samples", file.display());
}

case!(
    sigkill_midway_under_netns_traffic_keeps_what_was_written,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version")
    ]
);
fn sigkill_midway_under_netns_traffic_keeps_what_was_written() {
    const T: &str = "sigkill_midway_under_netns_traffic";
    if !common::is_root() {
        common::skip(T, "needs root for BPF and network namespaces");
        return;
    }
    if !common::netns::have_program("iperf3") {
        common::skip(T, "iperf3 not installed");
        return;
    }
    let mut pair = match NetnsPair::create("rk") {
        Ok(p) => p,
        Err(e) => {
            common::skip(T, &format!("cannot create network namespaces: {e}"));
            return;
        }
    };
    // Receive processing on CPU 1, sender on CPU 0, 15 s at most.
    if let Err(e) = pair.set_rps("2") {
        common::report(&format!("{T}: rps not set ({e}); continuing\n"));
    }
    pair.start_iperf3(15, 0).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("evidence.zst");
    let mut rec = recorder(&file, &[]);
    wait_samples(&file, 8);
    // SIGKILL: no chance to write the end record.
    rec.0.kill().unwrap();
    let status = rec.0.wait().unwrap();
    assert!(!status.success());
    let mut err = String::new();
    if let Some(mut e) = rec.0.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    pair.stop_children();

    let r = Recording::open(&file).unwrap();
    assert!(!r.closed_cleanly());
    assert!(r.len() >= 8, "{} samples", r.len());
    for w in r.warnings() {
        assert!(
            matches!(w.kind, WarningKind::TornTail | WarningKind::NotClosed),
            "{w:?}"
        );
    }
    let samples: Vec<_> = (0..r.len()).map(|i| r.get(i).unwrap()).collect();
    if samples[0].source != Source::Bpf {
        common::skip(T, &format!("recorder ran without BPF: {err}"));
        return;
    }
    // Real BPF data: NET_RX work from the veth traffic was traced.
    let net_rx_ns: u64 = samples
        .last()
        .unwrap()
        .cpus
        .iter()
        .filter_map(|c| c.irq.as_ref())
        .map(|a| a.softirq_ns.iter().map(|ctx| ctx[NET_RX]).sum::<u64>())
        .sum::<u64>()
        - samples[0]
            .cpus
            .iter()
            .filter_map(|c| c.irq.as_ref())
            .map(|a| a.softirq_ns.iter().map(|ctx| ctx[NET_RX]).sum::<u64>())
            .sum::<u64>();
    assert!(net_rx_ns > 1_000_000, "NET_RX traced {net_rx_ns} ns");
    assert!(
        samples
            .iter()
            .any(|s| s.procs.iter().chain(&s.tasks).any(|t| t.comm == "iperf3"))
    );

    // Replay what was saved through the real binary.
    let out = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .arg("--replay")
        .arg(&file)
        .args(["--export", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let frames: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), r.len() - 1);
    let net_rx_pct: f64 = frames
        .iter()
        .flat_map(|f| f["cpus"].as_array().unwrap().iter())
        .map(|c| c["traced_softirq_pct"][NET_RX].as_f64().unwrap())
        .sum();
    assert!(net_rx_pct > 0.0);
    common::report(&format!(
        "{T}: {} samples survived SIGKILL ({} bytes), warnings {:?}, NET_RX traced {:.1} ms\n",
        r.len(),
        std::fs::metadata(&file).unwrap().len(),
        r.warnings().iter().map(|w| w.kind).collect::<Vec<_>>(),
        net_rx_ns as f64 / 1e6
    ));
}

case!(
    sigterm_and_sigint_close_cleanly,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version")
    ]
);
fn sigterm_and_sigint_close_cleanly() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("clean.rec");
        let rec = recorder(&file, &["--no-bpf", "--duration", "10m"]);
        wait_samples(&file, 3);
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        assert_eq!(unsafe { libc::kill(rec.0.id() as i32, sig) }, 0);
        let mut rec = rec;
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = rec.0.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "recorder ignored signal {sig}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "signal {sig}");
        let r = Recording::open(&file).unwrap();
        assert!(r.closed_cleanly(), "signal {sig}: {:?}", r.warnings());
        assert!(r.warnings().is_empty());
        assert!(r.len() >= 3);
    }
}

//! Accuracy oracle: does nettop see the CPU time interrupts steal from a task?
//!
//! Two network namespaces joined by a veth pair carry bounded iperf3 UDP
//! traffic (MTU-sized datagrams); both iperf3 ends run on CPU 0. RPS on the receiving veth steers
//! receive processing (NET_RX softirq, raised by an IPI) onto CPU 1, where a
//! pure user-space victim spins and measures its own work rate against an
//! idle calibration. That rate is the oracle: it does not depend on any
//! kernel accounting. The real `nettop -b --json -p <victim>` runs during the
//! load and must report the victim as ~100 % busy for top yet with ≥ 15 %
//! stolen, a TRUE % below top's by at least that much, and an unexplained
//! estimate. A control run with RPS off must show (almost) nothing stolen.
//!
//! Needs root, BTF, two CPUs, `ip`, `iperf3`, `taskset`; prints `SKIPPED:`
//! otherwise, and fails instead when NETTOP_REQUIRE_BPF=1.

mod common;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::netns::NetnsPair;
use common::victim::{self, Bucket};
use nettop::model::frame::{Frame, TaskView};
use nettop::model::raw::NET_RX;

const TEST: &str = "accuracy::nettop_sees_stolen_time";
/// Environment of the re-executed test binary that makes it the victim.
const VICTIM_ENV: &str = "NETTOP_ACCURACY_VICTIM";
/// Traffic endpoints' CPU and the victim's CPU (where RPS steers RX work).
const TRAFFIC_CPU: usize = 0;
const VICTIM_CPU: usize = 1;
const CALIBRATE: Duration = Duration::from_millis(2000);
/// Calibration buckets before this are ignored (startup, page faults).
const CALIBRATE_SKIP_US: u64 = 300_000;
const RAMP: Duration = Duration::from_millis(1000);
const FRAMES: u32 = 6;
const TRAFFIC_SECS: u32 = FRAMES + 5;

/// The victim process: not a test of its own. `nettop_sees_stolen_time`
/// re-executes this test binary with `--ignored --exact victim_process` and
/// [`VICTIM_ENV`] set, to get a separate, single-purpose process nettop can
/// watch by pid. Run by hand it spins for half a second.
#[test]
#[ignore = "helper process for nettop_sees_stolen_time"]
fn victim_process() {
    use std::io::Write;
    let spec = std::env::var(VICTIM_ENV).unwrap_or_else(|_| "max_ms=500".into());
    let opts = victim::Options::parse_kv(&spec).expect("victim options");
    let mut buckets = 0;
    let stdout = std::io::stdout();
    victim::run(&opts, |b| {
        buckets += 1;
        let line = serde_json::to_string(b).expect("bucket serialises");
        // Written to the real stdout (not the harness capture); a closed
        // pipe means the parent is done with us.
        writeln!(stdout.lock(), "VICTIM {line}").is_ok()
    })
    .expect("victim runs");
    assert!(buckets > 0, "victim reported no work");
}

/// Kills and reaps a child when dropped, so no victim or nettop outlives
/// a failing test.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Victim {
    child: Reaped,
    buckets: Arc<Mutex<Vec<Bucket>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Victim {
    fn start(cpu: usize) -> Result<Victim, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args([
                "victim_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env(
                VICTIM_ENV,
                format!("cpu={cpu},max_ms=60000,bucket_ms=100,nice=20"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start victim: {e}"))?;
        let out = child.stdout.take().ok_or("victim has no stdout")?;
        let buckets = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buckets);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let parsed = line
                    .strip_prefix("VICTIM ")
                    .and_then(|js| serde_json::from_str::<Bucket>(js).ok());
                if let Some(b) = parsed {
                    sink.lock().expect("bucket lock").push(b);
                }
            }
        });
        Ok(Victim {
            child: Reaped(child),
            buckets,
            reader: Some(reader),
        })
    }

    fn pid(&self) -> u32 {
        self.child.0.id()
    }

    fn stop(mut self) -> Vec<Bucket> {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        std::mem::take(&mut *self.buckets.lock().expect("bucket lock"))
    }
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Means of the victim's row over the frames used.
#[derive(Default, Debug, Clone)]
struct Avg {
    top: f64,
    on_cpu: f64,
    true_: f64,
    stolen: f64,
    hardirq: f64,
    sysvec: f64,
    net_rx_stolen: f64,
    softirq_stolen: f64,
    inline: f64,
    unexplained: f64,
    interrupts_per_s: f64,
    cpu_soft: f64,
    cpu_unexplained_irq: f64,
}

struct Outcome {
    label: &'static str,
    rps_mask: &'static str,
    frames_used: usize,
    calibrated_chunks_per_ms: f64,
    /// Oracle: victim's work rate under load / calibrated rate, percent.
    share_pct: f64,
    /// Oracle, second view: time lost in clock-read gaps, percent of wall.
    gap_loss_pct: f64,
    gaps_per_s: f64,
    avg: Avg,
    regime: String,
    health: String,
}

impl Outcome {
    fn loss_pct(&self) -> f64 {
        100.0 - self.share_pct
    }
}

enum Fail {
    /// The environment cannot run the test (skip, or fail under REQUIRE).
    Cannot(String),
    /// nettop or the setup misbehaved: always a failure.
    Broken(String),
}

impl From<String> for Fail {
    fn from(s: String) -> Self {
        Fail::Broken(s)
    }
}

impl From<&str> for Fail {
    fn from(s: &str) -> Self {
        Fail::Broken(s.to_string())
    }
}

/// Runs nettop for `FRAMES` frames on `pid` and returns its frames.
fn run_nettop(pid: u32) -> Result<Vec<(Frame, serde_json::Value)>, Fail> {
    let out = tempfile::NamedTempFile::new().map_err(|e| format!("tempfile: {e}"))?;
    let err = tempfile::NamedTempFile::new().map_err(|e| format!("tempfile: {e}"))?;
    let stdout = out.reopen().map_err(|e| format!("tempfile: {e}"))?;
    let stderr = err.reopen().map_err(|e| format!("tempfile: {e}"))?;
    let exe = env!("CARGO_BIN_EXE_nettop");
    let args = [
        "-b".to_string(),
        "--json".into(),
        "-p".into(),
        pid.to_string(),
        "-d".into(),
        "1".into(),
        "-n".into(),
        FRAMES.to_string(),
    ];
    let mut child = Reaped(
        Command::new(exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {exe}: {e}"))?,
    );
    let deadline = Instant::now() + Duration::from_secs(FRAMES as u64 + 30);
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                return Err(Fail::Broken(format!(
                    "nettop {} did not finish within {} s",
                    args.join(" "),
                    FRAMES + 30
                )));
            }
            Ok(None) => sleep(Duration::from_millis(100)),
            Err(e) => return Err(Fail::Broken(format!("waiting for nettop: {e}"))),
        }
    };
    let mut text = String::new();
    let mut etext = String::new();
    out.reopen()
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("reading nettop output: {e}"))?;
    err.reopen()
        .and_then(|mut f| f.read_to_string(&mut etext))
        .map_err(|e| format!("reading nettop stderr: {e}"))?;
    if !status.success() {
        let msg = format!(
            "nettop {} exited with {status}: {}",
            args.join(" "),
            etext.trim()
        );
        // Exit 2 naming BPF/BTF/capabilities = this machine cannot run BPF.
        let lower = etext.to_lowercase();
        if status.code() == Some(2)
            && ["bpf", "btf", "cap_", "permission"]
                .iter()
                .any(|w| lower.contains(w))
        {
            return Err(Fail::Cannot(msg));
        }
        return Err(Fail::Broken(msg));
    }
    let mut frames = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "nettop --json line {} is not JSON ({e}): {line:.200}",
                i + 1
            )
        })?;
        let f: Frame = serde_json::from_value(v.clone()).map_err(|e| {
            format!(
                "nettop --json line {} is not a Frame ({e}): {line:.200}",
                i + 1
            )
        })?;
        frames.push((f, v));
    }
    if frames.len() != FRAMES as usize {
        return Err(Fail::Broken(format!(
            "nettop -n {FRAMES} printed {} JSON frames; stderr: {}",
            frames.len(),
            etext.trim()
        )));
    }
    Ok(frames)
}

fn victim_row(f: &Frame, pid: u32) -> Option<&TaskView> {
    f.processes.iter().find(|t| t.pid == pid)
}

fn run_scenario(
    pair: &mut NetnsPair,
    label: &'static str,
    rps_mask: &'static str,
) -> Result<Outcome, Fail> {
    pair.set_rps(rps_mask)?;
    let victim = Victim::start(VICTIM_CPU)?;
    let pid = victim.pid();
    let t0 = unix_us();
    sleep(CALIBRATE);
    let cal_end = unix_us();
    pair.start_iperf3(TRAFFIC_SECS, TRAFFIC_CPU)?;
    sleep(RAMP);
    let frames = run_nettop(pid);
    pair.stop_children();
    let buckets = victim.stop();
    let frames = frames?;

    let cal = victim::total(
        buckets
            .iter()
            .filter(|b| b.end_unix_us > t0 + CALIBRATE_SKIP_US && b.end_unix_us <= cal_end),
    );
    if cal.dur_ns < 1_000_000_000 {
        return Err(Fail::Broken(format!(
            "victim calibration covered only {} ms (got {} buckets in total)",
            cal.dur_ns / 1_000_000,
            buckets.len()
        )));
    }
    let cal_rate = cal.chunks_per_ms();

    let mut avg = Avg::default();
    let mut used = 0usize;
    let mut loaded: Vec<&Bucket> = Vec::new();
    for (f, v) in frames.iter().skip(1) {
        let row = victim_row(f, pid).ok_or_else(|| {
            format!(
                "frame {} has no process row for the victim pid {pid} ({} rows)",
                f.seq,
                f.processes.len()
            )
        })?;
        let raw_row = v["processes"]
            .as_array()
            .and_then(|a| a.iter().find(|t| t["pid"] == pid))
            .ok_or("victim row missing from JSON")?;
        let unexpl = &raw_row["unexplained_est_pct"];
        if !unexpl.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0) {
            return Err(Fail::Broken(format!(
                "frame {}: victim's unexplained_est_pct is not reported as a finite, non-negative number: {unexpl}",
                f.seq
            )));
        }
        let cpu = f.cpus.iter().find(|c| c.cpu == VICTIM_CPU as u32);
        avg.top += row.top_pct;
        avg.on_cpu += row.on_cpu_pct;
        avg.true_ += row.true_pct;
        avg.stolen += row.stolen_pct;
        avg.hardirq += row.hardirq_pct;
        avg.sysvec += row.sysvec_pct;
        avg.net_rx_stolen += row.softirq_stolen_pct[NET_RX];
        avg.softirq_stolen += row.softirq_stolen_pct.iter().sum::<f64>();
        avg.inline += row.inline_pct;
        avg.unexplained += row.unexplained_est_pct;
        avg.interrupts_per_s += row.interrupts_per_s;
        avg.cpu_soft += cpu.map_or(0.0, |c| c.soft_pct);
        avg.cpu_unexplained_irq += cpu.map_or(0.0, |c| c.unexplained_irq_pct);
        used += 1;
        // The victim's buckets that fall inside this frame's interval.
        let end = f.unix_ms * 1000;
        let start = end.saturating_sub((f.interval_s * 1e6) as u64);
        loaded.extend(
            buckets
                .iter()
                .filter(|b| b.end_unix_us > start + 100_000 && b.end_unix_us <= end),
        );
    }
    let n = used as f64;
    for x in [
        &mut avg.top,
        &mut avg.on_cpu,
        &mut avg.true_,
        &mut avg.stolen,
        &mut avg.hardirq,
        &mut avg.sysvec,
        &mut avg.net_rx_stolen,
        &mut avg.softirq_stolen,
        &mut avg.inline,
        &mut avg.unexplained,
        &mut avg.interrupts_per_s,
        &mut avg.cpu_soft,
        &mut avg.cpu_unexplained_irq,
    ] {
        *x /= n;
    }
    let load = victim::total(loaded.iter().copied());
    if load.dur_ns < 1_000_000_000 {
        return Err(Fail::Broken(format!(
            "only {} ms of victim measurements line up with nettop's frames \
             (frame clock vs victim clock?)",
            load.dur_ns / 1_000_000
        )));
    }
    let secs = load.dur_ns as f64 / 1e9;
    let last = &frames[frames.len() - 1].0;
    Ok(Outcome {
        label,
        rps_mask,
        frames_used: used,
        calibrated_chunks_per_ms: cal_rate,
        share_pct: 100.0 * load.chunks_per_ms() / cal_rate,
        gap_loss_pct: 100.0 * load.gap_ns as f64 / load.dur_ns as f64,
        gaps_per_s: load.gaps as f64 / secs,
        avg,
        regime: format!("{:?}: {}", last.regime, last.regime_note),
        health: format!("{:?}", last.health),
    })
}

fn describe(o: &Outcome) -> String {
    let a = &o.avg;
    let loss = o.loss_pct();
    let frac = |x: f64| {
        if loss > 0.5 {
            format!("{:.0} %", 100.0 * x / loss)
        } else {
            "n/a (no loss)".into()
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "--- {} (rps_cpus={}, {} frames averaged, first skipped) ---",
        o.label, o.rps_mask, o.frames_used
    );
    let _ = writeln!(
        s,
        "oracle  victim calibrated {:.0} chunks/ms idle; real share under load {:.1} % => loss {:.1} %",
        o.calibrated_chunks_per_ms, o.share_pct, loss
    );
    let _ = writeln!(
        s,
        "oracle  user-mode gaps > 2 µs beyond a chunk: {:.0}/s, {:.1} % of wall time",
        o.gaps_per_s, o.gap_loss_pct
    );
    let _ = writeln!(
        s,
        "nettop  TOP% {:.1}  ONCPU% {:.1}  TRUE% {:.1}  STOLEN% {:.1} (hardirq {:.1}, sysvec {:.1}, softirq {:.1} of which NET_RX {:.1})  INLINE% {:.1}  UNEXPL~% {:.1}  irqs/s {:.0}",
        a.top,
        a.on_cpu,
        a.true_,
        a.stolen,
        a.hardirq,
        a.sysvec,
        a.softirq_stolen,
        a.net_rx_stolen,
        a.inline,
        a.unexplained,
        a.interrupts_per_s
    );
    let _ = writeln!(
        s,
        "nettop  CPU{VICTIM_CPU}: /proc/stat soft {:.1} %, unexplained irq {:.1} %",
        a.cpu_soft, a.cpu_unexplained_irq
    );
    let _ = writeln!(
        s,
        "explained  STOLEN/loss {}   (STOLEN+UNEXPL~)/loss {}",
        frac(a.stolen),
        frac(a.stolen + a.unexplained)
    );
    let _ = writeln!(s, "regime  {}", o.regime);
    let _ = writeln!(s, "health  {}", o.health);
    s
}

fn preconditions() -> Result<(), String> {
    if !common::is_root() {
        return Err("needs root (network namespaces, BPF)".into());
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus <= VICTIM_CPU {
        return Err(format!("needs CPU {VICTIM_CPU}; only {cpus} CPU(s) usable"));
    }
    for prog in ["ip", "iperf3", "taskset"] {
        if !common::netns::have_program(prog) {
            return Err(format!(
                "'{prog}' is not installed (apt-get install iproute2 iperf3 util-linux)"
            ));
        }
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err("kernel has no BTF (/sys/kernel/btf/vmlinux missing)".into());
    }
    Ok(())
}

#[test]
fn nettop_sees_stolen_time() {
    if let Err(reason) = preconditions() {
        common::skip(TEST, &reason);
        return;
    }
    let mut pair = match NetnsPair::create("acc") {
        Ok(p) => p,
        Err(e) => {
            common::skip(TEST, &format!("cannot create network namespaces: {e}"));
            return;
        }
    };
    let mut outcomes = Vec::new();
    for (label, mask) in [("steered: RPS on", "2"), ("control: RPS off", "0")] {
        match run_scenario(&mut pair, label, mask) {
            Ok(o) => {
                common::report(&describe(&o));
                outcomes.push(o);
            }
            Err(Fail::Cannot(reason)) => {
                drop(pair);
                common::skip(TEST, &reason);
                return;
            }
            Err(Fail::Broken(e)) => panic!("{label}: {e}"),
        }
    }
    drop(pair);

    let steered = &outcomes[0];
    let control = &outcomes[1];
    let a = &steered.avg;
    let ctx = format!(
        "\n{}\n{}\n(oracle loss under RPS: {:.1} %; if it is small, the load did not reach CPU {VICTIM_CPU})",
        describe(steered),
        describe(control),
        steered.loss_pct()
    );
    assert!(a.top >= 80.0, "victim's top-style % {:.1} < 80{ctx}", a.top);
    assert!(
        a.stolen >= 15.0,
        "victim's stolen % {:.1} < 15{ctx}",
        a.stolen
    );
    assert!(
        a.top - a.true_ >= a.stolen - 2.0,
        "TRUE% ({:.1}) is not below TOP% ({:.1}) by the stolen amount ({:.1}){ctx}",
        a.true_,
        a.top,
        a.stolen
    );
    // nettop must not invent time: what it calls stolen cannot exceed what
    // the victim really lost (the rate oracle also counts cache damage, so
    // it is the upper side; 10 points of slack for noise).
    assert!(
        a.stolen <= steered.loss_pct() + 10.0,
        "nettop claims {:.1} % stolen but the victim lost only {:.1} %{ctx}",
        a.stolen,
        steered.loss_pct()
    );
    assert!(
        control.avg.stolen < 2.0,
        "with RPS off the victim's stolen % is {:.1}, expected < 2{ctx}",
        control.avg.stolen
    );
}

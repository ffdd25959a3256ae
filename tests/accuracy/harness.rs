//! How the oracle runs things, apart from what it concludes: the victim
//! process and its reports, nettop itself (to completion, within a time
//! limit, telling "this machine cannot" from "nettop is broken"), its
//! calibration and frames, and the host's preconditions. The bounds, the
//! scenarios and their statistics are in `main.rs`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nettop::model::frame::Frame;
use nettop::sample::calibration::Calibration;

use crate::common::{self, victim::Bucket};
use crate::{FRAMES, VICTIM_CPU, VICTIM_ENV};

/// Kills and reaps a child when dropped, so no victim or nettop outlives
/// a failing test.
pub struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Victim {
    child: Reaped,
    buckets: Arc<Mutex<Vec<Bucket>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Victim {
    /// `extra`: more victim options, e.g. the pure-IPI sender's.
    pub fn start(cpu: usize, extra: &str) -> Result<Victim, String> {
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
                format!("cpu={cpu},max_ms=60000,bucket_ms=100,nice=20{extra}"),
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

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    pub fn stop(mut self) -> Vec<Bucket> {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        std::mem::take(&mut *self.buckets.lock().expect("bucket lock"))
    }
}

pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

pub enum Fail {
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

/// Runs nettop with `args` (and the oracle's private calibration cache) to
/// completion; returns its stdout. Exit 2 naming BPF/BTF/capabilities means
/// this machine cannot run BPF.
pub fn run_nettop(
    args: &[String],
    cache: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<String, Fail> {
    let out = tempfile::NamedTempFile::new().map_err(|e| format!("tempfile: {e}"))?;
    let err = tempfile::NamedTempFile::new().map_err(|e| format!("tempfile: {e}"))?;
    let stdout = out.reopen().map_err(|e| format!("tempfile: {e}"))?;
    let stderr = err.reopen().map_err(|e| format!("tempfile: {e}"))?;
    let exe = env!("CARGO_BIN_EXE_nettop");
    let mut child = Reaped(
        Command::new(exe)
            .args(args)
            .env("NETTOP_CACHE_DIR", cache)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {exe}: {e}"))?,
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                return Err(Fail::Broken(format!(
                    "nettop {} did not finish within {} s",
                    args.join(" "),
                    timeout.as_secs()
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
    Ok(text)
}

/// `nettop --calibrate` into the suite's private cache, before any load.
/// nettop refuses CPUs where a busy pinned thread runs: if another test
/// (another worktree's oracle, say) holds them, wait for it, up to a minute.
pub fn calibrate(cache: &Path) -> Result<Calibration, Fail> {
    let args = ["--calibrate".to_string(), "--json".into()];
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        match run_nettop(&args, cache, &[], Duration::from_secs(30)) {
            Err(Fail::Broken(e))
                if e.contains("busy pinned thread") && Instant::now() < deadline =>
            {
                common::report(&format!("calibration waits: {e}\n"));
                sleep(Duration::from_secs(5));
            }
            r => break r?,
        }
    };
    let c: Calibration = serde_json::from_str(text.trim()).map_err(|e| {
        format!("nettop --calibrate --json is not a calibration ({e}): {text:.300}")
    })?;
    common::report(&format!(
        "calibration  CPU {} (IPIs from {}): ipi hidden {:.0} ns ±{:.0} (traced {:.0}, {} samples); \
         timer {:?} hidden {:.0} ns ±{:.0} ({} samples); tlb {:?} hidden {:.0} ns ±{:.0} (traced {:.0}, \
         {} samples); resched {:?} hidden {:.0} ns ±{:.0} ({} samples); softirq {:?} +{:.0} ns ±{:.0}; \
         marginal {:.2}; {:.0} ms CPU; {}{}\n",
        c.cpu,
        c.sender_cpu,
        c.ipi.hidden_ns,
        c.ipi.spread_ns,
        c.ipi.traced_ns,
        c.ipi.samples,
        c.timer.basis,
        c.timer.hidden_ns,
        c.timer.spread_ns,
        c.timer.samples,
        c.tlb.basis,
        c.tlb.hidden_ns,
        c.tlb.spread_ns,
        c.tlb.traced_ns,
        c.tlb.samples,
        c.resched.basis,
        c.resched.hidden_ns,
        c.resched.spread_ns,
        c.resched.samples,
        c.softirq.basis,
        c.softirq.hidden_ns,
        c.softirq.spread_ns,
        c.marginal_ratio,
        c.cost_cpu_ms,
        c.origin,
        c.states
            .iter()
            .map(|s| format!(
                "; other state: ipi hidden {:.0} ns (traced {:.0}), tlb {:?} hidden {:.0} ns (traced {:.0})",
                s.ipi.hidden_ns, s.ipi.traced_ns, s.tlb.basis, s.tlb.hidden_ns, s.tlb.traced_ns
            ))
            .collect::<String>()
    ));
    for n in &c.notes {
        common::report(&format!("calibration  note: {n}\n"));
    }
    Ok(c)
}

/// Runs nettop for `FRAMES` frames on `pid` and returns its frames.
pub fn frames_of(pid: u32, cache: &Path, env: &[(&str, &str)]) -> Result<Vec<Frame>, Fail> {
    // -H: the victim's spinning thread is judged on its own row.
    let args = [
        "-b".to_string(),
        "--json".into(),
        "-H".into(),
        "-p".into(),
        pid.to_string(),
        "-d".into(),
        "1".into(),
        "-n".into(),
        FRAMES.to_string(),
    ];
    let text = run_nettop(&args, cache, env, Duration::from_secs(FRAMES as u64 + 30))?;
    let mut frames = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "nettop --json line {} is not JSON ({e}): {line:.200}",
                i + 1
            )
        })?;
        for field in ["stolen_pct", "hidden_pct", "true_pct"] {
            let ok = |x: &serde_json::Value| x[field].as_f64().is_some_and(|x| x.is_finite());
            let tasks_ok = v["threads"].as_array().is_some_and(|a| a.iter().all(ok));
            let cpus_ok = v["cpus"]
                .as_array()
                .is_some_and(|a| a.iter().filter(|c| c["online"] == true).all(ok));
            if !(tasks_ok && cpus_ok) {
                return Err(Fail::Broken(format!(
                    "nettop --json line {}: task or CPU rows lack a finite `{field}`",
                    i + 1
                )));
            }
        }
        let f: Frame = serde_json::from_value(v).map_err(|e| {
            format!(
                "nettop --json line {} is not a Frame ({e}): {line:.200}",
                i + 1
            )
        })?;
        frames.push(f);
    }
    if frames.len() != FRAMES as usize {
        return Err(Fail::Broken(format!(
            "nettop -n {FRAMES} printed {} JSON frames",
            frames.len()
        )));
    }
    Ok(frames)
}

pub fn preconditions(needs_iperf: bool) -> Result<(), String> {
    if !common::is_root() {
        return Err("needs root (network namespaces, BPF)".into());
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus <= VICTIM_CPU {
        return Err(format!("needs CPU {VICTIM_CPU}; only {cpus} CPU(s) usable"));
    }
    let progs: &[&str] = if needs_iperf {
        &["ip", "iperf3", "taskset"]
    } else {
        &[]
    };
    for prog in progs {
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

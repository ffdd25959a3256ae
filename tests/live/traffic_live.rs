//! Live, with real BPF and real traffic between network namespaces: who
//! robs whom.
//!
//! - Two receivers, each in a pod-like cgroup of its own, take one UDP
//!   flow each from one source, at rates 1:3, interleaved. RPS steers the
//!   receive work onto CPU 1, where a busy victim is pinned. nettop must
//!   put at least 90 % of the NET_RX time stolen from the victim on the
//!   two receivers, split in the ratio of their packets within 10 %; each
//!   receiver's RX bytes within 2 % of what it counted itself, and the
//!   source's TX bytes within 2 % of what it sent. The parts of NET_RX
//!   add up (conservation) in every busy frame, and the cgroup pairs name
//!   the receivers' groups.
//! - A flow to a socket nobody reads (it fills, then the kernel drops) and
//!   a flow the receiving namespace forwards: the `unread`, `dropped` and
//!   `forwarded` buckets take them, and conservation still holds.
//!
//! Needs root, `ip`, `taskset`, 2 CPUs, a cgroup2 mount and BPF; skips
//! loudly otherwise and fails under NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::cgroups::{Groups, cgroup2_mount};
use common::netns::{ADDR_RX, ADDR_TX, NetnsPair};
use common::udp::{Count, spawn};
use serde_json::Value;

const TEST: &str = "traffic_live";
const VICTIM_CPU: usize = 1;
/// The two flows, datagrams per second: clearly different, 1:3.
const RATE_A: u32 = 2_500;
const RATE_B: u32 = 7_500;
/// How long the source sends, and nettop's frames around it.
const SEND_SECS: u32 = 6;
const FRAMES: u32 = 10;

/// nettop at the priority of the load it watches (see cgroup_live).
fn nettop(frames: u32, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("nice");
    c.args(["-n", "-20", env!("CARGO_BIN_EXE_nettop")])
        .envs(env.iter().copied())
        .args([
            "-b",
            "--json",
            "--traffic",
            "-d",
            "1",
            "-n",
            &frames.to_string(),
        ])
        .env("NETTOP_CACHE_DIR", common::cache_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Kills a child when the test ends, however it ends.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nettop running, its frames arriving on a channel as they are printed.
struct Watch {
    child: Kill,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    fn start(frames: u32, env: &[(&str, &str)]) -> Watch {
        let mut child = nettop(frames, env).spawn().expect("nettop");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Watch {
            child: Kill(child),
            lines,
        }
    }

    /// The first frame: from here on nettop's samples bracket whatever
    /// starts now.
    fn first(&self) -> Value {
        let l = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("nettop printed no frame in 60 s"));
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:.300}"))
    }

    /// Every frame after the first, once nettop is done.
    fn rest(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(60)) {
            out.push(
                serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:.300}")),
            );
        }
        let status = self.child.0.wait().expect("nettop");
        assert!(status.success(), "nettop -b --json: {status}");
        out
    }
}

fn busy_on(cpu: usize) -> Kill {
    Kill(
        Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset"),
    )
}

fn process(f: &Value, pid: u32) -> Option<&Value> {
    f["processes"].as_array()?.iter().find(|p| p["pid"] == pid)
}

/// Σ over frames of a process's figure × the interval: a rate back into
/// an amount (percent of a CPU into CPU-seconds × 100).
fn total(frames: &[Value], pid: u32, get: impl Fn(&Value) -> Option<f64>) -> f64 {
    frames
        .iter()
        .filter_map(|f| Some(get(process(f, pid)?)? * f["interval_s"].as_f64()?))
        .sum()
}

/// Σ over frames of the pair victim ← beneficiary, % of a CPU × seconds.
fn pair_total(frames: &[Value], victim: u32, beneficiary: u32) -> f64 {
    frames
        .iter()
        .filter_map(|f| {
            let p = f["traffic"]["robbed"]
                .as_array()?
                .iter()
                .find(|p| p["victim_pid"] == victim && p["beneficiary_pid"] == beneficiary)?;
            Some(p["pct"].as_f64()? * f["interval_s"].as_f64()?)
        })
        .sum()
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    want > 0.0 && (got / want - 1.0).abs() <= tol
}

/// Every frame with real NET_RX work adds up: CAUSED of every task plus
/// the buckets that reached no reader is the NET_RX time, within 5 %.
fn assert_conserved(frames: &[Value]) -> usize {
    let mut checked = 0;
    for f in frames {
        let c = &f["traffic"]["conservation"];
        if c["net_rx_pct"].as_f64().unwrap_or(0.0) < 1.0 {
            continue;
        }
        let r = c["ratio"].as_f64().unwrap_or(0.0);
        assert!(
            (0.95..=1.05).contains(&r),
            "frame {}: CAUSED + buckets is {:.1} % of NET_RX: {c}",
            f["seq"],
            r * 100.0
        );
        checked += 1;
    }
    checked
}

fn bucket_units(frames: &[Value], name: &str) -> f64 {
    frames
        .iter()
        .filter_map(|f| {
            let b = f["traffic"]["buckets"]
                .as_array()?
                .iter()
                .find(|b| b["name"] == name)?;
            Some(b["units_per_s"].as_f64()? * f["interval_s"].as_f64()?)
        })
        .sum()
}

case!(
    receive_work_is_billed_to_the_receivers_whose_packets_it_was,
    [Need::Bpf, Need::Tool("ip", "-V"), Need::Cpus(2)]
);
fn receive_work_is_billed_to_the_receivers_whose_packets_it_was() {
    let Some(mount) = cgroup2_mount() else {
        return common::skip(TEST, "no cgroup2 hierarchy mounted");
    };
    let pair = NetnsPair::create("rb").expect("netns pair");
    pair.set_rps(&format!("{:x}", 1u32 << VICTIM_CPU))
        .expect("rps");
    let mut groups = Groups::new(&mount);
    let (cg_a, cg_b) = (groups.create("rxa").unwrap(), groups.create("rxb").unwrap());
    // The receivers outlive nettop's last sample, so their rows are there
    // in every frame.
    let life = SEND_SECS + FRAMES + 6;
    let sink_a = spawn(
        &format!("sink 5301 {life}"),
        &pair.ns_rx,
        0,
        Some(&groups.dir(&cg_a)),
    );
    let sink_b = spawn(
        &format!("sink 5302 {life}"),
        &pair.ns_rx,
        0,
        Some(&groups.dir(&cg_b)),
    );
    let (pid_a, pid_b) = (sink_a.id(), sink_b.id());
    let victim = busy_on(VICTIM_CPU);
    let victim_pid = victim.0.id();
    std::thread::sleep(Duration::from_millis(500));

    let watch = Watch::start(FRAMES, &[]);
    watch.first();
    let source = spawn(
        &format!("source {SEND_SECS} {ADDR_RX}:5301:{RATE_A},{ADDR_RX}:5302:{RATE_B}"),
        &pair.ns_tx,
        0,
        None,
    );
    let source_pid = source.id();
    let sent = common::udp::counts(source, Duration::from_secs(60), "source");
    let frames = watch.rest();
    let got_a = common::udp::counts(sink_a, Duration::from_secs(60), "sink a");
    let got_b = common::udp::counts(sink_b, Duration::from_secs(60), "sink b");
    drop(victim);
    let (a, b) = (got_a[0], got_b[0]);

    let stolen = total(&frames, victim_pid, |p| p["softirq_stolen_pct"][3].as_f64());
    let (to_a, to_b) = (
        pair_total(&frames, victim_pid, pid_a),
        pair_total(&frames, victim_pid, pid_b),
    );
    let share = (to_a + to_b) / stolen;
    let (ratio_time, ratio_pkts) = (to_b / to_a, b.datagrams as f64 / a.datagrams as f64);
    let rx = |pid| total(&frames, pid, |p| p["traffic"]["rx_bytes_per_s"].as_f64());
    let tx = total(&frames, source_pid, |p| {
        p["traffic"]["tx_bytes_per_s"].as_f64()
    });
    let sent_bytes: u64 = sent.iter().map(|c: &Count| c.bytes).sum();
    // The RPS IPIs that brought the packets to the victim's CPU are
    // receive work too: in the receivers' CAUSED, checked by conservation.
    let ipis: f64 = frames
        .iter()
        .filter_map(|f| {
            Some(f["traffic"]["conservation"]["rps_ipi_pct"].as_f64()? * f["interval_s"].as_f64()?)
        })
        .sum();
    let ipi_hidden = |pid| {
        total(&frames, pid, |p| {
            p["traffic"]["caused_ipi_hidden_pct"].as_f64()
        })
    };
    common::report(&format!(
        "{TEST}: victim's stolen NET_RX {:.3} CPU-s, {:.1} % of it on the receivers \
         ({:.3} + {:.3}); time B:A {ratio_time:.2} vs packets {ratio_pkts:.2}; RX A {:.0}/{} B {:.0}/{} \
         bytes; TX {tx:.0}/{sent_bytes} bytes; RPS IPIs {:.3} CPU-s traced, {:.3} untraced in CAUSED",
        stolen / 100.0,
        share * 100.0,
        to_a / 100.0,
        to_b / 100.0,
        rx(pid_a),
        a.bytes,
        rx(pid_b),
        b.bytes,
        ipis / 100.0,
        (ipi_hidden(pid_a) + ipi_hidden(pid_b)) / 100.0
    ));
    assert!(ipis > 0.0, "no RPS IPI raised NET_RX on the victim's CPU");
    assert!(
        stolen > 1.0,
        "the victim lost almost no NET_RX time: {stolen:.2} %·s"
    );
    assert!(
        share >= 0.90,
        "only {:.1} % of the victim's stolen NET_RX went to the receivers",
        share * 100.0
    );
    assert!(
        within(ratio_time, ratio_pkts, 0.10),
        "receive time B:A {ratio_time:.2}, packets {ratio_pkts:.2}"
    );
    assert!(
        within(rx(pid_a), a.bytes as f64, 0.02),
        "RX A {} vs {}",
        rx(pid_a),
        a.bytes
    );
    assert!(
        within(rx(pid_b), b.bytes as f64, 0.02),
        "RX B {} vs {}",
        rx(pid_b),
        b.bytes
    );
    assert!(
        within(tx, sent_bytes as f64, 0.02),
        "TX {tx} vs {sent_bytes}"
    );
    assert!(assert_conserved(&frames) >= 3, "fewer than 3 busy frames");
    // The pod x pod table names the receivers' groups.
    let named = |cg: &str| {
        frames.iter().any(|f| {
            f["traffic"]["cgroup_pairs"].as_array().is_some_and(|v| {
                v.iter().any(|p| {
                    p["beneficiary_name"]
                        .as_str()
                        .is_some_and(|n| n.contains(cg.trim_start_matches('/')))
                })
            })
        })
    };
    assert!(
        named(&cg_a) && named(&cg_b),
        "cgroup pairs do not name {cg_a} and {cg_b}"
    );
    drop(groups);
    drop(pair);
}

case!(
    undelivered_receive_work_goes_to_named_buckets,
    [Need::Bpf, Need::Tool("ip", "-V"), Need::Cpus(2)]
);
fn undelivered_receive_work_goes_to_named_buckets() {
    let pair = NetnsPair::create("bk").expect("netns pair");
    // A third namespace behind the receiving one, which routes to it: what
    // the sender sends to 10.214.1.2 is forwarded there, then delivered.
    let far = Far::create(&pair);
    let st = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.ns_rx,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ])
        .status()
        .expect("sysctl");
    assert!(st.success(), "ip_forward in {}", pair.ns_rx);
    let life = SEND_SECS + FRAMES + 6;
    let far_sink = spawn(&format!("sink 5402 {life}"), &far.ns, 0, None);
    let life = SEND_SECS + FRAMES + 6;
    let deaf = Kill(spawn(&format!("deaf 5401 {life}"), &pair.ns_rx, 1, None));

    // Without the task sampler a send or receive adds to the task's record
    // itself (the other way to count): its bytes are checked here.
    let watch = Watch::start(FRAMES, &[("NETTOP_NO_TASK_SAMPLER", "1")]);
    watch.first();
    let source = spawn(
        &format!("source {SEND_SECS} {ADDR_RX}:5401:4000,{FAR_ADDR}:5402:3000"),
        &pair.ns_tx,
        0,
        None,
    );
    let (source_pid, far_pid) = (source.id(), far_sink.id());
    let sent = common::udp::counts(source, Duration::from_secs(60), "source");
    let frames = watch.rest();
    drop(deaf);
    let far_got = common::udp::counts(far_sink, Duration::from_secs(60), "far sink");
    let tx = total(&frames, source_pid, |p| {
        p["traffic"]["tx_bytes_per_s"].as_f64()
    });
    let far_rx = total(&frames, far_pid, |p| {
        p["traffic"]["rx_bytes_per_s"].as_f64()
    });
    let sent_bytes: u64 = sent.iter().map(|c: &Count| c.bytes).sum();

    let (unread, dropped, forwarded) = (
        bucket_units(&frames, "unread"),
        bucket_units(&frames, "dropped"),
        bucket_units(&frames, "forwarded"),
    );
    common::report(&format!(
        "{TEST}: sent {} to the deaf socket, {} to be forwarded; buckets: unread {unread:.0}, \
         dropped {dropped:.0}, forwarded {forwarded:.0} (source on {ADDR_TX}); without the task \
         sampler TX {tx:.0}/{sent_bytes}, far RX {far_rx:.0}/{} bytes",
        sent[0].datagrams, sent[1].datagrams, far_got[0].bytes
    ));
    assert!(
        within(tx, sent_bytes as f64, 0.02),
        "TX {tx} vs {sent_bytes}"
    );
    assert!(
        within(far_rx, far_got[0].bytes as f64, 0.02),
        "far RX {far_rx} vs {}",
        far_got[0].bytes
    );
    // The deaf socket's queue takes what fits, the rest is dropped: every
    // datagram is one or the other.
    assert!(
        unread > 0.0 && dropped > 0.0,
        "unread {unread}, dropped {dropped}"
    );
    assert!(
        within(unread + dropped, sent[0].datagrams as f64, 0.05),
        "unread + dropped {} vs sent {}",
        unread + dropped,
        sent[0].datagrams
    );
    assert!(
        within(forwarded, sent[1].datagrams as f64, 0.05),
        "forwarded {forwarded} vs sent {}",
        sent[1].datagrams
    );
    assert_eq!(
        far_got[0].datagrams, sent[1].datagrams,
        "forwarded, then delivered"
    );
    assert!(assert_conserved(&frames) >= 3, "fewer than 3 busy frames");
    drop(far);
    drop(pair);
}

/// The far end's address, behind the receiving namespace.
const FAR_ADDR: &str = "10.214.1.2";

/// A namespace behind `pair`'s receiving one (veth 10.214.1.1 ↔
/// [`FAR_ADDR`]), with the sender routing to it through the receiver.
/// Named under the pair's prefix, so a killed run's is removed with its
/// pair's; deleted on drop.
struct Far {
    ns: String,
}

impl Far {
    fn create(pair: &NetnsPair) -> Far {
        let ns = pair.ns_rx.replace("-rx", "-far");
        let far = Far { ns };
        let ip = |args: &[&str]| {
            let st = Command::new("ip").args(args).status().expect("ip");
            assert!(st.success(), "ip {args:?}");
        };
        ip(&["netns", "add", &far.ns]);
        let pid = std::process::id();
        let (near_dev, far_dev) = (format!("ntfn{pid}"), format!("ntff{pid}"));
        let (near_dev, far_dev): (String, String) = (
            near_dev.chars().take(15).collect(),
            far_dev.chars().take(15).collect(),
        );
        ip(&[
            "link",
            "add",
            &near_dev,
            "netns",
            &pair.ns_rx,
            "type",
            "veth",
            "peer",
            "name",
            &far_dev,
            "netns",
            &far.ns,
        ]);
        ip(&[
            "-n",
            &pair.ns_rx,
            "addr",
            "add",
            "10.214.1.1/24",
            "dev",
            &near_dev,
        ]);
        ip(&["-n", &pair.ns_rx, "link", "set", &near_dev, "up"]);
        ip(&[
            "-n",
            &far.ns,
            "addr",
            "add",
            &format!("{FAR_ADDR}/24"),
            "dev",
            &far_dev,
        ]);
        ip(&["-n", &far.ns, "link", "set", &far_dev, "up"]);
        ip(&["-n", &far.ns, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            &pair.ns_tx,
            "route",
            "add",
            "10.214.1.0/24",
            "via",
            ADDR_RX,
        ]);
        far
    }
}

impl Drop for Far {
    fn drop(&mut self) {
        common::netns::delete(&self.ns);
    }
}

case!(
    the_plan_steers_receive_work_to_its_receivers_and_measures_it,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2)
    ]
);
/// The victim spins on CPU 1, where RPS sends an iperf3 flow whose
/// receiver runs on CPU 0 (at 60 Mbit/s it is not busy, so CPU 0 is
/// not kept clear for it): `--plan --apply --traffic` steers the queue's
/// RPS to CPU 0, measures the victim before and after (it loses less),
/// and `--revert` restores the mask byte for byte.
fn the_plan_steers_receive_work_to_its_receivers_and_measures_it() {
    use common::plan_scene::{load_at, revert_restores, rps_bytes, rps_path, warm_calibration};
    warm_calibration();
    let mut pair = NetnsPair::create("ps").expect("netns pair");
    let victim = load_at(&mut pair, "2", "60M");
    let original = rps_bytes(&pair);
    let state = tempfile::tempdir().unwrap();
    let out = common::run::output_within(
        common::run::nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args(["--plan", "--apply", "--yes", "--traffic", "--measure", "4s"])
            .args(["--format", "json", "--nic", &pair.veth_rx, "--state-dir"])
            .arg(state.path()),
        Duration::from_secs(240),
        "nettop --plan --apply --traffic",
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\nstderr: {}",
            common::run::stdout(&out),
            common::run::stderr(&out)
        )
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "{r:#}\n{}",
        common::run::stderr(&out)
    );
    let change = r["plan"]["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["target"] == rps_path(&pair))
        .unwrap_or_else(|| panic!("no RPS change: {r:#}"));
    assert!(
        change["why"]
            .as_str()
            .unwrap_or("")
            .contains("steered to CPU 0")
            && change["why"].as_str().unwrap_or("").contains("iperf3"),
        "{change:#}"
    );
    assert_eq!(
        String::from_utf8_lossy(&rps_bytes(&pair)).trim(),
        "1",
        "{r:#}"
    );
    let stolen = |m: &Value| {
        m["victims"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["tid"] == victim)
            .and_then(|v| v["stolen_pct"].as_f64())
            .unwrap_or_else(|| panic!("victim {victim} not measured: {m:#}"))
    };
    let (before, after) = (stolen(&r["before"]), stolen(&r["after"]));
    common::report(&format!(
        "{TEST}: plan steered RPS to CPU 0; the victim's STOLEN {before:.1} -> {after:.1} %"
    ));
    assert!(
        before > after + 1.0,
        "STOLEN {before:.1} -> {after:.1}: {r:#}"
    );
    let file = std::path::PathBuf::from(r["revert_file"].as_str().unwrap());
    revert_restores(state.path(), &file, &pair, &original);
}

//! `--record DIR --serve ADDR` as a service runs it (issue 13): one process,
//! one set of BPF programs, scrapes answered while recording, retention,
//! SIGHUP reopening the output, sd_notify readiness, journald log lines,
//! and a SIGTERM that leaves every part replayable.

use crate::common;
use crate::common::tier::Need;

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::run::{Guard, nettop, signal};
use nettop::record::Recording;

const T: &str = "record_and_serve_share_one_collector";

/// Distinct BPF program ids among the descriptors `pid` holds (programs
/// and the links that attach them both name their program).
fn prog_ids(pid: i32) -> BTreeSet<u32> {
    let mut ids = BTreeSet::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return ids;
    };
    for e in dir.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines() {
            if let Some(v) = l.strip_prefix("prog_id:") {
                ids.extend(v.trim().parse::<u32>().ok());
            }
        }
    }
    ids
}

fn http_get(addr: &str) -> Option<(u16, String)> {
    common::prom::get(addr, "/metrics")
}

use common::prom::free_addr;

/// Waits until the program-id set of `pid` is non-empty and stable.
fn settled_prog_ids(pid: i32) -> BTreeSet<u32> {
    let t0 = Instant::now();
    let mut last = BTreeSet::new();
    while t0.elapsed() < Duration::from_secs(60) {
        let now = prog_ids(pid);
        if !now.is_empty() && now == last {
            return now;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("pid {pid} never held a stable set of BPF programs: {last:?}");
}

fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".rec.zst"))
        .collect();
    v.sort();
    v
}

case!(record_and_serve_share_one_collector, [Need::Bpf]);
fn record_and_serve_share_one_collector() {
    if !common::is_root() {
        common::skip(T, "needs root for BPF");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    let log = tmp.path().join("stderr.log");
    let sock_path = tmp.path().join("notify.sock");
    let notify = UnixDatagram::bind(&sock_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let addr = free_addr();
    // stderr is a file whose device:inode we tell nettop is the journal.
    let err_file = std::fs::File::create(&log).unwrap();
    let m = err_file.metadata().unwrap();
    let mut svc = Guard(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .env("NOTIFY_SOCKET", &sock_path)
            .env("JOURNAL_STREAM", format!("{}:{}", m.dev(), m.ino()))
            .arg("--record")
            .arg(format!("{}/", dir.display()))
            .args(["--serve", &addr, "-d", "0.25"])
            .args(["--max-size", "40K", "--keep", "2"])
            .stdout(Stdio::null())
            .stderr(err_file)
            .spawn()
            .unwrap(),
    );
    let pid = svc.pid();

    // Readiness comes once the first snapshot is recorded and served.
    let mut buf = [0u8; 512];
    let n = notify.recv(&mut buf).expect("no sd_notify message");
    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(msg.contains("READY=1"), "{msg}");
    let (code, body) = http_get(&addr).expect("no answer after READY=1");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("nettop_cpu_seconds_total"), "{body}");

    // One set of programs: as many as one collector loads (measured on the
    // batch front end, which has its own loop), not one per sink.
    let both = settled_prog_ids(pid);
    {
        let plain = Guard(
            nettop()
                .env("NETTOP_CACHE_DIR", common::cache_dir())
                .args(["-b", "-d", "1", "-n", "30", "--rows", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let alone = settled_prog_ids(plain.pid());
        assert_eq!(
            both.len(),
            alone.len(),
            "record+serve holds {both:?}, one collector (nettop -b) {alone:?}"
        );
        assert!(both.is_disjoint(&alone), "two processes, two loads");
    }

    // Scrapes keep being answered while parts rotate.
    let t0 = Instant::now();
    let mut scrapes = 0;
    while t0.elapsed() < Duration::from_secs(60) && parts(&dir).len() < 3 {
        let (code, body) = http_get(&addr).expect("scrape failed while recording");
        assert_eq!(code, 200, "{body}");
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    // Retention: keep 2 finished parts besides the live one, so after
    // enough rotations the oldest are gone.
    let text = || std::fs::read_to_string(&log).unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) && !text().contains("retention: deleted") {
        std::thread::sleep(Duration::from_millis(200));
    }
    let now = parts(&dir);
    assert!(
        text().contains("retention: deleted"),
        "nothing deleted; parts {now:?}; log:\n{}",
        text()
    );
    assert!(now.len() <= 3, "more than 2 + live parts: {now:?}");
    assert_eq!(prog_ids(pid), both, "programs reloaded while recording");

    // SIGHUP reopens: a new part, the process keeps running.
    let before: BTreeSet<PathBuf> = parts(&dir).into_iter().collect();
    signal(pid, libc::SIGHUP);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) && !text().contains("SIGHUP: now") {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text().contains("SIGHUP: now recording to"), "{}", text());
    let after: BTreeSet<PathBuf> = parts(&dir).into_iter().collect();
    assert!(!after.is_subset(&before), "no new part after SIGHUP");
    assert!(svc.0.try_wait().unwrap().is_none(), "SIGHUP stopped nettop");
    std::thread::sleep(Duration::from_millis(800));

    // SIGTERM: a clean end, every part replays fully.
    signal(pid, libc::SIGTERM);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = svc.0.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "SIGTERM ignored");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "{}", text());
    let log_text = text();
    for l in log_text.lines() {
        assert!(
            l.starts_with("<6>") || l.starts_with("<5>") || l.starts_with("<4>"),
            "not a journald line: {l:?}"
        );
        assert!(!l.contains('\x1b'), "escape in {l:?}");
    }
    let last = parts(&dir);
    assert!(!last.is_empty());
    for p in &last {
        let rec = Recording::open(p).unwrap();
        assert!(
            rec.closed_cleanly(),
            "{}: {:?}",
            p.display(),
            rec.warnings()
        );
        let frames = common::run::replay_frames(p);
        assert_eq!(frames, rec.len() - 1, "{}: frames", p.display());
    }
    common::report(&format!(
        "{T}: {} BPF programs in one process, {scrapes} scrapes while rotating, \
         parts left {:?}\n",
        both.len(),
        last.iter()
            .map(|p| p.file_name().unwrap())
            .collect::<Vec<_>>()
    ));
}

case!(
    record_and_serve_without_bpf_in_a_fixture_sysroot,
    [Need::Bpf]
);
/// Without root the same flags still share one loop (no BPF): the
/// recording and the endpoint see the same snapshots.
fn record_and_serve_without_bpf_in_a_fixture_sysroot() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("r.rec");
    let addr = free_addr();
    let mut svc = Guard(
        nettop()
            .args(["--record", f.to_str().unwrap(), "--serve", &addr])
            .args(["--no-bpf", "-d", "0.1", "-n", "30"])
            .args(["--sysroot", "tests/fixtures/proc/modern"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    let mut answered = false;
    while t0.elapsed() < Duration::from_secs(20) {
        if let Some((200, body)) = http_get(&addr) {
            answered = body.contains("nettop_host_info");
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(answered, "no scrape while recording");
    let status = svc.0.wait().unwrap();
    let mut err = String::new();
    svc.0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("wrote 30 snapshots"), "{err}");
    let rec = Recording::open(&f).unwrap();
    assert_eq!(rec.len(), 30);
    assert!(rec.closed_cleanly());
}

case!(
    two_capabilities_are_enough_for_record_and_serve,
    [Need::Bpf, Need::Tool("setpriv", "--version")]
);
/// What the systemd units grant is enough: as an unprivileged user with
/// only CAP_BPF and CAP_PERFMON (ambient, as `AmbientCapabilities=` sets
/// them), record+serve loads BPF, records and serves; with only one of
/// the two it is refused.
fn two_capabilities_are_enough_for_record_and_serve() {
    const T: &str = "two_capabilities_are_enough_for_record_and_serve";
    if !common::is_root() {
        common::skip(T, "needs root to drop to a user with chosen capabilities");
        return;
    }
    if !common::netns::have_program("setpriv") {
        common::skip(T, "setpriv (util-linux) not installed");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    const NOBODY: u32 = 65534;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (rec, cache) = (tmp.path().join("rec"), tmp.path().join("cache"));
    for d in [&rec, &cache] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let run_as = |caps: &str, addr: &str| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(format!("--inh-caps=-all,{caps}"))
            .arg(format!("--ambient-caps=-all,{caps}"))
            .arg(format!("--bounding-set=-all,{caps}"))
            .arg(env!("CARGO_BIN_EXE_nettop"))
            .env("NETTOP_CACHE_DIR", &cache)
            .arg("--record")
            .arg(format!("{}/", rec.display()))
            .args(["--serve", addr, "-d", "0.25", "-n", "12"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    };
    let addr = free_addr();
    let child = run_as("+bpf,+perfmon", &addr).spawn().unwrap();
    let t0 = Instant::now();
    let mut scraped = None;
    while t0.elapsed() < Duration::from_secs(60) && scraped.is_none() {
        scraped = http_get(&addr).filter(|(c, _)| *c == 200).map(|(_, b)| b);
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = common::run::wait_output(child, Duration::from_secs(60), "nettop as nobody");
    let err = common::run::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let body = scraped.unwrap_or_else(|| panic!("no scrape as nobody: {err}"));
    assert!(body.contains("source=\"bpf\""), "not the BPF collector");
    assert!(body.contains("nettop_cpu_traced_hardirq_seconds_total"));
    let files = parts(&rec);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::metadata(&files[0]).unwrap().uid(), NOBODY);
    assert_eq!(Recording::open(&files[0]).unwrap().len(), 12);
    for one in ["+bpf", "+perfmon"] {
        let out = common::run::output_within(
            &mut run_as(one, &free_addr()),
            Duration::from_secs(60),
            "nettop with one capability",
        );
        let err = common::run::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{one}: {err}");
        assert!(err.contains("CAP_BPF and CAP_PERFMON"), "{one}: {err}");
    }
}

//! `--record DIR/ --serve ADDR` on a disk that fails under it: full
//! (tmpfs), turned read-only by the kernel (ext4 `errors=remount-ro`), and
//! returning I/O errors (an ext4 whose loop device shrinks under it). The
//! service keeps answering scrapes and shows the pause in
//! `nettop_recording_*`, logs it once, deletes its oldest parts when space
//! is what is missing, and resumes in a new, readable part when the disk
//! can take writes again. A one-shot recording still fails, naming the
//! file.
//!
//! `mount -o remount,ro` itself is refused (EBUSY) while nettop holds its
//! part open for writing, as it always does: what turns a disk read-only
//! under a running recorder is the kernel's own remount after an error,
//! which ext4's `trigger_fs_error` raises here for real.

use crate::common;
use crate::common::tier::Need;

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mount::{self, Mount};
use common::prom::{free_addr, get};
use common::run::{Guard, nettop, signal};
use nettop::record::{Recording, WarningKind};

/// Skips (loudly, or fails under `NETTOP_REQUIRE_BPF=1`) without root or
/// the tools; returns whether the test can run.
fn can_run(test: &str, tools: &[&str]) -> bool {
    if !common::is_root() {
        common::skip(test, "mounting file systems needs root");
        return false;
    }
    for t in tools {
        let arg = if t.starts_with("mkfs") {
            "-V"
        } else {
            "--version"
        };
        if !common::tool_runs(t, arg) {
            common::skip(test, &format!("{t} is not installed"));
            return false;
        }
    }
    true
}

/// A running `nettop --record DIR/ --serve`: its guard, address and log.
struct Service {
    g: Guard,
    addr: String,
    log: PathBuf,
}

impl Service {
    /// Starts on the fixture sysroot without BPF (snapshots of about
    /// 1 KiB compressed, ten a second); stderr to `log`.
    fn start(dir: &Path, log: &Path, extra: &[&str]) -> Service {
        let addr = free_addr();
        let err = std::fs::File::create(log).unwrap();
        let g = Guard(
            nettop()
                .arg("--record")
                .arg(format!("{}/", dir.display()))
                .args(["--serve", &addr, "--no-bpf", "-d", "0.1"])
                .args(["--sysroot", "tests/fixtures/proc/modern"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
                .unwrap(),
        );
        let s = Service {
            g,
            addr,
            log: log.to_path_buf(),
        };
        s.wait("the first scrape", 30, || s.scrape().is_some());
        s
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Log lines containing `needle`.
    fn logged(&self, needle: &str) -> usize {
        self.text().lines().filter(|l| l.contains(needle)).count()
    }

    /// The body of a 200 answer to /metrics.
    fn scrape(&self) -> Option<String> {
        match get(&self.addr, "/metrics") {
            Some((200, body)) => Some(body),
            _ => None,
        }
    }

    /// The value of the sample line `series` (name with its labels).
    fn metric(&self, series: &str) -> f64 {
        let body = self
            .scrape()
            .unwrap_or_else(|| panic!("/metrics did not answer; log:\n{}", self.text()));
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in the scrape:\n{body}"))
    }

    fn paused(&self) -> f64 {
        self.metric("nettop_recording_paused")
    }

    fn dropped(&self) -> f64 {
        self.metric("nettop_recording_dropped_samples_total")
    }

    fn errors(&self, reason: &str) -> f64 {
        self.metric(&format!(
            "nettop_recording_write_errors_total{{reason=\"{reason}\"}}"
        ))
    }

    fn alive(&mut self, what: &str) {
        assert!(
            self.g.0.try_wait().unwrap().is_none(),
            "{what}: nettop exited; log:\n{}",
            self.text()
        );
    }

    /// Polls `ok` for up to `secs` seconds; panics naming `what`.
    fn wait(&self, what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !ok() {
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "{what}: not within {secs} s; log:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM: a clean exit 0.
    fn stop(mut self) -> String {
        signal(self.g.pid(), libc::SIGTERM);
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.g.0.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "SIGTERM ignored");
            std::thread::sleep(Duration::from_millis(50));
        };
        let text = self.text();
        assert_eq!(status.code(), Some(0), "{text}");
        assert!(!text.contains("panicked"), "{text}");
        text
    }
}

/// A recording directory of nettop's own on the mount.
fn rec_dir(m: &Mount) -> PathBuf {
    let d = m.at.join("rec");
    std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
    d
}

/// Everything in `dir`, by name.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Every file in `dir` is a part that replays: no empty or headless
/// leftovers, each part holds at least one interval, and names sort in
/// the order the parts were begun (one run's parts). Returns the
/// snapshots in all.
fn replays(dir: &Path) -> usize {
    let mut total = 0;
    let mut last_part = None;
    let files = entries(dir);
    assert!(!files.is_empty(), "{}: no parts", dir.display());
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("nettop-") && name.ends_with(".rec.zst"),
            "a leftover that is no part: {}",
            p.display()
        );
        let rec = Recording::open(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
        assert!(rec.len() >= 2, "{}: {} snapshots", p.display(), rec.len());
        // Cut back to whole records: a part may lack its end record (a
        // disk that failed for good), never hold a torn or stray one.
        let damage: Vec<_> = rec
            .warnings()
            .iter()
            .filter(|w| w.kind != WarningKind::NotClosed)
            .collect();
        assert!(damage.is_empty(), "{}: {damage:?}", p.display());
        let part = rec.meta().part;
        assert!(
            last_part.is_none_or(|l| part > l),
            "{}: part {part} sorts after part {last_part:?}",
            p.display()
        );
        last_part = Some(part);
        let frames = common::run::replay_frames(&p);
        assert_eq!(frames, rec.len() - 1, "{}: frames", p.display());
        total += rec.len();
    }
    total
}

/// Waits for the paused state, checks what the scrape and the log show
/// of it, and that snapshots are dropped, not kept.
fn check_paused(s: &mut Service, reason: &str, errno: &str, dir: &Path) {
    s.wait("nettop_recording_paused 1", 60, || s.paused() == 1.0);
    assert!(s.errors(reason) >= 1.0, "no {reason} write error counted");
    let d0 = s.dropped();
    std::thread::sleep(Duration::from_millis(1500));
    s.alive("paused");
    assert_eq!(s.paused(), 1.0, "resumed on its own; log:\n{}", s.text());
    let d1 = s.dropped();
    assert!(d1 >= d0 + 5.0, "snapshots dropped {d0} → {d1} in 1.5 s");
    // Once, naming the directory and the errno.
    let lines: Vec<String> = s
        .text()
        .lines()
        .filter(|l| l.contains("recording paused"))
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("warning"), "{}", lines[0]);
    assert!(
        lines[0].contains(&dir.display().to_string()),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(errno), "{}", lines[0]);
}

/// Waits for the resumption and checks it records again.
fn check_resumed(s: &mut Service, dir: &Path) {
    s.wait("nettop_recording_paused 0", 30, || s.paused() == 0.0);
    assert_eq!(s.logged("recording resumed"), 1, "{}", s.text());
    let d0 = s.dropped();
    let newest = || entries(dir).pop().expect("a part after resuming");
    let part = newest();
    let n0 = Recording::open(&part).map_or(0, |r| r.len());
    std::thread::sleep(Duration::from_millis(1000));
    let n1 = Recording::open(&part).map_or(0, |r| r.len());
    assert!(n1 >= n0 + 5, "{}: {n0} → {n1} snapshots", part.display());
    assert_eq!(s.dropped(), d0, "still dropping after resuming");
    assert_eq!(s.logged("recording paused"), 1, "{}", s.text());
}

case!(a_full_disk_prunes_pauses_and_resumes, [Need::Root]);
/// The reported failure: on a full 8 MiB tmpfs the service exited with
/// "No space left on device", /metrics stopped answering, and retention
/// deleted nothing.
fn a_full_disk_prunes_pauses_and_resumes() {
    const T: &str = "a_full_disk_prunes_pauses_and_resumes";
    if !can_run(T, &["mount"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = Mount::tmpfs(&tmp.path().join("m"), "8m").unwrap();
    let dir = rec_dir(&m);
    let mut s = Service::start(
        &dir,
        &tmp.path().join("stderr.log"),
        &["--max-size", "24K", "--keep", "2"],
    );
    s.wait("three parts", 60, || entries(&dir).len() >= 3);
    assert_eq!(s.paused(), 0.0);

    // Full: the oldest parts go to make room, not the one being written.
    let live = entries(&dir).pop().unwrap();
    let filled = mount::fill(&m.at.join("filler"));
    s.wait("parts deleted to make room", 30, || {
        s.logged("to make room") > 0
    });
    assert!(
        live.exists(),
        "{} (being written) was deleted",
        live.display()
    );
    assert!(s.logged("retention: deleted") >= 1, "{}", s.text());
    // While it has old parts, each one it deletes buys a new part, and the
    // recording goes on (the newest data kept): deleting and writing at
    // once, it wins the freed room from any other writer. So the other
    // writer here takes its old parts too, in the same step as the room
    // (all but the newest, the live part or the one the fault hit): with
    // nothing of its own left to delete, it pauses.
    let mut refills = 0u64;
    s.wait("paused", 60, || {
        let parts = entries(&dir);
        for old in parts.iter().rev().skip(1) {
            let _ = std::fs::remove_file(old);
        }
        refills += mount::fill(&m.at.join("filler2"));
        s.paused() == 1.0
    });
    check_paused(&mut s, "no_space", "ENOSPC", &dir);
    let left = entries(&dir);
    assert!(
        left.len() <= 2,
        "only the part the fault hit may stay: {left:?}"
    );

    // Space again: it resumes by itself in a new part.
    std::fs::remove_file(m.at.join("filler")).unwrap();
    std::fs::remove_file(m.at.join("filler2")).unwrap();
    check_resumed(&mut s, &dir);
    let text = s.stop();
    let snapshots = replays(&dir);
    common::report(&format!(
        "{T}: filler {} KiB (+{} KiB refilled); parts left {:?}; {snapshots} snapshots replay; \
         log:\n{text}\n",
        filled >> 10,
        refills >> 10,
        entries(&dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect::<Vec<_>>()
    ));
}

case!(
    a_service_started_on_a_full_disk_serves_and_records_later,
    [Need::Root]
);
/// A service restarted while the disk is full serves at once, paused,
/// and records as soon as there is room: no restart loop, no metrics gap.
fn a_service_started_on_a_full_disk_serves_and_records_later() {
    const T: &str = "a_service_started_on_a_full_disk_serves_and_records_later";
    if !can_run(T, &["mount"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = Mount::tmpfs(&tmp.path().join("m"), "4m").unwrap();
    let dir = rec_dir(&m);
    mount::fill(&m.at.join("filler"));
    let mut s = Service::start(&dir, &tmp.path().join("stderr.log"), &[]);
    check_paused(&mut s, "no_space", "ENOSPC", &dir);
    assert!(entries(&dir).is_empty(), "leftovers: {:?}", entries(&dir));
    std::fs::remove_file(m.at.join("filler")).unwrap();
    check_resumed(&mut s, &dir);
    s.stop();
    replays(&dir);
    let first = Recording::open(entries(&dir).remove(0)).unwrap();
    assert_eq!(first.meta().part, 0, "the first part is part 0");
}

case!(
    a_one_shot_recording_on_a_full_disk_fails_naming_the_file,
    [Need::Root]
);
/// Without a service there is no one to keep serving: a one-shot
/// recording on a full disk fails with an error naming the file, and
/// leaves no empty file behind.
fn a_one_shot_recording_on_a_full_disk_fails_naming_the_file() {
    const T: &str = "a_one_shot_recording_on_a_full_disk_fails_naming_the_file";
    if !can_run(T, &["mount"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = Mount::tmpfs(&tmp.path().join("m"), "1m").unwrap();
    mount::fill(&m.at.join("filler"));
    let f = m.at.join("r.rec");
    let out = common::run::output_within(
        nettop()
            .arg("--record")
            .arg(&f)
            .args(["--no-bpf", "-d", "0.1", "-n", "10"])
            .args(["--sysroot", "tests/fixtures/proc/modern"]),
        Duration::from_secs(60),
        T,
    );
    common::run::assert_clean_exit(&out, T);
    let err = common::run::stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&f.display().to_string()), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!f.exists(), "an empty {} was left", f.display());
}

case!(
    a_read_only_remount_pauses_and_a_new_mount_resumes,
    [Need::Root]
);
/// The kernel turns the file system read-only under the recorder (as
/// ext4 does on an error with `errors=remount-ro`); the operator then
/// mounts a working one in its place.
fn a_read_only_remount_pauses_and_a_new_mount_resumes() {
    const T: &str = "a_read_only_remount_pauses_and_a_new_mount_resumes";
    if !can_run(T, &["mount", "losetup", "mkfs.ext4"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("ro.img");
    let at = tmp.path().join("m");
    let disk = Mount::ext4(&img, 16, &at, "errors=remount-ro").unwrap();
    let trigger = PathBuf::from(format!(
        "/sys/fs/ext4/{}/trigger_fs_error",
        disk.dev_name().unwrap()
    ));
    if !trigger.exists() {
        common::skip(T, &format!("{} is missing", trigger.display()));
        return;
    }
    let dir = rec_dir(&disk);
    let mut s = Service::start(&dir, &tmp.path().join("stderr.log"), &[]);
    s.wait("two snapshots", 30, || {
        entries(&dir)
            .first()
            .and_then(|p| Recording::open(p).ok())
            .is_some_and(|r| r.len() >= 2)
    });
    // The remount the brief names is refused while a part is open.
    let refused = mount::run(Command::new("mount").args(["-o", "remount,ro"]).arg(&at));
    assert!(refused.is_err(), "remount,ro with a part open for writing");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&trigger)
        .and_then(|mut f| f.write_all(b"nettop test"))
        .unwrap();
    check_paused(&mut s, "read_only", "EROFS", &dir);

    // A working file system where the broken one was, put over it in one
    // step (the directory never goes missing).
    let staging = tmp.path().join("staging");
    let mut fresh = Mount::tmpfs(&staging, "8m").unwrap();
    rec_dir(&fresh);
    fresh.move_to(&at).unwrap();
    check_resumed(&mut s, &dir);
    s.stop();
    let n_new = replays(&dir);
    drop(fresh);
    // Beneath it, the parts on the broken disk: every whole record reads.
    let n_old = replays(&dir);
    drop(disk);
    common::report(&format!(
        "{T}: {n_old} snapshots replay from the disk that turned read-only, {n_new} from the new one\n"
    ));
}

case!(io_errors_pause_and_a_recovered_device_resumes, [Need::Root]);
/// The device fails writes (EIO, reported by fdatasync) and later
/// recovers: here a loop device shrunk under its ext4 and grown back.
fn io_errors_pause_and_a_recovered_device_resumes() {
    const T: &str = "io_errors_pause_and_a_recovered_device_resumes";
    if !can_run(T, &["mount", "losetup", "mkfs.ext4"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("eio.img");
    let at = tmp.path().join("m");
    let disk = Mount::ext4(&img, 64, &at, "errors=continue").unwrap();
    let dev = disk.dev.clone().unwrap();
    let dir = rec_dir(&disk);
    let mut s = Service::start(&dir, &tmp.path().join("stderr.log"), &[]);
    s.wait("two snapshots", 30, || {
        entries(&dir)
            .first()
            .and_then(|p| Recording::open(p).ok())
            .is_some_and(|r| r.len() >= 2)
    });
    let resize = |mib: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&img)
            .and_then(|f| f.set_len(mib << 20))
            .unwrap();
        mount::run(Command::new("losetup").args(["-c", &dev])).unwrap();
    };
    // Everything past the first MiB now fails to write.
    resize(1);
    check_paused(&mut s, "io_error", "EIO", &dir);
    resize(64);
    check_resumed(&mut s, &dir);
    s.stop();
    let n = replays(&dir);
    common::report(&format!("{T}: {n} snapshots replay after the I/O errors\n"));
}

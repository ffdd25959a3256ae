//! Hostile output and input paths (issue 10, items 1, 5, 10, 14, 15): what
//! `--record` may create or overwrite, what rotation may touch, and paths
//! that are not regular files (devices, FIFOs, /proc files, symlinks).
//!
//! Tests that need root (a loop device, a symlink planted by another user)
//! fail instead of skipping under NETTOP_REQUIRE_BPF=1, like the BPF tests.

use crate::common;
use crate::common::tier::Need;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::run::{assert_clean_exit, nettop, output_within, stderr};
use nettop::record::Recording;

const LIMIT: Duration = Duration::from_secs(30);
/// A recorded /proc tree: small, fast samples without BPF.
const FIXTURE: &str = "tests/fixtures/proc/modern";

fn record_args(file: &Path) -> Vec<String> {
    vec![
        "--record".into(),
        file.display().to_string(),
        "--no-bpf".into(),
        "--sysroot".into(),
        FIXTURE.into(),
        "-d".into(),
        "0.05".into(),
    ]
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

/// Item 1: a device reports size 0, which used to pass the
/// "refuse to overwrite" check; nettop wrote its header over it.
#[test]
fn record_refuses_a_character_device() {
    let out = output_within(
        nettop().args(["--record", "/dev/null", "-n", "2", "-d", "0.05", "--no-bpf"]),
        LIMIT,
        "--record /dev/null",
    );
    assert_clean_exit(&out, "--record /dev/null");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

struct Loop(String);
impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

case!(record_refuses_a_block_device, [Need::Root]);
/// Item 1: `nettop --record /dev/loop0 -n 1` exited 0 and the device then
/// started with the nettop magic.
fn record_refuses_a_block_device() {
    const T: &str = "record_refuses_a_block_device";
    if !common::is_root() {
        common::skip(T, "needs root to set up a loop device");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::write(&img, vec![0xABu8; 1 << 20]).unwrap();
    let o = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    if !o.status.success() {
        common::skip(T, &format!("losetup failed: {}", stderr(&o)));
        return;
    }
    let dev = Loop(String::from_utf8_lossy(&o.stdout).trim().to_string());
    let out = output_within(
        nettop().args(["--record", &dev.0, "-n", "2", "-d", "0.05", "--no-bpf"]),
        LIMIT,
        "--record on a loop device",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    let mut head = [0u8; 16];
    use std::io::Read;
    std::fs::File::open(&dev.0)
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    assert_eq!(head, [0xAB; 16], "the block device was written to");
}

/// Item 1 and 14: /proc files report size 0 too; writing the header into
/// /proc/self/comm renamed nettop and ended in "not allowed to load BPF".
#[test]
fn record_refuses_a_proc_file_with_the_right_error() {
    let mut cmd = nettop();
    cmd.args(["--record", "/proc/self/comm", "-n", "1", "-d", "0.05"]);
    if !common::is_root() {
        cmd.arg("--no-bpf");
    }
    let out = output_within(&mut cmd, LIMIT, "--record /proc/self/comm");
    assert_clean_exit(&out, "--record /proc/self/comm");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a regular file") || err.contains("kernel pseudo-file"),
        "{err}"
    );
    assert!(!err.contains("BPF"), "wrong error: {err}");
}

/// Item 1: recordings hold every command name and CPU figure of the host;
/// they are created 0600, not 0644.
#[test]
fn recordings_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    let out = output_within(
        nettop().args(record_args(&f)).args(["-n", "2"]),
        LIMIT,
        "--record",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "recording mode {mode:o}");
}

/// Item 1: a symlink as the record path is never followed, whoever owns it.
#[test]
fn record_does_not_follow_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    let link = dir.path().join("link.rec");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = output_within(
        nettop().args(record_args(&link)).args(["-n", "2"]),
        LIMIT,
        "--record through a symlink",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!target.exists(), "the symlink was followed");
}

/// Runs `argv` as `nobody` (util-linux setpriv).
fn as_nobody(argv: &[&str]) {
    let st = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(argv)
        .status()
        .expect("setpriv runs");
    assert!(st.success(), "{argv:?} as nobody failed");
}

/// A world-writable sticky directory (like /tmp) that `nobody` can reach.
fn sticky_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    (dir, tmp)
}

case!(
    record_ignores_paths_planted_by_another_user,
    [Need::Root, Need::Tool("setpriv", "--version")]
);
/// Item 1: an unprivileged user plants a dangling symlink, a symlink to an
/// empty file of root's, and an empty file of their own in a sticky
/// directory; root's `--record` must use none of them.
fn record_ignores_paths_planted_by_another_user() {
    const T: &str = "record_ignores_paths_planted_by_another_user";
    if !common::is_root() {
        common::skip(T, "needs root to act as another user");
        return;
    }
    let (dir, tmp) = sticky_dir();
    let victim = dir.path().join("victim");
    let roots_empty = dir.path().join("roots_empty");
    std::fs::write(&roots_empty, b"").unwrap();
    let dangling = tmp.join("dangling.rec");
    let to_empty = tmp.join("to_empty.rec");
    let theirs = tmp.join("theirs.rec");
    as_nobody(&[
        "ln",
        "-s",
        victim.to_str().unwrap(),
        dangling.to_str().unwrap(),
    ]);
    as_nobody(&[
        "ln",
        "-s",
        roots_empty.to_str().unwrap(),
        to_empty.to_str().unwrap(),
    ]);
    as_nobody(&["touch", theirs.to_str().unwrap()]);
    for p in [&dangling, &to_empty, &theirs] {
        let out = output_within(
            nettop().args(record_args(p)).args(["-n", "2"]),
            LIMIT,
            "--record on a planted path",
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", p.display());
    }
    assert!(!victim.exists(), "dangling symlink followed");
    assert_eq!(std::fs::metadata(&roots_empty).unwrap().len(), 0);
    assert_eq!(std::fs::metadata(&theirs).unwrap().len(), 0);
}

/// Item 1: an empty regular file of our own (`mktemp`) may still be used.
#[test]
fn record_may_fill_our_own_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mine.rec");
    std::fs::write(&f, b"").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = output_within(
        nettop().args(record_args(&f)).args(["-n", "2"]),
        LIMIT,
        "--record into an empty file",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(Recording::open(&f).unwrap().len(), 2);
    assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, 0o600);
}

/// Item 10: a FIFO as the record path blocked in open() and ignored
/// SIGINT/SIGTERM.
#[test]
fn record_to_a_fifo_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let out = output_within(
        nettop().args(record_args(&fifo)).args(["-n", "2"]),
        LIMIT,
        "--record FIFO",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// Item 10: a FIFO as the replay path hung (batch, export, pinning lint).
#[test]
fn replay_of_a_fifo_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    for args in [
        vec!["--replay", f, "-b"],
        vec!["--replay", f, "--export", "json"],
        vec!["--pinning-check", "--replay", f],
    ] {
        let out = output_within(nettop().args(&args), LIMIT, &format!("{args:?}"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
    }
}

/// Item 15: `--hwloc-xml /dev/zero` said "no such file".
#[test]
fn hwloc_xml_that_is_not_a_file_says_so() {
    let out = output_within(
        nettop().args(["--pinning-check", "--hwloc-xml", "/dev/zero"]),
        LIMIT,
        "--hwloc-xml /dev/zero",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.to_lowercase().contains("no such file"), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

fn part(base: &Path, k: u32) -> PathBuf {
    PathBuf::from(format!("{}.{k}", base.display()))
}

/// Item 5: pre-existing FILE.1 … FILE.4 (an older recording's parts) were
/// deleted or shifted silently by rotation.
#[test]
fn rotation_leaves_foreign_parts_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    for k in 1..=4 {
        std::fs::write(part(&f, k), format!("old evidence {k}")).unwrap();
    }
    let out = output_within(
        nettop()
            .args(record_args(&f))
            .args(["-n", "40", "--max-size", "16K"]),
        LIMIT,
        "--record with rotation",
    );
    for k in 1..=4 {
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(part(&f, k)).unwrap()),
            format!("old evidence {k}"),
            "{} was touched; stderr: {}",
            part(&f, k).display(),
            stderr(&out)
        );
    }
    assert!(!part(&f, 5).exists());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("r.rec.1"), "{err}");
    // Refused before recording anything, not at the first rotation.
    assert!(!f.exists(), "{err}");
}

/// Item 15: rotated parts exceeded `--max-size` (the end record, and the
/// new part's host record, topology and repeated snapshot, were not counted).
#[test]
fn rotated_parts_never_exceed_max_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    let max = 16 * 1024;
    let out = output_within(
        nettop()
            .args(record_args(&f))
            .args(["-n", "40", "--max-size", "16K"]),
        LIMIT,
        "--record with rotation",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut parts = vec![f.clone()];
    parts.extend((1..=4).map(|k| part(&f, k)).filter(|p| p.exists()));
    assert!(parts.len() > 1, "no rotation happened");
    for p in &parts {
        let len = std::fs::metadata(p).unwrap().len();
        assert!(len <= max, "{} is {len} bytes > {max}", p.display());
        let rec = Recording::open(p).unwrap();
        assert!(rec.len() >= 2, "{} holds no interval", p.display());
        assert!(rec.closed_cleanly(), "{}", p.display());
    }
}

/// A symlinked directory is refused with or without a trailing slash: with
/// one, lstat resolved the link and `--record link/` wrote into the
/// target (issue 23).
#[test]
fn record_dir_with_a_trailing_slash_does_not_follow_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real");
    std::fs::create_dir(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o750)).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for arg in [
        link.display().to_string(),
        format!("{}/", link.display()),
        format!("{}//", link.display()),
    ] {
        let out = output_within(
            nettop()
                .args(record_args(Path::new(&arg)))
                .args(["-n", "1"]),
            LIMIT,
            "--record through a symlinked directory",
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "--record {arg}: {err}");
        assert!(err.contains("symbolic link"), "--record {arg}: {err}");
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "--record {arg} wrote through the symlink"
        );
    }
    // The real directory with a slash is still a directory target.
    let out = output_within(
        nettop()
            .args(record_args(Path::new(&format!("{}/", target.display()))))
            .args(["-n", "1"]),
        LIMIT,
        "--record DIR/",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1);
}

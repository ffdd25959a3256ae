//! `--plan --apply` and `--revert` as transactions, against a real veth's
//! `rps_cpus` in a network namespace of the test's own:
//!
//! - one apply at a time (the lock), and a killed apply found by the next
//!   `--plan`, `--apply`, its dry run and the TUI, with an undo command
//!   that works as printed (`--state-dir` in it);
//! - a full state directory: the error names the file, and no empty key
//!   or revert file blocks the applies after it;
//! - `--revert` all or nothing, its dry run refusing what it refuses, and
//!   the revert files and state directories it does not trust.
//!
//! The applies run a reviewed plan file (`--plan-file`) that sets the
//! veth's RPS mask, so no load is needed. Needs root and `ip`; skips
//! loudly otherwise and fails under NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::netns::NetnsPair;
use common::plan_scene::{revert, rps_bytes, rps_path};
use common::run::{nettop, output_within, stderr, stdout};
use nettop::plan::revert::{Entry, RevertFile};
use nettop::plan::{Change, Kind, Plan};

fn can_run() -> bool {
    if !common::is_root() {
        common::skip("apply transaction test", "not root");
        return false;
    }
    if !common::netns::have_program("ip") {
        common::skip("apply transaction test", "`ip` not installed");
        return false;
    }
    true
}

fn pair(tag: &str) -> Option<NetnsPair> {
    match NetnsPair::create(tag) {
        Ok(p) => {
            p.set_rps("0").unwrap();
            Some(p)
        }
        Err(e) => {
            common::skip("apply transaction test", &e);
            None
        }
    }
}

/// A reviewed plan that sets the receiving veth's RPS mask to `mask`.
fn plan_file(dir: &Path, pair: &NetnsPair, mask: &str) -> PathBuf {
    let plan = Plan {
        schema: nettop::plan::SCHEMA.into(),
        source: "test".into(),
        load: "none".into(),
        protected: Default::default(),
        feasible: true,
        changes: vec![Change {
            kind: Kind::Rps,
            nic: pair.veth_rx.clone(),
            netns: pair.ns_rx.clone(),
            target: rps_path(pair),
            from: "0".into(),
            to: mask.into(),
            command: String::new(),
            resolves: Vec::new(),
            why: "test".into(),
        }],
        impossible: Vec::new(),
        unaddressed: Vec::new(),
        victims: Vec::new(),
    };
    let p = dir.join("plan.json");
    std::fs::write(&p, serde_json::to_string(&plan).unwrap()).unwrap();
    p
}

fn apply_cmd(state: &Path, plan: &Path, measure: &str) -> Command {
    let mut c = nettop();
    c.env("NETTOP_CACHE_DIR", common::cache_dir())
        .args(["--plan", "--apply", "--yes", "--measure", measure])
        .arg("--plan-file")
        .arg(plan)
        .arg("--state-dir")
        .arg(state);
    c
}

fn run(cmd: &mut Command, what: &str) -> Output {
    output_within(cmd, Duration::from_secs(120), what)
}

fn rps_now(pair: &NetnsPair) -> String {
    String::from_utf8_lossy(&rps_bytes(pair)).trim().to_string()
}

/// Starts an apply and returns it once it printed a line starting with
/// `upto` (its stdout read so far in the second value).
fn apply_until(cmd: &mut Command, upto: &str) -> (common::run::Guard, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let guard = common::run::Guard(child);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        seen.push_str(&line);
        assert!(n > 0, "the apply ended before {upto:?}: {seen}");
        if line.starts_with(upto) {
            // Keep reading so a full pipe never stalls it.
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            return (guard, seen);
        }
    }
}

case!(
    a_second_apply_is_refused_and_a_killed_one_is_found_with_a_working_undo,
    [Need::Root, Need::Tool("ip", "-V"), Need::Tool("tmux", "-V")]
);
fn a_second_apply_is_refused_and_a_killed_one_is_found_with_a_working_undo() {
    if !can_run() {
        return;
    }
    let Some(pair) = pair("jk") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let plan = plan_file(tmp.path(), &pair, "2");

    let (mut a, _) = apply_until(&mut apply_cmd(&state, &plan, "8s"), "revert file:");
    let b = run(&mut apply_cmd(&state, &plan, "1s"), "second apply");
    assert_eq!(b.status.code(), Some(2), "{}", stderr(&b));
    assert!(
        stderr(&b).contains(&format!(
            "nettop pid {} is applying or reverting changes on this host now",
            a.pid()
        )),
        "{}",
        stderr(&b)
    );

    // Killed in its after window: the mask stays changed, no verdict.
    let mut err = a.0.stderr.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    wait_for(|| rps_now(&pair) == "2", "the apply to write");
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    assert_eq!(rps_now(&pair), "2");

    let plan_only = run(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args(["--plan", "--no-bpf", "--nic"])
            .arg(&pair.veth_rx)
            .arg("--state-dir")
            .arg(&state),
        "--plan after the kill",
    );
    let err = stderr(&plan_only);
    assert!(plan_only.status.success(), "{err}");
    assert!(err.contains("an earlier apply did not finish"), "{err}");
    assert!(
        err.contains("1 of its 1 change(s) still on the host"),
        "{err}"
    );
    let undo = err
        .split("undo it with: ")
        .nth(1)
        .and_then(|s| s.lines().next())
        .unwrap_or_else(|| panic!("no undo command: {err}"))
        .to_string();
    assert!(
        undo.contains(&format!("--state-dir {}", state.display())),
        "{undo}"
    );

    for dry in [true, false] {
        let mut c = apply_cmd(&state, &plan, "1s");
        if dry {
            c.arg("--dry-run");
        }
        let o = run(&mut c, "apply over an unfinished one");
        assert_eq!(o.status.code(), Some(2), "dry run {dry}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("an earlier apply did not finish"),
            "dry run {dry}: {}",
            stderr(&o)
        );
    }
    assert_eq!(rps_now(&pair), "2");

    // The TUI says so on its first screen.
    let cmd = format!(
        "{} --no-bpf --state-dir {}",
        env!("CARGO_BIN_EXE_nettop"),
        state.display()
    );
    if let Some(t) = common::tmux::Tmux::start("nettop-unfinished", &cmd, 250, 30) {
        let screen = t.wait_text("did not finish");
        assert!(screen.contains("nettop --revert"), "{screen}");
        t.keys(&["q"]);
    }

    // The undo, exactly as printed.
    let words: Vec<&str> = undo.split_whitespace().collect();
    assert_eq!(words[0], "nettop");
    let o = run(
        nettop().args(&words[1..]).arg("--yes"),
        "the printed undo command",
    );
    assert!(o.status.success(), "{undo}: {}", stderr(&o));
    assert_eq!(rps_now(&pair), "0");
    let again = run(
        nettop()
            .args(["--plan", "--no-bpf", "--nic"])
            .arg(&pair.veth_rx)
            .arg("--state-dir")
            .arg(&state),
        "--plan after the undo",
    );
    assert!(
        !stderr(&again).contains("did not finish"),
        "{}",
        stderr(&again)
    );
    // And a new apply may run again.
    let ok = run(&mut apply_cmd(&state, &plan, "1s"), "apply after the undo");
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains(&format!("--state-dir {}", state.display())),
        "the kept verdict's undo names the state dir: {}",
        stdout(&ok)
    );
}

fn wait_for(mut pred: impl FnMut() -> bool, what: &str) {
    for _ in 0..600 {
        if pred() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// A small tmpfs, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let d = tempfile::tempdir().unwrap();
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=700"),
                "tmpfs",
            ])
            .arg(d.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs");
        Tmpfs(d)
    }

    /// Fills it to the last byte.
    fn fill(&self) -> PathBuf {
        let p = self.0.path().join("filler");
        let _ = Command::new("dd")
            .args(["if=/dev/zero", "bs=4k"])
            .arg(format!("of={}", p.display()))
            .stderr(Stdio::null())
            .status();
        p
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

fn names(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

case!(
    a_full_state_directory_names_the_file_and_leaves_nothing_empty,
    [Need::Root, Need::Tool("ip", "-V")]
);
fn a_full_state_directory_names_the_file_and_leaves_nothing_empty() {
    if !can_run() {
        return;
    }
    let Some(pair) = pair("jf") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan_file(tmp.path(), &pair, "2");
    let fs = Tmpfs::mount("64k");
    let state = fs.0.path();
    let filler = fs.fill();

    // No key yet: its creation fails.
    let o = run(&mut apply_cmd(state, &plan, "1s"), "apply on a full disk");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("revert.key"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rps_now(&pair), "0");
    let left = names(state);
    assert!(
        left.iter().all(|(n, len)| is_exempt(n) || *len > 0),
        "{left:?}"
    );

    // With space the key is made; full again, the revert file fails whole.
    std::fs::remove_file(&filler).unwrap();
    let o = run(&mut apply_cmd(state, &plan, "1s"), "apply with space");
    assert!(o.status.success(), "{}", stderr(&o));
    let reverted = run(
        nettop()
            .args(["--revert"])
            .arg(latest_revert(state))
            .args(["--yes", "--state-dir"])
            .arg(state),
        "revert",
    );
    assert!(reverted.status.success(), "{}", stderr(&reverted));
    fs.fill();
    let before = names(state);
    let o = run(&mut apply_cmd(state, &plan, "1s"), "apply on a full disk");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("revert-"), "{}", stderr(&o));
    assert_eq!(rps_now(&pair), "0");
    let after = names(state);
    let new: Vec<_> = after.iter().filter(|n| !before.contains(n)).collect();
    assert!(
        new.iter().all(|(n, len)| is_exempt(n) || *len > 0),
        "{new:?}"
    );
    assert!(
        !new.iter().any(|(n, _)| n.starts_with("revert-")),
        "{new:?}"
    );
}

/// The filler, and the lock file (empty on a full disk: it holds only the
/// holder's pid, for messages).
fn is_exempt(name: &str) -> bool {
    name == "filler" || name == "apply.lock"
}

fn latest_revert(state: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v.pop().expect("a revert file")
}

/// A revert file signed with `state`'s key, as an apply would write it.
fn signed(state: &Path, entries: Vec<Entry>) -> PathBuf {
    nettop::plan::revert::write(state, &RevertFile::new(entries)).unwrap()
}

fn rps_entry(pair: &NetnsPair, ns: &str, previous: &str) -> Entry {
    Entry {
        kind: Kind::Rps,
        netns: ns.into(),
        path: rps_path(pair),
        previous: previous.into(),
        applied: "0".into(),
    }
}

case!(
    revert_is_all_or_nothing_and_its_dry_run_refuses_the_same,
    [Need::Root, Need::Tool("ip", "-V")]
);
fn revert_is_all_or_nothing_and_its_dry_run_refuses_the_same() {
    if !can_run() {
        return;
    }
    let Some(pair) = pair("jr") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let gone = "pr-nonexistent";
    let f = signed(
        &state,
        vec![
            rps_entry(&pair, &pair.ns_rx, "2"),
            rps_entry(&pair, gone, "2"),
        ],
    );
    for dry in [true, false] {
        let mut c = nettop();
        c.args(["--revert"])
            .arg(&f)
            .args(["--yes", "--state-dir"])
            .arg(&state);
        if dry {
            c.arg("--dry-run");
        }
        let o = run(&mut c, "revert with a gone namespace");
        assert_eq!(o.status.code(), Some(2), "dry {dry}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("nothing restored: 1 of the 2 file(s)"),
            "dry {dry}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(gone), "{}", stderr(&o));
        assert_eq!(rps_now(&pair), "0", "dry {dry}: the good entry was written");
    }

    // An empty previous value is no mask: refused, nothing written.
    let f = signed(&state, vec![rps_entry(&pair, &pair.ns_rx, "")]);
    let o = revert(&state, &f);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("an empty value is not a CPU mask"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rps_now(&pair), "0");

    // The good file alone restores.
    let good = signed(&state, vec![rps_entry(&pair, &pair.ns_rx, "2")]);
    let o = revert(&state, &good);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(rps_now(&pair), "2");
}

case!(
    untrusted_revert_files_and_state_directories_are_refused,
    [Need::Root, Need::Tool("ip", "-V")]
);
fn untrusted_revert_files_and_state_directories_are_refused() {
    if !can_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let entry = Entry {
        kind: Kind::Rps,
        netns: String::new(),
        path: "/sys/class/net/lo/queues/rx-0/rps_cpus".into(),
        previous: "0".into(),
        applied: "0".into(),
    };
    let f = signed(&state, vec![entry]);
    let refused = |file: &Path, dir: &Path, want: &str| {
        let o = revert(dir, file);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "want {want:?}: {}", stderr(&o));
    };

    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    refused(&link, &state, "is a symbolic link");

    let copy = state.join("copy.json");
    std::fs::copy(&f, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
    refused(&copy, &state, "with mode 666");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&copy, Some(65534), None).unwrap();
    refused(&copy, &state, "owned by uid 65534");

    let dir_link = tmp.path().join("state-link");
    std::os::unix::fs::symlink(&state, &dir_link).unwrap();
    refused(&f, &dir_link, "is a symbolic link");

    // Another state directory: the refusal says which --state-dir to give.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
    refused(&f, &other, &format!("--state-dir {}", state.display()));

    // A dry run refuses a state directory the real run refuses.
    let file_dir = tmp.path().join("not-a-dir");
    std::fs::write(&file_dir, "x").unwrap();
    let plan = tmp.path().join("plan.json");
    std::fs::write(
        &plan,
        serde_json::to_string(&Plan {
            schema: nettop::plan::SCHEMA.into(),
            source: "test".into(),
            load: "none".into(),
            protected: Default::default(),
            feasible: true,
            changes: Vec::new(),
            impossible: Vec::new(),
            unaddressed: Vec::new(),
            victims: Vec::new(),
        })
        .unwrap(),
    )
    .unwrap();
    let o = run(
        apply_cmd(&file_dir, &plan, "1s").arg("--dry-run"),
        "dry run with a file as the state dir",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a directory"), "{}", stderr(&o));
}

//! End to end: the real binary in a real pseudo-terminal (tmux), driven by
//! keys, checked by screen text, resized, quit and killed — and the terminal
//! must come back cooked and on the main screen every time.

mod common;

use common::tmux::Tmux;

use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

#[test]
fn live_tui_keys_resize_and_quit_restore_the_terminal() {
    let Some(t) = Tmux::start("keys", &format!("{BIN} --no-bpf -d 0.5"), 130, 30) else {
        return common::skip(
            "live_tui_keys_resize_and_quit_restore_the_terminal",
            "tmux not installed",
        );
    };
    t.wait_text("1 Processes");
    // The first interval has been measured once the status line shows it.
    let s = t.wait_text("interval ");
    assert!(
        s.contains("TOP%▼") && s.contains("TRUE~%") && s.contains("STOLEN~%"),
        "{s}"
    );
    assert!(s.contains("regime "), "status line:\n{s}");
    assert!(s.contains("/proc only"), "status line:\n{s}");
    assert_eq!(t.format("#{alternate_on}"), "1");
    // Real data: nettop itself is a process on screen once filtered.
    t.keys(&["/"]);
    t.wait_text("Filter (command");
    t.literal("nettop");
    t.keys(&["Enter"]);
    t.wait_for("only nettop rows", |s| {
        s.contains("filter \"nettop\"")
            && s.lines().any(|l| l.trim_end().ends_with(" nettop"))
            && !s.contains("kthreadd")
    });
    t.keys(&["Escape"]);
    // View switches.
    t.keys(&["2"]);
    t.wait_text("NETRX/s");
    t.keys(&["Tab"]);
    t.wait_text("DEVICE / NAPI");
    t.keys(&["4"]);
    t.wait_for("the topology view", |s| {
        s.contains("Topology:") && s.contains("CPU")
    });
    t.keys(&["5"]);
    t.wait_text("pinning check");
    // Help overlay lists keys; any key closes it.
    t.keys(&["1", "?"]);
    t.wait_text("nettop keys");
    t.keys(&["Escape"]);
    t.wait_for("help closed", |s| !s.contains("nettop keys"));
    // Sort by the next column, then by the picker.
    t.keys(&[">"]);
    t.wait_text("ONCPU%▼");
    t.keys(&["s"]);
    t.wait_text("sort by (Enter picks");
    t.keys(&["End", "Enter"]);
    t.wait_text("COMMAND▲");
    // Pause shows in the status line.
    t.keys(&["p"]);
    t.wait_text("PAUSED");
    t.keys(&["Space"]);
    t.wait_for("resumed", |s| !s.contains("PAUSED"));
    // Resize: smaller, tiny, back.
    t.resize(70, 16);
    let s = t.wait_for("redraw at 70 columns", |s| {
        s.contains("TOP%") && s.lines().all(|l| l.chars().count() <= 70)
    });
    assert!(!s.contains("INLINE%"), "{s}");
    t.resize(10, 5);
    t.wait_text("too");
    t.resize(130, 30);
    t.wait_text("INLINE%");
    t.keys(&["q"]);
    t.assert_restored(0);
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    for (sig, code) in [("TERM", 143), ("HUP", 129)] {
        let Some(t) = Tmux::start(&format!("sig{sig}"), &format!("{BIN} --no-bpf"), 100, 24) else {
            return common::skip(
                "sigterm_and_sighup_restore_the_terminal",
                "tmux not installed",
            );
        };
        t.wait_text("COMMAND");
        let pid = t.nettop_pid();
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok);
        t.assert_restored(code);
    }
}

/// The terminal disappears under a running nettop (ssh drops, tmux server
/// killed): it must exit, not spin on a dead tty.
#[test]
fn vanished_terminal_ends_nettop() {
    let Some(t) = Tmux::start("gone", &format!("{BIN} --no-bpf -d 0.5"), 100, 24) else {
        return common::skip("vanished_terminal_ends_nettop", "tmux not installed");
    };
    t.wait_text("COMMAND");
    let pid = t.nettop_pid();
    let _ = t.tmux(&["kill-server"]);
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .is_some_and(|zombie| !zombie)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive() {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("nettop (pid {pid}) still running 5 s after its terminal vanished");
    }
}

#[test]
fn startup_errors_are_printed_plainly() {
    let Some(t) = Tmux::start(
        "err",
        &format!("{BIN} --no-bpf --sysroot /nonexistent-nettop-root"),
        100,
        24,
    ) else {
        return common::skip("startup_errors_are_printed_plainly", "tmux not installed");
    };
    let s = t.wait_text("TTY=");
    assert!(s.contains("EXIT=2"), "{s}");
    assert!(
        s.contains("nettop:") && s.contains("/nonexistent-nettop-root"),
        "{s}"
    );
    t.assert_restored(2);
}

#[test]
fn not_a_terminal_is_an_error_not_a_mess() {
    let out = Command::new(BIN)
        .arg("--no-bpf")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run nettop");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("-b"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no escape codes on a pipe");
}

#[test]
fn live_tui_with_bpf() {
    if !common::is_root() {
        return common::skip("live_tui_with_bpf", "BPF TUI test needs root");
    }
    // tmux does not pass our environment on: name the test cache inline.
    let cmd = format!(
        "env NETTOP_CACHE_DIR={} {BIN}",
        common::cache_dir().display()
    );
    let Some(t) = Tmux::start("bpf", &cmd, 130, 30) else {
        return common::skip("live_tui_with_bpf", "tmux not installed");
    };
    let s = t.wait_for("TUI or an error", |s| {
        s.contains("COMMAND") || s.contains("TTY=")
    });
    if s.contains("TTY=") {
        return common::skip(
            "live_tui_with_bpf",
            &format!("BPF collector could not start here:\n{s}"),
        );
    }
    t.wait_for("BPF status", |s| s.contains("│ BPF"));
    t.keys(&["2"]);
    t.wait_text("NETRX/s");
    t.keys(&["q"]);
    t.assert_restored(0);
}

#[test]
fn replay_steps_plays_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.ntr");
    let rec = Command::new(BIN)
        .args(["--no-bpf", "-n", "4", "-d", "0.2", "--record"])
        .arg(&file)
        .output()
        .expect("nettop --record");
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let Some(t) = Tmux::start(
        "replay",
        &format!("{BIN} --replay {} -d 0.2", file.display()),
        130,
        24,
    ) else {
        return common::skip("replay_steps_plays_and_quits", "tmux not installed");
    };
    t.wait_text("REPLAY 1/3 paused");
    t.keys(&["]"]);
    t.wait_text("REPLAY 2/3 paused");
    t.keys(&["["]);
    t.wait_text("REPLAY 1/3 paused");
    // Play runs to the end and stops there.
    t.keys(&["Space"]);
    t.wait_text("REPLAY 3/3 paused");
    // Jump to a time before the recording: the first frame.
    t.keys(&["T"]);
    t.wait_text("Go to time");
    t.literal("-10m");
    t.keys(&["Enter"]);
    t.wait_text("REPLAY 1/3 paused");
    // The recorded configuration, linted, in the Pinning view.
    t.keys(&["5"]);
    t.wait_text("nettop pinning check");
    t.keys(&["q"]);
    t.assert_restored(0);
}

/// `-c` shows a process's arguments in COMMAND; `c` goes back to names.
#[test]
fn command_line_flag_and_key() {
    /// The marker process, killed and reaped whatever happens.
    struct Marker(std::process::Child);
    impl Drop for Marker {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Marker(Command::new("sleep").arg("4242.5").spawn().expect("sleep"));
    let cmd = format!("{BIN} --no-bpf -c -p {}", child.0.id());
    let Some(t) = Tmux::start("cmdline", &cmd, 140, 20) else {
        return common::skip("command_line_flag_and_key", "tmux not installed");
    };
    t.wait_text("sleep 4242.5");
    t.keys(&["c"]);
    t.wait_for("names again", |s| {
        s.contains("COMMAND: names") && !s.contains("sleep 4242.5")
    });
    t.keys(&["q"]);
    t.assert_restored(0);
}

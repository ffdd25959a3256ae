//! End to end: the real binary in a real pseudo-terminal (tmux), driven by
//! keys, checked by screen text, resized, quit and killed — and the terminal
//! must come back cooked and on the main screen every time.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

/// A private tmux server (own socket) with one session; killed on drop.
struct Tmux {
    sock: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str, w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        let t = Tmux {
            sock: format!("nettop-e2e-{name}-{}", std::process::id()),
        };
        // The pane runs nettop, then reports its exit status and whether the
        // tty is back in canonical mode, then stays so we can look.
        let script = format!(
            "{cmd}; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon | sed 's/^/TTY=/'; sleep 120"
        );
        let ok = t
            .tmux(&[
                "new-session",
                "-d",
                "-s",
                "e2e",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                "sh",
                "-c",
                &script,
            ])
            .status
            .success();
        assert!(ok, "tmux new-session failed");
        Some(t)
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.sock, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("running tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "e2e"]).stdout)
            .into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    fn literal(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "e2e", "-l", "--", text])
                .status
                .success()
        );
    }

    fn resize(&self, w: u16, h: u16) {
        let out = self.tmux(&[
            "resize-window",
            "-t",
            "e2e",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "-t", "e2e", f]).stdout)
            .trim()
            .to_string()
    }

    /// Waits until `pred` holds for the screen; panics with the screen if not.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// nettop's PID: the only child of the pane's shell while it runs.
    fn nettop_pid(&self) -> u32 {
        let shell = self.format("#{pane_pid}");
        let out = Command::new("pgrep")
            .args(["-P", &shell])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("nettop child of the pane shell")
    }

    /// After nettop exits: exit code shown, tty canonical, main screen.
    fn assert_restored(&self, code: i32) {
        let s = self.wait_text("TTY=");
        assert!(
            s.contains(&format!("EXIT={code}")),
            "exit code; screen:\n{s}"
        );
        assert!(s.contains("TTY=icanon"), "terminal left in raw mode:\n{s}");
        assert!(
            !s.contains("TTY=-icanon"),
            "terminal left in raw mode:\n{s}"
        );
        assert_eq!(
            self.format("#{alternate_on}"),
            "0",
            "alternate screen not left"
        );
        assert!(!s.contains("1 Processes"), "TUI still on screen:\n{s}");
        assert_eq!(
            self.format("#{mouse_any_flag}"),
            "0",
            "mouse reporting left on"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

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

//! End to end: the real binary in a real pseudo-terminal (tmux), driven by
//! keys, checked by screen text, resized, quit and killed — and the terminal
//! must come back cooked and on the main screen every time.

use crate::common;
use crate::common::tier::Need;

use common::tmux::Tmux;

use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

case!(
    live_tui_keys_resize_and_quit_restore_the_terminal,
    [Need::Tool("tmux", "-V")]
);
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
    t.wait_text("Filter as you type");
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
    t.wait_text("DEVICE/NAPI");
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
    t.keys(&["F"]);
    t.wait_text("fields: * shown");
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

case!(
    sigterm_and_sighup_restore_the_terminal,
    [Need::Tool("tmux", "-V")]
);
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

case!(vanished_terminal_ends_nettop, [Need::Tool("tmux", "-V")]);
/// The terminal disappears under a running nettop (ssh drops, tmux server
/// killed): it must exit at once, not spin on a dead tty (it used to burn
/// ~1.5 CPU-seconds in its last 1.6 s).
fn vanished_terminal_ends_nettop() {
    let Some(t) = Tmux::start("gone", &format!("{BIN} --no-bpf -d 0.5"), 100, 24) else {
        return common::skip("vanished_terminal_ends_nettop", "tmux not installed");
    };
    t.wait_text("COMMAND");
    let pid = t.nettop_pid();
    // utime + stime in clock ticks, while it is alive and not a zombie.
    let cpu = || {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = s.rsplit_once(')')?.1.trim_start();
        if rest.starts_with('Z') {
            return None;
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    };
    let before = cpu().expect("nettop running");
    let start = std::time::Instant::now();
    let _ = t.tmux(&["kill-server"]);
    let mut last = before;
    while let Some(c) = cpu() {
        last = c;
        if start.elapsed() > Duration::from_secs(5) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("nettop (pid {pid}) still running 5 s after its terminal vanished");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    // SAFETY: sysconf takes an integer and touches no memory.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let burnt = (last - before) as f64 / hz;
    assert!(
        took < Duration::from_millis(1000) && burnt < 0.3,
        "nettop took {took:?} and {burnt:.2} CPU-s to exit after its terminal vanished"
    );
}

case!(
    startup_errors_are_printed_plainly,
    [Need::Tool("tmux", "-V")]
);
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

case!(
    not_a_terminal_is_an_error_not_a_mess,
    [Need::Tool("tmux", "-V")]
);
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

case!(live_tui_with_bpf, [Need::Bpf, Need::Tool("tmux", "-V")]);
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

case!(replay_steps_plays_and_quits, [Need::Tool("tmux", "-V")]);
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

case!(command_line_flag_and_key, [Need::Tool("tmux", "-V")]);
/// `-c` shows a process's arguments in COMMAND; `c` goes back to names.
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

case!(
    forest_puts_real_children_under_their_parent,
    [Need::Tool("tmux", "-V"), Need::Tool("setsid", "--version")]
);
/// `V` on a real process tree: a parent with two children, filtered by
/// their shared name, shows the children right under the parent, each
/// glyph under the parent's name (one level in), the last one `└─`.
fn forest_puts_real_children_under_their_parent() {
    use std::os::unix::fs::PermissionsExt;

    /// The family's process group, killed whatever happens (init reaps it).
    struct Family(u32);
    impl Drop for Family {
        fn drop(&mut self) {
            let group = format!("-{}", self.0);
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        }
    }
    // A command's name is its file's: a script as the parent, copies of
    // sleep as its children, all named for this test alone.
    let dir = tempfile::tempdir().expect("temp dir");
    let kid = dir.path().join("ntforestkid");
    let Some(sleep) = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        return common::skip("forest_puts_real_children_under_their_parent", "no sleep");
    };
    std::fs::copy(sleep, &kid).expect("copy sleep");
    let parent = dir.path().join("ntforestpa");
    let pidfile = dir.path().join("pid");
    std::fs::write(
        &parent,
        format!(
            "#!/bin/sh\necho $$ > {p}\n{k} 301 &\n{k} 302 &\nwait\n",
            p = pidfile.display(),
            k = kid.display()
        ),
    )
    .expect("write the parent script");
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Detached (`setsid -f`: a session of its own, its parent gone), so
    // the family hangs right under init whatever tree runs this test: a
    // forest is drawn the same at any depth only up to the indentation
    // budget, and CI's tree is deeper than a shell's.
    let started = Command::new("setsid")
        .arg("-f")
        .arg(&parent)
        .status()
        .expect("setsid");
    assert!(started.success(), "setsid -f {}", parent.display());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the parent never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let family = Family(pid);
    let kids = || {
        Command::new("pgrep")
            .args(["-P", &pid.to_string()])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while kids() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "children never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(t) = Tmux::start("forest", &format!("{BIN} --no-bpf -d 0.5"), 220, 45) else {
        return common::skip(
            "forest_puts_real_children_under_their_parent",
            "tmux not installed",
        );
    };
    t.wait_text("interval ");
    t.keys(&["/"]);
    t.wait_text("Filter as you type");
    t.literal("ntforest");
    t.keys(&["Enter"]);
    t.wait_for("the family, flat", |s| {
        s.contains("filter \"ntforest\"") && s.matches("ntforestkid").count() == 2
    });
    t.keys(&["V"]);
    let s = t.wait_for("the children under their parent", |s| {
        let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
        let find = |l: &[char], w: &str| {
            let w: Vec<char> = w.chars().collect();
            l.windows(w.len()).position(|x| x == w.as_slice())
        };
        let Some((at, col)) = lines
            .iter()
            .enumerate()
            .find_map(|(i, l)| find(l, "ntforestpa").map(|c| (i, c)))
        else {
            return false;
        };
        let under = |i: usize, glyph: &str| {
            lines
                .get(i)
                .and_then(|l| find(l, &format!("{glyph} ntforestkid")))
                == Some(col)
        };
        s.contains("Processes (forest)") && under(at + 1, "├─") && under(at + 2, "└─")
    });
    assert!(!s.contains("TTY="), "{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
    drop(family);
}

case!(detail_pane_opens_and_closes, [Need::Tool("tmux", "-V")]);
/// Enter on a process opens the detail pane over the list (its command
/// line, workload, placement, threads); Esc closes it, and the list is
/// there again.
fn detail_pane_opens_and_closes() {
    /// The marker process, killed and reaped whatever happens.
    struct Marker(std::process::Child);
    impl Drop for Marker {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Marker(Command::new("sleep").arg("4343.5").spawn().expect("sleep"));
    let pid = child.0.id();
    let cmd = format!("{BIN} --no-bpf -d 0.5 -p {pid}");
    let Some(t) = Tmux::start("detail", &cmd, 120, 40) else {
        return common::skip("detail_pane_opens_and_closes", "tmux not installed");
    };
    t.wait_for("the marker's row", |s| {
        s.contains("interval ") && s.lines().any(|l| l.trim_end().ends_with(" sleep"))
    });
    // `-p` keeps a few kernel threads beside it: the filter leaves it alone.
    t.keys(&["/"]);
    t.wait_text("Filter as you type");
    t.literal(&pid.to_string());
    t.keys(&["Enter"]);
    t.wait_text(&format!("filter \"{pid}\""));
    t.keys(&["Enter"]);
    let s = t.wait_for("the detail pane", |s| {
        s.contains(&format!("PID {pid} sleep · running"))
            && s.contains("command: sleep 4343.5")
            && s.contains("Placement")
    });
    assert!(s.contains(&format!("Detail of PID {pid}")), "{s}");
    // Thread rows were asked for when it opened: its one thread shows.
    t.wait_text("Threads (1, busiest first)");
    t.keys(&["Escape"]);
    t.wait_for("the list again", |s| {
        !s.contains("Placement") && s.contains("COMMAND") && s.contains(" sleep")
    });
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(idle_toggle_hides_a_real_sleeper, [Need::Tool("tmux", "-V")]);
/// `i` (top's idle toggle) on real processes: a sleeper and a busy
/// process are both listed, `i` leaves the busy one alone on screen, `i`
/// again brings the sleeper back; `-i` starts with it hidden. The busy
/// process is this test's own (a spinning thread): nothing can outlive
/// the test and burn a CPU under the tests that follow.
fn idle_toggle_hides_a_real_sleeper() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// The sleeper killed and the spinning thread stopped, whatever happens.
    struct Guard(std::process::Child, Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.1.store(true, Ordering::Relaxed);
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let spin = Arc::clone(&stop);
    std::thread::spawn(move || {
        while !spin.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    let sleeper = Command::new("sleep").arg("4444.5").spawn().expect("sleep");
    let sl = sleeper.id();
    let _guard = Guard(sleeper, stop);
    let me = std::process::id();
    let row = |s: &str, pid: u32| {
        s.lines()
            .any(|l| l.split_whitespace().next() == Some(&pid.to_string()))
    };
    let cmd = format!("{BIN} --no-bpf -d 0.5 -p {sl},{me}");
    let Some(t) = Tmux::start("idle", &cmd, 140, 20) else {
        return common::skip("idle_toggle_hides_a_real_sleeper", "tmux not installed");
    };
    t.wait_for("both rows", |s| row(s, sl) && row(s, me));
    t.keys(&["i"]);
    t.wait_for("the busy one alone", |s| {
        s.contains("idle tasks hidden") && row(s, me) && !row(s, sl)
    });
    t.keys(&["i"]);
    t.wait_for("both again", |s| row(s, sl) && row(s, me));
    t.keys(&["q"]);
    t.assert_restored(0);

    let cmd = format!("{BIN} --no-bpf -i -d 0.5 -p {sl},{me}");
    let Some(t) = Tmux::start("idle-flag", &cmd, 140, 20) else {
        return;
    };
    let s = t.wait_for("the busy one", |s| row(s, me));
    assert!(!row(&s, sl), "-i lists the sleeper:\n{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
}

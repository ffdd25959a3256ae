//! Process control and htop's habits end to end: the real binary in a
//! real terminal (tmux) sends a signal to a child of the test's own
//! (`k`, the child records what it got), renices it (`r`), moves it to one
//! CPU (`a`, and the detail pane then shows STOLEN% before and after),
//! filters as keys are typed, and refuses all three with `--read-only`.

use crate::common;
use crate::common::tier::Need;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

/// A shell script under a name no other process has, trapping USR1 and
/// TERM into files beside it; killed when dropped.
struct Kid {
    child: Child,
    dir: tempfile::TempDir,
}

impl Kid {
    fn start(name: &str) -> Kid {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join(name);
        let d = dir.path().display();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ntrap 'echo usr1 > {d}/got-usr1' USR1\ntrap 'echo term > {d}/got-term; exit 0' TERM\n\
                 while :; do sleep 0.1; done\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let child = Command::new(&script).spawn().unwrap();
        Kid { child, dir }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn got(&self, sig: &str) -> PathBuf {
        self.dir.path().join(format!("got-{sig}"))
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until(what: &str, mut pred: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(15);
    while !pred() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn nice_of(pid: u32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(16).unwrap().parse().unwrap()
}

fn allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// nettop showing only the kid's row, selected: the filter typed, not
/// entered, must already have narrowed the list.
fn on_kid(t: &Tmux, name: &str, pid: u32) {
    t.wait_text("interval ");
    t.keys(&["/"]);
    t.wait_text("Filter as you type");
    t.literal(name);
    t.wait_for("the list narrowed as typed", |s| {
        s.contains(&format!("filter \"{name}\""))
            && s.lines()
                .filter(|l| l.trim_end().ends_with(&format!(" {name}")))
                .count()
                == 1
            && s.contains(&format!(" {pid} "))
            && !s.contains("kthreadd")
    });
    t.keys(&["Enter"]);
}

fn ready(name: &str) -> Option<(Kid, Tmux)> {
    if common::tool_runs("tmux", "-V") {
        let kid = Kid::start(name);
        let cmd = format!("{BIN} --no-bpf --no-config -d 0.5");
        let t = Tmux::start(name, &cmd, 160, 30)?;
        return Some((kid, t));
    }
    common::skip("ui_control", "tmux not installed");
    None
}

case!(
    k_sends_the_chosen_signal_and_r_renices,
    [Need::Tool("tmux", "-V")]
);
fn k_sends_the_chosen_signal_and_r_renices() {
    let name = "ntctlkid";
    let Some((kid, t)) = ready(name) else {
        return;
    };
    let pid = kid.pid();
    on_kid(&t, name, pid);
    // SIGUSR1 by number in the chooser, then confirmed.
    t.keys(&["k"]);
    t.wait_text("send a signal to PID");
    t.literal("10");
    t.keys(&["Enter"]);
    t.wait_text(&format!("Send SIGUSR1 to PID {pid} ({name})? [y/N]"));
    t.keys(&["y"]);
    wait_until("the kid to get SIGUSR1", || kid.got("usr1").exists());
    t.wait_text(&format!("sent SIGUSR1 to PID {pid}"));

    // Renice to 7.
    assert_eq!(nice_of(pid), 0);
    t.keys(&["r"]);
    t.wait_text(&format!("Renice PID {pid} ({name})"));
    t.literal("7");
    t.keys(&["Enter"]);
    t.wait_text("to 7 (every thread)? [y/N]");
    t.keys(&["y"]);
    wait_until("nice 7", || nice_of(pid) == 7);

    // M sorts by resident memory, as in htop and top (Esc apart: ESC
    // then M at once is Alt-M to a terminal).
    t.keys(&["Escape"]);
    t.wait_for("the filter cleared", |s| !s.contains("filter \""));
    t.keys(&["M"]);
    t.wait_text("sort RES▼");

    // Anything but y changes nothing.
    t.keys(&["/"]);
    t.literal(name);
    t.keys(&["Enter"]);
    t.keys(&["F9", "Enter"]);
    t.wait_text("Send SIGTERM");
    t.keys(&["n"]);
    t.wait_text("not done: nothing changed");
    assert!(!kid.got("term").exists());
    // SIGTERM, the default.
    t.keys(&["k", "Enter", "y"]);
    wait_until("the kid to get SIGTERM", || kid.got("term").exists());
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(
    a_moves_the_task_and_the_detail_pane_shows_before_and_after,
    [Need::Tool("tmux", "-V"), Need::Cpus(2)]
);
fn a_moves_the_task_and_the_detail_pane_shows_before_and_after() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return common::skip("ui_control affinity", "needs 2 CPUs");
    }
    let name = "ntaffkid";
    let Some((kid, t)) = ready(name) else {
        return;
    };
    let pid = kid.pid();
    on_kid(&t, name, pid);
    t.keys(&["a"]);
    let s = t.wait_text(&format!("CPUs PID {pid} ({name}) may run on"));
    assert!(s.contains("[x] CPU 0") && s.contains("[x] CPU 1"), "{s}");
    assert!(s.contains("NET_RX"), "{s}");
    // Only the CPU under the cursor (CPU 0), then confirm.
    t.keys(&["o"]);
    t.wait_for("only CPU 0 ticked", |s| {
        s.contains("[x] CPU 0") && s.contains("[ ] CPU 1")
    });
    t.keys(&["Enter"]);
    t.wait_text("to CPUs 0 (every thread)? [y/N]");
    t.keys(&["y"]);
    wait_until("affinity 0", || allowed(pid) == "0");
    let s = t.wait_for("the pane's after window", |s| {
        s.contains("Affinity set with a") && s.contains("→ after") && !s.contains("(0 frames)")
    });
    assert!(s.contains("CPUs 0-1 → 0"), "{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(
    read_only_refuses_kill_renice_and_affinity,
    [Need::Tool("tmux", "-V")]
);
fn read_only_refuses_kill_renice_and_affinity() {
    let name = "ntrokid";
    if !common::tool_runs("tmux", "-V") {
        return common::skip("ui_control read-only", "tmux not installed");
    }
    let kid = Kid::start(name);
    let pid = kid.pid();
    let cmd = format!("{BIN} --no-bpf --no-config --read-only -d 0.5");
    let Some(t) = Tmux::start(name, &cmd, 160, 30) else {
        return;
    };
    on_kid(&t, name, pid);
    // The kid stays selected under the filter; each key is refused in
    // turn (the y after it is no answer to anything).
    for k in ["k", "r", "a", "F9", "F7"] {
        t.keys(&[k]);
        t.wait_text("read-only (--read-only");
        t.keys(&["y"]);
        t.wait_for("the refusal replaced", |s| {
            !s.contains("read-only (--read-only")
        });
    }
    assert_eq!(nice_of(pid), 0);
    assert!(!kid.got("term").exists());
    assert_eq!(allowed(pid), allowed(std::process::id()));
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(
    a_watched_pid_that_exits_is_named,
    [Need::Tool("tmux", "-V")]
);
/// `-p PID` is named in the title, and once the process exits the title
/// says so, instead of the list blaming a filter (the ksoftirqd threads
/// `-p` keeps beside it stay listed).
fn a_watched_pid_that_exits_is_named() {
    if !common::tool_runs("tmux", "-V") {
        return common::skip("ui_control -p", "tmux not installed");
    }
    let mut kid = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = kid.id();
    let cmd = format!("{BIN} --no-bpf --no-config -d 0.3 -p {pid}");
    let Some(t) = Tmux::start("ntpexit", &cmd, 160, 20) else {
        let _ = kid.kill();
        let _ = kid.wait();
        return;
    };
    t.wait_for("the watched row", |s| {
        s.contains(&format!("· -p {pid}")) && s.contains(" sleep")
    });
    kid.kill().unwrap();
    kid.wait().unwrap();
    let s = t.wait_text(&format!("· -p {pid} (PID {pid} has exited)"));
    assert!(!s.contains("Esc clears"), "{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
}

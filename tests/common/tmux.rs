//! The real binary in a real pseudo-terminal: a private tmux server per
//! test, driven by keys and checked by screen text.

use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server (own socket) with one session; killed on drop.
pub struct Tmux {
    sock: String,
}

impl Tmux {
    pub fn start(name: &str, cmd: &str, w: u16, h: u16) -> Option<Tmux> {
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

    pub fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.sock, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("running tmux")
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "e2e"]).stdout)
            .into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    pub fn literal(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "e2e", "-l", "--", text])
                .status
                .success()
        );
    }

    pub fn resize(&self, w: u16, h: u16) {
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

    pub fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "-t", "e2e", f]).stdout)
            .trim()
            .to_string()
    }

    /// Waits until `pred` holds for the screen; panics with the screen if not.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
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

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// nettop's PID: the only child of the pane's shell while it runs.
    pub fn nettop_pid(&self) -> u32 {
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
    pub fn assert_restored(&self, code: i32) {
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

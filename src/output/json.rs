//! `--json`: one JSON object per frame, one line each, so a stream can be
//! consumed with `jq -c` or line by line. The object is the [`Frame`] itself
//! (the same contract every front end renders), with task rows restricted to
//! the `-p` processes when given. Task rows carry `ppid`, and process rows
//! `cmdline` (the arguments as a list, never joined: an argument may hold
//! spaces), so a consumer can rebuild the process forest and show what
//! `top -c` shows without reading /proc itself.

use crate::model::frame::Frame;

/// Serialises one frame on a single line (no trailing newline).
pub fn render_json(frame: &Frame, pids: &[u32]) -> serde_json::Result<String> {
    if pids.is_empty() {
        return serde_json::to_string(frame);
    }
    let mut f = frame.clone();
    f.processes.retain(|t| pids.contains(&t.pid));
    f.threads.retain(|t| pids.contains(&t.pid));
    serde_json::to_string(&f)
}

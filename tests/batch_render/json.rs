//! JSON rendering: one line per frame, the PID filter, snapshots.

use nettop::model::frame::Frame;
use nettop::output::json::render_json;

use crate::busy_host::frame;
use crate::in_snapshots;

#[test]
fn json_is_one_line_frame_filtered_by_pid() {
    let f = frame(true);
    let line = render_json(&f, &[3100]).unwrap();
    assert!(!line.contains('\n'));
    let back: Frame = serde_json::from_str(&line).unwrap();
    assert_eq!(
        back.processes.iter().map(|p| p.pid).collect::<Vec<_>>(),
        vec![3100]
    );
    assert!(back.threads.iter().all(|t| t.pid == 3100) && !back.threads.is_empty());
    // Everything else is the whole frame (serde_json's parser may round the
    // last digit of a float, so compare what the renderer printed).
    assert_eq!(back.cpus.len(), f.cpus.len());
    let all = render_json(&f, &[]).unwrap();
    assert_eq!(all, serde_json::to_string(&f).unwrap());
    let all: Frame = serde_json::from_str(&all).unwrap();
    assert_eq!(
        (all.processes.len(), all.threads.len()),
        (f.processes.len(), f.threads.len())
    );
}

#[test]
fn json_snapshots() {
    for (bpf, name) in [
        (true, "batch_json_busy_2socket"),
        (false, "batch_json_proc_only"),
    ] {
        let mut v: serde_json::Value =
            serde_json::from_str(&render_json(&frame(bpf), &[2001]).unwrap()).unwrap();
        // Thread rows duplicate the process rows' shape; keep the snapshot readable.
        v["threads"] = serde_json::Value::Array(vec![]);
        in_snapshots(|| insta::assert_json_snapshot!(name, v));
    }
}

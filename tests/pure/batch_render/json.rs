//! JSON rendering: one line per frame, the PID filter, snapshots.

use nettop::model::frame::Frame;
use nettop::output::json::render_json;

use crate::batch_render::busy_host::frame;
use crate::batch_render::in_snapshots;

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

/// Task rows carry their parent and process rows their command line, as
/// a list of arguments (one of them holding spaces): a consumer rebuilds
/// the process forest and `top -c`'s command from the JSON alone. Thread
/// rows name their parent too, and leave the command line to their process.
#[test]
fn json_rows_carry_parent_and_command_line() {
    use crate::batch_render::busy_host::{host, sample};
    let argv = ["/usr/bin/dataplane", "--config", "/etc/dp/site a.toml"];
    let (mut prev, mut cur) = (sample(false, true), sample(true, true));
    for s in [&mut prev, &mut cur] {
        for t in s.tasks.iter_mut().filter(|t| t.tgid == 2001) {
            t.ppid = 812;
            if t.tid == t.tgid {
                t.cmdline = argv.iter().map(|a| a.to_string()).collect();
            }
        }
    }
    let f = nettop::model::compute(&host(), &prev, &cur);
    let v: serde_json::Value = serde_json::from_str(&render_json(&f, &[2001]).unwrap()).unwrap();
    let p = &v["processes"][0];
    assert_eq!(p["pid"], 2001);
    assert_eq!(p["ppid"], 812);
    assert_eq!(p["cmdline"], serde_json::json!(argv));
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 3);
    for t in threads {
        assert_eq!(
            (&t["ppid"], &t["cmdline"]),
            (&serde_json::json!(812), &serde_json::json!([]))
        );
    }
}

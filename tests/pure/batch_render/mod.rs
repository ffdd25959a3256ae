//! Batch text and JSON rendering of deterministic frames, snapshotted, and
//! the `nettop -b` binary end to end (fixture sysroot, closed pipe, live BPF).
//!
//! The frames come from the real model ([`nettop::model::compute`]) over
//! synthetic samples of a busy two-socket, 8-CPU host: NET_RX steered onto
//! CPU 2 where a pinned data-plane worker runs, ksoftirqd/6 saturated by a
//! second queue, CPU 7 offline. CLK_TCK 100, interval 1 s.
//!
//! One test binary: `busy_host` builds the frames, `text` and `json` render
//! them, `cli` runs the binary.

mod busy_host;
mod cli;
mod json;
mod text;

/// Snapshots live in the crate's `snapshots/`, named by the test alone.
fn in_snapshots(check: impl FnOnce()) {
    insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"), prepend_module_to_snapshot => false}, {
        check();
    });
}

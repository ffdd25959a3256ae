//! The tests that need nothing of the machine: fixtures through
//! `--sysroot`, synthetic samples, rendering snapshots, the README and docs
//! against the code, and the binary run without BPF. One binary with the
//! standard harness; a file that also has tests needing root, a terminal or
//! a tool registers those as cases of another tier (`case!`), which
//! includes the file too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod batch_render;
mod bounded_reads;
mod cgroup_fixtures;
mod columns_readme;
mod config_readme;
mod cost_unknown;
mod docs_readme;
mod export_openmetrics;
mod fleet;
mod hostile_cli;
mod hostile_files;
mod hostile_recordings;
mod hostile_runtime;
mod hostile_serve;
mod k8s_manifests;
mod keys_readme;
mod layers;
mod man_page;
mod metrics_cli;
mod metrics_series;
mod model_compute;
mod packaging;
mod pinning_cli;
mod pinning_fixtures;
mod plan_fixtures;
mod procfs_fixtures;
mod record_fuzz;
mod record_golden;
mod record_roundtrip;
mod replay_window;
mod sanitize;
mod steering_fixtures;
mod ui_detail_render;
mod ui_forest;
mod ui_keys;
mod ui_meters;
mod ui_render;
mod ui_schemes;
mod users_nss;

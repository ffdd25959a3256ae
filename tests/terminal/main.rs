//! The real binary in a real terminal (tmux): keys, screens, signals, the
//! terminal restored. Each says what it needs (`case!`); see `common::tier`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod plan_tui;
mod ui_config;
mod ui_control;
mod ui_e2e;

// Files of the pure tier with cases of this one.
#[allow(dead_code, unused_imports)]
#[path = "../pure/ui_meters.rs"]
mod ui_meters;

fn main() -> std::process::ExitCode {
    common::tier::main(common::tier::Threads::Default)
}

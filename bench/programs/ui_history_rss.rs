//! What the TUI's sparkline history costs in memory (bench/ui_history_rss.sh):
//! `ui_history_rss on|off busy|idle [THREADS] [FRAMES]` feeds an App with
//! the thread list on FRAMES frames (default 300, a full history) of one
//! process with THREADS threads (default 30,000), each frame through
//! `App::show_frame` as the TUI does, then prints the peak RSS (VmHWM) and
//! what the history holds. `busy` threads all have non-zero figures (every
//! ring allocated, the worst case); `idle` ones are all zero (no ring
//! allocated).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::ExitCode;

use nettop::ui::fixtures;
use nettop::ui::history::History;
use nettop::ui::state::{App, Options, Theme};

fn status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?")
        .to_string()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(hist), Some(load)) = (args.first(), args.get(1)) else {
        eprintln!("usage: ui_history_rss on|off busy|idle [THREADS] [FRAMES]");
        return ExitCode::from(2);
    };
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30_000);
    let frames: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(300);
    let mut base = fixtures::one_process_threads(n);
    if load == "idle" {
        for t in base.threads.iter_mut().chain(base.processes.iter_mut()) {
            t.true_pct = 0.0;
            t.stolen_pct = 0.0;
            t.softirq_stolen_pct = Default::default();
        }
    }
    let mut app = App::new(Options {
        threads: true,
        theme: Theme::mono(),
        width: 200,
        height: 50,
        ..Options::default()
    });
    if hist == "off" {
        app.history = History::new(0);
    }
    let start = std::time::Instant::now();
    for i in 0..frames {
        let mut f = base.clone();
        f.seq = i;
        f.unix_ms += i * 1000;
        app.show_frame(f);
    }
    println!(
        "history={hist} load={load} threads={n} frames={frames} VmHWM_kB={} VmRSS_kB={} history_heap_bytes={} seconds={:.1}",
        status("VmHWM:"),
        status("VmRSS:"),
        app.history.heap_bytes(),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

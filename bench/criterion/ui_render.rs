//! One frame of the Processes view with 5,000 tasks on a TestBackend (the
//! issue's budget is < 2 ms), plus the per-Frame ingest (sort/filter) cost;
//! and a host with 30,000 threads in one process, drawn with threads on
//! (budget: rendering a frame <= 10 ms); and that host's whole TUI frame
//! (ingest, history, draw) with the sparkline history full.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nettop::ui::state::{App, Options};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app(w: u16, h: u16) -> App {
    let mut a = App::new(Options {
        width: w,
        height: h,
        ..Options::default()
    });
    a.add_users(fixtures::users());
    a.push_frame(fixtures::many_tasks(5000));
    a
}

fn bench(c: &mut Criterion) {
    for (w, h) in [(120u16, 40u16), (200, 50), (250, 80)] {
        let a = app(w, h);
        assert_eq!(a.rows.len(), 5000);
        let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
        c.bench_function(&format!("processes_5000_tasks_draw_{w}x{h}"), |b| {
            b.iter(|| {
                term.draw(|f| render::draw(f, &a)).expect("draw");
            })
        });
    }
    let mut a = app(120, 40);
    let frame = fixtures::many_tasks(5000);
    c.bench_function("processes_5000_tasks_ingest_frame", |b| {
        b.iter(|| a.push_frame(frame.clone()))
    });

    // 30,000 threads of one process (plus the host's other processes), the
    // thread list on: what a frame costs the UI thread when it arrives
    // (ingest: sort and filter) and when it is drawn.
    let threads = fixtures::one_process_threads(30_000);
    let mut a = App::new(Options {
        threads: true,
        width: 200,
        height: 50,
        ..Options::default()
    });
    a.push_frame(threads.clone());
    assert_eq!(a.rows.len(), 30_000);
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("test backend");
    c.bench_function("threads_30000_draw_200x50", |b| {
        b.iter(|| {
            term.draw(|f| render::draw(f, &a)).expect("draw");
        })
    });
    c.bench_function("threads_30000_ingest_frame", |b| {
        b.iter_batched(
            || threads.clone(),
            |f| a.push_frame(f),
            BatchSize::LargeInput,
        )
    });
}

/// One whole TUI frame at 30,000 threads with the history on and full
/// (every ring holds HISTORY_LEN frames): the frame arrives
/// (`App::show_frame`: history push, rebuild) and is drawn with the
/// STOLEN HIST column, or with the detail pane open on the process.
/// Budget: 10 ms, with the header meters on. The same without history,
/// and with nettop's summary line as the only meter, for the differences.
fn history_bench(c: &mut Criterion) {
    use nettop::output::columns::ProcColumn;
    use nettop::ui::history::{HISTORY_LEN, History};
    let frame = fixtures::one_process_threads(30_000);
    let mut h = History::default();
    for _ in 0..HISTORY_LEN {
        h.push(&frame);
    }
    c.bench_function("threads_30000_history_push", |b| b.iter(|| h.push(&frame)));
    // The header meters are on (htop's full header) but in the `_brief`
    // run, which draws nettop's summary line alone: the difference is
    // what the meters cost a frame.
    for (name, history, detail, brief) in [
        ("threads_30000_frame_history_full", true, false, false),
        ("threads_30000_frame_history_full_brief", true, false, true),
        (
            "threads_30000_frame_history_full_detail_pane",
            true,
            true,
            false,
        ),
        ("threads_30000_frame_no_history", false, false, false),
    ] {
        let mut a = App::new(Options {
            threads: true,
            width: 200,
            height: 50,
            ..Options::default()
        });
        if brief {
            a.meters.mode = nettop::ui::meters::HeaderMode::Brief;
        }
        a.columns.push(ProcColumn::Trend);
        if !history {
            a.history = History::new(0);
        }
        for _ in 0..HISTORY_LEN {
            a.history.push(&frame);
        }
        a.push_frame(frame.clone());
        if detail {
            a.detail = Some(4242);
        }
        a.rebuild();
        assert_eq!(a.rows.len(), 30_000);
        assert_eq!(a.history.frames(), if history { HISTORY_LEN } else { 0 });
        let mut term = Terminal::new(TestBackend::new(200, 50)).expect("test backend");
        // The frame is cloned outside the timing: the live TUI is handed
        // each frame by move from its data thread, never a copy.
        c.bench_function(name, |b| {
            b.iter_batched(
                || frame.clone(),
                |f| {
                    a.show_frame(f);
                    term.draw(|f| render::draw(f, &a)).expect("draw");
                },
                BatchSize::LargeInput,
            )
        });
    }
}

/// The header meters alone: the layout (asked for on every viewport
/// question) and a frame of the busy 16-CPU host drawn at 200x50 with the
/// full header and with nettop's summary line alone.
fn meters_bench(c: &mut Criterion) {
    use nettop::ui::meters::{self, HeaderMode, MeterConfig};
    let frame = fixtures::busy_host();
    let cfg = MeterConfig::default();
    c.bench_function("header_plan_200x50_16_cpus", |b| {
        b.iter(|| meters::layout::plan(&cfg, &meters::shape(Some(&frame), 200, 50)))
    });
    for mode in [HeaderMode::Full, HeaderMode::Brief] {
        let mut a = App::new(Options {
            width: 200,
            height: 50,
            ..Options::default()
        });
        a.meters.mode = mode;
        a.push_frame(frame.clone());
        let mut term = Terminal::new(TestBackend::new(200, 50)).expect("test backend");
        c.bench_function(
            &format!("busy_host_draw_200x50_{}_header", mode.name()),
            |b| {
                b.iter(|| {
                    term.draw(|f| render::draw(f, &a)).expect("draw");
                })
            },
        );
    }
}

criterion_group!(benches, bench, history_bench, meters_bench);
criterion_main!(benches);

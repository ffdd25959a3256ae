//! One frame of the Processes view with 5,000 tasks on a TestBackend (the
//! issue's budget is < 2 ms), plus the per-Frame ingest (sort/filter) cost;
//! and a host with 30,000 threads in one process, drawn with threads on
//! (budget: rendering a frame <= 10 ms); and that host's whole TUI frame
//! (ingest, history, draw) with the sparkline history full.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nettop::ui::app::{App, Options};
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
/// Budget: 10 ms. The same without history, for the difference.
fn history_bench(c: &mut Criterion) {
    use nettop::output::columns::ProcColumn;
    use nettop::ui::history::{HISTORY_LEN, History};
    let frame = fixtures::one_process_threads(30_000);
    let mut h = History::default();
    for _ in 0..HISTORY_LEN {
        h.push(&frame);
    }
    c.bench_function("threads_30000_history_push", |b| b.iter(|| h.push(&frame)));
    for (name, history, detail) in [
        ("threads_30000_frame_history_full", true, false),
        ("threads_30000_frame_history_full_detail_pane", true, true),
        ("threads_30000_frame_no_history", false, false),
    ] {
        let mut a = App::new(Options {
            threads: true,
            width: 200,
            height: 50,
            ..Options::default()
        });
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

criterion_group!(benches, bench, history_bench);
criterion_main!(benches);

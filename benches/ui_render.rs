//! One frame of the Processes view with 5,000 tasks on a TestBackend (the
//! issue's budget is < 2 ms), plus the per-Frame ingest (sort/filter) cost;
//! and a host with 30,000 threads in one process, drawn with threads on
//! (budget: rendering a frame <= 10 ms).

use criterion::{Criterion, criterion_group, criterion_main};
use nettop::ui::app::{App, Options, Theme};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app(w: u16, h: u16) -> App {
    let mut a = App::new(Options {
        delay: 1.0,
        threads: false,
        cmdline: false,
        forest: false,
        theme: Theme::default(),
        width: w,
        height: h,
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
    let mut threads = fixtures::many_tasks(30_000);
    for t in threads.processes.iter_mut() {
        t.pid = 4242;
        t.is_process = false;
    }
    threads.threads = std::mem::take(&mut threads.processes);
    let mut leader = threads.threads[0].clone();
    leader.tid = 4242;
    leader.is_process = true;
    leader.nr_threads = 30_000;
    threads.processes = vec![leader];
    let mut a = App::new(Options {
        delay: 1.0,
        threads: true,
        cmdline: false,
        forest: false,
        theme: Theme::default(),
        width: 200,
        height: 50,
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
        b.iter(|| a.push_frame(threads.clone()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

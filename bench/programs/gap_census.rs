//! Gap census: what interrupts a spinning thread, and what each
//! interruption costs beyond its traced time. The instrument behind
//! `nettop --calibrate`, usable under any load (root; loads nettop's BPF
//! collector), e.g. to check that an RPS interruption (IPI + NET_RX in its
//! tail) costs about what a pure IPI costs untraced.
//!
//! ```text
//! gap_census [--cpu N] [--ipi-from CPU [--rps]] [--period-us N] [--ms N] [--windows N]
//!            [--pause-ms N] [--per-window]
//! ```
//! Without `--ipi-from` nothing is induced: the census shows whatever load
//! already hits CPU N. `--rps` alternates the IPIs with loopback RPS
//! datagrams (IPI + NET_RX), as the calibration does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use nettop::calibrate::{census, spin};
use nettop::collector::bpf::{BpfCollector, BpfOptions};

struct Args {
    cpu: u32,
    ipi_from: Option<u32>,
    rps: bool,
    period: Duration,
    window: Duration,
    windows: u32,
    /// Idle pause between windows, to see how the cost drifts over time.
    pause: Duration,
    per_window: bool,
    /// IPIs in even windows only: the odd ones measure what the CPU loses
    /// without them.
    alternate: bool,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        cpu: 1,
        ipi_from: None,
        rps: false,
        period: Duration::from_micros(20),
        window: Duration::from_millis(75),
        windows: 4,
        pause: Duration::ZERO,
        per_window: false,
        alternate: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--rps" {
            a.rps = true;
            continue;
        }
        if flag == "--alternate" {
            a.alternate = true;
            continue;
        }
        if flag == "--per-window" {
            a.per_window = true;
            continue;
        }
        let v: u64 = it
            .next()
            .ok_or_else(|| anyhow!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag}: not a number"))?;
        match flag.as_str() {
            "--cpu" => a.cpu = u32::try_from(v)?,
            "--ipi-from" => a.ipi_from = Some(u32::try_from(v)?),
            "--period-us" => a.period = Duration::from_micros(v),
            "--ms" => a.window = Duration::from_millis(v),
            "--windows" => a.windows = u32::try_from(v)?,
            "--pause-ms" => a.pause = Duration::from_millis(v),
            _ => return Err(anyhow!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

fn run() -> Result<()> {
    let a = parse()?;
    let bpf = BpfCollector::open(&BpfOptions::default())?;
    if a.ipi_from.is_some() {
        spin::register_ipi_sender()?;
    }
    let probe = bpf.probe(a.cpu);
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let sched = spin::Schedule {
        start: std::time::Instant::now() + Duration::from_millis(5),
        windows: a.windows,
        window: a.window,
        // The spinner's step measurement (2 ms) before each window, then the
        // pause.
        every: a.window + Duration::from_millis(3) + a.pause,
        quiet_odd: a.alternate,
        // Every induced window alike: the census of one kind of load.
        classes_window: None,
        classes_len: a.window,
    };
    let windows = std::thread::scope(|s| -> Result<Vec<spin::Window>> {
        let sender = a.ipi_from.map(|from| {
            s.spawn(move || -> Result<spin::Sent> {
                spin::pin_to_cpu(from)?;
                spin::send_ipis(stop, &sched, a.period, a.rps.then_some(a.cpu))
            })
        });
        let spinner = s.spawn(|| -> Result<Vec<spin::Window>> {
            spin::pin_to_cpu(a.cpu)?;
            Ok(sched.spin(&probe, a.cpu))
        });
        let w = spinner.join().map_err(|_| anyhow!("spinner panicked"));
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = sender {
            let n = h.join().map_err(|_| anyhow!("sender panicked"))??;
            println!(
                "sent: {} membarrier IPIs, {} loopback RPS datagrams{}",
                n.ipis,
                n.rps,
                n.rps_error.map(|e| format!(" ({e})")).unwrap_or_default()
            );
        }
        w?
    })?;
    if a.per_window {
        println!("window  ipi samples  hidden ns  median ns  traced ns");
        for (i, w) in windows.iter().enumerate() {
            let e = &census::census(&w.gaps).single[2];
            println!(
                "{i:>6} {:>12} {:>10.0} {:>10.0} {:>10.0}",
                e.samples, e.hidden_ns, e.median_ns, e.traced_ns
            );
        }
    }
    let wall: u64 = windows.iter().map(|w| w.wall_ns).sum();
    let c = census::census(windows.iter().flat_map(|w| w.gaps.iter()));
    if a.alternate {
        // The calibration's own differential measure, against the
        // single-gap costs in the table below.
        let cost = c.single.each_ref().map(|e| e.hidden_ns);
        let softirq = if c.with_softirq[2].samples > 0 {
            c.with_softirq[2].hidden_ns - c.single[2].hidden_ns
        } else {
            0.0
        };
        let r = census::marginal_ratio(&windows, cost, softirq)
            .ok_or_else(|| anyhow!("--alternate: no pair of windows with enough IPIs"))?;
        println!("marginal cost: {r:.3}× the single-gap costs (median over pairs)");
    }
    println!(
        "CPU {}: {} ms spun, {} gaps, {} with nothing traced ({:.2} % of the time), {} compound, {} context switches",
        a.cpu,
        wall / 1_000_000,
        c.gaps,
        c.untraced_gaps,
        100.0 * c.untraced_ns as f64 / wall.max(1) as f64,
        c.compound_gaps,
        windows.iter().map(|w| w.ctx_switches).sum::<u64>()
    );
    println!("class    samples outliers  traced ns  hidden ns  median ns  spread ns   per s");
    let rows = census::CLASSES
        .iter()
        .map(|n| n.to_string())
        .zip(&c.single)
        .chain(
            census::CLASSES
                .iter()
                .map(|n| format!("{n}+si"))
                .zip(&c.with_softirq),
        );
    for (name, e) in rows {
        if e.samples == 0 {
            continue;
        }
        println!(
            "{name:<8} {:>7} {:>8} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>7.0}",
            e.samples,
            e.outliers,
            e.traced_ns,
            e.hidden_ns,
            e.median_ns,
            e.spread_ns,
            (e.samples + e.outliers) as f64 * 1e9 / wall.max(1) as f64
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gap_census: {e:#}");
            ExitCode::from(2)
        }
    }
}

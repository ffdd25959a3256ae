//! `nettop --pinning-check`: lint this host, a saved topology or a
//! recording (its topology, judged with the stolen time it measured).

use std::collections::BTreeMap;
use std::io::Write;

use crate::app::cli::{Cli, Format};
use crate::app::options;
use crate::pinning::{self, Evidence};
use crate::sys::sanitize::Untrusted;
use crate::topology::HostTopology;

/// Recorded intervals averaged into [`Evidence`]: the last ten minutes at
/// the default 1 s interval, so a day-long recording still lints in ~0.1 s.
pub const RECORDED_EVIDENCE_FRAMES: usize = 600;

/// The configuration and measurements of a `nettop --record` file: the
/// newest topology it holds, and as evidence each thread's stolen share
/// averaged over the last [`RECORDED_EVIDENCE_FRAMES`] intervals (a
/// recording is the incident's evidence; one interval could be the quiet
/// one).
pub fn load_recorded(path: &std::path::Path) -> anyhow::Result<(HostTopology, Evidence)> {
    let rec = crate::record::Recording::open(path)?;
    let blob = rec.topology()?.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: the recording holds no topology (written by a nettop without it, or the \
             topology could not be read while recording); run --pinning-check on the recorded host",
            path.display()
        )
    })?;
    let mut topo: HostTopology = serde_json::from_slice(&blob).map_err(|e| {
        anyhow::anyhow!(
            "{}: topology record is not a topology this nettop reads: {e}",
            path.display()
        )
    })?;
    topo.sanitize();
    topo.source = format!(
        "recording {} (host {})",
        path.display(),
        rec.host().hostname
    );
    let mut sum: BTreeMap<u32, (f64, u32)> = BTreeMap::new();
    let from = rec.len().saturating_sub(RECORDED_EVIDENCE_FRAMES + 1);
    // Damaged samples only thin the evidence; the recording's own warnings
    // are for --replay to report.
    crate::record::walk::frames(
        &rec,
        from,
        |_, f| {
            for t in f.finest_rows() {
                let e = sum.entry(t.tid).or_default();
                e.0 += t.stolen_pct;
                e.1 += 1;
            }
            Ok(std::ops::ControlFlow::Continue(()))
        },
        &mut |_| {},
    )?;
    let stolen_pct = sum
        .into_iter()
        .map(|(tid, (s, n))| (tid, s / f64::from(n.max(1))))
        .collect();
    Ok((topo, Evidence { stolen_pct }))
}

/// Threads on the host from which the task sampler lists them instead of
/// a /proc walk: where the two cost the same (see `run`).
const SAMPLER_FROM_THREADS: usize = 2_000;

/// `nettop --pinning-check`: 0 clean, 1 findings at/above `--fail-on`;
/// errors propagate and main exits 2. With `--replay`, a recording (its
/// topology and measured stolen time) or a saved topology JSON.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    let (topo, evidence) = match &cli.replay {
        Some(file) if crate::record::is_recording(file) => load_recorded(file)?,
        Some(file) => (pinning::load_saved(file)?, Evidence::default()),
        None => {
            // Loading the task sampler costs ~35 ms of CPU (verifier, BTF);
            // walking /proc ~25 µs per thread. On a host with many threads
            // the sampler's list is far cheaper (0.29 s against 0.77 s of
            // CPU at 30,000 threads, BENCHMARKS.md); without BPF, or with
            // few threads, the walk it is.
            let mut opts = options::topology(cli);
            if crate::collector::thread_count(&opts.sysroot) >= SAMPLER_FROM_THREADS {
                opts.known_threads = crate::collector::list_threads(&opts.sysroot).ok();
            }
            (crate::topology::load(&opts)?, Evidence::default())
        }
    };
    let report = pinning::check(&topo, &evidence);
    let out = match cli.format {
        Format::Text => pinning::render_text(&report),
        // `--format sh` is refused for the lint by `Cli::check`.
        Format::Json | Format::Sh => pinning::render_json(&report) + "\n",
    };
    // Not print!: it panics (exit 101) on a closed pipe or a full disk.
    // A report that could not be written is "could not check": exit 2.
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the report to stdout: {e}"))?;
    Ok(report.exit_code(cli.fail_on.severity()))
}

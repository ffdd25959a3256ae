//! `nettop --plan [--apply [--plan-file PLAN]] [--measure D]` and `nettop --revert FILE`:
//! the planner wired to the live collector, the revert file and the user.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::app::cli::{Cli, Format};
use crate::app::live::LiveFrames;
use crate::app::options;
use crate::pinning::{self, Evidence};
use crate::plan::revert::{self, RevertFile};
use crate::plan::{self, Load, Plan, journal, measure, steps};

/// The load the planner spreads interrupts by: long enough to see a
/// pinned thread's share and NET_RX per CPU, short enough for a command.
const LOAD_WINDOW: Duration = Duration::from_secs(1);

fn out(text: &str) -> anyhow::Result<()> {
    // Not print!: it panics on a closed pipe or a full disk.
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .map_err(|e| anyhow::anyhow!("cannot write to stdout: {e}"))
}

/// `--plan`: 0 printed (or applied and kept), 1 applied and reverted
/// automatically; errors exit 2.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    if let Some(file) = &cli.revert {
        return run_revert(cli, file);
    }
    let root = options::sysroot(cli);
    let applying = cli.apply;
    if applying && !root.is_live() {
        bail!("--apply writes this host's IRQ and RPS files: it cannot be used with --sysroot");
    }
    let dir = options::plan_state_dir(cli);
    // Held from before the plan reads the host until the verdict: another
    // apply's changes are never this one's "previous" values.
    let lock = if applying {
        prepare(&dir, cli.dry_run)?
    } else {
        if root.is_live() {
            warn_unfinished(&dir, None);
        }
        None
    };
    let mut topo = crate::topology::load(&options::topology(cli))?;
    if !cli.nics.is_empty() {
        plan::only_nics(&mut topo, &cli.nics)?;
    }
    let mut ev = Evidence::default();
    let mut load = Load::default();
    let mut frames = None;
    if root.is_live() {
        // Thread rows: the victims and the busy pinned threads are threads.
        let mut c = cli.clone();
        c.threads = true;
        match LiveFrames::open(&c, false) {
            Ok(mut lf) => {
                std::thread::sleep(LOAD_WINDOW);
                let f = lf.next_frame()?;
                load = measure::observe(&f, &mut topo, &mut ev);
                frames = Some(lf);
            }
            Err(e) if !applying => {
                log::warn!("no load measurement ({e:#}): planning from the configuration only");
            }
            Err(e) => return Err(e.context("--apply measures before and after with the collector")),
        }
    }
    let report = pinning::check(&topo, &ev);
    let plan = match &cli.plan_file {
        Some(p) => plan::load_saved(p)?,
        None => plan::compute(&topo, &report, &ev, &load),
    };
    // --apply --format json prints one report (plan included) at the end.
    if !(applying && cli.format == Format::Json) {
        out(&match cli.format {
            Format::Text => plan::render_text(&plan),
            Format::Json => plan::render_json(&plan) + "\n",
            Format::Sh => plan::render_sh(&plan),
        })?;
    }
    match frames {
        Some(lf) if applying => run_apply(cli, &plan, lf, &dir, lock),
        _ => Ok(0),
    }
}

/// Before an apply: the checks the real run makes, in a dry run too (the
/// state directory, its key, the lock, an earlier unfinished apply), and
/// for the real run the lock itself.
fn prepare(dir: &Path, dry_run: bool) -> anyhow::Result<Option<journal::Lock>> {
    if dry_run {
        revert::check_writable(dir)?;
        journal::refuse_if_busy(dir)?;
        journal::clear_for_apply(dir, true)?;
        return Ok(None);
    }
    revert::check_state_dir(dir, true)?;
    let lock = journal::lock(dir)?;
    journal::clear_for_apply(dir, false)?;
    Ok(Some(lock))
}

/// Says (as a warning) which earlier applies did not finish, but `except`.
fn warn_unfinished(dir: &Path, except: Option<&Path>) {
    let scan = journal::unfinished(dir);
    if scan.busy {
        log::warn!(
            "an apply or revert is running on this host now (it holds the lock in {})",
            dir.display()
        );
    }
    for u in scan.unfinished {
        if except != Some(u.file.as_path()) {
            log::warn!("{}", u.summary(dir));
        }
    }
}

/// Asks on the terminal unless `--yes`; without a terminal, refuses.
fn confirm(cli: &Cli, what: &str) -> anyhow::Result<()> {
    if cli.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("not confirmed ({what}): stdin is not a terminal to ask on; pass --yes");
    }
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "{what}? [y/N] ");
    let _ = e.flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        bail!("not confirmed: nothing written")
    }
}

fn run_apply(
    cli: &Cli,
    plan: &Plan,
    mut lf: LiveFrames,
    dir: &Path,
    _lock: Option<journal::Lock>,
) -> anyhow::Result<u8> {
    let json = cli.format == Format::Json;
    // Text progress as it happens; JSON holds it for the report. A closed
    // stdout must not stop the run half way (the revert below still runs).
    let say = |s: &str| {
        if !json {
            let _ = out(s);
        }
    };
    let entries = steps::entries(plan)?;
    if entries.is_empty() {
        out(if json {
            "{\"schema\":\"nettop.apply/1\",\"nothing_to_apply\":true}\n"
        } else {
            "\nnothing to apply\n"
        })?;
        return Ok(0);
    }
    if cli.dry_run {
        let lines: Vec<String> = entries.iter().map(steps::entry_line).collect();
        out(&if json {
            serde_json::json!({ "schema": measure::APPLY_SCHEMA, "dry_run": lines }).to_string()
                + "\n"
        } else {
            format!("\ndry run: --apply would write\n  {}\n", lines.join("\n  "))
        })?;
        return Ok(0);
    }
    confirm(
        cli,
        &format!("apply {} change(s) to this host", entries.len()),
    )?;
    // From here on SIGINT/SIGTERM/SIGHUP end the run through the revert:
    // kernel state is restored on every exit path, as the terminal is.
    let stop = crate::sys::signals::stop_flag()?;
    let rf = RevertFile::new(entries);
    let path = revert::write(dir, &rf)?;
    let shown = path.display().to_string();
    let undo = journal::undo_command(dir, &path);
    // Printed at once in both formats: whatever happens next, the way back
    // is known.
    if json {
        log::info!("revert file: {shown}");
    }
    say(&format!("\nrevert file: {shown}\n"));
    let window = cli.measure.unwrap_or(measure::DEFAULT_WINDOW);
    let before = measure_window(&mut lf, window, plan, &stop);
    let Ok(Some(before)) = before else {
        journal::settle(&path, journal::Outcome::NothingWritten);
        let why = before
            .err()
            .map_or("interrupted".into(), |e| format!("{e:#}"));
        bail!("{why} before anything was written; revert file {shown}");
    };
    // Whatever stops the run from here to the verdict (an error, a
    // signal, a panic) drops `armed`, which restores what was written.
    let mut armed = steps::Armed::new(rf, &path);
    let written = armed
        .write_all(|e| say(&format!("wrote {}\n", steps::entry_line(e))))
        .with_context(|| format!("revert file {shown}"))?;
    let after = match measure_window(&mut lf, window, plan, &stop) {
        Ok(Some(a)) => a,
        other => {
            let why = match other {
                Err(e) => format!("measuring after the change failed ({e:#})"),
                _ => "interrupted while measuring".to_string(),
            };
            log::warn!("{why}: reverting from {shown}");
            let (lines, ok) = armed.restore();
            bail!(
                "{why}: {} ({}); revert file {shown}",
                if ok {
                    "reverted".to_string()
                } else {
                    format!("the revert FAILED for some files; retry with: {undo}")
                },
                lines.join("; ")
            );
        }
    };
    say(&format!("\n{}", measure::render_table(&before, &after)));
    let verdict = steps::conclude(plan, (&before, &after), armed, &shown);
    say(&format!("\n{}", verdict.text(&shown, &undo)));
    if json {
        let report = measure::ApplyReport {
            schema: measure::APPLY_SCHEMA.into(),
            plan: plan.clone(),
            revert_file: shown.clone(),
            written,
            before,
            after,
            worse: verdict.worse.clone(),
            reverted: verdict.reverted(),
            restored: verdict.restored.clone(),
        };
        out(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    }
    if !verdict.ok {
        bail!("the automatic revert failed for some files (see above); retry with: {undo}");
    }
    Ok(u8::from(verdict.reverted()))
}

/// One frame covering `window` from now; `None` when a stop signal came.
fn measure_window(
    lf: &mut LiveFrames,
    window: Duration,
    plan: &Plan,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<Option<measure::Measure>> {
    use std::sync::atomic::Ordering;
    lf.next_frame()?;
    let end = std::time::Instant::now() + window;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    Ok(Some(measure::Measure::of(&lf.next_frame()?, &plan.victims)))
}

/// `--revert FILE`: 0 restored; refusals and failures exit 2. All or
/// nothing: every entry is checked before the first write, in a dry run
/// too ([`revert::revert_all`]).
fn run_revert(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let dir = options::plan_state_dir(cli);
    let rf = revert::read(&dir, file)?;
    if cli.dry_run {
        journal::refuse_if_busy(&dir)?;
        let lines = revert::revert_all(&rf, true)?;
        out(&format!("dry run:\n  {}\n", lines.join("\n  ")))?;
        return Ok(0);
    }
    confirm(
        cli,
        &format!(
            "restore {} file(s) from {}",
            rf.entries.len(),
            file.display()
        ),
    )?;
    let _lock = journal::lock(&dir)?;
    let lines = revert::revert_all(&rf, false)?;
    journal::settle(file, journal::Outcome::RestoredByRevert);
    out(&format!("{}\n", lines.join("\n")))?;
    warn_unfinished(&dir, Some(file));
    Ok(0)
}

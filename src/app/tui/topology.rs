//! The TUI's topology thread: re-reads the topology (hwloc, NICs, IRQs,
//! thread placement) now and then and re-lints it with the stolen time the
//! live collector measured, off the UI thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::cli::Cli;
use crate::app::options;
use crate::pinning::Evidence;
use crate::plan::measure::Observed;
use crate::plan::{Load, Plan};
use crate::sys::ticker::Ticker;
use crate::topology::HostTopology;
use crate::ui::Msg;
use crate::ui::rows::detail::{self, Facts};
use crate::ui::rows::{LineKind, devices, pinning, topology};
use crate::ui::state::Extras;

/// How often the topology (threads' pinning, IRQ affinity) is re-read, at
/// the most.
const TOPOLOGY_REFRESH: Duration = Duration::from_secs(15);
/// The topology thread's share of one CPU, at the most. A scan reads every
/// thread's stat and affinity: most of a second of CPU at 30,000 threads,
/// which every 15 s would cost more than the collector itself. There it is
/// re-read less often instead, and the Pinning view says so.
const TOPOLOGY_CPU_SHARE: f64 = 0.01;

/// The wait before the next scan, given what the last one cost.
fn topology_refresh(scan_cpu: Duration) -> Duration {
    TOPOLOGY_REFRESH.max(scan_cpu.div_f64(TOPOLOGY_CPU_SHARE))
}

/// What the collector thread shares with the topology thread: the latest
/// frame's per-CPU load and per-thread CPU and stolen shares, so the live
/// lint judges with measurements and the plan `P` applies is the one
/// `--plan` would compute; and on request the task sampler's thread list,
/// so a re-check does not walk /proc for every thread's affinity.
#[derive(Default)]
pub(super) struct Shared {
    pub(super) observed: Observed,
    /// Set by the topology thread; the collector thread answers on its
    /// next frame by filling `threads`.
    pub(super) want_threads: bool,
    pub(super) threads: Option<Vec<crate::sample::RawTask>>,
}

pub(super) type SharedState = Arc<Mutex<Shared>>;

/// How long a re-check waits for the collector thread's thread list
/// before it walks /proc itself.
const THREADS_WAIT: Duration = Duration::from_millis(2500);

/// The sampler's thread list from the collector thread, or `None` (no
/// sampler, or it did not answer within [`THREADS_WAIT`]).
fn threads_from(shared: &SharedState) -> Option<Vec<crate::sample::RawTask>> {
    if let Ok(mut g) = shared.lock() {
        g.want_threads = true;
        g.threads = None;
    }
    let until = Instant::now() + THREADS_WAIT;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        let Ok(mut g) = shared.lock() else {
            return None;
        };
        if !g.want_threads {
            return g.threads.take();
        }
    }
    if let Ok(mut g) = shared.lock() {
        g.want_threads = false;
    }
    None
}

/// How long the first lint waits for the collector's first frame.
const FIRST_FRAME_WAIT: Duration = Duration::from_secs(3);

/// Waits until the collector thread has observed one frame (or
/// [`FIRST_FRAME_WAIT`] passed): a plan from the configuration alone would
/// know no busy thread and no NET_RX, and the next lint is 15 s away.
fn wait_first_frame(shared: &SharedState) {
    let until = Instant::now() + FIRST_FRAME_WAIT;
    while Instant::now() < until {
        match shared.lock() {
            Ok(g) if g.observed.load.measured.is_none() => {}
            _ => return,
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The Devices, Topology and Pinning views' data from one topology, linted
/// with `evidence` (live or recorded stolen time), the plan for it (spread
/// by `load`, for the devices `nics` names when it names any), and the
/// detail pane's facts from the same lint.
pub(super) fn topology_extras(
    t: &HostTopology,
    evidence: &Evidence,
    load: &Load,
    nics: &[String],
) -> (Extras, Facts) {
    let report = crate::pinning::check(t, evidence);
    let mut pin = pinning::lines(&report);
    let plan = if nics.is_empty() {
        Ok(crate::plan::compute(t, &report, evidence, load))
    } else {
        let mut only = t.clone();
        crate::plan::only_nics(&mut only, nics).map(|()| {
            let report = crate::pinning::check(&only, evidence);
            crate::plan::compute(&only, &report, evidence, load)
        })
    };
    pin.push((LineKind::Normal, String::new()));
    let plan = match plan {
        Ok(p) => {
            pin.extend(plan_lines(&p));
            Some(Box::new(p))
        }
        Err(e) => {
            pin.push((LineKind::Warn, format!("no plan: {e:#}")));
            None
        }
    };
    let extras = Extras {
        devices: Some(crate::model::devconf::DeviceConfigs::of(t)),
        topology: Some(topology::lines(t)),
        pinning: Some(pin),
        plan,
        cpu_interrupts: Some(devices::cpu_interrupts(t)),
    };
    (extras, detail::facts(t, &report))
}

/// The plan of `nettop --plan` under the findings: what to change as one
/// layout, and how to apply it with the before/after check.
fn plan_lines(plan: &Plan) -> Vec<(LineKind, String)> {
    let mut v = Vec::new();
    for (i, l) in crate::plan::render_text(plan).lines().enumerate() {
        let kind = if i == 0 {
            LineKind::Heading
        } else if l.starts_with("no good layout") {
            LineKind::Warn
        } else {
            LineKind::Normal
        };
        v.push((kind, l.to_string()));
    }
    if plan.applied().next().is_some() {
        v.push((
            LineKind::Note,
            "P applies it here (asks first): revert file, before/after measured, reverted \
             when worse; or nettop --plan --apply. Undo: nettop --revert FILE"
                .into(),
        ));
    }
    v
}

/// Sends what one topology gave: the views' extras, then the pane's facts
/// when there are any; `false` once the UI is gone.
pub(super) fn send_extras(tx: &Sender<Msg>, extras: Extras, facts: Option<Facts>) -> bool {
    tx.send(Msg::Extras(extras)).is_ok()
        && facts.is_none_or(|f| tx.send(Msg::Facts(Box::new(f))).is_ok())
}

/// Why the Topology and Pinning views have nothing to show.
pub(super) fn note_extras(kind: LineKind, text: String) -> Extras {
    let l = vec![(kind, text)];
    Extras {
        topology: Some(l.clone()),
        pinning: Some(l),
        devices: None,
        plan: None,
        cpu_interrupts: None,
    }
}

/// Loads the topology now and every [`TOPOLOGY_REFRESH`], sending the
/// Topology and Pinning views' lines. Failures become a note in the views.
/// `shared`: the collector thread's state and the flag `P` sets to ask
/// for a check now.
pub(super) fn topology_thread(
    cli: &Cli,
    shared: Option<(SharedState, Arc<AtomicBool>)>,
    tx: Sender<Msg>,
) {
    let (shared, recheck) = match shared {
        Some((s, r)) => (Some(s), r),
        None => (None, Arc::new(AtomicBool::new(false))),
    };
    let mut opts = options::topology(cli);
    let nics = cli.nics.clone();
    std::thread::spawn(move || {
        let mut ticker = Ticker::new(TOPOLOGY_REFRESH);
        if let Some(sh) = &shared {
            wait_first_frame(sh);
        }
        loop {
            opts.known_threads = shared.as_ref().and_then(threads_from);
            let cpu0 = crate::sys::clock::thread_cputime_ns();
            let (mut extras, facts) = match crate::topology::load(&opts) {
                Ok(mut t) => {
                    let obs = shared
                        .as_ref()
                        .and_then(|e| e.lock().ok().map(|g| g.observed.clone()))
                        .unwrap_or_default();
                    let mut ev = Evidence::default();
                    let load = obs.fold(&mut t, &mut ev);
                    let (extras, facts) = topology_extras(&t, &ev, &load, &nics);
                    (extras, Some(facts))
                }
                Err(e) => (
                    note_extras(LineKind::Warn, format!("topology unavailable: {e:#}")),
                    None,
                ),
            };
            let cpu =
                Duration::from_nanos(crate::sys::clock::thread_cputime_ns().saturating_sub(cpu0));
            let every = topology_refresh(cpu);
            if every > TOPOLOGY_REFRESH
                && let Some(p) = extras.pinning.as_mut()
            {
                p.insert(
                    0,
                    (
                        LineKind::Note,
                        format!(
                            "re-checked every {} s: one check of this host costs {:.2} s of CPU",
                            every.as_secs(),
                            cpu.as_secs_f64()
                        ),
                    ),
                );
            }
            ticker.set_period(every, Instant::now());
            if !send_extras(&tx, extras, facts) {
                return;
            }
            // Woken early by `P`; the thread ends when the UI is gone.
            ticker.sleep(&recheck, None);
            recheck.store(false, Ordering::Relaxed);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costly_topology_scan_is_repeated_less_often() {
        assert_eq!(
            topology_refresh(Duration::from_millis(20)),
            TOPOLOGY_REFRESH
        );
        assert_eq!(
            topology_refresh(Duration::from_millis(150)),
            TOPOLOGY_REFRESH
        );
        assert_eq!(
            topology_refresh(Duration::from_millis(900)),
            Duration::from_secs(90)
        );
    }

    #[test]
    fn the_pinning_view_shows_the_plan_under_the_findings() {
        let t = crate::topology::load(&crate::topology::LoadOptions::new(
            crate::sys::sysroot::Sysroot::new("tests/fixtures/machines/four_nic"),
            None,
            None,
        ))
        .unwrap();
        let (extras, _) = topology_extras(&t, &Default::default(), &Load::default(), &[]);
        let lines = extras.pinning.unwrap();
        let at = |p: &str| lines.iter().position(|(_, l)| l.contains(p));
        let findings = at("nettop pinning check").unwrap();
        let plan = at("nettop plan: 8 change(s), 6 written by --apply").unwrap();
        assert!(findings < plan);
        assert_eq!(lines[plan].0, LineKind::Heading);
        assert!(at("/proc/irq/123/smp_affinity_list: 22 -> 19").is_some_and(|i| i > plan));
        assert!(at("P applies it here").is_some());
        assert_eq!(extras.plan.map(|p| p.applied().count()), Some(6));
    }
}

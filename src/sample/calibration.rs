//! The calibration table as data: what `calibrate` measures, the cache and
//! recordings keep, and `model::hidden` charges with. Host facts
//! ([`super::HostInfo`]) carry it, so it lives with the sample schema.

use serde::{Deserialize, Serialize};

/// How a class's cost was obtained.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// From gaps holding exactly one interruption of this class.
    Measured,
    /// Not inducible (device interrupts, rare vectors) or too few clean
    /// samples: the IPI's cost, since entry, exit and APIC/VM-exit work are
    /// the same path for every vector; only the handler (traced) differs.
    SameAsIpi,
    /// Could not be measured here (the softirq cost needs a private network
    /// namespace, i.e. CAP_SYS_ADMIN): the softirq's extra is charged as 0.
    #[default]
    NotMeasured,
}

/// Calibrated cost of one interruption class.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ClassCost {
    pub basis: Basis,
    /// Interruptions the estimate rests on (0 unless measured).
    pub samples: u64,
    /// Mean traced handler time per interruption (measured classes only).
    pub traced_ns: f64,
    /// Mean untraced time per interruption: what HIDDEN~ charges.
    pub hidden_ns: f64,
    /// Half the interquartile range of the per-interruption hidden time.
    pub spread_ns: f64,
}

/// What a calibration is valid for: a different kernel, CPU, hypervisor,
/// boot or nettop (its own BPF programs are part of the hidden cost) means
/// measuring again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct CalibrationKey {
    /// `uname -r` and `uname -v`.
    pub kernel: String,
    pub kernel_build: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// "none", or what identifies the hypervisor (sysfs/DMI vendor).
    pub hypervisor: String,
    pub boot_id: String,
    /// nettop version and BPF attach mode ("0.1.0 tp_btf").
    pub nettop: String,
    /// The classes the table measures ([`Calibration::rows`]' names): a
    /// cache from a nettop with fewer classes is measured again. Older
    /// caches read as empty, which no current key equals.
    #[serde(default)]
    pub classes: String,
}

/// The value of [`CalibrationKey::classes`] this build writes.
pub fn class_key() -> String {
    [
        "device", "timer", "ipi", "other", "tlb", "resched", "softirq",
    ]
    .join(" ")
}

/// The calibration table: hidden cost per interruption class on this host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Calibration {
    pub key: CalibrationKey,
    /// When it was measured, ms since the epoch.
    pub measured_unix_ms: u64,
    /// Where this copy came from: "measured" (this run), "cache FILE".
    /// Recordings keep the value of the run that recorded.
    #[serde(default)]
    pub origin: String,
    /// CPU the spinner ran on, CPU the IPIs came from.
    pub cpu: u32,
    pub sender_cpu: u32,
    /// CPU time the calibration itself used (spinner + sender), and its
    /// wall-clock length.
    pub cost_cpu_ms: f64,
    pub wall_ms: f64,
    pub device: ClassCost,
    pub timer: ClassCost,
    pub ipi: ClassCost,
    pub other: ClassCost,
    /// A TLB shootdown: a call-function IPI whose handler flushed this
    /// CPU's TLB for another CPU (the flush, then the TLB refills the
    /// interrupted task pays). Tables from before this class read as not
    /// measured and charge the IPI's cost, as before.
    #[serde(default = "ClassCost::not_measured")]
    pub tlb: ClassCost,
    /// A reschedule IPI (scheduler_ipi, then the scheduler on the way out).
    #[serde(default = "ClassCost::not_measured")]
    pub resched: ClassCost,
    /// Extra untraced cost of one softirq run in an interrupt's tail (the
    /// entry and exit around the softirq tracepoints): an RPS IPI with its
    /// NET_RX costs the IPI plus this. Charged per stolen softirq run; the
    /// classes above are measured from gaps without a softirq.
    #[serde(default = "ClassCost::not_measured")]
    pub softirq: ClassCost,
    /// Part of the hidden cost the kernel leaves in the interrupted task's
    /// runtime: 1 with tick-based accounting (runtime includes everything);
    /// measured under IRQ_TIME_ACCOUNTING, where the kernel takes out the
    /// irq time it sees between irq entry and exit but not the rest.
    pub runtime_share: f64,
    /// Gaps the spinner saw with no interruption traced in them (the
    /// hypervisor's own work, SMIs): per second and total share of the CPU.
    /// Every task pays these alike, idle or not: they are no interrupt's
    /// cost and stay out of HIDDEN~.
    pub untraced_gaps_per_s: f64,
    pub untraced_pct: f64,
    /// Gaps and context switches seen, for the record.
    pub gaps: u64,
    pub ctx_switches: u64,
    /// The factor the single-gap costs were multiplied by to give what the
    /// interruptions took beyond quiet windows (`calibrate::census::
    /// marginal_ratio`); 1 in tables from before it was measured.
    #[serde(default = "one")]
    pub marginal_ratio: f64,
    /// Run time of the thread each induced reschedule IPI woke on the
    /// spinner's CPU, ns per wake-up: taken out of the reschedule gaps (it
    /// is that thread's own time), shown for the record.
    #[serde(default)]
    pub resched_woken_ns: f64,
    /// Per reschedule IPI, what the kernel bills the woken thread beyond
    /// the untraced time of the gap it made: the wake-up updates the
    /// target's run-queue clock and the next schedule() skips its own
    /// update, so the woken thread is billed from the wake-up on the other
    /// CPU, while the interrupted task still ran, and for the IPI's traced
    /// handler. The interrupted task is given it back (`REBILLED`); 0 when
    /// the reschedule class was not measured (tables from before it too).
    #[serde(default)]
    pub resched_rebilled_ns: f64,
    /// What could not be measured, and why.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The IPI path's costs in the host's other states, from earlier
    /// calibrations on this boot (`calibrate::cache` keeps them): a VM's
    /// host can deliver IPIs two ways, minutes apart, each with its own
    /// handler time and hidden cost, and a frame is charged the state its
    /// own IPIs' handler time shows (`model::hidden`). Empty in tables from
    /// before it, and until a calibration sees a second state.
    #[serde(default)]
    pub states: Vec<IpiState>,
}

/// A measured class's spread beyond this share of its hidden cost: the
/// host was busy while the calibration ran. Quiet calibrations on the
/// development VM spread 1–5 %, ones a burst of the host's own load hit
/// 10–23 %.
pub const NOISY_SPREAD: f64 = 0.08;

/// Plain-IPI handler times this close (either way) are one state of the
/// host: calibrations within one state on the development VM differ by up
/// to 1.15×, its two states are 1.8× apart.
pub const SAME_STATE: f64 = 1.3;

/// Whether `a` is within `ratio` times `b`, either way.
pub fn within_ratio(a: f64, b: f64, ratio: f64) -> bool {
    b > 0.0 && (1.0 / ratio..=ratio).contains(&(a / b))
}

/// Whether two handler times per IPI are one state ([`SAME_STATE`]).
pub fn same_state(a_ns: f64, b_ns: f64) -> bool {
    within_ratio(a_ns, b_ns, SAME_STATE)
}

/// The classes whose cost moves with the host's way of delivering IPIs,
/// as one calibration measured them. The local timer, reschedules and the
/// softirq tail kept their costs across the development VM's two states,
/// so they are the table's own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct IpiState {
    pub measured_unix_ms: u64,
    pub ipi: ClassCost,
    #[serde(default = "ClassCost::not_measured")]
    pub tlb: ClassCost,
}

fn one() -> f64 {
    1.0
}

impl ClassCost {
    /// Handler time per interruption when calibrated, measured or derived
    /// (a split calibration's other state, `calibrate::table`): what tells
    /// the host's states apart. `None` without one.
    pub fn handler_ns(&self) -> Option<f64> {
        (self.basis != Basis::NotMeasured && self.traced_ns > 0.0).then_some(self.traced_ns)
    }

    pub fn not_measured() -> ClassCost {
        ClassCost {
            basis: Basis::NotMeasured,
            ..Default::default()
        }
    }
}

impl Calibration {
    /// The interruption classes, in the order of `sample::INTR_CLASSES`.
    pub fn classes(&self) -> [(&'static str, &ClassCost); 6] {
        [
            ("device", &self.device),
            ("timer", &self.timer),
            ("ipi", &self.ipi),
            ("other", &self.other),
            ("tlb", &self.tlb),
            ("resched", &self.resched),
        ]
    }

    /// What HIDDEN~ charges per interruption of each class in `state`
    /// (one of [`Self::known_states`]): its own cost, or the state's IPI
    /// cost for a class that takes the IPI's (not inducible, or a table
    /// from before the class existed, or one that could not induce it).
    pub fn charged_ns(&self, state: &IpiState) -> [f64; 6] {
        let ipi = state.ipi.hidden_ns.max(0.0);
        let mut out = self.classes().map(|(_, c)| match c.basis {
            Basis::Measured => c.hidden_ns.max(0.0),
            Basis::SameAsIpi | Basis::NotMeasured => ipi,
        });
        out[2] = ipi;
        out[4] = match state.tlb.basis {
            Basis::Measured => state.tlb.hidden_ns.max(0.0),
            Basis::SameAsIpi | Basis::NotMeasured => ipi,
        };
        out
    }

    /// This table's own IPI-path costs as a state.
    pub fn own_state(&self) -> IpiState {
        IpiState {
            measured_unix_ms: self.measured_unix_ms,
            ipi: self.ipi.clone(),
            tlb: self.tlb.clone(),
        }
    }

    /// Every state this table can charge: its own first, then the others
    /// earlier calibrations saw.
    pub fn known_states(&self) -> Vec<IpiState> {
        std::iter::once(self.own_state())
            .chain(self.states.iter().cloned())
            .collect()
    }

    /// The largest spread relative to its hidden cost among the measured
    /// classes the charges rest on most (IPI, TLB shootdown, local timer).
    /// Reschedule and softirq costs are near 0, where a relative spread
    /// means nothing.
    pub fn noise(&self) -> f64 {
        [&self.ipi, &self.tlb, &self.timer]
            .into_iter()
            .filter(|k| k.basis == Basis::Measured && k.hidden_ns > 0.0)
            .map(|k| k.spread_ns / k.hidden_ns)
            .filter(|r| r.is_finite())
            .fold(0.0, f64::max)
    }

    /// The wake-ups were sent and the woken thread ran, yet too few of
    /// their gaps were clean to price them: the host's noise, not a lack of
    /// means, left reschedule IPIs at the IPI's cost, which may be all
    /// wrong for them (the kernel can bill a whole wake-up to the woken
    /// thread: 0 µs here against the IPI's 7–12).
    pub fn resched_spoiled(&self) -> bool {
        self.resched.basis != Basis::Measured && self.resched_woken_ns > 0.0
    }

    /// The host spread this measurement beyond what a quiet one spreads
    /// ([`NOISY_SPREAD`]).
    pub fn noisy(&self) -> bool {
        self.noise() > NOISY_SPREAD
    }

    /// The host disturbed this measurement: it is [`noisy`](Self::noisy),
    /// or the host spoiled a class it induced. Its costs may be a busy
    /// moment's.
    pub fn disturbed(&self) -> bool {
        self.noisy() || self.resched_spoiled()
    }

    /// Its spread, as the notes and warnings word it.
    pub fn spread_words(&self) -> String {
        format!("spread up to {:.0} % of a cost", 100.0 * self.noise())
    }

    /// What disturbed this table, for a note: its spread, and a class
    /// the host spoiled.
    pub fn trouble(&self) -> String {
        let spread = self.spread_words();
        if self.resched_spoiled() {
            format!("{spread}, too few clean wake-ups to price reschedule IPIs")
        } else {
            spread
        }
    }

    /// Whether this table is a better one than `other` of the same host:
    /// one with every induced class priced wins, then the quieter.
    pub fn better_than(&self, other: &Calibration) -> bool {
        match (self.resched_spoiled(), other.resched_spoiled()) {
            (false, true) => true,
            (true, false) => false,
            _ => self.noise() < other.noise(),
        }
    }

    /// Every row of the table: the interruption classes and the softirq
    /// run in an interrupt's tail.
    pub fn rows(&self) -> [(&'static str, &ClassCost); 7] {
        let [a, b, c, d, e, f] = self.classes();
        [a, b, c, d, e, f, ("softirq", &self.softirq)]
    }
}

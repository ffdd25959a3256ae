//! The harness of the test tiers that need something of the machine (root,
//! BPF, tmux, a tool, two CPUs): `tests/live` and `tests/terminal`.
//!
//! Each test says what it needs when it is registered ([`case!`]), so the
//! harness decides before running it. A test whose needs are missing is
//! reported as not run, with the reason, and is not counted as passed (a
//! plain `cargo test` as a normal user says "not run: needs root", where an
//! early `return` inside the test used to count as a pass). With
//! `NETTOP_REQUIRE_BPF=1` (CI) a missing need is a failure instead.
//!
//! The root tier's tests run one at a time unless `--test-threads` says
//! otherwise ([`Threads::One`]): they load CPUs, create namespaces and
//! measure, and two at once would measure each other.

use std::collections::BTreeMap;
use std::process::ExitCode;

use libtest_mimic::{Arguments, Failed, Trial};

/// Something a test needs of the machine.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// euid 0.
    Root,
    /// Root, and a kernel with BTF to load nettop's BPF programs.
    Bpf,
    /// A program on PATH that answers `NAME ARG` (e.g. `tmux -V`).
    Tool(&'static str, &'static str),
    /// At least this many online CPUs.
    Cpus(usize),
    /// Anything else the machine must have; the function says what is
    /// missing, or `None`.
    Custom(fn() -> Option<String>),
}

impl Need {
    /// Why it is not met here, or `None`.
    pub fn missing(self) -> Option<String> {
        match self {
            Need::Root if !super::is_root() => Some("needs root".into()),
            Need::Bpf if !super::is_root() => Some("needs root (BPF)".into()),
            Need::Bpf if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() => {
                Some("needs a kernel with BTF (BPF)".into())
            }
            Need::Tool(bin, arg) if !super::tool_runs(bin, arg) => Some(format!("needs {bin}")),
            Need::Cpus(n) if std::thread::available_parallelism().map_or(1, |c| c.get()) < n => {
                Some(format!("needs {n} CPUs"))
            }
            Need::Custom(check) => check(),
            _ => None,
        }
    }
}

/// One registered test.
pub struct Case {
    /// `module::function`, as libtest names tests.
    pub name: &'static str,
    pub needs: &'static [Need],
    /// Run only when asked (`--ignored`): a benchmark, or a helper process
    /// another test starts. The reason is printed as libtest's is.
    pub ignore: Option<&'static str>,
    pub run: fn(),
}

#[linkme::distributed_slice]
pub static CASES: [Case];

/// Registers `fn NAME()` as a test of this tier that needs `[NEEDS]`:
///
/// ```ignore
/// case!(apply_is_refused_twice, [Need::Root, Need::Tool("ip", "-V")]);
/// fn apply_is_refused_twice() { ... }
/// ```
///
/// `case!(NAME, [NEEDS], ignore = "why")` registers it as ignored, as
/// `#[ignore = "why"]` does for libtest.
#[macro_export]
macro_rules! case {
    ($name:ident, [$($need:expr),* $(,)?]) => {
        $crate::case!(@register $name, [$($need),*], None);
    };
    ($name:ident, [$($need:expr),* $(,)?], ignore = $why:literal) => {
        $crate::case!(@register $name, [$($need),*], Some($why));
    };
    (@register $name:ident, [$($need:expr),*], $ignore:expr) => {
        const _: () = {
            #[linkme::distributed_slice($crate::common::tier::CASES)]
            static CASE: $crate::common::tier::Case = $crate::common::tier::Case {
                name: concat!(module_path!(), "::", stringify!($name)),
                needs: &[$($need),*],
                ignore: $ignore,
                run: $name,
            };
        };
    };
}

/// The test name without the crate's own prefix (`live::plan::x` →
/// `plan::x`), as libtest prints module paths.
fn short(name: &str) -> &str {
    name.split_once("::").map_or(name, |(_, rest)| rest)
}

/// How many of a tier's tests run at once when `--test-threads` is not
/// given.
pub enum Threads {
    /// One at a time: they load CPUs and measure.
    One,
    /// libtest's default, one per CPU.
    Default,
}

/// Runs one test on a thread of its own, as libtest does: a test that
/// pins its thread to a CPU, or changes its scheduling, must not pass that
/// on to the next test (or to the processes the next test starts), and
/// one test at a time would otherwise all run on the main thread.
fn isolated(name: &str, run: fn()) -> Result<(), Failed> {
    let thread = std::thread::Builder::new().name(name.to_string());
    match thread.spawn(run).map(std::thread::JoinHandle::join) {
        Ok(Ok(())) => Ok(()),
        // The panic message was printed by the panic hook already.
        Ok(Err(p)) => Err(Failed::from(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".to_string()),
        )),
        Err(e) => Err(Failed::from(format!("cannot start the test's thread: {e}"))),
    }
}

/// Runs every registered case; the `main` of a tier's test binary.
pub fn main(threads: Threads) -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() && matches!(threads, Threads::One) {
        args.test_threads = Some(1);
    }
    let required = super::required();
    let mut not_run: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cases: Vec<&Case> = CASES.iter().collect();
    cases.sort_by_key(|c| c.name);
    let trials: Vec<Trial> = cases
        .into_iter()
        .map(|c| {
            let missing: Vec<String> = c.needs.iter().filter_map(|n| n.missing()).collect();
            let name = short(c.name);
            if missing.is_empty() || c.ignore.is_some() {
                let run = c.run;
                let trial = Trial::test(name, move || isolated(name, run));
                return match c.ignore {
                    Some(why) => trial.with_ignored_flag(true).with_kind(why),
                    None => trial,
                };
            }
            let why = missing.join(", ");
            if required {
                let msg = format!(
                    "{}=1 but the test cannot run here: {why}",
                    super::REQUIRE_ENV
                );
                return Trial::test(name, move || Err(Failed::from(msg)));
            }
            if args.filter.as_deref().is_none_or(|f| name.contains(f)) {
                not_run
                    .entry(why.clone())
                    .or_default()
                    .push(name.to_string());
            }
            Trial::test(name, || Ok(()))
                .with_ignored_flag(true)
                .with_kind(format!("not run: {why}"))
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    for (name, why) in super::runtime_skips() {
        not_run.entry(why).or_default().push(name);
    }
    if !not_run.is_empty() {
        let n: usize = not_run.values().map(Vec::len).sum();
        let why: Vec<String> = not_run
            .iter()
            .map(|(w, v)| format!("{} {w}", v.len()))
            .collect();
        // One line the suite's summary (scripts/test.sh) adds up.
        println!(
            "not run: {n} ({}; set {}=1 to make them failures)\n",
            why.join(", "),
            super::REQUIRE_ENV
        );
    }
    conclusion.exit_code()
}

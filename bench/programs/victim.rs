//! Pure user-space victim for benchmarks: spins on arithmetic, pinned to a
//! CPU, and reports how much work it got done (see tests/common/victim.rs).
//!
//! ```text
//! victim [--cpu N] [--ms N] [--bucket-ms N] [--warmup-ms N] [--gap-ns N] [--nice N] [--summary]
//! ```
//! `--nice 20` runs at nice -20. Prints one JSON object per bucket, or with `--summary` one object for the
//! whole run after the warm-up: `{"chunks_per_ms":…,"gaps":…,"gap_ns":…,"dur_ns":…}`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/common/victim.rs"]
#[allow(dead_code)]
mod victim;

use std::io::Write;
use std::process::ExitCode;

struct Args {
    opts: victim::Options,
    warmup_ms: u64,
    summary: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        opts: victim::Options {
            max_ms: 3_000,
            ..Default::default()
        },
        warmup_ms: 200,
        summary: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or_else(|| format!("{name} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{name}: '{v}' is not a whole number"))
        };
        match flag.as_str() {
            "--cpu" => a.opts.cpu = Some(num("--cpu")? as usize),
            "--ms" => a.opts.max_ms = num("--ms")?,
            "--bucket-ms" => a.opts.bucket_ms = num("--bucket-ms")?.max(1),
            "--warmup-ms" => a.warmup_ms = num("--warmup-ms")?,
            "--gap-ns" => a.opts.gap_threshold_ns = num("--gap-ns")?,
            "--nice" => a.opts.nice = Some(-(num("--nice")? as i32)),
            "--summary" => a.summary = true,
            "-h" | "--help" => {
                return Err(
                    "usage: victim [--cpu N] [--ms N] [--bucket-ms N] [--warmup-ms N] [--gap-ns N] [--nice N (= nice -N)] [--summary]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("victim: {e}");
            return ExitCode::from(2);
        }
    };
    let mut kept = Vec::new();
    let mut elapsed_ms = 0u64;
    let stdout = std::io::stdout();
    let res = victim::run(&args.opts, |b| {
        elapsed_ms += b.dur_ns / 1_000_000;
        if args.summary {
            if elapsed_ms > args.warmup_ms {
                kept.push(b.clone());
            }
            return true;
        }
        match serde_json::to_string(b) {
            Ok(s) => writeln!(stdout.lock(), "{s}").is_ok(),
            Err(_) => false,
        }
    });
    if let Err(e) = res {
        eprintln!("victim: {e}");
        return ExitCode::from(1);
    }
    if args.summary {
        let t = victim::total(&kept);
        println!(
            "{{\"chunks_per_ms\":{:.3},\"gaps\":{},\"gap_ns\":{},\"dur_ns\":{}}}",
            t.chunks_per_ms(),
            t.gaps,
            t.gap_ns,
            t.dur_ns
        );
    }
    ExitCode::SUCCESS
}

//! `nettop -b`: top-style text frames, or one JSON object per frame, from the
//! live collector or a recording.
//!
//! Output goes through a locked, explicitly flushed stdout so a pipe to
//! `grep`/`jq` sees every frame as soon as it is computed; a closed pipe
//! (`nettop -b | head`) ends the run quietly with status 0, like top.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::cli::Cli;
use crate::collector::{Collector, CollectorOptions};
use crate::model::compute;
use crate::model::frame::Frame;
use crate::model::raw::HostInfo;
use crate::sysroot::Sysroot;

use super::json::render_json;
use super::text::{TextOptions, render_frame};

/// `/etc/passwd` -> UID to name. Unreadable or odd lines are skipped: a
/// missing name prints as the number, which is what top does too.
pub fn parse_passwd(text: &str) -> HashMap<u32, String> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(':');
            let name = it.next().filter(|n| !n.is_empty())?;
            let uid = it.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

fn read_users(root: &Sysroot) -> HashMap<u32, String> {
    root.read("/etc/passwd")
        .map(|t| parse_passwd(&t))
        .unwrap_or_default()
}

/// Where frames go; stops the run when the reader went away.
struct Sink<W: Write> {
    out: W,
    json: bool,
    pids: Vec<u32>,
    text: TextOptions,
    frames: u64,
}

enum Emit {
    Continue,
    /// stdout closed (EPIPE): stop quietly.
    Closed,
}

impl<W: Write> Sink<W> {
    fn new(out: W, cli: &Cli, host: &HostInfo, users: HashMap<u32, String>) -> Self {
        Self {
            out,
            json: cli.json,
            pids: cli.pids.clone(),
            text: TextOptions {
                threads: cli.threads,
                pids: cli.pids.clone(),
                max_rows: cli.rows,
                users,
                regime_source: host.regime_source.clone(),
            },
            frames: 0,
        }
    }

    fn emit(&mut self, frame: &Frame) -> anyhow::Result<Emit> {
        let mut s = if self.json {
            render_json(frame, &self.pids).context("serialising a frame to JSON")?
        } else {
            let mut s = render_frame(frame, &self.text);
            // Blank line between frames, as `top -b` separates them.
            if self.frames > 0 {
                s.insert(0, '\n');
            }
            s
        };
        if self.json {
            s.push('\n');
        }
        self.frames += 1;
        match self
            .out
            .write_all(s.as_bytes())
            .and_then(|()| self.out.flush())
        {
            Ok(()) => Ok(Emit::Continue),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Emit::Closed),
            Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
        }
    }
}

/// SIGINT/SIGTERM end the run between frames so the collector is dropped
/// (BPF detached, stats setting restored) instead of the process dying.
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handler")?;
    }
    Ok(stop)
}

/// Sleeps until `deadline` in short slices, returning `false` if asked to stop.
fn sleep_until(deadline: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
    }
}

pub fn run_live(cli: &Cli) -> anyhow::Result<u8> {
    let sysroot = Sysroot::new(&cli.sysroot);
    let users = read_users(&sysroot);
    let mut collector = Collector::new(CollectorOptions {
        sysroot,
        no_bpf: cli.no_bpf,
        pids: cli.pids.clone(),
        bpf_stats: cli.bpf_stats,
        cache_dir: cli.cache_dir.clone(),
    })?;
    let host = collector.host().clone();
    let stop = stop_flag()?;
    let stdout = io::stdout();
    let mut sink = Sink::new(stdout.lock(), cli, &host, users);

    let period = Duration::from_secs_f64(cli.delay);
    let start = Instant::now();
    let mut prev = collector.sample()?;
    let mut k: u32 = 0;
    while cli.iterations.is_none_or(|n| u64::from(k) < n) {
        k = k.saturating_add(1);
        // Deadlines from the start, so frames do not drift by the time
        // sampling and printing take.
        if !sleep_until(start + period * k, &stop) {
            break;
        }
        let cur = collector.sample()?;
        let frame = compute(&host, &prev, &cur);
        if let Emit::Closed = sink.emit(&frame)? {
            break;
        }
        prev = cur;
    }
    Ok(0)
}

pub fn run_replay(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let rec = crate::record::Recording::open(file)?;
    for w in rec.warnings() {
        eprintln!("nettop: {}: {w}", file.display());
    }
    if rec.len() < 2 {
        anyhow::bail!(
            "{}: {} sample(s): a frame needs two consecutive samples",
            file.display(),
            rec.len()
        );
    }
    let host = rec.host().clone();
    // Names from this machine: the recording does not carry /etc/passwd.
    let users = read_users(&Sysroot::default());
    let stdout = io::stdout();
    let mut sink = Sink::new(stdout.lock(), cli, &host, users);
    let limit = cli.iterations.unwrap_or(u64::MAX);
    let mut prev = None;
    for i in 0..rec.len() {
        if sink.frames >= limit {
            break;
        }
        let cur = match rec.get(i) {
            Ok(s) => s,
            // One damaged sample costs the two frames around it, not the run.
            Err(e) => {
                eprintln!("nettop: skipping: {e:#}");
                prev = None;
                continue;
            }
        };
        if let Some(p) = &prev {
            if let Emit::Closed = sink.emit(&compute(&host, p, &cur))? {
                break;
            }
        }
        prev = Some(cur);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lines() {
        let u = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\nbad\nalice:x:1000:1000::/h:/bin/sh\n:x:5:5::/:/\n",
        );
        assert_eq!(u.get(&0).map(String::as_str), Some("root"));
        assert_eq!(u.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(u.len(), 2);
    }

    #[test]
    fn closed_pipe_stops_quietly() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let cli = Cli {
            json: true,
            ..Default::default()
        };
        let mut s = Sink::new(Closed, &cli, &HostInfo::default(), HashMap::new());
        assert!(matches!(s.emit(&Frame::default()).unwrap(), Emit::Closed));
    }
}

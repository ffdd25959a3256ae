//! `nettop -b`: top-style text frames, or one JSON object per frame, from the
//! live collector or a recording.
//!
//! Output goes through a locked, explicitly flushed stdout so a pipe to
//! `grep`/`jq` sees every frame as soon as it is computed; a closed pipe
//! (`nettop -b | head`) ends the run quietly with status 0, like top.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::Context;

use crate::app::cli::Cli;
use crate::app::live::LiveFrames;
use crate::app::options;
use crate::model::frame::Frame;
use crate::record::{WarningKind, walk};
use crate::sample::HostInfo;
use crate::sys::ticker::{Ticker, Wake};
use crate::sys::users::UserNames;

use crate::output::json::render_json;
use crate::output::text::{TextOptions, render_frame};

/// Where frames go; stops the run when the reader went away.
struct Sink<W: Write> {
    out: W,
    json: bool,
    group_cgroup: bool,
    pids: Vec<u32>,
    text: TextOptions,
    /// Names the text frames' UIDs (into `text.users`) as they appear;
    /// `None` leaves them numbers.
    names: Option<UserNames>,
    frames: u64,
}

enum Emit {
    Continue,
    /// stdout closed (EPIPE): stop quietly.
    Closed,
}

impl<W: Write> Sink<W> {
    fn new(out: W, cli: &Cli, host: &HostInfo, names: Option<UserNames>) -> Self {
        Self {
            out,
            json: cli.json,
            group_cgroup: cli.group == Some(crate::app::cli::Group::Cgroup),
            pids: cli.pids.clone(),
            text: TextOptions {
                threads: cli.threads,
                pids: cli.pids.clone(),
                max_rows: cli.rows,
                users: Default::default(),
                regime_source: host.regime_source.clone(),
                group_cgroup: cli.group == Some(crate::app::cli::Group::Cgroup),
                cmdline: cli.command_line,
                hide_idle: cli.hide_idle,
            },
            names,
            frames: 0,
        }
    }

    fn emit(&mut self, frame: &Frame) -> anyhow::Result<Emit> {
        let mut s = if self.json && self.group_cgroup {
            render_json(&crate::output::cgroups::json_frame(frame), &[])
                .context("serialising a frame to JSON")?
        } else if self.json {
            render_json(frame, &self.pids).context("serialising a frame to JSON")?
        } else {
            // JSON has UIDs only, so only text looks names up.
            if let Some(names) = self.names.as_mut() {
                let uids = frame.processes.iter().chain(&frame.threads).map(|t| t.uid);
                self.text.users.extend(names.resolve_new(uids));
            }
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

pub fn run_live(cli: &Cli) -> anyhow::Result<u8> {
    let names = UserNames::new(&options::sysroot(cli));
    let mut live = LiveFrames::open(cli, true)?;
    let host = live.host().clone();
    // SIGINT/SIGTERM/SIGHUP end the run between frames so the collector is
    // dropped (BPF detached, stats setting restored).
    let stop = crate::sys::signals::stop_flag()?;
    let stdout = io::stdout();
    let mut sink = Sink::new(stdout.lock(), cli, &host, Some(names));

    let mut ticker = Ticker::new(options::interval(cli));
    while cli.iterations.is_none_or(|n| sink.frames < n) {
        if ticker.sleep(&stop, None) == Wake::Stop {
            break;
        }
        if let Emit::Closed = sink.emit(&live.next_frame()?)? {
            break;
        }
    }
    Ok(0)
}

/// `nettop --replay FILE -b`. Exits like `--export` on the same file: 2
/// when records were damaged (after printing every frame that could be
/// computed), 0 when the file is intact or only has a torn tail (the normal
/// end of a killed recorder).
pub fn run_replay(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let rec = crate::record::Recording::open(file)?;
    let mut damaged = 0u64;
    for w in rec.warnings() {
        eprintln!("nettop: warning: {}: {w}", file.display());
        if w.kind == WarningKind::Corrupt {
            damaged += 1;
        }
    }
    if rec.len() < 2 {
        anyhow::bail!(
            "{}: {} sample(s): a frame needs two consecutive samples",
            file.display(),
            rec.len()
        );
    }
    let window = options::replay_window(cli, &rec)?;
    let host = rec.host().clone();
    // The recording carries UIDs only: names from this machine, if it is
    // the one that recorded.
    let names = crate::sys::users::for_recording(&host.hostname);
    let stdout = io::stdout();
    let mut sink = Sink::new(stdout.lock(), cli, &host, names);
    let limit = cli.iterations.unwrap_or(u64::MAX);
    let mut out_of_order = 0;
    if limit > 0 {
        let walked = walk::frames_in(
            &rec,
            window,
            |_, frame| {
                Ok(match sink.emit(&frame)? {
                    Emit::Closed => ControlFlow::Break(()),
                    Emit::Continue if sink.frames >= limit => ControlFlow::Break(()),
                    Emit::Continue => ControlFlow::Continue(()),
                })
            },
            &mut |s| eprintln!("nettop: warning: {s}"),
        )?;
        damaged += walked.bad;
        out_of_order = walked.out_of_order;
    }
    if let Some(skipped) = walk::skipped_summary(damaged, out_of_order) {
        eprintln!("nettop: {}: {skipped}; printed the rest", file.display());
        return Ok(2);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut s = Sink::new(Closed, &cli, &HostInfo::default(), None);
        assert!(matches!(s.emit(&Frame::default()).unwrap(), Emit::Closed));
    }
}

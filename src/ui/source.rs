//! Data threads: everything that does I/O for the TUI (collector samples,
//! model arithmetic, recordings, /etc/passwd, topology) runs here and sends
//! finished values to the UI thread.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::app::{Extras, LineKind};
use super::{Cmd, Msg};
use crate::cli::Cli;
use crate::model::frame::Frame;

/// How often the topology (threads' pinning, IRQ affinity) is re-read.
const TOPOLOGY_REFRESH: Duration = Duration::from_secs(15);

/// `uid → name` from a passwd file; unreadable or odd lines are skipped
/// (names are cosmetic: the UI falls back to numbers).
pub(crate) fn read_users(passwd: &Path) -> HashMap<u32, String> {
    let Ok(text) = std::fs::read_to_string(passwd) else {
        return HashMap::new();
    };
    parse_passwd(&text)
}

pub(crate) fn parse_passwd(text: &str) -> HashMap<u32, String> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(':');
            let name = it.next()?;
            let uid = it.nth(1)?.parse().ok()?;
            (!name.is_empty()).then(|| (uid, name.to_string()))
        })
        .collect()
}

/// Random access to a sequence of Frames (a recording).
pub(crate) trait FrameSource {
    fn len(&self) -> usize;
    fn frame(&mut self, i: usize) -> anyhow::Result<Frame>;
}

/// The replay cursor: seek, step and play at `delay`, on its own thread so
/// decoding a sample never blocks a key.
pub(crate) fn replay_loop<S: FrameSource>(
    mut src: S,
    mut delay: f64,
    rx: Receiver<Cmd>,
    tx: Sender<Msg>,
) {
    let len = src.len();
    let mut index = 0usize;
    let mut playing = false;
    let send = |src: &mut S, index: usize, playing: bool| -> bool {
        let msg = match src.frame(index) {
            Ok(f) => Msg::Replay {
                index,
                len,
                playing,
                frame: Box::new(f),
            },
            Err(e) => Msg::Warn(format!("sample {index}: {e:#}")),
        };
        tx.send(msg).is_ok()
    };
    if !send(&mut src, index, playing) {
        return;
    }
    loop {
        let wait = if playing {
            Duration::from_secs_f64(delay)
        } else {
            Duration::from_secs(3600)
        };
        match rx.recv_timeout(wait) {
            Ok(Cmd::Seek(i)) => {
                index = i.min(len.saturating_sub(1));
                if !send(&mut src, index, playing) {
                    return;
                }
            }
            Ok(Cmd::Play(p)) => playing = p,
            Ok(Cmd::SetDelay(d)) => delay = d,
            Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                if index + 1 < len {
                    index += 1;
                } else {
                    playing = false;
                }
                if !send(&mut src, index, playing) {
                    return;
                }
            }
        }
    }
}

/// Loads the topology now and every [`TOPOLOGY_REFRESH`], sending the
/// Topology view's lines. Failures become a note in the view.
fn topology_thread(cli: &Cli, tx: Sender<Msg>) {
    let opts = crate::topology::LoadOptions::from_cli(cli);
    std::thread::spawn(move || {
        loop {
            let lines = match crate::topology::load(&opts) {
                Ok(t) => super::topo_view::lines(&t),
                Err(e) => vec![(LineKind::Warn, format!("topology unavailable: {e:#}"))],
            };
            let extras = Extras {
                topology: Some(lines),
                pinning: None,
            };
            if tx.send(Msg::Extras(extras)).is_err() {
                return;
            }
            std::thread::sleep(TOPOLOGY_REFRESH);
        }
    });
}

/// Starts live collection. Returns only once the collector is up, so its
/// errors are printed before the terminal is touched.
pub(crate) fn start_live(cli: &Cli) -> anyhow::Result<(Receiver<Msg>, Sender<Cmd>)> {
    let _ = cli;
    anyhow::bail!(
        "live collection is not wired into the TUI yet (collector/model pending); use -b or --replay"
    )
}

/// Opens a recording for the replay cursor.
pub(crate) fn start_replay(cli: &Cli, file: &Path) -> anyhow::Result<(Receiver<Msg>, Sender<Cmd>)> {
    let _ = (cli, file, topology_thread as fn(&Cli, Sender<Msg>));
    anyhow::bail!("replay in the TUI needs the model (pending); use -b --replay")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;

    struct Fixed(Vec<Frame>);
    impl FrameSource for Fixed {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn frame(&mut self, i: usize) -> anyhow::Result<Frame> {
            self.0
                .get(i)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no sample {i}"))
        }
    }

    fn index_of(m: Msg) -> (usize, bool) {
        match m {
            Msg::Replay { index, playing, .. } => (index, playing),
            _ => panic!("expected a replay frame"),
        }
    }

    #[test]
    fn replay_cursor_seeks_plays_and_stops_at_the_end() {
        let frames: Vec<Frame> = (0..4).map(fixtures::busy_host_at).collect();
        let (ctx, crx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, crx, tx));
        let t = Duration::from_secs(5);
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        ctx.send(Cmd::Seek(2)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, false));
        ctx.send(Cmd::Seek(99)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, false));
        ctx.send(Cmd::Seek(1)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (1, false));
        ctx.send(Cmd::Play(true)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, true));
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, true));
        // At the end playback stops by itself.
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, false));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn passwd_parsing_skips_junk() {
        let u = parse_passwd("root:x:0:0:root:/root:/bin/bash\n\nbad line\nalice:x:1000:1000::/home/alice:/bin/sh\n:x:5:5::/:/\n");
        assert_eq!(u.get(&0).map(String::as_str), Some("root"));
        assert_eq!(u.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(u.len(), 2);
    }
}

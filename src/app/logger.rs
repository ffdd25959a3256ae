//! Log lines of the long-running modes, readable on a terminal and in the
//! journal alike: one line per event, no colours or cursor movement, and
//! under journald a `<N>` syslog priority prefix (sd-daemon(3)) instead of
//! the `nettop:` name journald already records. Every layer logs through
//! the `log` facade; this is the one logger, installed by `main`.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// syslog priorities nettop uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Err = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
}

/// Whether stderr is the journal stream systemd connected: `JOURNAL_STREAM`
/// holds its `device:inode`, and only counts while stderr still is that
/// socket (a child whose stderr was redirected inherits the variable).
pub fn under_journald() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("JOURNAL_STREAM")
            .ok()
            .is_some_and(|v| stderr_is(&v))
    })
}

fn stderr_is(journal_stream: &str) -> bool {
    let Some((dev, ino)) = journal_stream.split_once(':') else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    // SAFETY: fstat writes one `stat` struct we own; fd 2 is always open
    // (main points closed standard descriptors at /dev/null).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: fd 2 is open and `st` is ours to write.
    if unsafe { libc::fstat(2, &mut st) } != 0 {
        return false;
    }
    st.st_dev == dev && st.st_ino == ino
}

/// The line for `msg` at `level`: control characters (a newline in an
/// error chain, an escape in a path) become spaces or `?`, so one event
/// is always one line.
pub fn format_line(level: Level, msg: &str, journald: bool) -> String {
    let clean: String = msg
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '?',
            c => c,
        })
        .collect();
    if journald {
        format!("<{}>{clean}", level as u8)
    } else {
        let tag = match level {
            Level::Warning => "warning: ",
            Level::Err | Level::Notice | Level::Info => "",
        };
        format!("nettop: {tag}{clean}")
    }
}

/// Where records go instead of stderr while a full-screen front end owns
/// the terminal (the TUI's status line); `None`: stderr.
type Redirect = Box<dyn Fn(&str) + Send + Sync>;

/// The one logger behind the `log` facade: library layers call
/// `log::warn!` and never know which front end shows the line.
struct Logger {
    redirect: Mutex<Option<Redirect>>,
}

/// The target that marks a record as `notice` (5): `log` has no level
/// between warn and info, and journald does.
pub const NOTICE: &str = "notice";

static LOGGER: Logger = Logger {
    redirect: Mutex::new(None),
};

fn level_of(r: &log::Record<'_>) -> Level {
    match r.level() {
        log::Level::Error => Level::Err,
        log::Level::Warn => Level::Warning,
        log::Level::Info if r.target() == NOTICE => Level::Notice,
        log::Level::Info | log::Level::Debug | log::Level::Trace => Level::Info,
    }
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let msg = r.args().to_string();
        if let Ok(g) = self.redirect.lock()
            && let Some(to) = g.as_ref()
        {
            to(&msg);
            return;
        }
        let line = format_line(level_of(r), &msg, under_journald());
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn flush(&self) {}
}

/// Installs the logger; once per process (later calls do nothing).
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

/// Sends every record to `to` until [`redirect_end`]: the TUI shows them
/// in its status line, where a line on stderr would tear the screen.
pub fn redirect(to: Redirect) {
    if let Ok(mut g) = LOGGER.redirect.lock() {
        *g = Some(to);
    }
}

/// Records go to stderr again.
pub fn redirect_end() {
    if let Ok(mut g) = LOGGER.redirect.lock() {
        *g = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_with_a_priority_under_journald() {
        assert_eq!(
            format_line(Level::Err, "cannot write\nto /x\x1b[2J", true),
            "<3>cannot write to /x?[2J"
        );
        assert_eq!(
            format_line(Level::Warning, "slow", false),
            "nettop: warning: slow"
        );
        assert_eq!(format_line(Level::Info, "ok", true), "<6>ok");
    }

    #[test]
    fn journal_stream_must_be_our_stderr() {
        assert!(!stderr_is("garbage"));
        assert!(!stderr_is("1:"));
        // SAFETY: as in stderr_is.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid, writable stat buffer for fd 2.
        assert_eq!(unsafe { libc::fstat(2, &mut st) }, 0);
        assert!(stderr_is(&format!("{}:{}", st.st_dev, st.st_ino)));
        assert!(!stderr_is(&format!("{}:{}", st.st_dev, st.st_ino + 1)));
    }
}

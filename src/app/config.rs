//! The configuration file: where it is, reading it leniently at start and
//! writing it when `W` is pressed (top's rc file, htop's htoprc). Its
//! contents are [`Settings`]; command-line flags given explicitly win over
//! it. Batch, record and lint modes do not read it: their output feeds
//! scripts, which must not change with someone's saved screen.
//!
//! A file that cannot be used never stops the start: a syntax error costs
//! the whole file, a bad value only its setting, and either gives one
//! warning line naming the file and what was ignored.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::app::cli::Cli;
use crate::ui::settings::Settings;

/// The configuration file's name inside its directory.
const FILE: &str = "nettop/config.toml";
/// A configuration file is a few hundred bytes; more is not one.
const MAX_LEN: u64 = 1 << 20;

/// Where the configuration lives: `--config FILE`, else
/// `$XDG_CONFIG_HOME/nettop/config.toml`, else
/// `~/.config/nettop/config.toml`. `None` with `--no-config`, or when no
/// home directory is known.
pub fn path(cli: &Cli) -> Option<PathBuf> {
    if cli.no_config {
        return None;
    }
    if let Some(p) = &cli.config {
        return Some(p.clone());
    }
    default_path(
        std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// The XDG base-directory rule: a relative `XDG_CONFIG_HOME` is invalid
/// and ignored.
fn default_path(xdg: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    match xdg {
        Some(x) if x.is_absolute() => Some(x.join(FILE)),
        _ => home
            .filter(|h| h.is_absolute())
            .map(|h| h.join(".config").join(FILE)),
    }
}

/// The settings the file at `path` gives, and the one warning line about
/// what it could not use. A missing default file is no warning; a missing
/// `--config FILE` is.
pub fn load(path: &Path, explicit: bool) -> (Settings, Option<String>) {
    let shown = path.display();
    let text = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return (Settings::default(), None);
        }
        Err(e) => return (Settings::default(), Some(format!("config {shown}: {e}"))),
        Ok(_) => match crate::sys::safefile::read_input(path, MAX_LEN) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                return (
                    Settings::default(),
                    Some(format!("config {shown}: {e:#}; using the defaults")),
                );
            }
        },
    };
    let (settings, problems) = parse(&text);
    let warning = (!problems.is_empty()).then(|| {
        format!(
            "config {shown}: {}; using the defaults for these",
            problems.join("; ")
        )
    });
    (settings, warning)
}

/// Settings from the file's text, and one note per thing it could not use.
/// Each setting is read on its own, so one bad value keeps the others.
pub fn parse(text: &str) -> (Settings, Vec<String>) {
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let msg = e.message().trim().to_string();
            let at = e
                .span()
                .map(|s| format!("line {}: ", text[..s.start].lines().count().max(1)))
                .unwrap_or_default();
            return (Settings::default(), vec![format!("{at}{msg}")]);
        }
    };
    let mut out = Settings::default();
    let mut problems = Vec::new();
    for (k, v) in table {
        let mut one = toml::Table::new();
        one.insert(k.clone(), v);
        match one.try_into::<Settings>() {
            Ok(s) => match check(&s) {
                Ok(()) => out.merge(s),
                Err(e) => problems.push(format!("{k}: {e:#}")),
            },
            Err(e) => problems.push(format!("{k}: {}", e.message().trim())),
        }
    }
    (out, problems)
}

/// What the types alone do not rule out.
fn check(s: &Settings) -> anyhow::Result<()> {
    match s.delay {
        Some(d) if !(0.05..=3600.0).contains(&d) => Err(anyhow::anyhow!(
            "{} is not a delay (seconds, 0.05 to 3600)",
            crate::sys::units::human_number(d)
        )),
        _ => Ok(()),
    }
}

/// Writes `s` to `path`, replacing the file in one step (a new file, then
/// a rename over the old one), so a crash never leaves half a file. The
/// file there now must be one nettop reads as TOML: `W` never replaces a
/// file it could not parse, nor writes through a symlink (see
/// [`crate::sys::safefile`]); the error says why and what to do instead.
pub fn save(path: &Path, s: &Settings) -> anyhow::Result<PathBuf> {
    crate::sys::safefile::check_path(path)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let body = toml::to_string(s).context("cannot write the settings as TOML")?;
    let text = format!(
        "# nettop settings, written by W in the TUI; flags given on the command line\n\
         # win over them. Any setting may be left out. See nettop(1), FILES.\n{body}"
    );
    crate::sys::safefile::replace(path, text.as_bytes(), understood)?;
    Ok(path.to_path_buf())
}

/// Whether the file `W` is about to replace is a settings file: TOML, as
/// [`parse`] reads it (values it ignores are no reason to keep the file;
/// a syntax error or another kind of file is).
fn understood(old: &[u8]) -> anyhow::Result<()> {
    let text = std::str::from_utf8(old).map_err(|_| anyhow::anyhow!("not UTF-8 text"))?;
    text.parse::<toml::Table>()
        .map(drop)
        .map_err(|_| anyhow::Error::msg(parse(text).1.join("; ")))
}

/// The TUI's settings: the file's, then the flags given explicitly. Also
/// the warning line about the file, if any.
pub fn for_tui(cli: &Cli) -> (Settings, Option<String>) {
    let (mut s, warning) = match path(cli) {
        Some(p) => load(&p, cli.config.is_some()),
        None => (Settings::default(), None),
    };
    if let Some(d) = cli.delay {
        s.delay = Some(d);
    }
    if cli.threads {
        s.threads = Some(true);
    }
    if cli.command_line {
        s.command_line = Some(true);
    }
    if cli.hide_idle {
        s.show_idle = Some(false);
    }
    (s, warning)
}

/// The `W` handler: the status line's answer.
pub fn saver(cli: &Cli) -> impl FnMut(&Settings) -> Result<String, String> + use<> {
    let path = path(cli);
    move |s: &Settings| {
        let Some(p) = &path else {
            return Err("not saved: --no-config (or no HOME to put the file in)".into());
        };
        save(p, s)
            .map(|t| format!("settings written to {}", t.display()))
            .map_err(|e| format!("settings not saved: {e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::columns::ProcColumn;
    use crate::ui::meters::{CpuBars, HeaderMode, Meter};
    use crate::ui::rows::View;
    use crate::ui::state::Scheme;

    #[test]
    fn xdg_wins_over_home_unless_relative() {
        let home = Some(PathBuf::from("/home/a"));
        assert_eq!(
            default_path(Some("/x".into()), home.clone()),
            Some(PathBuf::from("/x/nettop/config.toml"))
        );
        assert_eq!(
            default_path(Some("rel".into()), home.clone()),
            Some(PathBuf::from("/home/a/.config/nettop/config.toml"))
        );
        assert_eq!(default_path(None, None), None);
    }

    #[test]
    fn one_bad_value_keeps_the_others() {
        let (s, bad) = parse(
            "view = \"cpus\"\ndelay = 0.01\nsort = \"stolen\"\ncolumns = [\"pid\", \"nope\"]\nfoo = 1\n",
        );
        assert_eq!(s.view, Some(View::Cpus));
        assert_eq!(s.sort, Some(ProcColumn::Stolen));
        assert_eq!(s.delay, None);
        assert_eq!(s.columns, None);
        assert_eq!(bad.len(), 3, "{bad:?}");
        assert!(bad.iter().any(|b| b.starts_with("foo:")), "{bad:?}");
    }

    #[test]
    fn syntax_error_costs_the_file_and_names_the_line() {
        let (s, bad) = parse("view = \"cpus\"\nsort = [\n");
        assert_eq!(s, Settings::default());
        assert_eq!(bad.len(), 1);
        assert!(bad[0].starts_with("line "), "{bad:?}");
    }

    #[test]
    fn saved_settings_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/config.toml");
        let s = Settings {
            view: Some(View::Devices),
            sort: Some(ProcColumn::NetRx),
            sort_descending: Some(false),
            columns: Some(vec![ProcColumn::Pid, ProcColumn::True]),
            delay: Some(2.5),
            threads: Some(true),
            tree: Some(false),
            forest: Some(true),
            command_line: Some(true),
            show_idle: Some(false),
            color_scheme: Some(Scheme::Light),
            hide_kernel_threads: Some(true),
            read_only: Some(true),
            header: Some(HeaderMode::Compact),
            meters_left: Some(vec![Meter::Cpus]),
            meters_right: Some(vec![Meter::Mem, Meter::Nettop]),
            meters_below: Some(vec![]),
            cpu_bars: Some(CpuBars::Two),
        };
        save(&p, &s).unwrap();
        save(&p, &s).unwrap();
        let (back, warn) = load(&p, true);
        assert_eq!(warn, None);
        assert_eq!(back, s);
    }

    #[test]
    fn w_never_replaces_a_file_it_could_not_parse_nor_writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, "root's notes\n").unwrap();
        let e = format!("{:#}", save(&precious, &Settings::default()).unwrap_err());
        assert!(
            e.contains("not a file nettop can read as its own (line 1"),
            "{e}"
        );
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let e = format!("{:#}", save(&link, &Settings::default()).unwrap_err());
        assert!(e.contains("symbolic link (to "), "{e}");
        assert_eq!(
            std::fs::read_to_string(&precious).unwrap(),
            "root's notes\n"
        );
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A settings file with a value this nettop ignores is still ours.
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "delay = 0.01\nfuture_setting = 1\n").unwrap();
        save(&ok, &Settings::default()).unwrap();
    }

    #[test]
    fn a_huge_delay_is_named_in_a_few_characters() {
        let (_, bad) = parse("delay = 1e308\n");
        assert_eq!(
            bad,
            ["delay: 1e308 is not a delay (seconds, 0.05 to 3600)"],
            "{bad:?}"
        );
    }
}

//! The header meters drawn from the deterministic fixtures: htop's bars
//! with nettop's misattributed share on each CPU, at 80, 120 and 200
//! columns; compact and brief; unknown figures as `n/a`; and the status
//! line's help and quit keys at 80 columns.

use crate::common;
use crate::common::tier::Need;

use common::screen::{app, busy, draw, press, screen, snap};
use crossterm::event::KeyCode;
use nettop::ui::fixtures;
use nettop::ui::meters::{CpuBars, HeaderMode};
use nettop::ui::state::App;
use ratatui::style::Color;

/// The header's lines and the tab line under them.
fn header(a: &App, w: u16, h: u16) -> String {
    let rows = usize::from(a.header_rows()) + 1;
    let s = screen(a, w, h);
    let lines: Vec<&str> = s.lines().take(rows).collect();
    let tabs = lines.last().copied().unwrap_or_default();
    assert!(tabs.contains("1 Processes"), "tabs under the header:\n{s}");
    lines.join("\n")
}

fn idle(w: u16, h: u16) -> App {
    let mut a = app(w, h, true);
    a.push_frame(fixtures::idle_host());
    a
}

/// The sizes the snapshots are taken at, and what each must show.
#[test]
fn busy_host_at_three_widths() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let a = busy(w, h);
        let s = header(&a, w, h);
        // nettop's figure on the CPU stolen from: CPU 3 loses 45 %.
        assert!(s.contains("top misattributes"), "{w}x{h}:\n{s}");
        assert!(s.contains("Mem[") && s.contains("Swp["), "{w}x{h}:\n{s}");
        assert!(s.contains("Tasks:") && s.contains("Load"), "{w}x{h}:\n{s}");
        snap(&format!("ui_meters_busy_{w}x{h}"), s);
    }
    // 16 CPUs get a bar each at 200x50, two columns of eight.
    let s = header(&busy(200, 50), 200, 50);
    let cpu3 = s.lines().find(|l| l.starts_with("\" 3[")).unwrap();
    assert!(
        cpu3.contains("!36.7%"),
        "the stolen share on CPU 3's bar: {cpu3}"
    );
    assert!(
        s.lines().any(|l| l.contains(" 3[") && l.contains(" 11[")),
        "{s}"
    );
}

#[test]
fn idle_host_at_three_widths() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let a = idle(w, h);
        let s = header(&a, w, h);
        assert!(s.contains("0[") && s.contains("1["), "a bar per CPU:\n{s}");
        snap(&format!("ui_meters_idle_{w}x{h}"), s);
    }
}

/// The whole 80x24 screen: six header lines leave the table its rows.
#[test]
fn busy_host_80x24_whole_screen() {
    let a = busy(80, 24);
    assert!(a.header_rows() <= 6, "{}", a.header_rows());
    let s = screen(&a, 80, 24);
    assert!(s.contains("openssl"), "{s}");
    snap("ui_meters_busy_80x24_screen", s);
}

/// A recording from before the meters: `n/a`, never a made-up 0.
#[test]
fn unknown_memory_and_load_say_na() {
    let mut f = fixtures::idle_host();
    f.system = None;
    let mut a = app(120, 30, true);
    a.push_frame(f);
    let s = header(&a, 120, 30);
    for want in [
        "Mem[",
        "Swp[",
        "Load average: n/a",
        "Uptime: n/a",
        "n/a running",
    ] {
        assert!(s.contains(want), "{want}:\n{s}");
    }
    assert!(!s.contains("0K/0K"), "{s}");
    snap("ui_meters_unknown", s);
}

/// `m` steps full → compact → brief → full; the table gets the lines
/// the header gives up.
#[test]
fn m_cycles_the_header() {
    let mut a = busy(120, 40);
    let full = a.header_rows();
    let rows = a.viewport(a.view);
    press(&mut a, KeyCode::Char('m'));
    assert_eq!(a.meters.mode, HeaderMode::Compact);
    let compact = a.header_rows();
    assert!(compact < full, "{compact} < {full}");
    assert_eq!(a.viewport(a.view), rows + usize::from(full - compact));
    snap("ui_meters_compact_120x40", header(&a, 120, 40));
    press(&mut a, KeyCode::Char('m'));
    assert_eq!(a.meters.mode, HeaderMode::Brief);
    let s = header(&a, 120, 40);
    assert!(s.contains("top misattributes") && !s.contains("Mem"), "{s}");
    snap("ui_meters_brief_120x40", s);
    press(&mut a, KeyCode::Char('m'));
    assert_eq!((a.meters.mode, a.header_rows()), (HeaderMode::Full, full));
}

/// The CPU bars as the settings ask: one character per CPU.
#[test]
fn cpu_strip_and_four_columns() {
    let mut a = busy(200, 50);
    a.meters.cpu_bars = CpuBars::Strip;
    let s = header(&a, 200, 50);
    assert!(s.contains("0[") && s.contains('█'), "{s}");
    assert!(s.contains("cpu3"), "the CPU stolen from most, named: {s}");
    snap("ui_meters_strip_200x50", s);
    a.meters.cpu_bars = CpuBars::Four;
    let s = header(&busy(250, 60), 250, 60);
    assert!(s.lines().count() >= 5, "{s}");
}

/// The smallest terminal still draws: one header line, not a cut one.
#[test]
fn smallest_terminal() {
    let a = busy(30, 7);
    assert_eq!(a.header_rows(), 1);
    let s = screen(&a, 30, 7);
    let first = s.lines().next().unwrap();
    assert!(first.contains("top misattributes"), "{s}");
    snap("ui_meters_30x7", s);
}

/// htop's colours: user green, system red, irq yellow, softirq magenta,
/// steal cyan; the misattributed share in the stolen style.
#[test]
fn cpu_bar_colours() {
    let a = busy(200, 50);
    let t = draw(&a, 200, 50);
    let buf = t.backend().buffer();
    let rows = a.header_rows();
    let mut seen = Vec::new();
    for y in 0..rows {
        for x in 0..200 {
            let c = &buf[(x, y)];
            if c.symbol() == "|" {
                seen.push(c.fg);
            }
        }
    }
    for want in [Color::Green, Color::Red, Color::Magenta] {
        assert!(seen.contains(&want), "{want:?} in {seen:?}");
    }
    // CPU 3's "!" figure is red and bold.
    let s = screen(&a, 200, 50);
    let (y, line) = s
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("\" 3["))
        .unwrap_or_else(|| panic!("{s}"));
    // The screen's lines are quoted: one byte before the first column.
    let x = line.find('!').unwrap() - 1;
    assert_eq!(buf[(x as u16, y as u16)].fg, Color::Red, "{line}");
}

/// Mono: no colours, so each part has its own character.
#[test]
fn mono_bars_tell_the_parts_apart() {
    let mut a = app(120, 40, false);
    a.push_frame(fixtures::busy_host());
    let s = header(&a, 120, 40);
    assert!(!s.contains('|') || s.contains('='), "{s}");
    assert!(s.contains('#') && s.contains('='), "{s}");
    snap("ui_meters_mono_120x40", s);
}

/// The help and quit keys stay at the right end of the status line at 80
/// columns, however much the line has to say; what does not fit is left
/// out whole.
#[test]
fn status_line_keeps_help_and_quit() {
    let mut a = busy(80, 24);
    a.message = Some("a long message about something that happened just now".into());
    let s = screen(&a, 80, 24);
    let status = s.lines().last().unwrap();
    assert!(status.ends_with("? help  q quit\""), "{status}");
    assert!(
        status.contains("a long message"),
        "the answer to a key first: {status}"
    );
    assert!(
        !status.contains("dropped 1"),
        "a part that does not fit whole: {status}"
    );
}

/// `\d+(\.\d+)?`: a number with no dot left dangling.
fn number(t: &str) -> bool {
    let mut parts = t.splitn(2, '.');
    let whole = parts.next().unwrap_or_default();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && parts.next().is_none_or(digits)
}

/// A token of a header line that holds a digit is one whole figure:
/// `45.2%`, `!12.3%`, `64.0k/s`, `1.23G/7.68G`, `0.08`, `22:13:20Z`,
/// `cpu3`, `3d`. A number the terminal's edge cut (`0.`, `1.2G/7.`,
/// `04:05:0`) is none of them.
fn whole_figure(t: &str) -> bool {
    let t = t.strip_prefix('!').unwrap_or(t);
    if let Some(rate) = t.strip_suffix("/s") {
        let n = rate.strip_suffix(['k', 'M', 'G']).unwrap_or(rate);
        return number(n);
    }
    if let Some((a, b)) = t.split_once('/') {
        let size = |s: &str| s.strip_suffix(['K', 'M', 'G', 'T']).is_some_and(number);
        return size(a) && size(b);
    }
    if let Some(p) = t.strip_suffix('%') {
        return number(p);
    }
    if t.contains(':') {
        let hms = t.strip_suffix('Z').unwrap_or(t);
        let f: Vec<&str> = hms.split(':').collect();
        return f.len() == 3 && f.iter().all(|x| x.len() == 2 && number(x));
    }
    number(t)
        || t.strip_prefix("cpu").is_some_and(number)
        || t.strip_suffix('d').is_some_and(number)
}

/// Why a header line shows a cut figure, if it does: a token that is no
/// whole figure, or a bar without its `]`. Tokens of the host name are the
/// host's own. (A line wider than its place is ruled out where it is
/// drawn: `ui::meters`' own test holds every line to its block.)
fn cut(line: &str, host: &str) -> Option<String> {
    let open = line.matches('[').count();
    if open != line.matches(']').count() {
        return Some(format!("a bar without its end: {line:?}"));
    }
    // The bar's cells (in colour `|`, in mono one character per part)
    // run up to the figure at its end, as in htop.
    let seps = |c: char| c.is_whitespace() || "[]│,;|=-*#~".contains(c);
    for tok in line.split(seps).filter(|t| !t.is_empty()) {
        if tok.bytes().any(|b| b.is_ascii_digit()) && !host.contains(tok) && !whole_figure(tok) {
            return Some(format!("{tok:?} is cut: {line:?}"));
        }
    }
    None
}

#[test]
fn the_cut_check_finds_cut_figures() {
    for ok in [
        "45.2%",
        "!12.3%",
        "64.0k/s",
        "1.23G/7.68G",
        "0.08",
        "22:13:20Z",
        "cpu3",
        "3d",
        "0K/0K",
    ] {
        assert!(whole_figure(ok), "{ok}");
    }
    for bad in ["0.", "1.2G/7.", "04:05:0", "12.3k/", "45.", "1.23G/7"] {
        assert!(!whole_figure(bad), "{bad}");
    }
    assert!(cut("Mem[|||  1.2G/7.68G", "").is_some());
    assert!(cut("Load average: 0.08 0.12 0.10", "").is_none());
}

/// The screen's header lines, unquoted.
fn header_lines(screen: &str, rows: usize) -> Vec<String> {
    screen
        .lines()
        .take(rows)
        .map(|l| l.trim_matches('"').trim_end().to_string())
        .collect()
}

/// No figure is cut at any size from the smallest terminal up, for 2, 16
/// and 96 CPUs, in every header mode.
#[test]
fn no_figure_is_cut_at_any_size() {
    let mut many = fixtures::busy_host();
    let cpus = many.cpus.clone();
    for k in 1..6u32 {
        many.cpus.extend(cpus.iter().cloned().map(|mut c| {
            c.cpu += 16 * k;
            c
        }));
    }
    for frame in [fixtures::idle_host(), fixtures::busy_host(), many] {
        for mode in HeaderMode::ALL {
            for w in (30..=250).step_by(11) {
                for h in [7, 12, 24, 50] {
                    let mut a = app(w, h, true);
                    a.meters.mode = mode;
                    a.push_frame(frame.clone());
                    let rows = usize::from(a.header_rows());
                    for l in header_lines(&screen(&a, w, h), rows) {
                        if let Some(why) = cut(&l, &frame.hostname) {
                            panic!("{w}x{h} {mode:?} {} CPUs: {why}", frame.cpus.len());
                        }
                    }
                }
            }
        }
    }
}

case!(
    live_header_fits_80x24_and_200x50,
    [Need::Tool("tmux", "-V")]
);
/// The real binary at 80x24 and, resized, at 200x50: the header from this
/// host's /proc, no figure cut, no wider than the terminal, the table
/// under it, and the help and quit keys on the status line.
fn live_header_fits_80x24_and_200x50() {
    use common::tmux::Tmux;
    let bin = env!("CARGO_BIN_EXE_nettop");
    let Some(t) = Tmux::start("meters", &format!("{bin} --no-bpf -d 0.5"), 80, 24) else {
        return common::skip("live_header_fits_80x24_and_200x50", "tmux not installed");
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    for (w, h, budget) in [(80u16, 24u16, 6usize), (200, 50, 13)] {
        if w != 80 {
            t.resize(w, h);
        }
        let s = t.wait_for("the header at this width", |s| {
            // The Mem bar spans its column, half the width, when the
            // frame drawn is one of this size.
            let mem_end = s
                .lines()
                .find(|l| l.starts_with("Mem["))
                .and_then(|l| l.chars().position(|c| c == ']'));
            // The tabs and the status line too: a screen captured while
            // the terminal is still redrawing after the resize has the
            // header alone, or every line but the last.
            mem_end.is_some_and(|e| e + 2 >= usize::from(w / 2))
                && s.contains("top misattributes")
                && s.contains("1 Processes")
                && s.lines().count() == usize::from(h)
                && s.lines().last().is_some_and(|l| !l.trim().is_empty())
        });
        let rows = s
            .lines()
            .position(|l| l.contains("1 Processes"))
            .unwrap_or_else(|| panic!("no tabs:\n{s}"));
        assert!(
            rows >= 4 && rows <= budget,
            "{w}x{h}: {rows} header lines:\n{s}"
        );
        for l in s.lines().take(rows) {
            assert!(l.chars().count() <= usize::from(w), "{l:?}");
            if let Some(why) = cut(l.trim_end(), host) {
                panic!("{w}x{h}: {why}\n{s}");
            }
        }
        // Real figures from this host's /proc, not n/a.
        let head: String = s.lines().take(rows).collect::<Vec<_>>().join("\n");
        for want in [
            "Mem[",
            "Swp[",
            "Tasks: ",
            "Load average: ",
            "Uptime: ",
            "0[",
        ] {
            assert!(head.contains(want), "{want}:\n{s}");
        }
        assert!(!head.contains("n/a"), "{s}");
        let status = s.lines().nth(usize::from(h) - 1).unwrap_or_default();
        assert!(status.trim_end().ends_with("? help  q quit"), "{status:?}");
    }
    t.keys(&["q"]);
    t.assert_restored(0);
}

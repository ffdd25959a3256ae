//! The man page the package installs, as `nettop --generate man` writes it:
//! its COLUMNS, KEYS, EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES are
//! the tables the program runs on (the column table, the keymap) and the
//! ones README repeats (`nettop::app::docs`), row for row, so the page
//! cannot describe a column, key or file the program does not have. And
//! groff typesets it without a warning.

use crate::common;
use crate::common::tier::Need;

use std::process::Command;

use nettop::app::docs;
use nettop::output::columns::ProcColumn;
use nettop::ui::keymap;

/// Sections in man-pages(7) order: clap_mangen's, nettop's, the version.
const HEADINGS: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "COLUMNS",
    "KEYS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "EXAMPLES",
    "VERSION",
];

/// The page's roff source, written by the real binary into a scratch
/// directory, and that directory (the page is deleted with it).
fn generate() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .arg("--generate")
        .arg("man")
        .arg(dir.path())
        .output()
        .expect("run nettop --generate man");
    assert!(
        out.status.success(),
        "nettop --generate man: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let path = dir.path().join("nettop.1");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        path.display().to_string(),
        "--generate lists the file it wrote"
    );
    let page = std::fs::read_to_string(&path).expect("nettop.1 is UTF-8 text");
    (dir, path, page)
}

/// The rows each section must hold, in order, as text: a tag (its keys or
/// name) and what it means, code marks dropped.
fn expected() -> Vec<(&'static str, Vec<(String, String)>)> {
    let plain = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter()
            .map(|(k, v)| (k.replace('`', ""), v.replace('`', "")))
            .collect()
    };
    vec![
        (
            "COLUMNS",
            ProcColumn::ALL
                .iter()
                .map(|c| (c.title().to_string(), c.describe().to_string()))
                .collect(),
        ),
        (
            "KEYS",
            keymap::help()
                .into_iter()
                .map(|(k, a)| (k, a.to_string()))
                .collect(),
        ),
        ("EXIT STATUS", plain(docs::EXIT_STATUS)),
        ("ENVIRONMENT", plain(docs::ENVIRONMENT)),
        ("FILES", plain(docs::FILES)),
        ("EXAMPLES", plain(docs::EXAMPLES)),
    ]
}

/// A roff text line as it reads: font changes and no-op escapes dropped,
/// the escapes the page uses for characters replaced by them.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let esc = &rest[i + 1..];
        let (text, len) = if let Some(hex) = esc.strip_prefix("[u") {
            let end = hex.find(']').expect("\\[u...] is closed");
            let c = u32::from_str_radix(&hex[..end], 16)
                .ok()
                .and_then(char::from_u32)
                .expect("\\[uXXXX] names a character");
            (c.to_string(), 2 + end + 1)
        } else if esc.starts_with("(aq") {
            ("'".into(), 3)
        } else if esc.starts_with("(ga") {
            ("`".into(), 3)
        } else if esc.starts_with("fB") || esc.starts_with("fI") || esc.starts_with("fR") {
            (String::new(), 2)
        } else if esc.starts_with('-') {
            ("-".into(), 1)
        } else if esc.starts_with('e') {
            ("\\".into(), 1)
        } else if esc.starts_with('&') || esc.starts_with('%') {
            (String::new(), 1)
        } else {
            panic!("unexpected roff escape in {line:?}");
        };
        out.push_str(&text);
        rest = &esc[len..];
    }
    out.push_str(rest);
    out
}

/// Each `.SH` heading (quotes dropped) and the source lines under it.
fn sections(page: &str) -> Vec<(String, Vec<&str>)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for l in page.lines() {
        if let Some(h) = l.strip_prefix(".SH ") {
            out.push((h.trim_matches('"').to_string(), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(l);
        }
    }
    out
}

/// The (tag, text) of every `.TP` paragraph: the two lines after it.
fn entries(lines: &[&str]) -> Vec<(String, String)> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == ".TP")
        .map(|(i, _)| {
            let at = |j: usize| plain(lines.get(i + j).copied().unwrap_or(""));
            (at(1), at(2))
        })
        .collect()
}

#[test]
fn sections_come_in_man_pages_order() {
    let (_dir, _, page) = generate();
    let got: Vec<String> = sections(&page).into_iter().map(|(h, _)| h).collect();
    assert_eq!(got, HEADINGS, "section headings of nettop.1");
}

#[test]
fn every_table_row_is_in_its_section() {
    let (_dir, _, page) = generate();
    let secs = sections(&page);
    for (heading, want) in expected() {
        let lines = &secs
            .iter()
            .find(|(h, _)| h == heading)
            .unwrap_or_else(|| panic!("no {heading} section"))
            .1;
        let got = entries(lines);
        assert!(want.len() >= 3, "{heading}: table too small: {want:?}");
        assert_eq!(got, want, "{heading} section against its table");
    }
}

/// What a man reader would misread: a text line roff takes for a request,
/// a bare `-` that typesets as a hyphen (copied flags would not work),
/// bytes groff reads as Latin-1.
#[test]
fn generated_sections_are_clean_roff() {
    let (_dir, _, page) = generate();
    const MACROS: &[&str] = &[".SH", ".TP"];
    let ours = [
        "COLUMNS",
        "KEYS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
    ];
    for (heading, lines) in sections(&page) {
        if !ours.contains(&heading.as_str()) {
            continue;
        }
        for l in lines {
            assert!(l.is_ascii(), "{heading}: non-ASCII source line {l:?}");
            assert!(!l.starts_with('\''), "{heading}: {l:?} reads as a request");
            if l.starts_with('.') {
                let name = l.split_whitespace().next().unwrap_or("");
                assert!(
                    MACROS.contains(&name),
                    "{heading}: {l:?} reads as a request"
                );
            }
            let bare = l
                .char_indices()
                .filter(|&(i, c)| c == '-' && !l[..i].ends_with('\\'))
                .count();
            assert_eq!(bare, 0, "{heading}: unescaped '-' in {l:?}");
        }
    }
}

case!(
    groff_renders_it_without_warnings,
    [Need::Tool("groff", "--version")]
);
/// groff typesets the page without a warning (`-ww` enables them all), and
/// what it prints has every heading and row. A very long line keeps each
/// paragraph on one line, so no row is broken or hyphenated.
fn groff_renders_it_without_warnings() {
    const T: &str = "groff_renders_it_without_warnings";
    if !common::tool_runs("groff", "--version") {
        common::skip(T, "groff is not installed (Debian: groff-base)");
        return;
    }
    let (_dir, path, _) = generate();
    let out = Command::new("groff")
        .args([
            "-man",
            "-Tutf8",
            "-ww",
            "-rLL=3000n",
            "-P-c",
            "-P-b",
            "-P-u",
        ])
        .arg(&path)
        .env("GROFF_NO_SGR", "1")
        .output()
        .expect("run groff");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "groff: {:?}\n{stderr}", out.status);
    assert!(stderr.trim().is_empty(), "groff warnings:\n{stderr}");
    // Outside Debian's man.local `\-` prints as U+2212 and `-` as U+2010.
    let norm = |s: &str| -> String {
        s.replace(['\u{2212}', '\u{2010}'], "-")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<String> = text.lines().map(norm).collect();
    for h in HEADINGS {
        assert!(lines.iter().any(|l| l == h), "no {h} heading in:\n{text}");
    }
    let all = norm(&text);
    for (heading, rows) in expected() {
        for (tag, what) in rows {
            for s in [&tag, &what] {
                assert!(all.contains(&norm(s)), "{heading}: {s:?} not printed");
            }
        }
    }
}

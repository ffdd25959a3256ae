//! `nettop --generate man|completions DIR` (hidden): the man page and shell
//! completions, generated from the clap definition so they never drift
//! from `--help`. The packaging step runs it on the binary it packages;
//! build.rs cannot, because the command line uses the crate's own parsers.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use crate::app::cli::Cli;
use crate::app::docs;
use crate::output::columns::ProcColumn;
use crate::ui::keymap;

/// Writes what `what` names into `dir` and lists the files on stdout.
pub fn run(what: &str, dir: &Path) -> anyhow::Result<u8> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let written = match what {
        "man" => vec![man_page(dir)?],
        "completions" => completions(dir)?,
        other => bail!("--generate '{other}': expected man or completions"),
    };
    for p in written {
        println!("{}", p.display());
    }
    Ok(0)
}

/// nettop.1.
pub fn man_page(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("nettop.1");
    let page = page().context("rendering the man page")?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The page in man-pages(7) order: clap_mangen's sections for what the
/// command line defines, ours for what it cannot (columns, keys, exit
/// status, environment, files, examples), then the version. clap_mangen's
/// `render` would put its VERSION before anything appended to it.
fn page() -> std::io::Result<Vec<u8>> {
    let cmd = Cli::command();
    let man = Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    // Every render_* call starts with the roff crate's preamble (the Aq
    // string); it is the part of the title before `.TH`, needed once.
    let preamble = out
        .windows(4)
        .position(|w| w == b"\n.TH")
        .map_or(Vec::new(), |i| out[..=i].to_vec());
    let mut part = |render: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut buf = Vec::new();
        render(&mut buf)?;
        out.extend_from_slice(buf.strip_prefix(preamble.as_slice()).unwrap_or(&buf));
        Ok::<(), std::io::Error>(())
    };
    part(&|b| man.render_name_section(b))?;
    part(&|b| man.render_synopsis_section(b))?;
    part(&|b| man.render_description_section(b))?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        part(&|b| man.render_options_section(b))?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        part(&|b| man.render_subcommands_section(b))?;
    }
    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        part(&|b| man.render_extra_section(b))?;
    }
    part(&|b| {
        b.extend_from_slice(sections().as_bytes());
        Ok(())
    })?;
    if cmd.get_version().is_some() || cmd.get_long_version().is_some() {
        part(&|b| man.render_version_section(b))?;
    }
    if cmd.get_author().is_some() {
        part(&|b| man.render_authors_section(b))?;
    }
    Ok(out)
}

/// How a table's first cell is set: man-pages(7) puts what is typed in
/// bold and file names in italics.
#[derive(Clone, Copy)]
enum Tag {
    Bold,
    Italic,
}

/// The sections nettop adds, from the tables the TUI, batch text and
/// README use, so the page says what the program does.
fn sections() -> String {
    let mut s = String::new();
    let columns = ProcColumn::ALL
        .iter()
        .map(|c| (font(Tag::Bold, c.title()), c.describe().to_string()));
    table(
        &mut s,
        "COLUMNS",
        "The task columns of the Processes view and batch text (`-b`), in display \
         order. Percentages are of one CPU; with `-H`, PID reads TID.",
        columns,
    );
    let keys = keymap::help().into_iter().map(|(keys, action)| {
        let names: Vec<String> = keys
            .split(' ')
            // The mouse is no key to type: named, not set as one.
            .map(|k| font(if k == "mouse" { Tag::Italic } else { Tag::Bold }, k))
            .collect();
        (names.join(" "), action.to_string())
    });
    table(
        &mut s,
        "KEYS",
        "The TUI's keys, as its help overlay (`?`) lists them.",
        keys,
    );
    for (heading, rows, tag) in [
        ("EXIT STATUS", docs::EXIT_STATUS, Tag::Bold),
        ("ENVIRONMENT", docs::ENVIRONMENT, Tag::Bold),
        ("FILES", docs::FILES, Tag::Italic),
        ("EXAMPLES", docs::EXAMPLES, Tag::Bold),
    ] {
        let rows = rows
            .iter()
            .map(|(name, text)| (font(tag, name), text.to_string()));
        table(&mut s, heading, "", rows);
    }
    s
}

/// One section: an optional paragraph, then a tagged paragraph per row,
/// the tag already set and the text with `code` spans in bold.
fn table(
    out: &mut String,
    heading: &str,
    intro: &str,
    rows: impl Iterator<Item = (String, String)>,
) {
    out.push_str(&format!(".SH \"{heading}\"\n"));
    if !intro.is_empty() {
        out.push_str(&line(&marked(intro)));
    }
    for (tag, text) in rows {
        out.push_str(".TP\n");
        out.push_str(&line(&tag));
        out.push_str(&line(&marked(&text)));
    }
}

/// `s` in one font, escaped. Set text is something to type or a name,
/// so no word of it is hyphenated at a line's end (`\%`): a reader who
/// copies `create-blocks-from` broken over two lines gets two words.
fn font(tag: Tag, s: &str) -> String {
    let f = match tag {
        Tag::Bold => "B",
        Tag::Italic => "I",
    };
    let words: Vec<String> = s.split(' ').map(|w| format!("\\%{}", escape(w))).collect();
    format!("\\f{f}{}\\fR", words.join(" "))
}

/// The tables' convention (see `app::docs`): backticks mark code, set in
/// bold; the rest is roman.
fn marked(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            0 => escape(part),
            _ => font(Tag::Bold, part),
        })
        .collect()
}

/// A text line: one that starts with `.` or `'` would be read as a request.
fn line(s: &str) -> String {
    let s = s.trim();
    let guard = if s.starts_with(['.', '\'']) {
        "\\&"
    } else {
        ""
    };
    format!("{guard}{s}\n")
}

/// Text as roff prints it literally: a backslash would start an escape,
/// `-` is a hyphen where flags need the ASCII minus `\-`, `'` typesets as
/// a closing quote, and groff reads input as Latin-1, so anything beyond
/// ASCII goes by its code point. A control character (a newline would
/// start a new input line) becomes a space.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\e"),
            '-' => o.push_str("\\-"),
            '\'' => o.push_str("\\(aq"),
            '`' => o.push_str("\\(ga"),
            c if c.is_control() => o.push(' '),
            c if c.is_ascii() => o.push(c),
            c => o.push_str(&format!("\\[u{:04X}]", u32::from(c))),
        }
    }
    o
}

/// nettop.bash, _nettop (zsh), nettop.fish.
pub fn completions(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut cmd = Cli::command();
    [Shell::Bash, Shell::Zsh, Shell::Fish]
        .into_iter()
        .map(|sh| {
            clap_complete::generate_to(sh, &mut cmd, "nettop", dir)
                .with_context(|| format!("writing {sh} completions to {}", dir.display()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_specials_print_literally() {
        assert_eq!(escape(r"a\b"), r"a\eb");
        assert_eq!(escape("--no-bpf"), r"\-\-no\-bpf");
        assert_eq!(escape("it's"), r"it\(aqs");
        assert_eq!(escape("1 … N"), r"1 \[u2026] N");
        assert_eq!(escape("a\nb"), "a b");
        assert_eq!(line(".hidden"), "\\&.hidden\n");
        assert_eq!(line("plain"), "plain\n");
        assert_eq!(
            marked("run `nettop -b` now"),
            r"run \fB\%nettop \%\-b\fR now"
        );
    }
}

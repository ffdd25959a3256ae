//! The layers stay one-way. Reads every `crate::`, `super::` and `self::`
//! path in src/ (outside `#[cfg(test)]` modules, whose fixtures may come
//! from anywhere) and holds them against the layer table in
//! docs/ARCHITECTURE.md: a top-level module may use only modules of lower
//! layers, never one of its own layer or above. Inside every folder the
//! same holds without a table: no two sibling modules reach each other,
//! directly or through a ring.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root, e.g. `["ui", "views", "cpus"]`.
type ModPath = Vec<String>;

/// Every module file of src/ (not main.rs, lib.rs) with its module path.
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, at: &ModPath, out: &mut BTreeMap<ModPath, PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if p.is_dir() {
                let mut sub = at.clone();
                sub.push(name.to_string());
                walk(&p, &sub, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut m = at.clone();
                match stem {
                    "mod" => {}
                    "main" | "lib" if at.is_empty() => continue,
                    s => m.push(s.to_string()),
                }
                out.insert(m, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &Vec::new(), &mut out);
    out
}

/// `s` without comments, string literals' contents and `#[cfg(test)]`
/// modules (a test may build its fixtures from any layer).
fn code_of(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('{', '\n'); lifetimes ('a) pass through.
            out.push_str("' '");
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    strip_test_modules(&out)
}

/// Removes `#[cfg(test)] mod NAME { … }` blocks (braces matched).
fn strip_test_modules(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let is_mod = after.starts_with("mod ") || after.starts_with("pub mod ");
        let Some(open) = after.find(['{', ';']).filter(|_| is_mod) else {
            // A gated item other than an inline module: keep it.
            out.push_str("#[cfg(test)]");
            rest = &rest[at + "#[cfg(test)]".len()..];
            continue;
        };
        if after.as_bytes()[open] == b';' {
            // `#[cfg(test)] mod x;`: a test-only file, skipped by name.
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let t = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![t.to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand_use)
        .map(|p| {
            if p == "self" {
                prefix.trim_end_matches("::").to_string()
            } else {
                format!("{prefix}{p}")
            }
        })
        .collect()
}

/// Every path a file names that starts at `crate`, `super` or `self`.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` trees, with their braces.
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let tail = &rest[at + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            out.extend(expand_use(&tail[..end]));
        }
        rest = &tail[end.min(tail.len())..];
    }
    // Paths used inline (`crate::model::compute(...)`).
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(k) = code[from..].find(start) {
            let at = from + k;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let mut end = at;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':')
            {
                end += 1;
            }
            out.push(code[at..end].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The module `path` (as written in module `at`) names: the longest
/// prefix of its absolute form that is a module. `None` for paths that
/// do not start at `crate`, `super` or `self`.
fn resolve(path: &str, at: &ModPath, mods: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let first = segs.next()?;
    // `self` is the module itself, `super` its parent (a folder's `mod.rs`
    // is the folder's module, so its `super` is the folder's parent).
    let mut abs: ModPath = match first {
        "crate" => Vec::new(),
        "self" => at.clone(),
        "super" => {
            let mut a = at.clone();
            a.pop();
            a
        }
        _ => return None,
    };
    for s in segs {
        if s == "super" {
            abs.pop();
        } else {
            abs.push(s.to_string());
        }
    }
    while !abs.is_empty() && !mods.contains(&abs) {
        abs.pop();
    }
    Some(abs)
}

/// Module → the modules its code names.
fn references(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let files = module_files(src);
    let mods: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut out = BTreeMap::new();
    for (m, file) in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let targets: BTreeSet<ModPath> = paths_in(&code_of(&text))
            .iter()
            .filter_map(|p| resolve(p, m, &mods))
            .filter(|t| t != m && !t.is_empty())
            .collect();
        out.insert(m.clone(), targets);
    }
    out
}

/// The layer table of docs/ARCHITECTURE.md: module → rank (0 = bottom).
fn layer_table(doc: &str) -> BTreeMap<String, usize> {
    let start = doc
        .find("<!-- layers -->")
        .expect("docs/ARCHITECTURE.md has a <!-- layers --> table");
    let end = doc[start..]
        .find("<!-- /layers -->")
        .expect("the layer table ends with <!-- /layers -->")
        + start;
    let mut ranks = BTreeMap::new();
    for line in doc[start..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(rank) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        for m in cells.get(2).copied().unwrap_or_default().split(',') {
            let m = m.trim().trim_matches('`').trim();
            if !m.is_empty() {
                ranks.insert(m.to_string(), rank);
            }
        }
    }
    ranks
}

/// Sibling edges: for a reference from `a` to `b` that leaves their
/// common parent's child, the edge between the two children.
fn sibling_edges(refs: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> BTreeSet<(ModPath, ModPath)> {
    let mut edges = BTreeSet::new();
    for (a, targets) in refs {
        for b in targets {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common < a.len() && common < b.len() {
                edges.insert((a[..=common].to_vec(), b[..=common].to_vec()));
            }
        }
    }
    edges
}

/// Rings among siblings, each as its members.
fn cycles(edges: &BTreeSet<(ModPath, ModPath)>) -> Vec<Vec<ModPath>> {
    let nodes: BTreeSet<&ModPath> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &ModPath| -> BTreeSet<ModPath> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for (a, b) in edges {
                if *a == n && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if done.contains(n) {
            continue;
        }
        let fwd = reach(n);
        if !fwd.contains(n) {
            continue;
        }
        let ring: Vec<ModPath> = fwd.into_iter().filter(|m| reach(m).contains(n)).collect();
        done.extend(ring.iter().cloned());
        out.push(ring);
    }
    out
}

fn show(m: &ModPath) -> String {
    m.join("::")
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn top_level_modules_only_use_lower_layers() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
            .expect("docs/ARCHITECTURE.md");
    let ranks = layer_table(&doc);
    let refs = references(&src());
    let tops: BTreeSet<String> = refs.keys().map(|m| m[0].clone()).collect();
    let unplaced: Vec<&String> = tops.iter().filter(|t| !ranks.contains_key(*t)).collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from the layer table in docs/ARCHITECTURE.md: {unplaced:?}"
    );
    let mut bad = Vec::new();
    for (from, targets) in &refs {
        for to in targets {
            let (a, b) = (&from[0], &to[0]);
            if a != b && ranks[b] >= ranks[a] {
                bad.push(format!(
                    "{} (layer {}) uses {} (layer {})",
                    show(from),
                    ranks[a],
                    show(to),
                    ranks[b]
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "upward or sideways references:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_two_sibling_modules_reach_each_other() {
    let rings = cycles(&sibling_edges(&references(&src())));
    let text: Vec<String> = rings
        .iter()
        .map(|r| r.iter().map(show).collect::<Vec<_>>().join(" ⇄ "))
        .collect();
    assert!(text.is_empty(), "module cycles:\n{}", text.join("\n"));
}

/// The checker itself finds what it is for: an upward reference, a ring,
/// grouped imports, `super::` chains, and nothing inside tests or comments.
#[test]
fn the_checker_sees_references() {
    let dir = tempfile::tempdir().unwrap();
    let w = |p: &str, s: &str| {
        let f = dir.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, s).unwrap();
    };
    w(
        "low/mod.rs",
        "pub mod a;\npub mod b;\n// crate::high::x in a comment\n",
    );
    w("low/a.rs", "use super::b::X;\n");
    w("low/b.rs", "pub struct X;\nfn f() { super::a::g() }\n");
    w(
        "high/mod.rs",
        "use crate::{low::{a, b::X}, other};\n#[cfg(test)]\nmod tests { use crate::top::T; }\n",
    );
    w("other.rs", "fn f() { crate::high::z(); }\n");
    w("top.rs", "");
    let refs = references(dir.path());
    let m = |s: &str| s.split("::").map(String::from).collect::<ModPath>();
    assert_eq!(
        refs[&m("high")],
        [m("low::a"), m("low::b"), m("other")].into_iter().collect()
    );
    assert_eq!(refs[&m("low")], BTreeSet::new());
    let rings = cycles(&sibling_edges(&refs));
    let mut rings: Vec<Vec<String>> = rings.iter().map(|r| r.iter().map(show).collect()).collect();
    rings.sort();
    assert_eq!(
        rings,
        vec![
            vec!["high".to_string(), "other".to_string()],
            vec!["low::a".to_string(), "low::b".to_string()],
        ]
    );
    let ranks = layer_table(
        "<!-- layers -->\n| rank | modules |\n|---|---|\n| 0 | `low`, `top` |\n| 1 | `high` |\n<!-- /layers -->",
    );
    assert_eq!(ranks["top"], 0);
    assert_eq!(ranks["high"], 1);
}

/// The files where an error may be a bare `String`, and why: only where the
/// message itself is the value and nothing propagates further (see
/// "Errors" in docs/ARCHITECTURE.md). Everywhere else an error is an
/// `anyhow::Error`, or a `thiserror` enum where a caller matches on it.
const STRING_ERRORS: &[(&str, &str)] = &[
    (
        "app/cli.rs",
        "clap value parsers, and `Cli::check` whose message becomes clap's error",
    ),
    (
        "app/config.rs",
        "the `W` hook: its answer is the status line",
    ),
    (
        "app/tui/mod.rs",
        "the `k`/`r`/`a` hook: its answer is the status line",
    ),
    (
        "metrics/openmetrics/select.rs",
        "`resolve`, the `--metrics-exclude` value parser",
    ),
    (
        "record/retention.rs",
        "the `--keep` and `--keep-for` value parsers",
    ),
    (
        "sys/units.rs",
        "the duration, time and size parsers behind clap's value parsers and `T`",
    ),
    (
        "ui/control.rs",
        "a control's answer, shown on the status line",
    ),
    ("ui/mod.rs", "the hooks' answers, shown on the status line"),
    (
        "ui/prompt.rs",
        "the `T` prompt's validator, shown on the status line",
    ),
];

/// The error types `code` gives as a bare `String`: `Result<…, String>`
/// (nested generics allowed) and `type Error = String`.
fn string_errors(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("Result<").map(|k| from + k) {
        from = at + "Result<".len();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        // The generic arguments up to the matching '>' ("->" is no bracket).
        let (mut depth, mut last_comma, mut end) = (1usize, None, None);
        for (k, &c) in b.iter().enumerate().skip(from) {
            match c {
                b'<' => depth += 1,
                b'>' if b[k - 1] != b'-' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(k);
                        break;
                    }
                }
                b',' if depth == 1 => last_comma = Some(k),
                _ => {}
            }
        }
        if let (Some(comma), Some(end)) = (last_comma, end)
            && code[comma + 1..end].trim() == "String"
        {
            out.push(
                code[at..=end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    if code.contains("type Error = String") {
        out.push("type Error = String".into());
    }
    out
}

/// Files with `String` errors outside [`STRING_ERRORS`], and entries of it
/// that no longer have any.
fn string_error_report(src: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    let mut seen = BTreeSet::new();
    for file in module_files(src).values() {
        let rel = file
            .strip_prefix(src)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        let found = string_errors(&code_of(&std::fs::read_to_string(file).unwrap_or_default()));
        if found.is_empty() {
            continue;
        }
        seen.insert(rel.clone());
        if !STRING_ERRORS.iter().any(|(f, _)| *f == rel) {
            bad.push(format!(
                "src/{rel}: {} (use anyhow::Result, or a thiserror enum if a caller matches on \
                 the kind; a String error is only for a message that is itself the value)",
                found.join("; ")
            ));
        }
    }
    for (f, why) in STRING_ERRORS {
        if !seen.contains(*f) {
            bad.push(format!(
                "src/{f} ({why}) has no String error any more: drop it from the list"
            ));
        }
    }
    bad
}

#[test]
fn string_errors_only_where_the_message_is_the_value() {
    let bad = string_error_report(&src());
    assert!(
        bad.is_empty(),
        "String errors out of place:\n{}",
        bad.join("\n")
    );
}

/// The scanner finds what it is for: nested generics, `type Error`, and
/// nothing in comments, strings or tests.
#[test]
fn the_string_error_scanner_sees_them() {
    let found = |s: &str| string_errors(&code_of(s));
    assert_eq!(
        found("fn f() -> Result<Vec<(u32, u64)>, String> {}"),
        ["Result<Vec<(u32, u64)>, String>"]
    );
    assert_eq!(
        found("impl TryFrom<String> for X { type Error = String; }"),
        ["type Error = String"]
    );
    assert_eq!(
        found("fn f(g: impl Fn() -> Result<(), String>) {}"),
        ["Result<(), String>"]
    );
    assert!(found("fn f() -> anyhow::Result<String> {}").is_empty());
    assert!(found("fn f() -> Result<String, io::Error> {}").is_empty());
    assert!(found("fn f() -> Result<(), MyError<String>> {}").is_empty());
    assert!(found("// Result<(), String>\nfn f() { g(\"Result<(), String>\") }").is_empty());
    assert!(found("#[cfg(test)]\nmod tests { fn f() -> Result<(), String> {} }").is_empty());
}

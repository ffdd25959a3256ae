//! README's exit status, environment, files and examples tables are the
//! man page's (`nettop::app::docs` feeds both), row for row: a code, a
//! variable, a path or an example changed in one place and not the other
//! fails here. The examples are also real: each parses with the real
//! command line.

use crate::common;

use clap::Parser;
use nettop::app::cli::Cli;
use nettop::app::docs;

/// One of `nettop::app::docs`' tables: (name, text) rows.
type Rows = &'static [(&'static str, &'static str)];

/// The tables: README's section heading, its table header, the rows.
const TABLES: &[(&str, &str, Rows)] = &[
    ("### Examples", "| command | what it does |", docs::EXAMPLES),
    ("### Exit status", "| code | meaning |", docs::EXIT_STATUS),
    (
        "### Environment",
        "| variable | effect |",
        docs::ENVIRONMENT,
    ),
    ("### Files", "| file | what it is |", docs::FILES),
];

/// A row as README writes it: the name as code.
fn as_readme(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(k, v)| (format!("`{k}`"), v.to_string()))
        .collect()
}

#[test]
fn readme_tables_are_the_man_pages() {
    let readme = common::readme::text();
    let mut wrong = String::new();
    for (heading, header, rows) in TABLES {
        let want = as_readme(rows);
        if common::readme::table_rows(&readme, heading, header) != want {
            let markdown: String = want
                .iter()
                .map(|(k, v)| format!("| {k} | {v} |\n"))
                .collect();
            wrong.push_str(&format!("\n{heading}\n\n{header}\n|---|---|\n{markdown}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "README's tables differ from nettop::app::docs; they should read:\n{wrong}"
    );
}

/// What README's table cells and the man page's code marks can carry: no
/// `|` (it ends a cell), backticks in pairs, no stray whitespace.
#[test]
fn rows_fit_a_table_cell_and_the_man_page() {
    for (heading, _, rows) in TABLES {
        for (k, v) in rows.iter() {
            for cell in [k, v] {
                assert!(!cell.contains('|'), "{heading}: '|' in {cell:?}");
                assert!(!cell.contains('\n'), "{heading}: newline in {cell:?}");
                assert_eq!(cell.trim(), *cell, "{heading}: whitespace around {cell:?}");
                assert!(
                    cell.matches('`').count() % 2 == 0,
                    "{heading}: unpaired backtick in {cell:?}"
                );
            }
            assert!(
                !k.contains('`'),
                "{heading}: the name {k:?} is code already"
            );
        }
    }
}

#[test]
fn examples_are_real_command_lines() {
    for (cmd, _) in docs::EXAMPLES {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"nettop"), "{cmd}");
        let cli = Cli::try_parse_from(&words).unwrap_or_else(|e| panic!("{cmd}:\n{e}"));
        if let Err(e) = cli.check() {
            panic!("{cmd}: {e}");
        }
    }
}

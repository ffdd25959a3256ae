//! README's column table, batch text and the TUI's Processes view name the
//! same task columns in the same order and print the same cells: one
//! column table (src/output/columns.rs) feeds both front ends, and this
//! test keeps README honest about it.

mod common;

use nettop::output::text::{TextOptions, render_frame};
use nettop::ui::app::{App, Options, Theme};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Column names from README's "Reading the columns" table, in order.
fn readme_columns() -> Vec<String> {
    common::readme::table_rows(
        &common::readme::text(),
        "## Reading the columns",
        "| column | meaning |",
    )
    .into_iter()
    .map(|(c, _)| c.trim_matches('`').to_string())
    .collect()
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|w| w.trim_matches(['▼', '▲']).to_string())
        .filter(|w| !w.is_empty() && w != "!")
        .collect()
}

/// The batch task table: its header, and the row of `id`.
fn batch(id: &str) -> (Vec<String>, Vec<String>) {
    let frame = fixtures::busy_host();
    let opts = TextOptions {
        users: fixtures::users().into_iter().collect(),
        ..Default::default()
    };
    let text = render_frame(&frame, &opts);
    let lines: Vec<&str> = text.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.trim_start().starts_with("PID ") && l.contains("COMMAND"))
        .unwrap_or_else(|| panic!("no task table header in:\n{text}"));
    let row = lines[h + 1..]
        .iter()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row {id} in:\n{text}"));
    (words(lines[h]), words(row))
}

/// The TUI's Processes view on a terminal wide enough for every column.
fn tui(id: &str) -> (Vec<String>, Vec<String>) {
    let (w, h) = (260, 50);
    let mut app = App::new(Options {
        theme: Theme::mono(),
        width: w,
        height: h,
        ..Options::default()
    });
    app.add_users(fixtures::users());
    app.push_frame(fixtures::busy_host());
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render::draw(f, &app)).unwrap();
    let screen: Vec<String> = (0..h)
        .map(|y| {
            (0..w)
                .map(|x| t.backend().buffer()[(x, y)].symbol().to_string())
                .collect()
        })
        .collect();
    let hdr = screen
        .iter()
        .position(|l| l.trim_start().starts_with("PID ") && l.contains("COMMAND"))
        .unwrap_or_else(|| panic!("no Processes header in:\n{}", screen.join("\n")));
    let row = screen[hdr + 1..]
        .iter()
        .map(|l| words(l))
        .find(|w| w.first().map(String::as_str) == Some(id))
        .unwrap_or_else(|| panic!("no row {id} on screen"));
    (words(&screen[hdr]), row)
}

#[test]
fn readme_batch_and_tui_show_the_same_columns() {
    let readme = readme_columns();
    assert!(readme.len() >= 10, "README column table: {readme:?}");
    let (batch_header, _) = batch("880");
    let (tui_header, _) = tui("880");
    assert_eq!(batch_header, readme, "batch text header vs README");
    assert_eq!(tui_header, readme, "TUI Processes header vs README");
}

#[test]
fn batch_and_tui_print_the_same_cells() {
    // A busy row (figures in every column) and an idle one (dashes).
    for id in ["880", "5001", "7026"] {
        let (_, b) = batch(id);
        let (_, t) = tui(id);
        assert_eq!(b, t, "row {id}: batch vs TUI");
    }
}

/// README's words for the cells a `/proc`-only frame cannot fill are the
/// ones the column table prints (issue 23: it said `-` while nettop
/// printed `n/a`).
#[test]
fn readme_names_the_placeholders_the_columns_print() {
    use nettop::output::columns::{ProcColumn, RowCtx};
    let readme = common::readme::text();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let f = fixtures::busy_host();
    let t = &f.processes[0];
    let users = std::collections::HashMap::new();
    let cx = |traced| RowCtx {
        users: &users,
        cpu_node: &[],
        traced,
        cmdline: false,
    };
    let untraced = ProcColumn::NetRx.text(t, &cx(false));
    assert!(
        flat.contains(&format!("can measure print `{untraced}`")),
        "README must say the tracer-only columns print `{untraced}` without BPF"
    );
    let mut idle = t.clone();
    idle.softirq_stolen_pct = Default::default();
    let below = ProcColumn::NetRx.text(&idle, &cx(true));
    assert!(
        flat.contains(&format!("below 0.05 % print `{below}`")),
        "README must say figures below 0.05 % print `{below}`"
    );
}

//! README's column tables, batch text and the TUI name the same columns in
//! the same order and print the same cells: one table per entity
//! (src/output/columns.rs for tasks, src/output/fields.rs and its users
//! for devices, CPUs and cgroups) feeds both front ends, and these tests
//! keep README honest about it.

mod common;

use nettop::model::devconf::DeviceConfigs;
use nettop::model::frame::Frame;
use nettop::output::devices::DevField;
use nettop::output::fields::Field;
use nettop::output::text::{TextOptions, render_frame};
use nettop::sys::cpuset::CpuSet;
use nettop::topology::{HostTopology, Irq, Nic, RxQueue, XdpMode};
use nettop::ui::app::{App, Extras, Options, Theme};
use nettop::ui::rows::View;
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

/// README's table with header line `header` under `heading` against a
/// field table: the same columns in the same order, each with the table's
/// own words. On a mismatch it prints the table README should hold.
fn readme_matches<F: Field>(heading: &str, header: &str) {
    let rows = common::readme::table_rows(&common::readme::text(), heading, header);
    let want: Vec<(String, String)> = F::ALL
        .iter()
        .map(|c| (format!("`{}`", c.title()), c.describe().to_string()))
        .collect();
    if rows != want {
        let table: Vec<String> = want.iter().map(|(t, d)| format!("| {t} | {d} |")).collect();
        panic!(
            "README's '{header}' table under '{heading}' must read:\n{header}\n|---|---|\n{}",
            table.join("\n")
        );
    }
}

#[test]
fn readme_lists_the_device_columns() {
    readme_matches::<DevField>(
        "### What a packet costs, and every network namespace",
        "| device column | meaning |",
    );
}

/// A topology that knows the busy host's NIC: generic XDP, RPS to CPUs 3
/// and 5, queue 0's IRQ landing on CPU 3.
fn busy_topology() -> HostTopology {
    let set = |s: &str| CpuSet::parse_list(s).unwrap();
    HostTopology {
        nics: vec![Nic {
            name: "ens1f0np0".into(),
            rx_queues: vec![RxQueue {
                queue: 0,
                rps_cpus: set("3,5"),
            }],
            irqs: vec![120],
            xdp: XdpMode::Generic,
            ..Default::default()
        }],
        irqs: vec![Irq {
            irq: 120,
            name: "mlx5_comp0@pci:0000:81:00.0".into(),
            nic: Some("ens1f0np0".into()),
            effective: Some(set("3")),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The screen's lines of the TUI showing `view` at `w` columns.
fn tui_screen(frame: Frame, view: View, topo: Option<&HostTopology>, w: u16) -> Vec<String> {
    let h = 40;
    let mut app = App::new(Options {
        theme: Theme::mono(),
        width: w,
        height: h,
        ..Options::default()
    });
    app.add_users(fixtures::users());
    if let Some(t) = topo {
        app.set_extras(Extras {
            devices: Some(DeviceConfigs::of(t)),
            ..Default::default()
        });
    }
    app.push_frame(frame);
    app.view = view;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render::draw(f, &app)).unwrap();
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| t.backend().buffer()[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

/// The line that starts with `first` (the table's first header), and the
/// lines under it up to the first blank one.
fn table_at(lines: &[String], first: &str) -> (String, Vec<String>) {
    let h = lines
        .iter()
        .position(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no {first} header in:\n{}", lines.join("\n")));
    let rows = lines[h + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .cloned()
        .collect();
    (lines[h].clone(), rows)
}

/// The TUI's Devices/NAPI view and batch text's device table are one
/// table. Both take their columns from `DevField::ALL` (the TUI those that
/// fit, batch all but the TUI's own) and every cell's text from
/// `DevField::cell`, on the same lines (`output::devices::lines`) and the
/// same configuration (`DeviceView::config`: batch's frame joins it from
/// the topology, the TUI's App joins what its topology thread read). So a
/// column added once, to `DevField`, shows in both with the same text.
/// This test walks `DevField::ALL` rather than a list of its own, so it
/// checks a new column without being edited.
#[test]
fn tui_and_batch_device_tables_are_one_table() {
    let topo = busy_topology();
    let frame = fixtures::busy_host();
    let screen = tui_screen(frame.clone(), View::Devices, Some(&topo), 220);
    let mut joined = frame;
    joined.attach_config(&topo);
    let text = render_frame(&joined, &TextOptions::default());
    let batch_lines: Vec<String> = text.lines().map(String::from).collect();
    let first = DevField::ALL[0].title();
    let (tui_head, tui_rows) = table_at(&screen, first);
    let (batch_head, batch_rows) = table_at(&batch_lines, first);
    let titles = |keep: &dyn Fn(DevField) -> bool| -> Vec<String> {
        DevField::ALL
            .iter()
            .filter(|c| keep(**c))
            .map(|c| c.title().to_string())
            .collect()
    };
    assert_eq!(words(&tui_head), titles(&|_| true), "TUI header");
    assert_eq!(
        words(&batch_head),
        titles(&|c| !c.tui_only()),
        "batch header"
    );
    // Every device batch prints, with the same cells on screen; and the
    // configuration made it to both (XDP is the frame's, not a blank).
    let devices: Vec<&String> = batch_rows.iter().filter(|l| !l.starts_with(' ')).collect();
    assert!(!devices.is_empty(), "{text}");
    for b in devices {
        let label = b.split("  ").next().unwrap();
        let t = tui_rows
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} on screen:\n{}", screen.join("\n")));
        assert_eq!(words(t), words(b), "{label}: TUI vs batch");
    }
    let nic = |rows: &[String]| rows.iter().find(|l| l.starts_with("ens1f0np0")).cloned();
    for row in [nic(&tui_rows), nic(&batch_rows)] {
        let row = row.expect("the NIC's line");
        assert!(
            row.contains(" generic ") && row.contains("q0:120→3"),
            "{row}"
        );
    }
}

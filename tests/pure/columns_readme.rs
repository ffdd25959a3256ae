//! README's column tables, batch text and the TUI name the same columns in
//! the same order and print the same cells: one table per entity
//! (src/output/columns.rs for tasks, src/output/fields.rs and its users
//! for devices, CPUs and cgroups) feeds both front ends, and these tests
//! keep README honest about it.

use crate::common;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use nettop::model::devconf::DeviceConfigs;
use nettop::model::frame::Frame;
use nettop::output::cgroups::CgField;
use nettop::output::cpus::CpuField;
use nettop::output::devices::DevField;
use nettop::output::fields::Field;
use nettop::output::text::{TextOptions, render_frame};
use nettop::sys::cpuset::CpuSet;
use nettop::topology::{HostTopology, Irq, Nic, RxQueue, XdpMode};
use nettop::ui::rows::View;
use nettop::ui::state::{App, Extras, Options, Theme};
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
    if view == View::Processes {
        // The grouped view: the only table of the Processes tab that is
        // not the task table, whose test is above.
        app.handle_event(&Event::Key(KeyEvent::new(
            KeyCode::Char('C'),
            KeyModifiers::NONE,
        )));
    }
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

/// The cells of `line` laid out as `cols` are: each its width, one space
/// between, the last to the end of the line; trimmed.
fn cells<F: Field>(line: &str, cols: &[F]) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut at = 0;
    let mut out = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        let end = if i + 1 == cols.len() {
            chars.len()
        } else {
            (at + c.width() as usize).min(chars.len())
        };
        out.push(
            chars[at.min(end)..end]
                .iter()
                .collect::<String>()
                .trim()
                .to_string(),
        );
        at = end + 1;
    }
    out
}

/// The TUI and batch text show one table `F`. `tui` and `batch` are the
/// screen's and the text's lines; the TUI's terminal is wide enough for
/// every column. Both headers name the table's columns in order (batch
/// all but the TUI's own); every row batch prints is on screen, found by
/// its first cell, with the same text in every column batch prints but
/// those `skip` names (drawn differently on screen, as a bar).
fn one_table<F: Field + std::fmt::Debug>(tui: &[String], batch: &[String], skip: &[F]) {
    let first = F::ALL[0].title();
    let start = |lines: &[String]| {
        lines
            .iter()
            .position(|l| l.starts_with(first))
            .unwrap_or_else(|| panic!("no {first} header in:\n{}", lines.join("\n")))
    };
    let rows = |lines: &[String], at: usize| -> Vec<String> {
        lines[at + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && !l.starts_with("regime "))
            .cloned()
            .collect()
    };
    let (t, b) = (start(tui), start(batch));
    let all: Vec<F> = F::ALL.to_vec();
    let printed: Vec<F> = all.iter().copied().filter(|c| !c.tui_only()).collect();
    let title = |c: &F| c.title().to_string();
    let tui_head = cells(&tui[t], &all);
    for (c, h) in all.iter().zip(&tui_head) {
        // The TUI's own columns may say more on screen (a sparkline's
        // scale after its series' name).
        let name = if c.tui_only() {
            c.title().split(' ').next().unwrap_or_default()
        } else {
            c.title()
        };
        assert!(h.starts_with(name), "TUI header of {c:?}: {h:?}");
    }
    assert_eq!(
        cells(&batch[b], &printed),
        printed.iter().map(title).collect::<Vec<_>>(),
        "batch header"
    );
    let (tui_rows, batch_rows) = (rows(tui, t), rows(batch, b));
    assert!(!batch_rows.is_empty(), "{}", batch.join("\n"));
    for line in &batch_rows {
        let bc = cells(line, &printed);
        // Whether a group is open (its mark) is the TUI's.
        let unmark = |mut tc: Vec<String>| {
            for m in ["▸ ", "▾ "] {
                if let Some(rest) = tc[0].strip_prefix(m) {
                    tc[0] = rest.to_string();
                }
            }
            tc
        };
        let row = tui_rows
            .iter()
            .map(|l| unmark(cells(l, &all)))
            .find(|tc| tc[0] == bc[0])
            .unwrap_or_else(|| panic!("no row {:?} on screen:\n{}", bc[0], tui.join("\n")));
        for (c, text) in printed.iter().zip(&bc) {
            if skip.contains(c) {
                continue;
            }
            let on_screen = &row[all.iter().position(|x| x == c).unwrap()];
            assert_eq!(on_screen, text, "row {:?}, {c:?}: TUI vs batch", bc[0]);
        }
    }
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
    let screen = tui_screen(frame.clone(), View::Devices, Some(&topo), 240);
    let mut joined = frame;
    joined.attach_config(&topo);
    let text = render_frame(&joined, &TextOptions::default());
    let batch: Vec<String> = text.lines().map(String::from).collect();
    one_table::<DevField>(&screen, &batch, &[DevField::BudgetUse]);
    // The configuration made it to both: XDP is the topology's, not a
    // placeholder.
    for lines in [&screen, &batch] {
        let nic = lines.iter().find(|l| l.starts_with("ens1f0np0")).unwrap();
        assert!(
            nic.contains(" generic ") && nic.contains("q0:120→3"),
            "{nic}"
        );
    }
}

/// The TUI's CPUs view and batch text's CPU table are one table, as the
/// device tables are: columns from `CpuField::ALL`, cells from
/// `CpuField::cell`, the victims from `output::cpus::victims`.
#[test]
fn tui_and_batch_cpu_tables_are_one_table() {
    let frame = fixtures::busy_host();
    let screen = tui_screen(frame.clone(), View::Cpus, None, 300);
    let text = render_frame(&frame, &TextOptions::default());
    let batch: Vec<String> = text.lines().map(String::from).collect();
    one_table::<CpuField>(&screen, &batch, &[]);
}

#[test]
fn readme_lists_the_cgroup_columns() {
    readme_matches::<CgField>(
        "### Which container is being robbed: per-cgroup roll-up",
        "| cgroup column | meaning |",
    );
}

/// The TUI's grouped view (`C`) and batch text's `--group cgroup` table
/// are one table, as the device tables are: columns from `CgField::ALL`,
/// headers from `CgField::header`, cells from `CgField::cell`.
#[test]
fn tui_and_batch_cgroup_tables_are_one_table() {
    let frame = fixtures::busy_host_in_cgroups();
    let screen = tui_screen(frame.clone(), View::Processes, None, 400);
    let opts = TextOptions {
        group_cgroup: true,
        ..Default::default()
    };
    let batch: Vec<String> = render_frame(&frame, &opts)
        .lines()
        .map(String::from)
        .collect();
    one_table::<CgField>(&screen, &batch, &[]);
}

#[test]
fn readme_lists_the_cpu_columns() {
    readme_matches::<CpuField>("### Per CPU", "| CPU column | meaning |");
}

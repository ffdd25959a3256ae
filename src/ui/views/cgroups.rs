//! The Processes view grouped by cgroup (`C`): one line per pod, container
//! or service, ordered by STOLEN% (`R` reverses), expandable to its
//! processes (Enter, → / ←). Each line shows the CPUs its cpuset allows and
//! how much receive work lands on them, and the memory charged to it (a
//! process line: its RES). Rows come from the model's
//! roll-up (`Frame::cgroups`), ordered in
//! [`rows::cgroups`](crate::ui::rows::cgroups); this file draws them.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use super::table::{Col, mark_selected, on_screen, table_head};
use crate::output::format::{fmt_mem, fmt_pct};
use crate::sample::NET_RX;
use crate::ui::app::App;
use crate::ui::rows::View;
use crate::ui::rows::cgroups::CgRow;
use crate::ui::style::{STOLEN_MARK_PCT, Sty, fit};

pub(crate) fn header(app: &App) -> String {
    format!(
        "Containers (grouped by cgroup, C: back to processes) · sort STOLEN%{} │ Enter/→ ← expand/collapse · \
         MEM = memory charged to it, CPUS = what its cpuset allows, RX% = receive work on them, RX ON = allowed CPUs with ≥1% of it",
        if app.sort.descending { "▼" } else { "▲" }
    )
}

const COLS: [Col; 12] = [
    ("CGROUP", 40, false),
    ("PROCS", 5, true),
    ("TOP%", 6, true),
    ("STOL%", 6, true),
    ("NETRX%", 6, true),
    ("HID~%", 5, true),
    ("TRUE%", 6, true),
    ("MEM", 5, true),
    ("CPUS", 8, false),
    ("RX%", 6, true),
    ("RX ON", 7, false),
    ("PATH", 20, false),
];

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    let (header, widths) = table_head(&COLS, |_| true, s);
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    let w = |i: usize| COLS[i].1 as usize;
    let rows: Vec<Row> = if frame.cgroups.is_empty() {
        vec![Row::new(vec![Cell::from(Span::styled(
            "no cgroup information in this frame (a recording made before nettop read cgroups)",
            s.dim(),
        ))])]
    } else {
        on_screen(app, View::Processes, area, &app.cg_rows)
            .map(|(r, selected)| {
                let cells = match *r {
                    CgRow::Group(g) => {
                        let c = &frame.cgroups[g];
                        let mark = if app.expanded.contains(&c.id) {
                            "▾ "
                        } else {
                            "▸ "
                        };
                        let stolen = if c.stolen_pct >= STOLEN_MARK_PCT {
                            s.stolen()
                        } else {
                            Style::new()
                        };
                        vec![
                            Cell::from(fit(&format!("{mark}{}", c.name), w(0), false)),
                            Cell::from(fit(&c.processes.to_string(), w(1), true)),
                            Cell::from(fit(&fmt_pct(c.top_pct), w(2), true)),
                            Cell::from(Span::styled(
                                fit(&fmt_pct(c.stolen_pct), w(3), true),
                                stolen,
                            )),
                            Cell::from(fit(&fmt_pct(c.net_rx_stolen_pct), w(4), true)),
                            Cell::from(fit(&fmt_pct(c.hidden_pct), w(5), true)),
                            Cell::from(fit(&fmt_pct(c.true_pct), w(6), true)),
                            Cell::from(fit(&fmt_mem(c.mem_bytes), w(7), true)),
                            Cell::from(fit(
                                if c.cpus.is_empty() { "all" } else { &c.cpus },
                                w(8),
                                false,
                            )),
                            Cell::from(fit(&fmt_pct(c.rx_on_cpus_pct), w(9), true)),
                            Cell::from(Span::styled(
                                fit(
                                    if c.rx_cpus.is_empty() {
                                        "-"
                                    } else {
                                        &c.rx_cpus
                                    },
                                    w(10),
                                    false,
                                ),
                                if c.rx_cpus.is_empty() {
                                    Style::new()
                                } else {
                                    s.net_rx()
                                },
                            )),
                            Cell::from(Span::styled(c.path.clone(), s.dim())),
                        ]
                    }
                    CgRow::Task(t) => {
                        let t = &frame.processes[t];
                        vec![
                            Cell::from(fit(&format!("   {} {}", t.pid, t.comm), w(0), false)),
                            Cell::from(""),
                            Cell::from(fit(&fmt_pct(t.top_pct), w(2), true)),
                            Cell::from(fit(&fmt_pct(t.stolen_pct), w(3), true)),
                            Cell::from(fit(&fmt_pct(t.softirq_stolen_pct[NET_RX]), w(4), true)),
                            Cell::from(fit(&fmt_pct(t.hidden_pct), w(5), true)),
                            Cell::from(fit(&fmt_pct(t.true_pct), w(6), true)),
                            Cell::from(fit(&fmt_mem(t.res_bytes), w(7), true)),
                            Cell::from(fit(&t.affinity, w(8), false)),
                            Cell::from(""),
                            Cell::from(""),
                            Cell::from(Span::styled(format!("cpu {}", t.last_cpu), s.dim())),
                        ]
                    }
                };
                mark_selected(Row::new(cells), selected, s)
            })
            .collect()
    };
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}

//! The Processes view grouped by cgroup (`C`): the cgroup table batch text
//! prints with `--group cgroup` ([`crate::output::cgroups::CgField`]), as
//! many of its columns as fit: one line per pod, container or service,
//! ordered by STOLEN% (`R` reverses), expandable to its processes (Enter,
//! → / ←). Each line shows the CPUs its cpuset allows and how much receive
//! work lands on them, and the memory charged to it (a process line: its
//! RES). Rows come from the model's roll-up (`Frame::cgroups`), ordered in
//! [`rows::cgroups`](crate::ui::rows::cgroups); this file draws them.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use super::table::{field_cell, field_head, fitting, mark_selected, on_screen};
use crate::output::cgroups::CgField;
use crate::output::columns::traced;
use crate::ui::rows::View;
use crate::ui::rows::cgroups::CgRow;
use crate::ui::state::App;
use crate::ui::style::Sty;

pub(crate) fn header(app: &App) -> String {
    format!(
        "Containers (grouped by cgroup, C: back to processes) · sort STOLEN%{} │ Enter/→ ← expand/collapse · \
         MEM = memory charged to it, CPUS = what its cpuset allows, RX% = receive work on them, RX-CPUS = allowed CPUs with ≥1% of it",
        if app.sort.descending { "▼" } else { "▲" }
    )
}

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    // Who robs whom between cgroups, under the table when all of it fits.
    let mut area = area;
    if let Some(frame) = &app.frame {
        let pairs = super::robbed::pairs(frame);
        let below = super::robbed::height(pairs.len());
        let table = app.cg_rows.len() as u16 + 1;
        if below > 0 && table.saturating_add(below) <= area.height {
            let split = Rect {
                y: area.y + area.height - below,
                height: below,
                ..area
            };
            area.height -= below;
            super::robbed::draw(f, &pairs, s, split);
        }
    }
    let cols: Vec<CgField> = fitting(area.width)
        .into_iter()
        .filter(|c: &CgField| c.shown(app.frame.as_ref()))
        .collect();
    let bpf = app.frame.as_ref().is_none_or(traced);
    let (header, widths) = field_head(&cols, |c| c.header(bpf).into(), s);
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    let rows: Vec<Row> = if frame.cgroups.is_empty() {
        vec![Row::new(vec![Cell::from(Span::styled(
            "no cgroup information in this frame (a recording made before nettop read cgroups)",
            s.dim(),
        ))])]
    } else {
        on_screen(app, View::Processes, area, &app.cg_rows)
            .map(|(&r, selected)| {
                let cells = cols.iter().enumerate().map(|(i, &c)| {
                    let mut cell = c.cell(frame, r, bpf);
                    // Whether a group is open is the TUI's.
                    if let (CgField::Name, CgRow::Group(g)) = (c, r) {
                        let open = frame
                            .cgroups
                            .get(g)
                            .is_some_and(|g| app.expanded.contains(&g.id));
                        cell.text.insert_str(0, if open { "▾ " } else { "▸ " });
                    }
                    field_cell(c, cell, i + 1 == cols.len(), s)
                });
                mark_selected(Row::new(cells.collect::<Vec<_>>()), selected, s)
            })
            .collect()
    };
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}

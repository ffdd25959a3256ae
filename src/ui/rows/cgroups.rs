//! Rows of the Processes view grouped by cgroup (`C`): one line per pod,
//! container or service, ordered by STOLEN% (`R` reverses), each expanded
//! one followed by its processes. Rows come from the model's roll-up
//! (`Frame::cgroups`); this file orders them.

use std::collections::HashSet;

use crate::model::frame::Frame;

/// One line of the grouped view: a line of the cgroup table batch text
/// prints, or a process under an open group.
pub use crate::output::cgroups::CgRow;

/// Lines in display order: groups by STOLEN% (most first when
/// `descending`), each expanded one followed by its processes (most
/// stolen-from first). A filter keeps groups whose name or path contains it.
pub fn rows(
    frame: Option<&Frame>,
    expanded: &HashSet<u64>,
    descending: bool,
    filter: &str,
) -> Vec<CgRow> {
    let Some(f) = frame else {
        return Vec::new();
    };
    let mut groups: Vec<usize> = (0..f.cgroups.len())
        .filter(|&i| {
            let c = &f.cgroups[i];
            filter.is_empty() || c.name.contains(filter) || c.path.contains(filter)
        })
        .collect();
    // The model's order is most stolen first; ties keep it.
    if !descending {
        groups.reverse();
    }
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        out.push(CgRow::Group(g));
        let id = f.cgroups[g].id;
        if expanded.contains(&id) {
            let mut tasks: Vec<usize> = (0..f.processes.len())
                .filter(|&i| f.processes[i].cgroup_id == id)
                .collect();
            tasks.sort_by(|&a, &b| {
                let (a, b) = (&f.processes[a], &f.processes[b]);
                b.stolen_pct
                    .total_cmp(&a.stolen_pct)
                    .then(a.pid.cmp(&b.pid))
            });
            out.extend(tasks.into_iter().map(CgRow::Task));
        }
    }
    out
}

/// The cgroup id of `row` (a task row: its group's).
pub fn group_id(frame: Option<&Frame>, row: CgRow) -> Option<u64> {
    let f = frame?;
    match row {
        CgRow::Group(i) => f.cgroups.get(i).map(|c| c.id),
        CgRow::Task(i) => f.processes.get(i).map(|t| t.cgroup_id),
    }
}

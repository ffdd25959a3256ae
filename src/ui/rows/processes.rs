//! Processes view's rows: one per process or thread (or a process with its
//! threads under it), filtered and sorted, as indices into the Frame.

use std::collections::HashMap;

use crate::model::frame::{Frame, TaskView};
use crate::output::columns::{ProcColumn, RowCtx};

/// Which Frame list a task row points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    Proc(usize),
    Thread(usize),
}

/// One visible row of the Processes view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub src: Src,
    /// 0 for top-level rows, 1 for threads under a process in tree mode.
    pub depth: u8,
    /// Last child of its parent (tree drawing).
    pub last: bool,
}

/// Sort order of the Processes view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    pub column: ProcColumn,
    pub descending: bool,
}

/// What decides which tasks the Processes view lists and in what order:
/// the App's settings, borrowed for one rebuild.
pub(crate) struct Query<'a> {
    pub frame: Option<&'a Frame>,
    pub filter: &'a str,
    pub sort: SortKey,
    /// One row per thread instead of per process.
    pub threads: bool,
    /// Each process with its threads under it.
    pub tree: bool,
    /// User names (the filter matches them) and what the columns sort by.
    pub ctx: RowCtx<'a>,
}

fn matches(q: &Query, t: &TaskView) -> bool {
    if q.filter.is_empty() {
        return true;
    }
    let f = q.filter.to_lowercase();
    if let Ok(pid) = f.parse::<u32>()
        && (t.pid == pid || t.tid == pid)
    {
        return true;
    }
    // With command lines on screen the filter matches what is shown
    // (two `java` processes differ only in their arguments).
    t.comm.to_lowercase().contains(&f)
        || (q.ctx.cmdline && t.cmdline.iter().any(|a| a.to_lowercase().contains(&f)))
        || q.ctx
            .users
            .get(&t.uid)
            .is_some_and(|u| u.to_lowercase().contains(&f))
}

fn compare(q: &Query, a: &TaskView, b: &TaskView) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ord = q.sort.column.compare(a, b, &q.ctx);
    let ord = if q.sort.descending {
        ord.reverse()
    } else {
        ord
    };
    // Ties by PID/TID ascending, whatever the direction: stable screens.
    match ord {
        Ordering::Equal => a.pid.cmp(&b.pid).then(a.tid.cmp(&b.tid)),
        o => o,
    }
}

/// The rows on screen, in order, under the current sort, filter and mode.
pub(crate) fn rows(q: &Query) -> Vec<TaskRow> {
    let Some(f) = q.frame else {
        return Vec::new();
    };
    if !q.tree {
        let (list, mk): (&[TaskView], fn(usize) -> Src) = if q.threads {
            (&f.threads, Src::Thread)
        } else {
            (&f.processes, Src::Proc)
        };
        let mut idx: Vec<usize> = (0..list.len()).filter(|&i| matches(q, &list[i])).collect();
        idx.sort_by(|&a, &b| compare(q, &list[a], &list[b]));
        return idx
            .into_iter()
            .map(|i| TaskRow {
                src: mk(i),
                depth: 0,
                last: false,
            })
            .collect();
    }
    // Tree: each process, then its threads (the Frame has no parent PIDs,
    // so the tree is process → threads).
    let mut threads_of: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, t) in f.threads.iter().enumerate() {
        threads_of.entry(t.pid).or_default().push(i);
    }
    let mut procs: Vec<usize> = (0..f.processes.len())
        .filter(|&i| {
            let p = &f.processes[i];
            matches(q, p)
                || threads_of
                    .get(&p.pid)
                    .is_some_and(|ts| ts.iter().any(|&j| matches(q, &f.threads[j])))
        })
        .collect();
    procs.sort_by(|&a, &b| compare(q, &f.processes[a], &f.processes[b]));
    let mut rows = Vec::with_capacity(procs.len() + f.threads.len());
    for p in procs {
        rows.push(TaskRow {
            src: Src::Proc(p),
            depth: 0,
            last: false,
        });
        if let Some(ts) = threads_of.get_mut(&f.processes[p].pid) {
            if ts.len() < 2 {
                continue;
            }
            ts.sort_by(|&a, &b| compare(q, &f.threads[a], &f.threads[b]));
            let n = ts.len();
            for (k, &j) in ts.iter().enumerate() {
                rows.push(TaskRow {
                    src: Src::Thread(j),
                    depth: 1,
                    last: k + 1 == n,
                });
            }
        }
    }
    rows
}

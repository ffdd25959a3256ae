//! Processes view's rows: one per process or thread, or processes with
//! their threads under them (`t`) and under their parents (`V`, top's
//! forest), filtered and sorted, as indices into the Frame.

use std::collections::HashMap;

use crate::model::frame::{Frame, TaskView};
use crate::output::columns::{ProcColumn, RowCtx, SortValue};

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
    /// Depth in the tree: 0 for top-level rows; a thread is one below its
    /// process, and in the forest a process one below its parent.
    /// Saturates at 255 (a hostile recording can chain any number).
    pub depth: u8,
    /// Last child of its parent: its glyph is `└─` rather than `├─`.
    pub last: bool,
    /// The vertical lines left of the glyph, so drawing needs no look at
    /// other rows: bit `j` is set when the ancestor `j + 1` levels up (bit
    /// 0: the parent) has siblings below it, so its column draws `│`. Only
    /// the nearest 32 ancestors fit; the drawn indentation is capped below
    /// that anyway.
    pub rails: u32,
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
    /// `u`: only this user's tasks.
    pub user: Option<u32>,
    /// Kernel threads are listed (htop's `K` leaves them out).
    pub kthreads: bool,
    pub sort: SortKey,
    /// One row per thread instead of per process; under the tree or the
    /// forest, threads under each process.
    pub threads: bool,
    /// Each process with its threads under it.
    pub tree: bool,
    /// Processes under their parents (top's `V`). Rows stay process rows:
    /// `threads` or `tree` adds each process's threads under it.
    pub forest: bool,
    /// Tasks that used no CPU are listed too (top's `i` turns it off).
    pub idle: bool,
    /// User names (the filter matches them) and what the columns sort by.
    pub ctx: RowCtx<'a>,
}

/// kthreadd: the parent of every kernel thread.
const KTHREADD: u32 = 2;

/// Listed by itself: the filter matches it, and it used CPU unless idle
/// tasks are shown.
fn matches(q: &Query, t: &TaskView) -> bool {
    if !q.idle && t.is_idle() {
        return false;
    }
    if q.user.is_some_and(|u| t.uid != u) || (!q.kthreads && t.kthread) {
        return false;
    }
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

/// `idx` (indices into `list`) in the sort's order. Each row's value is
/// taken out once ([`ProcColumn::sort_value`]), then the keys are sorted:
/// at 30,000 thread rows that is a fraction of what comparing through the
/// column table costs. Ties go by PID/TID ascending whatever the direction
/// (stable screens), then by list position, which makes the unstable sort
/// give what a stable one would.
fn sorted<'a>(q: &Query<'a>, list: &'a [TaskView], idx: impl Iterator<Item = usize>) -> Vec<usize> {
    let idx: Vec<usize> = idx.collect();
    let descending = q.sort.descending;
    let id = |t: &TaskView| (u64::from(t.pid) << 32) | u64::from(t.tid);
    // Numeric columns (all but USER, COMMAND and AFFINITY) sort as plain
    // integer triples, direction folded into the key.
    let numeric: Option<Vec<(u64, u64, usize)>> = idx
        .iter()
        .map(|&i| match q.sort.column.sort_value(&list[i], &q.ctx) {
            SortValue::Num(k) => Some((if descending { !k } else { k }, id(&list[i]), i)),
            SortValue::Text(_) => None,
        })
        .collect();
    if let Some(mut keys) = numeric {
        keys.sort_unstable();
        return keys.into_iter().map(|k| k.2).collect();
    }
    let mut keyed: Vec<(SortValue<'a>, u64, usize)> = idx
        .into_iter()
        .map(|i| (q.sort.column.sort_value(&list[i], &q.ctx), id(&list[i]), i))
        .collect();
    keyed.sort_unstable_by(|a, b| {
        let by_value = if descending {
            b.0.cmp(&a.0)
        } else {
            a.0.cmp(&b.0)
        };
        by_value.then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
    });
    keyed.into_iter().map(|k| k.2).collect()
}

/// The rows on screen, in order, under the current sort, filter and mode.
pub(crate) fn rows(q: &Query) -> Vec<TaskRow> {
    let Some(f) = q.frame else {
        return Vec::new();
    };
    if q.tree || q.forest {
        return nested(q, f);
    }
    let (list, mk): (&[TaskView], fn(usize) -> Src) = if q.threads {
        (&f.threads, Src::Thread)
    } else {
        (&f.processes, Src::Proc)
    };
    sorted(q, list, (0..list.len()).filter(|&i| matches(q, &list[i])))
        .into_iter()
        .map(|i| TaskRow {
            src: mk(i),
            depth: 0,
            last: false,
            rails: 0,
        })
        .collect()
}

/// Each process's parent, as an index into `procs`: none for a root (PPID
/// 0, its own PID, or a parent not in the frame). A kernel thread without
/// a PPID (older recordings never collected it) goes under kthreadd, where
/// the kernel puts every other one.
fn parents(procs: &[TaskView]) -> Vec<Option<usize>> {
    let mut by_pid: HashMap<u32, usize> = HashMap::with_capacity(procs.len());
    for (i, p) in procs.iter().enumerate() {
        // A PID twice (only a hostile recording): the first is the parent.
        by_pid.entry(p.pid).or_insert(i);
    }
    let kthreadd = by_pid.get(&KTHREADD).is_some_and(|&k| procs[k].kthread);
    procs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ppid = if p.ppid == 0 && p.kthread && kthreadd {
                KTHREADD
            } else {
                p.ppid
            };
            if ppid == 0 || ppid == p.pid {
                return None;
            }
            by_pid.get(&ppid).copied().filter(|&j| j != i)
        })
        .collect()
}

/// Which processes are listed: those [`matches()`] takes (by themselves or,
/// with threads shown, by one of their threads) and every ancestor of
/// one, so a match is always seen where it sits in the tree (an idle
/// supervisor stays above its busy workers).
fn shown(
    q: &Query,
    f: &Frame,
    parent: &[Option<usize>],
    threads_of: &HashMap<u32, Vec<usize>>,
) -> Vec<bool> {
    let n = f.processes.len();
    if q.filter.is_empty() && q.idle {
        return vec![true; n];
    }
    let mut vis = vec![false; n];
    for (i, p) in f.processes.iter().enumerate() {
        if vis[i] {
            // Already an ancestor of a match: its own ancestors are in.
            continue;
        }
        let hit = matches(q, p)
            || threads_of
                .get(&p.pid)
                .is_some_and(|ts| ts.iter().any(|&j| matches(q, &f.threads[j])));
        if !hit {
            continue;
        }
        vis[i] = true;
        // Up to the first ancestor already in: each process is climbed
        // through once, and a PPID cycle stops where it closes.
        let mut up = parent[i];
        while let Some(a) = up {
            if vis[a] {
                break;
            }
            vis[a] = true;
            up = parent[a];
        }
    }
    vis
}

/// Processes as a tree: under their parents in the forest (`q.forest`),
/// otherwise all at the top; with `q.threads` or `q.tree` each followed by
/// its threads (unless it has only the one). Siblings keep the sort, and
/// every process is listed once, PPID cycles included.
fn nested(q: &Query, f: &Frame) -> Vec<TaskRow> {
    let procs = &f.processes;
    let n = procs.len();
    let mut threads_of: HashMap<u32, Vec<usize>> = HashMap::new();
    if q.threads || q.tree {
        for (i, t) in f.threads.iter().enumerate() {
            threads_of.entry(t.pid).or_default().push(i);
        }
    }
    let parent = if q.forest {
        parents(procs)
    } else {
        vec![None; n]
    };
    let shown = shown(q, f, &parent, &threads_of);
    // Sorted once; linking children to their parents from the back keeps
    // every level in this order: O(n log n) for the whole forest.
    let order = sorted(q, procs, (0..n).filter(|&i| shown[i]));
    let mut links = Links {
        first_child: vec![None; n],
        next_sibling: vec![None; n],
    };
    for &i in order.iter().rev() {
        if let Some(p) = parent[i] {
            links.next_sibling[i] = links.first_child[p].replace(i);
        }
    }
    let heads = links.heads(&order, &parent);
    let mut b = Builder {
        q,
        f,
        links,
        threads_of,
        done: vec![false; n],
        out: Vec::with_capacity(order.len() + f.threads.len()),
    };
    for &i in &order {
        if heads[i] {
            b.subtree(i);
        }
    }
    b.out
}

/// Each process's children, in the sort's order, as linked lists: no
/// allocation per process.
struct Links {
    first_child: Vec<Option<usize>>,
    next_sibling: Vec<Option<usize>>,
}

impl Links {
    /// Which processes head a tree: those without a parent, and one
    /// process of each PPID loop (a hostile recording: every ancestor in
    /// the frame, none of them a root), so that nothing is lost. A loop is
    /// cut at the first process met twice going up from the first one in
    /// the sort that no root reaches; what hangs off the loop stays under
    /// it.
    fn heads(&self, order: &[usize], parent: &[Option<usize>]) -> Vec<bool> {
        let n = parent.len();
        let mut heads: Vec<bool> = parent.iter().map(Option::is_none).collect();
        let mut reached = vec![false; n];
        let mut stack = Vec::new();
        for &i in order {
            if heads[i] {
                self.reach(i, &mut reached, &mut stack);
            }
        }
        let mut climbed = vec![false; n];
        for &i in order {
            if reached[i] {
                continue;
            }
            // Every process climbed here ends up reached below it, so
            // each is climbed once at most.
            let mut at = i;
            while !climbed[at] {
                climbed[at] = true;
                match parent[at] {
                    Some(p) => at = p,
                    None => break,
                }
            }
            heads[at] = true;
            self.reach(at, &mut reached, &mut stack);
        }
        heads
    }

    /// Marks `from` and everything under it as reached.
    fn reach(&self, from: usize, reached: &mut [bool], stack: &mut Vec<usize>) {
        stack.push(from);
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut reached[i], true) {
                continue;
            }
            let mut c = self.first_child[i];
            while let Some(k) = c {
                stack.push(k);
                c = self.next_sibling[k];
            }
        }
    }
}

/// The forest's links and what it has listed so far.
struct Builder<'a, 'q> {
    q: &'a Query<'q>,
    f: &'a Frame,
    links: Links,
    /// Threads of each PID; taken when listed, so a thread is never listed
    /// twice even under two processes with the same PID.
    threads_of: HashMap<u32, Vec<usize>>,
    done: Vec<bool>,
    out: Vec<TaskRow>,
}

impl Builder<'_, '_> {
    /// Lists `root` at depth 0 and everything under it, depth first. A
    /// stack, not recursion: a chain of thousands cannot overflow it.
    fn subtree(&mut self, root: usize) {
        let mut stack = vec![(root, 0u8, false, 0u32)];
        let mut kids = Vec::new();
        while let Some((i, depth, last, rails)) = stack.pop() {
            if std::mem::replace(&mut self.done[i], true) {
                continue;
            }
            self.out.push(TaskRow {
                src: Src::Proc(i),
                depth,
                last,
                rails,
            });
            // The rails of whatever hangs under this row: its own, and a
            // line in its column while siblings follow it (the top level
            // draws no column).
            let below = if depth == 0 {
                0
            } else {
                (rails << 1) | u32::from(!last)
            };
            let down = depth.saturating_add(1);
            kids.clear();
            let mut c = self.links.first_child[i];
            while let Some(k) = c {
                // A loop's cut head is already listed, above.
                if !self.done[k] {
                    kids.push(k);
                }
                c = self.links.next_sibling[k];
            }
            self.threads(i, down, below, kids.is_empty());
            let n = kids.len();
            for (pos, &k) in kids.iter().enumerate().rev() {
                stack.push((k, down, pos + 1 == n, below));
            }
        }
    }

    /// Process `i`'s threads right under it, before its child processes.
    fn threads(&mut self, i: usize, depth: u8, rails: u32, no_kids: bool) {
        let (q, f) = (self.q, self.f);
        let Some(ts) = self.threads_of.remove(&f.processes[i].pid) else {
            return;
        };
        // One thread is the process itself.
        if ts.len() < 2 {
            return;
        }
        let ts: Vec<usize> = if q.idle {
            ts
        } else {
            ts.into_iter()
                .filter(|&j| !f.threads[j].is_idle())
                .collect()
        };
        let ts = sorted(q, &f.threads, ts.into_iter());
        let n = ts.len();
        self.out
            .extend(ts.into_iter().enumerate().map(|(k, j)| TaskRow {
                src: Src::Thread(j),
                depth,
                last: no_kids && k + 1 == n,
                rails,
            }));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::ui::fixtures;

    /// The keyed sort gives exactly what a stable sort through the column
    /// table gives, in every column and direction, ties included (the
    /// fixture repeats figures and users, and a PID twice).
    #[test]
    fn keyed_sort_matches_the_column_order() {
        let mut f = fixtures::many_tasks(400);
        let dup = f.processes[7].clone();
        f.processes.push(dup);
        let users: HashMap<u32, String> =
            HashMap::from([(0, "root".into()), (1000, "alice".into())]);
        let node = crate::output::columns::cpu_nodes(&f);
        for column in ProcColumn::ALL {
            for descending in [false, true] {
                let q = Query {
                    frame: Some(&f),
                    filter: "",
                    user: None,
                    kthreads: true,
                    sort: SortKey { column, descending },
                    threads: false,
                    tree: false,
                    forest: false,
                    idle: true,
                    ctx: RowCtx {
                        users: &users,
                        cpu_node: &node,
                        traced: true,
                        cmdline: false,
                    },
                };
                let got: Vec<Src> = rows(&q).into_iter().map(|r| r.src).collect();
                let mut want: Vec<usize> = (0..f.processes.len()).collect();
                want.sort_by(|&a, &b| {
                    let (a, b) = (&f.processes[a], &f.processes[b]);
                    let o = column.compare(a, b, &q.ctx);
                    let o = if descending { o.reverse() } else { o };
                    o.then(a.pid.cmp(&b.pid)).then(a.tid.cmp(&b.tid))
                });
                let want: Vec<Src> = want.into_iter().map(Src::Proc).collect();
                assert_eq!(got, want, "{column:?} descending={descending}");
            }
        }
    }

    fn task(pid: u32, ppid: u32, busy: bool) -> TaskView {
        TaskView {
            pid,
            tid: pid,
            ppid,
            is_process: true,
            comm: format!("p{pid}"),
            top_pct: if busy { 12.0 } else { 0.0 },
            on_cpu_pct: if busy { 11.0 } else { 0.0 },
            ..TaskView::default()
        }
    }

    fn listed(f: &Frame, forest: bool, idle: bool, filter: &str) -> Vec<(u32, u8)> {
        let users = HashMap::new();
        let q = Query {
            frame: Some(f),
            filter,
            user: None,
            kthreads: true,
            sort: SortKey {
                column: ProcColumn::Pid,
                descending: false,
            },
            threads: false,
            tree: false,
            forest,
            idle,
            ctx: RowCtx {
                users: &users,
                cpu_node: &[],
                traced: true,
                cmdline: false,
            },
        };
        rows(&q)
            .into_iter()
            .map(|r| match r.src {
                Src::Proc(i) => (f.processes[i].pid, r.depth),
                Src::Thread(i) => (f.threads[i].tid, r.depth),
            })
            .collect()
    }

    /// `i` (top's): idle tasks go, busy ones stay; in the forest an idle
    /// supervisor stays above its busy worker, and an idle subtree goes
    /// whole. A task from which time was stolen is not idle.
    #[test]
    fn hiding_idle_tasks_keeps_the_busy_and_their_ancestors() {
        let mut stolen_from = task(40, 1, false);
        stolen_from.stolen_pct = 3.0;
        let f = Frame {
            processes: vec![
                task(1, 0, false),
                task(10, 1, false),
                task(11, 10, true),
                task(12, 10, false),
                task(20, 1, false),
                task(21, 20, false),
                task(30, 1, true),
                stolen_from,
            ],
            ..Frame::default()
        };
        assert_eq!(
            listed(&f, false, false, ""),
            vec![(11, 0), (30, 0), (40, 0)]
        );
        assert_eq!(listed(&f, false, true, "").len(), 8);
        assert_eq!(
            listed(&f, true, false, ""),
            vec![(1, 0), (10, 1), (11, 2), (30, 1), (40, 1)]
        );
        // With a filter too: only busy matches, with their ancestors.
        assert_eq!(listed(&f, true, false, "p3"), vec![(1, 0), (30, 1)]);
        assert_eq!(listed(&f, true, false, "p12"), Vec::<(u32, u8)>::new());
    }
}

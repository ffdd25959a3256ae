//! Per-task files under `/proc/<pid>/task/<tid>/` (`stat`, `schedstat`,
//! `status`) and each process's `statm` (its threads share it), read into
//! one reused buffer; a task that exits while it is read is skipped. Also
//! the per-process totals of the /proc path and the `ksoftirqd/N` lookup
//! the per-CPU rows need.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use ::procfs::FromRead;
use anyhow::{Context, Result, anyhow, bail};

use crate::sample::{RawTask, TaskMem};
use crate::sys::cpuset::live_affinity;
use crate::sys::sysroot::{MAX_FILE, Sysroot, read_bounded};

/// `PF_KTHREAD` in include/linux/sched.h; `stat` field 9 carries the flags.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A task that exits while we read it makes its files fail with ENOENT (the
/// directory is gone) or ESRCH (the task is dead but not yet reaped). Both
/// are normal on a busy host and mean "skip it".
fn is_vanished(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

/// Reads a whole file into `buf` (cleared first), reusing its allocation,
/// capped like every read under the sysroot.
fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    read_bounded(path, buf, MAX_FILE)
}

/// Numeric entries of a directory (PIDs in /proc, TIDs in task/), ascending.
fn numeric_entries(dir: &Path) -> io::Result<Vec<u32>> {
    let mut out: Vec<u32> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// Fields of `/proc/<pid>/task/<tid>/stat` that nettop uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatFields {
    pub comm: String,
    pub state: char,
    /// Field 4: the parent's PID (0 for init and kthreadd).
    pub ppid: u32,
    pub flags: u64,
    pub utime: u64,
    pub stime: u64,
    pub start_ticks: u64,
    pub last_cpu: u32,
    /// Fields 18 and 19: priority (`prio - 100`; negative for real-time
    /// tasks) and nice.
    pub priority: i32,
    pub nice: i32,
}

/// Parses a `stat` line. `comm` may contain spaces and ')' (a process can
/// name itself anything), so it is everything between the first '(' and the
/// LAST ')'; the numeric fields follow.
pub fn parse_stat(text: &str) -> Result<StatFields> {
    let open = text
        .find('(')
        .ok_or_else(|| anyhow!("no '(' before comm"))?;
    let close = text
        .rfind(')')
        .ok_or_else(|| anyhow!("no ')' after comm"))?;
    if close < open {
        bail!("')' before '('");
    }
    let comm = text[open + 1..close].to_string();
    // rest[0] is field 3 (state), so field N is rest[N - 3].
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize| -> Result<u64> {
        let s = rest
            .get(n - 3)
            .ok_or_else(|| anyhow!("field {n} missing"))?;
        // Signed fields (priority, nice) are never read; the ones we read are
        // unsigned, but tolerate a stray sign rather than fail a whole sample.
        s.parse::<u64>()
            .or_else(|_| s.parse::<i64>().map(|v| v.max(0) as u64))
            .map_err(|_| anyhow!("field {n} '{s}' is not a number"))
    };
    let signed = |n: usize| -> Result<i32> {
        let s = rest
            .get(n - 3)
            .ok_or_else(|| anyhow!("field {n} missing"))?;
        s.parse::<i32>()
            .map_err(|_| anyhow!("field {n} '{s}' is not a number"))
    };
    let state = rest
        .first()
        .and_then(|s| s.chars().next())
        .ok_or_else(|| anyhow!("state missing"))?;
    Ok(StatFields {
        comm,
        state,
        ppid: u32::try_from(field(4)?).unwrap_or(0),
        flags: field(9)?,
        utime: field(14)?,
        stime: field(15)?,
        start_ticks: field(22)?,
        // Field 39 exists since 2.2; a truncated line is an error above.
        last_cpu: u32::try_from(field(39)?).unwrap_or(0),
        priority: signed(18)?,
        nice: signed(19)?,
    })
}

/// `statm` ("size resident shared text lib data dt", pages) as bytes:
/// VIRT, RES and SHR (`shared` counts resident file and shmem pages, as
/// htop's SHR). `Ok(None)` for a task without an address space (kernel
/// threads, zombies), which reads as all zeros. Only the first three
/// numbers are needed, so this is ours: the `procfs` crate's parser
/// requires all seven.
pub fn parse_statm(text: &str, page_size: u64) -> Result<Option<TaskMem>> {
    let mut it = text.split_ascii_whitespace();
    let mut next = |what: &str| -> Result<u64> {
        let s = it.next().ok_or_else(|| anyhow!("{what} missing"))?;
        s.parse::<u64>()
            .map_err(|_| anyhow!("{what} '{s}' is not a number"))
    };
    let (size, resident, shared) = (next("size")?, next("resident")?, next("shared")?);
    if size == 0 {
        return Ok(None);
    }
    let bytes = |pages: u64| pages.saturating_mul(page_size);
    Ok(Some(TaskMem {
        virt: bytes(size),
        res: bytes(resident),
        shr: bytes(shared),
    }))
}

/// Bytes per page of this kernel: `statm` and the task sampler count
/// pages.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(v).ok().filter(|&v| v > 0).unwrap_or(4096)
}

/// `schedstat` ("sum_exec_runtime run_delay timeslices") through the
/// `procfs` crate's parser: `(on-CPU ns, run-delay ns)`. Its error text is
/// an internal-unwrap message, so ours names what the file held instead.
pub fn parse_schedstat(bytes: &[u8]) -> Result<(u64, u64)> {
    ::procfs::process::Schedstat::from_read(bytes)
        .map(|s| (s.sum_exec_runtime, s.run_delay))
        .map_err(|_| {
            anyhow!(
                "expected three numbers, got '{}'",
                String::from_utf8_lossy(bytes).trim()
            )
        })
}

/// `status`: effective UID (what top's USER shows) and `Cpus_allowed_list`.
pub fn parse_status(text: &str) -> (u32, String) {
    let mut uid = 0;
    let mut aff = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Uid:") {
            // real, effective, saved, fs
            uid = v
                .split_ascii_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Cpus_allowed_list:") {
            aff = v.trim().to_string();
        }
    }
    (uid, aff)
}

/// Why one task could not be read.
enum TaskErr {
    /// Gone between listing and reading: skip silently.
    Vanished,
    Other(anyhow::Error),
}

fn io_task_err(e: io::Error, path: &Path) -> TaskErr {
    if is_vanished(&e) {
        TaskErr::Vanished
    } else {
        TaskErr::Other(anyhow!(e).context(format!("reading {}", path.display())))
    }
}

/// What a thread shares with its process, read once per process on the
/// live system: formatting `status` is the most expensive /proc read per
/// task (twice `stat`), and credentials are per process in practice (glibc
/// applies setuid to every thread).
struct Shared {
    uid: u32,
}

fn read_one_task(
    dir: &Path,
    tgid: u32,
    tid: u32,
    shared: Option<&Shared>,
    buf: &mut Vec<u8>,
) -> Result<RawTask, TaskErr> {
    let p = dir.join("stat");
    read_into(&p, buf).map_err(|e| io_task_err(e, &p))?;
    // An exited-but-unreaped task can return an empty file.
    if buf.is_empty() {
        return Err(TaskErr::Vanished);
    }
    let st = parse_stat(&String::from_utf8_lossy(buf))
        .with_context(|| p.display().to_string())
        .map_err(TaskErr::Other)?;

    let p = dir.join("schedstat");
    let (on_cpu_ns, run_delay_ns) = match read_into(&p, buf) {
        Ok(()) => parse_schedstat(buf)
            .with_context(|| p.display().to_string())
            .map_err(TaskErr::Other)?,
        // Kernels without CONFIG_SCHED_INFO have no schedstat at all: that
        // is not a vanished task as long as the task directory is still there.
        Err(e) if e.kind() == io::ErrorKind::NotFound && dir.join("stat").exists() => (0, 0),
        Err(e) => return Err(io_task_err(e, &p)),
    };

    let fast = shared.and_then(|sh| live_affinity(tid).map(|a| (sh.uid, a.to_list())));
    let (uid, affinity) = match fast {
        Some(v) => v,
        None => {
            let p = dir.join("status");
            read_into(&p, buf).map_err(|e| io_task_err(e, &p))?;
            parse_status(&String::from_utf8_lossy(buf))
        }
    };

    Ok(RawTask {
        tgid,
        tid,
        start_ticks: st.start_ticks,
        comm: st.comm,
        uid,
        state: st.state,
        utime_ticks: st.utime,
        stime_ticks: st.stime,
        on_cpu_ns,
        run_delay_ns,
        last_cpu: st.last_cpu,
        affinity,
        kthread: st.flags & PF_KTHREAD != 0,
        irq: None,
        ppid: st.ppid,
        priority: Some(st.priority),
        nice: Some(st.nice),
        ..Default::default()
    })
}

/// Reads every thread of one process into `out`. A process that vanished is
/// skipped; other errors propagate.
fn read_process(
    proc_dir: &Path,
    pid: u32,
    live: bool,
    out: &mut Vec<RawTask>,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let task_dir = proc_dir.join(pid.to_string()).join("task");
    let tids = match numeric_entries(&task_dir) {
        Ok(t) => t,
        Err(e) if is_vanished(&e) => return Ok(()),
        Err(e) => return Err(anyhow!(e).context(format!("listing {}", task_dir.display()))),
    };
    // Live and multi-threaded: one `status` read for the process, then
    // per thread only `sched_getaffinity`. Fixture trees (and a process
    // whose `status` vanished) read every thread's own `status`.
    let shared = if live && tids.len() > 1 {
        let p = proc_dir.join(pid.to_string()).join("status");
        read_into(&p, buf).ok().map(|()| Shared {
            uid: parse_status(&String::from_utf8_lossy(buf)).0,
        })
    } else {
        None
    };
    let first = out.len();
    for tid in tids {
        match read_one_task(
            &task_dir.join(tid.to_string()),
            pid,
            tid,
            shared.as_ref(),
            buf,
        ) {
            Ok(t) => out.push(t),
            Err(TaskErr::Vanished) => {}
            Err(TaskErr::Other(e)) => return Err(e),
        }
    }
    // One address space per process: its `statm`, for every thread row.
    // Kernel threads have none; a process that vanished meanwhile keeps
    // its rows without one (unknown, not zero).
    let threads = &mut out[first..];
    if threads.first().is_some_and(|t| !t.kthread) {
        let p = proc_dir.join(pid.to_string()).join("statm");
        let mem = match read_into(&p, buf) {
            Ok(()) => parse_statm(&String::from_utf8_lossy(buf), page_size())
                .with_context(|| p.display().to_string())?,
            Err(e) if is_vanished(&e) => None,
            Err(e) => return Err(anyhow!(e).context(format!("reading {}", p.display()))),
        };
        for t in threads {
            t.mem = mem;
        }
    }
    Ok(())
}

/// PIDs whose `comm` is `ksoftirqd/N`. Only a `comm` read per process: much
/// cheaper than reading every thread when a `-p` filter is active.
fn ksoftirqd_pids(proc_dir: &Path, all: &[u32], buf: &mut Vec<u8>) -> Vec<u32> {
    all.iter()
        .copied()
        .filter(|pid| {
            read_into(&proc_dir.join(pid.to_string()).join("comm"), buf).is_ok()
                && buf.starts_with(b"ksoftirqd/")
        })
        .collect()
}

/// Only the `ksoftirqd/N` threads: one small read per candidate process,
/// never one per thread, so starting up costs nothing per thread on a busy
/// host. The candidates are kthreadd's children where the kernel lists
/// them (`CONFIG_PROC_CHILDREN`): listing /proc itself makes the kernel
/// step over every thread on the host, 7 % of start-up at 30,000 threads.
pub fn read_ksoftirqd(root: &Sysroot) -> Result<Vec<RawTask>> {
    let proc_dir = root.proc();
    let mut buf = Vec::with_capacity(2048);
    let mut found = kthreadd_children(&proc_dir, &mut buf)
        .map(|kids| ksoftirqd_pids(&proc_dir, &kids, &mut buf))
        .unwrap_or_default();
    if found.is_empty() {
        found = ksoftirqd_pids(&proc_dir, &list_pids(root)?, &mut buf);
    }
    let mut out = Vec::new();
    for pid in found {
        read_process(&proc_dir, pid, root.is_live(), &mut out, &mut buf)?;
    }
    Ok(out)
}

/// The children of PID 2 when it is kthreadd (in a child PID namespace it
/// is some other process), as `task/2/children` lists them.
fn kthreadd_children(proc_dir: &Path, buf: &mut Vec<u8>) -> Option<Vec<u32>> {
    read_into(&proc_dir.join("2/comm"), buf).ok()?;
    if buf.trim_ascii() != b"kthreadd" {
        return None;
    }
    read_into(&proc_dir.join("2/task/2/children"), buf).ok()?;
    String::from_utf8_lossy(buf)
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect()
}

/// Every thread of the given processes (all processes when `pids` is empty),
/// plus all `ksoftirqd/N` threads, which the per-CPU view always needs.
pub fn read_tasks(root: &Sysroot, pids: &[u32]) -> Result<Vec<RawTask>> {
    let proc_dir = root.proc();
    let all = list_pids(root)?;
    let mut buf = Vec::with_capacity(2048);
    let wanted: Vec<u32> = if pids.is_empty() {
        all
    } else {
        let mut w: Vec<u32> = pids.to_vec();
        w.extend(ksoftirqd_pids(&proc_dir, &all, &mut buf));
        w.sort_unstable();
        w.dedup();
        w
    };
    let mut out = Vec::with_capacity(wanted.len() * 2);
    for pid in wanted {
        read_process(&proc_dir, pid, root.is_live(), &mut out, &mut buf)?;
    }
    Ok(out)
}

/// Every thread of exactly these processes (no `ksoftirqd/N` added): the
/// processes the task sampler's walk did not yield. One that vanished is
/// skipped.
pub fn read_processes(root: &Sysroot, pids: &[u32]) -> Result<Vec<RawTask>> {
    let proc_dir = root.proc();
    let mut buf = Vec::with_capacity(2048);
    let mut out = Vec::new();
    for &pid in pids {
        read_process(&proc_dir, pid, root.is_live(), &mut out, &mut buf)?;
    }
    Ok(out)
}

/// The PIDs /proc lists now, ascending.
pub fn list_pids(root: &Sysroot) -> Result<Vec<u32>> {
    let proc_dir = root.proc();
    numeric_entries(&proc_dir).with_context(|| format!("listing {}", proc_dir.display()))
}

/// How many threads process `pid` has now (its task/ entries); `None`
/// when it does not exist.
pub fn count_threads(root: &Sysroot, pid: u32) -> Option<usize> {
    let dir = root.proc().join(pid.to_string()).join("task");
    std::fs::read_dir(dir).ok().map(Iterator::count)
}

/// Process totals for the /proc path, one row per process in `threads`
/// (sorted by TGID, as `read_tasks` returns them). utime/stime come from
/// /proc/PID/stat, which counts the group's exited threads as top sees
/// them; on-CPU time is the live threads' precise runtime plus the exited
/// threads' share of those ticks (/proc has no runtime for the dead). A
/// process that vanished meanwhile keeps its live threads' sums.
pub fn process_totals(root: &Sysroot, threads: &[RawTask]) -> Vec<RawTask> {
    let proc_dir = root.proc();
    let mut buf = Vec::with_capacity(1024);
    let mut out: Vec<RawTask> = Vec::new();
    for group in threads.chunk_by(|a, b| a.tgid == b.tgid) {
        let Some(first) = group.first() else {
            continue;
        };
        let leader = group.iter().find(|t| t.tid == t.tgid).unwrap_or(first);
        let mut row = RawTask {
            tid: leader.tgid,
            nr_threads: u32::try_from(group.len()).unwrap_or(u32::MAX),
            irq: None,
            ..leader.clone()
        };
        let (mut ticks, mut run) = (0u64, 0u64);
        for t in group {
            ticks = ticks.saturating_add(t.utime_ticks.saturating_add(t.stime_ticks));
            run = run.saturating_add(t.on_cpu_ns);
            if let Some(a) = &t.irq {
                row.irq.get_or_insert_with(Default::default).add(a);
            }
        }
        row.on_cpu_ns = run;
        row.utime_ticks = group.iter().map(|t| t.utime_ticks).sum();
        row.stime_ticks = group.iter().map(|t| t.stime_ticks).sum();
        let path = proc_dir.join(leader.tgid.to_string()).join("stat");
        if read_into(&path, &mut buf).is_ok()
            && let Ok(st) = parse_stat(&String::from_utf8_lossy(&buf))
        {
            let total = st.utime.saturating_add(st.stime);
            let dead_ticks = total.saturating_sub(ticks);
            row.utime_ticks = st.utime;
            row.stime_ticks = st.stime;
            row.on_cpu_ns = run.saturating_add(dead_ticks.saturating_mul(ns_per_tick()));
        }
        out.push(row);
    }
    out
}

fn ns_per_tick() -> u64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / u64::try_from(hz).unwrap_or(100).max(1)
}

/// CPU -> TID of `ksoftirqd/<cpu>` (kernel threads only, so a user process
/// calling itself "ksoftirqd/0" is not mistaken for it).
pub fn find_ksoftirqd(tasks: &[RawTask]) -> BTreeMap<u32, u32> {
    tasks
        .iter()
        .filter(|t| t.kthread)
        .filter_map(|t| {
            let cpu = t.comm.strip_prefix("ksoftirqd/")?.parse().ok()?;
            Some((cpu, t.tid))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parens_and_spaces_in_comm() {
        let line = "42 (a) b (c)) S 7 42 42 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 12345 100 200 \
                    1 1 1 1 1 1 0 0 0 0 0 0 0 17 5 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 7);
        assert_eq!(
            (s.utime, s.stime, s.start_ticks, s.last_cpu),
            (7, 3, 12345, 5)
        );
        assert_eq!(s.flags, 4194560);
        assert_eq!((s.priority, s.nice), (20, 0));
        let rt = line.replace(" 0 0 20 0 1 0 ", " 0 0 -100 -5 1 0 ");
        let s = parse_stat(&rt).unwrap();
        assert_eq!((s.priority, s.nice), (-100, -5), "{rt}");
    }

    #[test]
    fn statm_in_bytes_and_no_address_space() {
        let m = parse_statm("5000 300 120 10 0 400 0\n", 4096)
            .unwrap()
            .unwrap();
        assert_eq!(
            (m.virt, m.res, m.shr),
            (5000 * 4096, 300 * 4096, 120 * 4096)
        );
        assert_eq!(parse_statm("0 0 0 0 0 0 0\n", 4096).unwrap(), None);
        let e = parse_statm("12 x 3", 4096).unwrap_err().to_string();
        assert!(e.contains("'x'"), "{e}");
        let e = parse_statm("12", 4096).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn truncated_stat_is_an_error() {
        assert!(parse_stat("1 (x) S 0 1").is_err());
        assert!(parse_stat("garbage").is_err());
    }

    #[test]
    fn schedstat_through_procfs_crate() {
        assert_eq!(
            parse_schedstat(b"70000000 5000 42\n").unwrap(),
            (70_000_000, 5000)
        );
        let e = parse_schedstat(b"12 x 3\n").unwrap_err();
        assert!(e.to_string().contains("'12 x 3'"), "{e}");
        assert!(parse_schedstat(b"").is_err());
    }

    /// A fake tree can hold any bytes: stat parsing must answer, never
    /// panic (the `procfs` crate's parser panics on `"1 (x)"`).
    #[test]
    fn stat_parser_never_panics() {
        use proptest::prelude::*;
        for s in ["1 (x)", "(x) S 1", "1 (x) S", ")(", "1 (", ""] {
            assert!(parse_stat(s).is_err(), "{s:?}");
        }
        proptest!(|(s in "[0-9 ()a-zS]{0,80}")| {
            let _ = parse_stat(&s);
        });
    }
}

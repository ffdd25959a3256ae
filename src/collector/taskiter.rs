//! Decodes the task sampler's records (`sample_one` in bpf/nettop.bpf.c,
//! one pass of either walk, `collector::bpf::sampler`) into raw tasks and
//! process totals.
//!
//! The kernel does the walking and the joining; this file only converts
//! units the way /proc does, so figures match what top reads, and folds
//! threads into their process. Process mode never builds a row per thread:
//! a thread's record costs one fold into its process's accumulator.

use std::collections::HashMap;

use super::bpf::skel::types;
use super::bpf::{acct_from, c_str, from_bytes};
use crate::sample::{IrqAcct, RawTask, TaskMem};
use crate::sys::cpuset::CpuSet;

/// `PF_KTHREAD` in include/linux/sched.h.
const PF_KTHREAD: u32 = 0x0020_0000;
/// `NT_REC_*` in bpf/nettop.h.
const REC_ACCT: u32 = 1;
const REC_EXITED: u32 = 2;
const REC_FULL: u32 = 4;
const REC_MM: u32 = 8;
/// `NT_REC_HEAD_LEN`: the bytes a record without `REC_FULL` has.
const REC_HEAD_LEN: usize = std::mem::offset_of!(types::nt_task_rec, ppid);
/// `MAX_RT_PRIO` and `NICE_TO_PRIO(0)` in include/linux/sched/prio.h:
/// /proc's priority and nice are `prio` and `static_prio` less these.
const MAX_RT_PRIO: i32 = 100;
const DEFAULT_PRIO: i32 = 120;

/// What one pass should produce.
#[derive(Debug, Clone, Copy)]
pub struct DecodeOptions<'a> {
    /// Also emit one row per thread (`-H`, tree view, thread evidence).
    pub threads: bool,
    /// Only these processes (empty = all).
    pub pids: &'a [u32],
    /// USER_HZ: /proc reports times and start times in these ticks.
    pub clk_tck: u64,
    /// CPUs that exist: mask bits beyond them are not CPUs.
    pub nr_cpus: u32,
    /// Bytes per page: the mm counters are in pages.
    pub page_size: u64,
}

/// One pass, decoded.
#[derive(Debug, Default)]
pub struct TaskSet {
    /// Thread rows (only with `threads`), sorted by (tgid, tid).
    pub threads: Vec<RawTask>,
    /// Process totals, the kernel's per-process cumulative figures: live
    /// threads plus the group's exited ones. Sorted by tgid.
    pub procs: Vec<RawTask>,
    /// Records that did not decode (a layout mismatch would show here).
    pub bad_records: u64,
    /// Records in the pass, one per task the walk yielded (filtered out
    /// or not): what the collector holds against the kernel's task count
    /// to find tasks the walk did not yield.
    pub records: usize,
}

/// `cputime_adjust()` in kernel/sched/cputime.c: /proc scales the
/// tick-sampled utime:stime split to the precise runtime, so top's figures
/// are these, not the raw ones. Returns adjusted (utime, stime) in ns.
pub fn cputime_adjust(utime: u64, stime: u64, rtime: u64) -> (u64, u64) {
    if stime == 0 {
        return (rtime, 0);
    }
    if utime == 0 {
        return (0, rtime);
    }
    let total = u128::from(utime) + u128::from(stime);
    let st = (u128::from(stime) * u128::from(rtime) / total).min(u128::from(rtime));
    let st = u64::try_from(st).unwrap_or(rtime);
    (rtime - st, st)
}

/// `nsec_to_clock_t()`.
fn ticks(ns: u64, clk_tck: u64) -> u64 {
    let per_tick = 1_000_000_000 / clk_tck.clamp(1, 1_000_000_000);
    ns / per_tick
}

/// The record's address space in bytes, when it carries one.
fn mem_of(r: &types::nt_task_rec, page_size: u64) -> Option<TaskMem> {
    if r.rec_flags & REC_MM == 0 {
        return None;
    }
    let bytes = |pages: u64| pages.saturating_mul(page_size);
    Some(TaskMem {
        virt: bytes(r.vm_pages),
        res: bytes(r.rss_anon.saturating_add(r.rss_shared)),
        shr: bytes(r.rss_shared),
    })
}

/// `task_state_index()` → the letter /proc shows ("RSDTtXZPI").
pub fn state_char(state: u32, exit_state: u32) -> char {
    const TASK_REPORT: u32 = 0x7f;
    const TASK_IDLE: u32 = 0x0402;
    const LETTERS: [char; 9] = ['R', 'S', 'D', 'T', 't', 'X', 'Z', 'P', 'I'];
    if state == TASK_IDLE {
        return 'I';
    }
    let s = (state | exit_state) & TASK_REPORT;
    // fls(): index of the highest set bit, 1-based; 0 for R.
    let idx = (u32::BITS - s.leading_zeros()) as usize;
    LETTERS.get(idx).copied().unwrap_or('?')
}

/// Process accumulator: sums of live threads, identity from the leader.
#[derive(Default)]
struct ProcAcc {
    row: RawTask,
    have_leader: bool,
    utime: u64,
    stime: u64,
    runtime: u64,
    /// The group's exited threads (signal_struct), the same on every record.
    sig: (u64, u64, u64),
    irq: Option<IrqAcct>,
}

fn add_irq(dst: &mut Option<IrqAcct>, src: &IrqAcct) {
    match dst {
        Some(d) => d.add(src),
        None => *dst = Some(src.clone()),
    }
}

/// Affinity strings are shared by most tasks: formatted once per mask.
#[derive(Default)]
struct AffinityCache(HashMap<[u64; 4], String>);

impl AffinityCache {
    fn get(&mut self, r: &types::nt_task_rec, nr_cpus: u32) -> String {
        let mut words = r.cpus_mask;
        // Bits past the host's CPUs are whatever followed a smaller kernel
        // cpumask in task_struct: not CPUs.
        for (i, w) in words.iter_mut().enumerate() {
            let base = (i * 64) as u32;
            if base >= nr_cpus {
                *w = 0;
            } else if nr_cpus - base < 64 {
                *w &= (1u64 << (nr_cpus - base)) - 1;
            }
        }
        let shown: u32 = words.iter().map(|w| w.count_ones()).sum();
        if r.nr_cpus_allowed > shown {
            // Pinned to CPUs past the first 256: ask the kernel (only on
            // such large hosts, only for such tasks).
            if let Some(set) = crate::sys::cpuset::live_affinity(r.tid) {
                return set.to_list();
            }
        }
        self.0
            .entry(words)
            .or_insert_with(|| {
                CpuSet::from_cpus(
                    (0..256u32).filter(|&c| words[(c / 64) as usize] & (1u64 << (c % 64)) != 0),
                )
                .to_list()
            })
            .clone()
    }
}

/// The record at the start of `bytes`: a head alone (`REC_HEAD_LEN`
/// bytes, the rest zero) unless its flags say it is full.
fn record(bytes: &[u8]) -> Option<types::nt_task_rec> {
    let head = bytes.get(..REC_HEAD_LEN)?;
    let mut whole = [0u8; std::mem::size_of::<types::nt_task_rec>()];
    whole[..REC_HEAD_LEN].copy_from_slice(head);
    let r = from_bytes::<types::nt_task_rec>(&whole)?;
    if r.rec_flags & REC_FULL == 0 {
        return Some(r);
    }
    from_bytes::<types::nt_task_rec>(bytes)
}

/// Decodes one pass. Truncated trailing bytes count as one bad record.
pub fn decode(bytes: &[u8], opts: &DecodeOptions<'_>) -> TaskSet {
    let rec_len = std::mem::size_of::<types::nt_task_rec>();
    let acct_len = std::mem::size_of::<types::nt_acct>();
    let mut out = TaskSet::default();
    let mut procs: HashMap<u32, ProcAcc> = HashMap::new();
    let mut aff = AffinityCache::default();
    let wanted = |tgid: u32| opts.pids.is_empty() || opts.pids.contains(&tgid);
    // At most one thread row per record: sized once, the row vector does
    // not double its way to 30,000 rows (holding old and new buffers at
    // the peak).
    if opts.threads {
        out.threads.reserve_exact(bytes.len() / rec_len);
    }
    let mut off = 0usize;
    while off < bytes.len() {
        let Some(r) = bytes.get(off..).and_then(record) else {
            out.bad_records += 1;
            break;
        };
        off += if r.rec_flags & REC_FULL != 0 {
            rec_len
        } else {
            REC_HEAD_LEN
        };
        out.records += 1;
        let mut take_acct = |flag: u32| -> Option<IrqAcct> {
            if r.rec_flags & flag == 0 {
                return None;
            }
            let a = bytes.get(off..).and_then(from_bytes::<types::nt_acct>);
            off += acct_len;
            a.map(|a| acct_from(&a))
        };
        let own = take_acct(REC_ACCT);
        let exited = take_acct(REC_EXITED);
        if off > bytes.len() {
            out.bad_records += 1;
            break;
        }
        if !wanted(r.tgid) {
            continue;
        }
        let acc = procs.entry(r.tgid).or_default();
        acc.utime = acc.utime.saturating_add(r.utime);
        acc.stime = acc.stime.saturating_add(r.stime);
        acc.runtime = acc.runtime.saturating_add(r.sum_exec_runtime);
        acc.row.run_delay_ns = acc.row.run_delay_ns.saturating_add(r.run_delay);
        if let Some(a) = &own {
            add_irq(&mut acc.irq, a);
        }
        if let Some(a) = &exited {
            add_irq(&mut acc.irq, a);
        }
        // Identity and the group's exited-thread times come from a full
        // record: the leader's, else (leader filtered or gone) any thread's.
        let leader = r.tid == r.tgid;
        let full = r.rec_flags & REC_FULL != 0;
        if full && (leader || !acc.have_leader) {
            acc.sig = (r.sig_utime, r.sig_stime, r.sig_runtime);
            acc.row.tgid = r.tgid;
            acc.row.tid = r.tgid;
            acc.row.start_ticks = ticks(r.start_boottime, opts.clk_tck);
            acc.row.comm = c_str(&r.comm);
            acc.row.uid = r.euid;
            acc.row.ppid = r.ppid;
            acc.row.state = state_char(r.state, r.exit_state);
            acc.row.last_cpu = r.cpu;
            acc.row.affinity = aff.get(&r, opts.nr_cpus);
            acc.row.kthread = r.flags & PF_KTHREAD != 0;
            acc.row.nr_threads = r.nr_threads.max(1);
            acc.row.cgroup_id = r.cgroup_id;
            acc.row.mem = mem_of(&r, opts.page_size);
            acc.row.priority = Some(r.prio - MAX_RT_PRIO);
            acc.row.nice = Some(r.static_prio - DEFAULT_PRIO);
            acc.have_leader = leader;
        }
        if opts.threads {
            let (u, s) = cputime_adjust(r.utime, r.stime, r.sum_exec_runtime);
            out.threads.push(RawTask {
                tgid: r.tgid,
                tid: r.tid,
                start_ticks: ticks(r.start_boottime, opts.clk_tck),
                comm: c_str(&r.comm),
                uid: r.euid,
                state: state_char(r.state, r.exit_state),
                utime_ticks: ticks(u, opts.clk_tck),
                stime_ticks: ticks(s, opts.clk_tck),
                on_cpu_ns: r.sum_exec_runtime,
                run_delay_ns: r.run_delay,
                last_cpu: r.cpu,
                affinity: aff.get(&r, opts.nr_cpus),
                kthread: r.flags & PF_KTHREAD != 0,
                irq: own.map(Box::new),
                ppid: r.ppid,
                nr_threads: 0,
                cgroup_id: r.cgroup_id,
                // Per process: the collector fills process rows (`procs`)
                // from its command-line cache; thread rows stay empty.
                cmdline: Vec::new(),
                // The process's, given below once every record is in.
                mem: None,
                priority: Some(r.prio - MAX_RT_PRIO),
                nice: Some(r.static_prio - DEFAULT_PRIO),
            });
        }
    }
    out.procs = procs
        .into_values()
        .map(|mut a| {
            let (su, ss, sr) = a.sig;
            let rtime = a.runtime.saturating_add(sr);
            let (u, s) = cputime_adjust(
                a.utime.saturating_add(su),
                a.stime.saturating_add(ss),
                rtime,
            );
            a.row.utime_ticks = ticks(u, opts.clk_tck);
            a.row.stime_ticks = ticks(s, opts.clk_tck);
            a.row.on_cpu_ns = rtime;
            a.row.irq = a.irq.map(Box::new);
            a.row
        })
        .collect();
    out.procs.sort_unstable_by_key(|p| p.tgid);
    out.threads.sort_unstable_by_key(|t| (t.tgid, t.tid));
    share_mem(&mut out.threads, &out.procs);
    out
}

/// Gives each thread row its process's memory (threads share one address
/// space; only the leader's record reads it). Both lists are sorted by
/// TGID, so one walk does it.
pub fn share_mem(threads: &mut [RawTask], procs: &[RawTask]) {
    let mut p = procs.iter().peekable();
    for t in threads {
        while p.next_if(|p| p.tgid < t.tgid).is_some() {}
        if let Some(pr) = p.peek().filter(|pr| pr.tgid == t.tgid) {
            t.mem = pr.mem;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cputime_adjust_scales_the_split_to_the_runtime() {
        // 3:1 user:system ticks, 8 ms precise runtime.
        assert_eq!(cputime_adjust(30, 10, 8), (6, 2));
        assert_eq!(cputime_adjust(0, 0, 5), (5, 0));
        assert_eq!(cputime_adjust(0, 7, 5), (0, 5));
        assert_eq!(
            cputime_adjust(u64::MAX, u64::MAX, u64::MAX),
            (u64::MAX - u64::MAX / 2, u64::MAX / 2)
        );
    }

    #[test]
    fn state_letters_match_proc() {
        assert_eq!(state_char(0, 0), 'R');
        assert_eq!(state_char(1, 0), 'S');
        assert_eq!(state_char(2, 0), 'D');
        assert_eq!(state_char(0x402, 0), 'I');
        assert_eq!(state_char(0, 0x20), 'Z');
        assert_eq!(state_char(0x40, 0), 'P');
        assert_eq!(state_char(4, 0), 'T');
    }

    fn rec(tgid: u32, tid: u32, runtime: u64) -> types::nt_task_rec {
        let mut r = types::nt_task_rec {
            tgid,
            tid,
            utime: runtime,
            sum_exec_runtime: runtime,
            nr_threads: 2,
            start_boottime: 1_000_000_000,
            nr_cpus_allowed: 2,
            prio: 120,
            static_prio: 120,
            ..Default::default()
        };
        r.cpus_mask[0] = 0b11;
        r.comm[0] = b'x' as i8;
        r
    }

    fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
        // SAFETY: T is a skeleton #[repr(C)] integer-only struct: every byte
        // is initialised and may be viewed as u8.
        unsafe {
            std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>())
        }
        .to_vec()
    }

    #[test]
    fn process_totals_fold_threads_exited_threads_and_their_interrupts() {
        let mut leader = rec(10, 10, 40_000_000);
        leader.sig_runtime = 20_000_000;
        leader.sig_utime = 20_000_000;
        leader.rec_flags = REC_FULL | REC_ACCT | REC_EXITED | REC_MM;
        (leader.vm_pages, leader.rss_anon, leader.rss_shared) = (1000, 300, 20);
        (leader.prio, leader.static_prio) = (115, 115);
        // With thread rows every record is full.
        let mut worker = rec(10, 11, 30_000_000);
        worker.rec_flags = REC_FULL | REC_ACCT;
        // A device interrupt of 5 ns; a timer interrupt of 7 ns.
        let mut own = types::nt_acct::default();
        (own.intr[0].count, own.intr[0].ns) = (1, 5);
        let mut gone = types::nt_acct::default();
        gone.intr[1].ns = 7;
        let mut buf = bytes_of(&leader);
        buf.extend(bytes_of(&own));
        buf.extend(bytes_of(&gone));
        buf.extend(bytes_of(&worker));
        buf.extend(bytes_of(&own));
        let opts = DecodeOptions {
            threads: true,
            pids: &[],
            clk_tck: 100,
            nr_cpus: 2,
            page_size: 4096,
        };
        let set = decode(&buf, &opts);
        assert_eq!(set.bad_records, 0);
        assert_eq!(set.threads.len(), 2);
        assert_eq!(set.procs.len(), 1);
        let p = &set.procs[0];
        // 40 + 30 live + 20 exited ms = 9 ticks, all user.
        assert_eq!(
            (p.utime_ticks, p.stime_ticks, p.on_cpu_ns),
            (9, 0, 90_000_000)
        );
        let irq = p.irq.as_ref().unwrap();
        assert_eq!(
            (irq.hardirq_ns, irq.hardirq_count, irq.sysvec_ns),
            (10, 2, 7)
        );
        assert_eq!(
            (p.nr_threads, p.affinity.as_str(), p.comm.as_str()),
            (2, "0-1", "x")
        );
        assert_eq!(set.threads[1].irq.as_ref().unwrap().sysvec_ns, 0);
        // Memory from the leader's address space, for every row of it;
        // /proc's priority and nice.
        let m = p.mem.unwrap();
        assert_eq!((m.virt, m.res, m.shr), (1000 * 4096, 320 * 4096, 20 * 4096));
        assert!(set.threads.iter().all(|t| t.mem == p.mem));
        assert_eq!((p.priority, p.nice), (Some(15), Some(-5)));
        assert_eq!(set.threads[1].nice, Some(0), "a thread's own nice");
        assert_eq!(set.records, 2);
        // A leader without an address space (a kernel thread): none.
        let mut kt = rec(2, 2, 0);
        kt.rec_flags = REC_FULL;
        let set = decode(&bytes_of(&kt), &opts);
        assert_eq!((set.procs[0].mem, set.threads[0].mem), (None, None));

        // Process mode: a thread other than the leader sends only the
        // head, which is what its process sums; no thread rows.
        let procs_only = DecodeOptions {
            threads: false,
            ..opts
        };
        worker.rec_flags = REC_ACCT;
        let mut heads = bytes_of(&leader);
        heads.extend(bytes_of(&own));
        heads.extend(bytes_of(&gone));
        heads.extend(&bytes_of(&worker)[..REC_HEAD_LEN]);
        heads.extend(bytes_of(&own));
        let set = decode(&heads, &procs_only);
        assert_eq!((set.bad_records, set.records), (0, 2));
        assert!(set.threads.is_empty());
        assert_eq!(
            format!("{:?}", set.procs),
            format!("{:?}", decode(&buf, &opts).procs)
        );
        // A truncated tail is reported.
        let set = decode(&heads[..heads.len() - 3], &procs_only);
        assert_eq!(set.bad_records, 1);
        // -p filters by process.
        let set = decode(
            &buf,
            &DecodeOptions {
                pids: &[99],
                ..opts
            },
        );
        assert!(set.procs.is_empty() && set.threads.is_empty());
    }
}

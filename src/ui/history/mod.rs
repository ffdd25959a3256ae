//! Sparkline history: per CPU and per task, the last [`HISTORY_LEN`]
//! frames of three series, pushed by `App::show_frame` and, in replay,
//! built from the recording on the data thread (`Msg::History`).
//!
//! The series ([`Series`]) differ by entity because the model has different
//! figures for each:
//!
//! | series | CPU ([`CpuView`](crate::model::frame::CpuView)) | task ([`TaskView`]) |
//! |---|---|---|
//! | `Stolen` | `stolen_pct`: interrupt work it ran for others | `stolen_pct` |
//! | `True` | `true_pct`: time left to tasks' own work | `true_pct` |
//! | `NetRx` | `net_rx_per_s`: NET_RX actions per second | `net_rx_pct()`: NET_RX time stolen from it |
//!
//! A task has no NET_RX rate of its own (actions run on a CPU, not for a
//! task), so its third series is the NET_RX share of its STOLEN%.
//!
//! Process rows also keep RES (bytes) in rings of their own, for the
//! detail pane: a process's resident memory is never zero, so in the
//! three-series rings it would allocate every idle process's ring, and
//! thread rows share their process's, so they keep none.
//!
//! Memory is the point of the layout. A thread list can hold 30,000 tasks,
//! and 30,000 × 300 frames × 3 series as `f64` in `VecDeque`s would be
//! 216 MB. So:
//! - a sample is a `u16`: the top half of its `f32` (bfloat16, 3 significant
//!   digits, any range, so one encoding serves percents and rates);
//! - one allocation per ring (`len × SERIES` samples, a frame's three
//!   side by side so a push touches one cache line), made only once a
//!   non-zero sample arrives and freed again once every sample it holds
//!   is zero: idle tasks (most of a big thread list) cost their map entry
//!   and nothing else;
//! - rings of tasks not seen for [`HISTORY_LEN`] frames are dropped.
//!
//! A full ring is 1,800 bytes; a task's map slot (32-byte header, key,
//! the table's spare room) about 70 more. BENCHMARKS.md ("TUI: sparkline
//! history") has the measured figures.
//!
//! Identity: a key is a PID (process rows) or TID (thread rows). The frame
//! carries no start time, so a ring restarts when its key comes back under
//! another command name, or after it was missing from a frame that had its
//! kind of row: a live process is in every frame, so a PID that was gone
//! and is back is a reused one. Thread rings pad with "no sample" across
//! frames that carried no thread rows at all (thread rows off).

use std::collections::{BTreeMap, VecDeque};

use crate::model::frame::{Frame, TaskView};

mod ring;

use ring::{Ring, Slab, tag_of, update};

/// Frames of history kept per ring (5 minutes at the default 1 s delay).
pub const HISTORY_LEN: usize = 300;

/// What a ring holds, per entity (the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    Stolen = 0,
    True = 1,
    NetRx = 2,
}

const SERIES: usize = 3;

/// Whose ring: a CPU, a process row (by PID) or a thread row (by TID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Cpu(u32),
    Proc(u32),
    Thread(u32),
}

impl Key {
    /// The ring of a task row: its PID on a process row, TID on a thread row.
    pub fn of(t: &TaskView) -> Key {
        if t.is_process {
            Key::Proc(t.pid)
        } else {
            Key::Thread(t.tid)
        }
    }
}

/// Every ring, and when each frame held ended.
#[derive(Clone, Debug)]
pub struct History {
    cap: usize,
    /// Frames pushed, wrapping; ring ages are differences of it.
    now: u32,
    /// (end unix ms, interval ms) of the frames held, oldest first.
    stamps: VecDeque<(u64, u32)>,
    cpus: BTreeMap<u32, Ring<SERIES>>,
    procs: Slab<SERIES>,
    threads: Slab<SERIES>,
    /// RES of process rows, by PID (the module doc says why apart).
    res: Slab<1>,
    /// Highest NET_RX/s of any CPU over the history: the CPUs' NET_RX
    /// sparklines share it, so a quiet CPU does not look busy.
    net_rx_peak: f64,
}

impl Default for History {
    fn default() -> Self {
        History::new(HISTORY_LEN)
    }
}

impl History {
    /// History of `len` frames (capped at 65,535); 0 keeps none.
    pub fn new(len: usize) -> History {
        History {
            cap: len.min(usize::from(u16::MAX)),
            now: 0,
            stamps: VecDeque::new(),
            cpus: BTreeMap::new(),
            procs: Slab::default(),
            threads: Slab::default(),
            res: Slab::default(),
            net_rx_peak: 0.0,
        }
    }

    /// Frames a ring holds at most.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Forgets everything (replay jumped); the capacity stays.
    pub fn clear(&mut self) {
        *self = History::new(self.cap);
    }

    /// Frames held (the longest any ring can be).
    pub fn frames(&self) -> usize {
        self.stamps.len()
    }

    /// Appends one frame's samples to every ring and drops the rings of
    /// tasks gone for [`History::capacity`] frames.
    pub fn push(&mut self, f: &Frame) {
        let cap = self.cap;
        if cap == 0 {
            return;
        }
        self.now = self.now.wrapping_add(1);
        let now = self.now;
        if self.stamps.len() == cap {
            self.stamps.pop_front();
        }
        let interval_ms = (f.interval_s * 1000.0).clamp(0.0, f64::from(u32::MAX)) as u32;
        self.stamps.push_back((f.unix_ms, interval_ms));
        for c in &f.cpus {
            let v = c
                .online
                .then_some([c.stolen_pct, c.true_pct, c.net_rx_per_s]);
            update(self.cpus.entry(c.cpu).or_default(), cap, now, 0, v);
        }
        let task = |t: &TaskView| Some([t.stolen_pct, t.true_pct, t.net_rx_pct()]);
        // Rows with memory, counted apart: the RES rings' row hints.
        let mut j = 0;
        for (i, t) in f.processes.iter().enumerate() {
            let tag = tag_of(&t.comm);
            let r = self.procs.at_row(i, t.pid);
            update(r, cap, now, tag, task(t));
            // Kernel threads have no memory: no ring.
            if t.res_bytes.is_some() || self.res.get(t.pid).is_some() {
                let r = self.res.at_row(j, t.pid);
                j += 1;
                let res = t.res_bytes.map_or(f64::NAN, |b| b as f64);
                update(r, cap, now, tag, Some([res]));
            }
        }
        for (i, t) in f.threads.iter().enumerate() {
            let r = self.threads.at_row(i, t.tid);
            update(r, cap, now, tag_of(&t.comm), task(t));
        }
        fn keep<const N: usize>(r: &mut Ring<N>, now: u32, cap: usize, kind_present: bool) -> bool {
            if r.last == now {
                return true;
            }
            r.gone |= kind_present;
            (now.wrapping_sub(r.last) as usize) < cap
        }
        let (procs, threads) = (!f.processes.is_empty(), !f.threads.is_empty());
        self.procs.retain(|r| keep(r, now, cap, procs));
        self.res.retain(|r| keep(r, now, cap, procs));
        self.threads.retain(|r| keep(r, now, cap, threads));
        self.cpus.retain(|_, r| keep(r, now, cap, false));
        self.net_rx_peak = self
            .cpus
            .values()
            .flat_map(|r| {
                (0..usize::from(r.len)).filter_map(|k| r.get(cap, Series::NetRx as usize, k))
            })
            .fold(0.0, |m, v| m.max(f64::from(v)));
    }

    fn ring(&self, key: Key) -> Option<&Ring<SERIES>> {
        match key {
            Key::Cpu(c) => self.cpus.get(&c),
            Key::Proc(p) => self.procs.get(p),
            Key::Thread(t) => self.threads.get(t),
        }
    }

    /// Whether `key` has a ring (seen in the last [`History::capacity`] frames).
    pub fn has(&self, key: Key) -> bool {
        self.ring(key).is_some()
    }

    /// `key`'s sample of series `s` from `age` frames before the newest
    /// (0: the newest frame); `None` where it has none.
    pub fn at(&self, key: Key, s: Series, age: usize) -> Option<f32> {
        let r = self.ring(key)?;
        let missed = self.now.wrapping_sub(r.last) as usize;
        r.get(self.cap, s as usize, age.checked_sub(missed)?)
    }

    /// Whether process `pid` has a RES ring (it had memory in the last
    /// [`History::capacity`] frames).
    pub fn has_res(&self, pid: u32) -> bool {
        self.res.get(pid).is_some()
    }

    /// The newest `n` frames of process `pid`'s RES, bytes, oldest first
    /// (3 significant digits), `None` where it has no sample.
    pub fn res_last_n(&self, pid: u32, n: usize) -> Vec<Option<f32>> {
        let Some(r) = self.res.get(pid) else {
            return vec![None; n];
        };
        let missed = self.now.wrapping_sub(r.last) as usize;
        (0..n)
            .rev()
            .map(|age| r.get(self.cap, 0, age.checked_sub(missed)?))
            .collect()
    }

    /// The newest `n` frames of `key`'s series `s`, oldest first, `None`
    /// where it has no sample.
    pub fn last_n(&self, key: Key, s: Series, n: usize) -> Vec<Option<f32>> {
        (0..n).rev().map(|age| self.at(key, s, age)).collect()
    }

    /// A `w`-character sparkline of the newest `w` frames against `scale`.
    pub fn sparkline(&self, key: Key, s: Series, w: usize, scale: f64) -> String {
        super::sparkline::spark(&self.last_n(key, s, w), scale)
    }

    /// Highest NET_RX/s of any CPU over the history (0 without any).
    pub fn net_rx_peak(&self) -> f64 {
        self.net_rx_peak
    }

    /// Wall time the newest `n` frames cover, in ms: from the start of the
    /// oldest's interval to the end of the newest.
    pub fn span_ms(&self, n: usize) -> u64 {
        let n = n.min(self.stamps.len());
        let (Some(&(end, _)), Some(&(first, iv))) = (
            self.stamps.back(),
            self.stamps.get(self.stamps.len().wrapping_sub(n)),
        ) else {
            return 0;
        };
        end.saturating_sub(first.saturating_sub(u64::from(iv)))
    }

    /// Heap bytes held (ring buffers, map slots, stamps): what the bench
    /// and BENCHMARKS.md report.
    pub fn heap_bytes(&self) -> usize {
        fn slab<const N: usize>(s: &Slab<N>) -> usize {
            s.rings.iter().map(|(_, r)| buf(r)).sum::<usize>()
                + s.rings.capacity() * std::mem::size_of::<(u32, Ring<N>)>()
                // A hashbrown slot: key, place and one control byte.
                + s.index.capacity() * (4 + std::mem::size_of::<usize>() + 1)
                + s.order.capacity() * std::mem::size_of::<usize>()
        }
        fn buf<const N: usize>(r: &Ring<N>) -> usize {
            r.data.as_ref().map_or(0, |d| d.len() * 2)
        }
        slab(&self.procs)
            + slab(&self.threads)
            + slab(&self.res)
            + self
                .cpus
                .values()
                .map(|r| buf(r) + std::mem::size_of::<Ring<SERIES>>() + 4)
                .sum::<usize>()
            + self.stamps.capacity() * std::mem::size_of::<(u64, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::frame::CpuView;

    fn task(pid: u32, comm: &str, stolen: f64) -> TaskView {
        TaskView {
            pid,
            tid: pid,
            is_process: true,
            comm: comm.into(),
            stolen_pct: stolen,
            true_pct: 50.0,
            ..Default::default()
        }
    }

    fn frame(i: u64, procs: Vec<TaskView>) -> Frame {
        Frame {
            unix_ms: 1_000_000 + i * 1000,
            interval_s: 1.0,
            cpus: vec![CpuView {
                cpu: 0,
                online: true,
                stolen_pct: 10.0,
                net_rx_per_s: i as f64 * 100.0,
                ..Default::default()
            }],
            processes: procs,
            ..Default::default()
        }
    }

    #[test]
    fn rings_are_bounded_and_oldest_first() {
        let mut h = History::new(4);
        for i in 0..10 {
            h.push(&frame(i, vec![task(7, "a", i as f64)]));
        }
        assert_eq!(h.frames(), 4);
        let k = Key::Proc(7);
        assert_eq!(
            h.last_n(k, Series::Stolen, 6),
            vec![None, None, Some(6.0), Some(7.0), Some(8.0), Some(9.0)]
        );
        assert_eq!(h.at(k, Series::True, 0), Some(50.0));
        assert_eq!(h.span_ms(4), 4000);
        assert_eq!(h.net_rx_peak(), 900.0);
    }

    #[test]
    fn idle_rings_allocate_nothing() {
        let mut h = History::new(300);
        let idle = |pid| TaskView {
            true_pct: 0.0,
            ..task(pid, "idle", 0.0)
        };
        for i in 0..5 {
            h.push(&frame(i, (1..=100).map(idle).collect()));
        }
        assert!(h.procs.rings.iter().all(|(_, r)| r.data.is_none()));
        assert_eq!(h.at(Key::Proc(3), Series::Stolen, 4), Some(0.0));
        h.push(&frame(5, vec![task(3, "idle", 20.0)]));
        assert_eq!(
            h.last_n(Key::Proc(3), Series::Stolen, 3),
            vec![Some(0.0), Some(0.0), Some(20.0)]
        );
        // Quiet again for a whole ring: the buffer goes, the zeros stay.
        let mut h = History::new(4);
        h.push(&frame(0, vec![task(3, "idle", 20.0)]));
        let quiet = || vec![idle(3)];
        for i in 1..4 {
            h.push(&frame(i, quiet()));
            assert!(
                h.procs.get(3).unwrap().data.is_some(),
                "frame {i}: 20 % is still held"
            );
        }
        h.push(&frame(4, quiet()));
        assert!(h.procs.get(3).unwrap().data.is_none());
        assert_eq!(
            h.last_n(Key::Proc(3), Series::Stolen, 4),
            vec![Some(0.0); 4]
        );
    }

    #[test]
    fn a_reused_pid_restarts_its_ring() {
        let mut h = History::new(10);
        h.push(&frame(0, vec![task(7, "a", 1.0)]));
        h.push(&frame(1, vec![task(7, "a", 2.0)]));
        // Same PID, another name: another task.
        h.push(&frame(2, vec![task(7, "b", 3.0)]));
        assert_eq!(
            h.last_n(Key::Proc(7), Series::Stolen, 3),
            vec![None, None, Some(3.0)]
        );
        // Gone for a frame that had processes, back under the same name:
        // a reused PID too.
        h.push(&frame(3, vec![task(8, "x", 0.0)]));
        assert_eq!(h.at(Key::Proc(7), Series::Stolen, 0), None);
        assert_eq!(h.at(Key::Proc(7), Series::Stolen, 1), Some(3.0));
        h.push(&frame(4, vec![task(7, "b", 4.0)]));
        assert_eq!(
            h.last_n(Key::Proc(7), Series::Stolen, 3),
            vec![None, None, Some(4.0)]
        );
    }

    #[test]
    fn thread_rings_pad_frames_without_thread_rows() {
        let mut h = History::new(10);
        let th = |tid, v| TaskView {
            is_process: false,
            tid,
            ..task(1, "w", v)
        };
        let with = |i, v| Frame {
            threads: vec![th(11, v)],
            ..frame(i, vec![task(1, "w", v)])
        };
        h.push(&with(0, 1.0));
        h.push(&frame(1, vec![task(1, "w", 0.0)]));
        h.push(&with(2, 3.0));
        assert_eq!(
            h.last_n(Key::Thread(11), Series::Stolen, 3),
            vec![Some(1.0), None, Some(3.0)]
        );
    }

    /// Rows that move, vanish and expire: each ring stays its key's.
    #[test]
    fn rings_follow_their_keys_when_rows_move() {
        let mut h = History::new(2);
        let rows = |v: &[(u32, f64)]| v.iter().map(|&(p, x)| task(p, "t", x)).collect();
        h.push(&frame(0, rows(&[(1, 1.0), (2, 2.0), (3, 3.0)])));
        h.push(&frame(1, rows(&[(3, 30.0), (1, 10.0)])));
        h.push(&frame(2, rows(&[(4, 4.0), (1, 11.0), (3, 31.0)])));
        // 2 expired: its place went to another ring, which kept its own.
        assert!(!h.has(Key::Proc(2)));
        for (pid, want) in [(1, [10.0, 11.0]), (3, [30.0, 31.0])] {
            let got = h.last_n(Key::Proc(pid), Series::Stolen, 2);
            assert_eq!(got, want.map(Some).to_vec(), "PID {pid}");
        }
        assert_eq!(
            h.last_n(Key::Proc(4), Series::Stolen, 2),
            vec![None, Some(4.0)]
        );
        assert_eq!(h.procs.rings.len(), h.procs.index.len());
    }

    /// RES rings: process rows with memory only, bytes to three
    /// significant digits, "no sample" where the memory is unknown.
    #[test]
    fn res_rings_for_processes_with_memory() {
        let mut h = History::new(4);
        let with = |pid, res: Option<u64>| TaskView {
            res_bytes: res,
            true_pct: 0.0,
            ..task(pid, "m", 0.0)
        };
        for (i, res) in [Some(64 << 20), Some(65 << 20), None, Some(66 << 20)]
            .into_iter()
            .enumerate()
        {
            h.push(&frame(i as u64, vec![with(1, None), with(7, res)]));
        }
        assert!(!h.has_res(1), "a kernel thread keeps no RES ring");
        let got = h.res_last_n(7, 5);
        assert_eq!(got[0], None, "older than the ring");
        assert_eq!(got[3], None, "unknown in that frame");
        for (g, mib) in [(got[1], 64.0), (got[2], 65.0), (got[4], 66.0)] {
            let g = f64::from(g.unwrap()) / f64::from(1u32 << 20);
            assert!((g - mib).abs() / mib < 0.004, "{g} MiB vs {mib}");
        }
        assert_eq!(h.res_last_n(99, 2), vec![None, None]);
        // Memory costs its own ring only: an idle process's stays empty.
        assert!(h.procs.get(7).unwrap().data.is_none());
    }

    #[test]
    fn tasks_unseen_for_a_whole_history_are_dropped() {
        let mut h = History::new(3);
        h.push(&frame(0, vec![task(7, "a", 1.0)]));
        for i in 1..3 {
            h.push(&frame(i, vec![]));
            assert!(h.has(Key::Proc(7)), "frame {i}");
        }
        h.push(&frame(3, vec![]));
        assert!(!h.has(Key::Proc(7)));
        assert!(h.has(Key::Cpu(0)));
    }
}

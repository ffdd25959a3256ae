//! The task sampler's passes: how they reach every thread and where the
//! records land (decoded by `collector::taskiter`).
//!
//! Two walks emit the same records. The kernel's `iter/task` walk
//! (`sample_tasks`) runs the program once per thread and finds each next
//! thread by PID, taking a reference on it: about three quarters of its
//! cost per thread. The open-coded walk (`walk_tasks`, Linux 6.8+) runs
//! once per pass and follows the task list itself, writing into a ring
//! buffer that user space sizes from what the previous pass needed. The
//! kernel's walk stays attached: it is what a kernel without the open-coded
//! iterator uses, and what a pass falls back to when the open walk cannot
//! run.
//!
//! The price of the open walk is that it runs in one piece, with no
//! preemption point on a kernel that preempts only voluntarily (most
//! distributions' default): 13 ms at 30,000 threads on the development VM,
//! where the kernel's walk returns to user space every 32 KiB of records.
//! So a pass takes it only while its predicted run (the last open pass's
//! time per task, times the tasks now) stays within a budget
//! ([`DEFAULT_WALK_SPAN`], `--walk-span`); a host with more threads than
//! that pays the kernel's walk, in pieces.

use std::cell::RefCell;
use std::ptr::NonNull;
use std::rc::Rc;

use anyhow::{Context, Result, anyhow};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, MapHandle, MapType, RingBuffer};

use super::BpfCollector;
use super::skel::{NettopSkel, types};

/// The open walk's program: attached pinned to one task, not as the others.
pub(super) const OPEN_WALK: &str = "walk_tasks";
/// The sampler's programs: no tracepoint, no run count.
pub(super) const PROGRAMS: [&str; 2] = ["sample_tasks", OPEN_WALK];

/// `NT_WALK_*` in bpf/nettop.h.
const WALK_NOT_RUN: u32 = 0;
const WALK_DONE: u32 = 1;
const WALK_OVERFLOW: u32 = 2;
const WALK_UNSUPPORTED: u32 = 3;

/// Ring sizes, bytes (a power of two the kernel accepts, pages at least):
/// the first ring, and the largest before the kernel's walk is used
/// instead (a host needing more has millions of threads).
const FIRST_RING: u64 = 1 << 18;
const MAX_RING: u64 = 1 << 30;

/// Longest an open-coded pass may run in one piece unless told otherwise:
/// half a scheduler tick at HZ=250, about 4,500 threads at the development
/// VM's cost per thread. A task that shares nettop's CPU waits no longer
/// than that for a sample.
pub const DEFAULT_WALK_SPAN: std::time::Duration = std::time::Duration::from_millis(2);
/// Time per task assumed before an open pass has been timed: above what
/// one costs with cold caches here (about 430 ns).
const FIRST_NS_PER_TASK: u64 = 600;

/// Whether the running kernel can load the open walk: the open-coded task
/// iterator is 6.7, a global function's trusted task argument 6.8.
pub(super) fn kernel_has_open_walk() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| release_at_least(&r, (6, 8)))
        .unwrap_or(false)
}

/// Whether a kernel release string ("6.18.4-fc", "6.8.0-45-generic")
/// is at least `want` (major, minor); `None` when it does not parse.
fn release_at_least(release: &str, want: (u32, u32)) -> Option<bool> {
    let mut it = release.trim().split(['.', '-', '+']);
    let major = it.next()?.parse::<u32>().ok()?;
    let minor = it.next()?.parse::<u32>().ok()?;
    Some((major, minor) >= want)
}

/// Whether a pass over `tasks` at `ns_per_task` runs within `budget_ns`.
fn fits_budget(tasks: u64, ns_per_task: u64, budget_ns: u64) -> bool {
    tasks.saturating_mul(ns_per_task) <= budget_ns
}

/// Ring bytes of a process-mode record that is a head alone, with the
/// ring's own 8-byte header: what most threads cost a pass.
const HEAD_BYTES: u64 = 64;

/// A ring that holds `need` bytes and a quarter more (a host's thread
/// count moves between passes); `None` past [`MAX_RING`].
fn ring_size(need: u64) -> Option<u64> {
    need.saturating_add(need / 4)
        .max(FIRST_RING)
        .checked_next_power_of_two()
        .filter(|&s| s <= MAX_RING)
}

/// What the open walk is attached with.
pub(super) struct OpenWalkOptions {
    /// The host's task count now: sizes the first ring.
    pub host_tasks: usize,
    /// Longest one pass may run.
    pub span: std::time::Duration,
}

/// Both walks; the open one is used while it works and fits the budget.
pub(super) struct Sampler {
    kernel: Link,
    open: Option<OpenWalk>,
    /// Longest an open pass may run, ns.
    budget_ns: u64,
    /// Tasks the last pass sampled (at first, the host's count).
    tasks: u64,
    /// The last open pass's run time per task.
    ns_per_task: u64,
    /// Whether the last pass took the open walk.
    last_open: bool,
}

impl Sampler {
    /// Takes the kernel's walk's link and, with `open_walk` (its program
    /// is loaded), attaches the open walk too.
    pub(super) fn attach(
        skel: &NettopSkel<'static>,
        kernel: Link,
        open_walk: Option<OpenWalkOptions>,
    ) -> Self {
        let tasks = open_walk.as_ref().map_or(0, |o| o.host_tasks as u64);
        let budget_ns = open_walk
            .as_ref()
            .map_or(0, |o| u64::try_from(o.span.as_nanos()).unwrap_or(u64::MAX));
        // Sized for the host when the first pass will take it; a host over
        // the budget keeps the smallest ring until it comes under.
        let first_ring = if fits_budget(tasks, FIRST_NS_PER_TASK, budget_ns) {
            ring_size(tasks.saturating_mul(HEAD_BYTES)).unwrap_or(FIRST_RING)
        } else {
            FIRST_RING
        };
        let open = open_walk
            .map(|_| OpenWalk::attach(skel, first_ring))
            .and_then(|w| {
                w.inspect_err(|e| log::debug!("open-coded task walk unavailable: {e:#}"))
                    .ok()
            });
        Self {
            kernel,
            open,
            budget_ns,
            tasks,
            ns_per_task: FIRST_NS_PER_TASK,
            last_open: false,
        }
    }

    /// The open-coded walk's ring size, while passes take that walk.
    pub(super) fn open_ring(&self) -> Option<u64> {
        self.open.as_ref().map(|o| o.ring.size)
    }
}

/// The open-coded walk: its pinned link and the ring in the map's slot.
struct OpenWalk {
    /// An iterator link pinned to this process's leader thread, so each
    /// pass runs the program exactly once.
    link: Link,
    ring: Ring,
}

/// The ring the open walk writes to.
struct Ring {
    /// Hands each record to `out`.
    reader: RingBuffer<'static>,
    /// In bytes.
    size: u64,
    /// The ring's map: the slot and the mapping hold it too.
    _map: MapHandle,
    /// Where `reader` appends: the caller's buffer, swapped in for a pass.
    out: Rc<RefCell<Vec<u8>>>,
}

impl Ring {
    /// A new ring of `size` bytes, put in the program's slot.
    fn new(skel: &NettopSkel<'static>, size: u64) -> Result<Self> {
        let entries = u32::try_from(size).context("task walk ring size")?;
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        };
        let map = MapHandle::create(MapType::RingBuf, Some("nt_walk_ring"), 0, 0, entries, &opts)
            .with_context(|| format!("creating a {size}-byte task walk ring"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&map));
        skel.maps
            .walk_ring
            .update(&0u32.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .context("putting the task walk ring in its slot")?;
        let out = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&out);
        let mut builder = libbpf_rs::RingBufferBuilder::new();
        builder
            .add(&map, move |rec: &[u8]| {
                sink.borrow_mut().extend_from_slice(rec);
                0
            })
            .context("reading the task walk ring")?;
        let reader = builder.build().context("mapping the task walk ring")?;
        Ok(Self {
            reader,
            size,
            _map: map,
            out,
        })
    }

    /// Everything in the ring, appended to `buf` after clearing it.
    fn drain(&self, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        std::mem::swap(buf, &mut self.out.borrow_mut());
        let read = self.reader.consume().context("reading the task walk ring");
        std::mem::swap(buf, &mut self.out.borrow_mut());
        read
    }
}

/// How an open-coded pass ended.
enum Walked {
    /// The records are in; the walk ran this long in one piece.
    Done { span_ns: u64 },
    /// The ring was too small: this many bytes were needed.
    Outgrown(u64),
    /// The walk cannot run here: use the kernel's from now on.
    Unusable(String),
}

impl OpenWalk {
    fn attach(skel: &NettopSkel<'static>, size: u64) -> Result<Self> {
        let mut info = libbpf_sys::bpf_iter_link_info::default();
        // The leader lives as long as the process: the link's one task.
        info.task.tid = std::process::id();
        let opts = libbpf_sys::bpf_iter_attach_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_iter_attach_opts>() as _,
            link_info: &mut info,
            link_info_len: std::mem::size_of::<libbpf_sys::bpf_iter_link_info>() as u32,
            ..Default::default()
        };
        let prog = skel.progs.walk_tasks.as_libbpf_object();
        // SAFETY: prog is a loaded program of a live skeleton; opts and
        // info outlive the call, which copies what it needs.
        let raw = unsafe { libbpf_sys::bpf_program__attach_iter(prog.as_ptr(), &opts) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            anyhow!(
                "attaching walk_tasks to one task: {}",
                std::io::Error::last_os_error()
            )
        })?;
        // SAFETY: raw is a live link nobody else owns; Link destroys it.
        let link = unsafe { Link::from_ptr(raw) };
        Ok(Self {
            link,
            ring: Ring::new(skel, size)?,
        })
    }

    /// One pass into `buf`; `bss` is the object's live .bss mapping.
    fn pass(&mut self, buf: &mut Vec<u8>, bss: *mut types::bss) -> Result<Walked> {
        // SAFETY: bss is the live mapping (BpfCollector::bss); volatile, as
        // every access after load.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).walk_status), WALK_NOT_RUN);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).pass_tasks), 0);
        }
        let mut it = libbpf_rs::Iter::new(&self.link).context("starting a task walk")?;
        // The walk writes nothing to its seq_file; reading runs it.
        std::io::Read::read_to_end(&mut it, &mut Vec::new()).context("running the task walk")?;
        // SAFETY: as above; the program has returned.
        let (status, need, span_ns) = unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_status)),
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_need)),
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_ns)),
            )
        };
        match status {
            WALK_DONE => {
                self.ring.drain(buf)?;
                Ok(Walked::Done { span_ns })
            }
            WALK_OVERFLOW => Ok(Walked::Outgrown(need)),
            WALK_UNSUPPORTED => Ok(Walked::Unusable(
                "this kernel has no open-coded task iterator (Linux 6.8+)".into(),
            )),
            WALK_NOT_RUN => Ok(Walked::Unusable("the pinned walk did not run".into())),
            s => Ok(Walked::Unusable(format!("the walk ended with status {s}"))),
        }
    }

    /// Replaces the ring with one that holds `need` bytes.
    fn grow(&mut self, skel: &NettopSkel<'static>, need: u64) -> Result<()> {
        let size = ring_size(need)
            .ok_or_else(|| anyhow!("a pass needs {need} bytes of ring, more than {MAX_RING}"))?;
        // The old ring goes with its map handle; the slot holds the new.
        self.ring = Ring::new(skel, size)?;
        Ok(())
    }
}

impl BpfCollector {
    /// One task sampler pass into `buf` (raw records, see
    /// `collector::taskiter`). `false` when there is no sampler.
    /// With `thread_rows` every record is complete; without, only group
    /// leaders' are (the others carry just what their process sums).
    pub fn sample_tasks(&mut self, buf: &mut Vec<u8>, thread_rows: bool) -> Result<bool> {
        let Some(sampler) = self.sampler.as_mut() else {
            return Ok(false);
        };
        self.sample_gen += 1;
        let bss = self.bss;
        // SAFETY: bss is the live mapping (see BpfCollector::bss); volatile
        // stores, read by the programs of this pass.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).sample_gen), self.sample_gen);
            std::ptr::write_volatile(
                std::ptr::addr_of_mut!((*bss).thread_rows),
                u32::from(thread_rows),
            );
        }
        // SAFETY: as above; read once the pass has returned.
        let tasks =
            move || unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*bss).pass_tasks)) };
        let fits = fits_budget(sampler.tasks, sampler.ns_per_task, sampler.budget_ns);
        if let Some(open) = sampler.open.as_mut().filter(|_| fits) {
            let mut walked = open.pass(buf, bss)?;
            if let Walked::Outgrown(need) = walked {
                walked = match open.grow(&self.skel, need) {
                    Ok(()) => open.pass(buf, bss)?,
                    Err(e) => Walked::Unusable(format!("{e:#}")),
                };
            }
            match walked {
                Walked::Done { span_ns } => {
                    sampler.last_open = true;
                    sampler.tasks = tasks();
                    sampler.ns_per_task = span_ns / sampler.tasks.max(1);
                    return Ok(true);
                }
                Walked::Outgrown(need) => {
                    log::debug!("task walk ring outgrown twice ({need} bytes); kernel walk")
                }
                Walked::Unusable(why) => {
                    log::debug!("open-coded task walk: {why}; the kernel's walk from now on");
                    sampler.open = None;
                }
            }
        }
        // SAFETY: as above: the kernel's pass counts from zero.
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).pass_tasks), 0) };
        let mut it =
            libbpf_rs::Iter::new(&sampler.kernel).context("starting a task sampler pass")?;
        buf.clear();
        std::io::Read::read_to_end(&mut it, buf).context("reading the task sampler")?;
        sampler.last_open = false;
        sampler.tasks = tasks();
        Ok(true)
    }

    /// The open-coded walk's ring size in bytes, while task passes take
    /// that walk; `None` on the kernel's walk.
    pub fn task_walk_ring(&self) -> Option<u64> {
        self.sampler.as_ref().and_then(Sampler::open_ring)
    }

    /// Whether the last task pass took the open-coded walk.
    pub fn last_pass_open(&self) -> bool {
        self.sampler.as_ref().is_some_and(|s| s.last_open)
    }

    /// Makes task passes take the kernel's walk (tests that compare the two).
    pub fn use_kernel_walk(&mut self) {
        if let Some(s) = self.sampler.as_mut() {
            s.open = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_walk_is_taken_only_within_the_span_budget() {
        let default = DEFAULT_WALK_SPAN.as_nanos() as u64;
        let raised = 20_000_000;
        // The development VM: ~430 ns per task with cold caches.
        assert!(fits_budget(4_000, 430, default));
        assert!(!fits_budget(30_000, 430, default));
        assert!(fits_budget(30_000, 430, raised));
        assert!(!fits_budget(60_000, 430, raised));
        // Before any open pass: the assumed cost and the host's count.
        assert!(fits_budget(3_000, FIRST_NS_PER_TASK, default));
        assert!(!fits_budget(4_000, FIRST_NS_PER_TASK, default));
        assert!(!fits_budget(u64::MAX, 2, u64::MAX - 1));
    }

    #[test]
    fn the_open_walk_is_tried_from_linux_6_8() {
        assert_eq!(release_at_least("6.18.44-fc-v657\n", (6, 8)), Some(true));
        assert_eq!(release_at_least("6.8.0-45-generic", (6, 8)), Some(true));
        assert_eq!(release_at_least("6.7.12", (6, 8)), Some(false));
        assert_eq!(
            release_at_least("5.14.0-427.el9.x86_64", (6, 8)),
            Some(false)
        );
        assert_eq!(release_at_least("10.1", (6, 8)), Some(true));
        assert_eq!(release_at_least("garbage", (6, 8)), None);
    }

    #[test]
    fn rings_hold_a_quarter_more_than_a_pass_needs() {
        assert_eq!(ring_size(0), Some(FIRST_RING));
        // 30,000 heads: 1.9 MB, 2.4 MB with the margin, a 4 MiB ring.
        assert_eq!(ring_size(30_000 * HEAD_BYTES), Some(4 << 20));
        assert_eq!(ring_size(MAX_RING), None);
    }
}

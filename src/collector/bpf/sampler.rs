//! The task sampler's passes: how they reach every thread and where the
//! records land (decoded by `collector::taskiter`).
//!
//! Two walks emit the same records. The kernel's `iter/task` walk
//! (`sample_tasks`) runs the program once per thread and finds each next
//! thread by PID, taking a reference on it: about three quarters of its
//! cost per thread. The open-coded walk (`walk_tasks`) follows the task
//! list itself, writing into a ring buffer. The kernel's walk stays
//! attached: it is what a kernel without the open walk uses, and what a
//! pass is retaken by when the open walk cannot finish it.
//!
//! A run of the open walk cannot be preempted on a kernel that preempts
//! only voluntarily (most distributions' default): a whole pass took 13 ms
//! at 30,000 threads on the development VM. So a run stops at a budget
//! ([`DEFAULT_WALK_SPAN`], `--walk-span`) and the pass goes on in another
//! run, after a return to user space, from the thread the last one
//! stopped after. The ring is drained after every run, so it holds one
//! run's records.

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
const WALK_MORE: u32 = 5;
const WALK_LOST: u32 = 6;

/// Ring sizes, bytes (a power of two the kernel accepts, pages at least):
/// the first ring, and the largest before the kernel's walk is used
/// instead (a run needing more has millions of threads).
const FIRST_RING: u64 = 1 << 18;
const MAX_RING: u64 = 1 << 30;

/// Longest one run of the open walk may go on unless told otherwise: half
/// a scheduler tick at HZ=250, about 4,500 threads at the development VM's
/// cost per thread. A task that shares nettop's CPU waits no longer than
/// that for a sample.
pub const DEFAULT_WALK_SPAN: std::time::Duration = std::time::Duration::from_millis(2);

/// Runs a pass may take before it is given up as a list that does not end
/// (each run samples at least 32 threads).
const MAX_RUNS: u32 = 1 << 20;

/// Whether the running kernel can load the open walk: bpf_for, the
/// open-coded numeric iterator, is 6.4. An older kernel that has it
/// backported fails the load, and the object loads again without it.
pub(super) fn kernel_has_open_walk() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| release_at_least(&r, (6, 4)))
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
    /// Longest one run may go on.
    pub span: std::time::Duration,
}

/// Both walks; the open one is used while it works.
pub(super) struct Sampler {
    kernel: Link,
    open: Option<OpenWalk>,
    /// Longest one run of the open walk may go on, ns.
    budget_ns: u64,
    /// Runs the last pass took on the open walk; 0 when it took the
    /// kernel's.
    last_runs: u32,
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
        let first_ring = ring_size(tasks.saturating_mul(HEAD_BYTES)).unwrap_or(FIRST_RING);
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
            last_runs: 0,
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

    /// Everything in the ring, appended to `buf`.
    fn drain(&self, buf: &mut Vec<u8>) -> Result<()> {
        std::mem::swap(buf, &mut self.out.borrow_mut());
        let read = self.reader.consume().context("reading the task walk ring");
        std::mem::swap(buf, &mut self.out.borrow_mut());
        read
    }
}

/// How an open-coded pass ended.
enum Walked {
    /// The records are in, from this many runs.
    Done { runs: u32 },
    /// A run needed more ring than the largest: this many bytes.
    Outgrown(u64),
    /// The thread a run was to resume after had exited.
    Lost,
    /// The walk cannot run here: use the kernel's from now on.
    Unusable(String),
}

/// The walk's state in the object's live .bss mapping.
struct WalkVars(*mut types::bss);

impl WalkVars {
    /// Where the next run resumes and the tasks counted so far.
    fn position(&self) -> (u32, u64, u64) {
        let bss = self.0;
        // SAFETY: bss is the live mapping (BpfCollector::bss); volatile, as
        // every access after load; no run is going on.
        unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_resume_tid)),
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_resume_start)),
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).pass_tasks)),
            )
        }
    }

    /// Sets where the next run resumes (TID 0: at the list's head), the
    /// tasks counted so far, and clears the run's status.
    fn set_position(&self, (tid, start, tasks): (u32, u64, u64)) {
        let bss = self.0;
        // SAFETY: as in position.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).walk_resume_tid), tid);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).walk_resume_start), start);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).pass_tasks), tasks);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*bss).walk_status), WALK_NOT_RUN);
        }
    }

    fn set_budget(&self, ns: u64) {
        // SAFETY: as in position.
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*self.0).walk_budget_ns), ns) };
    }

    /// How the last run ended and the ring bytes it needed.
    fn outcome(&self) -> (u32, u64) {
        let bss = self.0;
        // SAFETY: as in position; the run has returned.
        unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_status)),
                std::ptr::read_volatile(std::ptr::addr_of!((*bss).walk_need)),
            )
        }
    }
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

    /// One pass into `buf`, in runs of at most `budget_ns`.
    fn pass(
        &mut self,
        skel: &NettopSkel<'static>,
        buf: &mut Vec<u8>,
        vars: &WalkVars,
        budget_ns: u64,
    ) -> Result<Walked> {
        buf.clear();
        vars.set_budget(budget_ns);
        vars.set_position((0, 0, 0));
        let mut runs = 0;
        while runs < MAX_RUNS {
            let at = vars.position();
            let mut it = libbpf_rs::Iter::new(&self.link).context("starting a task walk")?;
            // The walk writes nothing to its seq_file; reading runs it.
            std::io::Read::read_to_end(&mut it, &mut Vec::new())
                .context("running the task walk")?;
            runs += 1;
            match vars.outcome() {
                (WALK_MORE, _) => self.ring.drain(buf)?,
                (WALK_DONE, _) => {
                    self.ring.drain(buf)?;
                    return Ok(Walked::Done { runs });
                }
                (WALK_OVERFLOW, need) => {
                    let Some(size) = ring_size(need) else {
                        return Ok(Walked::Outgrown(need));
                    };
                    // The old ring and its partial run go with its map
                    // handle; the run is taken again into the new one.
                    self.ring = match Ring::new(skel, size) {
                        Ok(r) => r,
                        Err(e) => return Ok(Walked::Unusable(format!("{e:#}"))),
                    };
                    vars.set_position(at);
                }
                (WALK_LOST, _) => return Ok(Walked::Lost),
                (WALK_UNSUPPORTED, _) => {
                    return Ok(Walked::Unusable(
                        "this kernel lacks bpf_task_from_pid or bpf_rdonly_cast".into(),
                    ));
                }
                (WALK_NOT_RUN, _) => {
                    return Ok(Walked::Unusable("the pinned walk did not run".into()));
                }
                (s, _) => return Ok(Walked::Unusable(format!("the walk ended with status {s}"))),
            }
        }
        Ok(Walked::Unusable(format!(
            "a pass went on past {MAX_RUNS} runs"
        )))
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
        if let Some(open) = sampler.open.as_mut() {
            match open.pass(&self.skel, buf, &WalkVars(bss), sampler.budget_ns)? {
                Walked::Done { runs } => {
                    sampler.last_runs = runs;
                    return Ok(true);
                }
                Walked::Outgrown(need) => {
                    log::debug!("a task walk run needs {need} bytes of ring; kernel walk")
                }
                Walked::Lost => log::debug!("task walk lost its place; kernel walk"),
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
        sampler.last_runs = 0;
        Ok(true)
    }

    /// The open-coded walk's ring size in bytes, while task passes take
    /// that walk; `None` on the kernel's walk.
    pub fn task_walk_ring(&self) -> Option<u64> {
        self.sampler.as_ref().and_then(Sampler::open_ring)
    }

    /// Runs of the open-coded walk the last task pass took; 0 when it
    /// took the kernel's walk.
    pub fn last_pass_runs(&self) -> u32 {
        self.sampler.as_ref().map_or(0, |s| s.last_runs)
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
    fn the_open_walk_is_tried_from_linux_6_4() {
        assert_eq!(release_at_least("6.18.44-fc-v657\n", (6, 4)), Some(true));
        assert_eq!(release_at_least("6.8.0-45-generic", (6, 4)), Some(true));
        assert_eq!(release_at_least("6.3.12", (6, 4)), Some(false));
        assert_eq!(
            release_at_least("5.14.0-427.el9.x86_64", (6, 4)),
            Some(false)
        );
        assert_eq!(release_at_least("10.1", (6, 4)), Some(true));
        assert_eq!(release_at_least("garbage", (6, 4)), None);
    }

    #[test]
    fn rings_hold_a_quarter_more_than_a_pass_needs() {
        assert_eq!(ring_size(0), Some(FIRST_RING));
        // 30,000 heads: 1.9 MB, 2.4 MB with the margin, a 4 MiB ring.
        assert_eq!(ring_size(30_000 * HEAD_BYTES), Some(4 << 20));
        assert_eq!(ring_size(MAX_RING), None);
    }
}

//! A pure user-space victim that measures its own CPU loss.
//!
//! It spins on a fixed arithmetic chunk and reads the clock after each: it
//! makes no system calls in its loop (the clock is read through the vDSO), so
//! a step much longer than the bucket's median step is time the kernel took
//! from it — interrupts, softirqs, IPIs, or another task. The gaps' total
//! is the oracle nettop is checked against, independent of any kernel
//! accounting. The chunk rate is reported too, but on a shared VM the same
//! chunk runs 0.5 µs in one second and 0.9 µs in the next (the host's
//! frequency and SMT sibling) with no time lost: a rate is not a share.
//!
//! Shared by the accuracy test (which re-executes its own binary to get a
//! separate victim process) and `bench/programs/victim.rs` (benchmarks).

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Arithmetic steps per chunk: ~100 ns, short enough that a gap of a few µs
/// between clock reads can only be an interruption.
pub const CHUNK_ITERS: u32 = 64;

#[derive(Clone, Debug)]
pub struct Options {
    /// CPU to pin the calling thread to.
    pub cpu: Option<usize>,
    /// Safety bound: stop after this long even if nobody kills us.
    pub max_ms: u64,
    /// Length of one reported bucket.
    pub bucket_ms: u64,
    /// A clock-read step longer than the bucket's median step by more than
    /// this counts as an interruption.
    pub gap_threshold_ns: u64,
    /// Nice value to run at (negative needs root). A victim at -20 keeps
    /// ~99 % of its CPU against a nice-0 CPU hog, so the oracle measures
    /// interrupt loss, not another task's share, on a busy machine.
    pub nice: Option<i32>,
    /// Pure-IPI load: a second thread pinned to this CPU interrupts the
    /// spinner with expedited membarriers (one `call_function_single` IPI
    /// each, no softirq), one every `ipi_period_ns`, starting `ipi_after_ms`
    /// into the run.
    pub ipi_cpu: Option<usize>,
    pub ipi_period_ns: u64,
    pub ipi_after_ms: u64,
    /// The sender shoots TLB entries down instead: it makes one page of the
    /// shared address space read-only and writable again, one TLB-shootdown
    /// IPI (call-function vector, `flush_tlb_func`) to the spinner's CPU
    /// each time, as a sibling thread changing mappings does.
    pub tlb: bool,
    /// The sender shoots TLB entries down by unmapping instead: it maps a
    /// fresh page, the spinner touches it, and the sender unmaps it, as a
    /// sibling thread freeing memory both used does: a shootdown of an
    /// entry the spinner holds (on the development VM's kernel the same
    /// one-page flush as mprotect's, no page tables freed).
    pub munmap: bool,
    /// The sender wakes a SCHED_FIFO thread sleeping on the spinner's CPU
    /// instead (eventfd): a reschedule IPI, then that thread runs and
    /// sleeps again; its run time is reported per bucket (`other_ns`).
    pub wake: bool,
    /// The sender only opens a `cpu-clock` perf event on the spinner's CPU
    /// (nettop's calibration `Ticker`), whose hrtimer fires every
    /// `ipi_period_ns`: local timer interrupts that wake nobody, as a
    /// profiler sampling the host makes.
    pub timer: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu: None,
            max_ms: 60_000,
            bucket_ms: 100,
            gap_threshold_ns: 2_000,
            nice: None,
            ipi_cpu: None,
            ipi_period_ns: 20_000,
            ipi_after_ms: 0,
            tlb: false,
            munmap: false,
            wake: false,
            timer: false,
        }
    }
}

impl Options {
    /// Parses `key=value` pairs separated by commas, e.g. "cpu=1,max_ms=9000";
    /// the form used in the environment of a re-executed test binary.
    /// `nice=N` means nice value -N (only raising priority is useful here).
    pub fn parse_kv(s: &str) -> Result<Options, String> {
        let mut o = Options::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("victim option '{part}' is not key=value"))?;
            let n: u64 = v
                .parse()
                .map_err(|_| format!("victim option {k}: '{v}' is not a number"))?;
            match k {
                "cpu" => o.cpu = Some(n as usize),
                "max_ms" => o.max_ms = n,
                "bucket_ms" => o.bucket_ms = n.max(1),
                "gap_ns" => o.gap_threshold_ns = n,
                "nice" => o.nice = Some(-(n as i32)),
                "ipi_cpu" => o.ipi_cpu = Some(n as usize),
                "ipi_period_ns" => o.ipi_period_ns = n.max(1),
                "ipi_after_ms" => o.ipi_after_ms = n,
                "tlb" => o.tlb = n != 0,
                "munmap" => o.munmap = n != 0,
                "wake" => o.wake = n != 0,
                "timer" => o.timer = n != 0,
                _ => return Err(format!("unknown victim option '{k}'")),
            }
        }
        Ok(o)
    }
}

/// Work done in one bucket of wall time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Bucket {
    /// Wall-clock end of the bucket, µs since the epoch, to line it up with
    /// nettop's frame timestamps.
    pub end_unix_us: u64,
    /// Monotonic length of the bucket.
    pub dur_ns: u64,
    pub chunks: u64,
    /// Clock-read steps longer than the bucket's median step by more than
    /// the threshold, and their total length beyond one median step.
    pub gaps: u64,
    pub gap_ns: u64,
    /// Thread ID of the spinning thread (its row in nettop's thread list).
    #[serde(default)]
    pub tid: u32,
    /// CPU time of the thread the waker wakes on the spinner's CPU (see
    /// [`Options::wake`]) in this bucket: inside the spinner's gaps, but
    /// that thread's own run, not an interruption's cost.
    #[serde(default)]
    pub other_ns: u64,
}

impl Bucket {
    pub fn chunks_per_ms(&self) -> f64 {
        if self.dur_ns == 0 {
            return 0.0;
        }
        self.chunks as f64 * 1e6 / self.dur_ns as f64
    }
}

/// Sets the calling thread's nice value.
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority(2) on PRIO_PROCESS with who = 0 (the calling
    // thread on Linux) and a plain integer; no memory is passed.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is a valid
    // (empty) value; CPU_SET only writes inside it (the index is bounded by
    // the check below), and sched_setaffinity reads exactly size_of bytes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu {cpu} out of range"),
            ));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// One chunk of dependent arithmetic the compiler cannot drop.
#[inline(always)]
fn chunk(mut x: u64) -> u64 {
    for _ in 0..CHUNK_ITERS {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    black_box(x)
}

fn membarrier(cmd: libc::c_int) -> io::Result<()> {
    // SAFETY: membarrier(2) takes two integers and a CPU id, no memory.
    if unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// MEMBARRIER_CMD_PRIVATE_EXPEDITED and its registration (uapi/linux/membarrier.h).
const MB_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MB_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// One page of the process's address space, present, whose protection the
/// TLB sender lowers (a shootdown to every other CPU running the process)
/// and restores (on the development VM's kernel a second shootdown).
struct Page(*mut libc::c_void);

impl Page {
    const LEN: usize = 4096;

    fn new() -> io::Result<Page> {
        // SAFETY: a fresh anonymous private mapping; nothing else is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `p` is a writable mapping of LEN bytes: make it present.
        unsafe { std::ptr::write_volatile(p.cast::<u8>(), 1) };
        Ok(Page(p))
    }

    fn shoot(&self) -> io::Result<()> {
        for prot in [libc::PROT_READ, libc::PROT_READ | libc::PROT_WRITE] {
            // SAFETY: our own mapping; no Rust reference points into it.
            if unsafe { libc::mprotect(self.0, Self::LEN, prot) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.0, Self::LEN) };
    }
}

/// The page the munmap sender hands to the spinner (see
/// [`Options::munmap`]): its address, then a new sequence number; the
/// spinner touches the page once per number and answers with it. A new
/// mapping can reuse the last one's address, so the number, not the
/// address, says it is new.
static HANDED: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static HANDED_SEQ: AtomicU64 = AtomicU64::new(0);
static TOUCHED_SEQ: AtomicU64 = AtomicU64::new(0);

/// One round of the munmap sender: a fresh page, touched by both threads,
/// then unmapped (the shootdown). Gives up waiting for the spinner's touch
/// when `stop` is set.
fn map_touch_unmap(seq: u64, stop: &AtomicBool) -> io::Result<()> {
    let page = Page::new()?;
    HANDED.store(page.0.cast(), Ordering::Relaxed);
    HANDED_SEQ.store(seq, Ordering::Release);
    while TOUCHED_SEQ.load(Ordering::Acquire) != seq {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        std::hint::spin_loop();
    }
    drop(page);
    Ok(())
}

/// The spinner's side: touches a newly handed page once. The sender
/// unmaps it only after the answer, and the spinner never touches it again.
#[inline]
fn touch_handed(last: &mut u64) {
    let seq = HANDED_SEQ.load(Ordering::Acquire);
    if seq != *last {
        let p = HANDED.load(Ordering::Relaxed);
        // SAFETY: the sender mapped `p` (one writable page) before
        // publishing `seq`, and unmaps it only after TOUCHED_SEQ says
        // `seq`, which is stored after this write.
        unsafe { std::ptr::write_volatile(p, 2) };
        TOUCHED_SEQ.store(seq, Ordering::Release);
        *last = seq;
    }
}

/// The pure-IPI sender (see [`Options::ipi_cpu`]): paced by spinning on the
/// clock, since a sleep would be far coarser than the period.
fn send_ipis(
    opts: &Options,
    cpu: usize,
    stop: &AtomicBool,
    wake: Option<libc::c_int>,
) -> io::Result<u64> {
    pin_to_cpu(cpu)?;
    // The spinner's raised priority is inherited. The pure-IPI sender drops
    // it, so it shares its CPU fairly with nettop, which runs there. The
    // TLB and wake-up senders keep it: the scheduler splits the process's
    // (auto)group weight between CPUs by its threads' weights, so next to
    // a nice -20 spinner a nice-0 sender gets ~1 % of the group's weight
    // on its CPU. On a busy host it then sent ~300 TLB shootdowns/s
    // instead of 10,000 (a sender that waits for every IPI's answer needs
    // its CPU). The pure-IPI sender starved the same way on the shared VM
    // (~1,000 membarriers/s, BENCHMARKS.md), but that oracle is in the
    // default suite and passes on a quiet host as it is.
    if !(opts.tlb || opts.munmap || opts.wake || opts.timer) {
        set_nice(0)?;
    }
    let start = Instant::now();
    while start.elapsed().as_millis() < u128::from(opts.ipi_after_ms) {
        if stop.load(Ordering::Relaxed) {
            return Ok(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let period = std::time::Duration::from_nanos(opts.ipi_period_ns);
    if opts.timer {
        let cpu = opts.cpu.unwrap_or(0) as u32;
        let timer = nettop::calibrate::hrtimer::PinnedTimer::new(cpu, period)
            .and_then(|t| t.enable().map(|()| t))
            .map_err(|e| io::Error::other(format!("{e:#}")))?;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(timer);
        return Ok(0);
    }
    let page = if opts.tlb { Some(Page::new()?) } else { None };
    let mut next = Instant::now();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        match (&page, wake) {
            _ if opts.munmap => map_touch_unmap(n + 1, stop)?,
            (Some(p), _) => p.shoot()?,
            (None, Some(fd)) => eventfd_io(fd, true)?,
            (None, None) => membarrier(MB_PRIVATE_EXPEDITED)?,
        }
        n += 1;
        next += period;
        while Instant::now() < next {
            std::hint::spin_loop();
        }
    }
    Ok(n)
}

/// Spins until `max_ms`, calling `emit` after every bucket; stops early when
/// `emit` returns false.
pub fn run(opts: &Options, emit: impl FnMut(&Bucket) -> bool) -> io::Result<()> {
    if let Some(cpu) = opts.cpu {
        pin_to_cpu(cpu)?;
    }
    if let Some(nice) = opts.nice {
        set_nice(nice)?;
    }
    let Some(ipi_cpu) = opts.ipi_cpu else {
        return spin(opts, None, emit);
    };
    membarrier(MB_REGISTER_PRIVATE_EXPEDITED)?;
    let stop = AtomicBool::new(false);
    let efd = if opts.wake {
        // SAFETY: eventfd(2) with valid flags.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Some(fd)
    } else {
        None
    };
    let r = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let woken = efd.map(|fd| {
            let stop = &stop;
            s.spawn(move || sleep_on(opts.cpu, fd, stop, tx))
        });
        let clock = match &woken {
            Some(_) => Some(
                rx.recv()
                    .map_err(|_| io::Error::other("woken thread died"))??,
            ),
            None => None,
        };
        let sender = s.spawn(|| send_ipis(opts, ipi_cpu, &stop, efd));
        let r = spin(opts, clock, emit);
        stop.store(true, Ordering::Relaxed);
        let sent = sender
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("IPI sender panicked")));
        if let (Some(fd), Some(h)) = (efd, woken) {
            eventfd_io(fd, true)?;
            h.join()
                .unwrap_or_else(|_| Err(io::Error::other("woken thread panicked")))?;
        }
        r.and(sent.map(|_| ()))
    });
    if let Some(fd) = efd {
        // SAFETY: our own eventfd, closed once, after both users joined.
        unsafe { libc::close(fd) };
    }
    r
}

/// One 8-byte write (wake) or read (sleep until woken) on an eventfd.
fn eventfd_io(fd: libc::c_int, write: bool) -> io::Result<()> {
    let mut v: u64 = 1;
    let p = std::ptr::addr_of_mut!(v).cast::<libc::c_void>();
    // SAFETY: 8 bytes to or from a live u64 on a descriptor we own.
    let rc = unsafe {
        if write {
            libc::write(fd, p, 8)
        } else {
            libc::read(fd, p, 8)
        }
    };
    if rc != 8 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The woken thread (see [`Options::wake`]): pinned to the spinner's CPU,
/// SCHED_FIFO so that every wake-up preempts the spinner, sleeping on the
/// eventfd until `stop`.
fn sleep_on(
    cpu: Option<usize>,
    fd: libc::c_int,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<io::Result<libc::clockid_t>>,
) -> io::Result<()> {
    let setup = || -> io::Result<libc::clockid_t> {
        if let Some(cpu) = cpu {
            pin_to_cpu(cpu)?;
        }
        let p = libc::sched_param { sched_priority: 1 };
        // SAFETY: sets the calling thread's policy from a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
            return Err(io::Error::last_os_error());
        }
        own_clock()
    };
    let r = setup();
    let failed = r
        .as_ref()
        .err()
        .map(|e| io::Error::new(e.kind(), e.to_string()));
    let _ = ready.send(r);
    if let Some(e) = failed {
        return Err(e);
    }
    while !stop.load(Ordering::Relaxed) {
        eventfd_io(fd, false)?;
    }
    Ok(())
}

/// The calling thread's CPU-time clock, readable by the other threads.
fn own_clock() -> io::Result<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid; the call writes one clockid_t.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(id)
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    // SAFETY: timespec is plain data; clock_gettime writes one.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(id, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Step lengths of one bucket, in 10 ns bins: the bucket's median step is
/// the reference a gap is measured against.
struct Steps {
    bins: Vec<u32>,
    /// Steps too long for a bin: count and total length.
    long: u64,
    long_ns: u64,
    n: u64,
}

impl Steps {
    const BIN_NS: u64 = 10;
    const BINS: usize = 2048;

    fn new() -> Steps {
        Steps {
            bins: vec![0; Self::BINS],
            long: 0,
            long_ns: 0,
            n: 0,
        }
    }

    #[inline(always)]
    fn add(&mut self, dt: u64) {
        self.n += 1;
        match self.bins.get_mut((dt / Self::BIN_NS) as usize) {
            Some(b) => *b += 1,
            None => {
                self.long += 1;
                self.long_ns += dt;
            }
        }
    }

    fn median(&self) -> u64 {
        let mut seen = 0u64;
        for (i, &c) in self.bins.iter().enumerate() {
            seen += u64::from(c);
            if 2 * seen >= self.n {
                return i as u64 * Self::BIN_NS + Self::BIN_NS / 2;
            }
        }
        Self::BINS as u64 * Self::BIN_NS
    }

    /// Steps longer than the median by more than `threshold`: how many,
    /// and their total length beyond one median step.
    fn gaps(&self, threshold: u64) -> (u64, u64) {
        let med = self.median();
        let (mut n, mut ns) = (self.long, self.long_ns.saturating_sub(self.long * med));
        for (i, &c) in self.bins.iter().enumerate() {
            let d = i as u64 * Self::BIN_NS + Self::BIN_NS / 2;
            if d > med + threshold {
                n += u64::from(c);
                ns += u64::from(c) * (d - med);
            }
        }
        (n, ns)
    }

    fn clear(&mut self) {
        self.bins.iter_mut().for_each(|b| *b = 0);
        (self.long, self.long_ns, self.n) = (0, 0, 0);
    }
}

fn spin(
    opts: &Options,
    other: Option<libc::clockid_t>,
    mut emit: impl FnMut(&Bucket) -> bool,
) -> io::Result<()> {
    // SAFETY: gettid(2) has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() } as u32;
    let start = Instant::now();
    let max_ns = opts.max_ms.saturating_mul(1_000_000);
    let bucket_ns = opts.bucket_ms.saturating_mul(1_000_000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut last = 0u64;
    let mut bucket_start = 0u64;
    let mut b = Bucket {
        end_unix_us: 0,
        dur_ns: 0,
        chunks: 0,
        gaps: 0,
        gap_ns: 0,
        tid,
        other_ns: 0,
    };
    let mut other_at = other.map_or(0, clock_ns);
    // A gap is measured against the bucket's own median step, not the
    // run's shortest: on a shared host the same chunk takes 0.5 µs in one
    // second and 0.9 µs in the next (the host's frequency and SMT sibling),
    // and a fixed reference would charge that to every gap.
    let mut steps = Steps::new();
    let mut touched = 0u64;
    loop {
        x = chunk(x);
        b.chunks += 1;
        if opts.munmap {
            touch_handed(&mut touched);
        }
        let now = start.elapsed().as_nanos() as u64;
        steps.add(now - last);
        last = now;
        if now - bucket_start >= bucket_ns {
            b.dur_ns = now - bucket_start;
            b.end_unix_us = unix_us();
            (b.gaps, b.gap_ns) = steps.gaps(opts.gap_threshold_ns);
            if let Some(id) = other {
                let t = clock_ns(id);
                b.other_ns = t.saturating_sub(other_at);
                other_at = t;
            }
            if !emit(&b) {
                return Ok(());
            }
            bucket_start = now;
            b.chunks = 0;
            steps.clear();
        }
        if now >= max_ns {
            return Ok(());
        }
    }
}

/// Sums buckets into one (for a rate over a window).
pub fn total<'a>(buckets: impl IntoIterator<Item = &'a Bucket>) -> Bucket {
    let mut t = Bucket {
        end_unix_us: 0,
        dur_ns: 0,
        chunks: 0,
        gaps: 0,
        gap_ns: 0,
        tid: 0,
        other_ns: 0,
    };
    for b in buckets {
        t.end_unix_us = t.end_unix_us.max(b.end_unix_us);
        t.dur_ns += b.dur_ns;
        t.chunks += b.chunks;
        t.gaps += b.gaps;
        t.gap_ns += b.gap_ns;
        t.other_ns += b.other_ns;
        if b.tid != 0 {
            t.tid = b.tid;
        }
    }
    t
}

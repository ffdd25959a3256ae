//! Local timer interrupts for the calibration: a software `cpu-clock` perf
//! event on the spinner's CPU, whose hrtimer fires every `period`.
//!
//! The local timer cannot be raised from another CPU the way an IPI can, and
//! a timer a thread arms itself wakes that thread (a wake-up, not a timer).
//! A `cpu-clock` event is the one timer user space can put on a chosen CPU
//! that wakes nobody: its hrtimer is pinned to that CPU and its handler,
//! `perf_swevent_hrtimer`, runs in the local timer interrupt, takes a sample
//! that goes nowhere (no ring buffer is mapped) and re-arms itself. That is
//! the interruption a busy task gets from its CPU's tick and from its
//! neighbours' hrtimers, and from a profiler sampling the host (`perf record
//! -a`, continuous profilers). The event is opened disabled and enabled only
//! for the part of the window it is measured in. Needs CAP_PERFMON (or
//! CAP_SYS_ADMIN) or a `perf_event_paranoid` that allows CPU-wide events;
//! without, the class keeps the natural ticks' cost and the table says why.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{Result, anyhow};

/// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64
/// bytes): the kernel accepts the first version's size and zeroes the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit 0: `disabled`.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const ATTR_DISABLED: u64 = 1;
/// `PERF_FLAG_FD_CLOEXEC` (not in the libc crate).
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `_IO('$', 0)` and `_IO('$', 1)` (uapi/linux/perf_event.h).
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
/// The kernel's floor for a `cpu-clock` period (`perf_swevent_init_hrtimer`).
const MIN_PERIOD: Duration = Duration::from_micros(10);

/// The perf event; closed (and its hrtimer cancelled) on drop.
pub struct PinnedTimer {
    fd: OwnedFd,
}

impl PinnedTimer {
    /// Opens a disabled `cpu-clock` event on `cpu` firing every `period`
    /// (at least 10 µs) once enabled; an error says why there can be none.
    pub fn new(cpu: u32, period: Duration) -> Result<PinnedTimer> {
        let attr = PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: period.max(MIN_PERIOD).as_nanos() as u64,
            flags: ATTR_DISABLED,
            ..Default::default()
        };
        let cpu = libc::c_int::try_from(cpu).map_err(|_| anyhow!("CPU {cpu} out of range"))?;
        // SAFETY: perf_event_open(2) reads `size` bytes of a live, fully
        // initialised attr; pid -1 with a CPU is a CPU-wide event; no group
        // fd. A non-negative result is a new descriptor nobody else owns.
        let raw = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                std::ptr::addr_of!(attr),
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(anyhow!(e).context(format!(
                "perf_event_open(cpu-clock) on CPU {cpu} (needs CAP_PERFMON or a \
                 kernel.perf_event_paranoid below 1)"
            )));
        }
        let raw = raw as libc::c_int;
        // SAFETY: `raw` is the valid descriptor just returned, owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(PinnedTimer { fd })
    }

    fn ioctl(&self, req: libc::c_ulong, what: &str) -> Result<()> {
        // SAFETY: an argument-less perf ioctl on our own event descriptor.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), req, 0) };
        if rc != 0 {
            return Err(anyhow!(io::Error::last_os_error()).context(format!("perf {what}")));
        }
        Ok(())
    }

    /// Starts the interrupts.
    pub fn enable(&self) -> Result<()> {
        self.ioctl(PERF_EVENT_IOC_ENABLE, "enable")
    }

    /// Stops them.
    pub fn disable(&self) -> Result<()> {
        self.ioctl(PERF_EVENT_IOC_DISABLE, "disable")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_the_first_versions_size() {
        // PERF_ATTR_SIZE_VER0: a different size is refused with E2BIG or
        // read past our struct.
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }
}

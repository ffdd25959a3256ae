//! The clocks nettop reads directly: CLOCK_MONOTONIC for sample times and a
//! thread's CPU clock for what its own work (calibration, topology scans)
//! costs.

/// Reads a clock in nanoseconds (CLOCK_MONOTONIC for sample times, a
/// thread's CPU clock for what calibrating costs).
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; callers pass clocks that
    // always exist (a failing call leaves ts at zero).
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread, ns.
pub fn thread_cputime_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

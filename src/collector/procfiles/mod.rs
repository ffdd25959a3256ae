//! Pure /proc and /sys readers: raw cumulative counters, no arithmetic and no
//! formatting. Every path goes through [`Sysroot`](crate::sys::sysroot::Sysroot) so tests can run against
//! fake trees under `tests/fixtures/proc/`.
//!
//! Files are read by us, into one reused buffer through the sysroot's
//! bounded read (the `procfs` crate's `Process`/`Task` readers read without
//! a cap). Parsing uses the `procfs` crate where it costs nothing measurable
//! and our own parsers where it was measured slower or is wrong for us
//! (BENCHMARKS.md, "/proc parsers"):
//! - `schedstat`: `procfs` (57 ns more than a hand parser on a ~19 µs read);
//! - `stat`: ours: `procfs` takes 1.7× as long and panics on a line that
//!   ends right after the comm (`"1 (x)"`), which a fake tree can hold;
//! - `status`: ours: `procfs` builds a map of every line (14× as long) and
//!   requires fields (PPid, FDSize, Groups...) nettop does not use;
//! - `statm`: ours: three numbers are needed, `procfs` requires seven;
//! - `/proc/stat`: ours: `procfs`'s `KernelStats` lists CPUs by position,
//!   which misnumbers every CPU after an offline one;
//! - `softnet_stat`, `/sys/class/net`: `procfs` has no parser.
//!
//! Three parts: `task` reads and parses the per-task files (`stat`,
//! `schedstat`, `status`, and each process's `statm`) and sums processes;
//! `cmdline` reads each process's command line once and keeps it (both
//! task paths fill their process rows from it); `system` reads the
//! system-wide files (`/proc/stat`, `softnet_stat`, the CPU lists,
//! `/sys/class/net`) and joins them into one row per CPU; `sysinfo` reads
//! memory, load and uptime for the header meters.

mod cmdline;
mod sysinfo;
mod system;
mod task;

pub use cmdline::{CMDLINE_MAX, CmdlineCache, parse_cmdline, read_cmdline};

pub use sysinfo::{parse_loadavg, parse_meminfo, parse_uptime, read_system};
pub use system::{
    parse_proc_stat, parse_softnet, read_cpu_times, read_cpus, read_devices, read_online,
    read_softnet,
};
pub use task::{
    StatFields, count_threads, find_ksoftirqd, list_pids, page_size, parse_schedstat, parse_stat,
    parse_statm, parse_status, process_totals, read_ksoftirqd, read_processes, read_tasks,
};

//! `/proc/PID/cmdline`: each process's arguments, read once and kept.
//!
//! Per-process /proc reads are what a sample costs (BENCHMARKS.md), and a
//! command line almost never changes: it is set by exec, which also
//! renames the process (`comm` becomes the new program's name). So each
//! process's command line is read the first time it is seen and then kept,
//! keyed by (PID, start time) so a reused PID is a new process, and read
//! again only when its `comm` changes (or it had none: see
//! [`CmdlineCache::fill`]). Both task paths (the task sampler and the /proc
//! walk) fill their process rows from the same cache.
//!
//! What it misses: an exec that keeps the name (`bash` exec'ing `bash`)
//! and a process that rewrites its own argv later (setproctitle) without
//! renaming itself keep the command line first read until they exit.
//! `prctl(PR_SET_NAME)` renames without exec; that only costs a read.

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::Path;

use crate::sample::{CMDLINE_CUT, RawTask};
use crate::sys::sysroot::{Sysroot, open_nonblocking};

/// Bytes read per command line: top's default and htop's buffer. Enough for
/// every ordinary command; a JVM's class path is cut here (and marked), so
/// a sample never carries megabytes of arguments per process.
pub const CMDLINE_MAX: usize = 4096;

/// Splits the bytes of `/proc/PID/cmdline` into arguments. `cut`: the file
/// had more than these bytes; the last argument then ends in
/// [`CMDLINE_CUT`] (a cut that fell right after a NUL gives a last
/// argument of the marker alone: the next argument is missing).
///
/// Arguments are NUL-terminated; trailing NULs are dropped, so the NUL
/// padding a setproctitle leaves behind does not show as empty arguments
/// (an empty argument inside the list stays). Kernel threads and zombies
/// have an empty file: no arguments. Bytes that are not UTF-8 become
/// U+FFFD, as everywhere nettop reads /proc; a multi-byte character the
/// cut split is dropped whole.
pub fn parse_cmdline(bytes: &[u8], cut: bool) -> Vec<String> {
    let mut b = bytes;
    if cut {
        b = without_partial_char(b);
    } else {
        while let [rest @ .., 0] = b {
            b = rest;
        }
        if b.is_empty() {
            return Vec::new();
        }
    }
    let mut argv: Vec<String> = b
        .split(|&c| c == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if cut && let Some(last) = argv.last_mut() {
        last.push_str(CMDLINE_CUT);
    }
    argv
}

/// `b` without a UTF-8 sequence cut short at its end.
fn without_partial_char(b: &[u8]) -> &[u8] {
    // The last character starts at most 3 bytes before the end.
    for back in 1..=b.len().min(4) {
        let i = b.len() - back;
        let lead = b[i];
        if lead & 0xc0 == 0x80 {
            continue; // a continuation byte: the start is further back
        }
        let len = match lead {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        return if back < len { &b[..i] } else { b };
    }
    b
}

/// Reads one command line, at most [`CMDLINE_MAX`] bytes, into `buf`
/// (reused). Opened like every file under the sysroot (`O_NONBLOCK`, so a
/// FIFO in a fake tree cannot block), and bounded: a longer file is cut,
/// not an error, and never read past the cap (the kernel copies a command
/// line out of the process's memory page by page).
///
/// One `read()` of one byte more than the cap: the kernel's
/// `get_mm_cmdline()` copies everything up to the count it is given, so a
/// short read is the whole command line, and the read that would only
/// return end-of-file (an eighth of a new process's cost) is not made.
/// A regular file in a fake tree reads the same way.
pub fn read_cmdline(path: &Path, buf: &mut Vec<u8>) -> io::Result<Vec<String>> {
    let mut f = open_nonblocking(path)?;
    buf.clear();
    buf.resize(CMDLINE_MAX + 1, 0);
    let n = loop {
        match f.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => break r?,
        }
    };
    buf.truncate(n);
    let cut = n > CMDLINE_MAX;
    buf.truncate(CMDLINE_MAX);
    Ok(parse_cmdline(buf, cut))
}

/// One process's command line and the name it had when it was read.
struct Entry {
    comm: String,
    argv: Vec<String>,
    /// The last pass that saw the process; older entries are dropped.
    pass: u64,
}

/// Command lines of the processes seen in the last pass, keyed by (PID,
/// start ticks). Memory: one entry per live process, at most
/// [`CMDLINE_MAX`] bytes of arguments each.
#[derive(Default)]
pub struct CmdlineCache {
    entries: HashMap<(u32, u64), Entry>,
    pass: u64,
    reads: u64,
    buf: Vec<u8>,
}

impl CmdlineCache {
    /// Sets `cmdline` on every process row: from the cache when the process
    /// (PID and start time) is known under the same name, else read from
    /// `root`'s /proc. Kernel threads have none and are never read.
    ///
    /// An empty command line is not kept: it is read again at the next
    /// pass. A process caught in exec has one for a moment, and under its
    /// new name already (the kernel renames it before it sets up the new
    /// arguments), so keeping it would hide the arguments for the process's
    /// whole life. The rest with none are zombies and exiting processes
    /// (their memory is gone), and a file that cannot be read (the process
    /// just exited): few, and each read of theirs is cheap.
    /// Processes not in `procs` are forgotten.
    pub fn fill(&mut self, root: &Sysroot, procs: &mut [RawTask]) {
        let Self {
            entries,
            pass,
            reads,
            buf,
        } = self;
        *pass += 1;
        let proc_dir = root.proc();
        for p in procs.iter_mut() {
            if p.kthread {
                p.cmdline.clear();
                continue;
            }
            let key = (p.tgid, p.start_ticks);
            if let Some(e) = entries.get_mut(&key)
                && e.comm == p.comm
                && !e.argv.is_empty()
            {
                e.pass = *pass;
                p.cmdline.clone_from(&e.argv);
                continue;
            }
            let path = proc_dir.join(p.tgid.to_string()).join("cmdline");
            let argv = read_cmdline(&path, buf).unwrap_or_default();
            *reads += 1;
            p.cmdline.clone_from(&argv);
            entries.insert(
                key,
                Entry {
                    comm: p.comm.clone(),
                    argv,
                    pass: *pass,
                },
            );
        }
        entries.retain(|_, e| e.pass == *pass);
    }

    /// Command lines read from /proc so far: what the cache saves shows here.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Processes remembered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_split_on_nul_trailing_padding_dropped() {
        assert_eq!(
            parse_cmdline(b"sh\0-c\0sleep 30; :\0marker\0", false),
            argv(&["sh", "-c", "sleep 30; :", "marker"])
        );
        // An empty argument inside the list is real.
        assert_eq!(parse_cmdline(b"a\0\0b\0", false), argv(&["a", "", "b"]));
        // setproctitle: one string, NUL padding after it.
        assert_eq!(
            parse_cmdline(b"nginx: worker process\0\0\0\0", false),
            argv(&["nginx: worker process"])
        );
        // No terminating NUL (a rewritten argv) is still one argument.
        assert_eq!(
            parse_cmdline(b"postgres: writer", false),
            argv(&["postgres: writer"])
        );
        // Kernel threads and zombies.
        assert!(parse_cmdline(b"", false).is_empty());
        assert!(parse_cmdline(b"\0\0", false).is_empty());
        // Not UTF-8: replaced, not dropped.
        assert_eq!(parse_cmdline(b"x\xff\0", false), argv(&["x\u{fffd}"]));
    }

    #[test]
    fn a_cut_command_line_is_marked() {
        assert_eq!(
            parse_cmdline(b"java\0-cp\0a.jar:b.j", true),
            argv(&["java", "-cp", "a.jar:b.j\u{2026}"])
        );
        // Cut right after a NUL: the next argument is missing.
        assert_eq!(
            parse_cmdline(b"java\0-cp\0", true),
            argv(&["java", "-cp", "\u{2026}"])
        );
        // A character split by the cut is dropped whole, never U+FFFD.
        let euro = "€".as_bytes(); // 3 bytes
        let mut b = b"x\0ab".to_vec();
        b.extend_from_slice(&euro[..2]);
        assert_eq!(parse_cmdline(&b, true), argv(&["x", "ab\u{2026}"]));
        b.truncate(4);
        b.extend_from_slice(euro);
        assert_eq!(parse_cmdline(&b, true), argv(&["x", "ab€\u{2026}"]));
    }

    #[test]
    fn reads_stop_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cmdline");
        let mut buf = Vec::new();
        // Exactly the cap: whole, not cut.
        let mut exact = vec![b'a'; CMDLINE_MAX - 1];
        exact.push(0);
        std::fs::write(&p, &exact).unwrap();
        let a = read_cmdline(&p, &mut buf).unwrap();
        assert_eq!((a.len(), a[0].len()), (1, CMDLINE_MAX - 1));
        // One byte more: cut and marked.
        let mut long = exact.clone();
        long.extend_from_slice(b"b\0");
        std::fs::write(&p, &long).unwrap();
        let a = read_cmdline(&p, &mut buf).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1], CMDLINE_CUT);
        // An endless file ends at the cap too.
        let z = read_cmdline(Path::new("/dev/zero"), &mut buf).unwrap();
        assert_eq!(z.last().map(String::as_str), Some(CMDLINE_CUT));
        assert!(read_cmdline(&dir.path().join("none"), &mut buf).is_err());
    }

    /// Read once per process; again only when the name changes (exec) or
    /// the PID is a new process (another start time); kernel threads never.
    #[test]
    fn the_cache_reads_each_process_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = Sysroot::new(dir.path());
        let write = |pid: u32, bytes: &[u8]| {
            let d = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cmdline"), bytes).unwrap();
        };
        write(10, b"sh\0-c\0job\0");
        write(2, b"");
        let proc = |pid: u32, start: u64, comm: &str| RawTask {
            tgid: pid,
            tid: pid,
            start_ticks: start,
            comm: comm.into(),
            ..Default::default()
        };
        let kthreadd = RawTask {
            kthread: true,
            ..proc(2, 1, "kthreadd")
        };
        let mut c = CmdlineCache::default();
        let mut rows = vec![kthreadd.clone(), proc(10, 500, "sh")];
        c.fill(&root, &mut rows);
        assert_eq!(rows[1].cmdline, argv(&["sh", "-c", "job"]));
        assert!(rows[0].cmdline.is_empty());
        assert_eq!(c.reads(), 1, "kernel threads are not read");

        // Same process, same name: the file is not read again.
        write(10, b"changed\0");
        let mut rows = vec![kthreadd.clone(), proc(10, 500, "sh")];
        c.fill(&root, &mut rows);
        assert_eq!(rows[1].cmdline, argv(&["sh", "-c", "job"]));
        assert_eq!(c.reads(), 1);

        // exec renamed it: read again.
        let mut rows = vec![proc(10, 500, "changed")];
        c.fill(&root, &mut rows);
        assert_eq!(rows[0].cmdline, argv(&["changed"]));
        assert_eq!(c.reads(), 2);

        // The PID reused by a new process with the old name: read again.
        write(10, b"sh\0new\0");
        let mut rows = vec![proc(10, 900, "changed")];
        c.fill(&root, &mut rows);
        assert_eq!(rows[0].cmdline, argv(&["sh", "new"]));
        assert_eq!(c.reads(), 3);
        // Processes gone from the pass are forgotten.
        assert_eq!(c.len(), 1);
        c.fill(&root, &mut []);
        assert!(c.is_empty());

        // Caught in exec (renamed, arguments not set up yet) or gone: an
        // empty command line is read again until there is one.
        write(20, b"");
        let mut rows = vec![proc(20, 1, "python3"), proc(77, 1, "gone")];
        c.fill(&root, &mut rows);
        assert!(rows[0].cmdline.is_empty() && rows[1].cmdline.is_empty());
        assert_eq!(c.reads(), 5);
        write(20, b"python3\0app.py\0");
        c.fill(&root, &mut rows);
        assert_eq!(rows[0].cmdline, argv(&["python3", "app.py"]));
        assert!(rows[1].cmdline.is_empty());
        assert_eq!(c.reads(), 7);
        c.fill(&root, &mut rows);
        assert_eq!(c.reads(), 8, "only the empty one again");
    }
}

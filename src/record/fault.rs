//! Disk faults a long-running recording rides out instead of dying: a full
//! disk or quota, a file system remounted read-only, an I/O error. A
//! monitoring agent that stops on them stops serving metrics exactly when
//! the host is in trouble, so the service pauses the recording (dropping
//! snapshots, counting them) and keeps sampling and serving; anything
//! else (a path swapped under it, a bug) still stops it.

use std::path::Path;

/// Why a write to the recording failed, as far as the service cares: each
/// is a label of `nettop_recording_write_errors_total`, so the set stays
/// this small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// ENOSPC: the file system is full.
    NoSpace,
    /// EDQUOT: the user's quota is used up.
    Quota,
    /// EROFS: the file system is (now) read-only.
    ReadOnly,
    /// EIO: the device failed the write (often reported only by `fdatasync`).
    Io,
}

impl Fault {
    /// Every fault, in label order.
    pub const ALL: [Fault; 4] = [Fault::NoSpace, Fault::Quota, Fault::ReadOnly, Fault::Io];

    /// The disk fault behind `e`, if any error in its chain is one: every
    /// write path wraps the `io::Error` in context naming the file, and
    /// anyhow keeps it reachable.
    pub fn of(e: &anyhow::Error) -> Option<Fault> {
        e.chain()
            .filter_map(|c| c.downcast_ref::<std::io::Error>())
            .find_map(|io| io.raw_os_error().and_then(Fault::of_errno))
    }

    fn of_errno(errno: i32) -> Option<Fault> {
        match errno {
            libc::ENOSPC => Some(Fault::NoSpace),
            libc::EDQUOT => Some(Fault::Quota),
            libc::EROFS => Some(Fault::ReadOnly),
            libc::EIO => Some(Fault::Io),
            _ => None,
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Fault::NoSpace => "no_space",
            Fault::Quota => "quota",
            Fault::ReadOnly => "read_only",
            Fault::Io => "io_error",
        }
    }

    /// The errno's name, for the log line an operator greps for.
    pub fn errno(self) -> &'static str {
        match self {
            Fault::NoSpace => "ENOSPC",
            Fault::Quota => "EDQUOT",
            Fault::ReadOnly => "EROFS",
            Fault::Io => "EIO",
        }
    }

    /// Whether deleting old parts can make the write succeed: only when
    /// space ran out. Deleting on a read-only or failing disk loses
    /// evidence and gains nothing.
    pub fn freed_by_pruning(self) -> bool {
        matches!(self, Fault::NoSpace | Fault::Quota)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What the recording's health metrics show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Set while the recording is paused, with the last fault seen.
    pub paused: Option<Fault>,
    /// Snapshots not recorded because the recording was paused.
    pub dropped: u64,
    /// Failed writes to the recording, per [`Fault::ALL`].
    pub write_errors: [u64; 4],
}

impl Health {
    pub(super) fn failed(&mut self, f: Fault) {
        self.write_errors[f.index()] += 1;
    }

    /// Failed writes per fault, in [`Fault::ALL`] order.
    pub fn errors(&self) -> impl Iterator<Item = (Fault, u64)> + '_ {
        Fault::ALL
            .into_iter()
            .map(|f| (f, self.write_errors[f.index()]))
    }
}

/// Whether the file system holding `dir` could take `need` more bytes now:
/// a cheap check (one `statvfs`) before a paused recording tries to open a
/// part again. It only rules out what surely fails (read-only, fewer free
/// blocks than needed); a quota or a failing device is only found by
/// trying. Free blocks, not the unprivileged share: a recorder with
/// CAP_SYS_RESOURCE writes into the reserve, and one without is merely
/// told so by the write.
pub fn may_fit(dir: &Path, need: u64) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: statvfs reads the NUL-terminated path and writes one
    // `statvfs` struct we own; zeroed is a valid value of that plain struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a valid C path and a writable struct of ours.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return true;
    }
    if st.f_flag & libc::ST_RDONLY != 0 {
        return false;
    }
    let free = (st.f_bfree as u64).saturating_mul(st.f_frsize as u64);
    free >= need
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_found_behind_context_and_others_are_not() {
        use anyhow::Context;
        let io = |errno| {
            Err::<(), _>(std::io::Error::from_raw_os_error(errno))
                .context("cannot write to /x")
                .context("recording")
                .unwrap_err()
        };
        assert_eq!(Fault::of(&io(libc::ENOSPC)), Some(Fault::NoSpace));
        assert_eq!(Fault::of(&io(libc::EDQUOT)), Some(Fault::Quota));
        assert_eq!(Fault::of(&io(libc::EROFS)), Some(Fault::ReadOnly));
        assert_eq!(Fault::of(&io(libc::EIO)), Some(Fault::Io));
        assert_eq!(Fault::of(&io(libc::EACCES)), None);
        assert_eq!(Fault::of(&anyhow::anyhow!("replaced")), None);
        let mut h = Health::default();
        h.failed(Fault::Io);
        h.failed(Fault::Io);
        let got: Vec<_> = h.errors().map(|(f, n)| (f.label(), n)).collect();
        assert_eq!(
            got,
            [
                ("no_space", 0),
                ("quota", 0),
                ("read_only", 0),
                ("io_error", 2)
            ]
        );
    }
}

//! User names for the USER column, resolved once per UID for batch and TUI
//! alike.
//!
//! On the live system names come from NSS (`getpwuid_r`), as top's do:
//! users from LDAP, SSSD or systemd's DynamicUser= are in no file nettop
//! could read. NSS answers for the machine nettop runs on, not for a
//! `--sysroot` tree, so a fake root is named from its own `/etc/passwd`.
//! Nor does it answer for the node when nettop runs in a container with
//! the host's PID namespace: the image has no passwd, or the wrong one.
//! There the names come from the node's `/etc/passwd`, seen through PID
//! 1's root (`sys::container`); the node's NSS-only users show as UIDs.
//! Lookups may block on a directory server, so only the runners' data
//! threads call them, never the renderer.

use std::collections::HashMap;
use std::ffi::CStr;

use crate::sys::sysroot::Sysroot;

/// `/etc/passwd` text → UID to name. Odd lines are skipped: a missing name
/// prints as the number, which is what top does too.
pub fn parse_passwd(text: &str) -> HashMap<u32, String> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(':');
            let name = it.next().filter(|n| !n.is_empty())?;
            let uid = it.nth(1)?.parse().ok()?;
            // A --sysroot's passwd is as untrusted as any other input.
            Some((uid, crate::sys::sanitize::clean(name).into_owned()))
        })
        .collect()
}

/// The users of `root` (empty when its passwd cannot be read: names are
/// cosmetic, front ends fall back to numbers).
pub fn read_users(root: &Sysroot) -> HashMap<u32, String> {
    root.read("/etc/passwd")
        .map(|t| parse_passwd(&t))
        .unwrap_or_default()
}

/// First buffer for one entry: glibc's own suggestion
/// (`_SC_GETPW_R_SIZE_MAX`), enough for any ordinary entry.
const NSS_BUF_START: usize = 1024;
/// Largest buffer one entry may take: the buffer doubles on ERANGE, and a
/// broken NSS module that always answers ERANGE must not eat memory.
const NSS_BUF_MAX: usize = 1 << 20;

/// The name NSS gives `uid` on this machine, or `None` when it has no
/// entry or the lookup fails (names are cosmetic: the column prints the
/// number instead).
pub fn nss_name(uid: u32) -> Option<String> {
    nss_lookup(uid, NSS_BUF_START).0
}

/// [`nss_name`] starting from a `start`-byte buffer; also returns the size
/// of the buffer that answered, so a test can see ERANGE grow it.
fn nss_lookup(uid: u32, start: usize) -> (Option<String>, usize) {
    let mut buf: Vec<libc::c_char> = vec![0; start.clamp(1, NSS_BUF_MAX)];
    // An interrupted lookup is worth a retry or two, a failing one is not.
    let mut interrupted = 0;
    loop {
        // SAFETY: `passwd` is a plain C struct of pointers and integers, for
        // which all-zero bytes are a valid value; getpwuid_r overwrites it.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: `pwd` and `found` are
        // locals, `buf` is a live allocation of exactly `buf.len()` bytes.
        // getpwuid_r is the reentrant lookup: it writes only into these.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
        match rc {
            // No entry: success with no result.
            0 if found.is_null() || pwd.pw_name.is_null() => return (None, buf.len()),
            0 => {
                // SAFETY: on success `pw_name` points to a NUL-terminated
                // string inside `buf`, which is alive and unchanged here.
                let raw = unsafe { CStr::from_ptr(pwd.pw_name) };
                let name = crate::sys::sanitize::clean(&raw.to_string_lossy()).into_owned();
                return ((!name.is_empty()).then_some(name), buf.len());
            }
            libc::ERANGE if buf.len() < NSS_BUF_MAX => {
                let len = (buf.len() * 2).min(NSS_BUF_MAX);
                buf.resize(len, 0);
            }
            libc::EINTR if interrupted < 2 => interrupted += 1,
            _ => return (None, buf.len()),
        }
    }
}

/// Where names come from.
enum Source {
    /// The machine's own NSS (the live root).
    Nss,
    /// A `--sysroot` tree's `/etc/passwd`, or the node's seen from a
    /// container, read once.
    Passwd(HashMap<u32, String>),
}

/// Names of the UIDs the runners meet, each looked up once. Misses are
/// remembered too: a UID with no entry would otherwise cost an NSS round
/// trip (perhaps to a directory server) on every frame.
pub struct UserNames {
    source: Source,
    known: HashMap<u32, Option<String>>,
}

impl UserNames {
    /// NSS for the live root, `root`'s own passwd for a fake one, the
    /// node's passwd in a container under another root than PID 1's.
    pub fn new(root: &Sysroot) -> Self {
        use crate::sys::container::{HostFiles, host_files};
        let source = if !root.is_live() {
            Source::Passwd(read_users(root))
        } else {
            match host_files() {
                HostFiles::Own => Source::Nss,
                HostFiles::Via(dir) => {
                    let names = read_users(&Sysroot::new(&dir));
                    if names.is_empty() {
                        log::warn!(
                            "user names: no users in {}/etc/passwd: USER shows UIDs",
                            dir.display()
                        );
                    }
                    Source::Passwd(names)
                }
                HostFiles::Unknown(why) => {
                    log::warn!("user names: {why}: USER shows UIDs");
                    Source::Nss
                }
            }
        };
        UserNames {
            source,
            known: HashMap::new(),
        }
    }

    /// Names for those of `uids` not asked about before, so a front end
    /// receives each name once (UIDs without a name are left out).
    pub fn resolve_new(&mut self, uids: impl IntoIterator<Item = u32>) -> Vec<(u32, String)> {
        let mut new = Vec::new();
        for uid in uids {
            if self.known.contains_key(&uid) {
                continue;
            }
            let name = match &self.source {
                Source::Nss => nss_name(uid),
                Source::Passwd(names) => names.get(&uid).cloned(),
            };
            if let Some(n) = &name {
                new.push((uid, n.clone()));
            }
            self.known.insert(uid, name);
        }
        new
    }
}

/// User names for a recording: only on the host that recorded it, where
/// its UIDs mean the same people; elsewhere they would name strangers.
pub fn for_recording(hostname: &str) -> Option<UserNames> {
    let live = Sysroot::default();
    let here = live.read_opt("/proc/sys/kernel/hostname")?;
    (here == hostname).then(|| UserNames::new(&live))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lines() {
        let u = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\n\nbad\nalice:x:1000:1000::/h:/bin/sh\n:x:5:5::/:/\nmallory\x1b[2J:x:7:7::/:/\n",
        );
        assert_eq!(u.get(&0).map(String::as_str), Some("root"));
        assert_eq!(u.get(&1000).map(String::as_str), Some("alice"));
        assert!(u.get(&7).is_some_and(|n| !n.contains('\x1b')), "{u:?}");
        assert_eq!(u.len(), 3);
    }

    #[test]
    fn a_sysroot_without_passwd_has_no_names() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_users(&Sysroot::new(d.path())).is_empty());
        std::fs::create_dir(d.path().join("etc")).unwrap();
        std::fs::write(d.path().join("etc/passwd"), "bob:x:42:42::/:/\n").unwrap();
        assert_eq!(
            read_users(&Sysroot::new(d.path()))
                .get(&42)
                .map(String::as_str),
            Some("bob")
        );
    }

    /// A buffer too small for root's entry: getpwuid_r answers ERANGE until
    /// the buffer has grown enough.
    #[test]
    fn erange_grows_the_buffer() {
        let (name, len) = nss_lookup(0, 1);
        assert_eq!(name.as_deref(), Some("root"));
        assert!(len > 1, "answered from a 1-byte buffer?");
        assert!(len <= NSS_BUF_MAX);
    }

    #[test]
    fn each_uid_is_resolved_once_and_misses_are_remembered() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("etc")).unwrap();
        std::fs::write(d.path().join("etc/passwd"), "bob:x:42:42::/:/\n").unwrap();
        let mut names = UserNames::new(&Sysroot::new(d.path()));
        assert_eq!(names.resolve_new([42, 7, 42]), vec![(42, "bob".into())]);
        assert!(names.resolve_new([42, 7]).is_empty());
        assert_eq!(names.known.get(&7), Some(&None));
    }
}

//! User names for the USER column: `/etc/passwd` under a sysroot, parsed
//! once here for batch and TUI alike.

use std::collections::HashMap;

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
}

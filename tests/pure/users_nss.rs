//! User names through NSS on the live system, and from the tree's own
//! /etc/passwd under a fake --sysroot (where NSS would answer for the
//! wrong machine).

use nettop::sys::sysroot::Sysroot;
use nettop::sys::users::{UserNames, nss_name};

/// No NSS module names this UID: far above any allocator's range (login,
/// systemd DynamicUser=, containers' and foreign ranges) and not -1.
const NOBODYS_UID: u32 = 3_000_000_000;

#[test]
fn nss_names_root() {
    assert_eq!(nss_name(0).as_deref(), Some("root"));
}

#[test]
fn nss_has_no_name_for_an_unused_uid() {
    assert_eq!(nss_name(NOBODYS_UID), None);
}

#[test]
fn the_live_root_resolves_through_nss_once_per_uid() {
    let mut names = UserNames::new(&Sysroot::default());
    assert_eq!(
        names.resolve_new([0, NOBODYS_UID, 0]),
        vec![(0, "root".to_string())]
    );
    // Known now, the hit and the miss alike: nothing new to send.
    assert!(names.resolve_new([0, NOBODYS_UID]).is_empty());
}

/// A fake tree is named from its own passwd, never from this machine's
/// NSS: its root is called "toor" here, and the machine's users are unknown.
#[test]
fn a_fake_sysroot_uses_its_own_passwd() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("etc")).unwrap();
    std::fs::write(
        d.path().join("etc/passwd"),
        "toor:x:0:0::/root:/bin/sh\nbob\x1b[31m:x:42:42::/:/\n",
    )
    .unwrap();
    let mut names = UserNames::new(&Sysroot::new(d.path()));
    let got = names.resolve_new([0, 42, 1]);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], (0, "toor".to_string()));
    assert_eq!(got[1].0, 42);
    assert!(
        got[1].1.starts_with("bob") && !got[1].1.contains('\x1b'),
        "not sanitised: {got:?}"
    );
}

#[test]
fn a_fake_sysroot_without_passwd_names_nobody() {
    let d = tempfile::tempdir().unwrap();
    let mut names = UserNames::new(&Sysroot::new(d.path()));
    assert!(names.resolve_new([0, 1000]).is_empty());
}

//! The Debian package (issue 13): scripts/package.sh builds it from a
//! release build, it installs into a scratch root with dpkg, systemd
//! accepts its units, its man page renders, its completions load, and the
//! installed binary is small because its debug info went to the dbgsym
//! package.
//!
//! Slow (a release build), so it is one test; needs cargo-deb
//! (scripts/deps.sh installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const T: &str = "deb_builds_installs_and_its_units_verify";
/// Issue 13's bound on the installed binary.
const MAX_BINARY: u64 = 15 << 20;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = common::run::output_within(cmd, Duration::from_secs(1800), what);
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}{}",
        out.status,
        common::run::stdout(&out),
        common::run::stderr(&out)
    );
    common::run::stdout(&out)
}

#[test]
fn deb_builds_installs_and_its_units_verify() {
    for (bin, arg) in [
        ("cargo-deb", "--version"),
        ("dpkg", "--version"),
        ("systemd-analyze", "--version"),
        ("man", "--version"),
    ] {
        if !common::tool_runs(bin, arg) {
            common::skip(T, &format!("{bin} is not installed (scripts/deps.sh)"));
            return;
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let t0 = Instant::now();
    let built = run(
        Command::new(root.join("scripts/package.sh")).current_dir(root),
        "scripts/package.sh",
    );
    let build_time = t0.elapsed();
    let deb = PathBuf::from(built.lines().last().unwrap_or_default().trim());
    assert!(deb.is_file(), "package.sh printed {built:?}");

    // Install into a scratch root: an empty dpkg database, dependencies
    // (libc6, libhwloc15 …) taken as given, no maintainer scripts to run.
    let scratch = tempfile::tempdir().unwrap();
    let r = scratch.path();
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("var/lib/dpkg/status"), "").unwrap();
    run(
        Command::new("dpkg")
            .arg(format!("--root={}", r.display()))
            .args([
                "--force-not-root",
                "--force-depends",
                "--force-script-chrootless",
            ])
            .arg("-i")
            .arg(&deb),
        "dpkg -i",
    );
    let status = std::fs::read_to_string(r.join("var/lib/dpkg/status")).unwrap();
    assert!(
        status.contains("Package: nettop\n") && status.contains("Status: install ok installed"),
        "{status}"
    );

    // The binary: small, runs, says what it is.
    let bin = r.join("usr/bin/nettop");
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(size <= MAX_BINARY, "installed binary is {size} bytes");
    let version = run(Command::new(&bin).arg("--version"), "nettop --version");
    for want in [
        "nettop 0.1.0",
        "commit:",
        "libbpf:",
        "hwloc:",
        "BPF attach:",
    ] {
        assert!(version.contains(want), "{want} missing from {version}");
    }
    // Built from this checkout: the commit is known.
    if root.join(".git").exists() {
        assert!(!version.contains("commit:      unknown"), "{version}");
    }
    // Its debug info is in the dbgsym package, under its build id.
    let ddeb = deb.parent().unwrap().join(
        deb.file_name()
            .unwrap()
            .to_string_lossy()
            .replace("nettop_", "nettop-dbgsym_")
            .replace(".deb", ".ddeb"),
    );
    let listing = run(Command::new("dpkg-deb").arg("-c").arg(&ddeb), "dpkg-deb -c");
    let notes = run(Command::new("readelf").arg("-n").arg(&bin), "readelf -n");
    let id = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("binary has a build id")
        .to_string();
    let debug_file = format!("usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    assert!(
        listing.contains(&debug_file),
        "{debug_file} not in\n{listing}"
    );

    // The man page renders and documents the service flags.
    let man = r.join("usr/share/man/man1/nettop.1.gz");
    let page = run(
        Command::new("man")
            .arg("-l")
            .arg(&man)
            .env("MANWIDTH", "100"),
        "man -l",
    );
    for want in ["NAME", "nettop", "--record", "--keep-for", "--serve"] {
        assert!(page.contains(want), "{want} missing from the man page");
    }

    // Completions: bash loads them and completes nettop's flags.
    let bash = r.join("usr/share/bash-completion/completions/nettop");
    let comp = run(
        Command::new("bash").arg("-c").arg(format!(
            "source {}; COMP_WORDS=(nettop --kee); COMP_CWORD=1; _nettop nettop --kee nettop; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash.display()
        )),
        "bash completion",
    );
    assert!(comp.lines().any(|l| l == "--keep-for"), "{comp}");
    for f in [
        "usr/share/zsh/vendor-completions/_nettop",
        "usr/share/fish/vendor_completions.d/nettop.fish",
    ] {
        assert!(r.join(f).is_file(), "{f} not installed");
    }

    // systemd accepts both units as installed: ExecStart pointed at the
    // scratch root's binary (verify checks it is executable), the man page
    // of Documentation= looked up there too. Warnings count as failures.
    let units = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for u in ["nettop-record.service", "nettop-serve.service"] {
        let text = std::fs::read_to_string(r.join("lib/systemd/system").join(u)).unwrap();
        assert!(text.contains("ExecStart=/usr/bin/nettop "), "{u}");
        let p = units.path().join(u);
        std::fs::write(
            &p,
            text.replace("/usr/bin/nettop", &bin.display().to_string()),
        )
        .unwrap();
        paths.push(p);
    }
    let out = common::run::output_within(
        Command::new("systemd-analyze")
            .arg("verify")
            .args(&paths)
            .env("MANPATH", r.join("usr/share/man")),
        Duration::from_secs(120),
        "systemd-analyze verify",
    );
    let err = common::run::stderr(&out);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");

    // And it goes away again.
    run(
        Command::new("dpkg")
            .arg(format!("--root={}", r.display()))
            .args([
                "--force-not-root",
                "--force-script-chrootless",
                "--purge",
                "nettop",
            ]),
        "dpkg --purge",
    );
    assert!(!bin.exists());
    common::report(&format!(
        "{T}: package built in {build_time:.0?}, installed binary {size} bytes \
         ({:.1} MiB), {}\n",
        size as f64 / (1 << 20) as f64,
        deb.display()
    ));
}
